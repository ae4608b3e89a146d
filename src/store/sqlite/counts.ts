/**
 * The SQLite side of the job counts (src/store/job_counts.ts): `job_counts`
 * holds the counts of the jobs whose ids are at most a watermark
 * (`job_counts_through`); the jobs above it, the newest, are counted from
 * the table itself when the counts are read (a range of the primary key,
 * kept short). Ids only grow and one writer at a time hands them out, so
 * every job a write inserts is above the watermark.
 *
 * Why a watermark: in WAL mode every page a transaction changes is one more
 * frame written at its commit, and here one more frame cost a one-job
 * transaction 20 us of its 36 (measured): a count row updated by every
 * write made enqueueing one job at a time 40% slower. With the watermark a
 * write changes job_counts only for jobs at or below it: an insert never,
 * and a job that runs soon after its insert never either. A write that
 * inserts many jobs (where one frame is nothing) takes the new jobs into
 * the counts, those of earlier writes with them (raising the watermark),
 * and so does any insert once the jobs above the watermark number more than
 * {@linkcode UNCOUNTED_MAX}, so a read never counts more rows than that.
 *
 * @module
 */

import type { StatementSync } from "node:sqlite";
import type { JobState } from "../../kernel/types.ts";
import { CountTally } from "../job_counts.ts";

/** A write that inserts at least this many jobs takes them into the counts. */
export const FOLD_INSERTS = 64;
/** Past this many jobs above the watermark, the next insert takes them all into the counts. */
export const UNCOUNTED_MAX = 10_000;

/** The statements the counts are written with (see sql.ts). */
export interface CountStatements {
  /** The watermark: `through`. */
  through: StatementSync;
  /** Sets the watermark to `:through`. */
  setThrough: StatementSync;
  /** Adds the counts of the jobs with ids in (`:after`, `:through`]. */
  fold: StatementSync;
  /** Adds changes as a JSON array of [queue, state, delta] (`:deltas`). */
  addJson: StatementSync;
  /** Adds n changes as 3n values, the statement for n at index n - 1. */
  addValues: readonly StatementSync[];
}

/**
 * The changes of the job counts one write transaction makes: each job's
 * move goes to the counts when the job is at or below the watermark, to the
 * write's own insertions when the write inserted it, and nowhere otherwise
 * (a job above the watermark is counted from the table as it is).
 */
export class CountsWrite {
  readonly #counted = new CountTally();
  readonly #fresh = new CountTally();
  #through: number | undefined;
  #freshFrom = Infinity;
  #freshTo = -Infinity;
  #freshCount = 0;

  constructor(
    /** The statements, asked for only when there is something to write. */
    readonly statements: () => CountStatements,
    /** The watermark this process saw last (another may have raised it since). */
    readonly seen: { through: number },
  ) {}

  /** A job this write inserted, `id` of `queue`, in `state`. */
  inserted(id: number, queue: string, state: JobState): void {
    this.#fresh.add(queue, state, 1);
    this.#freshFrom = Math.min(this.#freshFrom, id);
    this.#freshTo = Math.max(this.#freshTo, id);
    this.#freshCount++;
  }

  /**
   * The job `id` of `queue` left state `from` for `to` (null: it was
   * deleted), in `toQueue` when it moved to another queue.
   */
  moved(id: number, queue: string, from: JobState, to: JobState | null, toQueue = queue): void {
    const tally = id >= this.#freshFrom
      ? this.#fresh
      : id <= this.#watermark()
      ? this.#counted
      : null;
    if (tally === null) return;
    tally.add(queue, from, -1);
    if (to !== null) tally.add(toQueue, to, 1);
  }

  /** Writes the changes, in the write's transaction, before it commits. */
  finish(): void {
    if (this.#freshCount > 0 && this.#folds(this.seen.through)) {
      const through = this.#watermark();
      if (this.#folds(through)) {
        // The jobs earlier writes inserted since the last fold, as they are now.
        if (this.#freshFrom - 1 > through) {
          this.statements().fold.run({ after: through, through: this.#freshFrom - 1 });
        }
        for (const [queue, state, n] of this.#fresh.deltas()) this.#counted.add(queue, state, n);
        this.#add(this.#counted);
        this.statements().setThrough.run({ through: this.#freshTo });
        this.seen.through = this.#freshTo;
        return;
      }
    }
    this.#add(this.#counted);
  }

  /** Whether this write takes the jobs above `through` into the counts. */
  #folds(through: number): boolean {
    return this.#freshCount >= FOLD_INSERTS || this.#freshTo - through > UNCOUNTED_MAX;
  }

  /** The watermark, read once per write (no other write runs meanwhile). */
  #watermark(): number {
    if (this.#through === undefined) {
      const row = this.statements().through.get() as { through: number } | undefined;
      this.#through = Number(row?.through ?? 0);
      this.seen.through = this.#through;
    }
    return this.#through;
  }

  #add(tally: CountTally): void {
    const deltas = tally.deltas();
    if (deltas.length === 0) return;
    const { addJson, addValues } = this.statements();
    if (deltas.length > addValues.length) addJson.run({ deltas: JSON.stringify(deltas) });
    else addValues[deltas.length - 1]!.run(...deltas.flat());
  }
}
