/**
 * The live TUI: subscribes to the coordinator event stream, folds it into
 * the view state, ticks elapsed times once a second, and maps q / Ctrl-C to
 * onQuit (the caller stops the children). All timers end with the component.
 */
import { useEffect, useReducer, useState } from 'react';
import { useApp, useInput, useStdout } from 'ink';

import type { ChildDetail } from '../lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../lib/coordinator/events.js';
import { initialViewState, reduceView } from '../lib/coordinator/view-state.js';
import { CoordinatorView } from './coordinator-view.js';

export type Subscribe = (listener: (event: CoordinatorEvent | ChildDetail) => void) => () => void;

export interface CoordinatorAppProps {
  subscribe: Subscribe;
  onQuit: () => void;
  follow?: boolean;
  tickMs?: number;
  /** Named in the first frame, before the plan has started. */
  title?: string;
}

export function CoordinatorApp({ subscribe, onQuit, follow = false, tickMs = 1000, title }: CoordinatorAppProps) {
  const { stdout } = useStdout();
  const [state, dispatch] = useReducer(reduceView, undefined, initialViewState);
  const [now, setNow] = useState(Date.now());
  const { exit } = useApp();
  useEffect(() => subscribe((e) => dispatch(e)), [subscribe]);
  useEffect(() => {
    if (state.finished) return undefined;
    const timer = setInterval(() => setNow(Date.now()), tickMs);
    return () => clearInterval(timer);
  }, [tickMs, state.finished]);
  useEffect(() => {
    if (state.finished) exit();
  }, [state.finished, exit]);
  useInput((input, key) => {
    if (input === 'q' || (key.ctrl && input === 'c')) onQuit();
  });
  return <CoordinatorView state={state} now={now} follow={follow} columns={stdout.columns || 80} title={title} />;
}
