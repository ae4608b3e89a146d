/**
 * The `jobs.fanout` runner: runs one occurrence of a schedule with a
 * `selection` (a job whose args are its {@linkcode FanOutRun}). It lists the
 * items, then enqueues one job per item that runs the schedule's `run` with
 * the item filled in (see the config module for how an item reaches a
 * command, an HTTP request or a worker), `batchSize` jobs per transaction.
 * The occurrence completes once every item job is enqueued; each item job is
 * then a unit of work of its own, with its own attempts and retries.
 *
 * An item job's identity is `<occurrence>#<key>`, the key being the first 16
 * hex digits of the SHA-256 of the item's text (a string item as it is, any
 * other as its JSON). The jobs table's unique occurrence makes every insert
 * idempotent: a batch inserted twice (a retry after the selection changed)
 * adds nothing twice, and an item listed twice in one selection runs once.
 * Item jobs carry `meta.parent` (the occurrence) and `meta.item`, the
 * schedule's queue, priority, attempts, tags, tenant, timeout and backoff,
 * and no schedule id: the overlap policy and the schedule's last
 * started/completed times follow the occurrence, not its items.
 *
 * Progress is kept in the store's settings as `fanout.cursor:<occurrence>`:
 * `{ cursor, total, digest }`, written in each batch's transaction, so the
 * cursor never lags behind (nor runs ahead of) the items committed. A retry
 * that lists the same items (same digest) resumes at the cursor; one that
 * lists other items starts over, and the identities skip what is already
 * there. The last batch deletes the cursor instead, in its transaction too:
 * settings hold progress only for runs that may still be retried.
 *
 * A selection command runs like a `command` run: argv without a shell unless
 * `shell: true`, `${NAME}` in `env`, the JOBS_* variables, and the command
 * runner's `ProcessGroup` (its own process group, recorded in `groupsDir`
 * when set, killed on unload, and stopped on timeout, abort, too much
 * output, or its leader's exit with members left, by SIGTERM, then SIGKILL
 * to what is left after `killGraceMs`). It must exit 0, and at most
 * `maxSelectionBytes` of stdout are read. The schedule's timeout
 * (`ctx.timeoutMs`, from its run settings) bounds it. Its failures read as
 * the command runner's (`selection command "x" exited with code 3`, then the
 * tail of stderr), with no stack. A worker selection is a worker of this
 * process (the `workers:` module) whose `perform` returns the list: make it
 * with {@linkcode defineSelection}.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Clock } from "../clock.ts";
import { serializeArgs } from "../kernel/enqueue.ts";
import { JobFailure } from "../kernel/error_text.ts";
import type { Registry } from "../kernel/executor.ts";
import { describeError } from "../kernel/redact.ts";
import type { NewJob } from "../kernel/types.ts";
import {
  type ArgsSchema,
  defineWorker,
  type JobContext,
  type Outcome,
  type Worker,
  type WorkerOptions,
} from "../kernel/worker.ts";
import { itemOccurrenceId, occurrenceInstant } from "../schedule/occurrences.ts";
import { FANOUT_WORKER } from "../kernel/runs.ts";
import { type FanOutRun, ITEM_PLACEHOLDER } from "../schedule/types.ts";
import { type RunSpec } from "../kernel/runs.ts";
import type { Store } from "../store/store.ts";
import { childEnv, commandRunSchema, labelOf, secretsOf } from "./command.ts";
import { startCommand } from "../process/spawn.ts";
import { ERROR_STDERR_BYTES, OutputTail, withStderr } from "../process/output.ts";
import { COMMAND_WORKER, type CommandRun } from "../kernel/runs.ts";
import { type GroupEnd, ProcessGroup } from "../process/process_group.ts";
import { MissingVariableError } from "../process/env.ts";
import { parseHttpRun } from "./http.ts";
import { HTTP_WORKER } from "../kernel/runs.ts";

export { FANOUT_WORKER };
export type { FanOutRun };

/** Most items one run enqueues; a longer list discards the run. @default 100_000 */
export const DEFAULT_MAX_ITEMS = 100_000;
/** Most bytes of a selection command's stdout read. @default 16 MiB */
export const DEFAULT_MAX_SELECTION_BYTES = 16 * 1024 * 1024;
/** Longest item, as text: it travels in its job's args and meta. */
export const MAX_ITEM_BYTES = 16 * 1024;
/** The environment variable that carries a command item's text. */
export const ITEM_VARIABLE = "JOBS_ITEM";

/** Options of {@linkcode fanoutWorker}. */
export interface FanoutWorkerOptions {
  /** The store item jobs are inserted into (a function: the daemon opens it after building its workers). */
  store: () => Store;
  /** The workers of this process, for worker selections. @default none: a worker selection is discarded */
  workers?: () => Registry;
  /** Reads the daemon's environment, for `${NAME}` in a selection command's `env`. */
  env: (name: string) => string | undefined;
  /** Dates the inserts and times the selection's timeout and kill grace. */
  clock: Clock;
  /** Told the queues that got new item jobs after each batch, e.g. to wake their producers. */
  onEnqueued?: (queues: string[]) => void;
  /** Between SIGTERM and SIGKILL to a selection command's group. @default 5000 */
  killGraceMs?: number;
  /** @default 100_000 */
  maxItems?: number;
  /** @default 16 MiB */
  maxSelectionBytes?: number;
  /**
   * Where a running selection command's group is recorded (`<pgid>.json`),
   * for `reapOrphans` after a SIGKILL of this process. @default none: nothing recorded
   */
  groupsDir?: string;
}

interface Deps {
  store: () => Store;
  workers: () => Registry;
  env: (name: string) => string | undefined;
  clock: Clock;
  onEnqueued: (queues: string[]) => void;
  killGraceMs: number;
  maxItems: number;
  maxSelectionBytes: number;
  groupsDir: string | undefined;
}

/** What a run stores under {@linkcode cursorKey} with each batch but the last. */
export interface FanOutCursor {
  /** Items enqueued, from the start of the list. */
  cursor: number;
  total: number;
  /** SHA-256 of the list's item keys: a retry resumes only on the same list. */
  digest: string;
}

/** The `jobs.fanout` worker. */
export function fanoutWorker(options: FanoutWorkerOptions): Worker<FanOutRun> {
  const deps: Deps = {
    store: options.store,
    workers: options.workers ?? (() => new Map()),
    env: options.env,
    clock: options.clock,
    onEnqueued: options.onEnqueued ?? (() => {}),
    killGraceMs: options.killGraceMs ?? 5_000,
    maxItems: options.maxItems ?? DEFAULT_MAX_ITEMS,
    maxSelectionBytes: options.maxSelectionBytes ?? DEFAULT_MAX_SELECTION_BYTES,
    groupsDir: options.groupsDir,
  };
  for (const key of ["killGraceMs", "maxItems", "maxSelectionBytes"] as const) {
    const value = deps[key];
    if (!Number.isInteger(value) || value < (key === "killGraceMs" ? 0 : 1)) {
      throw new RangeError(`fanoutWorker: ${key} must be a whole number >= 1, got ${value}`);
    }
  }
  return defineWorker<FanOutRun>({
    name: FANOUT_WORKER,
    // The selection is killed on its timeout before perform returns.
    selfTimed: true,
    args: fanOutRunSchema,
    perform: (run, ctx) => performFanOut(run, ctx, deps),
  });
}

/** Options of {@linkcode defineSelection}: a worker's, with `list` in place of `perform`. */
export interface SelectionOptions<A> extends Omit<WorkerOptions<A>, "perform"> {
  /** Returns the items: strings, or any JSON values. */
  list(args: A, ctx: JobContext): readonly unknown[] | Promise<readonly unknown[]>;
}

/**
 * A worker that lists a fan-out's items, for `selection: { worker: name }`.
 * Run as an ordinary job it lists and completes.
 */
export function defineSelection<A = unknown>(options: SelectionOptions<A>): Worker<A> {
  const { list, ...rest } = options;
  if (typeof list !== "function") {
    throw new TypeError(`selection "${options.name}": list must be a function`);
  }
  // The executor reads a list as "completed"; the fan-out runner reads the list.
  const perform = list as unknown as WorkerOptions<A>["perform"];
  return defineWorker<A>({ ...rest, perform });
}

/** The settings key of an occurrence's progress. */
export function cursorKey(parent: string): string {
  return `fanout.cursor:${parent}`;
}

// ---------------------------------------------------------------------------
// Args

/** Validates a fan-out run; what it refuses is discarded at once. */
export const fanOutRunSchema: ArgsSchema<FanOutRun> = {
  parse(input: unknown): FanOutRun {
    if (!isRecord(input) || input.kind !== "fanout") {
      throw new TypeError(`fan-out run must be an object of kind "fanout", got ${show(input)}`);
    }
    const { schedule, selection, batchSize, run, item } = input;
    if (typeof schedule !== "string") {
      throw new TypeError(`fan-out schedule must be a string, got ${show(schedule)}`);
    }
    if (!Number.isInteger(batchSize) || (batchSize as number) < 1) {
      throw new TypeError(`fan-out batchSize must be a whole number >= 1, got ${show(batchSize)}`);
    }
    if (!isRecord(item) || typeof item.queue !== "string" || !Array.isArray(item.tags)) {
      throw new TypeError(`fan-out item settings are incomplete, got ${show(item)}`);
    }
    return {
      kind: "fanout",
      schedule,
      selection: isRecord(selection) && selection.kind === "worker"
        ? parseWorkerRun(selection, "selection")
        : commandRunSchema.parse(selection),
      batchSize: batchSize as number,
      run: parseRun(run),
      item: item as FanOutRun["item"],
    };
  },
};

function parseRun(run: unknown): RunSpec {
  if (!isRecord(run)) throw new TypeError(`fan-out run must be an object, got ${show(run)}`);
  if (run.kind === "command") return commandRunSchema.parse(run);
  if (run.kind === "http") return parseHttpRun(run);
  return parseWorkerRun(run, "run");
}

function parseWorkerRun(value: Record<string, unknown>, what: string) {
  if (value.kind !== "worker" || typeof value.worker !== "string" || value.worker === "") {
    throw new TypeError(`fan-out ${what} must name a worker, got ${show(value)}`);
  }
  return { kind: "worker" as const, worker: value.worker, args: value.args ?? {} };
}

// ---------------------------------------------------------------------------
// The run

async function performFanOut(run: FanOutRun, ctx: JobContext, deps: Deps): Promise<Outcome> {
  const listed = await listItems(run, ctx, deps);
  if ("discard" in listed) return listed;
  const items = keyed(listed.items, run.run, deps.maxItems);
  if ("discard" in items) return items;

  const parent = ctx.idempotencyKey;
  const digest = digestOf(items.list.map((i) => i.key));
  const total = items.list.length;
  const store = deps.store();
  const saved = await store.settingGet({ key: cursorKey(parent) }) as Partial<FanOutCursor> | null;
  const resumed = saved?.digest === digest && saved.total === total && Number(saved.cursor) > 0
    ? Math.min(Number(saved.cursor), total)
    : 0;
  const scheduledFor = instantOf(ctx.job.occurrence);

  let inserted = 0;
  let batches = 0;
  for (let start = resumed; start < total; start += run.batchSize) {
    if (ctx.signal.aborted) throw stopped(ctx.signal.reason);
    const now = deps.clock.now();
    const jobs = items.list.slice(start, start + run.batchSize).map((item) =>
      itemJob(run, { parent, scheduledFor, now }, item)
    );
    const cursor: FanOutCursor = { cursor: start + jobs.length, total, digest };
    const results = await store.transaction(async (tx) => {
      const results = await tx.jobsInsert({ jobs, now });
      // Once every item is enqueued nothing is left to resume.
      if (cursor.cursor < total) {
        await tx.settingSet({ key: cursorKey(parent), value: cursor, now });
      } else await tx.settingDelete({ key: cursorKey(parent) });
      return results;
    });
    batches++;
    const fresh = results.filter((r) => !r.duplicate);
    inserted += fresh.length;
    if (fresh.length > 0) deps.onEnqueued([...new Set(fresh.map((r) => r.queue))]);
  }
  // No batch ran (nothing listed, or a cursor already at the end): no batch deleted it.
  if (batches === 0) await store.settingDelete({ key: cursorKey(parent) });
  const { duplicates } = items;
  ctx.output(summary({ total, duplicates, resumed, batches, inserted, batchSize: run.batchSize }));
}

function summary(s: {
  total: number;
  duplicates: number;
  resumed: number;
  batches: number;
  inserted: number;
  batchSize: number;
}): string {
  const lines = [
    `selection listed ${s.total + s.duplicates} items` +
    (s.duplicates > 0 ? ` (${s.duplicates} listed twice, run once)` : ""),
  ];
  if (s.resumed > 0) lines.push(`resumed at item ${s.resumed} of ${s.total}`);
  const skipped = s.total - s.resumed - s.inserted;
  lines.push(
    `enqueued ${s.inserted} item jobs in ${s.batches} batches of up to ${s.batchSize}` +
      (skipped > 0 ? `; ${skipped} were already enqueued` : ""),
  );
  return lines.join("\n");
}

/** One item, with its text (what `{item}` and `JOBS_ITEM` hold) and its key. */
export interface Item {
  value: unknown;
  text: string;
  /** First 16 hex digits of the SHA-256 of `text`. */
  key: string;
}

/** Texts, keys and duplicates of a list; a discard naming the first item that cannot be passed on. */
export function keyed(
  values: readonly unknown[],
  run: RunSpec,
  maxItems: number = DEFAULT_MAX_ITEMS,
): { list: Item[]; duplicates: number } | { discard: string } {
  if (values.length > maxItems) {
    return {
      discard: `selection listed ${values.length} items, more than the limit of ${maxItems}`,
    };
  }
  const list: Item[] = [];
  const seen = new Set<string>();
  const encoder = new TextEncoder();
  for (const [index, value] of values.entries()) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (text === undefined) {
      return { discard: `selection item ${index} is ${typeof value}, which JSON cannot hold` };
    }
    if (encoder.encode(text).length > MAX_ITEM_BYTES) {
      return { discard: `selection item ${index} is longer than ${MAX_ITEM_BYTES} bytes` };
    }
    if (run.kind === "command" && text.includes("\0")) {
      return {
        discard: `selection item ${index} holds a NUL character, which a command cannot receive`,
      };
    }
    const key = createHash("sha256").update(text).digest("hex").slice(0, 16);
    if (seen.has(key)) continue;
    seen.add(key);
    list.push({ value, text, key });
  }
  return { list, duplicates: values.length - list.length };
}

function digestOf(keys: string[]): string {
  return createHash("sha256").update(keys.join("\n")).digest("hex");
}

/** The pre-jitter instant of the occurrence, for the items' `scheduled_for`; null for a plain job. */
function instantOf(occurrence: string | null): number | null {
  if (occurrence === null) return null;
  const instant = occurrenceInstant(occurrence);
  return Number.isFinite(instant) ? instant : null;
}

/** The job row of one item. */
export function itemJob(
  run: FanOutRun,
  at: { parent: string; scheduledFor: number | null; now: number },
  item: Item,
): NewJob {
  const where = `schedule "${run.schedule}" item ${JSON.stringify(item.text.slice(0, 40))}`;
  const spec = run.run;
  return {
    queue: run.item.queue,
    worker: spec.kind === "command"
      ? COMMAND_WORKER
      : spec.kind === "http"
      ? HTTP_WORKER
      : spec.worker,
    args: serializeArgs(itemArgs(spec, item), where),
    meta: serializeArgs({ ...run.item.meta, parent: at.parent, item: item.value }, where),
    tags: JSON.stringify(run.item.tags),
    tenant: run.item.tenant,
    priority: run.item.priority,
    maxAttempts: run.item.maxAttempts,
    scheduledAt: at.now,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: itemOccurrenceId(at.parent, item.key),
    scheduleId: null,
    scheduledFor: at.scheduledFor,
  };
}

/** The args of one item's job: the run with the item filled in. */
export function itemArgs(spec: RunSpec, item: Pick<Item, "value" | "text">): unknown {
  const fill = (text: string, value: string) => text.split(ITEM_PLACEHOLDER).join(value);
  switch (spec.kind) {
    case "command":
      return {
        ...spec,
        // A shell script never gets the item spliced in (the config refuses it there).
        argv: spec.shell ? spec.argv : spec.argv.map((arg) => fill(arg, item.text)),
        // `$$` is how the command runner spells a literal `$`: `${NAME}` in an item stays text.
        env: { ...spec.env, [ITEM_VARIABLE]: item.text.split("$").join("$$") },
      } satisfies CommandRun;
    case "http":
      return {
        ...spec,
        url: fill(spec.url, encodeURIComponent(item.text)),
        ...(spec.body === undefined ? {} : { body: fill(spec.body, item.text) }),
      };
    case "worker":
      return { ...(isRecord(spec.args) ? spec.args : {}), item: item.value };
  }
}

// ---------------------------------------------------------------------------
// The selection

type Listed = { items: readonly unknown[] } | { discard: string };

function listItems(run: FanOutRun, ctx: JobContext, deps: Deps): Promise<Listed> {
  const selection = run.selection;
  if (selection.kind === "worker") return listFromWorker(selection, ctx, deps);
  return listFromCommand(selection, ctx, deps);
}

async function listFromWorker(
  selection: { worker: string; args: unknown },
  ctx: JobContext,
  deps: Deps,
): Promise<Listed> {
  const worker = deps.workers().get(selection.worker);
  const label = `selection worker "${selection.worker}"`;
  if (!worker) return { discard: `${label} is not a worker of this process` };
  let args: unknown = selection.args;
  try {
    if (worker.args) args = worker.args.parse(args);
  } catch (error) {
    return { discard: `${label}: invalid args: ${describeError(error)}` };
  }
  const items: unknown = await worker.perform(args, ctx);
  if (!Array.isArray(items)) {
    return { discard: `${label} returned ${kindOf(items)}, not a list of items` };
  }
  return { items };
}

/**
 * The items of a selection command's stdout: a JSON array when the output
 * (trimmed) starts with `[`, else one item per non-empty line (a trailing
 * `\r` dropped).
 */
export function parseItems(stdout: string): unknown[] {
  const trimmed = stdout.trim();
  if (trimmed.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (error) {
      throw new TypeError(
        `selection output starts with "[" but is not a JSON array: ${(error as Error).message}`,
      );
    }
    if (!Array.isArray(parsed)) throw new TypeError("selection output is not a JSON array");
    return parsed;
  }
  return stdout.split("\n").map((line) => line.replace(/\r$/, "")).filter((line) => line !== "");
}

async function listFromCommand(run: CommandRun, ctx: JobContext, deps: Deps): Promise<Listed> {
  const label = `selection ${labelOf(run)}`;
  let env: Record<string, string>;
  try {
    env = childEnv(run, ctx, deps.env);
  } catch (error) {
    if (error instanceof MissingVariableError) return { discard: `selection ${error.message}` };
    throw error;
  }
  const secrets = secretsOf(run, deps.env);
  if (ctx.signal.aborted) throw stopped(ctx.signal.reason);
  const ended = await runToEnd(startCommand(run, env, label), ctx, deps);
  const said = (message: string) => withStderr(message, ended.stderr, secrets);
  switch (ended.kind) {
    case "aborted":
      throw stopped(ctx.signal.reason);
    case "timeout":
      throw new JobFailure(said(`${label} timed out after ${ended.ms} ms`));
    case "too-long":
      return { discard: `${label} printed more than ${deps.maxSelectionBytes} bytes` };
  }
  const status = ended.status;
  if (status.signal !== null) throw new JobFailure(said(`${label} was killed by ${status.signal}`));
  if (status.code !== 0) throw new JobFailure(said(`${label} exited with code ${status.code}`));
  try {
    return { items: parseItems(new TextDecoder().decode(ended.stdout)) };
  } catch (error) {
    return { discard: `${label}: ${(error as Error).message}` };
  }
}

type Ended =
  & { stdout: Uint8Array; stderr: OutputTail }
  & (GroupEnd | { kind: "too-long" });

/**
 * Reads the child's output until it exits, its stdout passes the limit, the
 * schedule's timeout passes or the job is aborted; then makes sure nothing of
 * its process group is left (the command runner's {@linkcode ProcessGroup}),
 * and that the output is read to its end.
 */
async function runToEnd(child: Deno.ChildProcess, ctx: JobContext, deps: Deps): Promise<Ended> {
  const stderr = new OutputTail(ERROR_STDERR_BYTES);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const tooLong = new AbortController();
  const group = new ProcessGroup(child, deps, {
    stdout(chunk) {
      size += chunk.length;
      if (size <= deps.maxSelectionBytes) chunks.push(chunk);
      else tooLong.abort();
    },
    stderr: (chunk) => stderr.push(chunk),
  });
  group.record({ job: ctx.job.id, fence: ctx.fence });
  try {
    const ended = await group.wait(AbortSignal.any([ctx.signal, tooLong.signal]), ctx.timeoutMs);
    await group.finish(ended.kind !== "exited" || tooLong.signal.aborted);
    const output = { stdout: concat(chunks), stderr };
    if (tooLong.signal.aborted) return { ...output, kind: "too-long" };
    return { ...output, ...ended };
  } finally {
    group.release();
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function stopped(reason: unknown): Error {
  const why = reason instanceof Error ? reason.message : String(reason ?? "aborted");
  return new JobFailure(`fan-out was stopped: ${why}`, { cause: reason });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
