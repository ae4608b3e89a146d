/**
 * The overview tab's keys: move among the queues, pause or resume one for
 * every process on the store, open its jobs; and what a pause changed.
 *
 * @module
 */

import type { ActResults } from "../actions.ts";
import { capital, confirm, refused } from "../ask.ts";
import { showJobs } from "../jobs/keys.ts";
import type { Key } from "../keys.ts";
import { seg } from "../seg.ts";
import { clamp, type DashboardState } from "../state.ts";
import { clean } from "../text.ts";

/** Keys of the overview: move among the queues, pause or resume one, open its jobs. */
export function overviewKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const count = state.overview?.queues.length ?? 0;
  if (down) return { ...state, queueCursor: clamp(state.queueCursor + 1, count) };
  if (up) return { ...state, queueCursor: clamp(state.queueCursor - 1, count) };
  if (key.input === "P") return pauseQueue(state);
  const queue = state.overview?.queues[clamp(state.queueCursor, count)];
  if (key.return && queue) return showJobs(state, { queue: queue.name });
  return state;
}

function pauseQueue(state: DashboardState): DashboardState {
  const queues = state.overview?.queues ?? [];
  const queue = queues[clamp(state.queueCursor, queues.length)];
  if (!queue) return state;
  const paused = !queue.paused;
  const verb = paused ? "pause" : "resume";
  const no = refused(state, verb);
  if (no) return no;
  return confirm(
    state,
    `${capital(verb)} queue ${clean(queue.name)} for every process on the store?`,
    [[
      seg(
        paused
          ? "Nothing new is claimed from it; running jobs finish."
          : "Processes claim from it again.",
      ),
    ]],
    { kind: "act", request: { kind: "queue", queue: queue.name, paused } },
  );
}

/** What a pause or resume changed, in a sentence. */
export function queueActed(r: ActResults["queue"]): string {
  return r.was === r.paused
    ? `queue ${r.queue} was already ${r.paused ? "paused" : "running"}; recorded`
    : `queue ${r.queue} ${r.paused ? "paused" : "resumed"} for every process on the store`;
}
