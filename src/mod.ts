/**
 * `jobs`: a durable job scheduler and queue on SQLite or PostgreSQL. Define
 * workers, enqueue jobs (alone, in bulk, or in the same transaction as your
 * own writes), and run them with retries, leases, fencing and a record of
 * every attempt. One API on a SQLite file (`openJobs("jobs.db")`) and on a
 * PostgreSQL database that daemons on several hosts share
 * (`openJobs("postgres://user@host:5432/db?schema=jobs")`).
 *
 * This module is what an application needs. The rest is in sub-paths of
 * the package:
 *
 * | import                 | for                                                                  |
 * | ---------------------- | -------------------------------------------------------------------- |
 * | `@jobs/jobs/workflow`  | workflows and sagas: checks, compiled runs, a step's context         |
 * | `@jobs/jobs/ingest`    | ingest pipelines: TypeScript steps and sinks, runs and drops         |
 * | `@jobs/jobs/report`    | reports: requests, limits, runs, output storage                      |
 * | `@jobs/jobs/schedules` | `schedules.yaml` in your own process, and the built-in runners       |
 * | `@jobs/jobs/store`     | the store seam: `openStore`, both adapters' opens, `Store`, its rows |
 * | `@jobs/jobs/testing`   | drain queues, assert what was enqueued, perform one job              |
 *
 * Each sub-path is one file beside this one, named after it
 * (`@jobs/jobs/workflow` is `src/workflow.ts`): from another project,
 * import those files by path.
 *
 * @example Enqueue a job and run it
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, openJobs, silentLogger } from "@jobs/jobs";
 *
 * const greeted = Promise.withResolvers<string>();
 * const greet = defineWorker<{ name: string }>({
 *   name: "greet",
 *   perform: (args) => greeted.resolve(`hello ${args.name}`),
 * });
 *
 * // A SQLite file ("jobs.db"), or "postgres://user@host:5432/db?schema=jobs".
 * // logger: the default writes one JSON line per event to stderr.
 * const jobs = await openJobs(":memory:", { workers: [greet], logger: silentLogger });
 * await jobs.enqueue(greet, { name: "Ada" });
 * await jobs.start(); // runs every registered worker's queue until close()
 * assert.equal(await greeted.promise, "hello Ada");
 * await jobs.close();
 * ```
 *
 * @module
 */

export { type Clock, FakeClock, SystemClock } from "./clock.ts";
export {
  type EnqueueEntry,
  Jobs,
  type JobsOptions,
  openJobs,
  type OpenJobsOptions,
  type StartOptions,
  type StartWorkflowOptions,
  type TxFor,
} from "./jobs.ts";
export type { PostgresTx, SqliteTx } from "./store/open.ts";
export { SchemaTooNewError, StoreMovedError } from "./store/open.ts";
export {
  defineWorker,
  type JobContext,
  type Outcome,
  type Worker,
  type WorkerOptions,
} from "./kernel/worker.ts";
export { type Backoff, exponentialBackoff } from "./kernel/backoff.ts";
export { EnqueueError, type EnqueueOptions } from "./kernel/enqueue.ts";
export type { UniqueOptions } from "./kernel/unique.ts";
export type { InsertResult, JobState } from "./kernel/types.ts";
export { JobTimeoutError } from "./kernel/executor.ts";
export { LeaseLostError, ShutdownError } from "./kernel/abort_reasons.ts";
export { Runtime } from "./runtime/runtime.ts";
export { type Logger, silentLogger } from "./kernel/logger.ts";
export { defineWorkflow } from "./workflow/definition.ts";
export { definePipeline } from "./ingest/definition.ts";
export { defineReport } from "./report/definition.ts";
export type { StartedRun } from "./admin/reports.ts";
