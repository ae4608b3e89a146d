/**
 * TypeScript steps and sinks of pipelines: `defineStep` and `defineSink`.
 * Both return a {@linkcode Worker} (with a marker the engine reads), so the
 * `workers:` module exports them like any worker and the daemon's loader
 * takes them unchanged; run as an ordinary job they only say what they
 * are. The engine calls `run` once per record and `write` once per batch,
 * awaiting only what is a thenable: a step that answers synchronously
 * costs no promise per record.
 *
 * @module
 */

import { defineWorker, type Worker } from "../kernel/worker.ts";
import { expandHttp, expandVariables } from "../process/env.ts";
import { postgresDriver } from "../store/drivers.ts";
import { positional } from "../text/named_params.ts";
import type { NamedSource } from "./types.ts";

/** What a step answers for one record. */
export type StepResult =
  | { keep: Record<string, unknown> | true }
  | { drop: string };

/** What a sink answers for one record of a batch. */
export type SinkResult = { ok: true } | { error: string };

/** A step's answer (the engine's name for {@linkcode StepResult}). */
export type StepAnswer = StepResult;
/** A sink's answer for one record (the engine's name for {@linkcode SinkResult}). */
export type SinkAnswer = SinkResult;

/** One of a step's declared sources. */
export interface SourceHandle {
  /** A file or HTTP source's JSON, read once per run. */
  json<T = unknown>(): Promise<T>;
  /** A SQLite or PostgreSQL source's rows for `params` (bound, never spliced). */
  query<T = Record<string, unknown>>(params?: Record<string, unknown>): Promise<T[]>;
}

/** What a step or a sink is told beside the record. */
export interface ProcessorContext {
  readonly pipeline: string;
  readonly run: number;
  readonly step: string;
  readonly signal: AbortSignal;
  /** The current record's identity (a step; empty for a sink). */
  key: string;
  /** Only the step's declared sources; touching another throws, naming it. */
  readonly sources: Readonly<Record<string, SourceHandle>>;
}

/** The context the engine hands steps and sinks. */
export type StepContext = ProcessorContext;

/** Options of {@linkcode defineStep}. */
export interface StepOptions {
  /** The name `run: { worker: <name> }` refers to. */
  name: string;
  run(
    record: Record<string, unknown>,
    ctx: ProcessorContext,
  ): StepResult | PromiseLike<StepResult>;
}

/** One record handed to a sink: its idempotency key `<pipeline>/<identity>` and the record. */
export interface SinkEntry {
  key: string;
  record: Record<string, unknown>;
}

/** Options of {@linkcode defineSink}. */
export interface SinkOptions {
  name: string;
  /**
   * Writes a batch: return nothing when every record went, or one result
   * per record, in order. Throwing fails the run's attempt (retried, from
   * the committed cursor).
   */
  write(
    batch: SinkEntry[],
    ctx: ProcessorContext,
  ): void | SinkResult[] | PromiseLike<void | SinkResult[]>;
}

/** The property of a worker that says it is a pipeline step or sink. */
export const PROCESSOR = Symbol.for("jobs.ingest.processor");

/** What {@linkcode PROCESSOR} holds. */
export type ProcessorMark =
  | { kind: "step"; options: StepOptions }
  | { kind: "sink"; options: SinkOptions };

/** A TypeScript pipeline step, as a worker of the `workers:` module. */
export function defineStep(options: StepOptions): Worker<unknown> {
  if (typeof options.run !== "function") {
    throw new TypeError(`step "${options.name}": run must be a function`);
  }
  return marked(options.name, { kind: "step", options });
}

/** A TypeScript pipeline sink, as a worker of the `workers:` module. */
export function defineSink(options: SinkOptions): Worker<unknown> {
  if (typeof options.write !== "function") {
    throw new TypeError(`sink "${options.name}": write must be a function`);
  }
  return marked(options.name, { kind: "sink", options });
}

function marked(name: string, mark: ProcessorMark): Worker<unknown> {
  return defineWorker<unknown>(
    {
      name,
      perform: (_args, ctx) => {
        ctx.output(
          `${name} is a pipeline ${mark.kind}: it runs inside a pipeline run, not as a job`,
        );
      },
      [PROCESSOR]: mark,
    } as Parameters<typeof defineWorker<unknown>>[0],
  );
}

/** The step or sink a worker is, or null. */
export function processorOf(worker: Worker<unknown> | undefined): ProcessorMark | null {
  const mark = (worker as unknown as Record<symbol, unknown> | undefined)?.[PROCESSOR];
  return mark === undefined ? null : mark as ProcessorMark;
}

/** The step options behind a worker made by {@linkcode defineStep}, or null. */
export function stepOf(worker: Worker<unknown> | undefined): StepOptions | null {
  const mark = processorOf(worker);
  return mark?.kind === "step" ? mark.options : null;
}

/** The sink options behind a worker made by {@linkcode defineSink}, or null. */
export function sinkOf(worker: Worker<unknown> | undefined): SinkOptions | null {
  const mark = processorOf(worker);
  return mark?.kind === "sink" ? mark.options : null;
}

/** Whether `value` is a thenable (awaited; anything else is taken as it is). */
export function isThenable<T = unknown>(value: unknown): value is PromiseLike<T> {
  return typeof value === "object" && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

// ---------------------------------------------------------------------------
// Sources

/** Opens a run's named sources (cached per run): what `ctx.sources` proxies. */
export class RunSources {
  readonly #sources: Record<string, NamedSource>;
  readonly #json = new Map<string, Promise<unknown>>();
  readonly #closers: (() => void | Promise<void>)[] = [];
  // deno-lint-ignore no-explicit-any
  readonly #queries = new Map<string, (params: Record<string, unknown>) => Promise<any[]>>();

  readonly #pipeline: string | undefined;
  readonly #env: (name: string) => string | undefined;

  /**
   * `pipeline` (its id) names the pipeline in errors; `env` reads the
   * daemon's environment for `${NAME}` in an HTTP source's URL and header
   * values and a PostgreSQL source's URL (credentials stay out of the file).
   */
  constructor(
    sources: Record<string, NamedSource>,
    options: { pipeline?: string; env?: (name: string) => string | undefined } = {},
  ) {
    this.#sources = sources;
    this.#pipeline = options.pipeline;
    this.#env = options.env ?? (() => undefined);
  }

  /** `ctx.sources` of `step` in `pipeline`: only `declared`; touching another throws, naming both. */
  forStep(pipeline: string, step: string, declared: string[]): Record<string, SourceHandle> {
    const where = `pipeline "${pipeline ?? this.#pipeline}" step "${step}"`;
    const handles: Record<string, SourceHandle> = {};
    for (const name of declared) handles[name] = this.#handle(name);
    return new Proxy(handles, {
      get(target, property) {
        if (typeof property !== "string") return undefined;
        if (property in target) return target[property];
        throw new Error(
          `${where}: reads source "${property}" it does not declare (declared: ${
            declared.join(", ") || "none"
          })`,
        );
      },
    });
  }

  #handle(name: string): SourceHandle {
    const spec = this.#sources[name];
    return {
      json: <T>() => {
        if (spec === undefined) return Promise.reject(new Error(`source "${name}" is not defined`));
        let cached = this.#json.get(name);
        if (cached === undefined) {
          cached = readJson(name, spec, this.#env);
          this.#json.set(name, cached);
        }
        return cached as Promise<T>;
      },
      query: <T>(params: Record<string, unknown> = {}) => {
        if (spec === undefined) return Promise.reject(new Error(`source "${name}" is not defined`));
        let run = this.#queries.get(name);
        if (run === undefined) {
          run = this.#openQuery(name, spec);
          this.#queries.set(name, run);
        }
        return run(params) as Promise<T[]>;
      },
    };
  }

  // deno-lint-ignore no-explicit-any
  #openQuery(name: string, spec: NamedSource): (params: Record<string, unknown>) => Promise<any[]> {
    if (spec.kind === "sqlite") {
      let statement: { all(p: Record<string, unknown>): unknown[] } | null = null;
      return async (params) => {
        if (statement === null) {
          const { DatabaseSync } = await import("node:sqlite");
          const db = new DatabaseSync(spec.path, { readOnly: true });
          this.#closers.push(() => db.close());
          statement = db.prepare(spec.query) as unknown as typeof statement;
        }
        return statement!.all(params as Record<string, never>);
      };
    }
    if (spec.kind === "postgres") {
      // Named parameters (:sku) become $1..$n, bound by the driver.
      const { text, names } = positional(spec.query);
      // deno-lint-ignore no-explicit-any
      let sql: any = null;
      return async (params) => {
        if (sql === null) {
          const postgres = await postgresDriver();
          const url = expandVariables(spec.url, this.#env, `source "${name}" postgres`);
          sql = postgres(url, { max: 1, onnotice: () => {} });
          this.#closers.push(() => sql.end({ timeout: 1 }));
        }
        return await sql.unsafe(text, names.map((n) => params[n] ?? null));
      };
    }
    return () => Promise.reject(new Error(`source "${name}" is a ${spec.kind} source: use json()`));
  }

  /** Closes the connections the run opened. */
  async close(): Promise<void> {
    for (const close of this.#closers.splice(0)) await close();
  }
}

async function readJson(
  name: string,
  spec: NamedSource,
  env: (name: string) => string | undefined,
): Promise<unknown> {
  if (spec.kind === "file") {
    return JSON.parse(await Deno.readTextFile(spec.path));
  }
  if (spec.kind === "http") {
    const { url, headers } = expandHttp(spec, env, `source "${name}"`);
    const response = await fetch(url, { headers });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`source "${name}" answered ${response.status}`);
    }
    return await response.json();
  }
  throw new Error(`source "${name}" is a ${spec.kind} query: use query(params)`);
}
