/**
 * The PostgreSQL store: postgres.js (a patched 3.4.9, see `driver.ts`), one
 * pool per store, every table in one schema (`?schema=`, default `public`).
 * This file holds the store's own members (migrations, transactions,
 * LISTEN, closing) and assembles the rest from the files of this folder,
 * one per concern of the seam (`src/store/store.ts`), each a factory over
 * the one {@linkcode PostgresCore} (`core.ts`): `jobs.ts`, `counts.ts`,
 * `settings.ts`, `nodes.ts`, `schedules.ts`, `workflows.ts`, `ingest.ts`
 * and `reports.ts`. Every SQL statement is a tagged template, so that every
 * value is a bound parameter. The one identifier ever spliced into a
 * statement is the schema's name, checked against a strict pattern first.
 *
 * The semantics are the SQLite store's (src/store/sqlite/): where SQLite
 * gets its safety from one writer at a time, this store gets it from row
 * locks under READ COMMITTED:
 *
 * - a claim is one statement: the runnable rows are chosen `FOR UPDATE SKIP
 *   LOCKED` and moved to `executing` in the same statement, so racing
 *   claimers take disjoint rows and none waits for another;
 * - every result write is filtered by its lease (id, executing, node,
 *   fence); PostgreSQL re-checks that filter against the newest version of
 *   a row updated meanwhile, so a lease broken by an operator stays broken;
 * - `schedulePlan` locks the schedule's row `FOR UPDATE`, so planners on
 *   several hosts decide one after another, each reading what the previous
 *   one committed; replays, cancels and discards lock the job rows first;
 * - occurrence identity and unique keys are unique indexes: a racing insert
 *   waits for the other transaction and then finds its row.
 *
 * Instants are `bigint` epoch ms from the caller's clock, never `now()`.
 * Inserts `pg_notify('jobs_<schema>', queue)` inside their transaction, and
 * `onExternalChange` LISTENs on one connection (postgres.js re-listens
 * after a reconnect; until then the producers' timers carry on).
 *
 * @module
 */

import type postgres from "./driver.ts";
import type {
  MigrationReport,
  Store,
  StoreBulk,
  StoreBulkRequests,
  StoreCounts,
  StoreFlow,
  StoreIngest,
  StoreJobs,
  StoreNodes,
  StorePrincipals,
  StoreReports,
  StoreSchedules,
  StoreSessions,
  StoreSettings,
  StoreTotp,
  StoreTx,
  StoreTxMethods,
  StoreWorkflows,
  StoreWorkItems,
} from "../store.ts";
import { STORE_TX_METHODS } from "../store.ts";
import { SchemaTooNewError, SchemaTooOldError, StoreOpenError } from "../errors.ts";
import { describeLocation } from "../location.ts";
import { KNOWN_VERSION, pendingMigrations } from "./migrations.ts";
import { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";
import { postgresJobs } from "./jobs.ts";
import { postgresCounts } from "./counts.ts";
import { postgresSettings } from "./settings.ts";
import { postgresFlow } from "./flow.ts";
import { postgresNodes } from "./nodes.ts";
import { postgresSchedules } from "./schedules.ts";
import { postgresWorkflows } from "./workflows.ts";
import { postgresIngest } from "./ingest.ts";
import { postgresReports } from "./reports.ts";
import { postgresPrincipals } from "./principals.ts";
import { postgresSessions } from "./sessions.ts";
import { postgresWorkItems } from "./work_items.ts";
import { postgresBulk } from "./bulk.ts";
import { postgresBulkRequests } from "./bulk_requests.ts";

export { isLostSessionStray, reconnectBackoffS } from "./core.ts";

/** Options for {@linkcode openPostgresStore}. */
export interface PostgresOptions {
  /** Apply pending migrations on open. @default true */
  migrate?: boolean;
  /** The instant recorded for migrations applied on open. @default 0 */
  now?: number;
  /**
   * The schema holding the tables; overrides the location's `?schema=`.
   * Lowercase letters, digits and underscores, not starting with a digit.
   * @default "public"
   */
  schema?: string;
  /**
   * Every session read-only (`default_transaction_read_only`), for looking
   * without touching; `migrate` must then be false.
   * @default false
   */
  readOnly?: boolean;
  /** Connections in the pool. @default 10 */
  max?: number;
  /** How long opening a connection may take before it fails, in seconds. @default 10 */
  connectTimeoutS?: number;
  /**
   * How long a statement waits for a lock another session holds (a row
   * another transaction updates, a `LOCK TABLE`) before it fails with a
   * {@linkcode StoreLockedError}, in ms: the session's `lock_timeout`, the
   * counterpart of SQLite's busy timeout. It bounds waiting for locks only,
   * not how long a statement runs; 0 fails at once, as SQLite's busy
   * timeout of 0 does (PostgreSQL's own 0 would wait for ever). Migrations
   * wait for one another however long they take.
   * @default 5000
   */
  lockTimeoutMs?: number;
  /**
   * How long `close()` lets statements still running finish before it ends
   * their connections, in seconds.
   * @default 5
   */
  closeTimeoutS?: number;
  /**
   * The `application_name` of every session, as `pg_stat_activity` shows it
   * (a node's name makes its sessions easy to find).
   * @default "jobs"
   */
  applicationName?: string;
}

/**
 * A transaction of the PostgreSQL store: the caller's own statements go
 * through `sql` (the postgres.js transaction), so they and the jobs
 * inserted commit or roll back together. Its search_path is the store's
 * schema: name tables of other schemas in full.
 */
export interface PostgresTx extends StoreTx {
  /** The open transaction: run your own tagged queries on it. */
  readonly sql: postgres.TransactionSql;
}

/** Whether `location` names a PostgreSQL database (`postgres://` or `postgresql://`). */
export function isPostgresLocation(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** `url` without its password, for messages (credentials are never shown). */
export function redactLocation(url: string): string {
  return describeLocation(url);
}

/**
 * Opens (and by default migrates) the PostgreSQL store at `url`
 * (`postgres://user@host:5432/db?schema=name`). The schema is created when
 * missing by the migration; a database that cannot be reached is a
 * {@linkcode StoreOpenError} naming the location without its password.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresOptions = {},
): Promise<PostgresStore> {
  const readOnly = options.readOnly ?? false;
  if (readOnly && (options.migrate ?? true)) {
    throw new StoreOpenError(redactLocation(url), "a read-only store cannot be migrated");
  }
  const store = new PostgresStore(url, options);
  try {
    if (options.migrate ?? true) await store.migrate({ now: options.now ?? 0 });
    else await store.ping();
  } catch (error) {
    await store.close();
    if (error instanceof SchemaTooNewError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreOpenError(store.location, reason, { cause: error });
  }
  return store;
}

/** The seam's methods a {@linkcode PostgresStore} is assembled from (see its constructor). */
export interface PostgresStore
  extends
    StoreJobs,
    StoreCounts,
    StoreSettings,
    StoreFlow,
    StoreNodes,
    StoreSchedules,
    StoreWorkflows,
    StoreIngest,
    StoreReports,
    StorePrincipals,
    StoreSessions,
    StoreBulk,
    StoreWorkItems,
    StoreBulkRequests,
    StoreTotp {}

/**
 * The PostgreSQL implementation of {@linkcode Store}: its own members here,
 * the rest assembled from the concern files over one {@linkcode PostgresCore}.
 */
export class PostgresStore implements Store<PostgresTx> {
  readonly kind = "postgres";
  /** The URL without its password. */
  readonly location: string;
  /** The schema holding the tables. */
  readonly schema: string;
  /** The pool and what every concern file asks of it. */
  readonly #core: PostgresCore;
  #listeners = new Set<() => void>();
  #listening: Promise<{ unlisten(): Promise<void> } | null> | null = null;
  #closed = false;
  /** See {@linkcode PostgresOptions.closeTimeoutS}. */
  readonly #closeTimeoutS: number;

  /**
   * Opens a pool at `url` and assembles the store's methods from the
   * concern files, each over the pool.
   */
  constructor(url: string, options: PostgresOptions = {}) {
    const core = PostgresCore.open(url, options);
    this.#core = core;
    this.location = core.location;
    this.schema = core.schema;
    this.#closeTimeoutS = options.closeTimeoutS ?? 5;
    Object.assign(
      this,
      postgresJobs(core),
      postgresCounts(core),
      postgresSettings(core),
      postgresFlow(core),
      postgresNodes(core),
      postgresSchedules(core),
      postgresWorkflows(core),
      postgresIngest(core),
      postgresReports(core),
      postgresPrincipals(core),
      postgresSessions(core),
      postgresBulk(core),
      postgresWorkItems(core),
      postgresBulkRequests(core),
    );
  }

  static {
    // Every call of the store, however deep its statement met the lock,
    // fails a lock timeout as what it means: the store is locked (the
    // methods of the concern files are guarded so by PostgresCore.guard).
    for (const name of Object.getOwnPropertyNames(PostgresStore.prototype)) {
      const method = Object.getOwnPropertyDescriptor(PostgresStore.prototype, name)?.value;
      if (name === "constructor" || typeof method !== "function") continue;
      Object.defineProperty(PostgresStore.prototype, name, {
        configurable: true,
        writable: true,
        value: function (this: PostgresStore, ...args: unknown[]): unknown {
          const result = method.apply(this, args);
          if (!(result instanceof Promise)) return result;
          return result.catch((error: unknown) => {
            throw this.#core.locked(error);
          });
        },
      });
    }
  }

  /** Fails when the database cannot be reached. */
  async ping(): Promise<void> {
    await this.#core.sql`SELECT 1`;
  }

  // ---------------------------------------------------------------- migrations

  /**
   * Applies the pending migrations in one transaction under an advisory lock
   * of this schema, so two daemons starting at once migrate one after the
   * other (the second finds nothing left to do). A newer schema is refused
   * before anything is written, the schema itself included.
   */
  async migrate(params: { now: number }): Promise<MigrationReport> {
    const schema = this.schema;
    return await this.#core.sql.begin(async (tx) => {
      // Another program's migration may take its time: wait for it.
      await tx`SET LOCAL lock_timeout = 0`;
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`jobs migrate ${schema}`}))`;
      const current = await this.#version(tx);
      if (current > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, current, KNOWN_VERSION);
      }
      await tx`CREATE SCHEMA IF NOT EXISTS ${tx(schema)}`;
      // The session's search_path named a schema that may not have existed.
      await tx.unsafe(`SET LOCAL search_path TO ${schema}`);
      await tx`CREATE TABLE IF NOT EXISTS ${tx(schema)}.schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`;
      const applied: number[] = [];
      for (const migration of pendingMigrations(current)) {
        await tx.unsafe(migration.sql).simple();
        await tx`INSERT INTO ${tx(schema)}.schema_migrations (version, name, applied_at)
          VALUES (${migration.version}, ${migration.name}, ${params.now}::bigint)`;
        applied.push(migration.version);
      }
      return { applied, version: await this.#version(tx) };
    });
  }

  /**
   * The schema version the database is at (0 when it was never migrated);
   * reads only, so it works on a store opened without migrating.
   */
  schemaVersion(): Promise<number> {
    return this.#version(this.#core.sql);
  }

  /**
   * Checks the schema is this program's, writing nothing: postgres.js
   * prepares each statement on its first use, so there is nothing else to
   * ready (and a reader needs no CREATE privilege).
   */
  async prepare(): Promise<void> {
    const version = await this.schemaVersion();
    if (version > KNOWN_VERSION) throw new SchemaTooNewError(this.location, version, KNOWN_VERSION);
    if (version < KNOWN_VERSION) throw new SchemaTooOldError(this.location, version, KNOWN_VERSION);
  }

  /** The migrations this program knows that the database has not applied; reads only. */
  async pendingMigrations(): Promise<{ version: number; name: string }[]> {
    const version = await this.schemaVersion();
    if (version > KNOWN_VERSION) throw new SchemaTooNewError(this.location, version, KNOWN_VERSION);
    return pendingMigrations(version).map(({ version, name }) => ({ version, name }));
  }

  async #version(q: Sql): Promise<number> {
    const [table] = await q`SELECT 1 AS present FROM pg_tables
      WHERE schemaname = ${this.schema} AND tablename = 'schema_migrations'`;
    if (!table) return 0;
    const [row] = await q`SELECT max(version) AS version FROM ${q(this.schema)}.schema_migrations`;
    return Number(row?.version ?? 0);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    const listening = this.#listening;
    this.#listening = null;
    if (listening) await (await listening)?.unlisten().catch(() => {});
    await this.#core.sql.end({ timeout: this.#closeTimeoutS });
  }

  // -------------------------------------------------------------- transactions

  /**
   * Runs `fn` in one transaction. `tx`'s methods are those the concern
   * files build over a view of the core bound to the transaction
   * ({@linkcode PostgresCore.within}), so each runs its statements on it,
   * its NOTIFYs included (delivered at commit). Only the files that hold a
   * method of STORE_TX_METHODS are built. A call made once `fn` has
   * settled is refused: the connection may be another caller's by then.
   */
  async transaction<T>(fn: (tx: PostgresTx) => Promise<T>): Promise<T> {
    return await this.#core.sql.begin(async (sql) => {
      let open = true;
      const core = this.#core.within(sql);
      const view: StoreTxMethods = {
        ...postgresJobs(core),
        ...postgresSettings(core),
        ...postgresFlow(core),
        ...postgresSchedules(core),
        ...postgresWorkflows(core),
        ...postgresIngest(core),
        ...postgresReports(core),
        ...postgresPrincipals(core),
        ...postgresSessions(core),
        ...postgresBulk(core),
        ...postgresWorkItems(core),
        ...postgresBulkRequests(core),
      };
      const ended = () =>
        Promise.reject(new Error(`${this.location}: the transaction has ended; use the store`));
      const methods = Object.fromEntries(STORE_TX_METHODS.map((name) => {
        const method = view[name] as (params: unknown) => Promise<unknown>;
        return [name, (params: unknown) => open ? method.call(view, params) : ended()];
      })) as unknown as StoreTxMethods;
      const tx: PostgresTx = { ...methods, sql };
      try {
        return await fn(tx);
      } finally {
        open = false;
      }
    }) as T;
  }

  // ------------------------------------------------------------ change wake-ups

  /**
   * LISTENs on this schema's channel over one connection of its own (taken
   * on the first listener, released with the last). Every store sharing the
   * schema notifies it when jobs become runnable: inserts, retries,
   * replays, staging, rescues, releases and resumed queues.
   */
  onExternalChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#listening === null && !this.#closed) {
      const wake = () => {
        for (const l of this.#listeners) l();
      };
      // postgres.js LISTENs again whenever that connection drops (killed,
      // the server restarted, the network gone), retrying with the
      // store's reconnect backoff until the server answers; until then the
      // producers' timers carry on. Each (re)listen wakes the listeners
      // too: what was committed while not listening was never notified.
      this.#listening = this.#core.sql
        .listen(this.#core.channel, wake, wake)
        // The first LISTEN failed (the database is away): it is retried all the same.
        .catch(() => null);
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size > 0 || this.#listening === null) return;
      const listening = this.#listening;
      this.#listening = null;
      listening.then((meta) => meta?.unlisten()).catch(() => {});
    };
  }
}
