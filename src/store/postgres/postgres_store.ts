/**
 * The PostgreSQL store: postgres.js (a patched 3.4.9, see `driver.ts`), one
 * pool per store, every table in one schema (`?schema=`, default `public`), and every SQL
 * statement of the PostgreSQL backend, written as tagged templates so that
 * every value is a bound parameter. The one identifier ever spliced into a
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

import postgres from "./driver.ts";
import { reconnectBackoff } from "../../kernel/backoff.ts";
import type {
  Attempt,
  ClaimedJob,
  InsertResult,
  Job,
  JobDefinition,
  JobResult,
  JobState,
  NewJob,
  PlanContext,
  PlanDecision,
  RecordReport,
} from "../../kernel/types.ts";
import { JOB_STATES } from "../../kernel/types.ts";
import type {
  AuditRow,
  JobFilter,
  JobMatch,
  JobsStopParams,
  LeaderRow,
  Lease,
  MigrationReport,
  NodeRow,
  QueueRow,
  ScheduleOutcome,
  ScheduleRow,
  Store,
  StoreTx,
  StoreTxMethods,
  WorkflowActionResult,
  WorkflowFilter,
  WorkflowStartParams,
} from "../store.ts";
import { STORE_TX_METHODS } from "../store.ts";
import { searchesShown, SearchPaging } from "../search.ts";
import {
  isStoreUnreachable,
  SchemaTooNewError,
  SchemaTooOldError,
  StoreLockedError,
  StoreOpenError,
} from "../errors.ts";
import { describeLocation } from "../location.ts";
import * as ingest from "./ingest.ts";
import * as reports from "./reports.ts";
import type { ReportRun } from "../../report/types.ts";
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
import { KNOWN_VERSION, pendingMigrations } from "./migrations.ts";
import {
  escapeLike,
  json,
  type Row,
  toAttempt,
  toClaimed,
  toInsertResult,
  toJob,
  toScheduleRow,
} from "./rows.ts";
import { checkBounds, toHolder, toLeaderRow, toLeasedJob } from "../rows.ts";
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
import type { StoreOp, StoreOps } from "../lifecycle/ops.ts";
import { appendError, clearUnique, type Fragment, runAgain, type Sql } from "./fragments.ts";
import { addCounts, compactCounts, countRows, readCounts } from "./counts.ts";
import { countsAnswer, CountTally, sumMatching } from "../job_counts.ts";
import * as workflows from "./workflows.ts";
import { cancelRun, retryRun, startRun } from "../../workflow/bookkeeping.ts";
import type { RunState, WorkflowRun, WorkflowRunDetail } from "../../workflow/types.ts";

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

/** A schema name this store accepts: it is spliced into SET and CREATE statements. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

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

/** The PostgreSQL implementation of {@linkcode Store}. */
export class PostgresStore implements Store<PostgresTx> {
  readonly kind = "postgres";
  /** The URL without its password. */
  readonly location: string;
  /** The schema holding the tables. */
  readonly schema: string;
  readonly #sql: postgres.Sql;
  /** The LISTEN/NOTIFY channel of this schema's changes. */
  readonly #channel: string;
  #listeners = new Set<() => void>();
  #listening: Promise<{ unlisten(): Promise<void> } | null> | null = null;
  #closed = false;
  /** See {@linkcode PostgresOptions.closeTimeoutS}. */
  readonly #closeTimeoutS: number = 5;
  /** See {@linkcode PostgresOptions.lockTimeoutMs}. */
  readonly #lockTimeoutMs: number;
  /**
   * The open transaction this store is a view of (see `transaction`), else
   * null: a view runs every statement on it, and its `#sql` is it.
   */
  readonly #tx: postgres.TransactionSql | null = null;
  /** The `now` of this store's last fold of the count deltas (see #countsWritten). */
  #compactedAt = -Infinity;

  /**
   * Opens a pool at `url`. `within` is for this module alone: the view of
   * `store` that {@linkcode transaction} runs the {@linkcode StoreTx}
   * methods on, bound to the open transaction `sql` (no pool of its own).
   */
  constructor(
    url: string,
    options: PostgresOptions = {},
    within?: { store: PostgresStore; sql: postgres.TransactionSql },
  ) {
    if (within) {
      this.location = within.store.location;
      this.schema = within.store.schema;
      this.#channel = within.store.#channel;
      this.#tx = within.sql;
      this.#lockTimeoutMs = within.store.#lockTimeoutMs;
      // Only the methods of STORE_TX_METHODS are reached on a view; they
      // begin through #begin, and none listens or ends: queries are all
      // they ask of it.
      this.#sql = within.sql as unknown as postgres.Sql;
      return;
    }
    this.location = redactLocation(url);
    this.#closeTimeoutS = options.closeTimeoutS ?? 5;
    const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    if (!Number.isInteger(lockTimeoutMs) || lockTimeoutMs < 0) {
      throw new StoreOpenError(
        this.location,
        `the lock timeout must be a whole number of ms, got ${JSON.stringify(lockTimeoutMs)}`,
      );
    }
    this.#lockTimeoutMs = lockTimeoutMs;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new StoreOpenError(this.location, "not a postgres:// URL");
    }
    const schema = options.schema ?? parsed.searchParams.get("schema") ?? "public";
    if (!SCHEMA_NAME.test(schema)) {
      throw new StoreOpenError(
        this.location,
        `schema must be lowercase letters, digits and underscores, got ${JSON.stringify(schema)}`,
      );
    }
    this.schema = schema;
    this.#channel = `jobs_${schema}`;
    // postgres.js would send every query parameter as a setting of the
    // session; the schema is ours, not the server's.
    parsed.searchParams.delete("schema");
    const connection: Record<string, string> = {
      search_path: schema,
      application_name: options.applicationName ?? "jobs",
      // A write blocked by another session's lock fails after the bound
      // (see #locked), as SQLite's busy timeout makes it: the runtime then
      // reports the node degraded instead of waiting without a word.
      lock_timeout: String(Math.max(1, lockTimeoutMs)),
    };
    if (options.readOnly) connection.default_transaction_read_only = "on";
    surviveLostSessionStrays();
    this.#sql = postgres(parsed.toString(), {
      max: options.max ?? 10,
      connect_timeout: options.connectTimeoutS ?? 10,
      connection,
      onnotice: () => {},
      transform: { undefined: null },
      backoff: reconnectBackoffS,
    });
  }

  static {
    // Every call of the store, however deep its statement met the lock,
    // fails a lock timeout as what it means: the store is locked.
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
            throw this.#locked(error);
          });
        },
      });
    }
  }

  /**
   * `error`, or for a lock timeout (SQLSTATE 55P03 lock_not_available:
   * "canceling statement due to lock timeout", in the server's language) a
   * {@linkcode StoreLockedError} naming the bound and where the lock was
   * met, with the driver's error as its cause.
   */
  #locked(error: unknown): unknown {
    if (error instanceof StoreLockedError || !(error instanceof Error)) return error;
    const { code, where } = error as { code?: unknown; where?: unknown };
    if (code !== "55P03") return error;
    const detail = typeof where === "string" ? where.split("\n", 1)[0]!.trim() : "";
    return new StoreLockedError(this.location, this.#lockTimeoutMs, detail, { cause: error });
  }

  /** Fails when the database cannot be reached. */
  async ping(): Promise<void> {
    await this.#sql`SELECT 1`;
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
    return await this.#sql.begin(async (tx) => {
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
    return this.#version(this.#sql);
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
    await this.#sql.end({ timeout: this.#closeTimeoutS });
  }

  // -------------------------------------------------------------- transactions

  /**
   * Runs `fn` in one transaction. `tx`'s methods are those of a view of
   * this store bound to the transaction (see the constructor), so each
   * runs its statements on it, its NOTIFYs included (delivered at commit).
   * A call made once `fn` has settled is refused: the connection may be
   * another caller's by then.
   */
  async transaction<T>(fn: (tx: PostgresTx) => Promise<T>): Promise<T> {
    return await this.#sql.begin(async (sql) => {
      let open = true;
      const view = new PostgresStore(this.location, {}, { store: this, sql });
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

  /**
   * Runs `fn` in a transaction of its own; on a transaction's view, on that
   * open transaction instead. PostgreSQL has no nested BEGIN, and needs no
   * savepoint here: a statement that fails aborts the caller's transaction,
   * so the call's other statements roll back with it.
   */
  async #begin<T>(fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
    if (this.#tx) return await fn(this.#tx);
    return await this.#sql.begin(fn) as T;
  }

  /**
   * After a write of count deltas at `now`: folds the deltas into
   * job_counts when this store last did so a second or more before, so a
   * busy store folds about once a second and a count sums a few rows. Not
   * on a transaction's view (it folds in a transaction of its own).
   */
  async #countsWritten(now: number): Promise<void> {
    if (this.#tx || now - this.#compactedAt < COMPACT_EVERY_MS) return;
    this.#compactedAt = now;
    await compactCounts(this.#sql, this.schema);
  }

  /** Tells every listening store that jobs of `queues` became runnable. */
  async #notify(q: Sql, queues: Iterable<string>): Promise<void> {
    const names = [...new Set(queues)];
    if (names.length === 0) return;
    await q`SELECT pg_notify(${this.#channel}, name) FROM unnest(${names}::text[]) AS name`;
  }

  // ------------------------------------------------------------------- inserts

  /**
   * One statement, its own transaction (one round trip for an enqueue): the
   * rows and their queues' notifications commit together. Only the lookup
   * of rows a unique conflict skipped comes after, and it writes nothing.
   */
  async jobsInsert(params: { jobs: NewJob[]; now: number }): Promise<InsertResult[]> {
    if (params.jobs.length === 0) return [];
    const inserted = await this.#insert(this.#sql, params.jobs, params.now);
    await this.#countsWritten(params.now);
    return inserted;
  }

  /**
   * Inserts `jobs` in one statement, which also notifies the queues that got
   * a row. Each row takes its id from the
   * sequence before the insert, so the statement reports, per input row in
   * order, its id and whether it went in; a row skipped by a unique
   * conflict (with an older row or an earlier one of the batch) is then
   * looked up by its occurrence or key.
   */
  async #insert(q: Sql, jobs: NewJob[], now: number): Promise<InsertResult[]> {
    if (jobs.length === 0) return [];
    const rows = JSON.stringify(jobs.map((job, ord) => ({
      ord,
      queue: job.queue,
      worker: job.worker,
      args: job.args,
      meta: job.meta,
      tags: job.tags,
      tenant: job.tenant,
      priority: job.priority,
      max_attempts: job.maxAttempts,
      scheduled_at: job.scheduledAt,
      unique_key: job.uniqueKey,
      unique_states: job.uniqueStates,
      occurrence: job.occurrence,
      schedule_id: job.scheduleId,
      scheduled_for: job.scheduledFor,
    })));
    const results = await q`WITH input AS MATERIALIZED (
        SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id, r.*
        FROM (SELECT * FROM jsonb_to_recordset(${rows}::text::jsonb) AS r(ord integer, queue text,
            worker text, args text, meta text, tags text, tenant text, priority integer,
            max_attempts integer, scheduled_at bigint, unique_key text, unique_states text,
            occurrence text, schedule_id text, scheduled_for bigint)
          ORDER BY ord) AS r),
      ins AS (
        INSERT INTO jobs (id, queue, worker, args, meta, tags, tenant, priority, max_attempts,
          scheduled_at, unique_key, unique_states, occurrence, schedule_id, scheduled_for,
          state, inserted_at)
        SELECT id, queue, worker, args, meta, tags, tenant, priority, max_attempts,
          scheduled_at, unique_key, unique_states, occurrence, schedule_id, scheduled_for,
          CASE WHEN scheduled_at > ${now}::bigint THEN 'scheduled' ELSE 'available' END,
          ${now}::bigint
        FROM input ORDER BY ord
        ON CONFLICT DO NOTHING
        RETURNING id, queue, NULL::text AS was, state),
      counted AS (${countRows(q, "ins")}),
      -- Each queue that got a row, told at commit; read below, so that it runs.
      notified AS (
        SELECT count(pg_notify(${this.#channel}, queue)) AS queues
        FROM (SELECT DISTINCT queue FROM ins) AS q)
      SELECT input.ord, input.id, ins.id IS NOT NULL AS fresh,
        (SELECT queues FROM notified) AS notified
      FROM input LEFT JOIN ins ON ins.id = input.id ORDER BY input.ord`;
    const out: (InsertResult | null)[] = results.map((row) => {
      const job = jobs[Number(row.ord)]!;
      if (!row.fresh) return null;
      const state: JobState = job.scheduledAt > now ? "scheduled" : "available";
      return { id: Number(row.id), duplicate: false, queue: job.queue, state };
    });
    if (out.some((r) => r === null)) {
      const skipped = jobs.filter((_, i) => out[i] === null);
      const occurrences = skipped.flatMap((j) => (j.occurrence === null ? [] : [j.occurrence]));
      const keys = skipped.flatMap((j) => (j.uniqueKey === null ? [] : [j.uniqueKey]));
      const existing = await q`SELECT id, queue, state, occurrence, unique_key FROM jobs
        WHERE occurrence = ANY(${occurrences}::text[]) OR unique_key = ANY(${keys}::text[])`;
      const byOccurrence = new Map(existing.map((r) => [r.occurrence as string | null, r]));
      const byKey = new Map(existing.map((r) => [r.unique_key as string | null, r]));
      for (const [i, job] of jobs.entries()) {
        if (out[i] !== null) continue;
        const row = (job.occurrence !== null ? byOccurrence.get(job.occurrence) : undefined) ??
          (job.uniqueKey !== null ? byKey.get(job.uniqueKey) : undefined);
        if (!row) throw new Error(`insert of a ${job.worker} job conflicted with a vanished row`);
        out[i] = toInsertResult(row, true);
      }
    }
    return out as InsertResult[];
  }

  /**
   * The planner's insert: occurrences already committed are reported as
   * duplicates from a plain read, and only the others are inserted. An
   * insert that met an existing occurrence row a claimer has just locked
   * would wait for that claimer, which in turn waits for the schedule row
   * this planner holds (to set last_started_at): a deadlock. Occurrences
   * not yet committed can only be another planner's, and those wait for
   * the schedule's row before they insert.
   */
  async #insertNewOccurrences(q: Sql, jobs: NewJob[], now: number): Promise<InsertResult[]> {
    const identities = jobs.flatMap((j) => (j.occurrence === null ? [] : [j.occurrence]));
    if (identities.length === 0) return await this.#insert(q, jobs, now);
    const existing = await q`SELECT id, queue, state, occurrence FROM jobs
      WHERE occurrence = ANY(${identities}::text[])`;
    const byOccurrence = new Map(existing.map((r) => [String(r.occurrence), r]));
    const fresh = jobs.filter((j) => j.occurrence === null || !byOccurrence.has(j.occurrence));
    const inserted = await this.#insert(q, fresh, now);
    let next = 0;
    return jobs.map((job) => {
      const row = job.occurrence === null ? undefined : byOccurrence.get(job.occurrence);
      return row ? toInsertResult(row, true) : inserted[next++]!;
    });
  }

  // --------------------------------------------------------- claim and record

  async jobsClaim(params: {
    queue: string;
    node: string;
    limit: number;
    now: number;
    leaseMs: number;
    results?: JobResult[];
    dueBy?: number;
  }): Promise<{ jobs: ClaimedJob[]; report: RecordReport }> {
    const results = params.results ?? [];
    if (results.every(isPlainCompletion)) return await this.#claimAfterCompletions(params, results);
    const claimed = await this.#sql.begin(async (tx) => {
      const counts = new CountTally();
      const report = params.results?.length
        ? await this.#lifecycle(
          tx,
          recordResults({ node: params.node, now: params.now, results: params.results }),
          counts,
        )
        : { recorded: [], lost: [] };
      if (params.limit <= 0) {
        await addCounts(tx, counts);
        return { jobs: [], report };
      }
      const { node, now } = params;
      // The picked ids as an array, not a join: once the table has
      // statistics, a join of a few hundred picked rows is planned as a hash
      // join over a sequential scan of every job, which grows with the table.
      const rows = await tx`WITH picked AS (${pickRunnable(tx, params)})
        UPDATE jobs SET ${takeLease(tx, { node, now, leaseMs: params.leaseMs })}
        WHERE jobs.id = ANY(ARRAY(SELECT id FROM picked))
        RETURNING jobs.id, queue, worker, args, meta, tags, occurrence, attempt, max_attempts,
          priority, fence, inserted_at, scheduled_at, attempted_at, schedule_id`;
      counts.move(params.queue, "available", "executing", rows.length);
      await addCounts(tx, counts);
      // RETURNING has no order of its own: hand them out in claim order.
      const jobs = rows.map(toClaimed).sort((a, b) =>
        a.priority - b.priority || a.scheduledAt - b.scheduledAt || a.id - b.id
      );
      // A schedule's claimed occurrences start it.
      const occurrences = rows.filter((r) => r.schedule_id != null).map((r) => Number(r.id));
      if (occurrences.length > 0) {
        await tx`UPDATE schedules
          SET last_started_at = greatest(coalesce(last_started_at, 0), ${now}::bigint)
          FROM ${schedulesOf(tx, occurrences)} WHERE schedules.id = s.id`;
      }
      return { jobs, report };
    });
    await this.#countsWritten(params.now);
    return claimed;
  }

  /**
   * The busy queue's batch in one statement, so one round trip and one
   * commit of its own: completions of plain jobs (the results of no-op to
   * ordinary workers, nearly every batch) and the next claim. Each CTE is a
   * statement of {@linkcode jobsClaim}'s transaction, in its order: the
   * completions fenced per row, their attempts, the claim `FOR UPDATE SKIP
   * LOCKED`, and the claimed occurrences' schedules locked in id order.
   * The claim and the completions touch disjoint rows (available,
   * executing), so the one snapshot they share changes nothing; a row an
   * operator changed meanwhile is re-checked against its newest version as
   * in separate statements.
   *
   * No step joins two row sets: the completions are found by id and their
   * values looked up in one JSON object ({@linkcode leaseMap}), the claimed
   * rows updated by an array of ids. A join's plan follows the statistics:
   * estimating one executing row for a node it has never seen, PostgreSQL
   * joined each executing row to every result (500 x 500 comparisons, 100
   * ms a batch), and once the table had statistics it joined the picked
   * rows by a sequential scan of every job.
   */
  async #claimAfterCompletions(
    params: {
      queue: string;
      node: string;
      limit: number;
      now: number;
      leaseMs: number;
      dueBy?: number;
    },
    results: JobResult[],
  ): Promise<{ jobs: ClaimedJob[]; report: RecordReport }> {
    const { node, now } = params;
    if (results.length === 0 && params.limit <= 0) {
      return { jobs: [], report: { recorded: [], lost: [] } };
    }
    const q = this.#sql;
    const { ids, leases } = leaseMap(results);
    // Only the parts the call needs: each costs planning time (a claim on an
    // idle queue is on the path from enqueue to start).
    // MATERIALIZED: the JSON is parsed once, not once per row it is read for.
    const finish = results.length > 0
      ? q`input AS MATERIALIZED (SELECT ${leases}::text::jsonb AS m),
        done AS (
          UPDATE jobs SET state = 'completed', completed_at = ${now}::bigint,
            lease_expires_at = NULL, ${clearUnique(q)}
          FROM input
          WHERE jobs.id = ANY(${ids}::bigint[]) AND jobs.state = 'executing'
            AND jobs.attempted_by = ${node}
            AND jobs.fence = (input.m -> jobs.id::text ->> 0)::bigint
          RETURNING jobs.id, jobs.fence, input.m -> jobs.id::text AS v, jobs.queue,
            'executing'::text AS was, 'completed'::text AS state),
        done_counted AS (${countRows(q, "done")}),
        written AS (
          INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
            started_at, finished_at, outcome, error, output, definition)
          SELECT d.id, (d.v ->> 1)::integer, d.fence, ${node},
            CASE WHEN p.job_id IS NOT NULL THEN 'replay'
              WHEN (d.v ->> 1)::integer > 1 THEN 'retry' ELSE 'run' END,
            p.actor, p.reason, (d.v ->> 2)::bigint, ${now}::bigint, 'completed', NULL,
            d.v ->> 3, d.v ->> 4
          FROM done AS d LEFT JOIN replays AS p ON p.job_id = d.id AND p.after < d.fence)`
      : null;
    const claim = params.limit > 0
      ? q`picked AS (${pickRunnable(q, params)}),
        claimed AS (
          UPDATE jobs SET ${takeLease(q, { node, now, leaseMs: params.leaseMs })}
          WHERE jobs.id = ANY(ARRAY(SELECT id FROM picked))
          RETURNING jobs.id, queue, worker, args, meta, tags, occurrence, attempt, max_attempts,
            priority, fence, inserted_at, scheduled_at, attempted_at, schedule_id,
            'available'::text AS was, 'executing'::text AS state),
        claim_counted AS (${countRows(q, "claimed")}),
        started AS (
          UPDATE schedules
          SET last_started_at = greatest(coalesce(last_started_at, 0), ${now}::bigint)
          FROM (SELECT id FROM schedules
            WHERE id IN (SELECT schedule_id FROM claimed WHERE occurrence IS NOT NULL)
            ORDER BY id FOR UPDATE) AS s
          WHERE schedules.id = s.id)`
      : null;
    const claimedRows = q`SELECT true AS claimed, id, queue, worker, args, meta, tags,
        occurrence, attempt, max_attempts, priority, fence, inserted_at, scheduled_at,
        attempted_at
      FROM claimed`;
    const rows = finish && claim
      ? await q`WITH ${finish}, ${claim}
        ${claimedRows}
        UNION ALL SELECT false, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
          NULL, NULL, NULL
        FROM done`
      : finish
      ? await q`WITH ${finish} SELECT false AS claimed, id FROM done`
      : await q`WITH ${claim!} ${claimedRows}`;
    const jobs: ClaimedJob[] = [];
    const written = new Set<number>();
    for (const row of rows) {
      if (row.claimed) jobs.push(toClaimed(row));
      else written.add(Number(row.id));
    }
    // RETURNING has no order of its own: hand them out in claim order.
    jobs.sort((a, b) => a.priority - b.priority || a.scheduledAt - b.scheduledAt || a.id - b.id);
    const report: RecordReport = { recorded: [], lost: [] };
    for (const r of results) (written.has(r.id) ? report.recorded : report.lost).push(r.id);
    await this.#countsWritten(params.now);
    return { jobs, report };
  }

  async jobsRecord(
    params: { node: string; now: number; results: JobResult[] },
  ): Promise<RecordReport> {
    if (params.results.length === 0) return { recorded: [], lost: [] };
    if (params.results.every(isPlainCompletion)) {
      const { report } = await this.#claimAfterCompletions(
        { queue: "", node: params.node, limit: 0, now: params.now, leaseMs: 0 },
        params.results,
      );
      return report;
    }
    const report = await this.#sql.begin(async (tx) => {
      return await this.#lifecycle(tx, recordResults(params));
    });
    await this.#countsWritten(params.now);
    return report;
  }

  async jobsRelease(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
    if (params.leases.length === 0) return [];
    const q = this.#sql;
    const rows = await q`WITH released AS (
        UPDATE jobs SET state = 'available', attempt = attempt - 1, lease_expires_at = NULL
        FROM ${leaseSet(q, params.leases)}
        WHERE jobs.id = l.id AND jobs.state = 'executing' AND jobs.attempted_by = ${params.node}
          AND jobs.fence = l.fence
        RETURNING jobs.id, jobs.queue, 'executing'::text AS was, jobs.state),
      counted AS (${countRows(q, "released")})
      SELECT id, queue FROM released`;
    await this.#notify(this.#sql, rows.map((r) => String(r.queue)));
    const ids = new Set(rows.map((r) => Number(r.id)));
    return params.leases.filter((l) => ids.has(l.id));
  }

  async jobsRenew(params: {
    node: string;
    leases: Lease[];
    now: number;
    leaseMs: number;
  }): Promise<{ lost: Lease[] }> {
    if (params.leases.length === 0) return { lost: [] };
    const rows = await this.#sql`UPDATE jobs
      SET lease_expires_at = ${params.now + params.leaseMs}::bigint
      FROM ${leaseSet(this.#sql, params.leases)}
      WHERE jobs.id = l.id AND jobs.state = 'executing' AND jobs.attempted_by = ${params.node}
        AND jobs.fence = l.fence
      RETURNING jobs.id, jobs.fence`;
    const held = new Set(rows.map((r) => `${r.id}:${r.fence}`));
    return { lost: params.leases.filter((l) => !held.has(`${l.id}:${l.fence}`)) };
  }

  async jobsLeasesLost(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
    if (params.leases.length === 0) return [];
    const rows = await this.#sql`SELECT jobs.id, jobs.fence
      FROM jobs JOIN ${leaseSet(this.#sql, params.leases)}
        ON jobs.id = l.id AND jobs.fence = l.fence
      WHERE jobs.state = 'executing' AND jobs.attempted_by = ${params.node}`;
    const held = new Set(rows.map((r) => `${r.id}:${r.fence}`));
    return params.leases.filter((l) => !held.has(`${l.id}:${l.fence}`));
  }

  // ---------------------------------------------------------------- maintenance

  async jobsStage(params: { now: number; limit: number }) {
    const staged = await this.#sql.begin((tx) => this.#lifecycle(tx, stageJobs(params)));
    await this.#countsWritten(params.now);
    return staged;
  }

  async jobsRescue(params: { now: number; limit: number }) {
    return await this.#sql.begin((tx) => this.#lifecycle(tx, rescueJobs(params)));
  }

  async jobsPrune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
    except?: string[];
  }): Promise<number> {
    return await this.#sql.begin((tx) => this.#lifecycle(tx, pruneJobs(params)));
  }

  async jobsPruneSchedule(
    params: { scheduleId: string; before: number; limit: number },
  ): Promise<number> {
    return await this.#sql.begin((tx) => this.#lifecycle(tx, pruneScheduleJobs(params)));
  }

  async jobsPrunable(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    schedules?: { scheduleId: string; before: number }[];
  }): Promise<number> {
    const schedules = JSON.stringify(
      (params.schedules ?? []).map((s) => ({ id: s.scheduleId, before: s.before })),
    );
    const { completed = null, cancelled = null, discarded = null } = params.before;
    const [row] = await this.#sql`SELECT count(*) AS count FROM jobs
      LEFT JOIN jsonb_to_recordset(${schedules}::text::jsonb) AS own(id text, before bigint)
        ON own.id = jobs.schedule_id
      WHERE state IN ('completed', 'cancelled', 'discarded')
        AND CASE WHEN own.id IS NOT NULL
          THEN coalesce(completed_at, cancelled_at, discarded_at) < own.before
          ELSE (state = 'completed' AND completed_at < ${completed}::bigint)
            OR (state = 'cancelled' AND cancelled_at < ${cancelled}::bigint)
            OR (state = 'discarded' AND discarded_at < ${discarded}::bigint) END`;
    return Number(row?.count ?? 0);
  }

  jobsCancel(params: JobsStopParams): Promise<number[]> {
    return this.#begin((tx) => this.#lifecycle(tx, stopJobs("cancelled", params)));
  }

  jobsDiscard(params: JobsStopParams): Promise<number[]> {
    return this.#begin((tx) => this.#lifecycle(tx, stopJobs("discarded", params)));
  }

  async jobsRetry(params: {
    ids: number[];
    now: number;
    definitions?: ReadonlyMap<number, JobDefinition>;
  }): Promise<number[]> {
    return await this.#begin((tx) => this.#lifecycle(tx, retryJobs(params)));
  }

  async jobReplay(params: {
    id: number;
    now: number;
    actor: string;
    reason: string;
    force: boolean;
    definition?: JobDefinition;
  }): Promise<{ replayed: boolean; was: JobState } | null> {
    return await this.#begin((tx) => this.#lifecycle(tx, replayJob(params)));
  }

  /**
   * Runs the shared lifecycle's ops (src/store/lifecycle/) on `q` (an open
   * transaction, or the pool for ops that need none), pipelining those
   * that answer nothing; the moves of jobs go to `counts`, or, when the
   * caller gives none, to the counts before the call returns.
   */
  async #lifecycle<R>(q: Sql, ops: StoreOps<R>, counts?: CountTally): Promise<R> {
    const tally = counts ?? new CountTally();
    const parts: workflows.StoreParts = {
      insert: (sql, jobs, now) => this.#insert(sql, jobs, now),
      notify: (sql, queues) => this.#notify(sql, queues),
    };
    const result = await workflows.pipelined(
      ops,
      (op) => this.#answer(q, op, tally, parts),
      (op) => LIFECYCLE_WRITES.has(op.op) || workflows.isPipelinedWrite(op),
    );
    if (!counts) await addCounts(q, tally);
    return result;
  }

  /** Answers one of the shared lifecycle's ops, one statement each. */
  async #answer(
    q: Sql,
    op: StoreOp,
    counts: CountTally,
    parts: workflows.StoreParts,
  ): Promise<unknown> {
    switch (op.op) {
      case "scheduleLock": {
        // Planners of the same schedule on other connections wait here until
        // this transaction ends, then read what it wrote.
        const [row] = await q`SELECT enabled, last_planned_for FROM schedules
          WHERE id = ${op.id} FOR UPDATE`;
        if (!row) return null;
        const plannedFor = row.last_planned_for;
        return {
          enabled: row.enabled === true,
          lastPlannedFor: plannedFor == null ? null : Number(plannedFor),
        };
      }
      case "scheduleActive": {
        const [active] = await q`SELECT count(*) FILTER (WHERE state = 'executing') AS executing,
            count(*) FILTER (WHERE state <> 'executing') AS waiting
          FROM jobs WHERE schedule_id = ${op.id}
            AND state IN ('scheduled', 'available', 'executing', 'retryable')`;
        return {
          executing: Number(active?.executing ?? 0),
          waiting: Number(active?.waiting ?? 0),
        };
      }
      case "occurrencesInsert":
        return await this.#insertNewOccurrences(q, op.jobs, op.now);
      case "scheduleAdvance":
        await q`UPDATE schedules SET
            last_planned_for = coalesce(${op.plannedFor}::bigint, last_planned_for),
            misfires = misfires + ${op.misfires}::integer,
            last_misfire_for = coalesce(${op.lastMisfireFor}::bigint, last_misfire_for),
            updated_at = ${op.now}::bigint
          WHERE id = ${op.id}`;
        return undefined;
      case "scheduleSet": {
        const result = await q`UPDATE schedules SET enabled = ${op.enabled}::boolean,
            disabled_reason = ${op.reason}::text, disabled_by = ${op.actor}::text,
            disabled_at = ${op.at}::bigint, updated_at = ${op.now}::bigint
          WHERE id = ${op.id}`;
        return result.count !== 0;
      }
      case "leaderTake": {
        const { name, node, now, expiresAt } = op;
        const [taken] = await q`INSERT INTO leaders AS l
            (name, node, fence, expires_at, acquired_at)
          VALUES (${name}, ${node}, 1, ${expiresAt}::bigint, ${now}::bigint)
          ON CONFLICT (name) DO UPDATE SET
            fence = CASE WHEN l.node = excluded.node AND l.expires_at > ${now}::bigint
              THEN l.fence ELSE l.fence + 1 END,
            acquired_at = CASE WHEN l.node = excluded.node AND l.expires_at > ${now}::bigint
              THEN l.acquired_at ELSE excluded.acquired_at END,
            node = excluded.node,
            expires_at = excluded.expires_at
          WHERE l.node IS NULL OR l.node = excluded.node OR l.expires_at <= ${now}::bigint
          RETURNING node, fence, expires_at`;
        return taken ? toHolder(taken) : null;
      }
      case "leaderGet": {
        const [holder] = await q`SELECT node, fence, expires_at FROM leaders
          WHERE name = ${op.name}`;
        return holder ? toHolder(holder) : null;
      }
      case "leaderRelease": {
        const result = await q`UPDATE leaders SET node = NULL
          WHERE name = ${op.name} AND node = ${op.node} AND fence = ${op.fence}::bigint`;
        return result.count !== 0;
      }
      case "jobsExpired": {
        const rows =
          await q`SELECT id, state, queue, attempt, max_attempts, fence, attempted_by, attempted_at FROM jobs
          WHERE state = 'executing' AND lease_expires_at < ${op.now}::bigint
          ORDER BY lease_expires_at LIMIT ${op.limit}::bigint
          FOR UPDATE SKIP LOCKED`;
        return rows.map(toLeasedJob);
      }
      case "jobsLock": {
        const rows =
          await q`SELECT id, state, queue, attempt, max_attempts, fence, attempted_by, attempted_at FROM jobs
          WHERE id = ANY(${op.ids}::bigint[]) ORDER BY id FOR UPDATE`;
        return rows.map(toLeasedJob);
      }
      case "runsLockOfJobs":
        // Runs before jobs, as the record path locks them.
        await q`SELECT id FROM workflow_runs WHERE id IN (
            SELECT run_id FROM workflow_steps WHERE job_id = ANY(${op.jobIds}::bigint[]))
          ORDER BY id FOR UPDATE`;
        return undefined;
      case "runsLock":
        await workflows.lockRuns(q, op.runIds);
        return undefined;
      case "jobLeaseEnd": {
        const { lease, to, now, error } = op;
        const [row] = await q`UPDATE jobs SET state = ${to}::text,
            discarded_at = CASE WHEN ${to}::text = 'discarded' THEN ${now}::bigint END,
            unique_key = CASE WHEN ${to}::text = 'available' OR unique_states = 'all'
              THEN unique_key END,
            lease_expires_at = NULL, ${appendError(q, now, error)}
          WHERE ${leaseHeld(q, lease)}
          RETURNING id`;
        return row !== undefined;
      }
      case "jobsComplete": {
        // By id (in id order, as an operator's cancel or discard locks them), each
        // fence looked up in one JSON object: a join with the results would be
        // planned from estimates, and once planned as a hash join it compared
        // every executing row with every result (see #claimAfterCompletions).
        const { ids, leases } = leaseMap(op.results);
        const rows = await q`UPDATE jobs SET state = 'completed', completed_at = ${op.now}::bigint,
            lease_expires_at = NULL, ${clearUnique(q)}
          FROM (SELECT ${leases}::text::jsonb AS m) AS input
          WHERE jobs.id = ANY(${ids}::bigint[]) AND jobs.state = 'executing'
            AND jobs.attempted_by = ${op.node}
            AND jobs.fence = (input.m -> jobs.id::text ->> 0)::bigint
          RETURNING jobs.id, jobs.queue`;
        return rows.map((row) => ({ id: Number(row.id), queue: String(row.queue) }));
      }
      case "jobRecord": {
        const { result: r, now } = op;
        const held = leaseHeld(q, { id: r.id, node: op.node, fence: r.fence });
        let rows: Row[];
        switch (r.outcome) {
          case "snoozed":
            rows = await q`UPDATE jobs SET
                state = CASE WHEN ${r.until}::bigint > ${now}::bigint
                  THEN 'scheduled' ELSE 'available' END,
                scheduled_at = ${r.until}::bigint, attempt = attempt - 1, lease_expires_at = NULL
              WHERE ${held} RETURNING queue, state`;
            break;
          case "retryable":
            rows = await q`UPDATE jobs SET state = 'retryable', scheduled_at = ${r.at}::bigint,
                lease_expires_at = NULL, ${appendError(q, now, r.error)}
              WHERE ${held} RETURNING queue, state`;
            break;
          case "cancelled":
            rows = await q`UPDATE jobs SET state = 'cancelled', cancelled_at = ${now}::bigint,
                lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, r.error)}
              WHERE ${held} RETURNING queue, state`;
            break;
          case "discarded":
            rows = await q`UPDATE jobs SET state = 'discarded', discarded_at = ${now}::bigint,
                lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, r.error)}
              WHERE ${held} RETURNING queue, state`;
            break;
        }
        const [row] = rows;
        return row ? { queue: String(row.queue), state: row.state as JobState } : null;
      }
      case "attemptsInsert": {
        const rows = JSON.stringify(op.results.map((r) => ({
          id: r.id,
          attempt: r.attempt,
          fence: r.fence,
          started_at: r.startedAt,
          outcome: r.outcome,
          error: "error" in r ? r.error : null,
          output: r.output ?? null,
          definition: r.definition ?? null,
        })));
        await q`INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
            started_at, finished_at, outcome, error, output, definition)
          SELECT v.id, v.attempt, v.fence, ${op.node},
            CASE WHEN p.job_id IS NOT NULL THEN 'replay' WHEN v.attempt > 1 THEN 'retry'
              ELSE 'run' END,
            p.actor, p.reason, v.started_at, ${op.now}::bigint, v.outcome, v.error, v.output,
            v.definition
          FROM jsonb_to_recordset(${rows}::text::jsonb) AS v(id bigint, attempt integer,
              fence bigint, started_at bigint, outcome text, error text, output text,
              definition text)
            LEFT JOIN replays AS p ON p.job_id = v.id AND p.after < v.fence`;
        return undefined;
      }
      case "attemptEnd": {
        const { job, now } = op;
        const started = job.attemptedAt ?? now;
        await q`INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
            started_at, finished_at, outcome, error, definition)
          SELECT ${job.id}::bigint, ${job.attempt}::integer, ${job.fence}::bigint,
            ${job.attemptedBy}::text,
            CASE WHEN p.job_id IS NOT NULL THEN 'replay'
              WHEN ${job.attempt}::integer > 1 THEN 'retry' ELSE 'run' END,
            p.actor, p.reason, ${started}::bigint, ${now}::bigint, ${op.outcome}::text,
            ${op.error}::text,
            (SELECT meta::jsonb ->> 'definition' FROM jobs WHERE id = ${job.id}::bigint)
          FROM (SELECT 1) AS one
            LEFT JOIN replays AS p ON p.job_id = ${job.id}::bigint
              AND p.after < ${job.fence}::bigint`;
        return undefined;
      }
      case "schedulesCompleted":
        await q`UPDATE schedules
          SET last_completed_at = greatest(coalesce(last_completed_at, 0), ${op.now}::bigint)
          FROM ${schedulesOf(q, op.jobIds)} WHERE schedules.id = s.id`;
        return undefined;
      case "jobStop": {
        const { id, now, error } = op;
        const [changed] = op.to === "cancelled"
          ? await q`UPDATE jobs SET state = 'cancelled', cancelled_at = ${now}::bigint,
              lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, error)}
            WHERE id = ${id}::bigint AND state IN ${notFinal(q)} RETURNING id`
          : await q`UPDATE jobs SET state = 'discarded', discarded_at = ${now}::bigint,
              lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, error)}
            WHERE id = ${id}::bigint AND state IN ${notFinal(q)} RETURNING id`;
        return changed !== undefined;
      }
      case "jobRunAgain": {
        const [row] = await q`UPDATE jobs SET ${runAgain(q, op.now)}
          WHERE id = ${op.id}::bigint AND state = ANY(${op.from as JobState[]}::text[])
          RETURNING queue, fence`;
        return row ? { queue: String(row.queue), fence: Number(row.fence) } : null;
      }
      case "jobRedefine": {
        const d = op.definition;
        // Keeps the extra attempt the retry or replay allowed.
        await q`UPDATE jobs SET worker = ${d.worker}, args = ${d.args}, meta = ${d.meta},
            tags = ${d.tags}, queue = ${d.queue}, priority = ${d.priority}::integer,
            max_attempts = greatest(${d.maxAttempts}::integer, attempt + 1)
          WHERE id = ${op.id}::bigint`;
        return undefined;
      }
      case "replayPending":
        await q`INSERT INTO replays (job_id, after, actor, reason, at)
          VALUES (${op.id}::bigint, ${op.after}::bigint, ${op.actor}, ${op.reason},
            ${op.now}::bigint)
          ON CONFLICT (job_id) DO UPDATE SET after = excluded.after, actor = excluded.actor,
            reason = excluded.reason, at = excluded.at`;
        return undefined;
      case "jobsStage": {
        // The state each due job leaves is read as it is locked: the newest.
        const rows = await q`WITH due AS (
            SELECT id, state FROM jobs
            WHERE state IN ('scheduled', 'retryable') AND scheduled_at <= ${op.now}::bigint
            ORDER BY scheduled_at LIMIT ${op.limit}::bigint
            FOR UPDATE SKIP LOCKED)
          UPDATE jobs SET state = 'available' FROM due WHERE jobs.id = due.id
          RETURNING jobs.id, jobs.queue, due.state AS was`;
        return rows.map((r) => ({
          id: Number(r.id),
          queue: String(r.queue),
          was: r.was as JobState,
        }));
      }
      case "nextDue": {
        const [next] = await q`SELECT min(scheduled_at) AS at FROM jobs
          WHERE state IN ('scheduled', 'retryable')`;
        return next?.at == null ? null : Number(next.at);
      }
      case "jobsDelete": {
        const { target, limit } = op;
        let rows: Row[];
        if ("state" in target) {
          const at = finalAt(q, target.state);
          rows = await q`DELETE FROM jobs WHERE id IN (
              SELECT id FROM jobs WHERE state = ${target.state} AND ${at} < ${target.before}::bigint
                AND (schedule_id IS NULL OR NOT (schedule_id = ANY(${target.except}::text[])))
              ORDER BY ${at} LIMIT ${limit}::bigint
              FOR UPDATE SKIP LOCKED)
            RETURNING id, queue, state`;
        } else {
          rows = await q`DELETE FROM jobs WHERE id IN (
              SELECT id FROM jobs
              WHERE schedule_id = ${target.scheduleId}
                AND state IN ('completed', 'cancelled', 'discarded')
                AND coalesce(completed_at, cancelled_at, discarded_at) < ${target.before}::bigint
              ORDER BY scheduled_for LIMIT ${limit}::bigint
              FOR UPDATE SKIP LOCKED)
            RETURNING id, queue, state`;
        }
        return rows.map((r) => ({
          id: Number(r.id),
          queue: String(r.queue),
          state: r.state as JobState,
        }));
      }
      case "attemptsDelete":
        await q`DELETE FROM attempts WHERE job_id = ANY(${op.jobIds}::bigint[])`;
        await q`DELETE FROM replays WHERE job_id = ANY(${op.jobIds}::bigint[])`;
        return undefined;
      case "countsMove":
        for (const m of op.moves) {
          counts.add(m.queue, m.from, -1);
          if (m.to !== null) counts.add(m.toQueue ?? m.queue, m.to, 1);
        }
        return undefined;
      case "wake":
        await this.#notify(q, op.queues);
        return undefined;
      default:
        return await workflows.answerOp(q, op, parts);
    }
  }

  // --------------------------------------------------------------------- reads

  async jobGet(params: { id: number }): Promise<Job | null> {
    if (!Number.isSafeInteger(params.id)) return null;
    const [row] = await this.#sql`SELECT * FROM jobs WHERE id = ${params.id}::bigint`;
    return row ? toJob(row) : null;
  }

  async jobsList(params: JobFilter): Promise<Job[]> {
    checkBounds(params);
    if (!searchesShown(params)) return await this.#list(params);
    return (await this.#search(new SearchPaging(params))).found;
  }

  /** Drives `paging` through raw listings to its end. */
  async #search(paging: SearchPaging): Promise<SearchPaging> {
    for (let next = paging.next; next !== null; next = paging.next) {
      paging.take(await this.#list(next));
    }
    return paging;
  }

  /** The rows of one listing as SQL finds them (a search matches the stored text). */
  async #list(params: JobFilter): Promise<Job[]> {
    const q = this.#sql;
    const conditions = listConditions(q, params);
    const desc = params.desc ?? false;
    if (params.after !== undefined) {
      conditions.push(desc ? q`id < ${params.after}::bigint` : q`id > ${params.after}::bigint`);
    }
    const order = desc ? q`ORDER BY id DESC` : q`ORDER BY id`;
    const rows = await q`SELECT * FROM jobs WHERE ${and(q, conditions)} ${order}
      LIMIT ${params.limit ?? null}::bigint`;
    return rows.map(toJob);
  }

  async jobsCountMatching(params: JobMatch, options: { atMost?: number } = {}): Promise<number> {
    const atMost = options.atMost;
    checkBounds({ above: params.above, atMost });
    for (const state of [params.state ?? []].flat()) checkState(state);
    if (countsAnswer(params)) {
      return Math.min(sumMatching(await readCounts(this.#sql), params), atMost ?? Infinity);
    }
    if (searchesShown(params)) {
      return (await this.#search(SearchPaging.count(params, atMost))).matched;
    }
    const q = this.#sql;
    const where = and(q, listConditions(q, params));
    const [row] = atMost === undefined
      ? await q`SELECT count(*) AS count FROM jobs WHERE ${where}`
      : await q`SELECT count(*) AS count FROM (
          SELECT 1 FROM jobs WHERE ${where} LIMIT ${atMost}::bigint) AS m`;
    return Number(row?.count ?? 0);
  }

  async queuesOldestAvailable(params: { queues: string[] }) {
    // One seek of jobs_available per priority (0-9, see clampPriority): the
    // index leads with (queue, priority), so min() over a whole queue would
    // read every available row of it.
    const rows = await this.#sql`SELECT q.queue, min(o.at) AS at
      FROM unnest(${params.queues}::text[]) AS q(queue)
      CROSS JOIN generate_series(0, 9) AS p(priority)
      CROSS JOIN LATERAL (SELECT scheduled_at AS at FROM jobs
        WHERE state = 'available' AND queue = q.queue AND priority = p.priority
        ORDER BY scheduled_at LIMIT 1) AS o
      GROUP BY q.queue ORDER BY q.queue COLLATE "C"`;
    return rows.map((r) => ({ queue: String(r.queue), scheduledAt: Number(r.at) }));
  }

  async jobsCount(params: { queue?: string; state?: JobState }) {
    const state = params.state ?? null;
    if (state !== null) checkState(state);
    return (await readCounts(this.#sql))
      .filter((r) =>
        (state === null || r.state === state) &&
        (params.queue === undefined || r.queue === params.queue)
      )
      .sort((a, b) => compare(a.queue, b.queue) || compare(a.state, b.state));
  }

  async jobsThroughput(params: { since: number; until: number; bucketMs: number }) {
    const { since, until, bucketMs } = params;
    for (const [name, value] of Object.entries(params)) {
      if (!Number.isSafeInteger(value)) {
        throw new RangeError(`${name} must be a whole number of ms, got ${value}`);
      }
    }
    if (bucketMs < 1) throw new RangeError(`bucketMs must be at least 1, got ${bucketMs}`);
    if (until < since) {
      throw new RangeError(`until must not be before since (${since}), got ${until}`);
    }
    // A bucket is named by its start, since + k * bucketMs.
    const rows = await this.#sql`SELECT queue, bucket, sum(completed) AS completed,
        sum(failed) AS failed
      FROM (
        SELECT queue,
          ${since}::bigint + ((completed_at - ${since}::bigint) / ${bucketMs}::bigint)
            * ${bucketMs}::bigint AS bucket,
          count(*) AS completed, 0::bigint AS failed
        FROM jobs WHERE state = 'completed'
          AND completed_at >= ${since}::bigint AND completed_at < ${until}::bigint
        GROUP BY 1, 2
        UNION ALL
        SELECT j.queue,
          ${since}::bigint + ((a.finished_at - ${since}::bigint) / ${bucketMs}::bigint)
            * ${bucketMs}::bigint,
          0, count(*)
        FROM attempts AS a JOIN jobs AS j ON j.id = a.job_id
        WHERE a.outcome IN ('retryable', 'discarded')
          AND a.finished_at >= ${since}::bigint AND a.finished_at < ${until}::bigint
        GROUP BY 1, 2) AS t
      GROUP BY queue, bucket ORDER BY queue COLLATE "C", bucket`;
    return rows.map((r) => ({
      queue: String(r.queue),
      bucket: Number(r.bucket),
      completed: Number(r.completed),
      failed: Number(r.failed),
    }));
  }

  async jobsDeadLetters(params: { limit: number }) {
    if (!Number.isSafeInteger(params.limit) || params.limit < 1) {
      throw new RangeError(`limit must be a whole number >= 1, got ${params.limit}`);
    }
    // The newest DEAD_LETTER_SCAN discarded jobs, grouped by worker, schedule
    // and the first line of their last error.
    const rows = await this.#sql`SELECT worker, schedule_id, error, count(*) AS count,
        max(discarded_at) AS latest_at,
        (array_agg(id ORDER BY discarded_at DESC, id DESC))[1] AS latest_id
      FROM (
        SELECT id, worker, schedule_id, discarded_at,
          split_part(coalesce(errors -> -1 ->> 'error', ''), chr(10), 1) AS error
        FROM jobs WHERE state = 'discarded'
        ORDER BY discarded_at DESC LIMIT ${DEAD_LETTER_SCAN}::bigint) AS d
      GROUP BY worker, schedule_id, error
      ORDER BY count DESC, latest_at DESC, latest_id DESC
      LIMIT ${params.limit}::bigint`;
    return rows.map((r) => ({
      worker: String(r.worker),
      scheduleId: r.schedule_id as string | null,
      error: String(r.error),
      count: Number(r.count),
      latestId: Number(r.latest_id),
      latestAt: Number(r.latest_at),
    }));
  }

  async attemptsList(params: { jobId: number }): Promise<Attempt[]> {
    const rows = await this.#sql`SELECT * FROM attempts WHERE job_id = ${params.jobId}::bigint
      ORDER BY fence`;
    return rows.map(toAttempt);
  }

  async workersList(): Promise<string[]> {
    const rows = await this.#sql`SELECT DISTINCT worker COLLATE "C" AS worker FROM jobs
      ORDER BY 1`;
    return rows.map((r) => String(r.worker));
  }

  // ------------------------------------------------------ queues, nodes, settings

  async queuePause(params: { name: string; paused: boolean; now: number }): Promise<void> {
    await this.#begin(async (tx) => {
      await tx`INSERT INTO queues (name, paused, updated_at)
        VALUES (${params.name}, ${params.paused}::boolean, ${params.now}::bigint)
        ON CONFLICT (name) DO UPDATE SET paused = excluded.paused,
          updated_at = excluded.updated_at`;
      if (!params.paused) await this.#notify(tx, [params.name]);
    });
  }

  async queuesList(): Promise<QueueRow[]> {
    const rows = await this.#sql`SELECT * FROM queues ORDER BY name COLLATE "C"`;
    return rows.map((r) => ({
      name: String(r.name),
      paused: r.paused === true,
      concurrency: r.concurrency == null ? null : Number(r.concurrency),
      updatedAt: Number(r.updated_at),
    }));
  }

  async nodeBeat(params: {
    node: string;
    queues: Record<string, number>;
    environment?: string | null;
    now: number;
  }): Promise<void> {
    await this.#sql`INSERT INTO nodes (node, queues, environment, started_at, heartbeat_at)
      VALUES (${params.node}, ${JSON.stringify(params.queues)}::text::jsonb,
        ${params.environment ?? null}::text, ${params.now}::bigint, ${params.now}::bigint)
      ON CONFLICT (node) DO UPDATE SET queues = excluded.queues,
        environment = excluded.environment, heartbeat_at = excluded.heartbeat_at`;
  }

  async nodeDelete(params: { node: string }): Promise<void> {
    await this.#sql`DELETE FROM nodes WHERE node = ${params.node}`;
  }

  async nodesExpire(params: { before: number }): Promise<number> {
    return (await this.#sql`DELETE FROM nodes WHERE heartbeat_at < ${params.before}::bigint`)
      .count;
  }

  async nodesList(): Promise<NodeRow[]> {
    const rows = await this.#sql`SELECT * FROM nodes ORDER BY node COLLATE "C"`;
    return rows.map((r) => ({
      node: String(r.node),
      queues: json(r.queues) as Record<string, number>,
      startedAt: Number(r.started_at),
      heartbeatAt: Number(r.heartbeat_at),
      environment: r.environment == null ? null : String(r.environment),
    }));
  }

  async settingGet(params: { key: string }): Promise<unknown> {
    const [row] = await this.#sql`SELECT value FROM settings WHERE key = ${params.key}`;
    return row ? JSON.parse(String(row.value)) : null;
  }

  async settingDelete(params: { key: string }): Promise<void> {
    await this.#sql`DELETE FROM settings WHERE key = ${params.key}`;
  }

  async settingSet(params: { key: string; value: unknown; now: number }): Promise<void> {
    await this.#sql`INSERT INTO settings (key, value, updated_at)
      VALUES (${params.key}, ${JSON.stringify(params.value)}, ${params.now}::bigint)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
  }

  // --------------------------------------------------------------------- audit

  async auditRecord(params: {
    at: number;
    actor: string;
    action: string;
    target: string;
    reason: string | null;
    details?: Record<string, unknown>;
  }): Promise<void> {
    await this.#sql`INSERT INTO audit (at, actor, action, target, reason, details)
      VALUES (${params.at}::bigint, ${params.actor}, ${params.action}, ${params.target},
        ${params.reason}::text, ${JSON.stringify(params.details ?? {})})`;
  }

  async auditList(params: { target: string }): Promise<AuditRow[]> {
    const rows = await this.#sql`SELECT * FROM audit WHERE target = ${params.target}
      ORDER BY at, id`;
    return rows.map((r) => ({
      id: Number(r.id),
      at: Number(r.at),
      actor: String(r.actor),
      action: String(r.action),
      target: String(r.target),
      reason: r.reason as string | null,
      details: JSON.parse(String(r.details)),
    }));
  }

  // ----------------------------------------------------------------- schedules

  async schedulesSync(params: {
    schedules: { id: string; hash: string; tenant: string | null; definition?: string | null }[];
    complete?: boolean;
    now: number;
  }): Promise<void> {
    if (params.complete) {
      // Nothing runs the others any more: their definitions no longer say what runs.
      const ids = params.schedules.map((s) => s.id);
      await this.#sql`UPDATE schedules SET definition = NULL
        WHERE definition IS NOT NULL AND NOT (id = ANY(${ids}::text[]))`;
    }
    if (params.schedules.length === 0) return;
    // One row per id (the last given wins), in id order: one statement may
    // not touch a row twice, and daemons syncing at once lock in one order.
    const byId = new Map(params.schedules.map((s) => [s.id, s]));
    const rows = JSON.stringify(
      [...byId.values()]
        .sort((a, b) => compare(a.id, b.id))
        .map((s) => ({
          id: s.id,
          tenant: s.tenant,
          hash: s.hash,
          definition: s.definition ?? null,
        })),
    );
    const now = params.now;
    await this.#sql`INSERT INTO schedules
        (id, tenant, definition_hash, definition, created_at, updated_at)
      SELECT id, tenant, hash, definition, ${now}::bigint, ${now}::bigint
      FROM jsonb_to_recordset(${rows}::text::jsonb)
        AS r(id text, tenant text, hash text, definition text)
      ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,
        definition = coalesce(excluded.definition, CASE WHEN schedules.definition_hash
          IS NOT DISTINCT FROM excluded.definition_hash THEN schedules.definition END),
        definition_hash = excluded.definition_hash,
        updated_at = CASE WHEN schedules.definition_hash IS NOT DISTINCT FROM
          excluded.definition_hash THEN schedules.updated_at ELSE excluded.updated_at END`;
  }

  async schedulesList(params: { ids?: string[] }): Promise<ScheduleRow[]> {
    const ids = params.ids ?? null;
    const rows = await this.#sql`SELECT * FROM schedules
      WHERE (${ids}::text[] IS NULL OR id = ANY(${ids}::text[])) ORDER BY id COLLATE "C"`;
    return rows.map(toScheduleRow);
  }

  async schedulesOutcomes(params: { ids?: string[] }): Promise<ScheduleOutcome[]> {
    const ids = params.ids ?? null;
    // Each LATERAL walks the index on (schedule_id, scheduled_for) from the
    // newest occurrence; the count reads only the run after the last success.
    const rows = await this.#sql`SELECT s.id, l.state, l.at,
        (SELECT count(*) FROM jobs AS d
          WHERE d.schedule_id = s.id AND d.occurrence IS NOT NULL AND d.state = 'discarded'
            AND (c.scheduled_for IS NULL OR d.scheduled_for > c.scheduled_for)) AS failures
      FROM schedules AS s
      CROSS JOIN LATERAL (SELECT state, coalesce(completed_at, cancelled_at, discarded_at) AS at
        FROM jobs WHERE schedule_id = s.id AND occurrence IS NOT NULL
          AND state IN ('completed', 'cancelled', 'discarded')
        ORDER BY scheduled_for DESC LIMIT 1) AS l
      LEFT JOIN LATERAL (SELECT scheduled_for FROM jobs
        WHERE schedule_id = s.id AND occurrence IS NOT NULL AND state = 'completed'
        ORDER BY scheduled_for DESC LIMIT 1) AS c ON true
      WHERE (${ids}::text[] IS NULL OR s.id = ANY(${ids}::text[])) ORDER BY s.id COLLATE "C"`;
    return rows.map((r) => ({
      scheduleId: String(r.id),
      lastOutcome: r.state as ScheduleOutcome["lastOutcome"],
      lastOutcomeAt: Number(r.at),
      failures: Number(r.failures),
    }));
  }

  async schedulePlan(params: {
    id: string;
    now: number;
    plan: (ctx: PlanContext) => PlanDecision;
  }): Promise<{ inserted: InsertResult[]; cancelled: number; decision: PlanDecision | null }> {
    return await this.#sql.begin((tx) => this.#lifecycle(tx, planSchedule(params)));
  }

  async scheduleSetEnabled(params: {
    id: string;
    enabled: boolean;
    reason: string | null;
    actor: string | null;
    now: number;
  }): Promise<boolean> {
    return await this.#lifecycle(this.#sql, setScheduleEnabled(params));
  }

  // ---------------------------------------------------------------- leadership

  /**
   * One statement takes or renews the role: the upsert's WHERE admits a
   * missing, released, expired or own row. Under READ COMMITTED a racing
   * taker waits for the row lock, then re-checks the WHERE against the row
   * the winner committed, so only one of them gets a row back. A loser
   * reads the holder afterwards, in a statement of its own so that it sees
   * the winner's commit.
   */
  async leaderTake(params: { name: string; node: string; now: number; ttlMs: number }) {
    return await this.#lifecycle(this.#sql, takeLeadership(params));
  }

  async leaderRelease(params: { name: string; node: string; fence: number }): Promise<boolean> {
    return await this.#lifecycle(this.#sql, releaseLeadership(params));
  }

  async leadersList(): Promise<LeaderRow[]> {
    return (await this.#sql`SELECT * FROM leaders ORDER BY name COLLATE "C"`).map(toLeaderRow);
  }

  // ------------------------------------------------------------ change wake-ups

  /**
   * LISTENs on this schema's channel over one connection of its own (taken
   * on the first listener, released with the last). Every store sharing the
   * schema notifies it when jobs become runnable: inserts, retries,
   * replays, staging, rescues, releases and resumed queues.
   */
  // ------------------------------------------------------------------ workflows

  async workflowStart(params: WorkflowStartParams): Promise<{
    id: number;
    duplicate: boolean;
    queues: string[];
  }> {
    return await this.#begin(async (tx) => {
      if (params.key !== null) {
        // Starts with one key wait for each other here, so the second finds the first's run.
        await tx`SELECT pg_advisory_xact_lock(hashtext('jobs.workflow_start'), hashtext(${params.key}))`;
      }
      const started = await this.#lifecycle(tx, startRun(params));
      return { id: started.id, duplicate: started.duplicate, queues: started.queues };
    });
  }

  async workflowGet(params: { id: number }): Promise<WorkflowRunDetail | null> {
    return await workflows.workflowGet(this.#tx ?? this.#sql, params.id);
  }

  async workflowsList(params: WorkflowFilter): Promise<WorkflowRun[]> {
    return await workflows.workflowsList(this.#tx ?? this.#sql, params);
  }

  async workflowsCount(): Promise<{ workflow: string; state: RunState; count: number }[]> {
    return await workflows.workflowsCount(this.#sql);
  }

  async workflowCompensationsCount(): Promise<
    { workflow: string; state: string; count: number }[]
  > {
    return await workflows.workflowCompensationsCount(this.#sql);
  }

  async workflowCancel(params: { id: number; now: number; reason: string }): Promise<
    WorkflowActionResult | null
  > {
    return await this.#begin(async (tx) =>
      actionResult(await this.#lifecycle(tx, cancelRun(params.id, params.reason, params.now)))
    );
  }

  async workflowRetry(params: { id: number; now: number }): Promise<WorkflowActionResult | null> {
    return await this.#begin(async (tx) =>
      actionResult(await this.#lifecycle(tx, retryRun(params.id, params.now)))
    );
  }

  async workflowsPrune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
  }): Promise<number> {
    return await this.#sql.begin((tx) => workflows.workflowsPrune(tx, params));
  }

  async workflowCursorGet(params: { jobId: number }): Promise<string | null> {
    return await workflows.cursorGet(this.#tx ?? this.#sql, params.jobId);
  }

  async workflowCursorSet(
    params: { jobId: number; fence: number; value: string; now: number },
  ): Promise<boolean> {
    return await workflows.cursorSet(this.#tx ?? this.#sql, params);
  }

  // ------------------------------------------------------------------- ingest

  async ingestRunOpen(params: IngestRunOpenParams): Promise<IngestRun | null> {
    return await this.#begin((tx) => ingest.runOpen(tx, params));
  }

  async ingestFailuresGet(
    params: { pipeline: string; records: string[] },
  ): Promise<Map<string, number>> {
    return await ingest.failuresGet(this.#tx ?? this.#sql, params);
  }

  async ingestChunkCommit(params: IngestChunkCommitParams): Promise<boolean> {
    return await this.#begin((tx) => ingest.chunkCommit(tx, params));
  }

  async ingestRunFinish(params: IngestRunFinishParams): Promise<boolean> {
    return await this.#begin((tx) => ingest.runFinish(tx, params));
  }

  async ingestRunGet(params: { id: number }): Promise<IngestRun | null> {
    return await ingest.runGet(this.#tx ?? this.#sql, params.id);
  }

  async ingestRunByJob(params: { jobId: number }): Promise<IngestRun | null> {
    return await ingest.runByJob(this.#tx ?? this.#sql, params.jobId);
  }

  async ingestRunsList(params: IngestRunFilter): Promise<IngestRun[]> {
    return await ingest.runsList(this.#tx ?? this.#sql, params);
  }

  async ingestSummaries(params: { since: number }): Promise<PipelineSummary[]> {
    return await ingest.summaries(this.#tx ?? this.#sql, params.since);
  }

  async ingestDropsList(params: IngestDropFilter): Promise<IngestDrop[]> {
    return await ingest.dropsList(this.#tx ?? this.#sql, params);
  }

  async ingestDropGet(
    params: { id: number },
  ): Promise<IngestDropWithRecord | null> {
    return await ingest.dropGet(this.#tx ?? this.#sql, params.id);
  }

  async ingestDropReplayed(params: { id: number; jobId: number; now: number }): Promise<boolean> {
    return await ingest.dropReplayed(this.#tx ?? this.#sql, params);
  }

  async ingestDropsPrune(params: IngestDropsPruneParams): Promise<number> {
    return await ingest.dropsPrune(this.#tx ?? this.#sql, params);
  }

  // ------------------------------------------------------------------ reports

  async reportRunCreate(
    params: ReportRunCreateParams,
  ): Promise<{ run: ReportRun } | { active: number[] }> {
    return await this.#begin((tx) => reports.create(tx, this.schema, params));
  }

  async reportRunStart(
    params: { jobId: number; fence: number; now: number },
  ): Promise<ReportRun | null> {
    return await this.#begin((tx) => reports.start(tx, params));
  }

  async reportRunProgress(
    params: { lease: IngestLease; rows: number; bytes: number; now: number },
  ): Promise<boolean> {
    return await this.#begin((tx) => reports.progress(tx, params));
  }

  async reportRunFinish(params: ReportRunFinishParams): Promise<boolean> {
    return await this.#begin((tx) => reports.finish(tx, params));
  }

  async reportRunGet(params: { id: number }): Promise<ReportRun | null> {
    return await reports.get(this.#tx ?? this.#sql, params.id);
  }

  async reportRunsList(params: ReportRunFilter): Promise<ReportRun[]> {
    return await reports.list(this.#tx ?? this.#sql, params);
  }

  async reportRunsExpired(params: { now: number; limit: number }): Promise<ReportRun[]> {
    return await reports.expired(this.#tx ?? this.#sql, params);
  }

  async reportRunsEndedBefore(params: { before: number; limit: number }): Promise<ReportRun[]> {
    return await reports.endedBefore(this.#tx ?? this.#sql, params);
  }

  async reportRunDelete(params: { id: number }): Promise<boolean> {
    return await reports.remove(this.#tx ?? this.#sql, params.id);
  }

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
      this.#listening = this.#sql
        .listen(this.#channel, wake, wake)
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

/** The shared lifecycle's ops that answer nothing: they are pipelined. */
const LIFECYCLE_WRITES: ReadonlySet<StoreOp["op"]> = new Set<StoreOp["op"]>([
  "scheduleAdvance",
  "runsLock",
  "runsLockOfJobs",
  "attemptsInsert",
  "attemptEnd",
  "schedulesCompleted",
  "jobRedefine",
  "replayPending",
  "attemptsDelete",
  "countsMove",
  "wake",
]);

/**
 * How long postgres.js waits before connecting again after its connection
 * to the server failed `retries` times in a row, in seconds: at once after
 * a clean close (a session terminated, the first retry), then 100 ms
 * doubling up to 5 s, each jittered down by up to half so that the nodes of
 * a restarted server do not all come back in step. It paces the LISTEN
 * connection's reconnects and the pool's alike. (Real time in the driver:
 * it only paces retries and decides nothing stored.)
 */
export function reconnectBackoffS(retries: number): number {
  return retries <= 0 ? 0 : reconnectBackoff(retries, Math.random) / 1000;
}

let straysGuarded = false;

/**
 * Keeps the process alive through a stray of postgres.js: a session the
 * server terminates (57P01, a restart) can reject a promise postgres.js
 * itself holds and never awaits, an unhandled rejection that ends a Deno
 * process (a daemon died so while its sessions were being killed). The
 * callers' own statements are rejected as well, and those are what the
 * runtime sees and rides out; so an unhandled rejection is let go only when
 * it is an error postgres.js's connection code made for a lost session
 * ({@linkcode isLostSessionStray}). Any other still ends the process.
 * (The write-after-close crash of 3.4.9 is fixed in the driver itself; see
 * `driver.ts`.)
 */
function surviveLostSessionStrays(): void {
  if (straysGuarded) return;
  straysGuarded = true;
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (isLostSessionStray(event.reason)) event.preventDefault();
  });
}

/**
 * Whether `reason` is an error postgres.js's connection code made for a
 * lost session (CONNECTION_CLOSED, or the server's 57P01 and the like).
 */
export function isLostSessionStray(reason: unknown): boolean {
  if (!(reason instanceof Error)) return false;
  const stack = reason.stack ?? "";
  return isStoreUnreachable(reason) && (DRIVER_CONNECTION.test(stack) || socketOnly(stack));
}

/** postgres.js's connection module in a stack: the vendored copy or a registry one. */
const DRIVER_CONNECTION = /\/postgres(?:-[\d.]+)?\/(?:[\d.]+\/)?src\/connection\.js/;

/**
 * Whether every frame of `stack` is the runtime's Node layer (`node:net` and
 * its error helpers): a connect that failed (`connect ECONNREFUSED`), as
 * postgres.js hands a waiter the socket's own error. Nothing else in this
 * program opens sockets through `node:net`, so such an error is the
 * driver's. Seen unhandled when the server went away as a daemon started.
 */
function socketOnly(stack: string): boolean {
  const frames = stack.split("\n").filter((line) => /^\s+at /.test(line));
  return frames.length > 0 && frames.every((line) => /ext:deno_node\/|node:/.test(line));
}

/**
 * How many of the newest discarded jobs `jobsDeadLetters` groups: a bound on
 * its cost however large the dead-letter pile.
 */
const DEAD_LETTER_SCAN = 10_000;

type FinalState = "completed" | "cancelled" | "discarded";

/** The column of the instant a job became `state`, as a fixed fragment. */
function finalAt(q: Sql, state: FinalState): Fragment {
  switch (state) {
    case "completed":
      return q`completed_at`;
    case "cancelled":
      return q`cancelled_at`;
    case "discarded":
      return q`discarded_at`;
  }
}

/**
 * The schedules of the jobs `ids` as a relation `s(id)`, their rows locked
 * in id order: claimers and recorders touching several schedules at once
 * take them in one order, so they cannot deadlock one another.
 */
function schedulesOf(q: Sql, ids: number[]): Fragment {
  return q`(SELECT id FROM schedules
    WHERE id IN (SELECT schedule_id FROM jobs WHERE id = ANY(${ids}::bigint[]))
    ORDER BY id FOR UPDATE) AS s`;
}

/**
 * A completion of a job that is neither a schedule's occurrence nor a
 * workflow's step: what {@linkcode PostgresStore.jobsClaim} writes in its
 * one-statement form (an occurrence's completion also moves its schedule's
 * recovery point; a step's advances its run).
 */
function isPlainCompletion(result: JobResult): boolean {
  return result.outcome === "completed" && !result.occurrence && result.workflow === undefined;
}

/**
 * Completions as the one-statement claim binds them: their ids in order (as
 * an operator's cancel or discard locks rows), and one JSON object from id
 * to `[fence, attempt, started_at, output, definition]`, which PostgreSQL
 * reads per row by key (a JSON object's keys are sorted, so a binary search).
 */
function leaseMap(results: JobResult[]): { ids: number[]; leases: string } {
  const ids = results.map((r) => r.id).sort((a, b) => a - b);
  const leases: Record<number, [number, number, number, string | null, string | null]> = {};
  for (const r of results) {
    leases[r.id] = [r.fence, r.attempt, r.startedAt, r.output ?? null, r.definition ?? null];
  }
  return { ids, leases: JSON.stringify(leases) };
}

/** The lease filter of every result write: (id, executing, node, fence). */
/**
 * The ids a claim takes: up to `limit` runnable jobs of `queue` due by
 * `dueBy` (else `now`) in claim order, locked, skipping rows another
 * claimer holds; none while the queue is paused.
 */
function pickRunnable(
  q: Sql,
  params: { queue: string; now: number; limit: number; dueBy?: number },
): Fragment {
  const { queue } = params;
  return q`SELECT id FROM jobs
    WHERE state = 'available' AND queue = ${queue}
      AND scheduled_at <= ${params.dueBy ?? params.now}::bigint
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND paused)
    ORDER BY priority, scheduled_at, id
    LIMIT ${params.limit}::bigint
    FOR UPDATE SKIP LOCKED`;
}

/** How often a busy store folds the count deltas into job_counts, in ms of its callers' `now`. */
const COMPACT_EVERY_MS = 1000;

/** The SET list of a claim: executing for `node` until `now + leaseMs`, one more attempt and fence. */
function takeLease(q: Sql, lease: { node: string; now: number; leaseMs: number }): Fragment {
  return q`state = 'executing', attempt = attempt + 1, fence = fence + 1,
    attempted_by = ${lease.node}, attempted_at = ${lease.now}::bigint,
    lease_expires_at = ${lease.now + lease.leaseMs}::bigint`;
}

function leaseHeld(q: Sql, lease: { id: number; node: string; fence: number }): Fragment {
  return q`id = ${lease.id}::bigint AND state = 'executing' AND attempted_by = ${lease.node}
    AND fence = ${lease.fence}::bigint`;
}

/** Leases as a relation `l(id, fence)`, one bound JSON value for all of them. */
function leaseSet(q: Sql, leases: Lease[]): Fragment {
  const rows = JSON.stringify(leases.map((l) => ({ id: l.id, fence: l.fence })));
  return q`jsonb_to_recordset(${rows}::text::jsonb) AS l(id bigint, fence bigint)`;
}

/** The states an operator may still stop (cancel, discard). */
function notFinal(q: Sql): Fragment {
  return q`('scheduled', 'available', 'executing', 'retryable')`;
}

/** The filters of a listing, each a fixed text with its value bound. */
function listConditions(q: Sql, params: JobMatch): Fragment[] {
  const where: Fragment[] = [];
  if (params.ids !== undefined) where.push(q`id = ANY(${params.ids}::bigint[])`);
  if (params.queue !== undefined) where.push(q`queue = ${params.queue}`);
  if (params.worker !== undefined) where.push(q`worker = ${params.worker}`);
  if (params.tag !== undefined) {
    where.push(q`tags::jsonb @> jsonb_build_array(${params.tag}::text)`);
  }
  if (params.scheduleId !== undefined) where.push(q`schedule_id = ${params.scheduleId}`);
  if (params.occurrence !== undefined) where.push(q`occurrence = ${params.occurrence}`);
  if (params.search !== undefined) {
    // This reads the stored text: a listing with a search narrows its rows
    // with it, then keeps those whose shown (redacted) text matches
    // (src/store/search.ts). ILIKE's escape character is a backslash; tags
    // and errors are searched in their values (unescaped), args in its JSON
    // text as on SQLite.
    const pattern = `%${escapeLike(params.search)}%`;
    const match = q`(worker ILIKE ${pattern} OR args ILIKE ${pattern}
      OR occurrence ILIKE ${pattern}
      OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) AS t(v)
        WHERE t.v ILIKE ${pattern})
      OR EXISTS (SELECT 1 FROM jsonb_array_elements(errors) AS e(v)
        WHERE e.v ->> 'error' ILIKE ${pattern}))`;
    // A search text that JSON writes as it is (no quote, backslash or
    // control character) can be in a tag or an error only if it is in the
    // array's JSON text, so a row can match only if its fields' texts
    // joined do: one LIKE of them lowercased (what ILIKE does) spares nearly
    // every row the five ILIKEs, the tags' parse and the errors' walk, a
    // third of the cost. CASE, because PostgreSQL orders the tests of an
    // AND by its own estimates of their costs.
    where.push(
      JSON.stringify(params.search) === `"${params.search}"`
        ? q`CASE WHEN lower(concat_ws(chr(31), worker, args, occurrence, tags, errors::text))
            LIKE lower(${pattern}) THEN ${match} ELSE false END`
        : match,
    );
  }
  if (params.above !== undefined) where.push(q`id > ${params.above}::bigint`);
  if (params.state !== undefined) {
    const states = Array.isArray(params.state) ? params.state : [params.state];
    for (const state of states) checkState(state);
    where.push(q`state = ANY(${states}::text[])`);
  }
  return where;
}

/** `conditions` joined with AND; `true` when there are none. */
function and(q: Sql, conditions: Fragment[]): Fragment {
  if (conditions.length === 0) return q`true`;
  return conditions.reduce((all, next) => q`${all} AND ${next}`);
}

/** Throws a RangeError naming `state` unless it is one of JOB_STATES. */
function checkState(state: string): asserts state is JobState {
  if (!(JOB_STATES as readonly string[]).includes(state)) {
    throw new RangeError(
      `state must be one of ${JOB_STATES.join(", ")}, got ${JSON.stringify(state)}`,
    );
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What a workflow action tells its caller: null when there is no such run. */
function actionResult(
  outcome: { was: RunState | null; state: RunState | null; jobs: number[] },
): WorkflowActionResult | null {
  if (outcome.was === null || outcome.state === null) return null;
  return { was: outcome.was, state: outcome.state, jobs: outcome.jobs };
}
