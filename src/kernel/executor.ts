/**
 * Runs one claimed job and decides how its attempt ended, as a pipeline of
 * small steps: resolve the worker, decode and validate the args, perform
 * (with timeout and abort), and map the outcome to exactly one result. The
 * executor never touches the store; the producer records what it returns.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { type Backoff, defaultBackoff, exponentialBackoff } from "./backoff.ts";
import { JobFailure } from "./error_text.ts";
import { describeError, describeOutput } from "./redact.ts";
import { type BackoffSpec, type RunSettings, runSettingsOf } from "./run_settings.ts";
import type { ClaimedJob, JobResult } from "./types.ts";
import { EnqueueError, serializeArgs } from "./enqueue.ts";
import { STEP_META_KEY, type StepMeta, type StepPayload } from "./step_meta.ts";
import type {
  CursorWriter,
  JobContext,
  Outcome,
  StepContext,
  StepCursor,
  Worker,
} from "./worker.ts";

/** The workers a process knows, by name. */
// deno-lint-ignore no-explicit-any
export type Registry = ReadonlyMap<string, Worker<any>>;

/** What the executor needs besides the job. */
export interface ExecuteDeps {
  registry: Registry;
  clock: Clock;
  /** Random in [0, 1) for backoff jitter. @default Math.random */
  random?: () => number;
  /** Where workflow steps' cursors are kept (the store). @default none: a step's cursor rejects */
  cursors?: CursorStore;
  /** Largest serialized step result, in bytes. @default 256 KiB */
  resultLimit?: number;
}

/** The store's cursor methods, as the executor needs them. */
export interface CursorStore extends CursorWriter {
  workflowCursorGet(params: { jobId: number }): Promise<string | null>;
}

/** Raised into `ctx.signal` when the worker's timeout passes; stored as its message alone. */
export class JobTimeoutError extends JobFailure {
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = "JobTimeoutError";
  }
}

/**
 * Runs `job` and returns its result. `control` is the job's abort controller:
 * the runtime aborts it on operator cancel, lost lease or shutdown (and then
 * records nothing); the executor aborts it on timeout. `startedAt` is when
 * the attempt began (the claim, or later for a prefetched job).
 */
export async function execute(
  job: ClaimedJob,
  control: AbortController,
  deps: ExecuteDeps,
  startedAt: number = job.attemptedAt,
): Promise<JobResult> {
  const base: Base = { id: job.id, fence: job.fence, attempt: job.attempt, startedAt };
  if (job.occurrence !== null) base.occurrence = job.occurrence;
  // Meta is parsed once, here, for the run settings and for ctx.job.meta;
  // the common empty meta is not parsed at all.
  const meta = metaOf(job.meta);
  const settings = meta === EMPTY ? NO_SETTINGS : runSettingsOf(meta);
  if (settings.definition !== undefined) base.definition = settings.definition;
  const step = meta === EMPTY ? null : stepMetaOf(meta);
  if (step !== null) {
    base.workflow = step.run;
    base.step = { workflow: step.workflow, step: step.step, kind: step.kind };
  }
  const worker = deps.registry.get(job.worker);
  if (!worker) {
    return { ...base, outcome: "discarded", error: `unknown worker "${job.worker}"` };
  }
  let args: unknown;
  try {
    args = JSON.parse(job.args);
    if (worker.args) args = worker.args.parse(args);
  } catch (error) {
    // The schema's message says what is wrong with the args; the frames
    // would only say where the schema noticed, the same for every job.
    const why = error instanceof Error
      ? new JobFailure(
        error.name && error.name !== "Error" ? `${error.name}: ${error.message}` : error.message,
      )
      : error;
    return { ...base, outcome: "discarded", error: `invalid args: ${describeError(why)}` };
  }
  const ctx = new Context(
    job,
    meta,
    control.signal,
    settings,
    settings.timeoutMs ?? worker.timeout,
    step === null ? null : stepContext(step, args),
    deps,
  );
  try {
    const outcome = ctx.timeoutMs === undefined || worker.selfTimed
      ? await worker.perform(args, ctx)
      : await withTimeout(worker, args, ctx, control, deps.clock, ctx.timeoutMs);
    if (ctx.kept !== null) base.output = describeOutput(ctx.kept);
    if (outcome != null && typeof outcome === "object" && "result" in outcome && step !== null) {
      try {
        base.value = serializeArgs(outcome.result, `step "${step.step}" result`, deps.resultLimit);
      } catch (error) {
        if (!(error instanceof EnqueueError)) throw error;
        return { ...base, outcome: "discarded", error: describeError(error) };
      }
    }
    return resultOf(outcome, base, deps.clock);
  } catch (error) {
    if (ctx.kept !== null) base.output = describeOutput(ctx.kept);
    return failure(error, job, worker, base, deps, settings);
  }
}

function withTimeout(
  // deno-lint-ignore no-explicit-any
  worker: Worker<any>,
  args: unknown,
  ctx: JobContext,
  control: AbortController,
  clock: Clock,
  ms: number,
): Promise<Outcome> {
  const running = Promise.resolve().then(() => worker.perform(args, ctx));
  const stopTimer = new AbortController();
  const timer = clock.sleep(ms, stopTimer.signal).then(() => {
    if (stopTimer.signal.aborted) return undefined;
    const error = new JobTimeoutError(ms);
    control.abort(error);
    throw error;
  });
  return Promise.race([running, timer]).finally(() => stopTimer.abort()) as Promise<Outcome>;
}

const EMPTY: Record<string, unknown> = Object.freeze({});
const NO_SETTINGS: RunSettings = Object.freeze({});

/** A job's meta text parsed; {@linkcode EMPTY} for `{}` and for text that is not an object. */
function metaOf(text: string): Record<string, unknown> {
  if (text === "{}") return EMPTY;
  try {
    const parsed = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : EMPTY;
  } catch {
    return EMPTY;
  }
}

/** A step job's meta entry, when it has a well-formed one. */
function stepMetaOf(meta: Record<string, unknown>): StepMeta | null {
  const w = meta[STEP_META_KEY] as Partial<StepMeta> | undefined;
  if (w === null || typeof w !== "object" || typeof w.run !== "number") return null;
  if (typeof w.step !== "string" || typeof w.workflow !== "string") return null;
  return w as StepMeta;
}

/** A command or HTTP step carries its payload in meta; a worker step gets it as its args. */
function stepContext(step: StepMeta, args: unknown): StepContext {
  const payload = (step.payload ?? args ?? {}) as Partial<StepPayload>;
  return Object.freeze({
    run: step.run,
    workflow: step.workflow,
    step: step.step,
    kind: step.kind === "compensation" ? "compensation" : "step",
    useCase: step.useCase ?? null,
    input: payload.input ?? null,
    results: Object.freeze({ ...payload.results }),
    index: step.item >= 0 ? step.item : null,
    item: step.item >= 0 ? payload.item : undefined,
    compensates: payload.compensates ?? null,
  });
}

/** The context of one attempt; tags are parsed only if read. */
class Context implements JobContext {
  readonly job: JobView;
  /** What `output()` kept, raw. */
  kept: string | null = null;
  readonly cursor: StepCursor;
  constructor(
    claimed: ClaimedJob,
    meta: Record<string, unknown>,
    readonly signal: AbortSignal,
    readonly settings: RunSettings,
    readonly timeoutMs: number | undefined,
    readonly workflow: StepContext | null,
    deps: ExecuteDeps,
  ) {
    this.job = new JobView(claimed, meta);
    this.cursor = workflow === null ? NO_CURSOR : new Cursor(claimed, deps);
  }
  get attempt(): number {
    return this.job.claimed.attempt;
  }
  get fence(): number {
    return this.job.claimed.fence;
  }
  get idempotencyKey(): string {
    return this.job.claimed.occurrence ?? `job:${this.job.claimed.id}`;
  }
  output(text: string): void {
    this.kept = String(text);
  }
}

/** A step's cursor, kept by the store and fenced by the attempt's lease. */
class Cursor implements StepCursor {
  constructor(readonly claimed: ClaimedJob, readonly deps: ExecuteDeps) {}
  async get<T>(): Promise<T | null> {
    const store = this.#store();
    const text = await store.workflowCursorGet({ jobId: this.claimed.id });
    return text === null ? null : JSON.parse(text) as T;
  }
  async set(value: unknown, options: { tx?: CursorWriter } = {}): Promise<void> {
    const writer = options.tx ?? this.#store();
    const text = serializeArgs(value, `job ${this.claimed.id} cursor`);
    const held = await writer.workflowCursorSet({
      jobId: this.claimed.id,
      fence: this.claimed.fence,
      value: text,
      now: this.deps.clock.now(),
    });
    if (!held) {
      throw new JobFailure(`cursor not written: job ${this.claimed.id} no longer holds its lease`);
    }
  }
  #store(): CursorStore {
    if (!this.deps.cursors) throw new TypeError(`no store to keep job ${this.claimed.id}'s cursor`);
    return this.deps.cursors;
  }
}

const NO_CURSOR: StepCursor = Object.freeze({
  get: () => Promise.reject(new TypeError("only a workflow step has a cursor")),
  set: () => Promise.reject(new TypeError("only a workflow step has a cursor")),
});

class JobView {
  #meta: Record<string, unknown> | undefined;
  #tags: string[] | undefined;
  constructor(readonly claimed: ClaimedJob, meta: Record<string, unknown>) {
    // The shared empty object is not handed out: a worker may write to its meta.
    if (meta !== EMPTY) this.#meta = meta;
  }
  get id(): number {
    return this.claimed.id;
  }
  get queue(): string {
    return this.claimed.queue;
  }
  get worker(): string {
    return this.claimed.worker;
  }
  get maxAttempts(): number {
    return this.claimed.maxAttempts;
  }
  get priority(): number {
    return this.claimed.priority;
  }
  get occurrence(): string | null {
    return this.claimed.occurrence;
  }
  get tenant(): string | null {
    return this.claimed.tenant;
  }
  get meta(): Record<string, unknown> {
    return (this.#meta ??= JSON.parse(this.claimed.meta));
  }
  get tags(): string[] {
    return (this.#tags ??= JSON.parse(this.claimed.tags));
  }
  get insertedAt(): number {
    return this.claimed.insertedAt;
  }
  get scheduledAt(): number {
    return this.claimed.scheduledAt;
  }
}

type Base = Pick<
  JobResult,
  | "id"
  | "fence"
  | "attempt"
  | "startedAt"
  | "occurrence"
  | "output"
  | "definition"
  | "workflow"
  | "value"
  | "step"
>;

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
  settings: RunSettings,
): JobResult {
  const text = describeError(error);
  if (job.attempt >= job.maxAttempts) return { ...base, outcome: "discarded", error: text };
  const backoff = backoffOf(settings.backoff) ?? worker.backoff ?? defaultBackoff;
  let delay: number;
  try {
    delay = Math.max(0, backoff(job.attempt, deps.random ?? Math.random));
  } catch {
    delay = defaultBackoff(job.attempt, deps.random ?? Math.random);
  }
  if (!Number.isFinite(delay)) delay = defaultBackoff(job.attempt, deps.random ?? Math.random);
  return { ...base, outcome: "retryable", error: text, at: deps.clock.now() + delay };
}

/** A job's own backoff (a schedule's `backoff`, planned onto each occurrence) wins over the worker's. */
function backoffOf(spec: BackoffSpec | undefined): Backoff | null {
  if (spec === undefined) return null;
  if (spec.kind === "fixed") return () => spec.delayMs;
  return exponentialBackoff(spec.baseMs, spec.maxMs);
}
