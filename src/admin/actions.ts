/**
 * Operator actions shared by the command line and the TUI: each changes
 * the store and records who did it and why in `audit`, both in one store
 * transaction (an action is never left without its audit row, nor an audit
 * row without its action), and says what it changed. Previews change
 * nothing and open no transaction.
 *
 * @module
 */

import { buildJob, type EnqueueOptions } from "../kernel/enqueue.ts";
import { redact } from "../kernel/redact.ts";
import {
  FINAL_STATES,
  INCOMPLETE_STATES,
  type InsertResult,
  type Job,
  type JobDefinition,
  type JobState,
} from "../kernel/types.ts";
import { checkRunnerArgs } from "../runners/builtin_args.ts";
import { occurrenceId } from "../schedule/occurrences.ts";
import { occurrenceJob } from "../schedule/plan.ts";
import type { Schedule } from "../schedule/types.ts";
import type { Store, StoreTx } from "../store/store.ts";
import { DEFAULT_RETENTION, pruneJobs, type PrunerOptions } from "../runtime/pruner.ts";
import { chooseDefinition, type DefinitionChoice, type LiveSchedules } from "./definitions.ts";
import { findJob, JobNotFound, occurrenceMiss, type ZoneOf, zonesOf } from "./views.ts";

/** Who acts, why, and when (from the caller's clock). */
export interface Actor {
  actor: string;
  reason: string | null;
  now: number;
}

/** Pauses or resumes a queue for every process on the store. */
export async function setQueuePaused(
  store: Store,
  queue: string,
  paused: boolean,
  who: Actor,
): Promise<{ queue: string; paused: boolean; was: boolean }> {
  return await store.transaction(async (tx) => {
    const was = (await tx.queuesList()).find((q) => q.name === queue)?.paused ?? false;
    await tx.queuePause({ name: queue, paused, now: who.now });
    await audit(tx, who, paused ? "queue.pause" : "queue.resume", `queue:${queue}`, { was });
    return { queue, paused, was };
  });
}

/**
 * Disables or enables a schedule. Stored, so it survives restarts and
 * reloads of `schedules.yaml`. An occurrence already claimed finishes;
 * nothing new is planned while disabled, and enabling applies the misfire
 * policy to the gap. `declared` says whether the current file declares it:
 * a schedule must be declared or already known to the store.
 */
export async function setScheduleEnabled(
  store: Store,
  id: string,
  enabled: boolean,
  who: Actor,
  declared: { hash: string; tenant: string | null } | null,
): Promise<{ id: string; enabled: boolean; was: boolean }> {
  return await store.transaction(async (tx) => {
    const [row] = await tx.schedulesList({ ids: [id] });
    if (!row && !declared) throw new Error(`no schedule "${id}" in the file or the store`);
    if (!row && declared) {
      await tx.schedulesSync({ schedules: [{ id, ...declared }], now: who.now });
    }
    const was = row?.enabled ?? true;
    await tx.scheduleSetEnabled({
      id,
      enabled,
      reason: who.reason,
      actor: who.actor,
      now: who.now,
    });
    await audit(tx, who, enabled ? "schedule.enable" : "schedule.disable", `schedule:${id}`, {
      was,
    });
    return { id, enabled, was };
  });
}

// ------------------------------------------------------------- job actions

/** What an operator may do to jobs in bulk or one by one. */
export type JobAction = "retry" | "cancel" | "discard";

/** The states each action changes; a job in another state is skipped. */
const ACTS_ON: Record<JobAction, readonly JobState[]> = {
  retry: ["scheduled", "retryable", ...FINAL_STATES],
  cancel: INCOMPLETE_STATES,
  discard: INCOMPLETE_STATES,
};

/**
 * Where a retry or replay takes the definition to run: the live schedules
 * (null when no file was read), unless `asPlanned`.
 */
export interface DefinitionSource {
  live: LiveSchedules | null;
  asPlanned: boolean;
  /**
   * The schedules' zones, to read an occurrence typed as a local time
   * without offset (see {@linkcode findJob}). @default the live file's
   */
  zoneOf?: ZoneOf;
}

/** The zones `source` reads a local-time occurrence in: its own, else the live file's. */
function sourceZones(source: DefinitionSource): ZoneOf {
  return source.zoneOf ?? zonesOf(source.live?.schedules);
}

/** Every job runs the definition it holds: for actions that change no definition. */
export const AS_PLANNED: DefinitionSource = Object.freeze({ live: null, asPlanned: true });

/** A job an action left alone, and why (a phrase: `is executing`). */
export interface Skipped {
  job: Job;
  why: string;
}

/**
 * Splits `jobs` into those `action` would change and those it would skip,
 * without changing anything: the preview of a bulk action. For a retry,
 * `definitions` says which definition each schedule's job would run (by job
 * id); other jobs always run their own.
 */
export function planJobAction(
  action: JobAction,
  jobs: Job[],
  source: DefinitionSource = AS_PLANNED,
): { act: Job[]; skip: Skipped[]; definitions: Map<number, DefinitionChoice> } {
  const act: Job[] = [];
  const skip: Skipped[] = [];
  const definitions = new Map<number, DefinitionChoice>();
  for (const job of jobs) {
    if (!ACTS_ON[action].includes(job.state)) {
      skip.push({ job, why: skipReason(action, job.state) });
      continue;
    }
    act.push(job);
    if (action === "retry" && job.scheduleId !== null) {
      definitions.set(job.id, chooseDefinition(job, source.live, source.asPlanned).choice);
    }
  }
  return { act, skip, definitions };
}

function skipReason(action: JobAction, state: JobState): string {
  if (action === "retry" && state === "available") return "is already available";
  if (action === "retry") return "is executing (replay --force breaks its lease)";
  return `is already ${state}`;
}

/**
 * Retries, cancels or discards `jobs` (as read for the preview) and records
 * one audit row per job changed (`job.retry`, `job.cancel`, `job.discard`
 * on `job:<id>`), in one transaction. A job whose state changed since it
 * was read and no longer qualifies is skipped, not forced. A retried
 * schedule's job runs the definition `source` chooses (the live one by
 * default).
 */
export async function applyJobAction(
  store: Store,
  action: JobAction,
  jobs: Job[],
  who: Actor,
  source: DefinitionSource = AS_PLANNED,
): Promise<
  { changed: Job[]; skipped: Skipped[]; definitions: Map<number, DefinitionChoice> }
> {
  const { act, skip } = planJobAction(action, jobs);
  const ids = act.map((job) => job.id);
  const definitions = new Map<number, DefinitionChoice>();
  const rewrites = new Map<number, JobDefinition>();
  if (action === "retry") {
    for (const job of act) {
      if (job.scheduleId === null) continue;
      const { choice, definition } = chooseDefinition(job, source.live, source.asPlanned);
      definitions.set(job.id, choice);
      if (definition) rewrites.set(job.id, definition);
    }
  }
  const reason = redact(
    who.reason ?? `${action === "cancel" ? "cancelled" : "discarded"} by ${who.actor}`,
  );
  const done = ids.length === 0 ? new Set<number>() : await store.transaction(async (tx) => {
    const done = new Set(
      action === "retry"
        ? await tx.jobsRetry({ ids, now: who.now, definitions: rewrites })
        : action === "cancel"
        ? await tx.jobsCancel({ ids, now: who.now, reason, actor: who.actor })
        : await tx.jobsDiscard({ ids, now: who.now, reason, actor: who.actor }),
    );
    for (const job of act) {
      if (!done.has(job.id)) continue;
      const choice = definitions.get(job.id);
      await audit(tx, who, `job.${action}`, `job:${job.id}`, {
        was: job.state,
        queue: job.queue,
        worker: job.worker,
        occurrence: job.occurrence,
        ...(choice ? { definition: choice.hash, runs: choice.runs } : {}),
      });
    }
    return done;
  });
  const changed = act.filter((job) => done.has(job.id));
  const raced = act.filter((job) => !done.has(job.id))
    .map((job) => ({ job, why: "changed state meanwhile" }));
  return { changed, skipped: [...skip, ...raced], definitions };
}

/** What a replay did. */
export interface ReplayResult {
  /** The job as it was before the replay. */
  job: Job;
  /** False when the job is executing and `force` was not given: nothing changed. */
  replayed: boolean;
  /** The state the job was in. */
  was: JobState;
  /** Which definition the replay runs. */
  definition: DefinitionChoice;
}

/**
 * Replays one job (usually an occurrence): a new attempt of the same row and
 * occurrence identity, whatever its state, recorded with kind `replay` and
 * who and why. An executing job is refused unless `force`, which breaks the
 * running attempt's lease. A schedule's job runs the definition `source`
 * chooses (the live one by default). Audited as `job.replay` on `job:<id>`.
 */
export async function replayJob(
  store: Store,
  ref: string,
  who: Actor & { reason: string },
  force: boolean,
  source: DefinitionSource = AS_PLANNED,
): Promise<ReplayResult> {
  const zoneOf = sourceZones(source);
  const job = await findJob(store, ref, zoneOf);
  if (!job) {
    throw new JobNotFound(ref, await occurrenceMiss(store, ref, zoneOf));
  }
  const { choice, definition } = chooseDefinition(job, source.live, source.asPlanned);
  const result = await store.transaction(async (tx) => {
    const result = await tx.jobReplay({
      id: job.id,
      now: who.now,
      actor: who.actor,
      reason: redact(who.reason),
      force,
      ...(definition ? { definition } : {}),
    });
    if (result?.replayed) {
      await audit(tx, who, "job.replay", `job:${job.id}`, {
        occurrence: job.occurrence,
        was: result.was,
        force,
        definition: choice.hash,
        runs: choice.runs,
      });
    }
    return result;
  });
  if (!result) throw new Error(`job ${job.id} no longer exists`);
  return { job, replayed: result.replayed, was: result.was, definition: choice };
}

/** Which definition replaying `ref` would run, without changing anything (the preview). */
export async function previewReplay(
  store: Store,
  ref: string,
  source: DefinitionSource,
): Promise<{ job: Job; definition: DefinitionChoice } | null> {
  const job = await findJob(store, ref, sourceZones(source));
  if (!job) return null;
  return { job, definition: chooseDefinition(job, source.live, source.asPlanned).choice };
}

// ---------------------------------------------------------- schedules, enqueue

/** Raised when a manual schedule's guard refuses a run; nothing was written. */
export class GuardRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GuardRefused";
  }
}

/**
 * Runs a schedule now: one occurrence built as the planner builds them, with
 * the identity `<id>@<now>` and `meta.manual = true`. A `manual: true`
 * schedule runs only where `environment` equals its `runs_where`, and only
 * with a reason. Audited as `schedule.run` on `schedule:<id>`.
 */
export async function runScheduleNow(
  store: Store,
  schedule: Schedule,
  who: Actor,
  environment: string | null,
): Promise<InsertResult & { occurrence: string }> {
  if (schedule.rhythm.kind === "manual") {
    if (environment !== schedule.runsWhere) {
      throw new GuardRefused(
        `schedule "${schedule.id}" runs only where the environment is ` +
          `"${schedule.runsWhere}", and this is ${
            environment === null ? "not set" : `"${environment}"`
          }`,
      );
    }
    if (!who.reason) {
      throw new GuardRefused(`schedule "${schedule.id}" is manual: a reason is required`);
    }
  }
  const occurrence = occurrenceId(schedule.id, who.now);
  const planned = occurrenceJob(schedule, {
    at: who.now,
    occurrence,
    local: new Date(who.now).toISOString(),
    note: "manual",
  });
  // The daemon that claims it checks runsWhere against its --environment.
  const meta = {
    ...JSON.parse(planned.meta),
    manual: true,
    ...(schedule.runsWhere === undefined ? {} : { runsWhere: schedule.runsWhere }),
  };
  return await store.transaction(async (tx) => {
    const [result] = await tx.jobsInsert({
      jobs: [{ ...planned, meta: JSON.stringify(meta) }],
      now: who.now,
    });
    if (!result) throw new Error(`schedule "${schedule.id}": the insert returned nothing`);
    if (result.duplicate) {
      throw new Error(`occurrence "${occurrence}" already exists as job ${result.id}`);
    }
    await audit(tx, who, "schedule.run", `schedule:${schedule.id}`, {
      job: result.id,
      occurrence,
      trigger: schedule.rhythm.kind === "manual" ? "manual-schedule" : "run-now",
      environment,
    });
    return { ...result, occurrence };
  });
}

/**
 * Enqueues one job of `worker` (a name: it may run in another process),
 * validated as the library's enqueue validates (`EnqueueError`), and audits
 * it (`job.enqueue`, also when refused as a duplicate of an existing job).
 */
export async function enqueueJob(
  store: Store,
  worker: string,
  args: unknown,
  options: EnqueueOptions,
  who: Actor,
): Promise<InsertResult> {
  const job = buildJob(worker, args, options, who.now);
  checkRunnerArgs(job.worker, job.args);
  return await store.transaction(async (tx) => {
    const [result] = await tx.jobsInsert({ jobs: [job], now: who.now });
    if (!result) throw new Error(`enqueue "${worker}": the insert returned nothing`);
    await audit(tx, who, "job.enqueue", `job:${result.id}`, {
      worker,
      queue: result.queue,
      duplicate: result.duplicate,
    });
    return result;
  });
}

/** Retention by final state, in ms; missing states keep the pruner's default. */
export type Retention = Partial<Record<"completed" | "cancelled" | "discarded", number>>;

/**
 * Deletes final jobs older than their retention now, as the daemon's pruner
 * does (schedules with a retention of their own keep to it), or with `dryRun`
 * only counts them. Returns how many. The one action whose audit row has a
 * transaction of its own, after the prune's: the pruner commits batch by
 * batch, so that a large prune never holds the write lock for long.
 */
export async function pruneNow(
  store: Store,
  who: Actor,
  options: { retention: Retention; schedules: PrunerOptions["schedules"]; dryRun: boolean },
): Promise<{ deleted: number; dryRun: boolean }> {
  const now = who.now;
  const retention = { ...DEFAULT_RETENTION, ...options.retention };
  const schedules = options.schedules ?? [];
  if (options.dryRun) {
    const count = await store.jobsPrunable({
      before: {
        completed: now - retention.completed,
        cancelled: now - retention.cancelled,
        discarded: now - retention.discarded,
      },
      schedules: schedules.map((s) => ({ scheduleId: s.id, before: now - s.retentionMs })),
    });
    return { deleted: count, dryRun: true };
  }
  const { deleted } = await pruneJobs(store, now, {
    retention,
    schedules,
    maxBatches: Number.MAX_SAFE_INTEGER,
  });
  await audit(store, who, "store.prune", "store", { deleted, retentionMs: retention });
  return { deleted, dryRun: false };
}

/**
 * One `audit` row for an action `who` took on `target`; the reason is stored
 * redacted. Written by `store`, or inside a transaction by its `tx`.
 */
export function audit(
  store: Pick<StoreTx, "auditRecord">,
  who: Actor,
  action: string,
  target: string,
  details: Record<string, unknown>,
): Promise<void> {
  return store.auditRecord({
    at: who.now,
    actor: who.actor,
    action,
    target,
    reason: who.reason === null ? null : redact(who.reason),
    details,
  });
}
