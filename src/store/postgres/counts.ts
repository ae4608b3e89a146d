/**
 * The PostgreSQL side of the job counts (src/store/job_counts.ts) and the
 * figures read beside them ({@linkcode StoreCounts}, {@linkcode postgresCounts}): each
 * write appends its changes to `job_count_deltas` in its own transaction
 * (rows no other transaction locks or waits for), a count is the sum of its
 * `job_counts` row and its deltas, and {@linkcode compactCounts} folds the
 * deltas into `job_counts` so that the sum stays a few rows.
 *
 * @module
 */

import type { JobState } from "../../kernel/types.ts";
import type { CountTally } from "../job_counts.ts";
import type { StoreCounts } from "../store.ts";
import type { PostgresCore } from "./core.ts";
import type postgres from "./driver.ts";
import { checkState, compare, type Fragment, type Sql } from "./fragments.ts";

/**
 * The {@linkcode StoreCounts} methods of the PostgreSQL store, over `core`
 * (the counts of jobs and the figures read beside them), each with its
 * transaction policy: its own transaction where it needs one (`core.begin`
 * joins a transaction's view).
 */
export function postgresCounts(core: PostgresCore): StoreCounts {
  return core.guard({
    async jobsCount(params: { queue?: string; state?: JobState }) {
      const state = params.state ?? null;
      if (state !== null) checkState(state);
      return (await readCounts(core.sql))
        .filter((r) =>
          (state === null || r.state === state) &&
          (params.queue === undefined || r.queue === params.queue)
        )
        .sort((a, b) => compare(a.queue, b.queue) || compare(a.state, b.state));
    },

    async queuesOldestAvailable(params: { queues: string[] }) {
      // One seek of jobs_available per priority (0-9, see clampPriority): the
      // index leads with (queue, priority), so min() over a whole queue would
      // read every available row of it.
      const rows = await core.sql`SELECT q.queue, min(o.at) AS at
        FROM unnest(${params.queues}::text[]) AS q(queue)
        CROSS JOIN generate_series(0, 9) AS p(priority)
        CROSS JOIN LATERAL (SELECT scheduled_at AS at FROM jobs
          WHERE state = 'available' AND queue = q.queue AND priority = p.priority
          ORDER BY scheduled_at LIMIT 1) AS o
        GROUP BY q.queue ORDER BY q.queue COLLATE "C"`;
      return rows.map((r) => ({ queue: String(r.queue), scheduledAt: Number(r.at) }));
    },

    async jobsThroughput(params: { since: number; until: number; bucketMs: number }) {
      const { since, until, bucketMs } = params;
      for (const [name, value] of Object.entries(params)) {
        if (!Number.isSafeInteger(value)) {
          throw new RangeError(`${name} must be a whole number of ms, got ${value}`);
        }
      }
      if (bucketMs < 1) throw new RangeError(`bucketMs must be at least 1, got ${bucketMs}`);
      if (until < since) {
        throw new RangeError(`until must not be before since (${since}), got ${until}`);
      }
      // A bucket is named by its start, since + k * bucketMs.
      const rows = await core.sql`SELECT queue, bucket, sum(completed) AS completed,
          sum(failed) AS failed
        FROM (
          SELECT queue,
            ${since}::bigint + ((completed_at - ${since}::bigint) / ${bucketMs}::bigint)
              * ${bucketMs}::bigint AS bucket,
            count(*) AS completed, 0::bigint AS failed
          FROM jobs WHERE state = 'completed'
            AND completed_at >= ${since}::bigint AND completed_at < ${until}::bigint
          GROUP BY 1, 2
          UNION ALL
          SELECT j.queue,
            ${since}::bigint + ((a.finished_at - ${since}::bigint) / ${bucketMs}::bigint)
              * ${bucketMs}::bigint,
            0, count(*)
          FROM attempts AS a JOIN jobs AS j ON j.id = a.job_id
          WHERE a.outcome IN ('retryable', 'discarded')
            AND a.finished_at >= ${since}::bigint AND a.finished_at < ${until}::bigint
          GROUP BY 1, 2) AS t
        GROUP BY queue, bucket ORDER BY queue COLLATE "C", bucket`;
      return rows.map((r) => ({
        queue: String(r.queue),
        bucket: Number(r.bucket),
        completed: Number(r.completed),
        failed: Number(r.failed),
      }));
    },

    async jobsDeadLetters(params: { limit: number }) {
      if (!Number.isSafeInteger(params.limit) || params.limit < 1) {
        throw new RangeError(`limit must be a whole number >= 1, got ${params.limit}`);
      }
      // The newest DEAD_LETTER_SCAN discarded jobs, grouped by worker, schedule
      // and the first line of their last error.
      const rows = await core.sql`SELECT worker, schedule_id, error, count(*) AS count,
          max(discarded_at) AS latest_at,
          (array_agg(id ORDER BY discarded_at DESC, id DESC))[1] AS latest_id
        FROM (
          SELECT id, worker, schedule_id, discarded_at,
            split_part(coalesce(errors -> -1 ->> 'error', ''), chr(10), 1) AS error
          FROM jobs WHERE state = 'discarded'
          ORDER BY discarded_at DESC LIMIT ${DEAD_LETTER_SCAN}::bigint) AS d
        GROUP BY worker, schedule_id, error
        ORDER BY count DESC, latest_at DESC, latest_id DESC
        LIMIT ${params.limit}::bigint`;
      return rows.map((r) => ({
        worker: String(r.worker),
        scheduleId: r.schedule_id as string | null,
        error: String(r.error),
        count: Number(r.count),
        latestId: Number(r.latest_id),
        latestAt: Number(r.latest_at),
      }));
    },
  });
}

/**
 * How many of the newest discarded jobs `jobsDeadLetters` groups: a bound on
 * its cost however large the dead-letter pile.
 */
const DEAD_LETTER_SCAN = 10_000;

/** Writes the changes of `tally` in the transaction `q`; nothing when they cancel out. */
export async function addCounts(q: Sql, tally: CountTally): Promise<void> {
  const deltas = tally.deltas();
  if (deltas.length === 0) return;
  await q`INSERT INTO job_count_deltas (queue, state, delta)
    SELECT d ->> 0, d ->> 1, (d ->> 2)::bigint
    FROM jsonb_array_elements(${JSON.stringify(deltas)}::text::jsonb) AS d`;
}

/**
 * The statement (for a CTE) that counts the rows of the CTE named `rows`,
 * each a job of `queue` that left the state `was` (null: it is new) for the
 * state `state` (null: it is deleted).
 */
export function countRows(q: Sql, rows: string): Fragment {
  return q`INSERT INTO job_count_deltas (queue, state, delta)
    SELECT queue, state, sum(delta) FROM (
      SELECT queue, was AS state, -1 AS delta FROM ${q(rows)} WHERE was IS NOT NULL
      UNION ALL
      SELECT queue, state, 1 FROM ${q(rows)} WHERE state IS NOT NULL) AS d
    GROUP BY queue, state HAVING sum(delta) <> 0`;
}

/** Every count above zero: job_counts with the deltas not folded in yet. */
export async function readCounts(
  q: Sql,
): Promise<{ queue: string; state: JobState; count: number }[]> {
  const rows = await q`SELECT queue, state, sum(count) AS count FROM (
      SELECT queue, state, count FROM job_counts
      UNION ALL
      SELECT queue, state, delta FROM job_count_deltas) AS c
    GROUP BY queue, state HAVING sum(count) <> 0`;
  return rows.map((r) => ({
    queue: String(r.queue),
    state: r.state as JobState,
    count: Number(r.count),
  }));
}

/**
 * Folds every delta into job_counts, in one transaction under an advisory
 * lock of `schema` (a store that finds it taken skips: another is folding).
 * Readers see the counts before or after, never half of it.
 */
export async function compactCounts(sql: postgres.Sql, schema: string): Promise<void> {
  await sql.begin(async (tx) => {
    const [lock] = await tx`SELECT pg_try_advisory_xact_lock(hashtext(${`jobs counts ${schema}`}))
      AS got`;
    if (!lock?.got) return;
    // In key order: two folds that somehow met would lock the rows alike.
    await tx`WITH moved AS (DELETE FROM job_count_deltas RETURNING queue, state, delta)
      INSERT INTO job_counts AS c (queue, state, count)
        SELECT queue, state, sum(delta) FROM moved GROUP BY queue, state ORDER BY queue, state
      ON CONFLICT (queue, state) DO UPDATE SET count = c.count + excluded.count`;
  });
}
