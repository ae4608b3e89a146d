/**
 * The SQLite store: the built-in `node:sqlite`, one connection per process,
 * WAL, and every SQL statement of the SQLite backend.
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
 * Several processes may share one file: every write transaction starts with
 * `BEGIN IMMEDIATE`, which takes the write lock up front (a deferred
 * read-then-write transaction could fail with SQLITE_BUSY midway, after its
 * reads, where no wait can help). While another process holds the lock, the
 * transaction is retried after short asynchronous waits, up to the busy
 * timeout.
 *
 * @module
 */

import {
  DatabaseSync,
  type SQLInputValue,
  type StatementResultingChanges,
  type StatementSync,
} from "node:sqlite";
import { setImmediate } from "node:timers";
import {
  type Attempt,
  type ClaimedJob,
  type InsertResult,
  type Job,
  type JobDefinition,
  type JobResult,
  type JobState,
  type NewJob,
  type PlanContext,
  type PlanDecision,
  type RecordReport,
} from "../../kernel/types.ts";
import type {
  AuditRow,
  JobFilter,
  JobMatch,
  JobsStopParams,
  LeaderRow,
  LeaderState,
  Lease,
  MigrationInfo,
  MigrationReport,
  NodeRow,
  QueueRow,
  ScheduleOutcome,
  ScheduleRow,
  Store,
  StoreTx,
  StoreTxMethod,
  StoreTxMethods,
  WorkflowActionResult,
  WorkflowFilter,
  WorkflowStartParams,
} from "../store.ts";
import { STORE_TX_METHODS } from "../store.ts";
import { searchesShown, SearchPaging } from "../search.ts";
import type {
  IngestChunkCommitParams,
  IngestDropFilter,
  IngestDropsPruneParams,
  IngestDropWithRecord,
  IngestLease,
  IngestRunFilter,
  IngestRunFinishParams,
  IngestRunOpenParams,
  ReportRunCreateParams,
  ReportRunFilter,
  ReportRunFinishParams,
} from "../store.ts";
import type { IngestDrop, IngestRun, PipelineSummary } from "../../ingest/types.ts";
import { SqliteIngest } from "./ingest.ts";
import { SqliteReports } from "./reports.ts";
import type { ReportRun } from "../../report/types.ts";
import {
  type FileIdentity,
  SchemaTooNewError,
  SchemaTooOldError,
  StoreLostError,
  StoreOpenError,
} from "../errors.ts";

export { SchemaTooNewError };
import { fileIdentity, notAFile, openProblem } from "./file_check.ts";
import { ChangeWatch, type ChangeWatchOptions, CommitSignal } from "./change_watch.ts";
import { SqliteWorkflows } from "./workflows.ts";
import { cancelRun, retryRun, startRun } from "../../workflow/bookkeeping.ts";
import {
  pruneJobs,
  pruneScheduleJobs,
  recordResults,
  replayJob,
  rescueJobs,
  retryJobs,
  stageJobs,
  stopJobs,
} from "../lifecycle/jobs.ts";
import { planSchedule, setScheduleEnabled } from "../lifecycle/schedules.ts";
import { releaseLeadership, takeLeadership } from "../lifecycle/leaders.ts";
import { runStoreOps, type StoreOp, type StoreOps } from "../lifecycle/ops.ts";
import type { RunState, WorkflowRun, WorkflowRunDetail } from "../../workflow/types.ts";
import { KNOWN_VERSION, pendingMigrations as pendingAfter } from "./migrations.ts";
import {
  escapeLike,
  inserted,
  insertRow,
  isBusy,
  type Row,
  toAttempt,
  toClaimed,
  toInsertResult,
  toJob,
  toScheduleRow,
} from "./rows.ts";
import { checkBounds, toHolder, toLeaderRow, toLeasedJob } from "../rows.ts";
import { countsAnswer, sumMatching } from "../job_counts.ts";
import { type CountStatements, CountsWrite, UNCOUNTED_MAX } from "./counts.ts";
import { Checkpointer, INLINE_CHECKPOINT_FRAMES } from "./checkpointer.ts";
import {
  attemptsCompletedSql,
  checkState,
  completedSql,
  COUNTS_ADD_VALUES,
  countsAddSql,
  DEAD_LETTER_SCAN,
  type FinalState,
  insertJobsSql,
  jobsCountSql,
  jobsListSql,
  type ListFilter,
  PRUNE_STATE,
  SQL,
} from "./sql.ts";

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
 * The bound values of a listing's filters and the shape they make: each
 * filter given is bound under its own name (a search as its LIKE pattern,
 * with :plain saying whether JSON writes it as it is).
 */
function listValues(params: JobMatch): {
  values: Record<string, string | number>;
  shape: { filters: ListFilter[]; states: JobState[] | null };
} {
  const values: Record<string, string | number> = {};
  const given = (name: ListFilter, value: string | number | undefined) => {
    if (value !== undefined) values[name] = value;
  };
  given("ids", params.ids && JSON.stringify(params.ids));
  given("queue", params.queue);
  given("worker", params.worker);
  given("tag", params.tag);
  given("schedule", params.scheduleId);
  given("occurrence", params.occurrence);
  given("search", params.search === undefined ? undefined : `%${escapeLike(params.search)}%`);
  given("above", params.above);
  const filters = Object.keys(values) as ListFilter[];
  if (params.search !== undefined) {
    values.plain = JSON.stringify(params.search) === `"${params.search}"` ? 1 : 0;
  }
  const states = params.state === undefined
    ? null
    : Array.isArray(params.state)
    ? params.state
    : [params.state];
  return { values, shape: { filters, states } };
}

/**
 * Rows an insert statement takes at most: 1,500 values, well inside
 * SQLite's 32,766; past 50 rows a statement, bigger batches gain nothing
 * (measured: 439k rows/s at 10, 463k at 50, 458k at 100).
 */
const INSERT_BATCH = 100;

/**
 * Whether the plain jobs of `batch` (no occurrence, no unique key) differ
 * only in their args (the common bulk enqueue: one worker, one queue, the
 * same options), so one INSERT_ALIKE takes them all.
 */
function alike(batch: readonly NewJob[]): boolean {
  const a = batch[0]!;
  for (let i = 1; i < batch.length; i++) {
    const b = batch[i]!;
    if (
      b.queue !== a.queue || b.worker !== a.worker || b.meta !== a.meta || b.tags !== a.tags ||
      b.tenant !== a.tenant || b.priority !== a.priority || b.maxAttempts !== a.maxAttempts ||
      b.scheduledAt !== a.scheduledAt || b.uniqueStates !== a.uniqueStates ||
      b.scheduleId !== a.scheduleId || b.scheduledFor !== a.scheduledFor
    ) return false;
  }
  return true;
}

type Statements = { -readonly [K in keyof typeof SQL]: StatementSync } & {
  pruneState: Record<FinalState, StatementSync>;
  /** countsAddSql(n) at index n - 1, for n up to COUNTS_ADD_VALUES. */
  countsAddValues: StatementSync[];
  /** The jobsList statements, one per shape, prepared on first use. */
  lists: Map<string, StatementSync>;
  /** insertJobsSql(n) by n, prepared on first use. */
  inserts: Map<number, StatementSync>;
  /** completedSql(n) by n (a power of two), prepared on first use. */
  completions: Map<number, StatementSync>;
  /** attemptsCompletedSql(n) by n (a power of two), prepared on first use. */
  attemptsCompleted: Map<number, StatementSync>;
};

/**
 * The most results one completion or attempts statement binds. A batch
 * goes in pieces of powers of two up to it, so each of those statements is
 * prepared in at most nine sizes, and a batch of 500 takes six of them.
 */
const RECORD_CHUNK = 256;

/** The size of the next piece of a batch with `left` rows to go (see RECORD_CHUNK). */
function pieceOf(left: number): number {
  let size = RECORD_CHUNK;
  while (size > left) size >>= 1;
  return size;
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

/** The SQLite implementation of {@linkcode Store}. */
export class SqliteStore implements Store<SqliteTx> {
  readonly kind = "sqlite";
  readonly location: string;
  readonly db: DatabaseSync;
  #options: Required<Omit<SqliteOptions, "now" | "migrate" | "readOnly" | "changeWatch">>;
  #statements: Statements | null = null;
  // A caller's transaction that spans awaits holds the connection; every other
  // call waits for it so nothing else runs inside the caller's transaction.
  #held: Promise<void> | null = null;
  // True only while a call on a caller's transaction runs its (synchronous)
  // statements: they go on the open transaction instead of waiting for it.
  #inTx = false;
  #listeners = new Set<() => void>();
  #watch: ChangeWatch | null = null;
  /** Touches `<db>.wake/commit` after this store's commits, for other processes' watches. */
  #signal: CommitSignal | null = null;
  readonly #changeWatch: ChangeWatchOptions;
  #closed = false;
  /** The file opened, to notice when the path names another file or none. */
  readonly #identity: FileIdentity | null;
  #lost: StoreLostError | null = null;
  readonly #wf: SqliteWorkflows;
  readonly #ingest: SqliteIngest;
  readonly #reports: SqliteReports;
  /** The job counts' changes of the write transaction running now (see #counted). */
  #countsWrite: CountsWrite | null = null;
  /** The counts' watermark this process saw last (see counts.ts). */
  readonly #countsSeen = { through: 0 };
  /** The newest id this process inserted alone (see #insertAlone). */
  #newestAlone = 0;
  readonly #readOnly: boolean;
  /** Set on the first #configure of a writable file (not `:memory:`). */
  #checkpointer: Checkpointer | null = null;

  constructor(path: string, options: SqliteOptions = {}) {
    this.location = path;
    this.#ingest = new SqliteIngest(() => this.db);
    this.#reports = new SqliteReports(() => this.db);
    this.#wf = new SqliteWorkflows(
      () => this.db,
      (jobs, now) => this.#insertFresh(jobs, now),
      () => this.#counts,
    );
    this.#options = {
      busyTimeoutMs: options.busyTimeoutMs ?? 5000,
      synchronous: options.synchronous ?? "normal",
      changePollMs: options.changePollMs ?? 2,
      fileCheckMs: options.fileCheckMs ?? 500,
    };
    this.#changeWatch = options.changeWatch ?? {};
    this.#readOnly = options.readOnly ?? false;
    this.db = new DatabaseSync(path, { readOnly: this.#readOnly });
    // SQLite has created the file (or found it) by now: this is the one it holds.
    this.#identity = notAFile(path) ? null : fileIdentity(path);
    // SQLite's own busy handler would block the whole process while it
    // sleeps; every call goes through #exclusive, which retries without
    // blocking, so SQLite itself is told not to wait.
    this.db.exec("PRAGMA busy_timeout = 0");
  }

  // ---------------------------------------------------------------- migrations

  migrate(params: { now: number }): Promise<MigrationReport> {
    return this.#exclusive(() => {
      // Read before writing anything: a newer database is refused untouched.
      const before = this.#schemaVersion();
      if (before > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, before, KNOWN_VERSION);
      }
      this.#configure();
      const applied: number[] = [];
      this.#write(() => {
        this.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
        // Another process may have migrated while we waited for the lock.
        const current = this.#schemaVersion();
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
      this.#prepare();
      return { applied, version: this.#schemaVersion() };
    });
  }

  /**
   * Readies a store at the current schema without a write transaction:
   * connection settings and prepared statements. The WAL journal mode is
   * set only if the file is not in it already (setting it writes).
   */
  prepare(): Promise<void> {
    return this.#exclusive(() => {
      const version = this.#schemaVersion();
      if (version > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, version, KNOWN_VERSION);
      }
      if (version < KNOWN_VERSION) {
        throw new SchemaTooOldError(this.location, version, KNOWN_VERSION);
      }
      this.#configure();
      this.#prepare();
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
    return this.#exclusive(() => {
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
    return this.#exclusive(() => this.#schemaVersion());
  }

  /** The migrations this program knows that the database has not applied; reads only. */
  pendingMigrations(): Promise<MigrationInfo[]> {
    return this.#exclusive(() => {
      const version = this.#schemaVersion();
      if (version > KNOWN_VERSION) {
        throw new SchemaTooNewError(this.location, version, KNOWN_VERSION);
      }
      return pendingAfter(version).map(({ version, name }) => ({ version, name }));
    });
  }

  #schemaVersion(): number {
    const table = this.db.prepare(
      `SELECT 1 AS present FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`,
    ).get();
    if (!table) return 0;
    const row = this.db.prepare(`SELECT max(version) AS version FROM schema_migrations`).get();
    return Number(row?.version ?? 0);
  }

  #configure(): void {
    if (this.location !== ":memory:") this.db.exec("PRAGMA journal_mode = WAL");
    // A larger WAL between checkpoints: pages written by many transactions
    // (index roots, the attempts tail) reach the main file once per checkpoint.
    // A store that keeps writing moves them to a thread (checkpointer.ts).
    if (!this.#checkpointer?.running) {
      this.db.exec(`PRAGMA wal_autocheckpoint = ${INLINE_CHECKPOINT_FRAMES}`);
    }
    if (this.#checkpointer === null && this.#identity !== null && !this.#readOnly) {
      this.#checkpointer = new Checkpointer(this.location, this.db);
    }
    if (this.#signal === null && this.#identity !== null && !this.#readOnly) {
      this.#signal = new CommitSignal(this.location, () => this.#watch?.presence ?? null);
    }
    const sync = this.#options.synchronous === "full" ? "FULL" : "NORMAL";
    this.db.exec(`PRAGMA synchronous = ${sync}`);
  }

  #prepare(): void {
    const prepare = <K extends string>(texts: Record<K, string>) =>
      Object.fromEntries(
        Object.entries(texts).map(([key, sql]) => [key, this.db.prepare(sql as string)]),
      ) as Record<K, StatementSync>;
    const statements: Statements = {
      ...prepare(SQL),
      pruneState: prepare(PRUNE_STATE),
      countsAddValues: Array.from(
        { length: COUNTS_ADD_VALUES },
        (_, i) => this.db.prepare(countsAddSql(i + 1)),
      ),
      lists: new Map(),
      inserts: new Map(),
      completions: new Map(),
      attemptsCompleted: new Map(),
    };
    // The claim is on the hot path: rows as arrays skip building an object per row.
    // (node:sqlite has it; Deno's type declarations do not list it yet.)
    (statements.claim as StatementSync & { setReturnArrays(on: boolean): void })
      .setReturnArrays(true);
    this.#statements = statements;
  }

  get #s(): Statements {
    if (!this.#statements) {
      throw new Error(`${this.location}: the store is not migrated or is closed`);
    }
    return this.#statements;
  }

  /**
   * The error every call fails with since the file at the path stopped
   * being the one this store holds (see {@linkcode checkFile}), or null.
   */
  get lost(): StoreLostError | null {
    return this.#lost;
  }

  /**
   * Checks that the file at the path is still the one opened (same device
   * and inode); when it was deleted or replaced, the store is lost: this and
   * every later call fail with the returned {@linkcode StoreLostError}, and
   * the `onExternalChange` listeners are called once so that idle callers
   * find out at once. The change poll calls it every `fileCheckMs`.
   */
  checkFile(): StoreLostError | null {
    if (this.#lost || this.#identity === null || this.#closed) return this.#lost;
    const now = fileIdentity(this.location);
    if (now !== null && now.dev === this.#identity.dev && now.ino === this.#identity.ino) {
      return null;
    }
    this.#lost = new StoreLostError(this.location, this.#identity, now);
    this.#stopPolling();
    for (const listener of this.#listeners) listener();
    return this.#lost;
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#stopPolling();
    this.#signal?.close();
    this.#listeners.clear();
    this.#statements = null;
    this.#wf.reset();
    this.#ingest.reset();
    this.#reports.reset();
    const stopping = this.#checkpointer?.close() ?? Promise.resolve();
    this.db.close();
    return stopping;
  }

  // -------------------------------------------------------------- transactions

  /**
   * Runs `fn` once no caller's transaction holds the connection. When another
   * process holds the write lock (SQLITE_BUSY), `fn` is retried after short
   * asynchronous waits until the busy timeout: this process's event loop
   * keeps running (jobs finish, heartbeats beat) instead of blocking inside
   * SQLite's own busy handler. `fn` is always a whole transaction or a single
   * read, so a retry repeats nothing that took effect.
   */
  #exclusive<T>(fn: () => T): Promise<T> {
    // Nothing goes into a file nobody can reach any more, as if it mattered.
    if (this.#lost) return Promise.reject(this.#lost);
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
    return this.#held.then(() => this.#exclusive(fn));
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
  #write<T>(fn: () => T, quiet = false): T {
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
      this.#committed(before, quiet);
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
    const write = this.#countsWrite = new CountsWrite(this.#countStatements, this.#countsSeen);
    try {
      const result = fn();
      write.finish();
      return result;
    } finally {
      this.#countsWrite = outer;
    }
  }

  /** The counts' changes of the write running now; a job written outside a write is a bug. */
  get #counts(): CountsWrite {
    if (this.#countsWrite === null) {
      throw new Error(`${this.location}: a job was written outside a write transaction`);
    }
    return this.#countsWrite;
  }

  /** The statements of the counts, looked up when a write first needs them (not in a migration). */
  readonly #countStatements = (): CountStatements => {
    const s = this.#s;
    return {
      through: s.countsThrough,
      setThrough: s.countsSetThrough,
      fold: s.countsFold,
      addJson: s.countsAdd,
      addValues: s.countsAddValues,
    };
  };

  async transaction<T>(fn: (tx: SqliteTx) => Promise<T>): Promise<T> {
    while (this.#held) await this.#held;
    if (this.#lost) throw this.#lost;
    let release!: () => void;
    const own = this.#held = new Promise((resolve) => (release = resolve));
    try {
      await this.#retryableBegin(own);
      const before = this.#totalChanges();
      const tx: SqliteTx = { ...this.#txMethods(own), db: this.db };
      try {
        const result = await fn(tx);
        this.db.exec("COMMIT");
        this.#committed(before);
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

  /**
   * The {@linkcode STORE_TX_METHODS} of the caller's transaction holding the
   * connection as `own`: each runs the store's method of that name with
   * `#inTx` set, so its statements go on the open transaction. Every one
   * of those methods reaches `#exclusive` synchronously, within the call.
   */
  #txMethods(own: Promise<void>): StoreTxMethods {
    const call = (name: StoreTxMethod) => (params: unknown) => {
      if (this.#held !== own) return Promise.reject(this.#ended());
      this.#inTx = true;
      try {
        return (this[name] as (params: unknown) => Promise<unknown>).call(this, params);
      } finally {
        this.#inTx = false;
      }
    };
    return Object.fromEntries(
      STORE_TX_METHODS.map((name) => [name, call(name)]),
    ) as unknown as StoreTxMethods;
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

  // ------------------------------------------------------------------- inserts

  jobsInsert(params: { jobs: NewJob[]; now: number }): Promise<InsertResult[]> {
    const [only] = params.jobs;
    if (params.jobs.length === 1 && only!.occurrence === null && only!.uniqueKey === null) {
      return this.#exclusive(() =>
        this.#insertAlone(only!, params.now) ??
          this.#write(() => this.#insert(params.jobs, params.now))
      );
    }
    return this.#exclusive(() => this.#write(() => this.#insert(params.jobs, params.now)));
  }

  /**
   * One plain job outside any transaction of the caller's: its insert alone,
   * a statement SQLite commits by itself, without the BEGIN and COMMIT of a
   * write transaction (a one-row commit 7% faster, medians of 7, measured).
   * The counts need nothing for it: a new job is above their watermark,
   * counted from the table when they are read. Null when that would leave
   * too many jobs above it (UNCOUNTED_MAX, as this process knows it): a
   * write transaction then takes them into the counts.
   */
  #insertAlone(job: NewJob, now: number): [InsertResult] | null {
    if (this.#inTx || this.#newestAlone - this.#countsSeen.through >= UNCOUNTED_MAX) return null;
    const id = Number(this.#s.insertPlain.run(...insertRow(job), now).lastInsertRowid);
    this.#newestAlone = id;
    this.#committed(null);
    return [inserted(job, id, now)];
  }

  /**
   * Inserts jobs that cannot exist yet (the next steps of workflow runs,
   * whose rows the same transaction records): the plain insert, ids in
   * input order. A unique conflict is an error that rolls the transaction
   * back, not a duplicate to report: a step created twice is a bug.
   */
  #insertFresh(jobs: NewJob[], now: number): InsertResult[] {
    const results: InsertResult[] = [];
    this.#insertPlain(jobs, now, results);
    return results;
  }

  /**
   * Inserts `jobs`, none of which can conflict (no occurrence, no unique
   * key), up to {@linkcode INSERT_BATCH} rows a statement, and pushes their
   * results onto `results` in order.
   */
  #insertPlain(jobs: readonly NewJob[], now: number, results: InsertResult[]): void {
    for (let from = 0; from < jobs.length; from += INSERT_BATCH) {
      const batch = jobs.slice(from, from + INSERT_BATCH);
      if (batch.length === 1) {
        const id = this.#s.insertPlain.run(...insertRow(batch[0]!), now).lastInsertRowid;
        results.push(this.#inserted(batch[0]!, id, now));
        continue;
      }
      const { lastInsertRowid, changes } = alike(batch)
        ? this.#s.insertAlike.run({
          queue: batch[0]!.queue,
          worker: batch[0]!.worker,
          args: JSON.stringify(batch.map((job) => job.args)),
          meta: batch[0]!.meta,
          tags: batch[0]!.tags,
          tenant: batch[0]!.tenant,
          priority: batch[0]!.priority,
          max_attempts: batch[0]!.maxAttempts,
          scheduled_at: batch[0]!.scheduledAt,
          unique_states: batch[0]!.uniqueStates,
          schedule_id: batch[0]!.scheduleId,
          scheduled_for: batch[0]!.scheduledFor,
          state: batch[0]!.scheduledAt > now ? "scheduled" : "available",
          now,
        })
        : this.#insertValues(batch, now);
      if (Number(changes) !== batch.length) {
        throw new Error(`an insert of ${batch.length} jobs wrote ${changes} rows`);
      }
      // Consecutive ids, the last one lastInsertRowid (see insertJobsSql).
      const first = Number(lastInsertRowid) - batch.length + 1;
      batch.forEach((job, i) => results.push(this.#inserted(job, first + i, now)));
    }
  }

  /** `batch` as one multi-row VALUES insert (see insertJobsSql). */
  #insertValues(batch: readonly NewJob[], now: number): StatementResultingChanges {
    const statement = this.#sized(this.#s.inserts, batch.length, insertJobsSql, false);
    const values: SQLInputValue[] = [];
    for (const job of batch) {
      values.push(...insertRow(job), job.scheduledAt > now ? "scheduled" : "available", now);
    }
    return statement.run(...values);
  }

  /** The result of a job this write inserted as `id`, taken into the write's counts. */
  #inserted(job: NewJob, id: number | bigint, now: number): InsertResult {
    const result = inserted(job, Number(id), now);
    this.#counts.inserted(result.id, result.queue, result.state);
    return result;
  }

  #insert(jobs: NewJob[], now: number): InsertResult[] {
    const { insertKeyed, byOccurrence, byUniqueKey } = this.#s;
    const holder = (stmt: typeof byOccurrence, key: string | null) =>
      key === null ? undefined : stmt.get({ key }) as Row | undefined;
    const results: InsertResult[] = [];
    // Runs of plain jobs (which cannot conflict) go in batches; each keyed
    // job on its own, in order, so a later job's duplicate finds it.
    let plainFrom = 0;
    for (let i = 0; i <= jobs.length; i++) {
      const job = jobs[i];
      if (job !== undefined && job.occurrence === null && job.uniqueKey === null) continue;
      if (i > plainFrom) this.#insertPlain(jobs.slice(plainFrom, i), now, results);
      plainFrom = i + 1;
      if (job === undefined) break;
      const row = insertKeyed.get(...insertRow(job), now) as Row | undefined;
      if (row) {
        results.push(this.#inserted(job, row.id as number, now));
        continue;
      }
      // The row holding the occurrence or the key: an older one, or an
      // earlier job of this batch with the same key (this one is its duplicate).
      const existing = holder(byOccurrence, job.occurrence) ?? holder(byUniqueKey, job.uniqueKey);
      if (!existing) {
        throw new Error(`insert of a ${job.worker} job conflicted with a vanished row`);
      }
      results.push(toInsertResult(existing, true));
    }
    return results;
  }

  // --------------------------------------------------------- claim and record

  jobsClaim(params: {
    queue: string;
    node: string;
    limit: number;
    now: number;
    leaseMs: number;
    results?: JobResult[];
    dueBy?: number;
  }): Promise<{ jobs: ClaimedJob[]; report: RecordReport }> {
    return this.#exclusive(() =>
      this.#write(() => {
        const report = params.results?.length
          ? this.#lifecycle(
            recordResults({ node: params.node, now: params.now, results: params.results }),
          )
          : { recorded: [], lost: [] };
        if (params.limit <= 0) return { jobs: [], report };
        const rows = this.#s.claim.all({
          queue: params.queue,
          node: params.node,
          now: params.now,
          due: params.dueBy ?? params.now,
          lease: params.now + params.leaseMs,
          limit: params.limit,
        }) as unknown as unknown[][];
        const counts = this.#counts;
        // The claimed jobs of a schedule (its occurrences, the last column) start it.
        const jobs: ClaimedJob[] = [];
        for (const row of rows) {
          counts.moved(row[0] as number, params.queue, "available", "executing");
          const schedule = row[12] as string | null;
          if (schedule != null) this.#s.scheduleStarted.run({ schedule, now: params.now });
          jobs.push(toClaimed(row, params.queue, params.now));
        }
        return { jobs, report };
      })
    );
  }

  jobsRecord(params: { node: string; now: number; results: JobResult[] }): Promise<RecordReport> {
    if (params.results.length === 0) return Promise.resolve({ recorded: [], lost: [] });
    return this.#exclusive(() => this.#write(() => this.#lifecycle(recordResults(params))));
  }

  /**
   * The attempt rows of `recorded`: plain completions (no output, no
   * definition) as bound values while no replay waits, every other one
   * from JSON, joined to its pending replay when one may wait.
   */
  #attemptsInsert(node: string, now: number, recorded: JobResult[]): void {
    const s = this.#s;
    const { waiting } = s.replaysWaiting.get() as { waiting: number };
    let rest = recorded;
    if (!waiting) {
      const plain: JobResult[] = [];
      rest = [];
      for (const r of recorded) {
        const isPlain = r.outcome === "completed" && r.output === undefined &&
          r.definition === undefined;
        (isPlain ? plain : rest).push(r);
      }
      this.#inPieces(plain, s.attemptsCompleted, attemptsCompletedSql, { node, now }, (r, out) => {
        out.push(r.id, r.attempt, r.fence, r.startedAt);
      });
    }
    if (rest.length === 0) return;
    const rows = JSON.stringify(rest.map((r) => [
      r.id,
      r.attempt,
      r.fence,
      r.startedAt,
      r.outcome,
      "error" in r ? r.error : null,
      r.output ?? null,
      r.definition ?? null,
    ]));
    (waiting ? s.attemptsInsert : s.attemptsInsertNoReplays).run({ node, now, rows });
  }

  /**
   * `sql(n)` over `rows` in pieces of powers of two (see RECORD_CHUNK), each
   * row's values pushed by `values` after the `named` ones; the rows the
   * statements return, as arrays.
   */
  #inPieces<T>(
    rows: readonly T[],
    cache: Map<number, StatementSync>,
    sql: (rows: number) => string,
    named: Record<string, SQLInputValue>,
    values: (row: T, out: SQLInputValue[]) => void,
  ): unknown[][] {
    const out: unknown[][] = [];
    for (let from = 0; from < rows.length;) {
      const size = pieceOf(rows.length - from);
      const bound: SQLInputValue[] = [];
      for (let i = from; i < from + size; i++) values(rows[i]!, bound);
      const returned = this.#sized(cache, size, sql, true).all(named, ...bound);
      for (const row of returned) out.push(row as unknown as unknown[]);
      from += size;
    }
    return out;
  }

  /** The statement `sql(size)` from `cache`, prepared on first use (returning arrays when `arrays`). */
  #sized(
    cache: Map<number, StatementSync>,
    size: number,
    sql: (rows: number) => string,
    arrays: boolean,
  ): StatementSync {
    let statement = cache.get(size);
    if (!statement) {
      statement = this.db.prepare(sql(size));
      if (arrays) {
        (statement as StatementSync & { setReturnArrays(on: boolean): void }).setReturnArrays(true);
      }
      cache.set(size, statement);
    }
    return statement;
  }

  jobsRelease(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
    if (params.leases.length === 0) return Promise.resolve([]);
    return this.#exclusive(() =>
      this.#write(() =>
        params.leases.filter((l) => {
          const row = this.#s.release.get({ id: l.id, fence: l.fence, node: params.node }) as
            | Row
            | undefined;
          if (row) this.#counts.moved(l.id, row.queue as string, "executing", "available");
          return row !== undefined;
        })
      )
    );
  }

  jobsRenew(params: {
    node: string;
    leases: Lease[];
    now: number;
    leaseMs: number;
  }): Promise<{ lost: Lease[] }> {
    if (params.leases.length === 0) return Promise.resolve({ lost: [] });
    return this.#exclusive(() =>
      this.#write(() => {
        const lost: Lease[] = [];
        const lease = params.now + params.leaseMs;
        for (const l of params.leases) {
          const { changes } = this.#s.renew.run({
            id: l.id,
            fence: l.fence,
            node: params.node,
            lease,
          });
          if (changes === 0) lost.push(l);
        }
        return { lost };
      }, true)
    );
  }

  jobsLeasesLost(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
    return this.#exclusive(() =>
      params.leases.filter((l) =>
        !this.#s.leaseHeld.get({ id: l.id, fence: l.fence, node: params.node })
      )
    );
  }

  // ---------------------------------------------------------------- maintenance

  jobsStage(params: { now: number; limit: number }) {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(stageJobs(params))));
  }

  jobsRescue(params: { now: number; limit: number }) {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(rescueJobs(params))));
  }

  jobsPrune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
    except?: string[];
  }): Promise<number> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(pruneJobs(params))));
  }

  jobsPruneSchedule(
    params: { scheduleId: string; before: number; limit: number },
  ): Promise<number> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(pruneScheduleJobs(params))));
  }

  jobsPrunable(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    schedules?: { scheduleId: string; before: number }[];
  }): Promise<number> {
    return this.#exclusive(() => {
      const row = this.#s.prunable.get({
        completed: params.before.completed ?? null,
        cancelled: params.before.cancelled ?? null,
        discarded: params.before.discarded ?? null,
        schedules: JSON.stringify((params.schedules ?? []).map((s) => [s.scheduleId, s.before])),
      }) as Row;
      return Number(row.count);
    });
  }

  jobsCancel(params: JobsStopParams): Promise<number[]> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(stopJobs("cancelled", params))));
  }

  jobsDiscard(params: JobsStopParams): Promise<number[]> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(stopJobs("discarded", params))));
  }

  jobsRetry(params: {
    ids: number[];
    now: number;
    definitions?: ReadonlyMap<number, JobDefinition>;
  }): Promise<number[]> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(retryJobs(params))));
  }

  jobReplay(params: {
    id: number;
    now: number;
    actor: string;
    reason: string;
    force: boolean;
    definition?: JobDefinition;
  }): Promise<{ replayed: boolean; was: JobState } | null> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(replayJob(params))));
  }

  /**
   * Runs the shared lifecycle's ops (src/store/lifecycle/) on this
   * connection, inside the open write transaction.
   */
  #lifecycle<R>(ops: StoreOps<R>): R {
    return runStoreOps(ops, (op) => this.#answer(op));
  }

  /** Answers one of the shared lifecycle's ops, one statement each. */
  #answer(op: StoreOp): unknown {
    const s = this.#s;
    switch (op.op) {
      case "scheduleLock": {
        const row = s.scheduleGet.get({ id: op.id }) as Row | undefined;
        if (!row) return null;
        const plannedFor = row.last_planned_for;
        return {
          enabled: row.enabled === 1,
          lastPlannedFor: plannedFor == null ? null : Number(plannedFor),
        };
      }
      case "scheduleActive": {
        const active = s.scheduleActive.get({ id: op.id }) as Row;
        return { executing: Number(active.executing), waiting: Number(active.waiting) };
      }
      case "occurrencesInsert":
        return this.#insert(op.jobs, op.now);
      case "scheduleAdvance": {
        const { op: _, ...values } = op;
        s.scheduleAdvance.run(values);
        return undefined;
      }
      case "scheduleSet": {
        const { op: _, ...values } = op;
        return s.scheduleSet.run({ ...values, enabled: op.enabled ? 1 : 0 }).changes !== 0;
      }
      case "leaderTake": {
        const { op: _, ...values } = op;
        const row = s.leaderTake.get(values) as Row | undefined;
        return row ? toHolder(row) : null;
      }
      case "leaderGet": {
        const row = s.leaderGet.get({ name: op.name }) as Row | undefined;
        return row ? toHolder(row) : null;
      }
      case "leaderRelease": {
        const { op: _, ...values } = op;
        return s.leaderRelease.run(values).changes !== 0;
      }
      case "jobsExpired":
        return (s.expired.all({ now: op.now, limit: op.limit }) as Row[]).map(toLeasedJob);
      case "jobsLock":
        return (s.jobsLock.all({ ids: JSON.stringify(op.ids) }) as Row[]).map(toLeasedJob);
      case "runsLock":
      case "runsLockOfJobs":
      case "wake":
        // The write lock is the whole file's; commits wake the other processes.
        return undefined;
      case "jobLeaseEnd":
        return s.leaseEnd.get({ ...op.lease, to: op.to, now: op.now, error: op.error }) !==
          undefined;
      case "jobsComplete": {
        const rows = this.#inPieces(
          op.results,
          s.completions,
          completedSql,
          { now: op.now, node: op.node },
          (r, out) => {
            out.push(r.id, r.fence);
          },
        ) as [number, string][];
        return rows.map(([id, queue]) => ({ id, queue }));
      }
      case "jobRecord": {
        const r = op.result;
        const lease = { id: r.id, node: op.node, fence: r.fence, now: op.now };
        let row: Row | undefined;
        switch (r.outcome) {
          case "snoozed":
            row = s.snoozed.get({ ...lease, until: r.until }) as Row | undefined;
            break;
          case "retryable":
            row = s.retryable.get({ ...lease, at: r.at, error: r.error }) as Row | undefined;
            break;
          case "cancelled":
            row = s.cancelled.get({ ...lease, error: r.error }) as Row | undefined;
            break;
          case "discarded":
            row = s.discarded.get({ ...lease, error: r.error }) as Row | undefined;
            break;
        }
        if (row === undefined) return null;
        const state = r.outcome === "snoozed" ? row.state as JobState : r.outcome;
        return { queue: row.queue as string, state };
      }
      case "attemptsInsert":
        return this.#attemptsInsert(op.node, op.now, op.results);
      case "attemptEnd": {
        const { job } = op;
        s.attemptInsert.run({
          id: job.id,
          attempt: job.attempt,
          fence: job.fence,
          node: job.attemptedBy,
          started: job.attemptedAt ?? op.now,
          now: op.now,
          outcome: op.outcome,
          error: op.error,
        });
        return undefined;
      }
      case "schedulesCompleted":
        for (const job of op.jobIds) s.scheduleCompleted.run({ job, now: op.now });
        return undefined;
      case "jobStop": {
        const stop = op.to === "cancelled" ? s.cancel : s.discard;
        return stop.get({ id: op.id, now: op.now, error: op.error }) !== undefined;
      }
      case "jobRunAgain": {
        const row = s.runAgain.get({ id: op.id, from: JSON.stringify(op.from), now: op.now }) as
          | Row
          | undefined;
        return row ? { queue: String(row.queue), fence: Number(row.fence) } : null;
      }
      case "jobRedefine":
        s.redefine.run({ id: op.id, ...op.definition });
        return undefined;
      case "replayPending":
        s.replayPending.run({
          id: op.id,
          after: op.after,
          actor: op.actor,
          reason: op.reason,
          now: op.now,
        });
        return undefined;
      case "jobsStage": {
        const rows = s.stageDue.all({ now: op.now, limit: op.limit }) as Row[];
        if (rows.length > 0) s.stage.run({ ids: JSON.stringify(rows.map((r) => r.id)) });
        return rows.map((r) => ({
          id: Number(r.id),
          queue: String(r.queue),
          was: r.state as JobState,
        }));
      }
      case "nextDue": {
        const next = s.nextDue.get() as Row | undefined;
        return next?.at == null ? null : Number(next.at);
      }
      case "jobsDelete": {
        const { target, limit } = op;
        const rows = "state" in target
          ? s.pruneState[target.state].all({
            before: target.before,
            limit,
            except: JSON.stringify(target.except),
          }) as Row[]
          : s.pruneSchedule.all({
            schedule: target.scheduleId,
            before: target.before,
            limit,
          }) as Row[];
        return rows.map((r) => ({
          id: Number(r.id),
          queue: String(r.queue),
          state: r.state as JobState,
        }));
      }
      case "attemptsDelete": {
        const ids = JSON.stringify(op.jobIds);
        s.attemptsPrune.run({ ids });
        s.replaysPrune.run({ ids });
        return undefined;
      }
      case "countsMove": {
        const counts = this.#counts;
        for (const m of op.moves) counts.moved(m.id, m.queue, m.from, m.to, m.toQueue);
        return undefined;
      }
      default:
        return this.#wf.answer(op);
    }
  }

  // --------------------------------------------------------------------- reads

  jobGet(params: { id: number }): Promise<Job | null> {
    return this.#exclusive(() => {
      const row = this.#s.jobGet.get({ id: params.id }) as Row | undefined;
      return row ? toJob(row) : null;
    });
  }

  jobsList(params: JobFilter): Promise<Job[]> {
    try {
      checkBounds(params);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!searchesShown(params)) return this.#exclusive(() => this.#list(params));
    // Every raw page inside one #exclusive: in a transaction only the
    // call's own turn holds the connection.
    return this.#exclusive(() => this.#search(new SearchPaging(params)).found);
  }

  /** Drives `paging` through raw listings to its end. */
  #search(paging: SearchPaging): SearchPaging {
    for (let next = paging.next; next !== null; next = paging.next) paging.take(this.#list(next));
    return paging;
  }

  /** The rows of one listing as SQL finds them (a search matches the stored text). */
  #list(params: JobFilter): Job[] {
    const { values, shape } = listValues(params);
    const text = jobsListSql({
      ...shape,
      desc: params.desc ?? false,
      after: params.after !== undefined,
    });
    if (params.after !== undefined) values.after = params.after;
    values.limit = params.limit ?? -1;
    return (this.#listStatement(text).all(values) as Row[]).map(toJob);
  }

  jobsCountMatching(params: JobMatch, options: { atMost?: number } = {}): Promise<number> {
    const atMost = options.atMost;
    try {
      checkBounds({ above: params.above, atMost });
      for (const state of [params.state ?? []].flat()) checkState(state);
    } catch (error) {
      return Promise.reject(error);
    }
    if (countsAnswer(params)) {
      return this.#exclusive(() =>
        Math.min(sumMatching(this.#countRows(), params), atMost ?? Infinity)
      );
    }
    if (searchesShown(params)) {
      return this.#exclusive(() => this.#search(SearchPaging.count(params, atMost)).matched);
    }
    const { values, shape } = listValues(params);
    let text: string;
    try {
      text = jobsCountSql({ ...shape, atMost: atMost !== undefined });
    } catch (error) {
      return Promise.reject(error);
    }
    if (atMost !== undefined) values.atMost = atMost;
    return this.#exclusive(() => {
      const row = this.#listStatement(text).get(values) as Row | undefined;
      return Number(row?.count ?? 0);
    });
  }

  /** The prepared statement of one jobsList shape, prepared on first use. */
  #listStatement(text: string): StatementSync {
    const lists = this.#s.lists;
    let statement = lists.get(text);
    if (statement === undefined) {
      // The shapes in use are few; a caller cycling through many cannot grow this forever.
      if (lists.size >= 256) lists.clear();
      statement = this.db.prepare(text);
      lists.set(text, statement);
    }
    return statement;
  }

  queuesOldestAvailable(params: { queues: string[] }) {
    return this.#exclusive(() =>
      params.queues.flatMap((queue) => {
        const row = this.#s.queueOldestAvailable.get({ queue }) as Row;
        return row.at == null ? [] : [{ queue, scheduledAt: Number(row.at) }];
      })
    );
  }

  jobsCount(params: { queue?: string; state?: JobState }) {
    const state = params.state;
    try {
      if (state !== undefined) checkState(state);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#exclusive(() =>
      this.#countRows()
        .filter((r) =>
          (state === undefined || r.state === state) &&
          (params.queue === undefined || r.queue === params.queue)
        )
        .sort((a, b) => compare(a.queue, b.queue) || compare(a.state, b.state))
    );
  }

  /** Every count that is not zero, from job_counts. */
  #countRows(): { queue: string; state: JobState; count: number }[] {
    return (this.#s.counts.all() as Row[]).map((r) => ({
      queue: String(r.queue),
      state: r.state as JobState,
      count: Number(r.count),
    }));
  }

  jobsThroughput(params: { since: number; until: number; bucketMs: number }) {
    const { since, until, bucketMs } = params;
    for (const [name, value] of Object.entries(params)) {
      if (!Number.isSafeInteger(value)) {
        return Promise.reject(new RangeError(`${name} must be a whole number of ms, got ${value}`));
      }
    }
    if (bucketMs < 1) {
      return Promise.reject(new RangeError(`bucketMs must be at least 1, got ${bucketMs}`));
    }
    if (until < since) {
      return Promise.reject(
        new RangeError(`until must not be before since (${since}), got ${until}`),
      );
    }
    return this.#exclusive(() =>
      (this.#s.jobsThroughput.all({ since, until, bucket: bucketMs }) as Row[]).map((r) => ({
        queue: String(r.queue),
        bucket: Number(r.bucket),
        completed: Number(r.completed),
        failed: Number(r.failed),
      }))
    );
  }

  jobsDeadLetters(params: { limit: number }) {
    if (!Number.isSafeInteger(params.limit) || params.limit < 1) {
      return Promise.reject(
        new RangeError(`limit must be a whole number >= 1, got ${params.limit}`),
      );
    }
    return this.#exclusive(() =>
      (this.#s.jobsDeadLetters.all({ limit: params.limit, scan: DEAD_LETTER_SCAN }) as Row[])
        .map((r) => ({
          worker: String(r.worker),
          scheduleId: r.schedule_id as string | null,
          error: String(r.error),
          count: Number(r.count),
          latestId: Number(r.latest_id),
          latestAt: Number(r.latest_at),
        }))
    );
  }

  attemptsList(params: { jobId: number }): Promise<Attempt[]> {
    return this.#exclusive(() =>
      (this.#s.attemptsList.all({ id: params.jobId }) as Row[]).map(toAttempt)
    );
  }

  workersList(): Promise<string[]> {
    return this.#exclusive(() => (this.#s.workersList.all() as Row[]).map((r) => String(r.worker)));
  }

  // ------------------------------------------------------ queues, nodes, settings

  queuePause(params: { name: string; paused: boolean; now: number }): Promise<void> {
    return this.#exclusive(() => {
      const paused = params.paused ? 1 : 0;
      const { changes } = this.#s.queuePause.run({ name: params.name, paused, now: params.now });
      this.#autocommitted(changes);
    });
  }

  queuesList(): Promise<QueueRow[]> {
    return this.#exclusive(() =>
      (this.#s.queuesList.all() as Row[]).map((r) => ({
        name: String(r.name),
        paused: r.paused === 1,
        concurrency: r.concurrency == null ? null : Number(r.concurrency),
        updatedAt: Number(r.updated_at),
      }))
    );
  }

  nodeBeat(params: {
    node: string;
    queues: Record<string, number>;
    environment?: string | null;
    now: number;
  }): Promise<void> {
    return this.#exclusive(() => {
      const { changes } = this.#s.nodeBeat.run({
        node: params.node,
        queues: JSON.stringify(params.queues),
        environment: params.environment ?? null,
        now: params.now,
      });
      this.#autocommitted(changes, true);
    });
  }

  nodeDelete(params: { node: string }): Promise<void> {
    return this.#exclusive(() => {
      this.#autocommitted(this.#s.nodeDelete.run({ node: params.node }).changes);
    });
  }

  nodesExpire(params: { before: number }): Promise<number> {
    return this.#exclusive(() => {
      const { changes } = this.#s.nodesExpire.run(params);
      this.#autocommitted(changes);
      return Number(changes);
    });
  }

  nodesList(): Promise<NodeRow[]> {
    return this.#exclusive(() =>
      (this.#s.nodesList.all() as Row[]).map((r) => ({
        node: String(r.node),
        queues: JSON.parse(String(r.queues)),
        startedAt: Number(r.started_at),
        heartbeatAt: Number(r.heartbeat_at),
        environment: r.environment == null ? null : String(r.environment),
      }))
    );
  }

  /**
   * The take is one conditional write; in the same write transaction a
   * caller that did not get the role reads who holds it.
   */
  leaderTake(params: { name: string; node: string; now: number; ttlMs: number }): Promise<
    LeaderState
  > {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(takeLeadership(params))));
  }

  leaderRelease(params: { name: string; node: string; fence: number }): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(releaseLeadership(params))));
  }

  leadersList(): Promise<LeaderRow[]> {
    return this.#exclusive(() => (this.#s.leadersList.all() as Row[]).map(toLeaderRow));
  }

  settingGet(params: { key: string }): Promise<unknown> {
    return this.#exclusive(() => {
      const row = this.#s.settingGet.get(params) as Row | undefined;
      return row ? JSON.parse(String(row.value)) : null;
    });
  }

  settingDelete(params: { key: string }): Promise<void> {
    return this.#exclusive(() => {
      this.#autocommitted(this.#s.settingDelete.run({ key: params.key }).changes);
    });
  }

  settingSet(params: { key: string; value: unknown; now: number }): Promise<void> {
    return this.#exclusive(() => {
      const { changes } = this.#s.settingSet.run({
        key: params.key,
        value: JSON.stringify(params.value),
        now: params.now,
      });
      this.#autocommitted(changes);
    });
  }

  // --------------------------------------------------------------------- audit

  auditRecord(params: {
    at: number;
    actor: string;
    action: string;
    target: string;
    reason: string | null;
    details?: Record<string, unknown>;
  }): Promise<void> {
    return this.#exclusive(() =>
      this.#write(() => {
        this.#s.auditRecord.run({ ...params, details: JSON.stringify(params.details ?? {}) });
      })
    );
  }

  auditList(params: { target: string }): Promise<AuditRow[]> {
    return this.#exclusive(() =>
      (this.#s.auditList.all({ target: params.target }) as Row[]).map((r) => ({
        id: Number(r.id),
        at: Number(r.at),
        actor: String(r.actor),
        action: String(r.action),
        target: String(r.target),
        reason: r.reason as string | null,
        details: JSON.parse(String(r.details)),
      }))
    );
  }

  // ----------------------------------------------------------------- schedules

  schedulesSync(params: {
    schedules: { id: string; hash: string; tenant: string | null; definition?: string | null }[];
    complete?: boolean;
    now: number;
  }): Promise<void> {
    if (params.schedules.length === 0 && !params.complete) return Promise.resolve();
    const rows = JSON.stringify(
      params.schedules.map((s) => [s.id, s.tenant, s.hash, s.definition ?? null]),
    );
    return this.#exclusive(() =>
      this.#write(() => {
        if (params.schedules.length > 0) this.#s.schedulesSync.run({ rows, now: params.now });
        if (params.complete) {
          this.#s.schedulesForget.run({ ids: JSON.stringify(params.schedules.map((s) => s.id)) });
        }
      })
    );
  }

  schedulesList(params: { ids?: string[] }): Promise<ScheduleRow[]> {
    return this.#exclusive(() =>
      (this.#s.schedulesList.all({ ids: params.ids ? JSON.stringify(params.ids) : null }) as Row[])
        .map(toScheduleRow)
    );
  }

  schedulesOutcomes(params: { ids?: string[] }): Promise<ScheduleOutcome[]> {
    return this.#exclusive(() => {
      const ids = (this.#s.schedulesList.all({
        ids: params.ids ? JSON.stringify(params.ids) : null,
      }) as Row[]).map((r) => String(r.id));
      const outcomes: ScheduleOutcome[] = [];
      for (const id of ids) {
        const last = this.#s.scheduleLastFinal.get({ id }) as Row | undefined;
        if (!last) continue;
        const completed = this.#s.scheduleLastCompletedFor.get({ id }) as Row | undefined;
        const after = completed ? Number(completed.scheduled_for) : Number.MIN_SAFE_INTEGER;
        const failures = this.#s.scheduleFailuresAfter.get({ id, after }) as Row;
        outcomes.push({
          scheduleId: id,
          lastOutcome: last.state as ScheduleOutcome["lastOutcome"],
          lastOutcomeAt: Number(last.at),
          failures: Number(failures.n),
        });
      }
      return outcomes;
    });
  }

  schedulePlan(params: {
    id: string;
    now: number;
    plan: (ctx: PlanContext) => PlanDecision;
  }): Promise<{ inserted: InsertResult[]; cancelled: number; decision: PlanDecision | null }> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(planSchedule(params))));
  }

  scheduleSetEnabled(params: {
    id: string;
    enabled: boolean;
    reason: string | null;
    actor: string | null;
    now: number;
  }): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#lifecycle(setScheduleEnabled(params))));
  }

  // ------------------------------------------------------------ change wake-ups

  // ------------------------------------------------------------------ workflows

  workflowStart(params: WorkflowStartParams): Promise<{
    id: number;
    duplicate: boolean;
    queues: string[];
  }> {
    return this.#exclusive(() =>
      this.#write(() => {
        const started = this.#lifecycle(startRun(params));
        return { id: started.id, duplicate: started.duplicate, queues: started.queues };
      })
    );
  }

  workflowGet(params: { id: number }): Promise<WorkflowRunDetail | null> {
    return this.#exclusive(() => this.#wf.get(params.id));
  }

  workflowsList(params: WorkflowFilter): Promise<WorkflowRun[]> {
    return this.#exclusive(() => this.#wf.list(params));
  }

  workflowsCount(): Promise<{ workflow: string; state: RunState; count: number }[]> {
    return this.#exclusive(() => this.#wf.count());
  }

  workflowCompensationsCount(): Promise<{ workflow: string; state: string; count: number }[]> {
    return this.#exclusive(() => this.#wf.compensations());
  }

  workflowCancel(params: { id: number; now: number; reason: string }): Promise<
    WorkflowActionResult | null
  > {
    return this.#exclusive(() =>
      this.#write(() =>
        actionResult(this.#lifecycle(cancelRun(params.id, params.reason, params.now)))
      )
    );
  }

  workflowRetry(params: { id: number; now: number }): Promise<WorkflowActionResult | null> {
    return this.#exclusive(() =>
      this.#write(() => actionResult(this.#lifecycle(retryRun(params.id, params.now))))
    );
  }

  workflowsPrune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
  }): Promise<number> {
    return this.#exclusive(() => this.#write(() => this.#wf.prune(params)));
  }

  workflowCursorGet(params: { jobId: number }): Promise<string | null> {
    return this.#exclusive(() => this.#wf.cursorGet(params.jobId));
  }

  workflowCursorSet(params: { jobId: number; fence: number; value: string; now: number }): Promise<
    boolean
  > {
    return this.#exclusive(() => this.#write(() => this.#wf.cursorSet(params)));
  }

  // ------------------------------------------------------------------- ingest

  ingestRunOpen(params: IngestRunOpenParams): Promise<IngestRun | null> {
    return this.#exclusive(() => this.#write(() => this.#ingest.runOpen(params)));
  }

  ingestFailuresGet(params: { pipeline: string; records: string[] }): Promise<Map<string, number>> {
    return this.#exclusive(() => this.#ingest.failuresGet(params));
  }

  ingestChunkCommit(params: IngestChunkCommitParams): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#ingest.chunkCommit(params)));
  }

  ingestRunFinish(params: IngestRunFinishParams): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#ingest.runFinish(params)));
  }

  ingestRunGet(params: { id: number }): Promise<IngestRun | null> {
    return this.#exclusive(() => this.#ingest.runGet(params.id));
  }

  ingestRunByJob(params: { jobId: number }): Promise<IngestRun | null> {
    return this.#exclusive(() => this.#ingest.runByJob(params.jobId));
  }

  ingestRunsList(params: IngestRunFilter): Promise<IngestRun[]> {
    return this.#exclusive(() => this.#ingest.runsList(params));
  }

  ingestSummaries(params: { since: number }): Promise<PipelineSummary[]> {
    return this.#exclusive(() => this.#ingest.summaries(params.since));
  }

  ingestDropsList(params: IngestDropFilter): Promise<IngestDrop[]> {
    return this.#exclusive(() => this.#ingest.dropsList(params));
  }

  ingestDropGet(params: { id: number }): Promise<IngestDropWithRecord | null> {
    return this.#exclusive(() => this.#ingest.dropGet(params.id));
  }

  ingestDropReplayed(params: { id: number; jobId: number; now: number }): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#ingest.dropReplayed(params)));
  }

  ingestDropsPrune(params: IngestDropsPruneParams): Promise<number> {
    return this.#exclusive(() => this.#write(() => this.#ingest.dropsPrune(params)));
  }

  // ------------------------------------------------------------------ reports

  reportRunCreate(
    params: ReportRunCreateParams,
  ): Promise<{ run: ReportRun } | { active: number[] }> {
    return this.#exclusive(() => this.#write(() => this.#reports.create(params)));
  }

  reportRunStart(params: { jobId: number; fence: number; now: number }): Promise<ReportRun | null> {
    return this.#exclusive(() => this.#write(() => this.#reports.start(params)));
  }

  reportRunProgress(
    params: { lease: IngestLease; rows: number; bytes: number; now: number },
  ): Promise<
    boolean
  > {
    return this.#exclusive(() => this.#write(() => this.#reports.progress(params)));
  }

  reportRunFinish(params: ReportRunFinishParams): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#reports.finish(params)));
  }

  reportRunGet(params: { id: number }): Promise<ReportRun | null> {
    return this.#exclusive(() => this.#reports.get(params.id));
  }

  reportRunsList(params: ReportRunFilter): Promise<ReportRun[]> {
    return this.#exclusive(() => this.#reports.list(params));
  }

  reportRunsExpired(params: { now: number; limit: number }): Promise<ReportRun[]> {
    return this.#exclusive(() => this.#reports.expired(params));
  }

  reportRunsEndedBefore(params: { before: number; limit: number }): Promise<ReportRun[]> {
    return this.#exclusive(() => this.#reports.endedBefore(params));
  }

  reportRunDelete(params: { id: number }): Promise<boolean> {
    return this.#exclusive(() => this.#write(() => this.#reports.delete(params.id)));
  }

  onExternalChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#watch === null && !this.#closed && this.location !== ":memory:") {
      this.#watch = new ChangeWatch({
        path: this.location,
        pollMs: this.#options.changePollMs,
        fileCheckMs: this.#options.fileCheckMs,
        // Skip while a caller's transaction holds the connection: it sees no
        // other commits until it ends anyway.
        readVersion: () => this.#held ? null : this.#readDataVersion(),
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

  #readDataVersion(): number {
    const row = this.#s.dataVersion.get() as Row | undefined;
    return Number(row?.data_version ?? 0);
  }

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
  #committed(before: number | null, quiet = false): void {
    if (before !== null && this.#totalChanges() === before) return;
    this.#checkpointer?.committed();
    this.#signal?.committed(quiet);
  }

  /**
   * A write of one statement outside any write transaction (SQLite commits
   * it by itself) changed `changes` rows: signalled as a commit. Inside a
   * caller's transaction its commit does that.
   */
  #autocommitted(changes: number | bigint, quiet = false): void {
    if (this.#inTx || Number(changes) === 0) return;
    this.#committed(null, quiet);
  }

  /**
   * The rows the connection changed since it opened (`total_changes()`),
   * or null before the statements are prepared (a migration: it counts).
   */
  #totalChanges(): number | null {
    const statements = this.#statements;
    return statements === null ? null : Number((statements.totalChanges.get() as Row).n);
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
/** What a workflow action tells its caller: null when there is no such run. */
function actionResult(
  outcome: { was: RunState | null; state: RunState | null; jobs: number[] },
): WorkflowActionResult | null {
  if (outcome.was === null || outcome.state === null) return null;
  return { was: outcome.was, state: outcome.state, jobs: outcome.jobs };
}

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

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
