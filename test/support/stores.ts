/**
 * Test support: temporary stores on real files, a row factory that inserts a
 * job in any state, and a Jobs on a FakeClock.
 */

import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import type { Job, JobState } from "../../src/kernel/types.ts";
import type { Worker } from "../../src/kernel/worker.ts";
import {
  openSqliteStore,
  type SqliteStore,
  type SqliteTx,
} from "../../src/store/sqlite/sqlite_store.ts";
import { silentLogger } from "../../src/kernel/logger.ts";

/** A fresh directory removed by `using`/`cleanup()`. */
export async function tempDir(): Promise<{ path: string; cleanup(): Promise<void> }> {
  const path = await Deno.makeTempDir({ prefix: "jobs-test-" });
  return { path, cleanup: () => Deno.remove(path, { recursive: true }).catch(() => {}) };
}

/** A migrated SQLite store in a temp file, plus its path and a cleanup. */
export async function tempStore(): Promise<
  { store: SqliteStore; path: string; dir: string; [Symbol.asyncDispose](): Promise<void> }
> {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const store = await openSqliteStore(path);
  return {
    store,
    path,
    dir: dir.path,
    async [Symbol.asyncDispose]() {
      await store.close();
      await dir.cleanup();
    },
  };
}

/** Runs `fn` on the store at `db`, opened for it and closed after (as another process would). */
export async function withStore<T>(db: string, fn: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = await openSqliteStore(db);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A Jobs on a temp file with a FakeClock and a silent logger. */
export async function tempJobs(
  // deno-lint-ignore no-explicit-any
  workers: Worker<any>[] = [],
  options: { clock?: FakeClock; random?: () => number } = {},
): Promise<
  {
    jobs: Jobs<SqliteTx>;
    store: SqliteStore;
    clock: FakeClock;
    path: string;
    [Symbol.asyncDispose](): Promise<void>;
  }
> {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const clock = options.clock ?? new FakeClock();
  const store = await openSqliteStore(path, { now: clock.now() });
  const jobs = new Jobs({ store, workers, clock, logger: silentLogger, random: options.random });
  return {
    jobs,
    store,
    clock,
    path,
    async [Symbol.asyncDispose]() {
      await jobs.close({ grace: 0 });
      await dir.cleanup();
    },
  };
}

/** Fields of a job row to insert directly; everything has a default. */
export interface JobFixture {
  state?: JobState;
  queue?: string;
  worker?: string;
  args?: unknown;
  attempt?: number;
  maxAttempts?: number;
  priority?: number;
  fence?: number;
  attemptedBy?: string | null;
  attemptedAt?: number | null;
  leaseExpiresAt?: number | null;
  insertedAt?: number;
  scheduledAt?: number;
  completedAt?: number | null;
  cancelledAt?: number | null;
  discardedAt?: number | null;
  uniqueKey?: string | null;
  occurrence?: string | null;
}

/**
 * Inserts a job row in any state, as River's testfactory does: for tests of
 * the lifeline, the pruner and the stager, which need rows no API makes.
 */
export function insertJob(store: SqliteStore, fixture: JobFixture = {}): Promise<Job> {
  const now = fixture.insertedAt ?? Date.UTC(2026, 0, 1);
  const row = store.db.prepare(
    `INSERT INTO jobs (state, queue, worker, args, attempt, max_attempts, priority, fence,
       attempted_by, attempted_at, lease_expires_at, inserted_at, scheduled_at, completed_at,
       cancelled_at, discarded_at, unique_key, occurrence)
     VALUES (:state, :queue, :worker, :args, :attempt, :max, :priority, :fence, :by, :at,
       :lease, :inserted, :scheduled, :completed, :cancelled, :discarded, :unique, :occurrence)
     RETURNING id`,
  ).get({
    state: fixture.state ?? "available",
    queue: fixture.queue ?? "default",
    worker: fixture.worker ?? "noop",
    args: JSON.stringify(fixture.args ?? {}),
    attempt: fixture.attempt ?? 0,
    max: fixture.maxAttempts ?? 20,
    priority: fixture.priority ?? 0,
    fence: fixture.fence ?? fixture.attempt ?? 0,
    by: fixture.attemptedBy ?? null,
    at: fixture.attemptedAt ?? null,
    lease: fixture.leaseExpiresAt ?? null,
    inserted: now,
    scheduled: fixture.scheduledAt ?? now,
    completed: fixture.completedAt ?? null,
    cancelled: fixture.cancelledAt ?? null,
    discarded: fixture.discardedAt ?? null,
    unique: fixture.uniqueKey ?? null,
    occurrence: fixture.occurrence ?? null,
  }) as { id: number };
  return store.jobGet({ id: row.id }) as Promise<Job>;
}
