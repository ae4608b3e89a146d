/**
 * The PostgreSQL side of the job counts (src/store/job_counts.ts): each
 * write appends its changes to `job_count_deltas` in its own transaction
 * (rows no other transaction locks or waits for), a count is the sum of its
 * `job_counts` row and its deltas, and {@linkcode compactCounts} folds the
 * deltas into `job_counts` so that the sum stays a few rows.
 *
 * @module
 */

import type { JobState } from "../../kernel/types.ts";
import type { CountTally } from "../job_counts.ts";
import type postgres from "./driver.ts";
import type { Fragment, Sql } from "./fragments.ts";

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
