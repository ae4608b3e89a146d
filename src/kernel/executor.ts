/**
 * Runs one claimed job and decides how its attempt ended, as a pipeline of
 * small steps: resolve the worker, decode and validate the args, perform
 * (with timeout and abort), and map the outcome to exactly one result. The
 * executor never touches the store; the producer records what it returns.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { defaultBackoff } from "./backoff.ts";
import { describeError } from "./redact.ts";
import type { ClaimedJob, JobResult } from "./types.ts";
import type { JobContext, Outcome, Worker } from "./worker.ts";

/** The workers a process knows, by name. */
// deno-lint-ignore no-explicit-any
export type Registry = ReadonlyMap<string, Worker<any>>;

/** What the executor needs besides the job. */
export interface ExecuteDeps {
  registry: Registry;
  clock: Clock;
  /** Random in [0, 1) for backoff jitter. @default Math.random */
  random?: () => number;
}

/** Raised into `ctx.signal` when the worker's timeout passes. */
export class JobTimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = "JobTimeoutError";
  }
}

/**
 * Runs `job` and returns its result. `control` is the job's abort controller:
 * the runtime aborts it on operator cancel, lost lease or shutdown (and then
 * records nothing); the executor aborts it on timeout.
 */
export async function execute(
  job: ClaimedJob,
  control: AbortController,
  deps: ExecuteDeps,
): Promise<JobResult> {
  const base = { id: job.id, fence: job.fence, attempt: job.attempt, startedAt: job.attemptedAt };
  const worker = deps.registry.get(job.worker);
  if (!worker) {
    return { ...base, outcome: "discarded", error: `unknown worker "${job.worker}"` };
  }
  let args: unknown;
  try {
    args = JSON.parse(job.args);
    if (worker.args) args = worker.args.parse(args);
  } catch (error) {
    return { ...base, outcome: "discarded", error: `invalid args: ${describeError(error)}` };
  }
  try {
    const outcome = await perform(
      worker,
      args,
      contextFor(job, control.signal),
      control,
      deps.clock,
    );
    return resultOf(outcome, base, deps.clock);
  } catch (error) {
    return failure(error, job, worker, base, deps);
  }
}

function perform(
  // deno-lint-ignore no-explicit-any
  worker: Worker<any>,
  args: unknown,
  ctx: JobContext,
  control: AbortController,
  clock: Clock,
): Promise<Outcome> {
  const running = Promise.resolve().then(() => worker.perform(args, ctx));
  if (worker.timeout === undefined) return running;
  const ms = worker.timeout;
  const stopTimer = new AbortController();
  const timer = clock.sleep(ms, stopTimer.signal).then(() => {
    if (stopTimer.signal.aborted) return undefined;
    const error = new JobTimeoutError(ms);
    control.abort(error);
    throw error;
  });
  return Promise.race([running, timer]).finally(() => stopTimer.abort()) as Promise<Outcome>;
}

function contextFor(job: ClaimedJob, signal: AbortSignal): JobContext {
  let meta: Record<string, unknown> | undefined;
  let tags: string[] | undefined;
  return {
    signal,
    attempt: job.attempt,
    fence: job.fence,
    idempotencyKey: job.occurrence ?? `job:${job.id}`,
    job: {
      id: job.id,
      queue: job.queue,
      worker: job.worker,
      maxAttempts: job.maxAttempts,
      priority: job.priority,
      occurrence: job.occurrence,
      get meta() {
        return (meta ??= JSON.parse(job.meta));
      },
      get tags() {
        return (tags ??= JSON.parse(job.tags));
      },
      insertedAt: job.insertedAt,
      scheduledAt: job.scheduledAt,
    },
  };
}

type Base = Pick<JobResult, "id" | "fence" | "attempt" | "startedAt">;

/** Maps what `perform` returned to one result. */
export function resultOf(outcome: Outcome, base: Base, clock: Clock): JobResult {
  if (outcome == null) return { ...base, outcome: "completed" };
  if ("snooze" in outcome) {
    const ms = Number(outcome.snooze);
    if (!(ms >= 0)) {
      return { ...base, outcome: "discarded", error: `invalid snooze ${outcome.snooze}` };
    }
    return { ...base, outcome: "snoozed", until: clock.now() + ms };
  }
  if ("cancel" in outcome) {
    return { ...base, outcome: "cancelled", error: describeError(outcome.cancel) };
  }
  if ("discard" in outcome) {
    return { ...base, outcome: "discarded", error: describeError(outcome.discard) };
  }
  return { ...base, outcome: "completed" };
}

function failure(
  error: unknown,
  job: ClaimedJob,
  // deno-lint-ignore no-explicit-any
  worker: Worker<any>,
  base: Base,
  deps: ExecuteDeps,
): JobResult {
  const text = describeError(error);
  if (job.attempt >= job.maxAttempts) return { ...base, outcome: "discarded", error: text };
  const backoff = worker.backoff ?? defaultBackoff;
  let delay: number;
  try {
    delay = Math.max(0, backoff(job.attempt, deps.random ?? Math.random));
  } catch {
    delay = defaultBackoff(job.attempt, deps.random ?? Math.random);
  }
  if (!Number.isFinite(delay)) delay = defaultBackoff(job.attempt, deps.random ?? Math.random);
  return { ...base, outcome: "retryable", error: text, at: deps.clock.now() + delay };
}
