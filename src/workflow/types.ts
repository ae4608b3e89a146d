/**
 * The words of workflows and sagas: a definition as its author writes it, the
 * compiled form a run carries (so a run never depends on the configuration
 * loaded when it advances), and the rows a store keeps of a run and its
 * steps. Pure data; no store, no I/O.
 *
 * A run is one row of `workflow_runs`; each step, each item of a fanned-out
 * step and each compensation is one row of `workflow_steps` with the job
 * that runs it. A step that has no row yet is waiting for its dependencies.
 *
 * @module
 */

import type { BackoffSpec } from "../kernel/run_settings.ts";
import type { RunSpec } from "../kernel/runs.ts";

/** Where a run is in its life. */
export type RunState =
  | "running"
  | "completed"
  | "compensating"
  | "compensated"
  | "failed"
  | "cancelled";

/** Every run state, in the order a run usually passes through them. */
export const RUN_STATES: readonly RunState[] = [
  "running",
  "compensating",
  "completed",
  "compensated",
  "failed",
  "cancelled",
];

/** States a run never leaves on its own (an operator's retry may resume a failed one). */
export const FINAL_RUN_STATES: readonly RunState[] = [
  "completed",
  "compensated",
  "failed",
  "cancelled",
];

/**
 * Where a step (or an item of it, or a compensation) is. `waiting` is never
 * stored: it is a step with no row yet, shown by the views.
 */
export type StepState = "waiting" | "running" | "completed" | "discarded" | "cancelled";

/** What a step runs once resolved: a worker of the process by name, or a runner's spec. */
export type StepRun =
  | Exclude<RunSpec, { kind: "worker" }>
  | { kind: "worker"; worker: string };

/** The rows a step's job takes besides what it runs. */
export interface JobTemplate {
  /** The worker of the step's job (`jobs.command`, `jobs.http`, or a worker's name). */
  worker: string;
  /** For a `command` or `http` step, its spec (the job's args); null for a worker step. */
  spec: Exclude<StepRun, { kind: "worker" }> | null;
  queue: string;
  priority: number;
  maxAttempts: number;
  tags: string[];
  /**
   * Set when the worker was not known where the definition was compiled (a
   * `schedules.yaml` read without its workers module) and nothing set the
   * attempts: `maxAttempts` is the default until {@linkcode withWorkerDefaults}
   * (`definition.ts`) takes the worker's own, since a worker's retry count
   * lives in its code.
   */
  attemptsFromWorker?: true;
  /** Run settings (timeout, backoff) as a schedule's occurrences carry them. */
  timeoutMs?: number;
  backoff?: BackoffSpec;
}

/** How a saga step is undone, once compiled. */
export type CompiledCompensation =
  | { mode: "use-case"; useCase: string; job: JobTemplate }
  | { mode: "none"; reason: string };

/** One step of a compiled definition. */
export interface CompiledStep {
  id: string;
  dependsOn: string[];
  /** The dependency whose result (a list) fans this step out: one job per item. */
  forEach: string | null;
  /** A discarded optional step does not stop its dependants (they get `null` as its result). */
  optional: boolean;
  /** The use case the step is (sagas; a plain workflow's step may name one too). */
  useCase: string | null;
  job: JobTemplate;
  compensation: CompiledCompensation | null;
}

/**
 * A definition ready to run: checked, every worker and use case resolved.
 * Each run stores it, so advancing a run reads nothing but the run.
 */
export interface CompiledWorkflow {
  id: string;
  /** `carried_by: workflow`: a discarded step runs the compensations of those that completed. */
  saga: boolean;
  /** A stable hash of the definition, stored with each run. */
  hash: string;
  /** In an order where every step comes after its dependencies. */
  steps: CompiledStep[];
}

/** A row of `workflow_runs`. */
export interface WorkflowRun {
  id: number;
  workflow: string;
  hash: string;
  state: RunState;
  input: unknown;
  tenant: string | null;
  /** The start's idempotency key (an occurrence identity, or the caller's), or null. */
  key: string | null;
  /** Why the run failed or was cancelled, naming the step. */
  error: string | null;
  /** Set when an operator cancelled the run: its compensations then end it `cancelled`. */
  cancelReason: string | null;
  startedAt: number;
  finishedAt: number | null;
  updatedAt: number;
}

/** A row of `workflow_steps`: one step, one item of a fanned-out step, or one compensation. */
export interface WorkflowStepRow {
  runId: number;
  kind: "step" | "compensation";
  /** The step's id (for a compensation, the step it undoes). */
  step: string;
  /** The item's index in a fanned-out step, or -1 for the step itself. */
  item: number;
  /** The job that runs it; null for a step that needs none (cancelled upstream, an empty fan-out). */
  jobId: number | null;
  state: Exclude<StepState, "waiting">;
  /** The result, as JSON text, once completed (a fanned-out step's: the list of its items'). */
  result: string | null;
  /** The resume position the step's job last wrote (`ctx.cursor.set`), as JSON text. */
  cursor: string | null;
  /** Order of completion within the run (compensations run in its reverse). */
  seq: number | null;
  error: string | null;
  /** For a fanned-out step: how many items, and how many have not ended yet. */
  items: number | null;
  remaining: number | null;
  createdAt: number;
  finishedAt: number | null;
}

/** A run with its step rows and the definition it runs. */
export interface WorkflowRunDetail {
  run: WorkflowRun;
  definition: CompiledWorkflow;
  steps: WorkflowStepRow[];
}

/**
 * The args of a `jobs.workflow` job (a schedule's occurrence that starts a
 * run): the compiled definition and the input, so the run does not depend on
 * the configuration loaded when the occurrence executes.
 */
export interface WorkflowStartRun {
  kind: "workflow";
  definition: CompiledWorkflow;
  input: unknown;
}
