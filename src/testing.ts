/**
 * Testing helpers for library users, in the spirit of Oban.Testing and
 * rivertest: drain queues through the real claim -> perform -> record path,
 * assert what was enqueued, perform one job without a store, and wait for a
 * condition with a deadline instead of sleeping.
 *
 * @example Assert what a piece of code enqueued, then run it
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, type Jobs, openJobs, silentLogger } from "@jobs/jobs";
 * import { assertEnqueued, drainQueue, refuteEnqueued } from "@jobs/jobs/testing";
 *
 * const sendReceipt = defineWorker<{ orderId: number }>({
 *   name: "send_receipt",
 *   queue: "email",
 *   perform: () => {},
 * });
 * // The code under test.
 * async function checkout(jobs: Jobs, order: { orderId: number }) {
 *   await jobs.enqueue(sendReceipt, order, { tags: ["checkout"] });
 * }
 *
 * const jobs = await openJobs(":memory:", { workers: [sendReceipt], logger: silentLogger });
 * await checkout(jobs, { orderId: 7 });
 * await assertEnqueued(jobs, { worker: sendReceipt, args: { orderId: 7 }, tags: ["checkout"] });
 * await refuteEnqueued(jobs, { worker: sendReceipt, args: { orderId: 8 } });
 * assert.equal((await drainQueue(jobs, "email")).completed, 1);
 * await jobs.close();
 * ```
 *
 * @module
 */

import { AssertionError } from "node:assert";
import { setTimeout as delay } from "node:timers/promises";
import { FakeClock } from "./clock.ts";
import type { Jobs } from "./jobs.ts";
import { serializeArgs } from "./kernel/enqueue.ts";
import { execute } from "./kernel/executor.ts";
import {
  type ClaimedJob,
  INCOMPLETE_STATES,
  type Job,
  type JobResult,
  type JobState,
} from "./kernel/types.ts";
import type { Worker } from "./kernel/worker.ts";
import type { StoreTx } from "./store/store.ts";

/** Options of the drain helpers. */
export interface DrainOptions {
  /** Only this queue. @default every queue with available jobs */
  queue?: string;
  /** Make scheduled and retryable jobs available first, whatever their time. @default false */
  withScheduled?: boolean;
  /** Keep draining jobs that the drained jobs enqueue (and retries, with `withScheduled`). @default true */
  withRecursion?: boolean;
  /** Jobs claimed per round. @default 10 */
  batch?: number;
  /** The node name the claims carry. @default "drain:<random>" */
  node?: string;
}

/** How many attempts ended in each way during a drain. */
export interface DrainResult {
  completed: number;
  snoozed: number;
  cancelled: number;
  discarded: number;
  retryable: number;
  /** Results whose lease was gone when written (another drain or node took the job). */
  lost: number;
}

const LEASE_MS = 5 * 60_000;

/**
 * Runs available jobs until none is left, through the real store: each job
 * is claimed (fence and attempt rise), performed by its worker and recorded.
 *
 * @example A job that fails once, retried without waiting for its backoff
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, openJobs, silentLogger } from "@jobs/jobs";
 * import { drainJobs } from "@jobs/jobs/testing";
 *
 * const flaky = defineWorker({
 *   name: "flaky",
 *   perform: (_args, ctx) => {
 *     if (ctx.attempt === 1) throw new Error("first attempt fails");
 *   },
 * });
 * const jobs = await openJobs(":memory:", { workers: [flaky], logger: silentLogger });
 * await jobs.enqueue(flaky, {});
 * const first = await drainJobs(jobs);
 * assert.deepEqual([first.completed, first.retryable], [0, 1]); // the retry is due later
 * const rest = await drainJobs(jobs, { withScheduled: true }); // due now, whatever its time
 * assert.equal(rest.completed, 1);
 * await jobs.close();
 * ```
 */
export async function drainJobs<Tx extends StoreTx>(
  jobs: Jobs<Tx>,
  options: DrainOptions = {},
): Promise<DrainResult> {
  const result: DrainResult = {
    completed: 0,
    snoozed: 0,
    cancelled: 0,
    discarded: 0,
    retryable: 0,
    lost: 0,
  };
  const node = options.node ?? `drain:${crypto.randomUUID().slice(0, 8)}`;
  const batch = options.batch ?? 10;
  const recursive = options.withRecursion ?? true;
  let round = 0;
  for (;;) {
    if (options.withScheduled) {
      // Far future: every scheduled or retryable job counts as due.
      await jobs.store.jobsStage({ now: Number.MAX_SAFE_INTEGER, limit: 1_000_000 });
    } else {
      await jobs.store.jobsStage({ now: jobs.clock.now(), limit: 1_000_000 });
    }
    const queues = options.queue !== undefined ? [options.queue] : await availableQueues(jobs);
    let ran = 0;
    for (const queue of queues) {
      for (;;) {
        const { jobs: claimed } = await jobs.store.jobsClaim({
          queue,
          node,
          limit: batch,
          now: jobs.clock.now(),
          leaseMs: LEASE_MS,
          // Staged early, a scheduled job is available but still dated later.
          dueBy: options.withScheduled ? Number.MAX_SAFE_INTEGER : undefined,
        });
        if (claimed.length === 0) break;
        ran += claimed.length;
        const results: JobResult[] = [];
        for (const job of claimed) {
          results.push(
            await execute(job, new AbortController(), {
              registry: jobs.registry,
              clock: jobs.clock,
              random: jobs.random,
              cursors: jobs.store,
            }),
          );
        }
        const report = await jobs.store.jobsRecord({ node, now: jobs.clock.now(), results });
        const recorded = new Set(report.recorded);
        for (const r of results) {
          if (recorded.has(r.id)) result[r.outcome]++;
        }
        result.lost += report.lost.length;
        if (!recursive) break;
      }
    }
    round++;
    if (!recursive || ran === 0 || round > 10_000) break;
  }
  return result;
}

/** Drains one queue; see {@linkcode drainJobs}. */
export function drainQueue<Tx extends StoreTx>(
  jobs: Jobs<Tx>,
  queue: string,
  options: Omit<DrainOptions, "queue"> = {},
): Promise<DrainResult> {
  return drainJobs(jobs, { ...options, queue });
}

/** Drains every queue, scheduled jobs included; see {@linkcode drainJobs}. */
export function drainAllJobs<Tx extends StoreTx>(
  jobs: Jobs<Tx>,
  options: Omit<DrainOptions, "queue"> = {},
): Promise<DrainResult> {
  return drainJobs(jobs, { withScheduled: true, ...options });
}

async function availableQueues<Tx extends StoreTx>(jobs: Jobs<Tx>): Promise<string[]> {
  const counts = await jobs.store.jobsCount({});
  return [...new Set(counts.filter((c) => c.state === "available").map((c) => c.queue))];
}

/** What to look for in {@linkcode enqueued}, {@linkcode assertEnqueued} and {@linkcode refuteEnqueued}. */
export interface EnqueuedFilter {
  // deno-lint-ignore no-explicit-any
  worker?: Worker<any> | string;
  queue?: string;
  /** Matches when every key given here equals the job's (deeply); other keys are ignored. */
  args?: unknown;
  /** Matches when every key given here equals the job's meta. */
  meta?: Record<string, unknown>;
  /** Every tag given must be on the job. */
  tags?: string[];
  priority?: number;
  /** @default the incomplete states (scheduled, available, executing, retryable) */
  state?: JobState | JobState[];
}

/** The jobs in the store that match `filter`, oldest first. */
export async function enqueued<Tx extends StoreTx>(
  jobs: Jobs<Tx>,
  filter: EnqueuedFilter = {},
): Promise<Job[]> {
  const worker = typeof filter.worker === "string" ? filter.worker : filter.worker?.name;
  const rows = await jobs.store.jobsList({
    worker,
    queue: filter.queue,
    state: filter.state ?? [...INCOMPLETE_STATES],
  });
  return rows.filter((job) =>
    (filter.args === undefined || contains(job.args, filter.args)) &&
    (filter.meta === undefined || contains(job.meta, filter.meta)) &&
    (filter.tags === undefined || filter.tags.every((t) => job.tags.includes(t))) &&
    (filter.priority === undefined || job.priority === filter.priority)
  );
}

/** Throws unless at least one job matches `filter`. */
export async function assertEnqueued<Tx extends StoreTx>(
  jobs: Jobs<Tx>,
  filter: EnqueuedFilter,
): Promise<Job[]> {
  const found = await enqueued(jobs, filter);
  if (found.length > 0) return found;
  const nearby = await enqueued(jobs, { worker: filter.worker, state: filter.state });
  throw new AssertionError({
    message: `expected a job matching ${describe(filter)}, found none` +
      (nearby.length
        ? `; jobs of that worker: ${nearby.slice(0, 5).map(brief).join(", ")}`
        : "; the store has no such job"),
  });
}

/** Throws if any job matches `filter`. */
export async function refuteEnqueued<Tx extends StoreTx>(
  jobs: Jobs<Tx>,
  filter: EnqueuedFilter,
): Promise<void> {
  const found = await enqueued(jobs, filter);
  if (found.length === 0) return;
  throw new AssertionError({
    message: `expected no job matching ${describe(filter)}, found ${found.length}: ${
      found.slice(0, 5).map(brief).join(", ")
    }`,
  });
}

function describe(filter: EnqueuedFilter): string {
  const worker = typeof filter.worker === "string" ? filter.worker : filter.worker?.name;
  return JSON.stringify({ ...filter, worker });
}

function brief(job: Job): string {
  return `#${job.id} ${job.worker} ${job.state} ${JSON.stringify(job.args)}`;
}

/** Deep partial match: every key of `expected` is in `actual` with an equal value. */
function contains(actual: unknown, expected: unknown): boolean {
  if (expected === actual) return true;
  if (typeof expected !== "object" || expected === null) return false;
  if (typeof actual !== "object" || actual === null) return false;
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length &&
      expected.every((v, i) => contains(actual[i], v));
  }
  return Object.entries(expected).every(([k, v]) =>
    contains((actual as Record<string, unknown>)[k], v)
  );
}

/** Options of {@linkcode performJob}. */
export interface PerformOptions {
  /** @default 1 */
  attempt?: number;
  /** @default the worker's */
  maxAttempts?: number;
  /** @default a FakeClock */
  clock?: FakeClock;
  /** Aborts the job's signal, to test cancellation handling. */
  signal?: AbortSignal;
  /** @default "job:1" */
  occurrence?: string;
  /** The tenant the job runs for. @default null */
  tenant?: string | null;
}

/**
 * Runs one worker on `args` without a store, through the same executor the
 * runtime uses (args serialized and validated, timeout, outcome mapping), and
 * returns how the attempt ended.
 */
export async function performJob<A>(
  worker: Worker<A>,
  args: A,
  options: PerformOptions = {},
): Promise<JobResult> {
  const clock = options.clock ?? new FakeClock();
  const now = clock.now();
  const job: ClaimedJob = {
    id: 1,
    queue: worker.queue,
    worker: worker.name,
    args: serializeArgs(args, `performJob "${worker.name}"`),
    meta: "{}",
    tags: "[]",
    occurrence: options.occurrence ?? null,
    attempt: options.attempt ?? 1,
    maxAttempts: options.maxAttempts ?? worker.maxAttempts,
    priority: worker.priority,
    fence: options.attempt ?? 1,
    insertedAt: now,
    scheduledAt: now,
    attemptedAt: now,
    tenant: options.tenant ?? null,
  };
  const control = new AbortController();
  options.signal?.addEventListener("abort", () => control.abort(options.signal?.reason), {
    once: true,
  });
  return await execute(job, control, { registry: new Map([[worker.name, worker]]), clock });
}

/** Options of {@linkcode waitUntil}. */
export interface WaitOptions {
  /** Give up after this many ms of real time. @default 10_000 */
  timeoutMs?: number;
  /** Poll every this many ms. @default 5 */
  intervalMs?: number;
}

/**
 * Polls `condition` until it returns a truthy value (returned), or throws
 * after the deadline naming `what` was awaited: wait for events, never sleep.
 */
export async function waitUntil<T>(
  what: string,
  condition: () => T | Promise<T>,
  options: WaitOptions = {},
): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await delay(options.intervalMs ?? 5);
  }
}
