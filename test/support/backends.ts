/**
 * The backends the conformance suites run against, and a row factory that
 * knows no backend. A new backend (PostgreSQL) adds one entry to `BACKENDS`;
 * the suites' bodies do not change.
 */

import type { NewJob } from "../../src/kernel/types.ts";
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
