/**
 * The backends the conformance suites run against, and a row factory that
 * knows no backend. A new backend adds one entry to `BACKENDS`; the suites'
 * bodies do not change.
 *
 * PostgreSQL runs at `JOBS_TEST_PG_URL` (default
 * `postgres://postgres@127.0.0.1:5432/test`), each harness in a fresh schema
 * `jobs_test_<random>` dropped by `close()`. An unreachable server fails the
 * tests, in CI and here alike: it is never skipped.
 */

import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import type { NewJob } from "../../src/kernel/types.ts";
import type { Worker } from "../../src/kernel/worker.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { tempDir } from "./stores.ts";

/** A fresh, migrated, empty database of one backend. */
export interface Harness {
  store: Store;
  /** The location another process opens it at (`openStore`, `--db`). */
  location: string;
  /** Another connection to the same database (another node, in effect). */
  connect(): Promise<Store>;
  close(): Promise<void>;
}

/** One backend: a name for test titles and a way to open a fresh database at `now`. */
export interface Backend {
  name: string;
  open(now: number): Promise<Harness>;
}

/** The database PostgreSQL tests use; each test works in a schema of its own. */
export const POSTGRES_TEST_URL = Deno.env.get("JOBS_TEST_PG_URL") ??
  "postgres://postgres@127.0.0.1:5432/test";

/** A schema name no other test run uses. */
export function testSchema(): string {
  return `jobs_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
}

/**
 * Drops `schema` of the test database, if it is there, on a connection of
 * its own to `public` (the schema's own store may be closed, or may never
 * have created it).
 */
export async function dropTestSchema(schema: string): Promise<void> {
  const store = await openPostgresStore(POSTGRES_TEST_URL, { migrate: false, max: 1 });
  try {
    await store.transaction((tx) => tx.sql`DROP SCHEMA IF EXISTS ${tx.sql(schema)} CASCADE`);
  } finally {
    await store.close();
  }
}

/** A fresh PostgreSQL schema, migrated at `now`; `close()` drops it. */
export async function openPostgresHarness(now: number): Promise<Harness> {
  const schema = testSchema();
  const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
  const store = await openPostgresStore(url, { now, max: 4 });
  const others: Store[] = [];
  return {
    store,
    location: url,
    connect: async () => {
      const other = await openPostgresStore(url, { now, migrate: false, max: 4 });
      others.push(other);
      return other;
    },
    close: async () => {
      for (const other of others) await other.close();
      await store.close();
      await dropTestSchema(schema);
    },
  };
}

/** Every backend the conformance suites cover. */
export const BACKENDS: Backend[] = [
  {
    name: "sqlite",
    open: async (now) => {
      const dir = await tempDir();
      const path = `${dir.path}/jobs.db`;
      const store = await openSqliteStore(path, { now });
      const others: Store[] = [];
      return {
        store,
        location: path,
        connect: async () => {
          const other = await openSqliteStore(path, { now });
          others.push(other);
          return other;
        },
        close: async () => {
          for (const other of others) await other.close();
          await store.close();
          await dir.cleanup();
        },
      };
    },
  },
  { name: "postgres", open: openPostgresHarness },
];

/**
 * The `test` of a suite run on `backend`: each body gets a fresh database
 * opened at `now` and closed after, in a test named `<backend>: <name>`.
 */
export function harnessTest(
  backend: Backend,
  now: number,
): (name: string, fn: (h: Harness) => Promise<void>) => void {
  return (name, fn) =>
    Deno.test(`${backend.name}: ${name}`, async () => {
      const h = await backend.open(now);
      try {
        await fn(h);
      } finally {
        await h.close();
      }
    });
}

/** A {@linkcode Jobs} on a fresh database of one backend, with its FakeClock. */
export interface BackendJobs {
  jobs: Jobs;
  store: Store;
  clock: FakeClock;
  /** Where another process opens the same database. */
  location: string;
  /** Another connection to the same database, closed with the rest. */
  connect(): Promise<Store>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A Jobs with `workers` on a fresh database of `backend`, on a FakeClock
 * (the test's own when given), logging nothing: what `tempJobs` is for
 * SQLite, for every backend.
 */
export async function backendJobs(
  backend: Backend,
  // deno-lint-ignore no-explicit-any
  workers: Worker<any>[] = [],
  options: { clock?: FakeClock; random?: () => number } = {},
): Promise<BackendJobs> {
  const clock = options.clock ?? new FakeClock();
  const harness = await backend.open(clock.now());
  const jobs = new Jobs({
    store: harness.store,
    workers,
    clock,
    logger: silentLogger,
    random: options.random,
  });
  return {
    jobs,
    store: harness.store,
    clock,
    location: harness.location,
    connect: harness.connect,
    async [Symbol.asyncDispose]() {
      await jobs.close({ grace: 0 });
      await harness.close();
    },
  };
}

/** A job row to insert, with every field defaulted: a plain `noop` job due at `scheduledAt`. */
export function newJob(fields: Partial<NewJob> & { scheduledAt: number }): NewJob {
  return {
    queue: "default",
    worker: "noop",
    args: "{}",
    meta: "{}",
    tags: "[]",
    tenant: null,
    priority: 0,
    maxAttempts: 20,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: null,
    scheduleId: null,
    scheduledFor: null,
    ...fields,
  };
}
