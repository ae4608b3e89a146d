/**
 * The bookkeeping of workflow runs, written once for every store: what is
 * read and written, in which order, when a run starts, when a step's job
 * ends, and when an operator cancels or retries a run. It knows no SQL.
 * Each function is a generator that yields one {@linkcode Op} at a time
 * (a read or a write of the store) and receives its answer; the store
 * drives it inside its own write transaction, synchronously on SQLite and
 * with `await` on PostgreSQL (see `src/store/lifecycle/ops.ts`). The
 * decisions are {@linkcode advance}'s; this module applies them.
 *
 * A step (or a compensation) whose job ends discarded or cancelled, and
 * is not optional, is written to the run's audit trail (`workflow:<id>`,
 * `step.discard`, `step.cancel`, `compensation.discard`, ...) in the same
 * transaction, by whoever ended it: the node that recorded the attempt, the
 * operator who stopped the job, or {@linkcode SYSTEM_ACTOR}. So the trail
 * says what began a saga's compensations, not only what people did.
 *
 * @module
 */

import { redact } from "../kernel/redact.ts";
import type { InsertResult, JobResult, JobState, NewJob } from "../kernel/types.ts";
import {
  advance,
  type AdvanceOptions,
  fanInResult,
  type RunSnapshot,
  UPSTREAM_FAILED,
} from "./advance.ts";
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

/** A row's end, as the bookkeeping writes it: its state, result, error and completion order. */
export interface StepFinish {
  key: StepKey;
  state: "completed" | "discarded" | "cancelled";
  result: string | null;
  error: string | null;
  /** The run's completion order (null: not a step's completion). */
  seq: number | null;
}

/** A run as the bookkeeping reads it: the row and its definition's text. */
export interface LoadedRun {
  run: RunSnapshot;
  definition: string;
}

/**
 * One read or write the store does for the bookkeeping, and what it
 * answers. Those of a batch of step ends take every row of the batch at
 * once: a statement each, not a statement per step.
 */
export type Op =
  /**
   * Several reads that do not depend on each other, answered as a list in
   * their order: a store may send them together (PostgreSQL pipelines
   * them, one round trip for all).
   */
  | { op: "all"; ops: Op[] }
  /** The rows whose jobs these are (jobs that are no step's have none). */
  | { op: "stepsByJobs"; jobIds: number[] }
  /** Ends rows (their finished_at is now). */
  | { op: "stepsFinish"; rows: StepFinish[]; now: number }
  /** Items of fanned-out steps ended: each step row's remaining count goes down by `count`. */
  | { op: "itemsEnded"; groups: { runId: number; step: string; count: number }[] }
  /** The results of a fanned-out step's items. */
  | { op: "itemResults"; runId: number; step: string }
  /** The runs, in id order (locked for this transaction where the store locks rows). */
  | { op: "runsGet"; runIds: number[] }
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
  /** The runs' step-level and compensation rows, with their jobs' states. */
  | { op: "snapshots"; runIds: number[] }
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
  /** Moves runs to new states, one statement for all of them. */
  | { op: "runsSet"; runs: RunSet[]; now: number }
  /** Appends rows to `audit`. */
  | { op: "auditRecord"; rows: AuditInsert[] };

/** A row of `audit` the bookkeeping writes (a step's failure on its run's trail). */
export interface AuditInsert {
  at: number;
  actor: string;
  action: string;
  target: string;
  reason: string | null;
  details: Record<string, unknown>;
}

/**
 * The actor of an audit row the scheduler writes by itself: a step's job
 * discarded because its lease expired with no attempt left, or a step that
 * could not get a job.
 */
export const SYSTEM_ACTOR = "jobs";

/** A run's new state, as {@linkcode Op} `runsSet` writes it. */
export interface RunSet {
  runId: number;
  state: RunState;
  error: string | null;
  /** The run ended now (its finished_at is set; else cleared). */
  finished: boolean;
  /** An operator's cancel, kept with the run (null: leave it as it is). */
  cancelReason: string | null;
}

/** What the store answers to each {@linkcode Op}. */
export interface OpAnswers {
  all: unknown[];
  stepsByJobs: (StepKey & { jobId: number; state: WorkflowStepRow["state"] })[];
  stepsFinish: void;
  itemsEnded: { runId: number; step: string; remaining: number; state: WorkflowStepRow["state"] }[];
  itemResults: { item: number; result: string | null }[];
  runsGet: LoadedRun[];
  runByKey: number | null;
  runInsert: number;
  snapshots: (SnapshotRow & { runId: number })[];
  rows: WorkflowStepRow[];
  jobsInsert: InsertResult[];
  jobsCancel: number[];
  itemsCancel: number[];
  jobsRetry: number[];
  stepsInsert: void;
  stepsReopen: void;
  stepsDelete: void;
  runsSet: void;
  auditRecord: void;
}

/** A generator of {@linkcode Op}s returning `R`. */
export type Ops<R> = Generator<Op, R, unknown>;

/** Yields `op` and types the store's answer. */
function* ask<O extends Op>(op: O): Generator<Op, OpAnswers[O["op"]], unknown> {
  return (yield op) as OpAnswers[O["op"]];
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

/** How one step's job ended, as {@linkcode jobsEnded} takes it. */
export interface StepEnd {
  jobId: number;
  state: Extract<JobState, "completed" | "discarded" | "cancelled">;
  /** The result (JSON text) of a completed step. */
  value: string | null;
  error: string | null;
  /** The run the job's step belongs to, when the caller knows it (the result says): the reads go together. */
  runId?: number;
  /**
   * Who ended it, for the run's audit trail: the node that recorded the
   * attempt, or the operator who stopped the job; absent, {@linkcode SYSTEM_ACTOR}.
   */
  by?: string;
}

/** The step ends among results `node` recorded: those of steps' jobs that reached a final state. */
export function stepEndsOf(results: readonly JobResult[], node: string): StepEnd[] {
  const ends: StepEnd[] = [];
  for (const r of results) {
    if (r.workflow === undefined) continue;
    if (r.outcome === "snoozed" || r.outcome === "retryable") continue;
    const error = "error" in r ? r.error : null;
    const value = r.value ?? null;
    ends.push({ jobId: r.id, state: r.outcome, value, error, runId: r.workflow, by: node });
  }
  return ends;
}

/** An end to apply to a step-level row before the run advances. */
interface PendingEnd {
  key: StepKey;
  state: StepFinish["state"];
  result: string | null;
  error: string | null;
  /** The job that ended (for a fanned-out step, the item's whose end failed it), or null. */
  jobId: number | null;
  /** Who ended it (see {@linkcode StepEnd.by}). */
  by: string | undefined;
}

/**
 * Steps' jobs ended (recorded by their nodes, rescued, or stopped by an
 * operator), a whole batch at once: their rows, the counts of fanned-out
 * steps, then each run they belong to. A job that is no step's, or whose
 * row already ended, changes nothing.
 */
export function* jobsEnded(params: {
  ends: StepEnd[];
  now: number;
  argsLimit?: number;
}): Ops<Outcome> {
  if (params.ends.length === 0) return NOTHING;
  const { now } = params;
  const jobIds = params.ends.map((e) => e.jobId);
  const hinted = params.ends.every((e) => e.runId !== undefined)
    ? [...new Set(params.ends.map((e) => e.runId!))]
    : null;
  let found: OpAnswers["stepsByJobs"];
  let loaded: LoadedRun[] | null = null;
  let snapshot: OpAnswers["snapshots"] | null = null;
  if (hinted) {
    // The runs are known: their rows and states are read with the steps', together.
    const answers = yield* ask({
      op: "all",
      ops: [
        { op: "stepsByJobs", jobIds },
        { op: "runsGet", runIds: hinted },
        { op: "snapshots", runIds: hinted },
      ],
    });
    [found, loaded, snapshot] = answers as [typeof found, LoadedRun[], typeof snapshot];
  } else {
    found = yield* ask({ op: "stepsByJobs", jobIds });
  }
  const byJob = new Map(found.map((r) => [r.jobId, r]));
  const live = params.ends.flatMap((end) => {
    const row = byJob.get(end.jobId);
    return row && row.state === "running" ? [{ end, row }] : [];
  });
  if (live.length === 0) return NOTHING;
  loaded ??= yield* ask({ op: "runsGet", runIds: [...new Set(live.map((l) => l.row.runId))] });
  const runs = new Map(loaded.map((l) => [l.run.id, l]));
  const ended: PendingEnd[] = [];
  const items: StepFinish[] = [];
  const groups = new Map<string, { runId: number; step: string; ends: typeof live }>();
  for (const l of live) {
    const result = l.end.state === "completed" ? l.end.value ?? "null" : null;
    const key = { runId: l.row.runId, kind: l.row.kind, step: l.row.step, item: l.row.item };
    if (l.row.item < 0) {
      const { jobId, by } = l.end;
      ended.push({ key, state: l.end.state, result, error: l.end.error, jobId, by });
      continue;
    }
    items.push({ key, state: l.end.state, result, error: l.end.error, seq: null });
    const id = `${l.row.runId}\0${l.row.step}`;
    const group = groups.get(id) ?? { runId: l.row.runId, step: l.row.step, ends: [] };
    group.ends.push(l);
    groups.set(id, group);
  }
  if (items.length > 0) {
    yield* ask({ op: "stepsFinish", rows: items, now });
    const parents = yield* ask({
      op: "itemsEnded",
      groups: [...groups.values()].map((g) => ({
        runId: g.runId,
        step: g.step,
        count: g.ends.length,
      })),
    });
    for (const p of parents) {
      if (p.state !== "running") continue;
      const group = groups.get(`${p.runId}\0${p.step}`)!;
      const key = { runId: p.runId, kind: "step" as const, step: p.step, item: -1 };
      const failed = group.ends.find((l) => l.end.state !== "completed");
      const run = runs.get(p.runId);
      const optional = run !== undefined &&
        (definitionOf(run.definition).steps.find((s) => s.id === p.step)?.optional ?? false);
      if (failed && !optional) {
        const { state, error, jobId, by } = failed.end;
        const why = `item ${failed.row.item} ${state}: ${error ?? "no reason"}`;
        ended.push({ key, state, result: null, error: why, jobId, by });
        continue;
      }
      if (p.remaining > 0) continue;
      const results = yield* ask({ op: "itemResults", runId: p.runId, step: p.step });
      const result = fanInResult(results);
      ended.push({ key, state: "completed", result, error: null, jobId: null, by: undefined });
    }
  }
  const moved = new Set(ended.map((e) => e.key.runId));
  return yield* advanceRuns(
    loaded.filter((l) => moved.has(l.run.id)),
    now,
    { argsLimit: params.argsLimit },
    ended,
    // Items' ends change no step-level row: a snapshot read before them still holds.
    snapshot,
  );
}

const NOTHING: Outcome = Object.freeze({ queues: [], jobs: [], was: null, state: null }) as Outcome;

/** Reads one run and advances it (a start, an operator's cancel or retry). */
function* advanceRun(runId: number, now: number, options: AdvanceOptions): Ops<Outcome> {
  const loaded = yield* ask({ op: "runsGet", runIds: [runId] });
  return yield* advanceRuns(loaded, now, options, []);
}

/**
 * Applies `ended` to the runs' rows, asks {@linkcode advance} for each run,
 * and writes what the ends and the decisions change: the rows, the new
 * jobs and rows of every run in one statement each, the runs' states. The
 * outcome's `was` and `state` are the first run's.
 */
function* advanceRuns(
  loaded: LoadedRun[],
  now: number,
  options: AdvanceOptions,
  ended: PendingEnd[],
  snapshot: OpAnswers["snapshots"] | null = null,
): Ops<Outcome> {
  if (loaded.length === 0) {
    const rows = ended.map((e) => finishOf(e, null));
    if (rows.length > 0) yield* ask({ op: "stepsFinish", rows, now });
    return NOTHING;
  }
  const rowsOf = new Map<number, SnapshotRow[]>(loaded.map((l) => [l.run.id, []]));
  snapshot ??= yield* ask({ op: "snapshots", runIds: [...rowsOf.keys()] });
  for (const row of snapshot) rowsOf.get(row.runId)?.push(row);
  const finishes: StepFinish[] = [];
  for (const e of ended) {
    const rows = rowsOf.get(e.key.runId);
    const row = rows?.find((r) => r.kind === e.key.kind && r.step === e.key.step);
    let seq: number | null = null;
    if (rows && row) {
      if (e.state === "completed") seq = 1 + Math.max(0, ...rows.map((r) => r.seq ?? 0));
      Object.assign(row, { state: e.state, result: e.result, error: e.error, seq });
    }
    finishes.push(finishOf(e, seq));
  }
  const queues = new Set<string>();
  const jobs: number[] = [];
  const newJobs: NewJob[] = [];
  /** Each new row, with the index of its job in newJobs (-1: none). */
  const newRows: { row: StepInsert; job: number }[] = [];
  const runSets: RunSet[] = [];
  const cancels: Op[] = [];
  const failures: Failed[] = ended.filter((e) => e.state !== "completed").map((e) => ({
    runId: e.key.runId,
    kind: e.key.kind,
    step: e.key.step,
    state: e.state as Failed["state"],
    error: e.error,
    jobId: e.jobId,
    by: e.by ?? SYSTEM_ACTOR,
  }));
  for (const { run, definition } of loaded) {
    const runId = run.id;
    const d = advance(run, definitionOf(definition), rowsOf.get(runId)!, now, options);
    for (const c of d.create) {
      if (c.state !== "discarded" && c.state !== "cancelled") continue;
      // A step that could not get a job; one cancelled upstream failed because of another.
      if (c.error?.startsWith(UPSTREAM_FAILED)) continue;
      const { kind, step, state, error } = c;
      failures.push({ runId, kind, step, state, error, jobId: null, by: SYSTEM_ACTOR });
    }
    if (d.cancelJobs.length > 0) {
      const reason = d.update[0]?.error ?? "run stopped";
      cancels.push({ op: "jobsCancel", ids: d.cancelJobs, error: reason, now });
    }
    for (const step of d.cancelItemsOf) {
      const reason = d.update.find((u) => u.step === step)?.error ?? "run stopped";
      cancels.push({ op: "itemsCancel", runId, step, error: reason, now });
    }
    for (const u of d.update) {
      finishes.push({
        key: { runId, kind: u.kind, step: u.step, item: -1 },
        state: u.state,
        result: null,
        error: u.error,
        seq: null,
      });
    }
    const row = (r: Omit<StepInsert, "runId" | "now" | "jobId">, job: NewJob | null) => {
      newRows.push({ row: { ...r, runId, now, jobId: null }, job: job ? newJobs.length : -1 });
      if (job) newJobs.push(job);
    };
    for (const c of d.create) {
      const { kind, step, state, result, error, seq, items } = c;
      row({ kind, step, item: -1, state, result, error, seq, items }, c.job);
    }
    for (const i of d.items) {
      const fields = {
        kind: "step" as const,
        step: i.step,
        item: i.item,
        state: "running" as const,
      };
      row({ ...fields, result: null, error: null, seq: null, items: null }, i.job);
    }
    if (d.run !== null) {
      runSets.push({
        runId,
        state: d.run.state,
        error: d.run.error,
        finished: d.run.finished,
        cancelReason: options.cancel ?? null,
      });
    }
  }
  for (const op of cancels) jobs.push(...(yield op) as number[]);
  if (finishes.length > 0) yield* ask({ op: "stepsFinish", rows: finishes, now });
  const inserted = newJobs.length > 0 ? yield* ask({ op: "jobsInsert", jobs: newJobs, now }) : [];
  for (const r of inserted) if (r.state === "available") queues.add(r.queue);
  if (newRows.length > 0) {
    const rows = newRows.map(({ row, job }) => ({
      ...row,
      jobId: job < 0 ? null : inserted[job]!.id,
    }));
    yield* ask({ op: "stepsInsert", rows });
  }
  if (runSets.length > 0) yield* ask({ op: "runsSet", runs: runSets, now });
  const audits = failureAudits(failures, loaded, runSets, now);
  if (audits.length > 0) yield* ask({ op: "auditRecord", rows: audits });
  const first = loaded[0]!.run;
  const state = runSets.find((r) => r.runId === first.id)?.state ?? first.state;
  return { queues: [...queues], jobs, was: first.state, state };
}

/** A pending end as the row's finish, with its completion order. */
function finishOf(e: PendingEnd, seq: number | null): StepFinish {
  return { key: e.key, state: e.state, result: e.result, error: e.error, seq };
}

/** A step or compensation that ended discarded or cancelled in an advance. */
interface Failed {
  runId: number;
  kind: "step" | "compensation";
  step: string;
  state: "discarded" | "cancelled";
  error: string | null;
  jobId: number | null;
  by: string;
}

/**
 * The audit rows of `failures` on their runs' trails: one per step that
 * failed (an optional step's failure fails nothing and is left out), with
 * the run's error it makes as the reason and the state the run is in after.
 */
function failureAudits(
  failures: Failed[],
  loaded: LoadedRun[],
  runSets: RunSet[],
  now: number,
): AuditInsert[] {
  const runs = new Map(loaded.map((l) => [l.run.id, l]));
  const rows: AuditInsert[] = [];
  for (const f of failures) {
    const loadedRun = runs.get(f.runId);
    if (loadedRun === undefined) continue;
    const definition = definitionOf(loadedRun.definition);
    const optional = f.kind === "step" &&
      (definition.steps.find((s) => s.id === f.step)?.optional ?? false);
    if (optional) continue;
    const state = runSets.find((r) => r.runId === f.runId)?.state ?? loadedRun.run.state;
    const what = f.kind === "step" ? "step" : "compensation of step";
    rows.push({
      at: now,
      actor: f.by,
      action: `${f.kind}.${f.state === "discarded" ? "discard" : "cancel"}`,
      target: `workflow:${f.runId}`,
      reason: redact(`${what} "${f.step}" ${f.state}: ${f.error ?? "no reason"}`),
      details: { step: f.step, job: f.jobId, run: state },
    });
  }
  return rows;
}

/** An operator's cancel of a run; see `Store.workflowCancel`. */
export function* cancelRun(runId: number, reason: string, now: number): Ops<Outcome> {
  const [loaded] = yield* ask({ op: "runsGet", runIds: [runId] });
  if (loaded === undefined) return NOTHING;
  const was = loaded.run.state;
  if (was !== "running" && was !== "compensating") return { ...NOTHING, was, state: was };
  if (was === "compensating") {
    // Already undoing: the cancel is recorded, the compensations go on.
    const run = {
      runId,
      state: was,
      error: loaded.run.error,
      finished: false,
      cancelReason: reason,
    };
    yield* ask({ op: "runsSet", runs: [run], now });
    return { ...NOTHING, was, state: was };
  }
  return yield* advanceRun(runId, now, { cancel: reason });
}

/** An operator's retry of a failed run; see `Store.workflowRetry`. */
export function* retryRun(runId: number, now: number, argsLimit?: number): Ops<Outcome> {
  const [loaded] = yield* ask({ op: "runsGet", runIds: [runId] });
  if (loaded === undefined) return NOTHING;
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
      if (r.error?.startsWith(UPSTREAM_FAILED) || (r.jobId === null && r.items === null)) {
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
  // The run keeps its error while it goes again: what went wrong last, until
  // it completes or fails anew (see `advance`).
  const run = { runId, state, error: loaded.run.error, finished: false, cancelReason: null };
  yield* ask({ op: "runsSet", runs: [run], now });
  const outcome = yield* advanceRun(runId, now, { argsLimit });
  return { ...outcome, jobs: retried, was, state: outcome.state ?? state };
}
