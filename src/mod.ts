/**
 * `jobs`: a durable job queue on an embedded SQLite file or, for several
 * hosts, one shared PostgreSQL database: `openJobs("jobs.db")` or
 * `openJobs("postgres://user@host:5432/db?schema=jobs")`, the same API on both.
 *
 * ```ts
 * import { defineWorker, openJobs } from "./src/mod.ts";
 *
 * const greet = defineWorker<{ name: string }>({
 *   name: "greet",
 *   perform: (args) => console.log(`hello ${args.name}`),
 * });
 * const jobs = await openJobs("jobs.db", { workers: [greet] });
 * await jobs.enqueue(greet, { name: "Ada" });
 * const runtime = await jobs.start({ queues: { default: 10 } });
 * await runtime.stop();
 * await jobs.close();
 * ```
 *
 * @module
 */

export { type Clock, FakeClock, SystemClock } from "./clock.ts";
export {
  defaultNodeName,
  type EnqueueEntry,
  Jobs,
  type JobsOptions,
  openJobs,
  type OpenJobsOptions,
  type PostgresLocation,
  type StartOptions,
  type StartWorkflowOptions,
  type TxFor,
  type TxOption,
} from "./jobs.ts";
export { type Backoff, defaultBackoff, exponentialBackoff } from "./kernel/backoff.ts";
export { DEFAULT_ARGS_LIMIT, EnqueueError, type EnqueueOptions } from "./kernel/enqueue.ts";
export { JobTimeoutError } from "./kernel/executor.ts";
export { describeError, redact } from "./kernel/redact.ts";
export type {
  Attempt,
  AttemptOutcome,
  InsertResult,
  Job,
  JobError,
  JobState,
} from "./kernel/types.ts";
export { FINAL_STATES, INCOMPLETE_STATES, JOB_STATES } from "./kernel/types.ts";
export type { UniqueOptions } from "./kernel/unique.ts";
export {
  type ArgsSchema,
  defineWorker,
  type JobContext,
  type Outcome,
  type StepContext,
  type StepCursor,
  type Worker,
  type WorkerOptions,
} from "./kernel/worker.ts";
export {
  checkWorkflow,
  type CompensationOptions,
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
  type CompiledWorkflow,
  FINAL_RUN_STATES,
  RUN_STATES,
  type RunState,
  type StepState,
  type WorkflowRun,
  type WorkflowRunDetail,
  type WorkflowStepRow,
} from "./workflow/types.ts";
export type { JobFilter, Store, StoreTx } from "./store/store.ts";
export {
  describeLocation,
  openSqliteStore,
  openStore,
  type OpenStoreOptions,
  type PostgresTx,
  SchemaTooNewError,
  type SqliteOptions,
  SqliteStore,
  type SqliteTx,
  type StoreMode,
  type StoreMove,
  StoreMovedError,
} from "./store/open.ts";
export {
  humanLogger,
  jsonLinesLogger,
  jsonLogger,
  type Logger,
  silentLogger,
} from "./worker/logger.ts";
export { LeaseLostError, ShutdownError } from "./worker/producer.ts";
export { Runtime, type RuntimeOptions } from "./worker/runtime.ts";
export { stageJobs } from "./worker/stager.ts";
export { rescueOrphans } from "./worker/lifeline.ts";
export { DEFAULT_RETENTION, pruneJobs } from "./worker/pruner.ts";
export {
  type ConfigError,
  type ConfigErrorCode,
  loadSchedules,
  parseSchedules,
} from "./schedule/config.ts";
export { between, next } from "./schedule/occurrences.ts";
export type {
  GapPolicy,
  LocalTimePolicy,
  Occurrence,
  OverlapPolicy,
  Rhythm,
  RunSpec,
  Schedule,
  ScheduleConfig,
} from "./schedule/types.ts";
export { planSchedules, syncSchedules } from "./worker/planner.ts";
export { ScheduleSource } from "./worker/schedule_source.ts";
export {
  COMMAND_WORKER,
  type CommandRun,
  commandWorker,
  type CommandWorkerOptions,
  EXIT_CANCEL,
  EXIT_DISCARD,
  EXIT_SNOOZE,
} from "./runners/command.ts";
export { HTTP_WORKER, type HttpRun, httpWorker, retryAfterMs } from "./runners/http.ts";
export {
  defineSelection,
  FANOUT_WORKER,
  type FanOutRun,
  fanoutWorker,
  type FanoutWorkerOptions,
  type SelectionOptions,
} from "./runners/fanout.ts";
export { loadWorkersModule, WorkersModuleError } from "./runners/workers_module.ts";
export {
  INGEST_WORKER,
  ingestJob,
  ingestWorker,
  type IngestWorkerOptions,
} from "./runners/ingest.ts";
export {
  defineSink,
  defineStep,
  type ProcessorContext,
  type SinkEntry,
  type SinkOptions,
  type SinkResult,
  type StepOptions,
  type StepResult,
} from "./ingest/processors.ts";
export {
  checkPipeline,
  definePipeline,
  PipelineDefinitionError,
  type PipelineOptions,
  type PipelineProblem,
} from "./ingest/definition.ts";
export {
  checkReport,
  type CompiledReport,
  defineReport,
  queryParams,
  ReportDefinitionError,
  type ReportOptions,
  type ReportProblem,
} from "./report/definition.ts";
export { CsvWriter } from "./report/csv.ts";
export { NdjsonWriter } from "./report/ndjson.ts";
export { checkColumns, ReportColumnsChanged, ReportValueError } from "./report/columns.ts";
export type {
  CompiledPipeline,
  CompiledStep,
  IngestCounts,
  IngestDrop,
  IngestJobArgs,
  IngestRun,
  IngestRunState,
  NamedSource,
  PipelineSummary,
  SourceSpec,
} from "./ingest/types.ts";
export {
  REPORT_QUEUE,
  REPORT_WORKER,
  type ReportJobArgs,
  type ReportRequest,
  type ReportRun,
  type ReportRunState,
} from "./report/types.ts";
export { checkRequest, type RawRequest, ReportRequestError } from "./report/query.ts";
export {
  DEFAULT_LIMITS,
  type EffectiveLimits,
  effectiveLimits,
  LIMIT_NAMES,
  type LimitName,
  ReportLimitExceeded,
} from "./report/limits.ts";
export { openStorage, outputKey, type OutputStorage, type StorageSpec } from "./report/storage.ts";
export { reportWorker, type ReportWorkerOptions } from "./runners/report.ts";
export { type StartedRun } from "./admin/reports.ts";
