/**
 * Workers: what a library user defines, and what a worker may return.
 *
 * @module
 */

import type { Backoff } from "./backoff.ts";
import type { RunSettings } from "./run_settings.ts";
import { checkUnique, type UniqueOptions } from "./unique.ts";

/** What a running job knows about itself. */
export interface JobContext {
  /** Aborts on timeout, operator cancel, lost lease or shutdown: stop work when it fires. */
  readonly signal: AbortSignal;
  /** This attempt's number, from 1. */
  readonly attempt: number;
  /** The lease's fencing value: rises on every claim; pass it to systems that can reject stale writers. */
  readonly fence: number;
  /**
   * Stable across every attempt of this job (the occurrence identity for a
   * scheduled occurrence, `job:<id>` otherwise): make side effects idempotent with it.
   */
  readonly idempotencyKey: string;
  /**
   * Keeps `text` as this attempt's output, shown with the attempt: redacted,
   * and only its last 64 KiB (a marker says how much was cut). A later call
   * replaces an earlier one.
   */
  output(text: string): void;
  /**
   * The job's run settings (a schedule's timeout, backoff and retention, and
   * the hash of the definition it was built from), read once from its meta.
   */
  readonly settings: RunSettings;
  /**
   * The timeout this attempt runs under, in ms: the job's own setting, else
   * the worker's `timeout`; undefined when neither sets one.
   */
  readonly timeoutMs: number | undefined;
  /**
   * A workflow step's place in its run and what it got (the run's input,
   * its dependencies' results, its item), or null for a job that is not a
   * step of a workflow run.
   */
  readonly workflow: StepContext | null;
  /**
   * A step's resume position, stored beside its run's state: after a crash
   * or a failed attempt, the retried step reads where it got to and goes on
   * from there. Only a workflow step has one; elsewhere both methods reject.
   */
  readonly cursor: StepCursor;
  /** The job's row as claimed. */
  readonly job: {
    readonly id: number;
    readonly queue: string;
    readonly worker: string;
    readonly maxAttempts: number;
    readonly priority: number;
    readonly occurrence: string | null;
    /** The tenant the job runs for (a `tenant:` schedule's, the enqueuer's), or null. */
    readonly tenant: string | null;
    readonly meta: Record<string, unknown>;
    readonly tags: string[];
    readonly insertedAt: number;
    readonly scheduledAt: number;
  };
}

/** What a workflow step knows of its run (see `src/workflow/`). */
export interface StepContext {
  /** The run's id. */
  readonly run: number;
  /** The definition's id. */
  readonly workflow: string;
  /** The step's id (for a compensation, the step it undoes). */
  readonly step: string;
  /** A step run or the compensation of one. */
  readonly kind: "step" | "compensation";
  /** The use case the job runs (a compensation's own), or null. */
  readonly useCase: string | null;
  /** The run's input. */
  readonly input: unknown;
  /** The results of the steps it depends on, by step id (a compensation: of every completed step). */
  readonly results: Readonly<Record<string, unknown>>;
  /** For an item of a fanned-out step: its index and the item; else null and undefined. */
  readonly index: number | null;
  readonly item: unknown;
  /** For a compensation: the step it undoes and what that step returned. */
  readonly compensates: { readonly step: string; readonly result: unknown } | null;
}

/** Anything that writes a step's cursor inside a transaction: a store transaction does. */
export interface CursorWriter {
  workflowCursorSet(params: { jobId: number; fence: number; value: string; now: number }): Promise<
    boolean
  >;
}

/** A workflow step's resume position (see {@linkcode JobContext.cursor}). */
export interface StepCursor {
  /** The position the step last wrote (in any attempt), or null when it never wrote one. */
  get<T = unknown>(): Promise<T | null>;
  /**
   * Writes the position (JSON), fenced by this attempt's lease: when the
   * lease is gone it writes nothing and rejects. With `tx` (a store
   * transaction), it commits with what else that transaction writes, so the
   * position never runs ahead of (or lags behind) the progress it marks.
   */
  set(value: unknown, options?: { tx?: CursorWriter }): Promise<void>;
}

/**
 * What `perform` may return instead of finishing normally. Throwing an error
 * means "retry with backoff while attempts remain".
 */
export type Outcome =
  | void
  | undefined
  | { snooze: number }
  | { cancel: string }
  | { discard: string }
  /** Done, with a result: a workflow step's result is stored and handed to its dependants. */
  | { result: unknown };

/** Anything with zod's `parse`: validates and narrows the args. */
export interface ArgsSchema<A> {
  parse(input: unknown): A;
}

/** A worker, as passed to {@linkcode defineWorker}. */
export interface WorkerOptions<A> {
  /** Unique name; stored on each job, so keep it stable. */
  name: string;
  /** Default queue for its jobs. @default "default" */
  queue?: string;
  /** Attempts before a failing job is discarded. @default 20 */
  maxAttempts?: number;
  /** 0 (first) to 9 (last). @default 0 */
  priority?: number;
  /**
   * Abort `perform` after this many ms and retry. A job's own timeout (a
   * schedule's `timeout`) wins over it. @default no timeout
   */
  timeout?: number;
  /**
   * `perform` applies `ctx.timeoutMs` itself and returns only once its work
   * has stopped, so the executor starts no timer of its own. The command
   * runner does: it must end its process group before the attempt ends.
   * @default false
   */
  selfTimed?: boolean;
  /** Delay before a retry. @default defaultBackoff */
  backoff?: Backoff;
  /** Uniqueness of its jobs. @default not unique */
  unique?: UniqueOptions;
  /**
   * Validates args before `perform` (a zod schema works): args it rejects
   * are discarded at once, since retrying cannot help.
   */
  args?: ArgsSchema<A>;
  /** Does the work. Return nothing for done, or an {@linkcode Outcome}. */
  perform(args: A, ctx: JobContext): Outcome | Promise<Outcome>;
}

/** A defined worker: its options, checked. */
export interface Worker<A = unknown> extends Readonly<WorkerOptions<A>> {
  readonly queue: string;
  readonly maxAttempts: number;
  readonly priority: number;
}

/** Default attempts for a worker's jobs. */
export const DEFAULT_MAX_ATTEMPTS = 20;
/** Default queue. */
export const DEFAULT_QUEUE = "default";

const NAME = /^[A-Za-z0-9][\w.:/-]{0,127}$/;

/**
 * Checks a worker's options and returns the worker; names the field and value on error.
 *
 * What `perform` returns decides how the attempt ends: nothing completes the
 * job; `{ snooze: ms }` runs it again later without using up an attempt;
 * `{ cancel: reason }` and `{ discard: reason }` end it; a throw retries it
 * after `backoff` while attempts remain, and discards it after the last.
 *
 * @example A worker with its options, and the outcomes of its attempts
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, exponentialBackoff } from "@jobs/jobs";
 * import { performJob } from "@jobs/jobs/testing";
 *
 * const sendReceipt = defineWorker<{ orderId: number; email: string }>({
 *   name: "send_receipt", // stored on each job: keep it stable
 *   queue: "email", // @default "default"
 *   maxAttempts: 5, // @default 20
 *   timeout: 30_000, // ctx.signal aborts after 30 s and the attempt fails
 *   backoff: exponentialBackoff(1_000, 60_000),
 *   perform(args, ctx) {
 *     // ctx.signal, ctx.attempt, ctx.fence, ctx.idempotencyKey ("job:<id>", every attempt)
 *     if (!args.email.includes("@")) return { discard: `no mailbox for order ${args.orderId}` };
 *     if (ctx.attempt === 1) return { snooze: 10_000 }; // try again in 10 s, attempt not used up
 *     if (args.orderId < 0) throw new Error("mail service down"); // retried with backoff
 *     return; // nothing: completed
 *   },
 * });
 *
 * const order = { orderId: 1, email: "ada@example.com" };
 * assert.equal((await performJob(sendReceipt, order)).outcome, "snoozed");
 * assert.equal((await performJob(sendReceipt, order, { attempt: 2 })).outcome, "completed");
 * const bad = await performJob(sendReceipt, { orderId: 2, email: "nobody" });
 * assert.equal(bad.outcome, "discarded");
 * ```
 */
export function defineWorker<A = unknown>(options: WorkerOptions<A>): Worker<A> {
  const where = `worker "${options.name}"`;
  if (typeof options.name !== "string" || !NAME.test(options.name)) {
    throw new TypeError(
      `worker name must be 1-128 letters, digits or ._:/- starting with a letter or digit, got "${options.name}"`,
    );
  }
  const queue = options.queue ?? DEFAULT_QUEUE;
  checkQueueName(queue, where);
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  checkMaxAttempts(maxAttempts, where);
  if (options.timeout !== undefined && !(options.timeout > 0)) {
    throw new RangeError(
      `${where}: timeout must be a positive number of ms, got ${options.timeout}`,
    );
  }
  if (typeof options.perform !== "function") {
    throw new TypeError(`${where}: perform must be a function`);
  }
  if (options.unique) checkUnique(options.unique, where);
  return Object.freeze({
    ...options,
    queue,
    maxAttempts,
    priority: clampPriority(options.priority ?? 0),
  });
}

/** Priorities outside 0-9 are clamped, not refused: a priority is a hint. */
export function clampPriority(priority: number): number {
  if (!Number.isFinite(priority)) return 0;
  return Math.min(9, Math.max(0, Math.round(priority)));
}

/** Refuses a max attempts below 1 or not an integer. */
export function checkMaxAttempts(value: number, where: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${where}: maxAttempts must be an integer >= 1, got ${value}`);
  }
}

/** Refuses an empty or odd queue name. */
export function checkQueueName(queue: string, where: string): void {
  if (typeof queue !== "string" || !NAME.test(queue)) {
    throw new TypeError(`${where}: queue must be 1-128 letters, digits or ._:/-, got "${queue}"`);
  }
}
