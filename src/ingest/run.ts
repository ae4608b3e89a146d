/**
 * One pipeline run: the loop of a `jobs.ingest` job. It opens the run
 * (resuming its counts and cursor), starts a reader that fills the bounded
 * buffer from the source, and takes chunks of min(capacity, 1000) records:
 * each chunk goes through the steps in order (step by step over the whole
 * chunk, so a command step gets the chunk at once), then its kept records
 * to the sink in batches, and then one fenced commit writes the chunk's
 * counts, drops, failures and cursor together. A commit that reports the
 * lease lost stops the run at once: the next owner resumes from the last
 * committed cursor, and only records after it are read (and sunk) again.
 *
 * A work queue sink (`sink: { work_queue }`) adds each kept record as an
 * item in the same transaction as the chunk's commit: the items, the
 * counts and the cursor commit together, or none of them (a lost lease
 * adds no item). Adding a key again updates the item and keeps its place,
 * so a chunk read again after a crash changes nothing twice.
 *
 * A failing record (it did not parse, it is nested deeper than
 * {@linkcode MAX_RECORD_DEPTH} levels, a step failed or answered a drop
 * outside the set, the sink refused it, the engine could not write it or a
 * step's answer as JSON) is counted `failed` and retried on the next run,
 * until it has failed `poisonAfter` times across runs: then it is dropped
 * as `poison`. What goes wrong with one record is that record's failure,
 * with a one-line reason; only what goes wrong with the run (the store, a
 * command that dies, a sink that throws) fails the run's attempt.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Clock } from "../clock.ts";
import { JobFailure } from "../kernel/error_text.ts";
import type { Registry } from "../kernel/executor.ts";
import { redact } from "../kernel/redact.ts";
import type { JobContext } from "../kernel/worker.ts";
import type { Store, StoreTxMethods, WorkItemAddParams } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";
import { LeaseLostError } from "../kernel/abort_reasons.ts";
import { RecordBuffer } from "./buffer.ts";
import { LineProcess } from "./command_processor.ts";
import type { SourceRecord } from "./formats.ts";
import {
  isThenable,
  type ProcessorContext as StepContext,
  processorOf,
  RunSources,
  type SinkResult as SinkAnswer,
  type StepResult as StepAnswer,
} from "./processors.ts";
import { type Feed, openFeed } from "./source.ts";
import {
  type ChunkDelta,
  type CompiledPipeline,
  type CompiledStep,
  EXCERPT_CHARS,
  type IngestCounts,
  type IngestJobArgs,
  type IngestRun,
  MAX_RECORD_DEPTH,
  MAX_STORED_RECORD_BYTES,
  type NewDrop,
  type NewFailure,
  OVERFLOW_REASON,
  POISON_REASON,
  type ProcessorRun,
  type WorkItemParamsOf,
  type WorkQueueSink,
} from "./types.ts";
import { nestedDeeper } from "../text/nesting.ts";

/** What a run needs from its process. */
export interface RunDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  env: (name: string) => string | undefined;
  workers: Registry;
  killGraceMs?: number;
  /** Told the buffer of each run (tests read its high-water mark). */
  onBuffer?: (buffer: RecordBuffer) => void;
  /**
   * Makes a record the params of a work item's add, scored by its queue's
   * rule: given by the runner (work queues are a layer above ingest). A run
   * whose sink is a work queue fails without it.
   */
  workItemParams?: WorkItemParamsOf;
}

/** Most records per chunk (one commit each). */
export const MAX_CHUNK = 1000;

interface Item {
  record: SourceRecord;
  identity: string | null;
  value: Record<string, unknown>;
  /** Set once a step or the sink fails it. */
  failed: { step: string; error: string } | null;
}

/** A step or sink ready to run over a chunk. */
interface Processor {
  name: string;
  close(): Promise<void>;
}

interface StepProcessor extends Processor {
  /** Sets each item's outcome: kept (value replaced), dropped (returned reason) or failed. */
  run(items: Item[], drops: (Item & { reason: string })[]): Promise<Item[]>;
}

interface SinkProcessor extends Processor {
  kind: "processor";
  write(items: Item[]): Promise<void>;
}

/** A work queue sink: each item's add params, made before the chunk's transaction. */
interface QueueSink extends Processor {
  kind: "work_queue";
  /** The add params of each item it may add; an item it cannot is marked failed. */
  prepare(items: Item[], now: number): [Item, WorkItemAddParams][];
  /** The failure of an item whose add the store refused (its key is another tenant's). */
  refused(item: Item): void;
}

/** Runs one `jobs.ingest` job's run; see the module doc. */
export async function runPipeline(
  args: IngestJobArgs,
  ctx: JobContext,
  deps: RunDeps,
): Promise<void> {
  const { pipeline } = args;
  const { store, clock, logger } = deps;
  const trigger = args.replay ? "replay" : ctx.job.occurrence ? "schedule" : "manual";
  const run = await store.ingestRunOpen({
    pipeline: pipeline.id,
    hash: pipeline.hash,
    jobId: ctx.job.id,
    fence: ctx.fence,
    trigger,
    now: clock.now(),
  });
  if (run === null) throw new LeaseLostError(ctx.job.id);
  if (run.state !== "running") return;
  const lease = { runId: run.id, jobId: ctx.job.id, fence: ctx.fence };
  const counts: IngestCounts = structuredClone(run.counts);
  const signal = ctx.signal;
  const runEnv = { JOBS_PIPELINE: pipeline.id, JOBS_RUN: String(run.id) };
  const sources = new RunSources(pipeline.sources, { pipeline: pipeline.id, env: deps.env });
  const processors: Processor[] = [];
  const capacity = pipeline.buffer.capacity;
  const buffer = new RecordBuffer(capacity, pipeline.buffer.overflow);
  deps.onBuffer?.(buffer);
  let feed: Feed | null = null;
  try {
    const steps = pipeline.steps.map((step) => {
      const p = stepProcessor(step, pipeline, run, { deps, signal, sources, runEnv });
      processors.push(p);
      return p;
    });
    const sink = pipeline.sink.kind === "work_queue"
      ? queueSink(pipeline.id, pipeline.sink, deps, ctx.job.tenant)
      : sinkProcessor(pipeline, run, { deps, signal, sources, runEnv });
    processors.push(sink);

    feed = args.replay
      ? await replayFeed(store, args.replay.drop)
      : await openFeed(pipeline.source, run.cursor, {
        clock,
        signal,
        env: deps.env,
        runEnv,
        killGraceMs: deps.killGraceMs,
      });
    const reading = readInto(feed, buffer, signal);
    const chunkSize = Math.min(capacity, MAX_CHUNK);
    for (;;) {
      const take = await buffer.take(chunkSize, signal);
      if (take.records.length > 0 || take.evicted.length > 0) {
        const last = take.records.at(-1) ?? take.evicted.at(-1)!;
        const cursor = feed.cursorOf(last.position);
        const delta = await processChunk(take.records, take.evicted, cursor, {
          pipeline,
          steps,
          sink,
          store,
          lease,
          clock,
          signal,
        });
        addDelta(counts, delta);
        logger("ingest.chunk", {
          pipeline: pipeline.id,
          run: run.id,
          received: delta.received,
          kept: delta.kept,
          sunk: delta.sunk,
          failed: delta.failed,
          dropped: delta.dropped,
        });
      }
      if (take.done) break;
    }
    await reading;
    const paged = buffer.paged;
    if (paged) {
      logger("ingest.paged", { pipeline: pipeline.id, run: run.id, capacity });
      if (pipeline.notify) await notify(pipeline.notify, runEnv, deps, signal);
    }
    const dropped = Object.values(counts.dropped).reduce((a, b) => a + b, 0);
    const pending = 0;
    const accounted = counts.sunk + dropped + counts.failed + pending;
    let state: "completed" | "paged" | "failed" = paged ? "paged" : "completed";
    let error: string | null = null;
    if (accounted !== counts.received) {
      error =
        `pipeline "${pipeline.id}" run ${run.id} does not add up: received ${counts.received}` +
        ` but sunk ${counts.sunk} + dropped ${dropped} + failed ${counts.failed} + pending ${pending}` +
        ` = ${accounted}`;
      logger("ingest.unbalanced", {
        level: "error",
        pipeline: pipeline.id,
        run: run.id,
        error,
        counts,
      });
      state = "failed";
    }
    const finished = await store.ingestRunFinish({
      lease,
      state,
      error,
      pending,
      now: clock.now(),
    });
    if (!finished) throw new LeaseLostError(ctx.job.id);
    logger("ingest.finished", { pipeline: pipeline.id, run: run.id, state, counts });
    if (state === "failed") throw new JobFailure(error!);
  } finally {
    buffer.end();
    await feed?.close().catch(() => {});
    for (const p of processors) await p.close().catch(() => {});
    await sources.close();
  }
}

async function readInto(feed: Feed, buffer: RecordBuffer, signal: AbortSignal): Promise<void> {
  try {
    for await (const batch of feed.batches) {
      if (!(await buffer.push(batch, signal))) break;
    }
    buffer.end();
  } catch (error) {
    buffer.end(error);
  }
}

function addDelta(counts: IngestCounts, delta: ChunkDelta): void {
  counts.received += delta.received;
  counts.kept += delta.kept;
  counts.sunk += delta.sunk;
  counts.failed += delta.failed;
  for (const [reason, n] of Object.entries(delta.dropped)) {
    counts.dropped[reason] = (counts.dropped[reason] ?? 0) + n;
  }
}

// ---------------------------------------------------------------------------
// One chunk

interface ChunkDeps {
  pipeline: CompiledPipeline;
  steps: StepProcessor[];
  sink: SinkProcessor | QueueSink;
  store: Store;
  lease: { runId: number; jobId: number; fence: number };
  clock: Clock;
  signal: AbortSignal;
}

async function processChunk(
  records: SourceRecord[],
  evicted: SourceRecord[],
  cursor: string,
  d: ChunkDeps,
): Promise<ChunkDelta> {
  const { pipeline } = d;
  const delta: ChunkDelta = {
    received: records.length + evicted.length,
    kept: 0,
    sunk: 0,
    failed: 0,
    dropped: {},
  };
  const drops: NewDrop[] = [];
  const failures: NewFailure[] = [];
  const cleared: string[] = [];
  const failing: { identity: string; step: string; error: string; raw: string; value?: unknown }[] =
    [];
  const dropOf = (
    reason: string,
    step: string,
    identity: string | null,
    raw: string,
    value?: unknown,
  ) => {
    delta.dropped[reason] = (delta.dropped[reason] ?? 0) + 1;
    drops.push({
      recordKey: identity,
      reason,
      step,
      excerpt: excerptOf(raw),
      record: storedRecord(raw, value),
    });
  };
  for (const r of evicted) {
    const key = r.value ? keyOf(r.value, pipeline.key) : null;
    dropOf(OVERFLOW_REASON, "buffer", typeof key === "string" ? key : null, r.raw, r.value);
  }

  let alive: Item[] = [];
  for (const record of records) {
    if (record.error !== undefined || record.value === undefined) {
      failing.push({
        identity: rawIdentity(record.raw),
        step: "source",
        error: record.error ?? "no value",
        raw: record.raw,
      });
      continue;
    }
    const key = keyOf(record.value, pipeline.key);
    if (typeof key !== "string") {
      failing.push({
        identity: rawIdentity(record.raw),
        step: "source",
        error: key === null
          ? `record has no key ${pipeline.key.map((k) => `"${k}"`).join(", ")}`
          : key.error,
        raw: record.raw,
      });
      continue;
    }
    if (nestedDeeper(record.value, MAX_RECORD_DEPTH)) {
      // Its value is not handed on (not even to storedRecord): the raw text is kept instead.
      failing.push({
        identity: key,
        step: "source",
        error: `record nested deeper than ${MAX_RECORD_DEPTH} levels`,
        raw: record.raw,
      });
      continue;
    }
    alive.push({ record, identity: key, value: record.value, failed: null });
  }
  const itemFailed = (item: Item) => {
    failing.push({
      identity: item.identity!,
      step: item.failed!.step,
      error: item.failed!.error,
      raw: item.record.raw,
      value: item.value,
    });
  };
  for (const step of d.steps) {
    if (alive.length === 0) break;
    const dropped: (Item & { reason: string })[] = [];
    const next = await step.run(alive, dropped);
    for (const item of dropped) {
      dropOf(item.reason, step.name, item.identity, item.record.raw, item.value);
      cleared.push(item.identity!);
    }
    const kept: Item[] = [];
    for (const item of next) {
      if (item.failed) itemFailed(item);
      else kept.push(item);
    }
    alive = kept;
  }
  delta.kept = alive.length;
  const sink = d.sink;
  if (sink.kind === "processor") {
    if (alive.length > 0) await sink.write(alive);
    return await settle(d.store);
  }
  // The items and the chunk's bookkeeping in one transaction: both or neither.
  const adds = sink.prepare(alive, d.clock.now());
  return await d.store.transaction(async (tx) => {
    for (const [item, params] of adds) {
      if ((await tx.workItemAdd(params)) === null) sink.refused(item);
    }
    return await settle(tx);
  });

  /** What became of the chunk's kept and failing records, committed on `db`. */
  async function settle(
    db: Pick<StoreTxMethods, "ingestFailuresGet" | "ingestChunkCommit">,
  ): Promise<ChunkDelta> {
    for (const item of alive) {
      if (item.failed) itemFailed(item);
      else {
        delta.sunk++;
        cleared.push(item.identity!);
      }
    }

    if (failing.length > 0) {
      const poisonable = pipeline.dropReasons.includes(POISON_REASON);
      const so = await db.ingestFailuresGet({
        pipeline: pipeline.id,
        records: [...new Set(failing.map((f) => f.identity))],
      });
      for (const f of failing) {
        const before = so.get(f.identity) ?? 0;
        if (poisonable && before + 1 >= pipeline.poisonAfter) {
          dropOf(
            POISON_REASON,
            f.step,
            f.identity.startsWith("raw:") ? null : f.identity,
            f.raw,
            f.value,
          );
          cleared.push(f.identity);
        } else {
          delta.failed++;
          failures.push({
            record: f.identity,
            error: redact(f.error).slice(0, 4096),
            excerpt: excerptOf(f.raw),
          });
        }
      }
    }
    if (d.signal.aborted) throw d.signal.reason;
    const ok = await db.ingestChunkCommit({
      lease: d.lease,
      pipeline: pipeline.id,
      delta,
      pending: 0,
      cursor,
      drops,
      failures,
      cleared,
      now: d.clock.now(),
    });
    if (!ok) throw new LeaseLostError(d.lease.jobId);
    return delta;
  }
}

/** A record's identity: one key field as its string, several as JSON array text; null when one is missing. */
export function identityOf(value: Record<string, unknown>, key: string[]): string | null {
  if (key.length === 1) {
    const v = value[key[0]!];
    if (v === undefined || v === null || v === "") return null;
    return typeof v === "string" ? v : JSON.stringify(v);
  }
  const parts: unknown[] = [];
  for (const k of key) {
    const v = value[k];
    if (v === undefined || v === null || v === "") return null;
    parts.push(v);
  }
  return JSON.stringify(parts);
}

/**
 * A record's identity, null when a key field is missing, or why it cannot
 * be had (a key value `JSON.stringify` refuses): the record's failure.
 */
function keyOf(value: Record<string, unknown>, key: string[]): string | null | { error: string } {
  try {
    return identityOf(value, key);
  } catch (error) {
    return { error: `cannot read the record's key: ${reasonOf(error)}` };
  }
}

/**
 * Why `error` was thrown, as a record's failure says it: its message alone,
 * never its stack (a record's reason names no frame and no source path),
 * e.g. `Maximum call stack size exceeded`.
 */
function reasonOf(error: unknown): string {
  try {
    const text = error instanceof Error ? error.message : String(error);
    return text.trim() || (error as Error)?.name || "unknown error";
  } catch {
    return "unknown error";
  }
}

/** `value` as JSON for an error message (at most 80 characters), or why it is not JSON. */
function shown(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 80) ?? String(value);
  } catch (error) {
    return `a value that is not JSON (${reasonOf(error)})`;
  }
}

/** `value` as one JSON line for a command, or the reason it cannot be (the record's failure). */
function lineOf(value: unknown): string | { error: string } {
  try {
    return JSON.stringify(value);
  } catch (error) {
    return { error: `cannot process record: ${reasonOf(error)}` };
  }
}

function rawIdentity(raw: string): string {
  return `raw:${createHash("sha256").update(raw).digest("hex").slice(0, 16)}`;
}

function excerptOf(raw: string): string {
  let text: string;
  try {
    text = redact(raw);
  } catch {
    // A pattern that gives up on a pathological record: redact the excerpt's length alone.
    try {
      text = redact(raw.slice(0, EXCERPT_CHARS));
    } catch {
      text = "";
    }
  }
  return text.length > EXCERPT_CHARS ? text.slice(0, EXCERPT_CHARS) : text;
}

const encoder = new TextEncoder();

function storedRecord(raw: string, value: unknown): string | null {
  // Replays read NDJSON: a CSV row is kept as the object it parsed to.
  let text = raw;
  if (value !== undefined) {
    try {
      text = JSON.stringify(value);
    } catch {
      // A value JSON cannot hold (a step kept a BigInt): the record as it was read.
    }
  }
  return text.length * 3 <= MAX_STORED_RECORD_BYTES ||
      encoder.encode(text).length <= MAX_STORED_RECORD_BYTES
    ? text
    : null;
}

// ---------------------------------------------------------------------------
// Steps and sinks

interface ProcessorDeps {
  deps: RunDeps;
  signal: AbortSignal;
  sources: RunSources;
  runEnv: Record<string, string>;
}

function stepContext(
  pipeline: CompiledPipeline,
  run: IngestRun,
  step: CompiledStep | null,
  name: string,
  p: ProcessorDeps,
): StepContext {
  return {
    pipeline: pipeline.id,
    run: run.id,
    step: name,
    signal: p.signal,
    key: "",
    sources: p.sources.forStep(pipeline.id, name, step?.sources ?? []),
  };
}

function resolveWorker(run: ProcessorRun & { kind: "worker" }, registry: Registry, what: string) {
  const worker = registry.get(run.worker);
  if (worker === undefined) {
    throw new JobFailure(
      `${what} runs worker "${run.worker}", which is not registered in this process`,
    );
  }
  return worker;
}

function stepProcessor(
  step: CompiledStep,
  pipeline: CompiledPipeline,
  run: IngestRun,
  p: ProcessorDeps,
): StepProcessor {
  const where = `pipeline "${pipeline.id}" step "${step.name}"`;
  const reasons = new Set(pipeline.dropReasons);
  const set = pipeline.dropReasons.join(", ");
  /** Applies one answer to an item; returns the drop reason when it is a valid drop. */
  const apply = (item: Item, answer: unknown): string | null => {
    if (answer !== null && typeof answer === "object") {
      const a = answer as Record<string, unknown>;
      if ("keep" in a) {
        if (a.keep === true) return null;
        if (a.keep !== null && typeof a.keep === "object" && !Array.isArray(a.keep)) {
          item.value = a.keep as Record<string, unknown>;
          return null;
        }
      } else if ("drop" in a && typeof a.drop === "string") {
        if (step.mark === "enrich") {
          item.failed = {
            step: step.name,
            error:
              `${where} is an enrich step and answered drop "${a.drop}" (only drop steps drop)`,
          };
        } else if (!reasons.has(a.drop)) {
          item.failed = {
            step: step.name,
            error: `${where} dropped with reason "${a.drop}", which is not in the set (${set})`,
          };
        } else return a.drop;
        return null;
      } else if ("error" in a) {
        item.failed = { step: step.name, error: `${where}: ${String(a.error)}` };
        return null;
      }
    }
    item.failed = {
      step: step.name,
      error: `${where} answered ${shown(answer)}, not keep or drop`,
    };
    return null;
  };
  const settle = (items: Item[], answers: unknown[], drops: (Item & { reason: string })[]) => {
    const out: Item[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      const reason = apply(item, answers[i]);
      if (reason !== null) drops.push(Object.assign(item, { reason }));
      else out.push(item);
    }
    return out;
  };

  if (step.run.kind === "worker") {
    const mark = processorOf(resolveWorker(step.run, p.deps.workers, where));
    const definition = mark?.kind === "step" ? mark.options : null;
    if (!definition) {
      throw new JobFailure(
        `${where} runs worker "${step.run.worker}", which is not made by defineStep`,
      );
    }
    const ctx = stepContext(pipeline, run, step, step.name, p);
    const fn = definition.run;
    return {
      name: step.name,
      close: () => Promise.resolve(),
      async run(items, drops) {
        const out: Item[] = [];
        for (let i = 0; i < items.length; i++) {
          const item = items[i]!;
          ctx.key = item.identity!;
          let answer: StepAnswer | PromiseLike<StepAnswer>;
          try {
            answer = fn(item.value, ctx);
            if (isThenable(answer)) answer = (await answer) as StepAnswer;
          } catch (error) {
            item.failed = {
              step: step.name,
              error: `${where}: ${reasonOf(error)}`,
            };
            out.push(item);
            continue;
          }
          const reason = apply(item, answer);
          if (reason !== null) drops.push(Object.assign(item, { reason }));
          else out.push(item);
        }
        return out;
      },
    };
  }
  let process: LineProcess | null = null;
  const command = step.run;
  const env = { ...p.runEnv, JOBS_STEP: step.name, ...sourcesEnv(pipeline, step.sources) };
  return {
    name: step.name,
    close: () => process?.close() ?? Promise.resolve(),
    async run(items, drops) {
      process ??= new LineProcess(command, env, {
        label: `${where} command "${command.argv.join(" ").slice(0, 60)}"`,
        clock: p.deps.clock,
        killGraceMs: p.deps.killGraceMs ?? 5_000,
        daemonEnv: p.deps.env,
      });
      const { sent, lines, unsent } = linesOf(items, (i) => i.value);
      for (const [item, error] of unsent) {
        item.failed = { step: step.name, error: `${where}: ${error}` };
      }
      const answers = await process.exchange(lines, p.signal);
      return [...settle(sent, answers, drops), ...unsent.map(([item]) => item)];
    },
  };
}

/** The JSON lines of `items` for a command, and the items that cannot be written as JSON. */
function linesOf(
  items: Item[],
  message: (item: Item) => unknown,
): { sent: Item[]; lines: string[]; unsent: [Item, string][] } {
  const sent: Item[] = [];
  const lines: string[] = [];
  const unsent: [Item, string][] = [];
  for (const item of items) {
    const line = lineOf(message(item));
    if (typeof line === "string") {
      sent.push(item);
      lines.push(line);
    } else unsent.push([item, line.error]);
  }
  return { sent, lines, unsent };
}

function sourcesEnv(pipeline: CompiledPipeline, names: string[]): Record<string, string> {
  if (names.length === 0) return {};
  const picked: Record<string, unknown> = {};
  for (const name of names) picked[name] = pipeline.sources[name];
  return { JOBS_SOURCES: JSON.stringify(picked) };
}

function sinkProcessor(
  pipeline: CompiledPipeline,
  run: IngestRun,
  p: ProcessorDeps,
): SinkProcessor {
  const where = `pipeline "${pipeline.id}" sink`;
  const size = Math.max(1, pipeline.sinkBatch);
  const fail = (item: Item, error: string) =>
    item.failed = { step: "sink", error: `${where}: ${error}` };
  const settle = (batch: Item[], answers: unknown) => {
    if (answers === undefined || answers === null) return;
    if (!Array.isArray(answers) || answers.length !== batch.length) {
      throw new JobFailure(
        `${where} answered ${
          Array.isArray(answers) ? answers.length : typeof answers
        } results for ${batch.length} records`,
      );
    }
    for (let i = 0; i < batch.length; i++) {
      const a = answers[i] as SinkAnswer | null;
      if (a && (a as { ok?: unknown }).ok === true) continue;
      if (a && typeof (a as { error?: unknown }).error === "string") {
        fail(batch[i]!, (a as { error: string }).error);
      } else fail(batch[i]!, `answered ${shown(a)}, not ok or error`);
    }
  };
  if (pipeline.sink.kind === "worker") {
    const mark = processorOf(resolveWorker(pipeline.sink, p.deps.workers, where));
    const definition = mark?.kind === "sink" ? mark.options : null;
    if (!definition) {
      throw new JobFailure(
        `${where} runs worker "${pipeline.sink.worker}", which is not made by defineSink`,
      );
    }
    const ctx = stepContext(pipeline, run, null, "sink", p);
    return {
      kind: "processor",
      name: "sink",
      close: () => Promise.resolve(),
      async write(items) {
        for (let start = 0; start < items.length; start += size) {
          const batch = items.slice(start, start + size);
          const input = batch.map((i) => ({
            key: `${pipeline.id}/${i.identity}`,
            record: i.value,
          }));
          ctx.key = batch.at(-1)!.identity!;
          let answers = definition.write(input, ctx);
          if (isThenable(answers)) answers = await answers;
          settle(batch, answers);
        }
      },
    };
  }
  let process: LineProcess | null = null;
  const command = pipeline.sink;
  if (command.kind !== "command") throw new JobFailure(`${where} is not a command`);
  const env = { ...p.runEnv, JOBS_STEP: "sink" };
  return {
    kind: "processor",
    name: "sink",
    close: () => process?.close() ?? Promise.resolve(),
    async write(items) {
      process ??= new LineProcess(command, env, {
        label: `${where} command "${command.argv.join(" ").slice(0, 60)}"`,
        clock: p.deps.clock,
        killGraceMs: p.deps.killGraceMs ?? 5_000,
        daemonEnv: p.deps.env,
      });
      for (let start = 0; start < items.length; start += size) {
        const { sent: batch, lines, unsent } = linesOf(
          items.slice(start, start + size),
          (i) => ({ key: `${pipeline.id}/${i.identity}`, record: i.value }),
        );
        for (const [item, error] of unsent) fail(item, error);
        const answers = await process.exchange(lines, p.signal);
        for (let i = 0; i < batch.length; i++) {
          const a = answers[i] as Record<string, unknown> | null;
          if (a?.ok === true) continue;
          if (a && typeof a.error === "string") fail(batch[i]!, a.error);
          else throw process.protocolError(a, `{"ok": true} or {"error": "..."}`);
        }
      }
    },
  };
}

/** A record field as an item's key or tenant: a non-empty string, or a number as its text. */
function fieldText(value: Record<string, unknown>, field: string): string | null {
  const v = value[field];
  if (typeof v === "string" && v !== "") return v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  return null;
}

/**
 * The sink of `pipeline` into a work queue: each kept record an item of
 * `sink.queue`, added by `pipeline:<id>`, keyed by the record's `sink.key`
 * field or its identity, of the record's `sink.tenant` field or the run's
 * tenant (a tenant's run adds items of its own tenant only).
 */
function queueSink(
  pipeline: string,
  sink: WorkQueueSink,
  deps: RunDeps,
  runTenant: string | null,
): QueueSink {
  const where = `pipeline "${pipeline}" sink (work queue "${sink.queue}")`;
  const paramsOf = deps.workItemParams;
  if (paramsOf === undefined) {
    throw new JobFailure(`${where}: this process cannot add work items (no work queue rule given)`);
  }
  const actor = `pipeline:${pipeline}`;
  const fail = (item: Item, error: string) =>
    item.failed = { step: "sink", error: `${where}: ${error}` };
  return {
    kind: "work_queue",
    name: "sink",
    close: () => Promise.resolve(),
    prepare(items, now) {
      const adds: [Item, WorkItemAddParams][] = [];
      for (const item of items) {
        const key = sink.key === null ? item.identity! : fieldText(item.value, sink.key);
        if (key === null) {
          fail(item, `record has no key field "${sink.key}" (a string or a number)`);
          continue;
        }
        let tenant = runTenant;
        if (sink.tenant !== null) {
          tenant = fieldText(item.value, sink.tenant);
          if (tenant === null) {
            fail(item, `record has no tenant field "${sink.tenant}" (a string)`);
            continue;
          }
          if (runTenant !== null && tenant !== runTenant) {
            fail(item, `record of tenant "${tenant}" in a run of tenant "${runTenant}"`);
            continue;
          }
        }
        try {
          adds.push([
            item,
            paramsOf(sink.definition, { key, data: item.value, tenant }, actor, now),
          ]);
        } catch (error) {
          fail(item, reasonOf(error));
        }
      }
      return adds;
    },
    refused(item) {
      fail(item, `its item belongs to another tenant`);
    },
  };
}

// ---------------------------------------------------------------------------
// Replay and notify

async function replayFeed(store: Store, drop: number): Promise<Feed> {
  const found = await store.ingestDropGet({ id: drop });
  if (found === null) throw new JobFailure(`drop ${drop} is not stored (pruned, or never made)`);
  if (found.record === null) {
    throw new JobFailure(`drop ${drop} is not replayable (its record was too long to keep)`);
  }
  const text = found.record;
  let value: Record<string, unknown> | undefined;
  let error: string | undefined;
  try {
    value = JSON.parse(text);
  } catch (e) {
    error = `drop ${drop}'s record is not JSON: ${(e as Error).message}`;
  }
  async function* batches() {
    yield [{ raw: text, value, error, position: { offset: 0, line: 1, n: 1 } }] as SourceRecord[];
  }
  return {
    batches: batches(),
    cursorOf: () => JSON.stringify({ offset: 0, line: 1, n: 1, replay: drop }),
    close: () => Promise.resolve(),
  };
}

async function notify(
  spec: NonNullable<CompiledPipeline["notify"]>,
  runEnv: Record<string, string>,
  deps: RunDeps,
  signal: AbortSignal,
): Promise<void> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(spec.env ?? {})) env[name] = value;
  Object.assign(env, runEnv);
  const [program, ...args] = spec.shell ? ["/bin/sh", "-c", spec.argv[0]!] : spec.argv;
  try {
    const out = await new Deno.Command(program!, {
      args,
      cwd: spec.cwd,
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal,
    }).output();
    if (!out.success) {
      deps.logger("ingest.notify_failed", {
        level: "warn",
        pipeline: runEnv.JOBS_PIPELINE,
        run: runEnv.JOBS_RUN,
        error: redact(
          `notify command exited with code ${out.code}: ${
            new TextDecoder().decode(out.stderr).slice(-500)
          }`,
        ),
      });
    }
  } catch (error) {
    deps.logger("ingest.notify_failed", {
      level: "warn",
      pipeline: runEnv.JOBS_PIPELINE,
      run: runEnv.JOBS_RUN,
      error: redact(String((error as Error).message)),
    });
  }
}
