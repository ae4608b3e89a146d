/**
 * The words of ingest pipelines: a pipeline compiled from `pipelines:` (or
 * `definePipeline`), the args of the job that runs it, and (re-exported
 * from the store, whose words they are) the rows a store keeps of its runs,
 * its dropped records and its failing records. Pure data; no store, no I/O.
 *
 * A run is one `jobs.ingest` job and one row of `ingest_runs`. The job
 * reads the source from the run's cursor in chunks; each chunk goes through
 * the steps in order and its kept records to the sink, and then one fenced
 * write commits the chunk's counts, its drop rows, its failing records and
 * the new cursor together, so a run that crashes resumes where its last
 * chunk was committed.
 *
 * @module
 */

import type { RunSpec } from "../kernel/runs.ts";
import type { WorkItemAddParams } from "../store/store.ts";

// The rows the store keeps of ingest runs are words of the store (a lower
// layer); ingest uses them under the same names.
export type {
  ChunkDelta,
  IngestCounts,
  IngestDrop,
  IngestRun,
  IngestRunState,
  NewDrop,
  NewFailure,
  PipelineSummary,
} from "../store/ingest_types.ts";
import type { IngestRunState } from "../store/ingest_types.ts";

/** The queue pipeline runs go to unless the pipeline names another. */
export const INGEST_QUEUE = "ingest";

/** The drop reason of a record evicted by `overflow: drop_oldest`. */
export const OVERFLOW_REASON = "overflow";
/** The drop reason of a record that failed `poison_after` times. */
export const POISON_REASON = "poison";

/** @default 3 */
export const DEFAULT_POISON_AFTER = 3;
/** @default 10,000 records */
export const DEFAULT_BUFFER_CAPACITY = 10_000;
/** Dropped records are kept this long. @default 30 days */
export const DEFAULT_DROPS_RETENTION_MS = 30 * 86_400_000;
/** Longest excerpt of a record kept with a drop or a failure (redacted), in characters. */
export const EXCERPT_CHARS = 512;
/** Longest record text kept with a drop so it can be replayed, in bytes; longer ones are not replayable. */
export const MAX_STORED_RECORD_BYTES = 64 * 1024;
/**
 * Deepest nesting of a record (the record itself is level 1). A deeper one
 * fails at the source, before a step, a sink or the engine walks it: the
 * runtime's own recursive walks (`JSON.stringify` off its fast path,
 * `structuredClone`, a driver's serializer) overflow the stack on records
 * some thousands deep, and a record is nobody's run to fail.
 * @default 1000
 */
export const MAX_RECORD_DEPTH = 1000;

/** The formats a source may hold. */
export type SourceFormat = "ndjson" | "csv";

/** Where a pipeline's records come from, compiled (paths resolved against the schedules file). */
export type SourceSpec =
  & { format: SourceFormat; encoding: string }
  & (
    | { kind: "file"; path: string }
    /** A glob; its matches are read in name order. */
    | { kind: "glob"; pattern: string }
    | Extract<RunSpec, { kind: "command" }>
    | { kind: "http"; url: string; headers?: Record<string, string> }
  );

/** One `sources:` entry an enrich step may read, compiled. */
export type NamedSource =
  | { kind: "file"; path: string }
  | { kind: "http"; url: string; headers?: Record<string, string> }
  /** A query with named parameters (`:sku`), always bound, never spliced. */
  | { kind: "sqlite"; path: string; query: string }
  | { kind: "postgres"; url: string; query: string };

/** What a step or a sink runs: a TypeScript step/sink of the process by name, or a long-lived command. */
export type ProcessorRun =
  | { kind: "worker"; worker: string }
  | Extract<RunSpec, { kind: "command" }>;

/**
 * A sink that makes each record reaching it an item of a work queue: the
 * records a pipeline cannot decide, left for people (`sink: { work_queue:
 * disputes }`). The item's key is the record's `key` field when named, else
 * the record's identity (the pipeline's `key:`); its tenant the record's
 * `tenant` field when named, else the run's; its data the record as the
 * steps left it. Adding a key again updates the item and keeps its place.
 */
export interface WorkQueueSink {
  kind: "work_queue";
  /** The queue's id. */
  queue: string;
  /** The record field holding the item's key; null: the record's identity. */
  key: string | null;
  /** The record field holding the item's tenant; null: the run's tenant. */
  tenant: string | null;
  /**
   * The queue as the schedules file declared it (a `WorkQueueDefinition` of
   * `src/workqueue/`, a layer above this one), carried as data so a run
   * reads nothing from the file; the runner scores each item by it.
   */
  definition: { id: string } & Record<string, unknown>;
}

/** Where a pipeline's kept records go: a TypeScript sink, a command, or a work queue. */
export type PipelineSink = ProcessorRun | WorkQueueSink;

/**
 * The store's params of adding one record as an item of a work queue sink's
 * queue, its score computed by the queue's rule (given to a run by the
 * runner, from the layer that knows work queues); throws an `Error` whose
 * message says why the record cannot be an item (the record's failure).
 */
export type WorkItemParamsOf = (
  definition: WorkQueueSink["definition"],
  item: { key: string; data: Record<string, unknown>; tenant: string | null },
  actor: string,
  now: number,
) => WorkItemAddParams;

/** One step of a pipeline, compiled. */
export interface CompiledStep {
  /** The step's name (the value of its `drop:` or `enrich:` key). */
  name: string;
  mark: "drop" | "enrich";
  /** Names of the top-level `sources:` it may read. */
  sources: string[];
  run: ProcessorRun;
}

/** How a full buffer is handled. */
export type Overflow = "block" | "drop_oldest" | "page";

/** What readers of the ingested data observe. */
export type Freshness =
  | { mode: "bounded"; withinMs: number }
  | { mode: "advisory"; authority: string };

/** A pipeline as a run carries it: everything resolved, nothing read from the file afterwards. */
export interface CompiledPipeline {
  id: string;
  /** SHA-256 of the definition's canonical JSON: runs say which definition they ran. */
  hash: string;
  source: SourceSpec;
  /** The field(s) that identify a record. */
  key: string[];
  steps: CompiledStep[];
  /** The closed set of drop reasons. */
  dropReasons: string[];
  buffer: { capacity: number; overflow: Overflow };
  poisonAfter: number;
  sink: PipelineSink;
  /** Records handed to the sink at once. @default 500 */
  sinkBatch: number;
  freshness: Freshness | null;
  /** The top-level sources the steps declare (only those), by name. */
  sources: Record<string, NamedSource>;
  queue: string;
  /** Attempts of the run's job. @default 3 */
  maxAttempts: number;
  /** How long drop rows are kept. @default 30 days */
  dropsRetentionMs: number;
  /** A command run when a run is paged (`overflow: page`); the daemon's log and metrics say it too. */
  notify?: Extract<RunSpec, { kind: "command" }>;
}

/** The args of a `jobs.ingest` job. */
export interface IngestJobArgs {
  kind: "ingest";
  pipeline: CompiledPipeline;
  /** Replays one dropped record (`jobs drops replay`) instead of reading the source. */
  replay?: { drop: number; actor: string; reason: string };
}

export const INGEST_RUN_STATES: readonly IngestRunState[] = [
  "running",
  "completed",
  "paged",
  "failed",
  "cancelled",
];
