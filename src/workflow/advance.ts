/**
 * How a run moves on, as a pure function: given the run, its definition and
 * its step rows as they are after a step's job ended, decide which steps now
 * get jobs, which are cancelled because a dependency failed, which waiting
 * jobs a saga's failure cancels, which compensation runs next, and what
 * state the run is in. The store calls {@linkcode advance} inside the write
 * transaction that recorded the step's end and applies what it returns
 * there, so a crash between a step's completion and its dependants' creation
 * cannot happen: both commit, or neither.
 *
 * The rules:
 *
 * - A step gets its job once every dependency is done: completed, or ended
 *   any other way while `optional`. A step with `forEach` gets one job per
 *   item of that dependency's result (a list); with no items it completes
 *   at once with `[]`.
 * - A step that failed (discarded, or cancelled by an operator) and is not
 *   optional cancels its dependants (`upstream failed`). A plain run then
 *   ends `failed` once nothing of it is running.
 * - A saga's failure (or an operator's cancel of a saga) moves the run to
 *   `compensating`: waiting step jobs are cancelled, executing ones are let
 *   finish (what they do must be undone too), and then the compensations of
 *   the completed steps run one at a time, in reverse order of completion.
 *   The run ends `compensated` (or `cancelled`, when an operator cancelled
 *   it), or `failed` when a compensation is discarded, or when a step failed
 *   and nothing completed needs undoing.
 * - An operator's cancel of a plain run cancels its waiting jobs and ends
 *   it `cancelled` once nothing is running.
 * - The run's error is why it failed or was cancelled: its first failure
 *   (`step "<id>" <state>: <error>`), or `cancelled: <reason>`. An
 *   operator's retry keeps it, so a run that goes again says what went
 *   wrong last; it is cleared when the run completes, replaced by a new
 *   failure, and back to the failure (or cancel) that began the
 *   compensations when a retried compensation finishes them.
 *
 * @module
 */

import { EnqueueError, serializeArgs } from "../kernel/enqueue.ts";
import { describeError } from "../kernel/redact.ts";
import { runSettingsMeta } from "../kernel/run_settings.ts";
import type { JobState, NewJob } from "../kernel/types.ts";
import {
  type CompiledStep,
  type CompiledWorkflow,
  FINAL_RUN_STATES,
  type JobTemplate,
  type RunState,
  type WorkflowStepRow,
} from "./types.ts";
import { STEP_META_KEY, type StepMeta, type StepPayload } from "../kernel/step_meta.ts";

/** The reason stored on a step cancelled because a dependency failed. */
export const UPSTREAM_FAILED = "upstream failed";

/** The reasons stored on the waiting steps an operator's cancel or a saga's failure stops. */
const STOPPED = ["run cancelled: ", "run compensating: "];

/** The error of a run an operator cancelled with `reason`. */
export function cancelError(reason: string): string {
  return `cancelled: ${reason}`;
}

/** What {@linkcode advance} reads of the run. */
export interface RunSnapshot {
  id: number;
  workflow: string;
  state: RunState;
  /** The input, as JSON text. */
  input: string;
  tenant: string | null;
  error: string | null;
  cancelReason: string | null;
}

/**
 * A step-level row (item -1) or a compensation row, with the state of its
 * job: the store reads it with the rows (a running row's job may be
 * executing, and an executing job is let finish).
 */
export type SnapshotRow =
  & Pick<WorkflowStepRow, "kind" | "step" | "jobId" | "state" | "result" | "seq" | "error">
  & { jobState: JobState | null };

/** A step-level or compensation row to insert, with its job (null: it needs none). */
export interface NewStepRow {
  kind: "step" | "compensation";
  step: string;
  job: NewJob | null;
  state: "running" | "completed" | "discarded" | "cancelled";
  result: string | null;
  error: string | null;
  seq: number | null;
  /** For a fanned-out step: its item count (its items are in {@linkcode AdvanceDecision.items}). */
  items: number | null;
}

/** What the store writes, in the transaction that called {@linkcode advance}. */
export interface AdvanceDecision {
  create: NewStepRow[];
  /** The item rows of fanned-out steps created now, each with its job. */
  items: { step: string; item: number; job: NewJob }[];
  /** Running rows that end now (a waiting job cancelled), with their new state. */
  update: { kind: "step" | "compensation"; step: string; state: "cancelled"; error: string }[];
  /** Jobs to cancel: waiting jobs of the rows in `update`. */
  cancelJobs: number[];
  /** Fanned-out steps whose items' waiting jobs are cancelled (the step's row is in `update`). */
  cancelItemsOf: string[];
  /** The run's new state, or null when it stays. */
  run: { state: RunState; error: string | null; finished: boolean } | null;
}

/** What {@linkcode advance} may be told besides the rows. */
export interface AdvanceOptions {
  /** An operator cancels the run, with this reason. */
  cancel?: string;
  /** Largest serialized args of a step's job. */
  argsLimit?: number;
}

/**
 * Decides what follows for one run at `now`; see the module doc for the
 * rules. Pure: it reads its arguments and returns what to write.
 */
export function advance(
  run: RunSnapshot,
  definition: CompiledWorkflow,
  rows: readonly SnapshotRow[],
  now: number,
  options: AdvanceOptions = {},
): AdvanceDecision {
  return new Advance(run, definition, rows, now, options).decide();
}

class Advance {
  readonly decision: AdvanceDecision = {
    create: [],
    items: [],
    update: [],
    cancelJobs: [],
    cancelItemsOf: [],
    run: null,
  };
  readonly steps = new Map<string, SnapshotRow>();
  readonly compensations = new Map<string, SnapshotRow>();
  state: RunState;
  error: string | null;
  seq: number;
  /** Set by an operator's cancel of a plain run: nothing more is created. */
  #cancelled = false;

  constructor(
    readonly run: RunSnapshot,
    readonly definition: CompiledWorkflow,
    rows: readonly SnapshotRow[],
    readonly now: number,
    readonly options: AdvanceOptions,
  ) {
    for (const row of rows) {
      (row.kind === "step" ? this.steps : this.compensations).set(row.step, { ...row });
    }
    this.state = run.state;
    this.error = run.error;
    this.seq = Math.max(0, ...rows.map((r) => r.seq ?? 0));
  }

  decide(): AdvanceDecision {
    if (FINAL_RUN_STATES.includes(this.state) && this.options.cancel === undefined) {
      return this.decision;
    }
    if (this.options.cancel !== undefined) this.#cancel(this.options.cancel);
    if (this.state === "running") this.#settleRunning();
    if (this.state === "compensating") this.#settleCompensating();
    if (this.state !== this.run.state || this.error !== this.run.error) {
      this.decision.run = {
        state: this.state,
        error: this.error,
        finished: FINAL_RUN_STATES.includes(this.state),
      };
    }
    return this.decision;
  }

  /** An operator's cancel: a plain run stops, a saga compensates. */
  #cancel(reason: string): void {
    if (FINAL_RUN_STATES.includes(this.state)) return;
    this.error = cancelError(reason);
    this.#stopWaiting(`${STOPPED[0]}${reason}`);
    if (this.definition.saga) {
      this.state = "compensating";
    } else {
      // Steps not started never will: the run ends once executing ones finish.
      this.state = this.#anyRunning() ? "running" : "cancelled";
      this.#cancelled = true;
    }
  }

  #settleRunning(): void {
    if (this.run.cancelReason !== null || this.#cancelled) {
      // A cancelled plain run creates nothing more.
      if (!this.#anyRunning()) this.state = "cancelled";
      return;
    }
    this.#createReady();
    const failures = this.#failures();
    if (failures.length > 0) {
      // The first failure stays the run's error while others follow; an
      // error kept across a retry names none of them, and gives way.
      if (!failures.includes(this.error ?? "")) this.error = failures[0]!;
      const failed = this.error!;
      if (this.definition.saga) {
        this.#stopWaiting(`${STOPPED[1]}${failed}`);
        this.state = "compensating";
        return;
      }
      if (!this.#anyRunning()) this.state = "failed";
      return;
    }
    const allDone = this.definition.steps.every((s) => this.#isDone(this.steps.get(s.id)));
    if (allDone) {
      this.state = "completed";
      // An error kept across a retry is moot once the run completes.
      this.error = null;
    }
  }

  /** Creates the job (or the rows) of every step whose dependencies are done, until none is left. */
  #createReady(): void {
    for (let changed = true; changed;) {
      changed = false;
      for (const step of this.definition.steps) {
        if (this.steps.has(step.id)) continue;
        const failedDep = step.dependsOn.find((d) => this.#hasFailed(this.steps.get(d)));
        if (failedDep !== undefined) {
          this.#addStep(step.id, {
            job: null,
            state: "cancelled",
            error: `${UPSTREAM_FAILED}: ${failedDep}`,
          });
          changed = true;
          continue;
        }
        if (!step.dependsOn.every((d) => this.#isDone(this.steps.get(d)))) continue;
        this.#create(step);
        changed = true;
      }
    }
  }

  #create(step: CompiledStep): void {
    const results = this.#resultsOf(step.dependsOn);
    const input = JSON.parse(this.run.input);
    if (step.forEach === null) {
      const built = this.#job(step.id, "step", -1, step.job, step.useCase, { input, results });
      if ("error" in built) this.#addStep(step.id, { job: null, state: "discarded", ...built });
      else this.#addStep(step.id, { job: built.job, state: "running", error: null });
      return;
    }
    const list = results[step.forEach];
    if (list !== null && !Array.isArray(list)) {
      this.#addStep(step.id, {
        job: null,
        state: "discarded",
        error: `forEach: the result of step "${step.forEach}" is not a list`,
      });
      return;
    }
    const items = list ?? [];
    // An item gets its item, not the whole list again: n items would carry n copies of it.
    const { [step.forEach]: _list, ...others } = results;
    if (items.length === 0) {
      this.#addStep(step.id, { job: null, state: "completed", error: null, result: "[]" });
      return;
    }
    const jobs: NewJob[] = [];
    for (const [i, item] of items.entries()) {
      const payload = { input, results: others, item };
      const built = this.#job(step.id, "step", i, step.job, step.useCase, payload);
      if ("error" in built) {
        this.#addStep(step.id, {
          job: null,
          state: "discarded",
          error: `item ${i}: ${built.error}`,
        });
        return;
      }
      jobs.push(built.job);
    }
    this.#addStep(step.id, { job: null, state: "running", error: null, items: items.length });
    for (const [i, job] of jobs.entries()) {
      this.decision.items.push({ step: step.id, item: i, job });
    }
  }

  #settleCompensating(): void {
    if (this.#anyRunning()) return;
    // One compensation at a time: wait for the one running.
    for (const c of this.compensations.values()) {
      if (c.state === "running") return;
      if (c.state !== "completed") {
        this.state = "failed";
        this.error = `compensation of step "${c.step}" ${c.state}: ${c.error ?? "no reason"}`;
        return;
      }
    }
    const completed = [...this.steps.values()]
      .filter((r) => r.state === "completed" && r.seq !== null)
      .sort((a, b) => b.seq! - a.seq!);
    for (const row of completed) {
      if (this.compensations.has(row.step)) continue;
      const step = this.#definitionOf(row.step);
      const compensation = step?.compensation;
      if (!step || !compensation || compensation.mode === "none") continue;
      const results = this.#resultsOf(this.definition.steps.map((s) => s.id));
      const payload: StepPayload = {
        input: JSON.parse(this.run.input),
        results,
        compensates: { step: row.step, result: parse(row.result) },
      };
      const built = this.#job(
        row.step,
        "compensation",
        -1,
        compensation.job,
        compensation.useCase,
        payload,
      );
      if ("error" in built) {
        this.#addCompensation(row.step, null, "discarded", built.error);
        this.state = "failed";
        this.error = `compensation of step "${row.step}" discarded: ${built.error}`;
      } else {
        this.#addCompensation(row.step, built.job, "running", null);
      }
      return;
    }
    const undone = [...this.compensations.values()].length;
    const cancelled = this.run.cancelReason !== null || this.options.cancel !== undefined;
    this.error = this.#cause();
    if (cancelled) this.state = "cancelled";
    else if (undone === 0 && !completed.some((r) => this.#definitionOf(r.step)?.compensation)) {
      this.state = "failed";
      this.error = `${this.error ?? "a step failed"}; nothing to compensate`;
    } else {
      this.state = "compensated";
    }
  }

  /** Cancels what has not started: waiting step jobs, and the waiting items of fanned-out steps. */
  #stopWaiting(reason: string): void {
    for (const row of this.steps.values()) {
      if (row.state !== "running") continue;
      if (row.jobId === null) {
        // A fanned-out step: its waiting items are cancelled, executing ones finish.
        this.decision.cancelItemsOf.push(row.step);
        this.#end(row, reason);
      } else if (row.jobState !== "executing") {
        this.decision.cancelJobs.push(row.jobId);
        this.#end(row, reason);
      }
    }
  }

  #end(row: SnapshotRow, error: string): void {
    row.state = "cancelled";
    row.error = error;
    this.decision.update.push({ kind: row.kind, step: row.step, state: "cancelled", error });
  }

  #job(
    step: string,
    kind: "step" | "compensation",
    item: number,
    template: JobTemplate,
    useCase: string | null,
    payload: StepPayload,
  ): { job: NewJob } | { error: string } {
    const meta: StepMeta = {
      run: this.run.id,
      workflow: this.run.workflow,
      step,
      item,
      kind,
      useCase,
    };
    if (template.spec !== null) meta.payload = payload;
    const where = `workflow "${this.run.workflow}" step "${step}"`;
    try {
      const args = serializeArgs(template.spec ?? payload, where, this.options.argsLimit);
      const metaText = serializeArgs(
        {
          [STEP_META_KEY]: meta,
          ...runSettingsMeta({ timeoutMs: template.timeoutMs, backoff: template.backoff }),
        },
        where,
        this.options.argsLimit,
      );
      return {
        job: {
          queue: template.queue,
          worker: template.worker,
          args,
          meta: metaText,
          tags: JSON.stringify(template.tags),
          tenant: this.run.tenant,
          priority: template.priority,
          maxAttempts: template.maxAttempts,
          scheduledAt: this.now,
          uniqueKey: null,
          uniqueStates: null,
          occurrence: stepIdentity(this.run.id, step, item, kind),
          scheduleId: null,
          scheduledFor: null,
        },
      };
    } catch (error) {
      if (error instanceof EnqueueError) return { error: describeError(error) };
      throw error;
    }
  }

  #addStep(
    step: string,
    row: {
      job: NewJob | null;
      state: NewStepRow["state"];
      error: string | null;
      result?: string;
      items?: number;
    },
  ): void {
    const seq = row.state === "completed" ? ++this.seq : null;
    this.decision.create.push({
      kind: "step",
      step,
      job: row.job,
      state: row.state,
      result: row.result ?? null,
      error: row.error,
      seq,
      items: row.items ?? null,
    });
    this.steps.set(step, {
      kind: "step",
      step,
      jobId: null,
      state: row.state,
      result: row.result ?? null,
      seq,
      error: row.error,
      // A new job is waiting: a failure now cancels it.
      jobState: row.job ? "available" : null,
    });
  }

  #addCompensation(
    step: string,
    job: NewJob | null,
    state: "running" | "discarded",
    error: string | null,
  ): void {
    this.decision.create.push({
      kind: "compensation",
      step,
      job,
      state,
      result: null,
      error,
      seq: null,
      items: null,
    });
    this.compensations.set(step, {
      kind: "compensation",
      step,
      jobId: null,
      state,
      result: null,
      seq: null,
      error,
      jobState: job ? "available" : null,
    });
  }

  #definitionOf(id: string): CompiledStep | undefined {
    return this.definition.steps.find((s) => s.id === id);
  }

  /** Completed, or ended any other way while optional. */
  #isDone(row: SnapshotRow | undefined): boolean {
    if (!row) return false;
    if (row.state === "completed") return true;
    return row.state !== "running" && (this.#definitionOf(row.step)?.optional ?? false);
  }

  #hasFailed(row: SnapshotRow | undefined): boolean {
    if (!row || row.state === "running" || row.state === "completed") return false;
    return !(this.#definitionOf(row.step)?.optional ?? false);
  }

  /**
   * The run's error each failed step makes (`step "<id>" <state>: <error>`),
   * in the definition's order: discarded, or cancelled, and not optional.
   */
  #failures(): string[] {
    const failures: string[] = [];
    for (const step of this.definition.steps) {
      const row = this.steps.get(step.id);
      if (!row || !this.#hasFailed(row)) continue;
      // A step cancelled because of another, or stopped with the run, is not the cause.
      const error = row.error ?? "";
      if (error.startsWith(UPSTREAM_FAILED) || STOPPED.some((s) => error.startsWith(s))) continue;
      failures.push(`step "${step.id}" ${row.state}: ${row.error ?? "no reason"}`);
    }
    return failures;
  }

  /**
   * Why the compensations ran, as they end: the run's error while it names a
   * failure of the run or the operator's cancel; else (the error of a
   * compensation, kept across the retry that finished them) the first
   * failure, else the cancel.
   */
  #cause(): string | null {
    const reason = this.options.cancel ?? this.run.cancelReason;
    const causes = [
      ...this.#failures(),
      ...(reason === null ? [] : [cancelError(reason)]),
    ];
    return this.error !== null && causes.includes(this.error)
      ? this.error
      : causes[0] ?? this.error;
  }

  #anyRunning(): boolean {
    for (const row of this.steps.values()) if (row.state === "running") return true;
    return false;
  }

  #resultsOf(ids: readonly string[]): Record<string, unknown> {
    const results: Record<string, unknown> = {};
    for (const id of ids) {
      const row = this.steps.get(id);
      if (!row) continue;
      results[id] = row.state === "completed" ? parse(row.result) : null;
    }
    return results;
  }
}

function parse(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/**
 * A step job's identity, its occurrence and idempotency key:
 * `<run>/<step>`, `<run>/<step>#<item>` for an item of a fanned-out step,
 * and `<run>/<step>:compensate` for a compensation.
 */
export function stepIdentity(
  run: number,
  step: string,
  item: number,
  kind: "step" | "compensation",
): string {
  const base = item >= 0 ? `${run}/${step}#${item}` : `${run}/${step}`;
  return kind === "compensation" ? `${base}:compensate` : base;
}

/**
 * The result a fanned-out step ends with: its items' results in item order
 * (null for an item that returned nothing), as JSON text.
 */
export function fanInResult(items: readonly { item: number; result: string | null }[]): string {
  const sorted = [...items].sort((a, b) => a.item - b.item);
  return `[${sorted.map((r) => r.result ?? "null").join(",")}]`;
}
