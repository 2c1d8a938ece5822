/** A tiny fan-out of the coordinator stream that keeps what arrived before a subscriber. */
import type { ChildDetail } from '../lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../lib/coordinator/events.js';

type Message = CoordinatorEvent | ChildDetail;

export function createEventBus(): { publish: (e: Message) => void; subscribe: (l: (e: Message) => void) => () => void } {
  const listeners = new Set<(e: Message) => void>();
  const backlog: Message[] = [];
  return {
    publish(e) {
      if (listeners.size === 0) backlog.push(e);
      for (const l of listeners) l(e);
    },
    subscribe(l) {
      listeners.add(l);
      for (const e of backlog.splice(0)) l(e);
      return () => listeners.delete(l);
    },
  };
}
