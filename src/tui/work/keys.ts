/**
 * The work tab's keys: a tab per work queue (`h`/`l`, `←`/`→` or `[`/`]`
 * move to the previous or next queue), and a cursor over its open items.
 * Watching only: people claim and act in the console or at the command line.
 *
 * @module
 */

import type { Key } from "../keys.ts";
import { clamp, type DashboardState } from "../state.ts";

/** The queue watched: the one chosen while the file still declares it, else the first. */
export function watchedQueue(state: DashboardState): string | null {
  const queues = state.work?.queues ?? [];
  return state.workQueue !== null && queues.includes(state.workQueue)
    ? state.workQueue
    : queues[0] ?? null;
}

/** Keys of the work screen: move among the items, switch queues. */
export function workKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const count = state.work?.watch?.items.length ?? 0;
  if (down) return { ...state, workCursor: clamp(state.workCursor + 1, count) };
  if (up) return { ...state, workCursor: clamp(state.workCursor - 1, count) };
  const next = key.input === "l" || key.input === "]" || key.rightArrow === true;
  const previous = key.input === "h" || key.input === "[" || key.leftArrow === true;
  const queues = state.work?.queues ?? [];
  if ((next || previous) && queues.length > 1) {
    const at = Math.max(0, queues.indexOf(watchedQueue(state) ?? ""));
    const to = queues[(at + (next ? 1 : queues.length - 1)) % queues.length]!;
    return { ...state, workQueue: to, workCursor: 0 };
  }
  return state;
}
