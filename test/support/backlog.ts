/**
 * Test support: a backlog of final jobs for the pruner, written in a few
 * statements instead of a million inserts. Each row is what a daemon leaves
 * behind for a no-op job that completed: a `completed` job with its one
 * `run` attempt, so a prune deletes both tables' rows, as it does in real use.
 *
 * SQL here, not in `src/`: no store API writes rows in bulk at any instant.
 *
 * @module
 */

import type { SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";

/** What {@linkcode insertCompletedBacklog} writes. */
export interface BacklogOptions {
  /** Jobs to write. */
  count: number;
  /** When the oldest job completed (UTC ms); each next one 1 ms later. */
  completedFrom: number;
  /** @default "backlog" */
  queue?: string;
  /** Rows per transaction, so a large backlog does not build one huge journal. @default 100_000 */
  chunk?: number;
}

/**
 * Writes `count` completed jobs, each with one completed attempt, completed
 * 1 ms apart from `completedFrom`; returns the first and last id written.
 */
export function insertCompletedBacklog(
  store: SqliteStore,
  options: BacklogOptions,
): { firstId: number; lastId: number } {
  const chunk = options.chunk ?? 100_000;
  const queue = options.queue ?? "backlog";
  const jobs = store.db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < :count)
     INSERT INTO jobs (state, queue, worker, args, attempt, max_attempts, fence, attempted_by,
       inserted_at, scheduled_at, attempted_at, completed_at)
     SELECT 'completed', :queue, 'noop', json_object('i', :offset + i), 1, 20, 1, 'backlog:1',
       :from + :offset + i - 20, :from + :offset + i - 20, :from + :offset + i - 10,
       :from + :offset + i
     FROM n`,
  );
  const attempts = store.db.prepare(
    `INSERT INTO attempts (job_id, attempt, fence, node, kind, started_at, finished_at, outcome)
     SELECT id, 1, 1, 'backlog:1', 'run', attempted_at, completed_at, 'completed'
     FROM jobs WHERE id > :after`,
  );
  const last = () =>
    Number(
      (store.db.prepare(`SELECT coalesce(max(id), 0) AS id FROM jobs`).get() as {
        id: number;
      }).id,
    );
  const before = last();
  for (let offset = 0; offset < options.count; offset += chunk) {
    const after = last();
    store.db.exec("BEGIN IMMEDIATE");
    try {
      jobs.run({
        count: Math.min(chunk, options.count - offset),
        queue,
        offset,
        from: options.completedFrom,
      });
      attempts.run({ after });
      store.db.exec("COMMIT");
    } catch (error) {
      if (store.db.isTransaction) store.db.exec("ROLLBACK");
      throw error;
    }
  }
  return { firstId: before + 1, lastId: last() };
}
