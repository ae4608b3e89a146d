/**
 * The library's front door: a store, the workers this process knows, enqueue
 * (alone, in bulk, inside the caller's transaction) and the runtime.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { hostname } from "node:os";
import { type Clock, SystemClock } from "./clock.ts";
import {
  buildJob,
  DEFAULT_ARGS_LIMIT,
  type EnqueueOptions,
  serializeArgs,
} from "./kernel/enqueue.ts";
import type { Registry } from "./kernel/executor.ts";
import type { InsertResult, NewJob } from "./kernel/types.ts";
import type { Worker } from "./kernel/worker.ts";
import type { Store, StoreTx } from "./store/store.ts";
import {
  isPostgresLocation,
  openSqliteLocation,
  openStore,
  type PostgresSettings,
  type PostgresTx,
  type SqliteOptions,
  type SqliteTx,
} from "./store/open.ts";
import { jsonLinesLogger, type Logger } from "./kernel/logger.ts";
import { Runtime, type RuntimeOptions } from "./runtime/runtime.ts";
import {
  compileWorkflow,
  type WorkflowDefinition,
  type WorkflowOptions,
} from "./workflow/definition.ts";
import type { CompiledWorkflow } from "./workflow/types.ts";
import { type CompiledPipeline } from "./ingest/types.ts";
import { INGEST_WORKER } from "./kernel/runs.ts";
import { ingestJob, ingestWorker } from "./runners/ingest.ts";
import { type StartedRun, startReport } from "./admin/reports.ts";
import type { CompiledReport } from "./report/definition.ts";
import type { RawRequest } from "./report/query.ts";
import { REPORT_QUEUE } from "./report/types.ts";
import { REPORT_WORKER } from "./kernel/runs.ts";
import { reportWorker } from "./runners/report.ts";
import { checkRunnerArgs } from "./runners/builtin_args.ts";
import { compileWorkQueue } from "./workqueue/definition.ts";
import type { WorkQueueDefinition, WorkQueueOptions } from "./workqueue/types.ts";
import { addParams, itemView, type NewWorkItem, type WorkItemView } from "./workqueue/items.ts";

/** Options for {@linkcode Jobs}. */
export interface JobsOptions<Tx extends StoreTx> {
  store: Store<Tx>;
  /** Workers this process can run (and whose defaults enqueue applies). */
  // deno-lint-ignore no-explicit-any
  workers?: Worker<any>[];
  /** @default SystemClock */
  clock?: Clock;
  /**
   * Runtime events.
   * @default JSON lines on stderr, each led by `time` from `clock` ({@linkcode jsonLinesLogger})
   */
  logger?: Logger;
  /** Largest serialized args, in bytes. @default 262144 (256 KiB) */
  argsLimit?: number;
  /** Random in [0, 1), for backoff jitter. @default Math.random */
  random?: () => number;
  /** Workflows this process starts (registered after `workers`, whose defaults they take). */
  workflows?: (WorkflowDefinition | WorkflowOptions)[];
  /**
   * Work queues this process adds items to (a `ScheduleConfig`'s
   * `workQueues`, or definitions checked and compiled here).
   */
  workQueues?: (WorkQueueDefinition | WorkQueueOptions)[];
}

/** The items of work queues, from the library: {@linkcode Jobs.workItems}. */
export interface WorkItems<Tx> {
  /**
   * Adds an item to a registered work queue (by id, or a definition), its
   * score computed by the queue's rule; with its key already in the queue,
   * updates its data and score and keeps its place in line. Inside `tx`
   * (or this Jobs' transaction callback) it commits with the caller's own
   * writes.
   */
  add(
    queue: string | WorkQueueDefinition,
    item: NewWorkItem,
    options?: TxOption<Tx>,
  ): Promise<{ item: WorkItemView; created: boolean }>;
}

/** Options of {@linkcode Jobs.startWorkflow}. */
export interface StartWorkflowOptions<Tx> {
  /** Start inside this transaction (from {@linkcode Jobs.transaction}). */
  tx?: Tx;
  /** Idempotency key: a second start with the same key returns the first run. */
  key?: string;
  /** The tenant the run and its step jobs belong to. */
  tenant?: string;
}

/** Options of {@linkcode Jobs.enqueue} inside a transaction. */
export interface TxOption<Tx> {
  /** Insert inside this transaction (from {@linkcode Jobs.transaction}). */
  tx?: Tx;
}

/** One job of {@linkcode Jobs.enqueueMany}. */
export interface EnqueueEntry {
  // deno-lint-ignore no-explicit-any
  worker: Worker<any> | string;
  args: unknown;
  options?: EnqueueOptions;
}

/** What {@linkcode Jobs.start} takes: runtime options, all optional. */
export type StartOptions = Partial<RuntimeOptions>;

/**
 * A queue on a store, with the workers of this process: enqueue (alone, in
 * bulk, inside the caller's transaction), start workflows, pipeline runs and
 * reports, and start runtimes that run what is due. {@linkcode openJobs}
 * opens the store at a location and makes one; `new Jobs({ store })` takes
 * a store already open (from `@jobs/jobs/store`).
 *
 * @example Enqueue with options, in bulk and together; test it with a fake clock
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, FakeClock, Jobs, silentLogger } from "@jobs/jobs";
 * import { openSqliteStore } from "@jobs/jobs/store";
 * import { drainJobs } from "@jobs/jobs/testing";
 *
 * const sent: number[] = [];
 * const sendReceipt = defineWorker<{ orderId: number }>({
 *   name: "send_receipt",
 *   queue: "email",
 *   unique: { by: { keys: ["orderId"] } }, // one receipt per order while it is pending
 *   perform: (args) => {
 *     sent.push(args.orderId);
 *   },
 * });
 *
 * const clock = new FakeClock();
 * const store = await openSqliteStore(":memory:");
 * const jobs = new Jobs({ store, workers: [sendReceipt], clock, logger: silentLogger });
 * const first = await jobs.enqueue(sendReceipt, { orderId: 1 }, { tags: ["vip"] });
 * const again = await jobs.enqueue(sendReceipt, { orderId: 1 });
 * assert.equal(again.duplicate, true);
 * assert.equal(again.id, first.id);
 * await jobs.enqueueMany([
 *   { worker: sendReceipt, args: { orderId: 2 } },
 *   { worker: sendReceipt, args: { orderId: 3 }, options: { in: 60_000 } }, // due in a minute
 * ]);
 *
 * await drainJobs(jobs); // runs what is due now
 * assert.deepEqual(sent, [1, 2]);
 * clock.advance(60_000);
 * await drainJobs(jobs);
 * assert.deepEqual(sent, [1, 2, 3]);
 * await jobs.close();
 * ```
 */
export class Jobs<Tx extends StoreTx = StoreTx> {
  readonly store: Store<Tx>;
  readonly clock: Clock;
  readonly logger: Logger;
  // deno-lint-ignore no-explicit-any
  #registry = new Map<string, Worker<any>>();
  #argsLimit: number;
  /** Random in [0, 1), for backoff jitter (injected in tests). */
  readonly random: () => number;
  #runtimes = new Set<Runtime>();
  #txWakes = new WeakMap<Tx, { queues: Set<string>; scheduled: boolean }>();
  #openTx = new AsyncLocalStorage<Tx>();
  #workflows = new Map<string, CompiledWorkflow>();
  #workQueues = new Map<string, WorkQueueDefinition>();

  constructor(options: JobsOptions<Tx>) {
    this.store = options.store;
    this.clock = options.clock ?? new SystemClock();
    this.logger = options.logger ?? jsonLinesLogger(this.clock, (line) => console.error(line));
    this.#argsLimit = options.argsLimit ?? DEFAULT_ARGS_LIMIT;
    this.random = options.random ?? Math.random;
    for (const worker of options.workers ?? []) this.register(worker);
    for (const workflow of options.workflows ?? []) this.registerWorkflow(workflow);
    for (const queue of options.workQueues ?? []) this.registerWorkQueue(queue);
  }

  /**
   * Adds a work queue this process adds items to: a compiled definition, or
   * options checked (`checkWorkQueue`) and compiled here. A second queue
   * with the same id is refused.
   */
  registerWorkQueue(queue: WorkQueueDefinition | WorkQueueOptions): WorkQueueDefinition {
    if (this.#workQueues.has(queue.id)) {
      throw new Error(`work queue "${queue.id}" is already registered`);
    }
    const compiled = "hash" in queue ? queue as WorkQueueDefinition : compileWorkQueue(queue);
    this.#workQueues.set(compiled.id, compiled);
    return compiled;
  }

  /** Items of work queues: `jobs.workItems.add(queue, { key, data, tenant }, { tx })`. */
  get workItems(): WorkItems<Tx> {
    return {
      add: async (queue, item, options = {}) => {
        const definition = typeof queue === "string" ? this.#workQueues.get(queue) : queue;
        if (!definition) {
          const known = [...this.#workQueues.keys()];
          throw new Error(
            `no work queue "${String(queue)}" is registered (${known.join(", ") || "none is"})`,
          );
        }
        const now = this.clock.now();
        const params = addParams(definition, item, "library", now);
        const tx = options.tx ?? this.#openTx.getStore();
        const added = await (tx ?? this.store).workItemAdd(params);
        if (added === null) {
          throw new Error(
            `work queue "${definition.id}": item "${item.key}" belongs to another tenant`,
          );
        }
        return { item: itemView(definition, added.item, now), created: added.created };
      },
    };
  }

  /** The workflows this process starts, by id, compiled. */
  get workflows(): ReadonlyMap<string, CompiledWorkflow> {
    return this.#workflows;
  }

  /**
   * Adds a workflow: checked against the record rules (a saga with a step
   * mapped to no use case is refused with `behavior-unrecorded`, and so on;
   * see `workflow/definition.ts`) and compiled with the workers registered
   * so far, whose queues and attempts its steps take. A second workflow
   * with the same id is refused.
   */
  registerWorkflow(definition: WorkflowDefinition | WorkflowOptions): CompiledWorkflow {
    if (this.#workflows.has(definition.id)) {
      throw new Error(`workflow "${definition.id}" is already registered`);
    }
    const compiled = compileWorkflow(definition, { workers: this.#registry });
    this.#workflows.set(compiled.id, compiled);
    return compiled;
  }

  /**
   * Starts a run of a registered workflow (by id or definition) with
   * `input`: the run's row and its first steps' jobs commit together, inside
   * `tx` when given. Returns the run's id.
   */
  async startWorkflow(
    workflow: string | WorkflowDefinition | WorkflowOptions,
    input: unknown = {},
    options: StartWorkflowOptions<Tx> = {},
  ): Promise<{ id: number; duplicate: boolean }> {
    const id = typeof workflow === "string" ? workflow : workflow.id;
    const definition = this.#workflows.get(id) ??
      (typeof workflow === "string" ? undefined : this.registerWorkflow(workflow));
    if (!definition) {
      const known = [...this.#workflows.keys()];
      throw new Error(
        `no workflow "${id}" is registered${known.length ? ` (known: ${known.join(", ")})` : ""}`,
      );
    }
    const params = {
      definition,
      input: serializeArgs(input, `workflow "${id}" input`, this.#argsLimit),
      tenant: options.tenant ?? null,
      key: options.key ?? null,
      now: this.clock.now(),
      argsLimit: this.#argsLimit,
    };
    const tx = options.tx ?? this.#openTx.getStore();
    if (tx) {
      const started = await tx.workflowStart(params);
      const wakes = this.#txWakes.get(tx);
      for (const q of started.queues) wakes?.queues.add(q);
      return { id: started.id, duplicate: started.duplicate };
    }
    const started = await this.store.workflowStart(params);
    this.#wake({ queues: new Set(started.queues), scheduled: false });
    return { id: started.id, duplicate: started.duplicate };
  }

  /** The workers this process knows, by name. */
  get registry(): Registry {
    return this.#registry;
  }

  /** Adds a worker; a second worker with the same name is refused. */
  // deno-lint-ignore no-explicit-any
  register(worker: Worker<any>): void {
    if (this.#registry.has(worker.name)) {
      throw new Error(`worker "${worker.name}" is already registered`);
    }
    this.#registry.set(worker.name, worker);
  }

  /**
   * Enqueues one job. Returns its id, and `duplicate: true` with the existing
   * job's id when uniqueness refused a new row. Args that cannot be
   * serialized or exceed the size limit throw and write nothing.
   */
  enqueue<A>(
    worker: Worker<A> | string,
    args: A,
    options: EnqueueOptions & TxOption<Tx> = {},
  ): Promise<InsertResult> {
    return this.enqueueMany([{ worker, args, options }], options).then((r) => r[0]!);
  }

  /** Enqueues many jobs in one statement and one transaction; results in input order. */
  async enqueueMany(entries: EnqueueEntry[], options: TxOption<Tx> = {}): Promise<InsertResult[]> {
    const now = this.clock.now();
    const jobs: NewJob[] = entries.map((e) => {
      const def = typeof e.worker === "string"
        ? this.#registry.get(e.worker) ?? e.worker
        : e.worker;
      const job = buildJob(def, e.args, e.options ?? {}, now, this.#argsLimit);
      // A built-in runner's args are checked now, not discarded when it runs.
      checkRunnerArgs(job.worker, job.args);
      return job;
    });
    return await this.#insert(jobs, now, options);
  }

  /**
   * Enqueues one run of an ingest pipeline (made with `definePipeline`, or
   * read from `pipelines:` of a schedules file): a `jobs.ingest` job on the
   * pipeline's queue, which a runtime serving that queue runs (any
   * runtime started by a `Jobs` has the ingest runner, with its process's
   * workers as the TypeScript steps and sinks it finds by name).
   */
  async ingest(pipeline: CompiledPipeline, options: TxOption<Tx> = {}): Promise<InsertResult> {
    this.#ensureRunners();
    const now = this.clock.now();
    const [result] = await this.#insert([ingestJob(pipeline, { now })], now, options);
    return result!;
  }

  /**
   * Starts a run of a report (made with `defineReport`, or read from
   * `reports:` of a schedules file) for `request`: checked, held to its
   * limits, audited, and queued as a `jobs.report` job on the `reports`
   * queue, which a runtime serving that queue runs (any runtime started by
   * a `Jobs` has the report runner).
   *
   * @throws {ReportRequestError} for a request the report does not take
   * @throws {ReportLimitExceeded} for one beyond its date range or concurrency
   */
  async report(report: CompiledReport, request: RawRequest): Promise<StartedRun> {
    this.#ensureRunners();
    const started = await startReport(this.store, report, request, this.clock.now());
    this.#wake({ queues: new Set([REPORT_QUEUE]), scheduled: false });
    return started;
  }

  async #insert(jobs: NewJob[], now: number, options: TxOption<Tx>): Promise<InsertResult[]> {
    // Inside this Jobs' transaction callback an enqueue joins that
    // transaction even without { tx }: on its own it would wait for the
    // connection the transaction holds, for ever.
    const tx = options.tx ?? this.#openTx.getStore();
    if (tx) {
      const results = await tx.jobsInsert({ jobs, now });
      const wakes = this.#txWakes.get(tx);
      if (wakes) this.#noteWakes(wakes, results);
      return results;
    }
    const results = await this.store.jobsInsert({ jobs, now });
    const wakes = { queues: new Set<string>(), scheduled: false };
    this.#noteWakes(wakes, results);
    this.#wake(wakes);
    return results;
  }

  /**
   * Runs `fn` in one store transaction: the caller's own writes (through
   * `tx`, e.g. `tx.db` on SQLite) and the jobs enqueued inside `fn` (with
   * `{ tx }`, or without it: an enqueue from within `fn` joins the
   * transaction) commit or roll back together.
   */
  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    let wakes!: { queues: Set<string>; scheduled: boolean };
    const result = await this.store.transaction((tx) => {
      wakes = { queues: new Set(), scheduled: false };
      this.#txWakes.set(tx, wakes);
      return this.#openTx.run(tx, () => fn(tx));
    });
    this.#wake(wakes);
    return result;
  }

  /** Starts a runtime on this node; queues default to each worker's queue at concurrency 10. */
  async start(options: StartOptions = {}): Promise<Runtime> {
    const queues = options.queues ?? this.#defaultQueues();
    // After the default queues: the runner alone adds no `ingest` queue.
    this.#ensureRunners();
    const runtime = new Runtime(
      {
        store: this.store,
        clock: this.clock,
        registry: this.#registry,
        logger: this.logger,
        random: this.random,
      },
      { ...options, queues, node: options.node ?? defaultNodeName() },
    );
    this.#runtimes.add(runtime);
    await runtime.start();
    return runtime;
  }

  /** Stops every runtime started here (with `grace`) and closes the store. */
  async close(options: { grace?: number } = {}): Promise<void> {
    await Promise.all([...this.#runtimes].map((r) => r.stop(options)));
    this.#runtimes.clear();
    await this.store.close();
  }

  /**
   * The ingest runner, with this process's workers as the TypeScript steps
   * and sinks it finds by name, unless one is registered: a runtime that
   * serves a pipeline's queue runs its runs whether or not this process
   * enqueued them.
   */
  #ensureRunners(): void {
    if (!this.#registry.has(INGEST_WORKER)) {
      this.register(ingestWorker({
        store: () => this.store,
        clock: this.clock,
        env: readEnv,
        logger: this.logger,
        workers: () => this.#registry,
      }));
    }
    if (!this.#registry.has(REPORT_WORKER)) {
      this.register(reportWorker({
        store: () => this.store,
        clock: this.clock,
        env: readEnv,
        logger: this.logger,
      }));
    }
  }

  #defaultQueues(): Record<string, number> {
    const queues: Record<string, number> = {};
    for (const worker of this.#registry.values()) queues[worker.queue] = 10;
    if (Object.keys(queues).length === 0) queues.default = 10;
    return queues;
  }

  #noteWakes(wakes: { queues: Set<string>; scheduled: boolean }, results: InsertResult[]): void {
    for (const r of results) {
      if (r.duplicate) continue;
      if (r.state === "available") wakes.queues.add(r.queue);
      else wakes.scheduled = true;
    }
  }

  #wake(wakes: { queues: Set<string>; scheduled: boolean }): void {
    for (const runtime of this.#runtimes) {
      if (wakes.queues.size) runtime.wake(wakes.queues);
      if (wakes.scheduled) runtime.wakeStager();
    }
  }
}

/** Options for {@linkcode openJobs}. */
export interface OpenJobsOptions extends Omit<JobsOptions<SqliteTx>, "store"> {
  /** SQLite settings (busy timeout, synchronous). */
  sqlite?: Omit<SqliteOptions, "migrate" | "now" | "readOnly">;
  /** PostgreSQL settings (pool size, timeouts). */
  postgres?: PostgresSettings;
  /**
   * Leave to open a store `jobs migrate-store` moved elsewhere, recorded in
   * its audit trail (`store.write_moved`) as this actor's. Without it such a
   * store is refused with a `StoreMovedError` naming where it went: a
   * producer or daemon on it would run, beside the new store's, what they run.
   */
  writeMoved?: { actor: string; reason?: string | null };
}

/** A location literal that names PostgreSQL (the schemes {@linkcode openJobs} types as such). */
export type PostgresLocation = `postgres://${string}` | `postgresql://${string}`;

/**
 * The transaction of the store a location names: PostgreSQL's (`tx.sql`,
 * the postgres.js transaction) for a `postgres://` or `postgresql://`
 * literal, SQLite's (`tx.db`, the connection) for any other literal, and
 * either for a `string` known only at run time: tell them apart with
 * `"sql" in tx`.
 */
export type TxFor<L extends string> = string extends L ? SqliteTx | PostgresTx
  : L extends PostgresLocation ? PostgresTx
  : SqliteTx;

/** {@linkcode OpenJobsOptions} with the store's location as `db` (`openJobs({ db, ... })`). */
export interface OpenJobsAt<L extends string> extends OpenJobsOptions {
  /** A SQLite path, or `postgres://user@host:5432/db?schema=name`. */
  db: L;
}

/**
 * Opens (creating and migrating as needed) the store at `location` (a
 * SQLite path, or `postgres://user@host:5432/db?schema=name`) and returns a
 * {@linkcode Jobs} on it, its transactions typed by the location (see
 * {@linkcode TxFor}): `jobs.transaction(async (tx) => ...)` hands the
 * caller's own statements `tx.db` on SQLite and `tx.sql` on PostgreSQL,
 * and they commit or roll back with the jobs enqueued inside.
 *
 * The location is the first argument, or `db` of the one options object:
 * `openJobs("./jobs.db")` and `openJobs({ db: "./jobs.db" })` are the same.
 *
 * @example Open a store, enqueue in one transaction, run
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, openJobs, silentLogger } from "@jobs/jobs";
 *
 * const welcomed = Promise.withResolvers<number>();
 * const welcome = defineWorker<{ signupId: number }>({
 *   name: "welcome",
 *   perform: (args) => welcomed.resolve(args.signupId),
 * });
 * const audit = defineWorker<{ event: string }>({ name: "audit", perform: () => {} });
 *
 * // "jobs.db" (created and migrated when missing), or "postgres://user@host:5432/db?schema=jobs".
 * const jobs = await openJobs(":memory:", { workers: [welcome, audit], logger: silentLogger });
 * // Both jobs, and your own writes through tx.db (tx.sql on PostgreSQL), commit together.
 * await jobs.transaction(async (tx) => {
 *   await jobs.enqueue(welcome, { signupId: 7 }, { tx });
 *   await jobs.enqueue(audit, { event: "signup" }, { tx });
 * });
 * await jobs.start({ queues: { default: 5 } }); // queue -> jobs at once on this node
 * assert.equal(await welcomed.promise, 7);
 * await jobs.close({ grace: 10_000 }); // stops the runtimes, then closes the store
 * ```
 */
export function openJobs<L extends string>(
  location: L,
  options?: OpenJobsOptions,
): Promise<Jobs<TxFor<L>>>;
export function openJobs<L extends string>(options: OpenJobsAt<L>): Promise<Jobs<TxFor<L>>>;
export async function openJobs<L extends string>(
  where: L | OpenJobsAt<L>,
  more: OpenJobsOptions = {},
): Promise<Jobs<TxFor<L>>> {
  const { db: location, ...options } = typeof where === "string" ? { ...more, db: where } : where;
  if (typeof location !== "string" || location === "") {
    throw new TypeError(`openJobs: the store's location (db) must be a path or a postgres:// URL`);
  }
  const clock = options.clock ?? new SystemClock();
  const open = { mode: "create" as const, now: clock.now(), ...options };
  // The location picked the adapter, so its transaction is the one TxFor<L> names.
  const store =
    (isPostgresLocation(location)
      ? (await openStore(location, open)).store
      : await openSqliteLocation(location, open)) as Store<TxFor<L>>;
  return new Jobs({ ...options, clock, store });
}

/**
 * `<hostname>:<pid>:<nonce>`: unique per process even when several share a
 * host, and never reused after a restart with the same pid.
 */
export function defaultNodeName(): string {
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(3)))
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  let host = "localhost";
  try {
    host = hostname();
  } catch {
    // no permission to read the host name: the pid and nonce still make it unique
  }
  return `${host}:${Deno.pid}:${nonce}`;
}

/** The process's environment variable `name`, or undefined where env access is not granted. */
function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}
