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

import type { NewJob } from "../../src/kernel/types.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { tempDir } from "./stores.ts";

/** A fresh, migrated, empty database of one backend. */
export interface Harness {
  store: Store;
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

/** A fresh PostgreSQL schema, migrated at `now`; `close()` drops it. */
export async function openPostgresHarness(now: number): Promise<Harness> {
  const schema = testSchema();
  const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
  const store = await openPostgresStore(url, { now, max: 4 });
  const others: Store[] = [];
  return {
    store,
    connect: async () => {
      const other = await openPostgresStore(url, { now, migrate: false, max: 4 });
      others.push(other);
      return other;
    },
    close: async () => {
      for (const other of others) await other.close();
      try {
        await store.transaction((tx) => tx.sql`DROP SCHEMA ${tx.sql(schema)} CASCADE`);
      } finally {
        await store.close();
      }
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
