/**
 * Ingest pipelines (`@jobs/jobs/ingest`): records read from a source (a
 * file, a glob, a command, an HTTP endpoint; NDJSON or CSV) pass through
 * steps that keep, enrich or drop them for a reason from a closed set, and
 * reach a sink, one run being one job. {@linkcode definePipeline} checks a
 * pipeline (each broken rule a {@linkcode PipelineProblem} with a code) and
 * compiles it; {@linkcode defineStep} and {@linkcode defineSink} make the
 * TypeScript steps and sinks it names, which are workers of the process;
 * `jobs.ingest(pipeline)` enqueues a run. The store keeps each run as an
 * {@linkcode IngestRun} with its counts, and each dropped record as an
 * {@linkcode IngestDrop}.
 *
 * @example Run a pipeline over a file
 * ```ts
 * import assert from "node:assert/strict";
 * import { openJobs, silentLogger } from "@jobs/jobs";
 * import { definePipeline, defineSink, defineStep } from "@jobs/jobs/ingest";
 * import { drainJobs } from "@jobs/jobs/testing";
 *
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/feed.ndjson`,
 *   ['{"sku":"a","qty":5}', '{"sku":"b","qty":1}', '{"sku":"c","qty":3}'].join("\n"),
 * );
 * const lowStock = defineStep({
 *   name: "low_stock",
 *   run: (record) => (record.qty as number) < 2 ? { drop: "low-stock" } : { keep: true },
 * });
 * const saved: string[] = [];
 * const save = defineSink({
 *   name: "save",
 *   // Each record comes with its idempotency key "<pipeline>/<record key>".
 *   write: (batch) => {
 *     for (const { key } of batch) saved.push(key);
 *   },
 * });
 * const stock = definePipeline({
 *   id: "stock",
 *   source: { file: "./feed.ndjson", format: "ndjson" },
 *   key: "sku",
 *   steps: [{ drop: "drop-low-stock", run: { worker: "low_stock" } }],
 *   dropReasons: ["low-stock", "poison"],
 *   sink: { worker: "save" },
 * }, dir); // relative paths are resolved against dir
 *
 * const jobs = await openJobs(":memory:", { workers: [lowStock, save], logger: silentLogger });
 * const { id } = await jobs.ingest(stock);
 * await drainJobs(jobs); // in production, a runtime serving the "ingest" queue runs it
 * const run = await jobs.store.ingestRunByJob({ jobId: id });
 * assert.equal(run?.state, "completed");
 * assert.deepEqual(run?.counts.dropped, { "low-stock": 1 });
 * assert.deepEqual(saved, ["stock/a", "stock/c"]);
 * await jobs.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

export {
  checkPipeline,
  definePipeline,
  type NamedSourceOption,
  type PipelineContext,
  PipelineDefinitionError,
  type PipelineOptions,
  type PipelineProblem,
  type PipelineProblemCode,
  type PipelineStepOptions,
  type ProcessorOption,
  type SinkOption,
  type SourceOption,
  type WorkQueueSinkOption,
} from "./ingest/definition.ts";
export {
  defineSink,
  defineStep,
  type ProcessorContext,
  type SinkEntry,
  type SinkOptions,
  type SinkResult,
  type SourceHandle,
  type StepOptions,
  type StepResult,
} from "./ingest/processors.ts";
export {
  type CompiledPipeline,
  type CompiledStep,
  type Freshness,
  type IngestCounts,
  type IngestDrop,
  type IngestJobArgs,
  type IngestRun,
  type IngestRunState,
  type NamedSource,
  type Overflow,
  type PipelineSink,
  type PipelineSummary,
  type ProcessorRun,
  type SourceFormat,
  type SourceSpec,
  type WorkQueueSink,
} from "./ingest/types.ts";
export { INGEST_WORKER } from "./kernel/runs.ts";
