/**
 * The dead letters tab's keys: move among the groups, open a group's jobs
 * (the discarded jobs of its worker and schedule, searched for its error).
 *
 * @module
 */

import { showJobs } from "../jobs/keys.ts";
import type { Key } from "../keys.ts";
import { clamp, type DashboardState } from "../state.ts";

/** Keys of the dead letters: move, open a group's jobs. */
export function deadLettersKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const count = state.dead?.length ?? 0;
  if (down) return { ...state, deadCursor: clamp(state.deadCursor + 1, count) };
  if (up) return { ...state, deadCursor: clamp(state.deadCursor - 1, count) };
  const group = state.dead?.[clamp(state.deadCursor, count)];
  if (key.return && group) {
    const error = group.error.split("\n", 1)[0]!.slice(0, 200);
    return showJobs(state, {
      states: ["discarded"],
      worker: group.worker,
      ...(group.scheduleId === null ? {} : { scheduleId: group.scheduleId }),
      ...(error === "" ? {} : { search: error }),
    });
  }
  return state;
}
