/**
 * What the SQLite file itself allows, for the `limit` phase: a bare loop
 * over `node:sqlite` doing the work the runtime must do per job, and no
 * more. Each round claims up to 100 available jobs in one write transaction
 * (the store's claim: `UPDATE ... RETURNING`, attempt and fence raised,
 * lease set), performs nothing, then records them in a second one: a
 * completion fenced by the lease (id, executing, node, fence) and an
 * `attempts` row per job, each a statement for the whole batch. It stops
 * when a claim returns nothing.
 *
 * Also the enqueue limits: a prepared one-row insert run N times in one
 * transaction, and a one-row insert in a transaction of its own, with the
 * columns the store's insert writes.
 *
 * The SQL here is the benchmark's own yardstick, not the store's (which
 * lives in `src/store/`); it opens the file the store created and migrated,
 * with the store's connection settings (WAL, synchronous NORMAL).
 *
 * ```sh
 * deno run -A bench/limit_loop.ts FILE NODE   # a child: warms up, "ready", on "go" drains, prints "done N"
 * ```
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { readLines, withWarmupStore } from "./shared.ts";

/** Jobs claimed per round, as the bare loop of the issue states it. */
export const CLAIM_BATCH = 100;
const LEASE_MS = 30_000;

/** Opens `path` as the store does, waiting up to 5 s for the write lock. */
export function openLimit(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA synchronous = NORMAL");
  return db;
}

/** Claims and completes every available job of `default` as `node`; returns how many. */
export function drainLimit(db: DatabaseSync, node: string): number {
  const claim = db.prepare(`UPDATE jobs SET state = 'executing', attempt = attempt + 1,
      fence = fence + 1, attempted_by = :node, attempted_at = :now, lease_expires_at = :lease
    WHERE id IN (SELECT id FROM jobs WHERE state = 'available' AND queue = 'default'
      AND scheduled_at <= :now ORDER BY priority, scheduled_at, id LIMIT :limit)
      AND +state = 'available'
    RETURNING id, attempt, fence, args`);
  // A batch's completions in one statement, each row fenced by its own lease,
  // and its attempt rows in another: per-row statements cost more in the
  // binding than in SQLite.
  const complete = db.prepare(`UPDATE jobs SET state = 'completed', completed_at = :now,
      lease_expires_at = NULL
    FROM (SELECT value ->> 0 AS id, value ->> 1 AS fence FROM json_each(:leases)) AS r
    WHERE jobs.id = r.id AND +jobs.state = 'executing' AND jobs.attempted_by = :node
      AND jobs.fence = r.fence
    RETURNING jobs.id`);
  const attempts = db.prepare(`INSERT INTO attempts (job_id, attempt, fence, node, kind,
      started_at, finished_at, outcome)
    SELECT value ->> 0, value ->> 1, value ->> 2, :node, 'run', :started, :now, 'completed'
    FROM json_each(:rows)`);
  let done = 0;
  for (;;) {
    const started = Date.now();
    db.exec("BEGIN IMMEDIATE");
    let claimed: Record<string, unknown>[];
    try {
      claimed = claim.all({ node, now: started, lease: started + LEASE_MS, limit: CLAIM_BATCH });
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw error;
    }
    if (claimed.length === 0) return done;
    // The no-op perform: the args are parsed, as the executor parses them.
    for (const job of claimed) JSON.parse(String(job.args));
    const now = Date.now();
    db.exec("BEGIN IMMEDIATE");
    try {
      const leases = JSON.stringify(claimed.map((j) => [j.id, j.fence]));
      const written = complete.all({ leases, node, now }).length;
      if (written !== claimed.length) {
        throw new Error(`lost ${claimed.length - written} leases of ${claimed.length}`);
      }
      const rows = JSON.stringify(claimed.map((j) => [j.id, j.attempt, j.fence]));
      attempts.run({ rows, node, started, now });
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw error;
    }
    done += claimed.length;
  }
}

const INSERT = `INSERT INTO jobs (queue, worker, args, meta, tags, priority, max_attempts,
    scheduled_at, state, inserted_at)
  VALUES ('default', 'noop', :args, '{}', '[]', 0, 20, :now, 'available', :now)`;

/** Rows/s of a prepared one-row insert run `n` times in one transaction. */
export function insertLoop(db: DatabaseSync, n: number): number {
  const insert = db.prepare(INSERT);
  const t0 = performance.now();
  db.exec("BEGIN IMMEDIATE");
  for (let i = 0; i < n; i++) insert.run({ args: JSON.stringify({ i }), now: Date.now() });
  db.exec("COMMIT");
  return n / ((performance.now() - t0) / 1000);
}

/** Transactions/s of a one-row insert in a transaction of its own, `n` times. */
export function insertTransactions(db: DatabaseSync, n: number): number {
  const insert = db.prepare(INSERT);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    db.exec("BEGIN IMMEDIATE");
    insert.run({ args: JSON.stringify({ i }), now: Date.now() });
    db.exec("COMMIT");
  }
  return n / ((performance.now() - t0) / 1000);
}

/** Drains WARMUP_JOBS jobs of a scratch store first, as the runtime children do. */
async function warmUp(node: string): Promise<void> {
  await withWarmupStore([], (_jobs, path) => {
    const db = openLimit(path);
    try {
      drainLimit(db, node);
    } finally {
      db.close();
    }
    return Promise.resolve();
  });
}

if (import.meta.main) {
  const [path, node] = Deno.args;
  if (!path || !node) {
    console.error(`usage: limit_loop.ts FILE NODE, got "${Deno.args.join(" ")}"`);
    Deno.exit(2);
  }
  await warmUp(node);
  const db = openLimit(path);
  console.log("ready");
  for await (const line of readLines(Deno.stdin.readable)) {
    if (line !== "go") continue;
    console.log(`done ${drainLimit(db, node)}`);
    break;
  }
  db.close();
}
