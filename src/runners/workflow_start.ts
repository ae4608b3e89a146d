/**
 * The `jobs.workflow` runner: a schedule's occurrence whose run is
 * `{ workflow: <id>, input: {...} }` is a job of this worker, and performing
 * it starts one run of the workflow. Its args are a
 * {@linkcode WorkflowStartRun}: the compiled definition and the input, put
 * there when the occurrence was planned, so the run is the definition the
 * schedule named then, whatever the configuration says when the job runs.
 *
 * The start is idempotent by the occurrence's identity (a job that is no
 * occurrence uses its idempotency key, `job:<id>`): an attempt that started
 * the run and then lost its lease, or crashed before its completion was
 * recorded, is retried, and the retry finds the run it started instead of
 * starting another. The store writes the run's row and the jobs of its first
 * steps in one transaction; this runner then wakes the queues of those jobs,
 * and completes with `{ run: <id> }` as its result.
 *
 * Args that are not a start (another kind, a definition missing its steps or
 * their jobs) are discarded at once: retrying cannot mend them. A store that
 * cannot be reached fails the attempt, which is retried with backoff.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { serializeArgs } from "../kernel/enqueue.ts";
import { type ArgsSchema, defineWorker, type Outcome, type Worker } from "../kernel/worker.ts";
import { withWorkerDefaults } from "../workflow/definition.ts";
import type { Store } from "../store/store.ts";
import {
  type CompiledStep,
  type CompiledWorkflow,
  type JobTemplate,
  type WorkflowStartRun,
} from "../workflow/types.ts";
import { WORKFLOW_START_WORKER } from "../kernel/runs.ts";

export { WORKFLOW_START_WORKER };
export type { WorkflowStartRun };

/** Options of {@linkcode workflowStartWorker}; they mirror the fan-out runner's. */
export interface WorkflowStartWorkerOptions {
  /** The store runs start in (a function: the daemon opens it after building its workers). */
  store: () => Store;
  /** Dates the run's start and its first step jobs. */
  clock: Clock;
  /** Told the queues that got the run's first step jobs, e.g. to wake their producers. */
  onEnqueued?: (queues: string[]) => void;
  /**
   * The workers of this process: a step of a worker the definition's
   * compiler did not know takes its attempts from here. @default none
   */
  // deno-lint-ignore no-explicit-any
  workers?: () => ReadonlyMap<string, Worker<any>>;
}

/** The `jobs.workflow` worker: starts one workflow run per job, once per occurrence. */
export function workflowStartWorker(options: WorkflowStartWorkerOptions): Worker<WorkflowStartRun> {
  const onEnqueued = options.onEnqueued ?? (() => {});
  return defineWorker<WorkflowStartRun>({
    name: WORKFLOW_START_WORKER,
    args: workflowStartRunSchema,
    async perform(run, ctx): Promise<Outcome> {
      const where = `workflow "${run.definition.id}" input`;
      let input: string;
      try {
        input = serializeArgs(run.input ?? null, where);
      } catch (error) {
        return { discard: (error as Error).message };
      }
      const key = ctx.job.occurrence ?? ctx.idempotencyKey;
      const workers = options.workers?.();
      const definition = workers ? withWorkerDefaults(run.definition, workers) : run.definition;
      const started = await options.store().workflowStart({
        definition,
        input,
        // The occurrence's tenant (a `tenant:` schedule's): the run and its step jobs carry it.
        tenant: ctx.job.tenant ?? null,
        key,
        now: options.clock.now(),
      });
      if (started.queues.length > 0) onEnqueued(started.queues);
      ctx.output(
        started.duplicate
          ? `run ${started.id} of workflow "${run.definition.id}" was already started for "${key}"`
          : `started run ${started.id} of workflow "${run.definition.id}"`,
      );
      return { result: { run: started.id } };
    },
  });
}

// ---------------------------------------------------------------------------
// Args

/**
 * Validates a {@linkcode WorkflowStartRun}: the shape of the compiled
 * definition (every step with its job, dependencies on earlier steps), not
 * the record rules, which were checked when it was compiled.
 */
export const workflowStartRunSchema: ArgsSchema<WorkflowStartRun> = {
  parse(input: unknown): WorkflowStartRun {
    if (!isRecord(input) || input.kind !== "workflow") {
      throw new TypeError(
        `workflow start must be an object of kind "workflow", got ${show(input)}`,
      );
    }
    return { kind: "workflow", definition: parseDefinition(input.definition), input: input.input };
  },
};

function parseDefinition(value: unknown): CompiledWorkflow {
  if (!isRecord(value)) {
    throw new TypeError(`workflow start: definition must be an object, got ${show(value)}`);
  }
  const { id, saga, hash, steps } = value;
  if (typeof id !== "string" || id === "") {
    throw new TypeError(
      `workflow start: definition id must be a non-empty string, got ${show(id)}`,
    );
  }
  const where = `workflow "${id}"`;
  if (typeof saga !== "boolean") {
    throw new TypeError(`${where}: saga must be true or false, got ${show(saga)}`);
  }
  if (typeof hash !== "string" || hash === "") {
    throw new TypeError(`${where}: hash must be a non-empty string, got ${show(hash)}`);
  }
  if (!Array.isArray(steps) || steps.length === 0) {
    throw new TypeError(`${where}: steps must be a non-empty list, got ${show(steps)}`);
  }
  const seen = new Set<string>();
  for (const step of steps) {
    checkStep(step, where, seen);
    seen.add((step as CompiledStep).id);
  }
  return value as unknown as CompiledWorkflow;
}

/** One compiled step; `earlier` holds the ids before it (the steps come in dependency order). */
function checkStep(step: unknown, where: string, earlier: ReadonlySet<string>): void {
  if (!isRecord(step) || typeof step.id !== "string" || step.id === "") {
    throw new TypeError(`${where}: a step must be an object with an id, got ${show(step)}`);
  }
  const at = `${where} step "${step.id}"`;
  if (earlier.has(step.id)) throw new TypeError(`${at} comes twice`);
  const { dependsOn, forEach, optional, useCase, job, compensation } = step;
  if (!Array.isArray(dependsOn) || !dependsOn.every((d) => typeof d === "string")) {
    throw new TypeError(`${at}: dependsOn must be a list of step ids, got ${show(dependsOn)}`);
  }
  const unknown = dependsOn.find((d) => !earlier.has(d));
  if (unknown !== undefined) {
    throw new TypeError(`${at}: depends on "${unknown}", which is not a step before it`);
  }
  if (forEach !== null && (typeof forEach !== "string" || !dependsOn.includes(forEach))) {
    throw new TypeError(
      `${at}: forEach must be null or one of its dependencies, got ${show(forEach)}`,
    );
  }
  if (typeof optional !== "boolean") {
    throw new TypeError(`${at}: optional must be true or false, got ${show(optional)}`);
  }
  if (useCase !== null && typeof useCase !== "string") {
    throw new TypeError(`${at}: useCase must be null or a string, got ${show(useCase)}`);
  }
  checkTemplate(job, at);
  if (compensation === null) return;
  if (!isRecord(compensation)) {
    throw new TypeError(`${at}: compensation must be null or an object, got ${show(compensation)}`);
  }
  if (compensation.mode === "none") {
    if (typeof compensation.reason !== "string") {
      throw new TypeError(`${at}: compensation reason must be a string, got ${show(compensation)}`);
    }
  } else if (compensation.mode === "use-case") {
    if (typeof compensation.useCase !== "string") {
      throw new TypeError(`${at}: compensation must name its use case, got ${show(compensation)}`);
    }
    checkTemplate(compensation.job, `${at} compensation`);
  } else {
    throw new TypeError(
      `${at}: compensation mode must be "use-case" or "none", got ${show(compensation.mode)}`,
    );
  }
}

function checkTemplate(value: unknown, at: string): asserts value is JobTemplate {
  if (!isRecord(value)) throw new TypeError(`${at}: job must be an object, got ${show(value)}`);
  const { worker, spec, queue, priority, maxAttempts, tags } = value;
  if (typeof worker !== "string" || worker === "") {
    throw new TypeError(`${at}: job worker must be a non-empty string, got ${show(worker)}`);
  }
  if (spec !== null && !isRecord(spec)) {
    throw new TypeError(`${at}: job spec must be null or an object, got ${show(spec)}`);
  }
  if (typeof queue !== "string" || queue === "") {
    throw new TypeError(`${at}: job queue must be a non-empty string, got ${show(queue)}`);
  }
  if (typeof priority !== "number" || !Number.isFinite(priority)) {
    throw new TypeError(`${at}: job priority must be a number, got ${show(priority)}`);
  }
  if (!Number.isInteger(maxAttempts) || (maxAttempts as number) < 1) {
    throw new TypeError(`${at}: job maxAttempts must be an integer >= 1, got ${show(maxAttempts)}`);
  }
  if (!Array.isArray(tags) || !tags.every((t) => typeof t === "string")) {
    throw new TypeError(`${at}: job tags must be a list of strings, got ${show(tags)}`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
