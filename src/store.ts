/**
 * The store seam (`@jobs/jobs/store`): the one {@linkcode Store} interface
 * the kernel, the runtime and every command call, {@linkcode openStore}
 * (the one way to open one at a location, in `read`, `write` or `create`
 * mode), the two adapters' own opens ({@linkcode openSqliteStore},
 * {@linkcode openPostgresStore}), the errors opening and using a store may
 * raise, and the rows and parameters of every store method: what a tool
 * that reads or repairs a store, or the author of another adapter, needs.
 * An application opens its store with `openJobs` and reaches it, when it
 * must, as `jobs.store`.
 *
 * Every method takes one params object, and `now` always comes from the
 * caller's clock, never from the database or the machine.
 *
 * @example Open a store, insert a job and read it back
 * ```ts
 * import assert from "node:assert/strict";
 * import { SystemClock } from "@jobs/jobs";
 * import { openStore } from "@jobs/jobs/store";
 *
 * const clock = new SystemClock();
 * // A SQLite path, or "postgres://user@host:5432/db?schema=jobs".
 * const { store, schema } = await openStore(":memory:", { mode: "create", now: clock.now() });
 * assert.equal(schema.version, schema.known); // migrated to this program's schema
 * const now = clock.now();
 * const [inserted] = await store.jobsInsert({
 *   jobs: [{
 *     queue: "default",
 *     worker: "greet",
 *     args: JSON.stringify({ name: "Ada" }),
 *     meta: "{}",
 *     tags: "[]",
 *     tenant: null,
 *     priority: 0,
 *     maxAttempts: 20,
 *     scheduledAt: now,
 *     uniqueKey: null,
 *     uniqueStates: null,
 *     occurrence: null,
 *     scheduleId: null,
 *     scheduledFor: null,
 *   }],
 *   now,
 * });
 * const [job] = await store.jobsList({ queue: "default" });
 * assert.equal(job?.id, inserted?.id);
 * assert.equal(job?.state, "available");
 * await store.close();
 * ```
 *
 * @module
 */

export {
  describeLocation,
  type OpenedStore,
  openPostgresStore,
  openSqliteStore,
  openStore,
  type OpenStoreOptions,
  type PostgresOptions,
  type PostgresSettings,
  type PostgresTx,
  type SqliteOptions,
  type SqliteTx,
  type StoreLocation,
  type StoreMode,
} from "./store/open.ts";
export {
  isStoreUnreachable,
  SchemaTooNewError,
  SchemaTooOldError,
  StoreLockedError,
  StoreLostError,
  StoreMissingError,
  type StoreMissingReason,
  type StoreMove,
  StoreMovedError,
  StoreOpenError,
} from "./store/errors.ts";
export { STORE_TX_METHODS } from "./store/store.ts";
export type * from "./store/store.ts";
export { FINAL_STATES, INCOMPLETE_STATES, JOB_STATES } from "./kernel/types.ts";
export type * from "./kernel/types.ts";
