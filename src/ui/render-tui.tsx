/** Mounts the coordinator TUI on the terminal (imported lazily by `comis run`). */
import { render } from 'ink';

import type { ChildDetail } from '../lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../lib/coordinator/events.js';
import { CoordinatorApp } from './coordinator-app.js';
import { createEventBus } from './event-bus.js';

export interface TuiHandle {
  onEvent: (event: CoordinatorEvent) => void;
  /** A failed child's stderr tail (live runs), shown under its row. */
  onDetail: (detail: ChildDetail) => void;
  /** Unmounts (idempotent) and waits until Ink released the terminal. */
  close: () => Promise<void>;
}

export function startTui(options: { onQuit: () => void; follow?: boolean; title?: string }): TuiHandle {
  const bus = createEventBus();
  const instance = render(<CoordinatorApp subscribe={bus.subscribe} onQuit={options.onQuit} follow={options.follow ?? false} title={options.title} />, {
    exitOnCtrlC: false,
    stdout: process.stderr.isTTY && !process.stdout.isTTY ? process.stderr : process.stdout,
  });
  return {
    onEvent: bus.publish,
    onDetail: bus.publish,
    async close() {
      // Let the final frame (the plan's outcome) render: the app exits by itself on plan:finished.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([instance.waitUntilExit().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 300)))]);
      clearTimeout(timer);
      instance.unmount();
      await instance.waitUntilExit().catch(() => undefined);
    },
  };
}
