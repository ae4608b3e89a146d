/**
 * The `pipelines:` and `sources:` sections of a schedules file as the ingest
 * module sees them: each pipeline becomes the {@linkcode PipelineOptions} a
 * library user would pass (`drop_reasons` -> `dropReasons`, `poison_after`
 * -> `poisonAfter`, `within: 15m` -> `withinMs`...), the file's `sources:`
 * become its sources, and {@linkcode checkPipeline}'s problems become errors
 * of the file, each with the problem's code, at the YAML node its path
 * names, so `jobs check` and `definePipeline` hold a pipeline to the same
 * rules.
 *
 * As with workflows, the conversion reads the parsed YAML as it is, so the
 * rules still run where the schema found something else wrong; a problem at
 * or under a node the schema already reported is the same mistake and is
 * left out.
 *
 * `source: { file: ./feeds/*.ndjson }` with a glob's characters in it is a
 * glob (read in name order), as `glob:` is.
 *
 * @module
 */

import {
  checkPipeline,
  type NamedSourceOption,
  type PipelineOptions,
  type ProcessorOption,
  type SinkOption,
  type SourceOption,
} from "../ingest/definition.ts";
import type { Freshness } from "../ingest/types.ts";
import { tryParseDuration } from "../text/durations.ts";
import { type Path, quote, type Reporter } from "./report.ts";

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Fields
    : undefined;
}

/** Characters that make a `file:` a glob. */
const GLOB = /[*?[\]{}]/;

/**
 * One entry of `pipelines:` (the parsed YAML, or the schema's output of it)
 * as {@linkcode PipelineOptions}, with the file's `sources:`. Never throws:
 * a field of the wrong type is passed on as something `checkPipeline` reads
 * as missing or invalid (the schema reports it), so every other rule runs.
 *
 * @param folder given, where commands without a `cwd` run (the file's
 *   folder, so `./steps/dedupe` is the file's as `./feed.ndjson` is)
 */
export function pipelineOptions(
  value: unknown,
  sources: unknown,
  folder?: string,
): PipelineOptions {
  const commandOption = (c: Fields) =>
    compact({
      command: c.command as string | string[],
      shell: typeof c.shell === "boolean" ? c.shell : undefined,
      cwd: typeof c.cwd === "string" ? c.cwd : folder,
      env: fields(c.env) as Record<string, string> | undefined,
    });
  const processorOption = (value: unknown): ProcessorOption | undefined => {
    const run = fields(value);
    if (!run) return undefined;
    if (run.command !== undefined) return commandOption(run);
    if (typeof run.worker === "string") return { worker: run.worker };
    return undefined;
  };
  const sinkOption = (value: unknown): SinkOption | undefined => {
    const sink = fields(value);
    if (sink?.work_queue === undefined) return processorOption(value);
    return compact({
      workQueue: typeof sink.work_queue === "string" ? sink.work_queue : "",
      key: typeof sink.key === "string" ? sink.key : undefined,
      tenant: typeof sink.tenant === "string" ? sink.tenant : undefined,
    });
  };
  const p = fields(value) ?? {};
  const buffer = fields(p.buffer);
  const steps = Array.isArray(p.steps) ? p.steps : [];
  return compact<PipelineOptions>({
    id: typeof p.id === "string" ? p.id : "",
    source: sourceOption(p.source, commandOption) as SourceOption,
    key: (Array.isArray(p.key) ? p.key.map(String) : p.key) as string | string[],
    steps: steps.map((step) => {
      const s = fields(step) ?? {};
      return compact({
        drop: typeof s.drop === "string" ? s.drop : s.drop === undefined ? undefined : "",
        enrich: typeof s.enrich === "string" ? s.enrich : s.enrich === undefined ? undefined : "",
        sources: Array.isArray(s.sources) ? s.sources.map(String) : undefined,
        run: processorOption(s.run) as ProcessorOption,
      });
    }),
    dropReasons: Array.isArray(p.drop_reasons) ? p.drop_reasons.map(String) : [],
    buffer: buffer && compact({
      capacity: typeof buffer.capacity === "number" ? buffer.capacity : undefined,
      overflow: buffer.overflow as NonNullable<PipelineOptions["buffer"]>["overflow"],
    }),
    poisonAfter: typeof p.poison_after === "number" ? p.poison_after : undefined,
    sink: sinkOption(p.sink) as SinkOption,
    sinkBatch: typeof p.sink_batch === "number" ? p.sink_batch : undefined,
    freshness: p.freshness === undefined ? undefined : freshnessOf(p.freshness),
    sources: Object.fromEntries(
      Object.entries(fields(sources) ?? {}).map(([name, s]) => [name, namedSource(s)]),
    ),
    queue: typeof p.queue === "string" ? p.queue : undefined,
    maxAttempts: typeof p.max_attempts === "number" ? p.max_attempts : undefined,
    dropsRetentionMs: p.drops_retention === undefined ? undefined : msOf(p.drops_retention),
    notify: fields(p.notify) && commandOption(fields(p.notify)!) as PipelineOptions["notify"],
  });
}

function sourceOption(
  value: unknown,
  commandOption: (c: Fields) => Record<string, unknown>,
): SourceOption | undefined {
  const s = fields(value);
  if (!s) return undefined;
  const common = compact({
    format: s.format as SourceOption["format"],
    encoding: typeof s.encoding === "string" ? s.encoding : undefined,
  });
  if (typeof s.file === "string") {
    return GLOB.test(s.file) ? { ...common, glob: s.file } : { ...common, file: s.file };
  }
  if (typeof s.glob === "string") return { ...common, glob: s.glob };
  if (s.command !== undefined) return { ...common, ...commandOption(s) } as SourceOption;
  if (s.http !== undefined) return { ...common, http: httpOf(s.http) } as SourceOption;
  return undefined;
}

function httpOf(value: unknown): { url: string; headers?: Record<string, string> } {
  if (typeof value === "string") return { url: value };
  const h = fields(value) ?? {};
  return compact({
    url: String(h.url ?? ""),
    headers: fields(h.headers) as Record<string, string>,
  });
}

function namedSource(value: unknown): NamedSourceOption {
  const s = fields(value) ?? {};
  if (typeof s.file === "string") return { file: s.file };
  if (s.http !== undefined) return { http: httpOf(s.http) };
  if (typeof s.sqlite === "string") return { sqlite: s.sqlite, query: String(s.query ?? "") };
  return { postgres: String(s.postgres ?? ""), query: String(s.query ?? "") };
}

function freshnessOf(value: unknown): Freshness {
  const f = fields(value) ?? {};
  if (f.mode === "advisory") {
    return { mode: "advisory", authority: typeof f.authority === "string" ? f.authority : "" };
  }
  return { mode: f.mode as "bounded", withinMs: f.within === undefined ? -1 : msOf(f.within) };
}

/** A duration as written (`"15m"`, `"PT15M"`) or as the schema outputs it (ms); -1 when neither. */
function msOf(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value !== "string") return -1;
  const parsed = tryParseDuration(value);
  if (parsed.ok) return parsed.ms;
  try {
    return Temporal.Duration.from(value).total({ unit: "milliseconds" });
  } catch {
    return -1;
  }
}

/** Whether `prefix` is `path` or a node above it. */
function within(prefix: Path, path: Path): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => segment === path[i]);
}

const SOURCE_KINDS = ["file", "http", "sqlite", "postgres"] as const;

/**
 * Checks `sources:` and every entry of `pipelines:` in the file `report`
 * holds: each source one kind (a query with, and only with, sqlite or
 * postgres), pipeline ids unique, then {@linkcode checkPipeline} against the
 * file's sources. Each problem is an error with the problem's code, at its
 * node; one at or under a path in `reported` is left out.
 */
export function checkPipelines(report: Reporter, reported: readonly Path[]): void {
  const root = fields(report.raw);
  for (const [name, value] of Object.entries(fields(root?.sources) ?? {})) {
    const s = fields(value);
    if (!s) continue;
    const kinds = SOURCE_KINDS.filter((kind) => s[kind] !== undefined);
    const path = ["sources", name];
    if (kinds.length !== 1) {
      report.add(
        "source-invalid",
        kinds.length === 0 ? path : [...path, kinds[1]!],
        kinds.length === 0
          ? `needs one of ${SOURCE_KINDS.join(", ")}`
          : `has both ${kinds[0]} and ${kinds[1]}, choose one`,
      );
    } else if ((kinds[0] === "sqlite" || kinds[0] === "postgres") !== (s.query !== undefined)) {
      report.add(
        "source-invalid",
        s.query === undefined ? path : [...path, "query"],
        s.query === undefined
          ? `${kinds[0]} needs query (with named parameters such as :sku)`
          : `query applies only to sqlite and postgres`,
      );
    }
  }
  const list = Array.isArray(root?.pipelines) ? root.pipelines as unknown[] : [];
  // A work queue sink names one of the file's queues (checked by work_queues' own rules).
  const workQueues = (Array.isArray(root?.work_queues) ? root.work_queues as unknown[] : [])
    .map((q) => fields(q)?.id)
    .filter((id): id is string => typeof id === "string")
    .map((id) => ({ id }));
  const firstLine = new Map<string, number>();
  for (const [index, item] of list.entries()) {
    if (!fields(item)) continue;
    const id = fields(item)!.id;
    if (typeof id === "string") {
      const line = report.at.of(report.offset(["pipelines", index, "id"])).line;
      const first = firstLine.get(id);
      if (first === undefined) firstLine.set(id, line);
      else {
        report.add(
          "duplicate-id",
          ["pipelines", index, "id"],
          `duplicate pipeline id ${quote(id)}, first declared on line ${first}`,
        );
      }
    }
    const options = pipelineOptions(item, root?.sources);
    for (const problem of checkPipeline(options, { workQueues })) {
      const path: Path = ["pipelines", index, ...problem.path];
      if (reported.some((at) => within(at, path))) continue;
      // The reporter names the pipeline; `checkPipeline` does too, for the library.
      const text = problem.message.replace(/^pipeline "[^"]*": /, "");
      report.add(problem.code, path, `${problem.code}: ${text}`);
    }
  }
}

/** Drops the keys whose value is undefined, so that optional fields are absent, not undefined. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
