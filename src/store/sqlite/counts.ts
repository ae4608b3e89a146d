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
 * Here too: the counts' statements, and the store's
 * {@linkcode StoreCounts} ({@linkcode sqliteCounts}): the counts and the
 * figures read beside them (the oldest available job of a queue,
 * throughput, dead letters). Nothing of the lifecycle's ops is answered
 * here: jobs.ts answers `countsMove` into the write's {@linkcode CountsWrite}.
 *
 * @module
 */

import type { StatementSync } from "node:sqlite";
import type { JobState } from "../../kernel/types.ts";
import type { StoreCounts } from "../store.ts";
import { CountTally } from "../job_counts.ts";
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";
import { checkState } from "./sql.ts";

/** A write that inserts at least this many jobs takes them into the counts. */
export const FOLD_INSERTS = 64;
/** Past this many jobs above the watermark, the next insert takes them all into the counts. */
export const UNCOUNTED_MAX = 10_000;

/**
 * Up to this many changes of the counts are written as bound values, one
 * statement for each number of them: a write usually changes one or two
 * counts (an insert: one; a batch of completions: two), and the values
 * cost half of what parsing a JSON array costs (3.5 against 7 us a
 * statement, measured), which matters for a one-job transaction.
 */
export const COUNTS_ADD_VALUES = 4;

/** The statement adding `n` changes of the counts, as `n` (queue, state, delta) value rows. */
export function countsAddSql(n: number): string {
  const rows = Array.from({ length: n }, () => "(?, ?, ?)").join(", ");
  return `INSERT INTO job_counts (queue, state, count) VALUES ${rows}
    ON CONFLICT (queue, state) DO UPDATE SET count = count + excluded.count`;
}

/**
 * How many of the newest discarded jobs `jobsDeadLetters` groups: a bound on
 * its cost (one pass over that many rows) however large the dead-letter pile.
 */
export const DEAD_LETTER_SCAN = 10_000;

/** The statements of the counts and their figures (exported for test/store/query_plans_test.ts). */
export const SQL = {
  // The job counts: one write's changes as [queue, state, delta]
  // rows (more than COUNTS_ADD_VALUES of them; fewer go as values, see
  // countsAddSql), the watermark, and the fold of the jobs above it.
  countsAdd: `INSERT INTO job_counts (queue, state, count)
    SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(:deltas) WHERE true
    ON CONFLICT (queue, state) DO UPDATE SET count = count + excluded.count`,
  countsThrough: `SELECT through FROM job_counts_through`,
  countsSetThrough: `UPDATE job_counts_through SET through = :through`,
  countsFold: `INSERT INTO job_counts (queue, state, count)
    SELECT queue, state, count(*) FROM jobs WHERE id > :after AND id <= :through
    GROUP BY queue, state
    ON CONFLICT (queue, state) DO UPDATE SET count = count + excluded.count`,
  // Every count that is not zero: job_counts, and the jobs above its watermark.
  counts: `SELECT queue, state, sum(count) AS count FROM (
      SELECT queue, state, count FROM job_counts
      UNION ALL
      SELECT queue, state, count(*) FROM jobs
      WHERE id > (SELECT through FROM job_counts_through)
      GROUP BY queue, state)
    GROUP BY queue, state HAVING sum(count) <> 0`,
  // Completions from the covering index jobs_completed, failures from the
  // partial index attempts_failed (0005); only failures pay a row lookup, for
  // their job's queue. A bucket is named by its start, since + k * :bucket.
  jobsThroughput: `SELECT queue, bucket, sum(completed) AS completed, sum(failed) AS failed FROM (
      SELECT queue, :since + CAST((completed_at - :since) / :bucket AS INTEGER) * :bucket AS bucket,
        count(*) AS completed, 0 AS failed
      FROM jobs WHERE state = 'completed' AND completed_at >= :since AND completed_at < :until
      GROUP BY 1, 2
      UNION ALL
      SELECT j.queue, :since + CAST((a.finished_at - :since) / :bucket AS INTEGER) * :bucket,
        0, count(*)
      FROM attempts AS a JOIN jobs AS j ON j.id = a.job_id
      WHERE a.outcome IN ('retryable', 'discarded')
        AND a.finished_at >= :since AND a.finished_at < :until
      GROUP BY 1, 2)
    GROUP BY queue, bucket ORDER BY queue, bucket`,
  // The newest :scan discarded jobs (walking jobs_discarded backwards), grouped
  // by worker, schedule and the first line of their last error. With one max()
  // in the query, SQLite takes the bare column id from the row holding it.
  jobsDeadLetters: `SELECT worker, schedule_id,
      substr(last_error, 1, instr(last_error || char(10), char(10)) - 1) AS error,
      count(*) AS count, max(discarded_at) AS latest_at, id AS latest_id
    FROM (
      SELECT id, worker, schedule_id, discarded_at,
        coalesce(errors ->> '$[#-1].error', '') AS last_error
      FROM jobs INDEXED BY jobs_discarded WHERE state = 'discarded'
      ORDER BY discarded_at DESC LIMIT :scan)
    GROUP BY 1, 2, 3
    ORDER BY count DESC, latest_at DESC, latest_id DESC
    LIMIT :limit`,
  // One seek of jobs_available per priority (0-9, see clampPriority): the
  // index leads with (queue, priority), so min() over a whole queue would
  // read every available row of it.
  queueOldestAvailable: `SELECT min(at) AS at FROM (
      SELECT (SELECT min(scheduled_at) FROM jobs
        WHERE state = 'available' AND queue = :queue AND priority = p.value) AS at
      FROM json_each('[0,1,2,3,4,5,6,7,8,9]') AS p)`,
} as const;

/** countsAddSql(n) under the key n, for n up to COUNTS_ADD_VALUES. */
const COUNTS_ADD: Readonly<Record<string, string>> = Object.fromEntries(
  Array.from({ length: COUNTS_ADD_VALUES }, (_, i) => [i + 1, countsAddSql(i + 1)]),
);

/** The statements the counts are written with (see countStatements). */
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

/** The statements the counts of `core` are written with (the core keeps them until it readies again). */
export function countStatements(core: SqliteCore): CountStatements {
  const s = core.statements(SQL);
  const add = core.statements(COUNTS_ADD);
  return {
    through: s.countsThrough,
    setThrough: s.countsSetThrough,
    fold: s.countsFold,
    addJson: s.countsAdd,
    addValues: Array.from({ length: COUNTS_ADD_VALUES }, (_, i) => add[i + 1]!),
  };
}

/** Every count that is not zero, from job_counts. */
export function countRows(core: SqliteCore): { queue: string; state: JobState; count: number }[] {
  return (core.statements(SQL).counts.all() as Row[]).map((r) => ({
    queue: String(r.queue),
    state: r.state as JobState,
    count: Number(r.count),
  }));
}

/** The {@linkcode StoreCounts} of the store over `core`. */
export function sqliteCounts(core: SqliteCore): StoreCounts {
  core.register(SQL);
  core.register(COUNTS_ADD);
  return {
    queuesOldestAvailable(params: { queues: string[] }) {
      return core.exclusive(() =>
        params.queues.flatMap((queue) => {
          const row = core.statements(SQL).queueOldestAvailable.get({ queue }) as Row;
          return row.at == null ? [] : [{ queue, scheduledAt: Number(row.at) }];
        })
      );
    },

    jobsCount(params: { queue?: string; state?: JobState }) {
      const state = params.state;
      try {
        if (state !== undefined) checkState(state);
      } catch (error) {
        return Promise.reject(error);
      }
      return core.exclusive(() =>
        countRows(core)
          .filter((r) =>
            (state === undefined || r.state === state) &&
            (params.queue === undefined || r.queue === params.queue)
          )
          .sort((a, b) => compare(a.queue, b.queue) || compare(a.state, b.state))
      );
    },

    jobsThroughput(params: { since: number; until: number; bucketMs: number }) {
      const { since, until, bucketMs } = params;
      for (const [name, value] of Object.entries(params)) {
        if (!Number.isSafeInteger(value)) {
          return Promise.reject(
            new RangeError(`${name} must be a whole number of ms, got ${value}`),
          );
        }
      }
      if (bucketMs < 1) {
        return Promise.reject(new RangeError(`bucketMs must be at least 1, got ${bucketMs}`));
      }
      if (until < since) {
        return Promise.reject(
          new RangeError(`until must not be before since (${since}), got ${until}`),
        );
      }
      return core.exclusive(() =>
        (core.statements(SQL).jobsThroughput.all({ since, until, bucket: bucketMs }) as Row[]).map((
          r,
        ) => ({
          queue: String(r.queue),
          bucket: Number(r.bucket),
          completed: Number(r.completed),
          failed: Number(r.failed),
        }))
      );
    },

    jobsDeadLetters(params: { limit: number }) {
      if (!Number.isSafeInteger(params.limit) || params.limit < 1) {
        return Promise.reject(
          new RangeError(`limit must be a whole number >= 1, got ${params.limit}`),
        );
      }
      return core.exclusive(() =>
        (core.statements(SQL).jobsDeadLetters.all({
          limit: params.limit,
          scan: DEAD_LETTER_SCAN,
        }) as Row[])
          .map((r) => ({
            worker: String(r.worker),
            scheduleId: r.schedule_id as string | null,
            error: String(r.error),
            count: Number(r.count),
            latestId: Number(r.latest_id),
            latestAt: Number(r.latest_at),
          }))
      );
    },
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
