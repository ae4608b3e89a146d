/**
 * The bookkeeping of workflow runs, written once for every store: what is
 * read and written, in which order, when a run starts, when a step's job
 * ends, and when an operator cancels or retries a run. It knows no SQL.
 * Each function is a generator that yields one {@linkcode Op} at a time
 * (a read or a write of the store) and receives its answer; the store
 * drives it inside its own write transaction, synchronously on SQLite and
 * with `await` on PostgreSQL (see `runOps` and `runOpsAsync`). The
 * decisions are {@linkcode advance}'s; this module applies them.
 *
 * @module
 */

import type { InsertResult, JobState, NewJob } from "../kernel/types.ts";
import { advance, type AdvanceOptions, fanInResult, type RunSnapshot } from "./advance.ts";
import type { SnapshotRow } from "./advance.ts";
import type { CompiledWorkflow, RunState, WorkflowStepRow } from "./types.ts";

/** Which row: a run's step, item or compensation. */
export interface StepKey {
  runId: number;
  kind: "step" | "compensation";
  step: string;
  item: number;
}

/** A row to insert into `workflow_steps`. */
export interface StepInsert extends StepKey {
  jobId: number | null;
  state: WorkflowStepRow["state"];
  result: string | null;
  error: string | null;
  seq: number | null;
  items: number | null;
  now: number;
}

/** One read or write the store does for the bookkeeping, and what it answers. */
export type Op =
  /** The row whose job this is, or null: not a step's job. */
  | { op: "stepByJob"; jobId: number }
  /** Ends a running row (`ordered`: give it the run's next completion seq). */
  | {
    op: "stepFinish";
    key: StepKey;
    state: "completed" | "discarded" | "cancelled";
    result: string | null;
    error: string | null;
    ordered: boolean;
    now: number;
  }
  /** One item of a fanned-out step ended: its step row's remaining count goes down; answers the row. */
  | { op: "itemEnded"; runId: number; step: string }
  /** The results of a fanned-out step's items. */
  | { op: "itemResults"; runId: number; step: string }
  /** The run (locked for this transaction where the store locks rows), or null. */
  | { op: "runGet"; runId: number }
  /** The run started with this key, or null. */
  | { op: "runByKey"; key: string }
  /** Inserts a run; answers its id. */
  | {
    op: "runInsert";
    definition: CompiledWorkflow;
    input: string;
    tenant: string | null;
    key: string | null;
    now: number;
  }
  /** The run's step-level and compensation rows, with their jobs' states. */
  | { op: "snapshot"; runId: number }
  /** Every row of the run. */
  | { op: "rows"; runId: number }
  | { op: "jobsInsert"; jobs: NewJob[]; now: number }
  /** Cancels those of the jobs that are waiting (scheduled, available, retryable); answers their ids. */
  | { op: "jobsCancel"; ids: number[]; error: string; now: number }
  /** Cancels the waiting item jobs of a fanned-out step and ends their rows; answers the job ids. */
  | { op: "itemsCancel"; runId: number; step: string; error: string; now: number }
  /** Makes final jobs runnable again now (an operator's retry); answers the ids changed. */
  | { op: "jobsRetry"; ids: number[]; now: number }
  | { op: "stepsInsert"; rows: StepInsert[] }
  /** Makes ended rows running again (a retry), clearing their error; `remaining` for a fanned-out step. */
  | { op: "stepsReopen"; keys: (StepKey & { remaining: number | null })[]; now: number }
  | { op: "stepsDelete"; keys: StepKey[] }
  | {
    op: "runSet";
    runId: number;
    state: RunState;
    error: string | null;
    finished: boolean;
    cancelReason?: string;
    now: number;
  };

/** What the store answers to each {@linkcode Op}. */
export interface OpAnswers {
  stepByJob: (StepKey & { state: WorkflowStepRow["state"] }) | null;
  stepFinish: void;
  itemEnded: { remaining: number; state: WorkflowStepRow["state"] };
  itemResults: { item: number; result: string | null }[];
  runGet: { run: RunSnapshot; definition: string } | null;
  runByKey: number | null;
  runInsert: number;
  snapshot: SnapshotRow[];
  rows: WorkflowStepRow[];
  jobsInsert: InsertResult[];
  jobsCancel: number[];
  itemsCancel: number[];
  jobsRetry: number[];
  stepsInsert: void;
  stepsReopen: void;
  stepsDelete: void;
  runSet: void;
}

/** A generator of {@linkcode Op}s returning `R`. */
export type Ops<R> = Generator<Op, R, unknown>;

/** Yields `op` and types the store's answer. */
function* ask<O extends Op>(op: O): Generator<Op, OpAnswers[O["op"]], unknown> {
  return (yield op) as OpAnswers[O["op"]];
}

/** Drives `ops` with a synchronous store (SQLite). */
export function runOps<R>(ops: Ops<R>, answer: (op: Op) => unknown): R {
  let next = ops.next();
  while (!next.done) next = ops.next(answer(next.value));
  return next.value;
}

/** Drives `ops` with an asynchronous store (PostgreSQL). */
export async function runOpsAsync<R>(
  ops: Ops<R>,
  answer: (op: Op) => Promise<unknown>,
): Promise<R> {
  let next = ops.next();
  while (!next.done) next = ops.next(await answer(next.value));
  return next.value;
}

/** What a start, an end or an action did. */
export interface Outcome {
  /** Queues that got available jobs. */
  queues: string[];
  /** Jobs cancelled or made runnable again. */
  jobs: number[];
  /** The run's state before and after (null when there is no such run). */
  was: RunState | null;
  state: RunState | null;
}

const parsed = new Map<string, CompiledWorkflow>();

/** A run's definition text parsed, once per distinct text (runs of one definition share it). */
function definitionOf(text: string): CompiledWorkflow {
  let definition = parsed.get(text);
  if (definition === undefined) {
    definition = JSON.parse(text) as CompiledWorkflow;
    if (parsed.size >= 256) parsed.clear();
    parsed.set(text, definition);
  }
  return definition;
}

/** Starts a run: its row and its first steps' jobs; a used key answers the run it started. */
export function* startRun(params: {
  definition: CompiledWorkflow;
  input: string;
  tenant: string | null;
  key: string | null;
  now: number;
  argsLimit?: number;
}): Ops<Outcome & { id: number; duplicate: boolean }> {
  if (params.key !== null) {
    const existing = yield* ask({ op: "runByKey", key: params.key });
    if (existing !== null) {
      return { id: existing, duplicate: true, queues: [], jobs: [], was: null, state: null };
    }
  }
  const id = yield* ask({ op: "runInsert", ...params });
  const outcome = yield* advanceRun(id, params.now, { argsLimit: params.argsLimit });
  return { ...outcome, id, duplicate: false };
}

/**
 * A step's job ended (recorded by its node, rescued, or stopped by an
 * operator): its row, and for an item its step's count, then the run.
 * A job that is no step's, or whose row already ended, changes nothing.
 */
export function* jobEnded(params: {
  jobId: number;
  state: Extract<JobState, "completed" | "discarded" | "cancelled">;
  value: string | null;
  error: string | null;
  now: number;
  argsLimit?: number;
}): Ops<Outcome> {
  const row = yield* ask({ op: "stepByJob", jobId: params.jobId });
  if (row === null || row.state !== "running") return NOTHING;
  const { now } = params;
  const result = params.state === "completed" ? params.value ?? "null" : null;
  yield* ask({
    op: "stepFinish",
    key: row,
    state: params.state,
    result,
    error: params.error,
    ordered: row.item < 0,
    now,
  });
  if (row.item >= 0) {
    const parent = yield* ask({ op: "itemEnded", runId: row.runId, step: row.step });
    if (parent.state !== "running") return NOTHING;
    if (params.state !== "completed") {
      const loaded = yield* ask({ op: "runGet", runId: row.runId });
      const optional = loaded !== null &&
        definitionOf(loaded.definition).steps.find((s) => s.id === row.step)?.optional;
      if (!optional) {
        const key = { runId: row.runId, kind: "step" as const, step: row.step, item: -1 };
        yield* ask({
          op: "stepFinish",
          key,
          state: params.state,
          result: null,
          error: `item ${row.item} ${params.state}: ${params.error ?? "no reason"}`,
          ordered: false,
          now,
        });
        return yield* advanceRun(row.runId, now, { argsLimit: params.argsLimit });
      }
    }
    if (parent.remaining > 0) return NOTHING;
    const items = yield* ask({ op: "itemResults", runId: row.runId, step: row.step });
    yield* ask({
      op: "stepFinish",
      key: { runId: row.runId, kind: "step", step: row.step, item: -1 },
      state: "completed",
      result: fanInResult(items),
      error: null,
      ordered: true,
      now,
    });
  }
  return yield* advanceRun(row.runId, now, { argsLimit: params.argsLimit });
}

const NOTHING: Outcome = Object.freeze({ queues: [], jobs: [], was: null, state: null }) as Outcome;

/** Reads the run and its rows, asks {@linkcode advance}, and writes what it decided. */
function* advanceRun(runId: number, now: number, options: AdvanceOptions): Ops<Outcome> {
  const loaded = yield* ask({ op: "runGet", runId });
  if (loaded === null) return NOTHING;
  const rows = yield* ask({ op: "snapshot", runId });
  const definition = definitionOf(loaded.definition);
  const d = advance(loaded.run, definition, rows, now, options);
  const queues = new Set<string>();
  const jobs: number[] = [];
  if (d.cancelJobs.length > 0) {
    const reason = d.update[0]?.error ?? "run stopped";
    jobs.push(...yield* ask({ op: "jobsCancel", ids: d.cancelJobs, error: reason, now }));
  }
  for (const step of d.cancelItemsOf) {
    const reason = d.update.find((u) => u.step === step)?.error ?? "run stopped";
    jobs.push(...yield* ask({ op: "itemsCancel", runId, step, error: reason, now }));
  }
  for (const u of d.update) {
    yield* ask({
      op: "stepFinish",
      key: { runId, kind: u.kind, step: u.step, item: -1 },
      state: u.state,
      result: null,
      error: u.error,
      ordered: false,
      now,
    });
  }
  const newJobs = [
    ...d.create.flatMap((c) => (c.job ? [c.job] : [])),
    ...d.items.map((i) => i.job),
  ];
  const inserted = newJobs.length > 0 ? yield* ask({ op: "jobsInsert", jobs: newJobs, now }) : [];
  for (const r of inserted) if (r.state === "available") queues.add(r.queue);
  let next = 0;
  const rowsToInsert: StepInsert[] = [];
  for (const c of d.create) {
    rowsToInsert.push({
      runId,
      kind: c.kind,
      step: c.step,
      item: -1,
      jobId: c.job ? inserted[next++]!.id : null,
      state: c.state,
      result: c.result,
      error: c.error,
      seq: c.seq,
      items: c.items,
      now,
    });
  }
  for (const i of d.items) {
    rowsToInsert.push({
      runId,
      kind: "step",
      step: i.step,
      item: i.item,
      jobId: inserted[next++]!.id,
      state: "running",
      result: null,
      error: null,
      seq: null,
      items: null,
      now,
    });
  }
  if (rowsToInsert.length > 0) yield* ask({ op: "stepsInsert", rows: rowsToInsert });
  const was = loaded.run.state;
  if (d.run !== null) {
    yield* ask({
      op: "runSet",
      runId,
      state: d.run.state,
      error: d.run.error,
      finished: d.run.finished,
      cancelReason: options.cancel,
      now,
    });
  }
  return { queues: [...queues], jobs, was, state: d.run?.state ?? was };
}

/** An operator's cancel of a run; see `Store.workflowCancel`. */
export function* cancelRun(runId: number, reason: string, now: number): Ops<Outcome> {
  const loaded = yield* ask({ op: "runGet", runId });
  if (loaded === null) return NOTHING;
  const was = loaded.run.state;
  if (was !== "running" && was !== "compensating") return { ...NOTHING, was, state: was };
  if (was === "compensating") {
    // Already undoing: the cancel is recorded, the compensations go on.
    yield* ask({
      op: "runSet",
      runId,
      state: was,
      error: loaded.run.error,
      finished: false,
      cancelReason: reason,
      now,
    });
    return { ...NOTHING, was, state: was };
  }
  return yield* advanceRun(runId, now, { cancel: reason });
}

/** An operator's retry of a failed run; see `Store.workflowRetry`. */
export function* retryRun(runId: number, now: number, argsLimit?: number): Ops<Outcome> {
  const loaded = yield* ask({ op: "runGet", runId });
  if (loaded === null) return NOTHING;
  const was = loaded.run.state;
  if (was !== "failed") return { ...NOTHING, was, state: was };
  const rows = yield* ask({ op: "rows", runId });
  const failed = (r: WorkflowStepRow) => r.state === "discarded" || r.state === "cancelled";
  const compensation = rows.find((r) => r.kind === "compensation" && failed(r));
  const reopen: (StepKey & { remaining: number | null })[] = [];
  const retry: number[] = [];
  const drop: StepKey[] = [];
  let state: RunState;
  if (compensation) {
    if (compensation.jobId === null) return { ...NOTHING, was, state: was };
    retry.push(compensation.jobId);
    reopen.push({ ...compensation, remaining: null });
    state = "compensating";
  } else {
    for (const r of rows) {
      if (r.kind !== "step" || !failed(r)) continue;
      if (r.item >= 0) {
        if (r.jobId !== null) {
          retry.push(r.jobId);
          reopen.push({ ...r, remaining: null });
        }
        continue;
      }
      if (r.error?.startsWith("upstream failed") || (r.jobId === null && r.items === null)) {
        // Cancelled because of another step, or never got a job: made anew when its turn comes.
        drop.push(r);
        continue;
      }
      if (r.items !== null) {
        const items = rows.filter((i) => i.kind === "step" && i.step === r.step && i.item >= 0);
        reopen.push({ ...r, remaining: items.filter(failed).length });
      } else {
        retry.push(r.jobId!);
        reopen.push({ ...r, remaining: null });
      }
    }
    state = "running";
  }
  const retried = retry.length > 0 ? yield* ask({ op: "jobsRetry", ids: retry, now }) : [];
  if (reopen.length > 0) yield* ask({ op: "stepsReopen", keys: reopen, now });
  if (drop.length > 0) yield* ask({ op: "stepsDelete", keys: drop });
  yield* ask({ op: "runSet", runId, state, error: null, finished: false, now });
  const outcome = yield* advanceRun(runId, now, { argsLimit });
  return { ...outcome, jobs: retried, was, state: outcome.state ?? state };
}
