/**
 * A pipeline as its author writes it ({@linkcode PipelineOptions}), the
 * rules it is held to ({@linkcode checkPipeline}, each broken rule a
 * problem with a code and the path of the field), and the compiled form a
 * run carries ({@linkcode compilePipeline}). `definePipeline` is the
 * library's door: it checks, then compiles, and throws every problem at
 * once. The `pipelines:` section of a schedules file is to be held to the
 * same rules through the same function.
 *
 * The rules that are the point of a pipeline: a closed, non-empty set of
 * drop reasons; every step marked `drop` or `enrich`; a step reads only
 * top-level sources that exist; `overflow` in the set when the buffer drops
 * the oldest; `poison` in the set (failing records are dropped as poison
 * after `poisonAfter` failures across runs).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { didYouMean } from "../text/suggest.ts";
import { isAbsolute, resolve } from "node:path";
import {
  type CompiledPipeline,
  type CompiledStep,
  DEFAULT_BUFFER_CAPACITY,
  DEFAULT_DROPS_RETENTION_MS,
  DEFAULT_POISON_AFTER,
  type Freshness,
  INGEST_QUEUE,
  type NamedSource,
  type Overflow,
  OVERFLOW_REASON,
  type PipelineSink,
  POISON_REASON,
  type ProcessorRun,
  type SourceFormat,
  type SourceSpec,
  type WorkQueueSink,
} from "./types.ts";

/** A step's or a sink's `run`: a TypeScript step/sink by name (or the object), or a command. */
export type ProcessorOption =
  | { worker: string }
  | { name: string }
  | { command: string | string[]; shell?: boolean; cwd?: string; env?: Record<string, string> };

/**
 * A sink that makes each record an item of a work queue: the queue's id
 * (resolved against the work queues the file or the caller gives) or its
 * definition, and optionally the record fields holding the item's key and
 * tenant (by default the record's identity and the run's tenant).
 */
export interface WorkQueueSinkOption {
  workQueue: string | ({ id: string } & Record<string, unknown>);
  key?: string;
  tenant?: string;
}

/** What a pipeline's kept records go to: a step-like processor, or a work queue. */
export type SinkOption = ProcessorOption | WorkQueueSinkOption;

/** What checking and compiling a pipeline may resolve names against. */
export interface PipelineContext {
  /** The work queues a `workQueue` sink may name by id (the file's `work_queues:`). */
  workQueues?: readonly ({ id: string } & Record<string, unknown>)[];
}

/** One step as its author writes it: `{ drop: name, run }` or `{ enrich: name, sources, run }`. */
export interface PipelineStepOptions {
  drop?: string;
  enrich?: string;
  /** Names of top-level sources the step reads. */
  sources?: string[];
  run: ProcessorOption;
}

/** Where records come from. */
export type SourceOption =
  & { format?: SourceFormat; encoding?: string }
  & (
    | { file: string }
    | { glob: string }
    | { command: string | string[]; shell?: boolean; cwd?: string; env?: Record<string, string> }
    | { http: string | { url: string; headers?: Record<string, string> } }
  );

/** A named source an enrich step may read. */
export type NamedSourceOption =
  | { file: string }
  | { http: string | { url: string; headers?: Record<string, string> } }
  | { sqlite: string; query: string }
  | { postgres: string; query: string };

/** A pipeline as the library takes it. */
export interface PipelineOptions {
  id: string;
  source: SourceOption;
  /** The field(s) that identify a record. */
  key: string | string[];
  steps: PipelineStepOptions[];
  /** The closed set of reasons a record may be dropped for. */
  dropReasons: string[];
  /** @default { capacity: 10000, overflow: "block" } */
  buffer?: { capacity?: number; overflow?: Overflow };
  /** @default 3 */
  poisonAfter?: number;
  sink: SinkOption;
  /** @default 500 */
  sinkBatch?: number;
  freshness?: Freshness;
  /** Top-level sources, by name (only those the steps declare are carried by a run). */
  sources?: Record<string, NamedSourceOption>;
  /** @default "ingest" */
  queue?: string;
  /** @default 3 */
  maxAttempts?: number;
  /** How long drop rows are kept, ms. @default 30 days */
  dropsRetentionMs?: number;
  notify?: {
    command: string | string[];
    shell?: boolean;
    cwd?: string;
    env?: Record<string, string>;
  };
}

/** The code of a broken rule. */
export type PipelineProblemCode =
  | "drop-reasons-missing"
  | "step-unmarked"
  | "step-duplicate"
  | "source-undeclared"
  | "overflow-reason-missing"
  | "poison-reason-missing"
  | "key-missing"
  | "source-invalid"
  | "sink-missing"
  /** A work queue sink naming no work queue of the file (or the caller's). */
  | "sink-queue-unknown"
  | "buffer-invalid"
  | "freshness-invalid";

/** One broken rule: its code, the path of the field (`["steps", 1, "sources", 0]`) and a sentence. */
export interface PipelineProblem {
  code: PipelineProblemCode;
  path: (string | number)[];
  message: string;
}

/** Raised by {@linkcode definePipeline}: every problem, one per line, with its code. */
export class PipelineDefinitionError extends Error {
  constructor(readonly id: string, readonly problems: PipelineProblem[]) {
    super(
      `pipeline "${id}": ${problems.length} problem(s):\n` +
        problems.map((p) => `  ${p.code}: ${p.message}`).join("\n"),
    );
    this.name = "PipelineDefinitionError";
  }
}

const q = (value: unknown) => JSON.stringify(value);

/**
 * Every rule `options` breaks; none when it may be compiled. A work queue
 * sink's queue named by id must be one of `context.workQueues`.
 */
export function checkPipeline(
  options: PipelineOptions,
  context: PipelineContext = {},
): PipelineProblem[] {
  const problems: PipelineProblem[] = [];
  const where = `pipeline ${q(options.id)}`;
  const add = (code: PipelineProblemCode, path: (string | number)[], message: string) =>
    problems.push({ code, path, message: `${where}: ${message}` });
  const reasons = Array.isArray(options.dropReasons) ? options.dropReasons : [];
  if (reasons.length === 0) {
    add("drop-reasons-missing", ["drop_reasons"], "declares no drop reasons (drop_reasons)");
  }
  const keys = typeof options.key === "string" ? [options.key] : options.key;
  if (!Array.isArray(keys) || keys.length === 0 || keys.some((k) => typeof k !== "string" || !k)) {
    add("key-missing", ["key"], "names no key field (key)");
  }
  if (!sourceOf(options.source)) {
    add("source-invalid", ["source"], "source must be one of file, glob, command or http");
  }
  const format = options.source?.format ?? "ndjson";
  if (format !== "ndjson" && format !== "csv") {
    add("source-invalid", ["source", "format"], `format must be ndjson or csv, got ${q(format)}`);
  }
  const declared = options.sources ?? {};
  const names = new Set<string>();
  for (const [i, step] of (options.steps ?? []).entries()) {
    const marks = [step.drop, step.enrich].filter((m) => m !== undefined);
    if (marks.length !== 1 || typeof marks[0] !== "string" || marks[0] === "") {
      add(
        "step-unmarked",
        ["steps", i],
        `step ${i + 1} must be marked either drop: <name> or enrich: <name>`,
      );
      continue;
    }
    const name = marks[0];
    if (names.has(name)) add("step-duplicate", ["steps", i], `step ${q(name)} appears twice`);
    names.add(name);
    for (const [j, source] of (step.sources ?? []).entries()) {
      if (!Object.hasOwn(declared, source)) {
        const known = Object.keys(declared);
        add(
          "source-undeclared",
          ["steps", i, "sources", j],
          `step ${q(name)} reads source ${q(source)}, which sources: does not declare` +
            (known.length ? ` (declared: ${known.join(", ")})` : ""),
        );
      }
    }
  }
  const sink = options.sink as SinkOption | undefined;
  if (sink && typeof sink === "object" && "workQueue" in sink) {
    const queue = sink.workQueue;
    if (typeof queue === "string") {
      const ids = (context.workQueues ?? []).map((q) => q.id);
      if (!ids.includes(queue)) {
        add(
          "sink-queue-unknown",
          ["sink", "work_queue"],
          `sinks into work queue ${q(queue)}, which work_queues: does not declare (${
            ids.join(", ") || "it declares none"
          })${didYouMean(queue, ids)}`,
        );
      }
    } else if (!queue || typeof queue !== "object" || typeof queue.id !== "string") {
      add("sink-queue-unknown", ["sink", "work_queue"], "names no work queue");
    }
    for (const field of ["key", "tenant"] as const) {
      const value = sink[field];
      if (value !== undefined && (typeof value !== "string" || value === "")) {
        add("sink-missing", ["sink", field], `sink ${field} must name a record field`);
      }
    }
  } else if (!sink || !processorOf(sink as ProcessorOption)) {
    add("sink-missing", ["sink"], "has no sink (a worker, a command or a work queue)");
  }
  const capacity = options.buffer?.capacity ?? DEFAULT_BUFFER_CAPACITY;
  if (!Number.isInteger(capacity) || capacity < 1) {
    add("buffer-invalid", ["buffer", "capacity"], `buffer capacity must be >= 1, got ${capacity}`);
  }
  const overflow = options.buffer?.overflow ?? "block";
  if (!["block", "drop_oldest", "page"].includes(overflow)) {
    add("buffer-invalid", ["buffer", "overflow"], `overflow must be block, drop_oldest or page`);
  }
  if (overflow === "drop_oldest" && reasons.length > 0 && !reasons.includes(OVERFLOW_REASON)) {
    add(
      "overflow-reason-missing",
      ["drop_reasons"],
      `overflow: drop_oldest drops records as "overflow", which drop_reasons lacks`,
    );
  }
  if (reasons.length > 0 && !reasons.includes(POISON_REASON)) {
    add(
      "poison-reason-missing",
      ["drop_reasons"],
      `a record failing poison_after times is dropped as "poison", which drop_reasons lacks`,
    );
  }
  const f = options.freshness;
  if (f !== undefined) {
    const ok = f.mode === "bounded"
      ? Number.isFinite(f.withinMs) && f.withinMs > 0
      : f.mode === "advisory" && typeof f.authority === "string" && f.authority !== "";
    if (!ok) {
      add(
        "freshness-invalid",
        ["freshness"],
        "freshness must be { mode: bounded, within } or { mode: advisory, authority }",
      );
    }
  }
  return problems;
}

/**
 * Checks and compiles `options`; relative paths are resolved against `baseDir` (the working directory).
 * A pipeline that breaks a rule is a {@linkcode PipelineDefinitionError}
 * listing every problem. `jobs.ingest(pipeline)` enqueues a run.
 *
 * @example Records from a file, two drop steps, a TypeScript sink
 * ```ts
 * import assert from "node:assert/strict";
 * import { definePipeline } from "@jobs/jobs";
 * import { type PipelineOptions, PipelineDefinitionError } from "@jobs/jobs/ingest";
 *
 * const options: PipelineOptions = {
 *   id: "catalog",
 *   source: { file: "./feed.ndjson", format: "ndjson" }, // or glob, command, http; csv
 *   key: "sku",
 *   steps: [
 *     // Cheap drops first; each record goes through the steps in this order.
 *     { drop: "drop-duplicates", run: { command: ["node", "./steps/dedupe.mjs"] } },
 *     { drop: "drop-below-threshold", run: { worker: "threshold" } }, // a defineStep worker
 *   ],
 *   dropReasons: ["duplicate", "below-threshold", "poison"],
 *   sink: { worker: "upsert_product" }, // a defineSink worker
 * };
 * const catalog = definePipeline(options, "/srv/catalog");
 * assert.deepEqual(catalog.source, {
 *   kind: "file",
 *   path: "/srv/catalog/feed.ndjson",
 *   format: "ndjson",
 *   encoding: "utf-8",
 * });
 *
 * // Records failing three runs are dropped as "poison": the reason must be in the closed set.
 * assert.throws(
 *   () => definePipeline({ ...options, dropReasons: ["duplicate", "below-threshold"] }),
 *   (error: PipelineDefinitionError) => error.problems[0]!.code === "poison-reason-missing",
 * );
 * ```
 */
export function definePipeline(
  options: PipelineOptions,
  baseDir?: string,
  context: PipelineContext = {},
): CompiledPipeline {
  const problems = checkPipeline(options, context);
  if (problems.length > 0) throw new PipelineDefinitionError(options.id, problems);
  return compilePipeline(options, baseDir, context);
}

/** The compiled form of a pipeline that passed {@linkcode checkPipeline} with `context`. */
export function compilePipeline(
  options: PipelineOptions,
  baseDir?: string,
  context: PipelineContext = {},
): CompiledPipeline {
  const path = (p: string) => isAbsolute(p) ? p : resolve(baseDir ?? ".", p);
  const source = sourceOf(options.source, path)!;
  const steps: CompiledStep[] = options.steps.map((s) => ({
    name: (s.drop ?? s.enrich)!,
    mark: s.drop !== undefined ? "drop" : "enrich",
    sources: s.sources ?? [],
    run: processorOf(s.run, path)!,
  }));
  const used = new Set(steps.flatMap((s) => s.sources));
  const sources: Record<string, NamedSource> = {};
  for (const [name, spec] of Object.entries(options.sources ?? {})) {
    if (used.has(name)) sources[name] = namedSourceOf(spec, path);
  }
  const body = {
    id: options.id,
    source,
    key: typeof options.key === "string" ? [options.key] : [...options.key],
    steps,
    dropReasons: [...options.dropReasons],
    buffer: {
      capacity: options.buffer?.capacity ?? DEFAULT_BUFFER_CAPACITY,
      overflow: options.buffer?.overflow ?? "block",
    },
    poisonAfter: options.poisonAfter ?? DEFAULT_POISON_AFTER,
    sink: sinkOf(options.sink, path, context),
    sinkBatch: options.sinkBatch ?? 500,
    freshness: options.freshness ?? null,
    sources,
    queue: options.queue ?? INGEST_QUEUE,
    maxAttempts: options.maxAttempts ?? 3,
    dropsRetentionMs: options.dropsRetentionMs ?? DEFAULT_DROPS_RETENTION_MS,
    ...(options.notify ? { notify: commandOf(options.notify, path) } : {}),
  };
  const hash = createHash("sha256").update(canonical(body)).digest("hex");
  return { ...body, hash } as CompiledPipeline;
}

function commandOf(
  c: { command: string | string[]; shell?: boolean; cwd?: string; env?: Record<string, string> },
  path: (p: string) => string,
) {
  const argv = typeof c.command === "string" ? [c.command] : [...c.command];
  return {
    kind: "command" as const,
    argv,
    shell: c.shell ?? typeof c.command === "string",
    ...(c.cwd ? { cwd: path(c.cwd) } : {}),
    ...(c.env ? { env: { ...c.env } } : {}),
  };
}

function sinkOf(
  sink: SinkOption,
  path: (p: string) => string,
  context: PipelineContext,
): PipelineSink {
  if (!("workQueue" in sink)) return processorOf(sink, path)!;
  const definition = typeof sink.workQueue === "string"
    ? context.workQueues?.find((q) => q.id === sink.workQueue)
    : sink.workQueue;
  const compiled: WorkQueueSink = {
    kind: "work_queue",
    queue: definition!.id,
    key: sink.key ?? null,
    tenant: sink.tenant ?? null,
    definition: definition!,
  };
  return compiled;
}

function processorOf(
  run: ProcessorOption | undefined,
  path: (p: string) => string = (p) => p,
): ProcessorRun | null {
  if (!run || typeof run !== "object") return null;
  if ("command" in run) return commandOf(run, path);
  if ("worker" in run && typeof run.worker === "string") {
    return { kind: "worker", worker: run.worker };
  }
  if ("name" in run && typeof run.name === "string") return { kind: "worker", worker: run.name };
  return null;
}

function sourceOf(
  s: SourceOption | undefined,
  path: (p: string) => string = (p) => p,
): SourceSpec | null {
  if (!s || typeof s !== "object") return null;
  const common = { format: s.format ?? "ndjson", encoding: s.encoding ?? "utf-8" };
  if ("file" in s && typeof s.file === "string") {
    return { ...common, kind: "file", path: path(s.file) };
  }
  if ("glob" in s && typeof s.glob === "string") {
    return { ...common, kind: "glob", pattern: path(s.glob) };
  }
  if ("command" in s) return { ...common, ...commandOf(s, path) };
  if ("http" in s) {
    const h = typeof s.http === "string" ? { url: s.http } : s.http;
    if (!h || typeof h.url !== "string") return null;
    return { ...common, kind: "http", url: h.url, ...(h.headers ? { headers: h.headers } : {}) };
  }
  return null;
}

function namedSourceOf(s: NamedSourceOption, path: (p: string) => string): NamedSource {
  if ("file" in s) return { kind: "file", path: path(s.file) };
  if ("http" in s) {
    const h = typeof s.http === "string" ? { url: s.http } : s.http;
    return { kind: "http", url: h.url, ...(h.headers ? { headers: h.headers } : {}) };
  }
  if ("sqlite" in s) return { kind: "sqlite", path: path(s.sqlite), query: s.query };
  return { kind: "postgres", url: s.postgres, query: s.query };
}

/** JSON with object keys sorted, so the hash does not depend on the order fields were written in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
