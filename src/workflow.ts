/**
 * Workflows and sagas (`@jobs/jobs/workflow`): steps that are jobs, run in
 * dependency order, each handed the run's input and its dependencies'
 * results; a saga (`carriedBy: "workflow"`) maps every step to a use case
 * and runs the compensations of the steps that completed when one is
 * discarded. {@linkcode defineWorkflow} checks a definition (the same rules
 * as `jobs check`, each broken one a {@linkcode WorkflowProblem} with a
 * code); `jobs.registerWorkflow` and `jobs.startWorkflow` run it. A step
 * reads its place in the run from `ctx.workflow` ({@linkcode StepContext})
 * and resumes from `ctx.cursor` ({@linkcode StepCursor}); the store keeps
 * each run as a {@linkcode WorkflowRun} with its {@linkcode WorkflowStepRow}s.
 *
 * @example Run a two-step workflow and read how it ended
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, openJobs, silentLogger } from "@jobs/jobs";
 * import { defineWorkflow } from "@jobs/jobs/workflow";
 * import { drainJobs } from "@jobs/jobs/testing";
 *
 * // A step's result is what perform returns as { result }; its dependants read it by step id.
 * const fetchRows = defineWorker({
 *   name: "fetch_rows",
 *   perform: (_args, ctx) => ({ result: (ctx.workflow!.input as { rows: string[] }).rows }),
 * });
 * const countRows = defineWorker({
 *   name: "count_rows",
 *   perform: (_args, ctx) => ({ result: (ctx.workflow!.results["fetch"] as string[]).length }),
 * });
 * const importFeed = defineWorkflow({
 *   id: "import-feed",
 *   steps: [
 *     { id: "fetch", worker: fetchRows },
 *     { id: "count", worker: countRows, dependsOn: ["fetch"] },
 *   ],
 * });
 *
 * const jobs = await openJobs(":memory:", {
 *   workers: [fetchRows, countRows],
 *   workflows: [importFeed],
 *   logger: silentLogger,
 * });
 * const { id } = await jobs.startWorkflow("import-feed", { rows: ["a", "b", "c"] });
 * await drainJobs(jobs); // in production, jobs.start() runs the steps as they become due
 * const detail = await jobs.store.workflowGet({ id });
 * assert.equal(detail?.run.state, "completed");
 * assert.deepEqual(detail?.steps.map((s) => [s.step, s.result]), [
 *   ["fetch", '["a","b","c"]'],
 *   ["count", "3"],
 * ]);
 * await jobs.close();
 * ```
 *
 * @module
 */

export {
  checkWorkflow,
  type CompensationOptions,
  type CompileContext,
  compileWorkflow,
  defineWorkflow,
  type UseCaseRun,
  type WorkflowDefinition,
  WorkflowDefinitionError,
  type WorkflowOptions,
  type WorkflowProblem,
  type WorkflowProblemCode,
  type WorkflowStepOptions,
} from "./workflow/definition.ts";
export {
  type CompiledCompensation,
  type CompiledStep,
  type CompiledWorkflow,
  FINAL_RUN_STATES,
  type JobTemplate,
  RUN_STATES,
  type RunState,
  type StepRun,
  type StepState,
  type WorkflowRun,
  type WorkflowRunDetail,
  type WorkflowStepRow,
} from "./workflow/types.ts";
export type { CursorWriter, StepContext, StepCursor } from "./kernel/worker.ts";
