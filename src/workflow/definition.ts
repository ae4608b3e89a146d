/**
 * Workflow definitions: what a library user passes to
 * {@linkcode defineWorkflow} (and what the `workflows:` section of
 * `schedules.yaml` becomes), the record rules a saga is held to, and the
 * compiled form a run carries.
 *
 * The record rules of a saga (`carriedBy: "workflow"`), each a problem with
 * a code, so `jobs check` and `defineWorkflow` say the same thing:
 *
 * - every step maps to exactly one use case (`useCase`, by default the
 *   step's id when that id is a declared use case); a step with none, or
 *   one that runs a worker or a command directly, is `behavior-unrecorded`;
 *   a step mapped to two is `use-case-ambiguous`; a use case nobody
 *   declared is `use-case-unknown`;
 * - no use case is claimed by two steps of one saga (`use-case-shared`);
 * - every step names its compensation, `{ mode: "use-case", useCase }` or
 *   `{ mode: "none", reason }` (`compensation-missing`,
 *   `compensation-invalid`);
 * - retry counts, backoff and timeouts are not part of the record
 *   (`engine-config-in-record`): they live in the workers' code, or in a
 *   `schedules.yaml` use case (`use_cases:`), which is the implementation.
 *
 * Every workflow: step ids unique (`step-duplicate`) and well formed
 * (`step-id`), `dependsOn` and `forEach` name steps of the definition
 * (`step-unknown`), and no cycles (`workflow-cycle`).
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { BackoffSpec } from "../kernel/run_settings.ts";
import { canonicalJson } from "../kernel/unique.ts";
import {
  clampPriority,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_QUEUE,
  type Worker,
} from "../kernel/worker.ts";
import type {
  CompiledCompensation,
  CompiledStep,
  CompiledWorkflow,
  JobTemplate,
  StepRun,
} from "./types.ts";

/** What a use case (or a plain step) runs: a worker, a worker's name, or a command or HTTP spec. */
// deno-lint-ignore no-explicit-any
export type UseCaseRun = Worker<any> | string | StepRun;

/** How a saga step is undone. */
export type CompensationOptions =
  /** Run this use case (a job with its own retries). */
  | { mode: "use-case"; useCase: string }
  /** Nothing undoes it, and why (shown to operators). */
  | { mode: "none"; reason: string };

/** One step of {@linkcode WorkflowOptions}. */
export interface WorkflowStepOptions {
  /** Unique within the workflow: letters, digits and `._/-`, starting with a letter or digit. */
  id: string;
  /** Steps that must be done before this one starts. @default none */
  dependsOn?: string[];
  /**
   * A dependency whose result is a list: this step runs once per item (each
   * item's job gets `item`), and its result is the list of the items'
   * results. Added to `dependsOn` when missing there.
   */
  forEach?: string;
  /** Its failure does not stop its dependants (they get `null` as its result). @default false */
  optional?: boolean;
  /** The use case this step is; in a saga, by default the step's id. */
  useCase?: string;
  /** A plain workflow's step may run a worker (or a worker's name) directly. */
  // deno-lint-ignore no-explicit-any
  worker?: Worker<any> | string;
  /** A plain workflow's step may run a command or an HTTP request directly. */
  run?: StepRun;
  /** A saga step's compensation (required there). */
  compensation?: CompensationOptions;
  /** The step job's queue. @default the worker's, else the workflow's, else "default" */
  queue?: string;
  /** @default the worker's, else 0 */
  priority?: number;
  /** Not in a saga. @default the worker's, else 20 */
  maxAttempts?: number;
  /** Not in a saga. @default the worker's */
  timeoutMs?: number;
  /** Not in a saga. @default the worker's */
  backoff?: BackoffSpec;
  /** Labels of the step's jobs. */
  tags?: string[];
}

/** A workflow, as passed to {@linkcode defineWorkflow}. */
export interface WorkflowOptions {
  /** Unique name; stored with each run, so keep it stable. */
  id: string;
  /** `"workflow"` makes it a saga: every step maps to a use case and names its compensation. */
  carriedBy?: "workflow";
  /** Where behaviour lives: use-case id -> what runs it. */
  useCases?: Record<string, UseCaseRun>;
  steps: WorkflowStepOptions[];
  /** Default queue of its step jobs. @default each worker's, else "default" */
  queue?: string;
}

/** A checked workflow definition. */
export type WorkflowDefinition = Readonly<WorkflowOptions>;

/** The codes of {@linkcode WorkflowProblem}. */
export type WorkflowProblemCode =
  | "workflow-id"
  | "step-id"
  | "step-duplicate"
  | "step-unknown"
  | "workflow-cycle"
  | "step-run-missing"
  | "step-run-ambiguous"
  | "behavior-unrecorded"
  | "use-case-ambiguous"
  | "use-case-unknown"
  | "use-case-shared"
  | "compensation-missing"
  | "compensation-invalid"
  | "engine-config-in-record";

/** One thing wrong with a definition: a code, where (a path into the definition), and why. */
export interface WorkflowProblem {
  code: WorkflowProblemCode;
  /** E.g. `["steps", 1, "compensation"]`. */
  path: (string | number)[];
  message: string;
}

/** Raised by {@linkcode defineWorkflow} (and by starting a run) for a definition that fails the check. */
export class WorkflowDefinitionError extends Error {
  constructor(readonly workflow: string, readonly problems: WorkflowProblem[]) {
    super(
      `workflow "${workflow}": ` +
        problems.map((p) => `${pathText(p.path)}: ${p.code}: ${p.message}`).join("; "),
    );
    this.name = "WorkflowDefinitionError";
  }
}

/** The rule for workflow and step ids: no `#`, `:` or `@`, which step identities use. */
export const WORKFLOW_ID = /^[A-Za-z0-9][\w./-]{0,127}$/;

const SAGA_ENGINE_FIELDS = ["maxAttempts", "timeoutMs", "backoff"] as const;

/**
 * Checks a definition against the rules in the module doc. `useCases` are
 * the use cases declared besides the definition's own (a `use_cases:`
 * section). Returns every problem found, in the definition's order.
 */
export function checkWorkflow(
  options: WorkflowOptions,
  useCases: ReadonlySet<string> = new Set(),
): WorkflowProblem[] {
  const problems: WorkflowProblem[] = [];
  const add = (code: WorkflowProblemCode, path: (string | number)[], message: string) =>
    problems.push({ code, path, message });
  if (typeof options.id !== "string" || !WORKFLOW_ID.test(options.id)) {
    add("workflow-id", ["id"], `must be 1-128 letters, digits or ._/- , got ${show(options.id)}`);
  }
  const saga = options.carriedBy === "workflow";
  const known = new Set([...useCases, ...Object.keys(options.useCases ?? {})]);
  const steps = Array.isArray(options.steps) ? options.steps : [];
  if (steps.length === 0) add("step-run-missing", ["steps"], "a workflow needs at least one step");
  const ids = new Set<string>();
  for (const [i, step] of steps.entries()) {
    if (typeof step.id !== "string" || !WORKFLOW_ID.test(step.id)) {
      add(
        "step-id",
        ["steps", i, "id"],
        `must be 1-128 letters, digits or ._/- , got ${show(step.id)}`,
      );
    } else if (ids.has(step.id)) {
      add("step-duplicate", ["steps", i, "id"], `step "${step.id}" is defined twice`);
    }
    ids.add(step.id);
  }
  const claimed = new Map<string, string>();
  for (const [i, step] of steps.entries()) {
    const at = (field: string) => ["steps", i, field];
    for (const [j, dep] of (step.dependsOn ?? []).entries()) {
      if (!ids.has(dep)) {
        add("step-unknown", ["steps", i, "dependsOn", j], `no step "${dep}"${hint(dep, ids)}`);
      } else if (dep === step.id) {
        add("workflow-cycle", ["steps", i, "dependsOn", j], `step "${step.id}" depends on itself`);
      }
    }
    if (step.forEach !== undefined && !ids.has(step.forEach)) {
      add("step-unknown", at("forEach"), `no step "${step.forEach}"${hint(step.forEach, ids)}`);
    }
    const direct = [step.worker !== undefined && "worker", step.run !== undefined && "run"].filter(
      Boolean,
    ) as string[];
    if (saga) {
      const useCase = step.useCase as unknown;
      if (Array.isArray(useCase) || (useCase !== undefined && direct.length > 0)) {
        add(
          "use-case-ambiguous",
          at("useCase"),
          `step "${step.id}" maps to more than one use case or run (${
            Array.isArray(useCase) ? useCase.join(", ") : ["useCase", ...direct].join(", ")
          })`,
        );
      } else if (direct.length > 0) {
        add(
          "behavior-unrecorded",
          at(direct[0]!),
          `saga step "${step.id}" runs its ${direct[0]} directly: map it to a use case`,
        );
      } else {
        const id = typeof useCase === "string" ? useCase : step.id;
        if (typeof useCase !== "string" && !known.has(id)) {
          add(
            "behavior-unrecorded",
            at("useCase"),
            `saga step "${step.id}" maps to no use case (its id is not a declared use case)`,
          );
        } else if (!known.has(id)) {
          add("use-case-unknown", at("useCase"), `no use case "${id}"${hint(id, known)}`);
        } else if (claimed.has(id)) {
          add(
            "use-case-shared",
            at("useCase"),
            `use case "${id}" is claimed by steps "${claimed.get(id)}" and "${step.id}"`,
          );
        } else {
          claimed.set(id, step.id);
        }
      }
      checkCompensation(step, i, known, add);
      for (const field of SAGA_ENGINE_FIELDS) {
        if (step[field] !== undefined) {
          add(
            "engine-config-in-record",
            at(field),
            `saga step "${step.id}" sets ${field}: retries, backoff and timeouts live in its use case or the workers' code`,
          );
        }
      }
    } else {
      const runs = [...direct, ...(step.useCase !== undefined ? ["useCase"] : [])];
      if (runs.length === 0) {
        add("step-run-missing", ["steps", i], `step "${step.id}" has no worker, run or useCase`);
      } else if (runs.length > 1) {
        add("step-run-ambiguous", at(runs[1]!), `step "${step.id}" sets ${runs.join(" and ")}`);
      } else if (step.useCase !== undefined && !known.has(step.useCase)) {
        add(
          "use-case-unknown",
          at("useCase"),
          `no use case "${step.useCase}"${hint(step.useCase, known)}`,
        );
      }
      if (step.compensation !== undefined) checkCompensation(step, i, known, add);
    }
  }
  const cycle = findCycle(steps);
  if (cycle) {
    add(
      "workflow-cycle",
      ["steps"],
      `steps depend on each other in a cycle: ${cycle.join(" -> ")}`,
    );
  }
  return problems;
}

function checkCompensation(
  step: WorkflowStepOptions,
  i: number,
  known: ReadonlySet<string>,
  add: (code: WorkflowProblemCode, path: (string | number)[], message: string) => void,
): void {
  const c = step.compensation as Record<string, unknown> | undefined;
  const at = ["steps", i, "compensation"];
  if (c === undefined) {
    add(
      "compensation-missing",
      at,
      `saga step "${step.id}" names no compensation: { mode: use-case, use_case } or { mode: none, reason }`,
    );
    return;
  }
  if (c.mode === "use-case") {
    if (typeof c.useCase !== "string" || c.useCase === "") {
      add("compensation-invalid", [...at, "useCase"], `mode use-case needs a use case`);
    } else if (!known.has(c.useCase)) {
      add(
        "use-case-unknown",
        [...at, "useCase"],
        `no use case "${c.useCase}"${hint(c.useCase, known)}`,
      );
    }
  } else if (c.mode === "none") {
    if (typeof c.reason !== "string" || c.reason.trim() === "") {
      add("compensation-invalid", [...at, "reason"], `mode none needs a reason`);
    }
  } else {
    add(
      "compensation-invalid",
      [...at, "mode"],
      `mode must be use-case or none, got ${show(c.mode)}`,
    );
  }
}

/** The first cycle of `dependsOn` (and `forEach`) edges, as step ids, or null. */
function findCycle(steps: readonly WorkflowStepOptions[]): string[] | null {
  const deps = new Map(steps.map((s) => [s.id, dependenciesOf(s)]));
  const state = new Map<string, "visiting" | "done">();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === "done") return null;
    if (state.get(id) === "visiting") return [...path.slice(path.indexOf(id)), id];
    state.set(id, "visiting");
    path.push(id);
    for (const dep of deps.get(id) ?? []) {
      if (dep === id || !deps.has(dep)) continue;
      const found = visit(dep);
      if (found) return found;
    }
    path.pop();
    state.set(id, "done");
    return null;
  };
  for (const step of steps) {
    const found = visit(step.id);
    if (found) return found;
  }
  return null;
}

function dependenciesOf(step: WorkflowStepOptions): string[] {
  const deps = [...(step.dependsOn ?? [])];
  if (step.forEach !== undefined && !deps.includes(step.forEach)) deps.push(step.forEach);
  return deps;
}

/**
 * Checks `options` and returns the definition; a definition that fails the
 * check is a {@linkcode WorkflowDefinitionError} listing every problem.
 * Register it with `jobs.registerWorkflow` (or `workflows:` of `openJobs`)
 * and start runs with `jobs.startWorkflow`.
 *
 * @example A saga: every step a use case with its compensation
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, defineWorkflow, openJobs, silentLogger } from "@jobs/jobs";
 * import { WorkflowDefinitionError } from "@jobs/jobs/workflow";
 *
 * const placeHold = defineWorker({ name: "place_hold", perform: () => ({ result: { hold: "h-1" } }) });
 * const cancelHold = defineWorker({
 *   name: "cancel_hold",
 *   // A compensation gets the step it undoes and that step's result.
 *   perform: (_args, ctx) => {
 *     assert.deepEqual(ctx.workflow!.compensates!.result, { hold: "h-1" });
 *   },
 * });
 * const chargeFee = defineWorker({ name: "charge_fee", perform: () => {} });
 * const steps = [
 *   {
 *     id: "place-hold",
 *     useCase: "use-case/lending.place-hold",
 *     compensation: { mode: "use-case", useCase: "use-case/lending.cancel-hold" } as const,
 *   },
 *   {
 *     id: "charge-fee",
 *     dependsOn: ["place-hold"],
 *     useCase: "use-case/billing.charge-fee",
 *     compensation: { mode: "none", reason: "a failed charge took no money" } as const,
 *   },
 * ];
 * const lendCopy = defineWorkflow({
 *   id: "lend-copy",
 *   carriedBy: "workflow", // a saga: a discarded step runs the completed steps' compensations
 *   useCases: {
 *     "use-case/lending.place-hold": placeHold,
 *     "use-case/lending.cancel-hold": cancelHold,
 *     "use-case/billing.charge-fee": chargeFee,
 *   },
 *   steps,
 * });
 *
 * // A step without its compensation breaks the saga's record rules.
 * assert.throws(
 *   () => defineWorkflow({ ...lendCopy, steps: [{ ...steps[0]!, compensation: undefined }] }),
 *   (error: WorkflowDefinitionError) => error.problems[0]!.code === "compensation-missing",
 * );
 *
 * const jobs = await openJobs(":memory:", {
 *   workers: [placeHold, cancelHold, chargeFee],
 *   workflows: [lendCopy],
 *   logger: silentLogger,
 * });
 * const started = await jobs.startWorkflow("lend-copy", { copy: "c-1" }, { key: "lend:c-1" });
 * const again = await jobs.startWorkflow("lend-copy", { copy: "c-1" }, { key: "lend:c-1" });
 * assert.deepEqual(again, { id: started.id, duplicate: true });
 * await jobs.close();
 * ```
 */
export function defineWorkflow(options: WorkflowOptions): WorkflowDefinition {
  const problems = checkWorkflow(options);
  if (problems.length > 0) throw new WorkflowDefinitionError(String(options.id), problems);
  return Object.freeze({
    ...options,
    steps: options.steps.map((s) => Object.freeze({ ...s })),
  }) as WorkflowDefinition;
}

/** What compiling needs from the process: its workers, for their defaults. */
export interface CompileContext {
  // deno-lint-ignore no-explicit-any
  workers?: ReadonlyMap<string, Worker<any>>;
  /** Use cases declared outside the definition (a `use_cases:` section). */
  useCases?: Readonly<Record<string, UseCaseRun>>;
}

/**
 * The compiled form of a definition: checked (a problem is a
 * {@linkcode WorkflowDefinitionError}), steps in dependency order, every
 * use case and worker resolved to the job its steps run, hashed.
 */
export function compileWorkflow(
  options: WorkflowOptions,
  context: CompileContext = {},
): CompiledWorkflow {
  const useCases: Record<string, UseCaseRun> = { ...context.useCases, ...options.useCases };
  const problems = checkWorkflow(options, new Set(Object.keys(useCases)));
  if (problems.length > 0) throw new WorkflowDefinitionError(String(options.id), problems);
  const saga = options.carriedBy === "workflow";
  const byId = new Map(options.steps.map((s) => [s.id, s]));
  const ordered: WorkflowStepOptions[] = [];
  const placed = new Set<string>();
  const place = (step: WorkflowStepOptions) => {
    if (placed.has(step.id)) return;
    placed.add(step.id);
    for (const dep of dependenciesOf(step)) place(byId.get(dep)!);
    ordered.push(step);
  };
  for (const step of options.steps) place(step);
  const steps: CompiledStep[] = ordered.map((step) => {
    const useCase = step.useCase ?? (saga ? step.id : null);
    const run = useCase !== null && step.worker === undefined && step.run === undefined
      ? useCases[useCase]!
      : (step.worker ?? step.run)!;
    let compensation: CompiledCompensation | null = null;
    if (step.compensation?.mode === "use-case") {
      compensation = {
        mode: "use-case",
        useCase: step.compensation.useCase,
        job: template(useCases[step.compensation.useCase]!, step, options, context, false),
      };
    } else if (step.compensation?.mode === "none") {
      compensation = { mode: "none", reason: step.compensation.reason };
    }
    return {
      id: step.id,
      dependsOn: dependenciesOf(step),
      forEach: step.forEach ?? null,
      optional: step.optional ?? false,
      useCase,
      job: template(run, step, options, context, true),
      compensation,
    };
  });
  return hashed({ id: options.id, saga, steps });
}

/** A compiled definition's body with its hash: the SHA-256 of its canonical JSON. */
export function hashed(body: Omit<CompiledWorkflow, "hash">): CompiledWorkflow {
  const hash = createHash("sha256").update(canonicalJson(body)).digest("base64url");
  return { ...body, hash };
}

/**
 * `definition` with the attempts of the workers `workers` knows on the jobs
 * whose worker was unknown where it was compiled (`attemptsFromWorker`),
 * hashed again; the same object when there is nothing to fill in. The
 * daemon and `jobs start` apply it with the workers module, so a saga's
 * retry counts are its workers' as the record rules say.
 */
export function withWorkerDefaults(
  definition: CompiledWorkflow,
  // deno-lint-ignore no-explicit-any
  workers: ReadonlyMap<string, Worker<any>>,
): CompiledWorkflow {
  let changed = false;
  const fill = (job: JobTemplate): JobTemplate => {
    const worker = job.attemptsFromWorker ? workers.get(job.worker) : undefined;
    if (!worker) return job;
    changed = true;
    const { attemptsFromWorker: _, ...rest } = job;
    return { ...rest, maxAttempts: worker.maxAttempts };
  };
  const steps = definition.steps.map((step) => ({
    ...step,
    job: fill(step.job),
    compensation: step.compensation?.mode === "use-case"
      ? { ...step.compensation, job: fill(step.compensation.job) }
      : step.compensation,
  }));
  return changed ? hashed({ id: definition.id, saga: definition.saga, steps }) : definition;
}

function template(
  run: UseCaseRun,
  step: WorkflowStepOptions,
  options: WorkflowOptions,
  context: CompileContext,
  own: boolean,
): JobTemplate {
  // deno-lint-ignore no-explicit-any
  let worker: Worker<any> | undefined;
  let name: string;
  let spec: JobTemplate["spec"] = null;
  if (typeof run === "string") {
    name = run;
    worker = context.workers?.get(run);
  } else if ("perform" in run) {
    name = run.name;
    worker = run;
  } else if (run.kind === "worker") {
    name = run.worker;
    worker = context.workers?.get(run.worker);
  } else {
    name = `jobs.${run.kind}`;
    spec = run;
  }
  // A step's own settings apply to the step's job, not to its compensation.
  const mine: Partial<WorkflowStepOptions> = own ? step : {};
  const t: JobTemplate = {
    worker: name,
    spec,
    queue: mine.queue ?? worker?.queue ?? options.queue ?? DEFAULT_QUEUE,
    priority: clampPriority(mine.priority ?? worker?.priority ?? 0),
    maxAttempts: mine.maxAttempts ?? worker?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    tags: [...(mine.tags ?? [])],
  };
  if (spec === null && worker === undefined && mine.maxAttempts === undefined) {
    t.attemptsFromWorker = true;
  }
  if (own && step.timeoutMs !== undefined) t.timeoutMs = step.timeoutMs;
  if (own && step.backoff !== undefined) t.backoff = step.backoff;
  return t;
}

function pathText(path: (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}

function show(value: unknown): string {
  return typeof value === "string" ? `"${value}"` : JSON.stringify(value) ?? String(value);
}

function hint(name: string, known: Iterable<string>): string {
  const close = [...known].filter((k) => k.includes(name) || name.includes(k));
  return close.length > 0 ? ` (did you mean "${close[0]}"?)` : "";
}
