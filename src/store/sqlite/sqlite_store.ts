/**
 * The SQLite store: the built-in `node:sqlite`, one connection per process,
 * WAL. The class here holds the store's own members (opening, migrating,
 * transactions, change wake-ups, the file check); every other method comes
 * from a concern file of this folder, assembled over one
 * {@linkcode SqliteCore} (core.ts: the connection and the transaction
 * policy): jobs.ts, counts.ts, settings.ts, nodes.ts, schedules.ts,
 * workflows.ts, ingest.ts and reports.ts, each with its statements.
 *
 * Durability: `synchronous = NORMAL` by default. In WAL mode that means a
 * committed transaction survives a crash of this process or of any other
 * process sharing the file, but after a power cut or an OS crash the most
 * recent commits (those not yet synced at a WAL checkpoint) may be rolled
 * back: an enqueue could vanish, a completion could revert (the job then runs
 * again, which at-least-once delivery allows). The file is never corrupted.
 * Choose `synchronous: "full"` to sync the WAL on every commit, at the price
 * of one fsync per transaction.
 *
 * Several processes may share one file: every write transaction takes the
 * write lock up front and waits for another process's without blocking
 * (see core.ts).
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import type {
  MigrationInfo,
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
  StoreTxMethod,
  StoreTxMethods,
  StoreWorkflows,
  StoreWorkItems,
} from "../store.ts";
import { STORE_TX_METHODS } from "../store.ts";
import { SchemaTooNewError, SchemaTooOldError, StoreLostError, StoreOpenError } from "../errors.ts";

export { SchemaTooNewError };
import { fileIdentity, openProblem } from "./file_check.ts";
import { ChangeWatch, type ChangeWatchOptions } from "./change_watch.ts";
import { KNOWN_VERSION, pendingMigrations as pendingAfter } from "./migrations.ts";
import { isBusy } from "./rows.ts";
import { SqliteCore } from "./core.ts";
import { sqliteJobs } from "./jobs.ts";
import { sqliteCounts } from "./counts.ts";
import { sqliteSettings } from "./settings.ts";
import { sqliteFlow } from "./flow.ts";
import { sqliteNodes } from "./nodes.ts";
import { sqliteSchedules } from "./schedules.ts";
import { sqliteWorkflows } from "./workflows.ts";
import { sqliteIngest } from "./ingest.ts";
import { sqliteReports } from "./reports.ts";
import { sqlitePrincipals } from "./principals.ts";
import { sqliteSessions } from "./sessions.ts";
import { sqliteWorkItems } from "./work_items.ts";
import { sqliteBulk } from "./bulk.ts";
import { sqliteBulkRequests } from "./bulk_requests.ts";

/** Options for {@linkcode openSqliteStore}. */
export interface SqliteOptions {
  /**
   * How long a call waits for another process's write lock (retrying without
   * blocking the event loop) before it fails with SQLITE_BUSY, in ms.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * `normal`: durable across process crashes, may lose the last commits on a
   * power cut. `full`: every commit is synced to disk.
   * @default "normal"
   */
  synchronous?: "normal" | "full";
  /**
   * How often a process looks for commits made by other processes
   * (`PRAGMA data_version`) while they come, or always when the file watch
   * cannot hear them (see change_watch.ts), in ms. 1 ms measured no better
   * than 2 in cross-process latency (p95 3.3 ms either way: the time goes to
   * the two transactions of a machine woken from idle, 220 us each against
   * 41 us back to back).
   * @default 2
   */
  changePollMs?: number;
  /**
   * How the store hears other processes' commits while idle: a file watch
   * and a slow safety-net poll (see change_watch.ts). Tests inject a clock
   * and a watch here.
   */
  changeWatch?: ChangeWatchOptions;
  /**
   * While anything listens for changes, how often the change watch also
   * checks that the file at the path is still the one opened (device and
   * inode), in ms. A store whose file was deleted or replaced refuses every call from then on with a
   * {@linkcode StoreLostError}: what it wrote is gone with the file.
   * @default 500
   */
  fileCheckMs?: number;
  /** Apply pending migrations on open. @default true */
  migrate?: boolean;
  /** The instant recorded for migrations applied on open. */
  now?: number;
  /**
   * Open the file read-only (it must exist; nothing can be written, so
   * `migrate` must be false): for looking without touching, such as
   * `jobs migrate --dry-run`.
   * @default false
   */
  readOnly?: boolean;
}

/** A transaction of the SQLite store: the caller's own statements go through `db`. */
export interface SqliteTx extends StoreTx {
  /** The connection, inside the open transaction: prepare and run your own statements. */
  readonly db: DatabaseSync;
}

/**
 * Opens (and by default migrates) a SQLite store at `path`; `:memory:` works
 * for tests within one process. A file that cannot be opened is reported as
 * a {@linkcode StoreOpenError} naming the path and why (a missing folder, a
 * file or folder that is not writable, a read-only file system).
 */
export async function openSqliteStore(
  path: string,
  options: SqliteOptions = {},
): Promise<SqliteStore> {
  const readOnly = options.readOnly ?? false;
  let store: SqliteStore;
  try {
    store = new SqliteStore(path, options);
  } catch (error) {
    throw explainOpenFailure(path, error, { readOnly });
  }
  if (options.migrate ?? true) {
    try {
      await store.migrate({ now: options.now ?? 0 });
      if (!readOnly) await store.checkWritable();
    } catch (error) {
      await store.close();
      throw explainOpenFailure(path, error, { readOnly });
    }
  }
  return store;
}

/**
 * The methods of the SQLite store that come from its concern files (see
 * the constructor): the class declares only its own members.
 */
export interface SqliteStore
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

/** The SQLite implementation of {@linkcode Store}. */
export class SqliteStore implements Store<SqliteTx> {
  readonly kind = "sqlite";
  readonly location: string;
  /** The connection (see {@linkcode SqliteTx.db} for statements of your own inside a transaction). */
  readonly db: DatabaseSync;
  readonly #core: SqliteCore;
  readonly #options: Required<Pick<SqliteOptions, "changePollMs" | "fileCheckMs">>;
  readonly #changeWatch: ChangeWatchOptions;
  #listeners = new Set<() => void>();
  #watch: ChangeWatch | null = null;
  #closed = false;

  constructor(path: string, options: SqliteOptions = {}) {
    this.location = path;
    this.#options = {
      changePollMs: options.changePollMs ?? 2,
      fileCheckMs: options.fileCheckMs ?? 500,
    };
    this.#changeWatch = options.changeWatch ?? {};
    const core = this.#core = new SqliteCore(path, {
      busyTimeoutMs: options.busyTimeoutMs ?? 5000,
      synchronous: options.synchronous ?? "normal",
      readOnly: options.readOnly ?? false,
      presence: () => this.#watch?.presence ?? null,
    });
    this.db = core.db;
    Object.assign(
      this,
      sqliteJobs(core),
      sqliteCounts(core),
      sqliteSettings(core),
      sqliteFlow(core),
      sqliteNodes(core),
      sqliteSchedules(core),
      sqliteWorkflows(core),
      sqliteIngest(core),
      sqliteReports(core),
      sqlitePrincipals(core),
      sqliteSessions(core),
      sqliteBulk(core),
      sqliteWorkItems(core),
      sqliteBulkRequests(core),
    );
  }

  // ---------------------------------------------------------------- migrations

  migrate(params: { now: number }): Promise<MigrationReport> {
    const core = this.#core;
    return core.exclusive(() => {
      // Read before writing anything: a newer database is refused untouched.
      const before = core.readSchemaVersion();
      if (before > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, before, KNOWN_VERSION);
      }
      core.configure();
      const applied: number[] = [];
      core.write(() => {
        this.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
        // Another process may have migrated while we waited for the lock.
        const current = core.readSchemaVersion();
        if (current > KNOWN_VERSION) {
          throw new SchemaTooNewError(this.location, current, KNOWN_VERSION);
        }
        const record = this.db.prepare(
          `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
        );
        for (const migration of pendingAfter(current)) {
          this.db.exec(migration.sql);
          record.run(migration.version, migration.name, params.now);
          applied.push(migration.version);
        }
      });
      core.ready();
      return { applied, version: core.readSchemaVersion() };
    });
  }

  /**
   * Readies a store at the current schema without a write transaction:
   * connection settings and prepared statements. The WAL journal mode is
   * set only if the file is not in it already (setting it writes).
   */
  prepare(): Promise<void> {
    const core = this.#core;
    return core.exclusive(() => {
      const version = core.readSchemaVersion();
      if (version > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, version, KNOWN_VERSION);
      }
      if (version < KNOWN_VERSION) {
        throw new SchemaTooOldError(this.location, version, KNOWN_VERSION);
      }
      core.configure();
      core.ready();
    });
  }

  /**
   * Fails when this connection cannot write the file. SQLite opens a file
   * it may not write read-only without a word, and reads (migrating when
   * nothing is pending among them) go on working: only the first write
   * would fail, later and far from the open. Writes nothing: one row is
   * inserted and rolled back.
   */
  checkWritable(): Promise<void> {
    return this.#core.exclusive(() => {
      this.db.exec("BEGIN IMMEDIATE");
      try {
        this.db.exec(
          `INSERT INTO schema_migrations (version, name, applied_at) VALUES (-1, 'write check', 0)`,
        );
      } finally {
        if (this.db.isTransaction) this.db.exec("ROLLBACK");
      }
    });
  }

  /**
   * The schema version the database is at (0 when it was never migrated);
   * reads only, so it works on a store opened without migrating.
   */
  schemaVersion(): Promise<number> {
    const core = this.#core;
    return core.exclusive(() => core.readSchemaVersion());
  }

  /** The migrations this program knows that the database has not applied; reads only. */
  pendingMigrations(): Promise<MigrationInfo[]> {
    const core = this.#core;
    return core.exclusive(() => {
      const version = core.readSchemaVersion();
      if (version > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, version, KNOWN_VERSION);
      }
      return pendingAfter(version).map(({ version, name }) => ({ version, name }));
    });
  }

  // ------------------------------------------------------------ the file held

  /**
   * The error every call fails with since the file at the path stopped
   * being the one this store holds (see {@linkcode checkFile}), or null.
   */
  get lost(): StoreLostError | null {
    return this.#core.lost;
  }

  /**
   * Checks that the file at the path is still the one opened (same device
   * and inode); when it was deleted or replaced, the store is lost: this and
   * every later call fail with the returned {@linkcode StoreLostError}, and
   * the `onExternalChange` listeners are called once so that idle callers
   * find out at once. The change poll calls it every `fileCheckMs`.
   */
  checkFile(): StoreLostError | null {
    const core = this.#core;
    if (core.lost || core.identity === null || this.#closed) return core.lost;
    const now = fileIdentity(this.location);
    if (now !== null && now.dev === core.identity.dev && now.ino === core.identity.ino) {
      return null;
    }
    core.lost = new StoreLostError(this.location, core.identity, now);
    this.#stopPolling();
    for (const listener of this.#listeners) listener();
    return core.lost;
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#stopPolling();
    this.#listeners.clear();
    return this.#core.close();
  }

  // -------------------------------------------------------------- transactions

  transaction<T>(fn: (tx: SqliteTx) => Promise<T>): Promise<T> {
    return this.#core.transaction((onTx) => fn({ ...this.#txMethods(onTx), db: this.db }));
  }

  /**
   * The {@linkcode STORE_TX_METHODS} of a caller's transaction: each runs
   * the store's method of that name through `onTx`, so its statements go on
   * the open transaction. Every one of those methods reaches the core's
   * `exclusive` synchronously, within the call.
   */
  #txMethods(onTx: <R>(call: () => Promise<R>) => Promise<R>): StoreTxMethods {
    const call = (name: StoreTxMethod) => (params: unknown) =>
      onTx(() => (this[name] as (params: unknown) => Promise<unknown>).call(this, params));
    return Object.fromEntries(
      STORE_TX_METHODS.map((name) => [name, call(name)]),
    ) as unknown as StoreTxMethods;
  }

  // ------------------------------------------------------------ change wake-ups

  onExternalChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#watch === null && !this.#closed && this.location !== ":memory:") {
      const core = this.#core;
      this.#watch = new ChangeWatch({
        path: this.location,
        pollMs: this.#options.changePollMs,
        fileCheckMs: this.#options.fileCheckMs,
        // Skip while a caller's transaction holds the connection: it sees no
        // other commits until it ends anyway.
        readVersion: () => core.held ? null : core.dataVersion(),
        // The file check needs no connection: it runs during a caller's transaction too.
        checkFile: () => this.checkFile() !== null,
        changed: () => {
          for (const listener of this.#listeners) listener();
        },
      }, this.#changeWatch);
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stopPolling();
    };
  }

  /**
   * The change watch while anything listens for other processes' commits
   * (see change_watch.ts), or null: tests look at its reads and blindness.
   */
  get changeWatch(): ChangeWatch | null {
    return this.#watch;
  }

  #stopPolling(): void {
    this.#watch?.stop();
    this.#watch = null;
  }
}

/**
 * `error` from opening (or first migrating) the store at `path`, as a
 * {@linkcode StoreOpenError} when the folder or the file show why (the
 * original is its cause), else unchanged. Call it once the store is closed:
 * looking at the file opens and closes it, which would drop this process's
 * locks on it.
 */
export function explainOpenFailure(
  path: string,
  error: unknown,
  options: { readOnly?: boolean } = {},
): unknown {
  if (error instanceof SchemaTooNewError || error instanceof StoreOpenError || isBusy(error)) {
    return error;
  }
  const reason = openProblem(path, options);
  return reason === null ? error : new StoreOpenError(path, reason, { cause: error });
}
