/**
 * The core of the SQLite store: the one connection, the transaction policy
 * every call goes through, the job counts' write, the commit signal, the
 * prepared statements of every concern file, and the driver of the shared
 * lifecycle (src/store/lifecycle/) with the dispatcher that sends each op
 * to the file that answers it. The concern files (jobs.ts, counts.ts,
 * settings.ts, nodes.ts, schedules.ts, workflows.ts, ingest.ts, reports.ts)
 * build the store's methods over it, each wrapped in {@linkcode
 * SqliteCore.exclusive} (and {@linkcode SqliteCore.write} when it writes);
 * sqlite_store.ts assembles them into the store.
 *
 * Several processes may share one file: every write transaction starts with
 * `BEGIN IMMEDIATE`, which takes the write lock up front (a deferred
 * read-then-write transaction could fail with SQLITE_BUSY midway, after its
 * reads, where no wait can help). While another process holds the lock, the
 * transaction is retried after short asynchronous waits, up to the busy
 * timeout.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { setImmediate } from "node:timers";
import type { FileIdentity, StoreLostError } from "../errors.ts";
import {
  isFlowOp,
  isLeaderOp,
  isScheduleOp,
  isWorkflowOp,
  isWorkItemOp,
  runStoreOps,
  type StoreOp,
  type StoreOps,
} from "../lifecycle/ops.ts";
import { fileIdentity, notAFile } from "./file_check.ts";
import { CommitSignal } from "./change_watch.ts";
import { Checkpointer, INLINE_CHECKPOINT_FRAMES } from "./checkpointer.ts";
import { type CountStatements, countStatements, CountsWrite } from "./counts.ts";
import { isBusy, type Row } from "./rows.ts";
import { answerJobOp } from "./jobs.ts";
import { answerScheduleOp } from "./schedules.ts";
import { answerLeaderOp } from "./nodes.ts";
import { answerWorkflowOp } from "./workflows.ts";
import { answerWorkItemOp } from "./work_items.ts";
import { answerFlowOp } from "./flow.ts";

/** A concern file's statements: their SQL texts by name. */
export type SqlTexts<K extends string = string> = Readonly<Record<K, string>>;

/** The statements of a {@linkcode SqlTexts}, prepared on the connection. */
export type Statements<K extends string = string> = Record<K, StatementSync>;

/** What the core needs of {@linkcode SqliteOptions}, defaults applied. */
export interface CoreOptions {
  /** See `SqliteOptions.busyTimeoutMs`. */
  busyTimeoutMs: number;
  /** See `SqliteOptions.synchronous`. */
  synchronous: "normal" | "full";
  /** See `SqliteOptions.readOnly`. */
  readOnly: boolean;
  /** The presence file of the store's own change watch, if any (see CommitSignal). */
  presence: () => string | null;
}

/** The core's own statements. */
const SQL = {
  dataVersion: `PRAGMA data_version`,
  totalChanges: `SELECT total_changes() AS n`,
} as const;

/** What {@linkcode SqliteCore.ready} prepared: null before it and after close. */
interface Readied {
  /** The statements of every set prepared with the rest, by its texts (see register). */
  sets: Map<SqlTexts, Statements>;
  /** The statements `sql(size)` by `sql` and size (see sized). */
  sized: Map<(size: number) => string, Map<number, StatementSync>>;
  /** The statements of texts built at the call, by text (see shaped). */
  shapes: Map<string, StatementSync>;
  /** The statements of the counts, looked up when a write first needs them. */
  counts: CountStatements | null;
}

/** Makes `statement` return rows as arrays (node:sqlite has it; Deno's types do not list it yet). */
export function returnArrays(statement: StatementSync): void {
  (statement as StatementSync & { setReturnArrays(on: boolean): void }).setReturnArrays(true);
}

/**
 * The connection of one SQLite store and the policy every call of it goes
 * through. Its public members are for the concern files of this folder and
 * for sqlite_store.ts; nothing outside the folder sees it.
 */
export class SqliteCore {
  /** The path opened (`:memory:` for a store within one process). */
  readonly location: string;
  /** The one connection of this store. */
  readonly db: DatabaseSync;
  /** Opened read-only (see `SqliteOptions.readOnly`). */
  readonly readOnly: boolean;
  /** The file opened, to notice when the path names another file or none; null for `:memory:`. */
  readonly identity: FileIdentity | null;
  /**
   * The error every call fails with since the file at the path stopped
   * being the one this store holds (set by the store's `checkFile`), or null.
   */
  lost: StoreLostError | null = null;
  /** The counts' watermark this process saw last (see counts.ts). */
  readonly countsSeen = { through: 0 };
  readonly #options: CoreOptions;
  #readied: Readied | null = null;
  /** The sets of statements prepared with the rest by ready(), each with what follows its preparing. */
  readonly #sets = new Map<SqlTexts, ((statements: Statements) => void) | undefined>([[
    SQL,
    undefined,
  ]]);
  /** The sets prepared at their first use instead (see onDemand), by their texts. */
  readonly #onDemand = new Map<SqlTexts, Statements>();
  // A caller's transaction that spans awaits holds the connection; every other
  // call waits for it so nothing else runs inside the caller's transaction.
  #held: Promise<void> | null = null;
  // True only while a call on a caller's transaction runs its (synchronous)
  // statements: they go on the open transaction instead of waiting for it.
  #inTx = false;
  /** Touches `<db>.wake/commit` after this store's commits, for other processes' watches. */
  #signal: CommitSignal | null = null;
  /** The job counts' changes of the write transaction running now (see #counted). */
  #countsWrite: CountsWrite | null = null;
  /** Set on the first configure() of a writable file (not `:memory:`). */
  #checkpointer: Checkpointer | null = null;

  constructor(path: string, options: CoreOptions) {
    this.location = path;
    this.#options = options;
    this.readOnly = options.readOnly;
    this.db = new DatabaseSync(path, { readOnly: this.readOnly });
    // SQLite has created the file (or found it) by now: this is the one it holds.
    this.identity = notAFile(path) ? null : fileIdentity(path);
    // SQLite's own busy handler would block the whole process while it
    // sleeps; every call goes through exclusive(), which retries without
    // blocking, so SQLite itself is told not to wait.
    this.db.exec("PRAGMA busy_timeout = 0");
  }

  // ---------------------------------------------------------------- statements

  /**
   * Registers a concern file's statements: ready() prepares them with the
   * rest (on open and after a migration), then calls `readied` with them.
   * The factories of the concern files register theirs.
   */
  register<K extends string>(
    sql: SqlTexts<K>,
    readied?: (statements: Statements<K>) => void,
  ): void {
    this.#sets.set(sql, readied as ((statements: Statements) => void) | undefined);
  }

  /**
   * The statements of `sql` (registered), as ready() prepared them; before
   * it and after close, every call fails here.
   */
  statements<K extends string>(sql: SqlTexts<K>): Statements<K> {
    const sets = this.#ready().sets;
    let statements = sets.get(sql);
    if (statements === undefined) {
      statements = this.#prepareSet(sql);
      sets.set(sql, statements);
    }
    return statements as Statements<K>;
  }

  /**
   * The statements of `sql` prepared at their first use on this connection
   * (whether migrated or not), forgotten at close: those of workflows,
   * ingest and reports.
   */
  onDemand<K extends string>(sql: SqlTexts<K>): Statements<K> {
    let statements = this.#onDemand.get(sql);
    if (statements === undefined) {
      statements = this.#prepareSet(sql);
      this.#onDemand.set(sql, statements);
    }
    return statements as Statements<K>;
  }

  /**
   * The statement `sql(size)`, prepared on first use for each size (returning
   * arrays when `arrays`) and kept until the statements are readied again.
   */
  sized(sql: (size: number) => string, size: number, arrays: boolean): StatementSync {
    const caches = this.#ready().sized;
    let cache = caches.get(sql);
    if (cache === undefined) caches.set(sql, cache = new Map());
    let statement = cache.get(size);
    if (!statement) {
      statement = this.db.prepare(sql(size));
      if (arrays) returnArrays(statement);
      cache.set(size, statement);
    }
    return statement;
  }

  /** The prepared statement of a text built at the call (one jobsList shape), prepared on first use. */
  shaped(text: string): StatementSync {
    const lists = this.#ready().shapes;
    let statement = lists.get(text);
    if (statement === undefined) {
      // The shapes in use are few; a caller cycling through many cannot grow this forever.
      if (lists.size >= 256) lists.clear();
      statement = this.db.prepare(text);
      lists.set(text, statement);
    }
    return statement;
  }

  /**
   * Prepares the statements of every registered set (see register) and
   * forgets those prepared since: on open and after a migration.
   */
  ready(): void {
    const sets = new Map<SqlTexts, Statements>();
    for (const [sql, readied] of this.#sets) {
      const statements = this.#prepareSet(sql);
      readied?.(statements);
      sets.set(sql, statements);
    }
    this.#readied = { sets, sized: new Map(), shapes: new Map(), counts: null };
  }

  #ready(): Readied {
    if (!this.#readied) {
      throw new Error(`${this.location}: the store is not migrated or is closed`);
    }
    return this.#readied;
  }

  #prepareSet(sql: SqlTexts): Statements {
    return Object.fromEntries(
      Object.entries(sql).map(([key, text]) => [key, this.db.prepare(text as string)]),
    );
  }

  // ------------------------------------------------------------ the connection

  /**
   * The schema version the database is at (0 when it was never migrated);
   * reads only, so it works on a store opened without migrating.
   */
  readSchemaVersion(): number {
    const table = this.db.prepare(
      `SELECT 1 AS present FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`,
    ).get();
    if (!table) return 0;
    const row = this.db.prepare(`SELECT max(version) AS version FROM schema_migrations`).get();
    return Number(row?.version ?? 0);
  }

  /**
   * The connection's settings: WAL, the checkpoints, the commit signal and
   * the durability of `SqliteOptions.synchronous`. The WAL journal mode is
   * set only if the file is not in it already (setting it writes).
   */
  configure(): void {
    if (this.location !== ":memory:") this.db.exec("PRAGMA journal_mode = WAL");
    // A larger WAL between checkpoints: pages written by many transactions
    // (index roots, the attempts tail) reach the main file once per checkpoint.
    // A store that keeps writing moves them to a thread (checkpointer.ts).
    if (!this.#checkpointer?.running) {
      this.db.exec(`PRAGMA wal_autocheckpoint = ${INLINE_CHECKPOINT_FRAMES}`);
    }
    if (this.#checkpointer === null && this.identity !== null && !this.readOnly) {
      this.#checkpointer = new Checkpointer(this.location, this.db);
    }
    if (this.#signal === null && this.identity !== null && !this.readOnly) {
      this.#signal = new CommitSignal(this.location, this.#options.presence);
    }
    const sync = this.#options.synchronous === "full" ? "FULL" : "NORMAL";
    this.db.exec(`PRAGMA synchronous = ${sync}`);
  }

  /** `PRAGMA data_version`: changes when another connection commits. */
  dataVersion(): number {
    const row = this.statements(SQL).dataVersion.get() as Row | undefined;
    return Number(row?.data_version ?? 0);
  }

  /**
   * Forgets every statement, stops the commit signal and the checkpoint
   * thread, and closes the connection; resolves once the thread stopped.
   */
  close(): Promise<void> {
    this.#signal?.close();
    this.#readied = null;
    this.#onDemand.clear();
    const stopping = this.#checkpointer?.close() ?? Promise.resolve();
    this.db.close();
    return stopping;
  }

  // -------------------------------------------------------------- transactions

  /** A caller's transaction holding the connection (see transaction()), or null. */
  get held(): Promise<void> | null {
    return this.#held;
  }

  /** True while a call on a caller's transaction runs its statements on it. */
  get inTx(): boolean {
    return this.#inTx;
  }

  /**
   * Runs `fn` once no caller's transaction holds the connection. When another
   * process holds the write lock (SQLITE_BUSY), `fn` is retried after short
   * asynchronous waits until the busy timeout: this process's event loop
   * keeps running (jobs finish, heartbeats beat) instead of blocking inside
   * SQLite's own busy handler. `fn` is always a whole transaction or a single
   * read, so a retry repeats nothing that took effect.
   */
  exclusive<T>(fn: () => T): Promise<T> {
    // Nothing goes into a file nobody can reach any more, as if it mattered.
    if (this.lost) return Promise.reject(this.lost);
    if (this.#inTx) {
      // The caller's transaction holds the write lock already: nothing to wait for.
      try {
        return Promise.resolve(fn());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (this.#held === null) {
      try {
        return Promise.resolve(fn());
      } catch (error) {
        if (!isBusy(error)) return Promise.reject(error);
        return this.#retryBusy(fn, performance.now() + this.#options.busyTimeoutMs);
      }
    }
    return this.#held.then(() => this.exclusive(fn));
  }

  /** `own`: the hold of the caller's own transaction, which is not waited for. */
  async #retryBusy<T>(fn: () => T, deadline: number, own: Promise<void> | null = null): Promise<T> {
    for (let attempt = 0;; attempt++) {
      // The first retries come at once (the lock is usually held for well
      // under a millisecond), later ones every millisecond (the timer's
      // finest step). A longer step costs the lock half of it idle at every
      // hand-over between processes (median 1.6 ms of the 1 to 5 ms back-off,
      // a seventh of three processes' time, measured); a failed try costs
      // microseconds.
      if (attempt < 2) await new Promise((resolve) => setImmediate(resolve));
      else await new Promise((resolve) => setTimeout(resolve, 1));
      while (this.#held && this.#held !== own) await this.#held;
      try {
        return fn();
      } catch (error) {
        if (!isBusy(error) || performance.now() > deadline) throw error;
      }
    }
  }

  /**
   * One synchronous write transaction, holding the write lock from its
   * start. Inside a caller's transaction it is a savepoint of it instead
   * (SQLite cannot nest BEGIN), so a call of several statements still
   * writes all of them or none.
   */
  write<T>(fn: () => T, quiet = false): T {
    if (this.#inTx) {
      this.db.exec("SAVEPOINT store_call");
      try {
        const result = this.#counted(fn);
        this.db.exec("RELEASE store_call");
        return result;
      } catch (error) {
        // Some errors (a full disk) end the whole transaction, savepoint and all.
        if (this.db.isTransaction) {
          this.db.exec("ROLLBACK TO store_call");
          this.db.exec("RELEASE store_call");
        }
        throw error;
      }
    }
    this.db.exec("BEGIN IMMEDIATE");
    const before = this.#totalChanges();
    try {
      const result = this.#counted(fn);
      this.db.exec("COMMIT");
      this.committed(before, quiet);
      return result;
    } catch (error) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      throw error;
    }
  }

  /**
   * Runs `fn` (the body of a write) gathering the changes it makes to the
   * job counts, then writes them (see counts.ts), so the counts commit or
   * roll back with the rows. A write that changes no job (a migration, a
   * heartbeat) writes nothing of them.
   */
  #counted<T>(fn: () => T): T {
    const outer = this.#countsWrite;
    const write = this.#countsWrite = new CountsWrite(this.#countStatements, this.countsSeen);
    try {
      const result = fn();
      write.finish();
      return result;
    } finally {
      this.#countsWrite = outer;
    }
  }

  /** The counts' changes of the write running now; a job written outside a write is a bug. */
  get counts(): CountsWrite {
    if (this.#countsWrite === null) {
      throw new Error(`${this.location}: a job was written outside a write transaction`);
    }
    return this.#countsWrite;
  }

  /** The statements of the counts, looked up when a write first needs them (not in a migration). */
  readonly #countStatements = (): CountStatements => {
    const readied = this.#ready();
    return readied.counts ??= countStatements(this);
  };

  /**
   * Runs `fn` as a caller's transaction (see `Store.transaction`): once no
   * other holds the connection, holds it, begins (retried while another
   * process holds the write lock), and commits when `fn` resolves or rolls
   * back when it throws. `fn` gets `onTx`, which runs one store call on the
   * open transaction (`inTx` set, so its statements go on it) and fails
   * once the transaction has ended. Every store call reaches exclusive()
   * synchronously, within `onTx`.
   */
  async transaction<T>(
    fn: (onTx: <R>(call: () => Promise<R>) => Promise<R>) => Promise<T>,
  ): Promise<T> {
    while (this.#held) await this.#held;
    if (this.lost) throw this.lost;
    let release!: () => void;
    const own = this.#held = new Promise((resolve) => (release = resolve));
    try {
      await this.#retryableBegin(own);
      const before = this.#totalChanges();
      const onTx = <R>(call: () => Promise<R>): Promise<R> => {
        if (this.#held !== own) return Promise.reject(this.#ended());
        this.#inTx = true;
        try {
          return call();
        } finally {
          this.#inTx = false;
        }
      };
      try {
        const result = await fn(onTx);
        this.db.exec("COMMIT");
        this.committed(before);
        return result;
      } catch (error) {
        if (this.db.isTransaction) this.db.exec("ROLLBACK");
        throw error;
      }
    } finally {
      this.#held = null;
      release();
    }
  }

  #ended(): Error {
    return new Error(`${this.location}: the transaction has ended; use the store instead`);
  }

  #retryableBegin(own: Promise<void>): Promise<void> {
    const begin = () => this.db.exec("BEGIN IMMEDIATE");
    try {
      begin();
      return Promise.resolve();
    } catch (error) {
      if (!isBusy(error)) return Promise.reject(error);
      return this.#retryBusy(begin, performance.now() + this.#options.busyTimeoutMs, own);
    }
  }

  // ------------------------------------------------------------------ commits

  /**
   * A commit of this connection: the checkpointer counts it and the wake
   * file is touched (see CommitSignal); not when it changed no row since
   * `before` (its `total_changes()` at BEGIN; null when it surely did). An
   * idle node's periodic writes (a claim, the stager, the planner) mostly
   * find nothing to do: touching the wake file for those woke this process
   * and every watching one twice a second for nothing, and counted toward
   * starting the checkpoint thread. `quiet`: nobody needs to hear it soon
   * (a heartbeat, a lease renewal).
   */
  committed(before: number | null, quiet = false): void {
    if (before !== null && this.#totalChanges() === before) return;
    this.#checkpointer?.committed();
    this.#signal?.committed(quiet);
  }

  /**
   * A write of one statement outside any write transaction (SQLite commits
   * it by itself) changed `changes` rows: signalled as a commit. Inside a
   * caller's transaction its commit does that.
   */
  autocommitted(changes: number | bigint, quiet = false): void {
    if (this.#inTx || Number(changes) === 0) return;
    this.committed(null, quiet);
  }

  /**
   * The rows the connection changed since it opened (`total_changes()`),
   * or null before the statements are prepared (a migration: it counts).
   */
  #totalChanges(): number | null {
    return this.#readied === null
      ? null
      : Number((this.statements(SQL).totalChanges.get() as Row).n);
  }

  // ----------------------------------------------------------------- lifecycle

  /**
   * Runs the shared lifecycle's ops (src/store/lifecycle/) on this
   * connection, inside the open write transaction.
   */
  lifecycle<R>(ops: StoreOps<R>): R {
    return runStoreOps(ops, (op) => this.answer(op));
  }

  /** Answers one of the shared lifecycle's ops, one statement each, in the file of its concern. */
  answer(op: StoreOp): unknown {
    if (isScheduleOp(op)) return answerScheduleOp(this, op);
    if (isLeaderOp(op)) return answerLeaderOp(this, op);
    if (isWorkflowOp(op)) return answerWorkflowOp(this, op);
    if (isWorkItemOp(op)) return answerWorkItemOp(this, op);
    if (isFlowOp(op)) return answerFlowOp(this, op);
    return answerJobOp(this, op);
  }
}
