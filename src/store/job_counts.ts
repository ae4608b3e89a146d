/**
 * The jobs counted per queue and state, kept by both stores beside the
 * `jobs` table (`job_counts`), so that the overview, `jobs status` and the
 * total of a listing filtered by queue or state read a few small rows
 * instead of counting an index of a million entries (and sorting it by
 * queue) on every refresh: 360 ms at a million jobs on SQLite, 0.1 ms now.
 *
 * Every write of a store that inserts a job, deletes one, or moves one to
 * another state or queue adds that change to a {@linkcode CountTally}, and
 * the store writes the tally's sums in the same transaction, so the counts
 * commit or roll back with the rows they count. A batch of completions
 * changes two counts whatever its size, which is why the stores keep the
 * counts and triggers do not: a trigger runs per row, and on SQLite a
 * counting trigger made a batch update of 100 jobs 40% slower (measured).
 * How each store writes them: `sqlite/counts.ts` (only for jobs below a
 * watermark of ids: the newest are counted from the table when read),
 * `postgres/counts.ts` (appended deltas, folded about once a second).
 *
 * Only the stores' own writes keep the counts. Rows written to `jobs` by
 * hand (a test factory, an import) must be counted anew afterwards, as
 * `jobs migrate-store` does in its target; on SQLite, new rows written by
 * hand are above the watermark and so counted as they are.
 *
 * @module
 */

import { JOB_STATES, type JobState } from "../kernel/types.ts";
import type { JobMatch } from "./store.ts";

/** One change of the counts: `delta` jobs more (or fewer) of `queue` in `state`. */
export type CountDelta = [queue: string, state: JobState, delta: number];

/**
 * The changes to the counts one transaction makes, summed per queue and
 * state. Moves that cancel out (a job claimed and released in one
 * transaction) leave nothing to write.
 */
export class CountTally {
  readonly #deltas = new Map<string, Map<JobState, number>>();
  // The latest queue and state added to, summed here until another comes:
  // a batch of inserts adds to one pair a thousand times in a row.
  #queue: string | null = null;
  #state: JobState | null = null;
  #run = 0;

  /** `n` more jobs of `queue` in `state` (fewer when negative). */
  add(queue: string, state: JobState, n: number): void {
    if (queue === this.#queue && state === this.#state) {
      this.#run += n;
      return;
    }
    this.#settle();
    this.#queue = queue;
    this.#state = state;
    this.#run = n;
  }

  /** Moves the sum of the latest pair into the map. */
  #settle(): void {
    if (this.#queue === null || this.#state === null || this.#run === 0) return;
    let states = this.#deltas.get(this.#queue);
    if (states === undefined) this.#deltas.set(this.#queue, states = new Map());
    states.set(this.#state, (states.get(this.#state) ?? 0) + this.#run);
    this.#run = 0;
  }

  /** `n` jobs of `queue` moved from state `from` to state `to`. */
  move(queue: string, from: JobState, to: JobState, n = 1): void {
    if (from === to) return;
    this.add(queue, from, -n);
    this.add(queue, to, n);
  }

  /** The changes that do not cancel out, by queue then in the order of JOB_STATES. */
  deltas(): CountDelta[] {
    this.#settle();
    const out: CountDelta[] = [];
    for (const queue of [...this.#deltas.keys()].sort()) {
      const states = this.#deltas.get(queue)!;
      for (const state of JOB_STATES) {
        const n = states.get(state) ?? 0;
        if (n !== 0) out.push([queue, state, n]);
      }
    }
    return out;
  }
}

/**
 * Whether the counts answer `jobsCountMatching(params)`: when it filters by
 * nothing but queue and states.
 */
export function countsAnswer(params: JobMatch): boolean {
  return Object.entries(params).every(([key, value]) =>
    value === undefined || key === "queue" || key === "state"
  );
}

/**
 * The sum of the counted rows that `params` (a queue and states, see
 * {@linkcode countsAnswer}) selects.
 */
export function sumMatching(
  rows: readonly { queue: string; state: JobState; count: number }[],
  params: JobMatch,
): number {
  const states = params.state === undefined
    ? null
    : Array.isArray(params.state)
    ? params.state
    : [params.state];
  let sum = 0;
  for (const row of rows) {
    if (params.queue !== undefined && row.queue !== params.queue) continue;
    if (states !== null && !states.includes(row.state)) continue;
    sum += row.count;
  }
  return sum;
}
