/**
 * The core of the PostgreSQL store, which every concern file of this folder
 * is built on: the connection (a postgres.js pool, or one open transaction),
 * the transaction policy, the wake-ups, the fold of the counts, and the
 * driver of the shared lifecycle (`src/store/lifecycle/`), which sends each
 * op to the file that answers it.
 *
 * The concern files (`jobs.ts`, `counts.ts`, `settings.ts`, `nodes.ts`,
 * `schedules.ts`, `workflows.ts`, `ingest.ts`, `reports.ts`) each export a
 * factory, `postgresJobs(core)` and the like, returning the methods of one
 * seam interface of `src/store/store.ts` with their statements, and, for
 * the ops of the lifecycle, `answer<Concern>Op(core, op, q)` functions.
 * `postgres_store.ts` assembles the store from the factories, and a
 * transaction's view from the same factories over {@linkcode PostgresCore.within}.
 *
 * @module
 */

import postgres from "./driver.ts";
import { reconnectBackoff } from "../../kernel/backoff.ts";
import { isStoreUnreachable, StoreLockedError, StoreOpenError } from "../errors.ts";
import { describeLocation } from "../location.ts";
import { CountTally } from "../job_counts.ts";
import {
  isFlowOp,
  isLeaderOp,
  isScheduleOp,
  isWorkflowOp,
  type StoreOp,
  type StoreOps,
} from "../lifecycle/ops.ts";
import type { PostgresOptions } from "./postgres_store.ts";
import type { Sql } from "./fragments.ts";
import { addCounts, compactCounts } from "./counts.ts";
import { answerJobOp, JOB_WRITES } from "./jobs.ts";
import { answerScheduleOp, SCHEDULE_WRITES } from "./schedules.ts";
import { answerLeaderOp } from "./nodes.ts";
import { answerWorkflowOp, WORKFLOW_WRITES } from "./workflows.ts";
import { answerFlowOp } from "./flow.ts";
import { FLOW_WRITES } from "../lifecycle/flow.ts";

/** A schema name this store accepts: it is spliced into SET and CREATE statements. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** How often a busy store folds the count deltas into job_counts, in ms of its callers' `now`. */
const COMPACT_EVERY_MS = 1000;

/** The shared lifecycle's ops that answer nothing: they are pipelined. */
const PIPELINED: ReadonlySet<StoreOp["op"]> = new Set<StoreOp["op"]>([
  ...JOB_WRITES,
  ...FLOW_WRITES,
  ...SCHEDULE_WRITES,
  ...WORKFLOW_WRITES,
]);

/**
 * The connection of one PostgreSQL store and what every concern file asks
 * of it. A core is either the store's own (its `sql` the pool) or a
 * transaction's view of it ({@linkcode within}: its `sql` the open
 * transaction), and the same factories build the store's methods over
 * either.
 */
export class PostgresCore {
  /** The URL without its password. */
  readonly location: string;
  /** The schema holding the tables. */
  readonly schema: string;
  /** The LISTEN/NOTIFY channel of this schema's changes. */
  readonly channel: string;
  /**
   * The pool; on a transaction's view, the open transaction. Only the
   * methods of STORE_TX_METHODS are reached on a view; they begin through
   * {@linkcode begin}, and none listens or ends: queries are all they ask
   * of it.
   */
  readonly sql: postgres.Sql;
  /**
   * The open transaction this core is a view of (see {@linkcode within}),
   * else null: a view runs every statement on it.
   */
  readonly tx: postgres.TransactionSql | null;
  /** See {@linkcode PostgresOptions.lockTimeoutMs}. */
  readonly lockTimeoutMs: number;
  /** The `now` of this store's last fold of the count deltas (see countsWritten). */
  #compactedAt = -Infinity;

  private constructor(parts: {
    location: string;
    schema: string;
    sql: postgres.Sql;
    tx: postgres.TransactionSql | null;
    lockTimeoutMs: number;
  }) {
    this.location = parts.location;
    this.schema = parts.schema;
    this.channel = `jobs_${parts.schema}`;
    this.sql = parts.sql;
    this.tx = parts.tx;
    this.lockTimeoutMs = parts.lockTimeoutMs;
  }

  /**
   * Opens a pool at `url` (no connection is made before the first
   * statement). A URL, schema name or lock timeout this store cannot take
   * is a {@linkcode StoreOpenError} naming the location without its
   * password.
   */
  static open(url: string, options: PostgresOptions = {}): PostgresCore {
    const location = describeLocation(url);
    const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    if (!Number.isInteger(lockTimeoutMs) || lockTimeoutMs < 0) {
      throw new StoreOpenError(
        location,
        `the lock timeout must be a whole number of ms, got ${JSON.stringify(lockTimeoutMs)}`,
      );
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new StoreOpenError(location, "not a postgres:// URL");
    }
    const schema = options.schema ?? parsed.searchParams.get("schema") ?? "public";
    if (!SCHEMA_NAME.test(schema)) {
      throw new StoreOpenError(
        location,
        `schema must be lowercase letters, digits and underscores, got ${JSON.stringify(schema)}`,
      );
    }
    // postgres.js would send every query parameter as a setting of the
    // session; the schema is ours, not the server's.
    parsed.searchParams.delete("schema");
    const connection: Record<string, string> = {
      search_path: schema,
      application_name: options.applicationName ?? "jobs",
      // A write blocked by another session's lock fails after the bound
      // (see locked), as SQLite's busy timeout makes it: the runtime then
      // reports the node degraded instead of waiting without a word.
      lock_timeout: String(Math.max(1, lockTimeoutMs)),
    };
    if (options.readOnly) connection.default_transaction_read_only = "on";
    surviveLostSessionStrays();
    const sql = postgres(parsed.toString(), {
      max: options.max ?? 10,
      connect_timeout: options.connectTimeoutS ?? 10,
      connection,
      onnotice: () => {},
      transform: { undefined: null },
      backoff: reconnectBackoffS,
    });
    return new PostgresCore({ location, schema, sql, tx: null, lockTimeoutMs });
  }

  /**
   * The view of this core bound to the open transaction `sql` (no pool of
   * its own), which `transaction` runs the `StoreTx` methods on.
   */
  within(sql: postgres.TransactionSql): PostgresCore {
    return new PostgresCore({
      location: this.location,
      schema: this.schema,
      sql: sql as unknown as postgres.Sql,
      tx: sql,
      lockTimeoutMs: this.lockTimeoutMs,
    });
  }

  /**
   * `error`, or for a lock timeout (SQLSTATE 55P03 lock_not_available:
   * "canceling statement due to lock timeout", in the server's language) a
   * {@linkcode StoreLockedError} naming the bound and where the lock was
   * met, with the driver's error as its cause.
   */
  locked(error: unknown): unknown {
    if (error instanceof StoreLockedError || !(error instanceof Error)) return error;
    const { code, where } = error as { code?: unknown; where?: unknown };
    if (code !== "55P03") return error;
    const detail = typeof where === "string" ? where.split("\n", 1)[0]!.trim() : "";
    return new StoreLockedError(this.location, this.lockTimeoutMs, detail, { cause: error });
  }

  /**
   * `methods` (a factory's), each failing a lock timeout as what it means:
   * every call of the store, however deep its statement met the lock,
   * fails with {@linkcode locked}'s error.
   */
  guard<T extends object>(methods: T): T {
    const all = methods as Record<string, unknown>;
    for (const [name, method] of Object.entries(all)) {
      if (typeof method !== "function") continue;
      all[name] = (...args: unknown[]): unknown => {
        const result = method.apply(methods, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((error: unknown) => {
          throw this.locked(error);
        });
      };
    }
    return methods;
  }

  /**
   * Runs `fn` in a transaction of its own; on a transaction's view, on that
   * open transaction instead. PostgreSQL has no nested BEGIN, and needs no
   * savepoint here: a statement that fails aborts the caller's transaction,
   * so the call's other statements roll back with it.
   */
  async begin<T>(fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
    if (this.tx) return await fn(this.tx);
    return await this.sql.begin(fn) as T;
  }

  /**
   * After a write of count deltas at `now`: folds the deltas into
   * job_counts when this store last did so a second or more before, so a
   * busy store folds about once a second and a count sums a few rows. Not
   * on a transaction's view (it folds in a transaction of its own).
   */
  async countsWritten(now: number): Promise<void> {
    if (this.tx || now - this.#compactedAt < COMPACT_EVERY_MS) return;
    this.#compactedAt = now;
    await compactCounts(this.sql, this.schema);
  }

  /** Tells every listening store that jobs of `queues` became runnable. */
  async notify(q: Sql, queues: Iterable<string>): Promise<void> {
    const names = [...new Set(queues)];
    if (names.length === 0) return;
    await q`SELECT pg_notify(${this.channel}, name) FROM unnest(${names}::text[]) AS name`;
  }

  /**
   * Runs the shared lifecycle's ops (src/store/lifecycle/) on `q` (an open
   * transaction, or the pool for ops that need none), pipelining those
   * that answer nothing; the moves of jobs go to `counts`, or, when the
   * caller gives none, to the counts before the call returns.
   */
  async lifecycle<R>(q: Sql, ops: StoreOps<R>, counts?: CountTally): Promise<R> {
    const tally = counts ?? new CountTally();
    const result = await pipelined(
      ops,
      (op) => this.#answer(q, op, tally),
      (op) => PIPELINED.has(op.op),
    );
    if (!counts) await addCounts(q, tally);
    return result;
  }

  /** Sends one of the shared lifecycle's ops to the file of its concern that answers it. */
  #answer(q: Sql, op: StoreOp, counts: CountTally): Promise<unknown> {
    if (isScheduleOp(op)) return answerScheduleOp(this, op, q);
    if (isLeaderOp(op)) return answerLeaderOp(this, op, q);
    if (isWorkflowOp(op)) return answerWorkflowOp(this, op, q);
    if (isFlowOp(op)) return answerFlowOp(op, q, counts);
    return answerJobOp(this, op, q, counts);
  }
}

/**
 * Drives a generator of ops on one open transaction, pipelining the writes
 * that answer nothing (`isWrite`): each is sent at once (`answer` sends
 * one op) and the generator goes on, so a
 * batch's row updates, row inserts and run states share round trips with
 * what follows. The connection runs statements in the order sent, so a
 * later read sees them; the call resolves once every reply is in, and a
 * write that failed fails it (and the transaction with it).
 */
export async function pipelined<O, R>(
  ops: Generator<O, R, unknown>,
  answer: (op: O) => Promise<unknown>,
  isWrite: (op: O) => boolean,
): Promise<R> {
  const pending: Promise<void>[] = [];
  let failed: { error: unknown } | null = null;
  let outcome: { result: R } | { error: unknown };
  try {
    let next = ops.next();
    while (!next.done) {
      const op = next.value;
      if (failed) throw (failed as { error: unknown }).error;
      if (isWrite(op)) {
        pending.push(
          answer(op).then(() => {}, (error) => {
            failed ??= { error };
          }),
        );
        next = ops.next(undefined);
      } else {
        next = ops.next(await answer(op));
      }
    }
    outcome = { result: next.value };
  } catch (error) {
    outcome = { error };
  }
  await Promise.all(pending);
  // A read after a failed write fails as "transaction aborted": the write's error says why.
  if (failed) throw (failed as { error: unknown }).error;
  if ("error" in outcome) throw outcome.error;
  return outcome.result;
}

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
