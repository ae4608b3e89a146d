/**
 * Workflow runs as the command line and the TUI show and act on them: a
 * listing with each run's step counts, one run as a view (every step of its
 * definition in order, with the state of its row, or, when it has none yet,
 * `waiting` while the run goes on and `cancelled` once it has stopped; then
 * its compensation trail), that view as an indented tree of text, and the
 * operator's audited actions (start, cancel, retry), each one store
 * transaction with its `audit` row on `workflow:<id>`.
 *
 * A refusal (no such run, a final run to cancel, a run that is not failed to
 * retry) is a {@linkcode WorkflowActionRefused} naming the run and its state,
 * thrown inside the transaction before anything is written, so it writes
 * nothing.
 *
 * The run's input leaves this module redacted, and step results only as
 * their size: a view never hands out a secret an operator did not need.
 *
 * @module
 */

import { serializeArgs } from "../kernel/enqueue.ts";
import { redact } from "../kernel/redact.ts";
import type { Job } from "../kernel/types.ts";
import type { Store } from "../store/store.ts";
import { escapeControl } from "../text/escape.ts";
import { nextAttemptText } from "../text/next_attempt.ts";
import { errorParts, errorSummary } from "../text/stored_error.ts";
import { cancelError } from "../workflow/advance.ts";
import {
  type CompiledWorkflow,
  FINAL_RUN_STATES,
  type RunState,
  type StepState,
  type WorkflowRun,
  type WorkflowRunDetail,
  type WorkflowStepRow,
} from "../workflow/types.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";
import { redactValue } from "../kernel/redact.ts";

// ----------------------------------------------------------------- listing

/** How many of a run's steps are where: the definition's steps, counted by their state. */
export interface StepCounts {
  /** Steps of the definition. */
  total: number;
  completed: number;
  running: number;
  /** Discarded after their retries. */
  failed: number;
  /** Cancelled (upstream failed, or by an operator), or never run in a run that stopped. */
  cancelled: number;
  /** No row yet: their dependencies are not done, and the run goes on. */
  waiting: number;
}

/** One run of a listing. */
export interface WorkflowRunSummary {
  id: number;
  workflow: string;
  state: RunState;
  tenant: string | null;
  /** The start's idempotency key (an occurrence identity, or the caller's), or null. */
  key: string | null;
  startedAt: number;
  finishedAt: number | null;
  /** Why the run failed or was cancelled, naming the step; redacted. */
  error: string | null;
  steps: StepCounts;
}

/** Which runs {@linkcode listWorkflowRuns} lists. */
export interface WorkflowRunsFilter {
  state?: RunState | RunState[];
  workflow?: string;
  /** Only this tenant's runs (a tenant principal's scope), in the store's statement. */
  tenant?: string;
  /** @default 50 */
  limit?: number;
  /** Keyset paging: runs older than this id (the last id of the previous page). */
  after?: number;
}

/** How many runs a listing holds when no limit is given. */
export const DEFAULT_RUNS_LIMIT = 50;

/**
 * Runs matching `filter`, newest first, each with its step counts. An
 * unknown state is the store's RangeError naming it.
 */
export async function listWorkflowRuns(
  store: Store,
  filter: WorkflowRunsFilter = {},
): Promise<WorkflowRunSummary[]> {
  const runs = await store.workflowsList({
    ...(filter.state === undefined ? {} : { state: filter.state }),
    ...(filter.workflow === undefined ? {} : { workflow: filter.workflow }),
    ...(filter.tenant === undefined ? {} : { tenant: filter.tenant }),
    ...(filter.after === undefined ? {} : { after: filter.after }),
    limit: filter.limit ?? DEFAULT_RUNS_LIMIT,
    desc: true,
  });
  const summaries: WorkflowRunSummary[] = [];
  for (const run of runs) {
    // The step rows are only in the detail; a run deleted meanwhile counts none.
    const detail = await store.workflowGet({
      id: run.id,
      ...(filter.tenant === undefined ? {} : { tenant: filter.tenant }),
    });
    summaries.push({
      id: run.id,
      workflow: run.workflow,
      state: run.state,
      tenant: run.tenant,
      key: run.key,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      error: run.error === null ? null : redact(run.error),
      steps: detail ? stepCounts(detail) : emptyCounts(0),
    });
  }
  return summaries;
}

/** The steps of `detail`'s definition counted by state (see {@linkcode StepCounts}). */
export function stepCounts(detail: WorkflowRunDetail): StepCounts {
  const rows = stepRows(detail.steps);
  const counts = emptyCounts(detail.definition.steps.length);
  const unstarted = unstartedState(detail.run);
  for (const step of detail.definition.steps) {
    const state = rows.get(step.id)?.state ?? unstarted;
    if (state === "discarded") counts.failed++;
    else counts[state]++;
  }
  return counts;
}

/**
 * The state shown for a step with no row: `waiting` while the run goes on,
 * `cancelled` once it has stopped (final, compensating, or cancelled by an
 * operator and waiting only for its executing steps), as it will never run.
 */
export function unstartedState(run: WorkflowRun): "waiting" | "cancelled" {
  return run.state === "running" && run.cancelReason === null ? "waiting" : "cancelled";
}

function emptyCounts(total: number): StepCounts {
  return { total, completed: 0, running: 0, failed: 0, cancelled: 0, waiting: 0 };
}

// -------------------------------------------------------------------- view

/** How a saga step is undone, as shown. */
export type CompensationView =
  | { mode: "use-case"; useCase: string }
  | { mode: "none"; reason: string };

/** One step of a run's definition, with where it is. */
export interface WorkflowStepView {
  id: string;
  /**
   * `waiting` when the step has no row yet (its dependencies are not done),
   * or `cancelled` when it has none and the run stopped (see
   * {@linkcode unstartedState}).
   */
  state: StepState;
  /** The step's job, or null (waiting, fanned out into items, or ended without one). */
  jobId: number | null;
  /**
   * Attempts its job has made (for a fanned-out step, the most any item
   * made); 0 before any.
   */
  attempts: number;
  /** The attempts its job is allowed (for a fanned-out step, its items'), or null without a job. */
  maxAttempts: number | null;
  /**
   * When its job tries again: a retryable job's `scheduled_at` (for a
   * fanned-out step, the soonest of its items'); null when none waits to retry.
   */
  nextAttemptAt: number | null;
  /** Its stored result's size in bytes (UTF-8 JSON text), or null when none is stored. */
  resultBytes: number | null;
  /** Why it was discarded or cancelled; redacted. */
  error: string | null;
  /** A fanned-out step's items: how many ended, of how many; else null. */
  items: { done: number; total: number } | null;
  dependsOn: string[];
  /** The dependency whose result fans it out, or null. */
  forEach: string | null;
  optional: boolean;
  useCase: string | null;
  /** The worker its job runs (`jobs.command`, `jobs.http`, or a worker's name). */
  worker: string;
  compensation: CompensationView | null;
  /** When its row was created (its job made), or null while waiting. */
  createdAt: number | null;
  finishedAt: number | null;
}

/** One compensation that ran (or runs), in the trail. */
export interface CompensationRunView {
  /** The step it undoes. */
  step: string;
  /** The use case that undoes it (from the definition), or null when it has none. */
  useCase: string | null;
  state: Exclude<StepState, "waiting">;
  jobId: number | null;
  attempts: number;
  maxAttempts: number | null;
  /** When its job tries again (a retryable job's `scheduled_at`), or null. */
  nextAttemptAt: number | null;
  /** Why it was discarded or cancelled; redacted. */
  error: string | null;
  createdAt: number;
  finishedAt: number | null;
}

/** One run as an operator sees it. */
export interface WorkflowRunView {
  /** The run's row, its input redacted and its error redacted. */
  run: WorkflowRun;
  /** `carried_by: workflow`: a failure runs the compensations. */
  saga: boolean;
  /** The hash of the definition the run carries. */
  hash: string;
  /** Every step of the definition, in its order (each after its dependencies). */
  steps: WorkflowStepView[];
  /** The compensations in the order they ran; empty when none has. */
  compensations: CompensationRunView[];
}

/**
 * One run by id as a {@linkcode WorkflowRunView}, or null when there is no
 * such run; with a `tenant`, also when the run is not that tenant's (read
 * with the tenant in the store's statement).
 */
export async function workflowRunView(
  store: Store,
  id: number,
  tenant: string | null = null,
): Promise<WorkflowRunView | null> {
  const detail = await store.workflowGet({ id, ...(tenant === null ? {} : { tenant }) });
  if (!detail) return null;
  const jobs = await jobsOf(store, detail.steps);
  return runView(detail, jobs);
}

/**
 * The view of `detail`, with `jobs` its rows' jobs by id (a job missing
 * from it, pruned say, counts no attempts). Pure: for a caller that already
 * holds the detail and its jobs.
 */
export function runView(
  detail: WorkflowRunDetail,
  jobs: ReadonlyMap<number, Job>,
): WorkflowRunView {
  const { run, definition } = detail;
  const rows = stepRows(detail.steps);
  const unstarted = unstartedState(run);
  const itemRows = new Map<string, WorkflowStepRow[]>();
  for (const row of detail.steps) {
    if (row.kind !== "step" || row.item < 0) continue;
    const list = itemRows.get(row.step) ?? [];
    list.push(row);
    itemRows.set(row.step, list);
  }
  const steps = definition.steps.map((step): WorkflowStepView => {
    const row = rows.get(step.id);
    const items = itemRows.get(step.id) ?? [];
    const own = row?.jobId != null ? jobs.get(row.jobId) : undefined;
    const itemJobs = items.flatMap((r) => {
      const job = r.jobId === null ? undefined : jobs.get(r.jobId);
      return job ? [job] : [];
    });
    const counted = own ? [own] : itemJobs;
    return {
      id: step.id,
      state: row?.state ?? unstarted,
      jobId: row?.jobId ?? null,
      attempts: counted.reduce((most, job) => Math.max(most, job.attempt), 0),
      maxAttempts: counted.length === 0
        ? null
        : counted.reduce((most, job) => Math.max(most, job.maxAttempts), 0),
      nextAttemptAt: counted.reduce<number | null>((soonest, job) => {
        const at = nextAttemptAt(job);
        return at === null || (soonest !== null && soonest <= at) ? soonest : at;
      }, null),
      resultBytes: row?.result == null ? null : byteLength(row.result),
      error: row?.error == null ? null : redact(row.error),
      items: step.forEach === null ? null : itemsOf(row, items),
      dependsOn: [...step.dependsOn],
      forEach: step.forEach,
      optional: step.optional,
      useCase: step.useCase,
      worker: step.job.worker,
      compensation: step.compensation === null
        ? null
        : step.compensation.mode === "use-case"
        ? { mode: "use-case", useCase: step.compensation.useCase }
        : { mode: "none", reason: step.compensation.reason },
      createdAt: row?.createdAt ?? null,
      finishedAt: row?.finishedAt ?? null,
    };
  });
  const undoes = new Map(
    definition.steps.map((s) => [
      s.id,
      s.compensation?.mode === "use-case" ? s.compensation.useCase : null,
    ]),
  );
  // One runs at a time, each created when the one before it ended: creation
  // order is the order they ran. Created in the same ms, the one that ended
  // first (its seq) ran first; else the one whose step completed last, as
  // compensations run in reverse order of completion.
  const completedAt = new Map(
    [...rows.values()].map((r) => [r.step, r.seq ?? Number.MAX_SAFE_INTEGER]),
  );
  const compensations = detail.steps
    .filter((r) => r.kind === "compensation")
    .sort((a, b) =>
      a.createdAt - b.createdAt ||
      (a.seq ?? Number.MAX_SAFE_INTEGER) - (b.seq ?? Number.MAX_SAFE_INTEGER) ||
      (completedAt.get(b.step) ?? 0) - (completedAt.get(a.step) ?? 0)
    )
    .map((r): CompensationRunView => {
      const job = r.jobId === null ? undefined : jobs.get(r.jobId);
      return {
        step: r.step,
        useCase: undoes.get(r.step) ?? null,
        state: r.state,
        jobId: r.jobId,
        attempts: job?.attempt ?? 0,
        maxAttempts: job?.maxAttempts ?? null,
        nextAttemptAt: job ? nextAttemptAt(job) : null,
        error: r.error === null ? null : redact(r.error),
        createdAt: r.createdAt,
        finishedAt: r.finishedAt,
      };
    });
  return {
    run: {
      ...run,
      input: redactValue(run.input),
      error: run.error === null ? null : redact(run.error),
      cancelReason: run.cancelReason === null ? null : redact(run.cancelReason),
    },
    saga: definition.saga,
    hash: definition.hash,
    steps,
    compensations,
  };
}

/** The jobs of `rows`, by id, read in a few listings rather than one read per row. */
async function jobsOf(store: Store, rows: WorkflowStepRow[]): Promise<Map<number, Job>> {
  const ids = [...new Set(rows.flatMap((r) => (r.jobId === null ? [] : [r.jobId])))];
  const jobs = new Map<number, Job>();
  for (let i = 0; i < ids.length; i += JOBS_PAGE) {
    const page = ids.slice(i, i + JOBS_PAGE);
    for (const job of await store.jobsList({ ids: page, limit: page.length })) {
      jobs.set(job.id, job);
    }
  }
  return jobs;
}

const JOBS_PAGE = 500;

/** The step-level row (item -1) of each step; a later row of the same step wins. */
function stepRows(rows: readonly WorkflowStepRow[]): Map<string, WorkflowStepRow> {
  const byStep = new Map<string, WorkflowStepRow>();
  for (const row of rows) if (row.kind === "step" && row.item < 0) byStep.set(row.step, row);
  return byStep;
}

/** A fanned-out step's items: from its row's counts, else from the item rows themselves. */
function itemsOf(
  row: WorkflowStepRow | undefined,
  items: WorkflowStepRow[],
): { done: number; total: number } | null {
  if (row?.items != null) {
    return { done: row.items - (row.remaining ?? 0), total: row.items };
  }
  if (items.length === 0) return row ? { done: 0, total: 0 } : null;
  return { done: items.filter((r) => r.state !== "running").length, total: items.length };
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

// -------------------------------------------------------------------- json

/** A run of a listing as `jobs workflows --json` and the API show it: instants as ISO UTC. */
export function workflowSummaryJson(run: WorkflowRunSummary) {
  return { ...run, startedAt: iso(run.startedAt), finishedAt: iso(run.finishedAt) };
}

/** A run's view as `jobs workflow show --json` and the API show it: instants as ISO UTC. */
export function workflowViewJson(view: WorkflowRunView) {
  return {
    run: {
      ...view.run,
      startedAt: iso(view.run.startedAt),
      finishedAt: iso(view.run.finishedAt),
      updatedAt: iso(view.run.updatedAt),
    },
    saga: view.saga,
    hash: view.hash,
    steps: view.steps.map((s) => ({
      ...s,
      nextAttemptAt: iso(s.nextAttemptAt),
      createdAt: iso(s.createdAt),
      finishedAt: iso(s.finishedAt),
    })),
    compensations: view.compensations.map((c) => ({
      ...c,
      nextAttemptAt: iso(c.nextAttemptAt),
      createdAt: iso(c.createdAt),
      finishedAt: iso(c.finishedAt),
    })),
  };
}

// -------------------------------------------------------------------- text

/**
 * The run as lines of text: a header, then each step indented under the
 * step it waits on last (a step that depends on several names the others
 * in `after ...`), with its state, attempts and result size (`not run`
 * for a cancelled step that never started); then the compensation trail in
 * the order it ran. The run's error is one line ({@linkcode errorSummary},
 * as `jobs workflows` lists it), said once when it is only the operator's
 * cancel; a step's or a compensation's error is its message's first line
 * (the view has it whole, frames and all), then the stderr tail a command
 * left, a quoted line each. Stored text is escaped for a terminal; nothing
 * here reads the clock: with `now`, a step that waits to retry says how far
 * off its next attempt is, else only when.
 */
export function workflowTreeText(view: WorkflowRunView, now?: number): string[] {
  const { run } = view;
  const lines = [
    `run ${run.id}  ${text(run.workflow)}${view.saga ? " (saga)" : ""}  ${run.state}`,
    `  started ${isoText(run.startedAt)}${
      run.finishedAt === null ? "" : `, finished ${isoText(run.finishedAt)}`
    }${run.tenant === null ? "" : `, tenant ${text(run.tenant)}`}${
      run.key === null ? "" : `, key ${text(run.key)}`
    }`,
  ];
  if (run.error !== null && !errorIsCancel(run)) {
    lines.push(`  error: ${text(errorSummary(run.error))}`);
  }
  if (run.cancelReason !== null) lines.push(`  cancelled: ${text(run.cancelReason)}`);
  lines.push("steps:");
  const order = new Map(view.steps.map((s, i) => [s.id, i]));
  // Each step hangs under its dependency that comes last in the definition's
  // order: the one it waits on longest in a chain, and one place in a DAG.
  const parentOf = (s: WorkflowStepView) =>
    s.dependsOn.reduce<string | null>(
      (last, d) => (last === null || order.get(d)! > order.get(last)! ? d : last),
      null,
    );
  const children = new Map<string | null, WorkflowStepView[]>();
  for (const step of view.steps) {
    const parent = parentOf(step);
    children.set(parent, [...(children.get(parent) ?? []), step]);
  }
  const walk = (parent: string | null, depth: number) => {
    for (const step of children.get(parent) ?? []) {
      lines.push(`${"  ".repeat(depth + 1)}${stepLine(step, parent, now)}`);
      if (step.error !== null) lines.push(...errorLines(step.error, "  ".repeat(depth + 2)));
      walk(step.id, depth + 1);
    }
  };
  walk(null, 0);
  if (view.saga || view.compensations.length > 0) {
    lines.push(
      view.compensations.length === 0
        ? "compensations: none ran"
        : "compensations, in the order they ran:",
    );
    view.compensations.forEach((c, i) => {
      lines.push(
        `  ${i + 1}. undo ${text(c.step)}${
          c.useCase === null ? "" : ` with ${text(c.useCase)}`
        }  ${c.state}  ${attemptsText(c.attempts, c.maxAttempts)}${
          c.nextAttemptAt === null ? "" : `  ${nextAttemptText(c.nextAttemptAt, now)}`
        }${c.jobId === null ? "" : `  job ${c.jobId}`}`,
      );
      if (c.error !== null) lines.push(...errorLines(c.error, "     "));
    });
  }
  return lines;
}

function stepLine(step: WorkflowStepView, parent: string | null, now?: number): string {
  const parts = [text(step.id), step.state];
  if (step.items !== null) parts.push(`items ${step.items.done}/${step.items.total}`);
  if (step.state === "cancelled" && step.attempts === 0) parts.push("not run");
  else if (step.state !== "waiting") parts.push(attemptsText(step.attempts, step.maxAttempts));
  if (step.nextAttemptAt !== null) parts.push(nextAttemptText(step.nextAttemptAt, now));
  if (step.resultBytes !== null) parts.push(`result ${bytesText(step.resultBytes)}`);
  if (step.jobId !== null) parts.push(`job ${step.jobId}`);
  const notes: string[] = [];
  const others = step.dependsOn.filter((d) => d !== parent);
  if (others.length > 0) notes.push(`after ${others.map(text).join(", ")}`);
  if (step.forEach !== null) notes.push(`for each of ${text(step.forEach)}`);
  if (step.optional) notes.push("optional");
  if (step.useCase !== null && step.useCase !== step.id) notes.push(text(step.useCase));
  if (step.compensation?.mode === "use-case") {
    notes.push(`undo: ${text(step.compensation.useCase)}`);
  } else if (step.compensation?.mode === "none") {
    notes.push(`no undo: ${text(step.compensation.reason)}`);
  }
  return `${parts.join("  ")}${notes.length === 0 ? "" : `  (${notes.join("; ")})`}`;
}

/** When `job` tries again: its `scheduled_at` while it is retryable, else null. */
export function nextAttemptAt(job: Job): number | null {
  return job.state === "retryable" ? job.scheduledAt : null;
}

function attemptsText(attempts: number, max: number | null): string {
  return `${attempts}${max === null ? "" : `/${max}`} attempt${attempts === 1 ? "" : "s"}`;
}

/** `512 B`, `3.2 KiB`, `1.5 MiB`. */
export function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * Whether the run's error is only its operator's cancel, which its
 * `cancelled:` line says (the views say it once).
 */
export function errorIsCancel(run: WorkflowRun): boolean {
  return run.cancelReason !== null && run.error === cancelError(run.cancelReason);
}

/**
 * A stored error as lines at `indent`: its message's first line (without
 * the frames a worker's throw carries), then, when a command left one, its
 * stderr tail, each line quoted with `| ` one step further in.
 */
export function errorLines(error: string, indent: string): string[] {
  const { message, stderr } = errorParts(error);
  if (stderr.length === 0) return [`${indent}error: ${text(message)}`];
  return [
    `${indent}error: ${text(message)}, stderr:`,
    ...stderr.map((line) => `${indent}  | ${text(line)}`),
  ];
}

/** Stored text on one line of a terminal. */
function text(value: string): string {
  return escapeControl(value).replaceAll("\n", "\\n").replaceAll("\t", "\\t");
}

function isoText(ms: number): string {
  return new Date(ms).toISOString();
}

// ----------------------------------------------------------------- actions

/** Raised when an action refuses a run (none, or in the wrong state); nothing was written. */
export class WorkflowActionRefused extends Error {
  constructor(
    message: string,
    /** The run's id. */
    readonly id: number,
    /** The run's state, or null when there is no such run. */
    readonly state: RunState | null,
  ) {
    super(message);
    this.name = "WorkflowActionRefused";
  }
}

/** Who acts on a run, why and when. */
export interface WorkflowActionParams {
  id: number;
  reason: string;
  actor: string;
  now: number;
  /**
   * Only a run of this tenant (a tenant principal's scope): another's is
   * refused as one that is not there. @default null, any run
   */
  tenant?: string | null;
}

/** What a cancel or retry of a run did. */
export interface WorkflowActionDone {
  id: number;
  workflow: string;
  /** The run's state before the action. */
  was: RunState;
  /** Its state after it. */
  state: RunState;
  /** The jobs the action cancelled or made runnable again. */
  jobs: number[];
}

/**
 * An operator's cancel of a run: its waiting step jobs are cancelled; a
 * plain run ends `cancelled` once its executing steps finish, a saga runs
 * its compensations. Audited as `workflow.cancel` on `workflow:<id>`. A run
 * that is not there, or already final, is refused.
 */
export async function cancelWorkflowRun(
  store: Store,
  params: WorkflowActionParams,
): Promise<WorkflowActionDone> {
  const who = actorOf(params);
  return await store.transaction(async (tx) => {
    const run = runOrRefuse(await tx.workflowGet(scoped(params)), params.id, "cancel");
    if (FINAL_RUN_STATES.includes(run.state)) {
      throw new WorkflowActionRefused(
        `workflow run ${run.id} (${run.workflow}) is already ${run.state}: nothing to cancel`,
        run.id,
        run.state,
      );
    }
    const done = await tx.workflowCancel({ id: run.id, now: params.now, reason: who.reason! });
    if (!done) throw new WorkflowActionRefused(noRun(params.id, "cancel"), params.id, null);
    await audit(tx, who, "workflow.cancel", `workflow:${run.id}`, {
      workflow: run.workflow,
      was: done.was,
      state: done.state,
      jobs: done.jobs,
    });
    return { id: run.id, workflow: run.workflow, ...done };
  });
}

/**
 * An operator's retry of a `failed` run: its discarded or cancelled steps
 * (or the compensation that was discarded) run again and the run resumes.
 * Audited as `workflow.retry` on `workflow:<id>`. A run that is not there,
 * or not failed, is refused.
 */
export async function retryWorkflowRun(
  store: Store,
  params: WorkflowActionParams,
): Promise<WorkflowActionDone> {
  const who = actorOf(params);
  return await store.transaction(async (tx) => {
    const run = runOrRefuse(await tx.workflowGet(scoped(params)), params.id, "retry");
    if (run.state !== "failed") {
      throw new WorkflowActionRefused(
        `workflow run ${run.id} (${run.workflow}) is ${run.state}, not failed: only a failed ` +
          `run can be retried`,
        run.id,
        run.state,
      );
    }
    const done = await tx.workflowRetry({ id: run.id, now: params.now });
    if (!done) throw new WorkflowActionRefused(noRun(params.id, "retry"), params.id, null);
    await audit(tx, who, "workflow.retry", `workflow:${run.id}`, {
      workflow: run.workflow,
      was: done.was,
      state: done.state,
      jobs: done.jobs,
    });
    return { id: run.id, workflow: run.workflow, ...done };
  });
}

/** What {@linkcode startWorkflowRun} takes. */
export interface StartWorkflowParams {
  /** The compiled (so checked) definition; the run keeps it. */
  definition: CompiledWorkflow;
  /** The run's input: any JSON value, bounded like a job's args. */
  input: unknown;
  /** An idempotency key: a second start with it returns the first run. */
  key?: string | null;
  tenant?: string | null;
  actor: string;
  /** Why, for the audit trail. @default null */
  reason?: string | null;
  now: number;
}

/**
 * Starts a run of `definition` by hand: its row and its first steps' jobs,
 * with a `workflow.start` audit row on `workflow:<id>` (also for a
 * duplicate of the key, which starts nothing). An input JSON cannot hold,
 * or too large, is the kernel's `EnqueueError` naming the workflow.
 *
 * Keys are unique in the whole store: a tenant's start whose key already
 * started a run of another tenant (or of none) is a
 * {@linkcode WorkflowActionRefused} that names neither that run nor its
 * tenant, and writes nothing, so one tenant never learns another's run.
 */
export async function startWorkflowRun(
  store: Store,
  params: StartWorkflowParams,
): Promise<{ id: number; duplicate: boolean }> {
  const input = serializeArgs(params.input, `workflow "${params.definition.id}" input`);
  const who: Actor = { actor: params.actor, reason: params.reason ?? null, now: params.now };
  return await store.transaction(async (tx) => {
    const started = await tx.workflowStart({
      definition: params.definition,
      input,
      tenant: params.tenant ?? null,
      key: params.key ?? null,
      now: params.now,
    });
    if (started.duplicate) {
      const first = await tx.workflowGet({ id: started.id });
      const tenant = params.tenant ?? null;
      if (tenant !== null && first !== null && first.run.tenant !== tenant) {
        throw new WorkflowActionRefused(
          `the key ${JSON.stringify(params.key)} already started a run outside this tenant's ` +
            `scope: choose another key`,
          -1,
          null,
        );
      }
    }
    await audit(tx, who, "workflow.start", `workflow:${started.id}`, {
      workflow: params.definition.id,
      hash: params.definition.hash,
      key: params.key ?? null,
      duplicate: started.duplicate,
    });
    return { id: started.id, duplicate: started.duplicate };
  });
}

/** The store's read of the run `params` names, in its tenant's scope when it has one. */
function scoped(params: WorkflowActionParams): { id: number; tenant?: string } {
  const tenant = params.tenant ?? null;
  return tenant === null ? { id: params.id } : { id: params.id, tenant };
}

function actorOf(params: WorkflowActionParams): Actor {
  return { actor: params.actor, reason: redact(params.reason), now: params.now };
}

function runOrRefuse(
  detail: WorkflowRunDetail | null,
  id: number,
  action: "cancel" | "retry",
): WorkflowRun {
  if (!detail) throw new WorkflowActionRefused(noRun(id, action), id, null);
  return detail.run;
}

function noRun(id: number, action: string): string {
  return `no workflow run ${id}: nothing to ${action}`;
}
