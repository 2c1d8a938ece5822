/** A tiny fan-out of the coordinator stream that keeps what arrived before a subscriber. */
import type { CoordinatorEvent } from '../lib/coordinator/events.js';

export function createEventBus(): { publish: (e: CoordinatorEvent) => void; subscribe: (l: (e: CoordinatorEvent) => void) => () => void } {
  const listeners = new Set<(e: CoordinatorEvent) => void>();
  const backlog: CoordinatorEvent[] = [];
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
