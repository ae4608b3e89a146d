/**
 * Jobs as the command line and the TUI show and act on them. The read
 * side: jobs matching a filter, one job (by id, or by an occurrence in any
 * spelling of its instant) with its attempts and audit trail, and why a
 * reference found none. The actions, each audited in the store transaction
 * that makes the change: retry, cancel or discard (with the preview of a
 * bulk action, which changes nothing), replay, and enqueue. A retried or
 * replayed schedule's job runs the definition `./definitions.ts` chooses.
 *
 * Job args and meta leave this module redacted: a view never hands out a
 * secret an operator did not need to see.
 *
 * @module
 */

import { buildJob, EnqueueError, type EnqueueOptions } from "../kernel/enqueue.ts";
import { redact, redactValue } from "../kernel/redact.ts";
import {
  type Attempt,
  FINAL_STATES,
  INCOMPLETE_STATES,
  type InsertResult,
  type Job,
  type JobDefinition,
  type JobState,
} from "../kernel/types.ts";
import { checkRunnerArgs } from "../runners/builtin_args.ts";
import { readOccurrenceRef } from "../schedule/occurrence_ref.ts";
import type { Schedule } from "../schedule/types.ts";
import type { AuditRow, JobFilter, JobMatch, Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import { chooseDefinition, type DefinitionChoice, type LiveSchedules } from "./definitions.ts";

// -------------------------------------------------------------------- views

/** A job with its attempts and its audit trail. */
export interface JobDetail {
  job: Job;
  attempts: Attempt[];
  audit: AuditRow[];
}

/** Jobs matching `filter`, newest first, args and meta redacted. */
export async function jobsView(store: Store, filter: JobFilter): Promise<Job[]> {
  return (await store.jobsList({ ...filter, desc: true })).map(redactJob);
}

/**
 * How many jobs match `filter`: every page of a listing with it, together;
 * with `atMost`, no more than that (counting stops there).
 */
export async function jobsMatching(
  store: Store,
  filter: JobMatch,
  options: { atMost?: number } = {},
): Promise<number> {
  return await store.jobsCountMatching(filter, options);
}

/**
 * Where a search of the newest `window` jobs starts: the id above which
 * they are (`JobFilter.above`), or null when the store holds no more than
 * that many ids and a search reads them all. A search can use no index, so
 * a face that searches on every view (the TUI's list, the console's) bounds
 * it so; `jobs ls --search` reads every job.
 */
export async function searchWindowAbove(store: Store, window: number): Promise<number | null> {
  const [newest] = await store.jobsList({ desc: true, limit: 1 });
  const [oldest] = await store.jobsList({ limit: 1 });
  if (!newest || !oldest) return null;
  const above = newest.id - window;
  return oldest.id > above ? null : above;
}

/**
 * The IANA zone of a schedule the schedules file declares, to read a local
 * time typed without offset; undefined when the file does not declare it.
 */
export type ZoneOf = (scheduleId: string) => string | undefined;

/** The zones of `schedules` (the live file's), as {@linkcode findJob} takes them. */
export function zonesOf(schedules: readonly Schedule[] | null | undefined): ZoneOf {
  return (id) => schedules?.find((s) => s.id === id)?.timezone;
}

/**
 * One job by id (all digits) or occurrence, or null when there is none. An
 * occurrence may be spelled as its identity (`nightly@2026-03-08T07:00:00.000Z`)
 * or as any spelling of the same instant (no milliseconds, an offset, a local
 * time in the schedule's zone: see {@linkcode readOccurrenceRef}).
 */
export async function findJob(store: Store, ref: string, zoneOf?: ZoneOf): Promise<Job | null> {
  if (/^\d+$/.test(ref)) {
    const id = Number(ref);
    return Number.isSafeInteger(id) ? await store.jobGet({ id }) : null;
  }
  const read = readOccurrenceRef(ref, zoneOf);
  for (const identity of new Set([ref, ...(read?.ids ?? [])])) {
    const found = await store.jobsList({ occurrence: identity, limit: 1 });
    // The identity is unique; the comparison guards against a store that
    // does not know the filter and would answer with any job.
    const job = found.find((j) => j.occurrence === identity);
    if (job) return job;
  }
  return null;
}

/**
 * Raised when a job or occurrence reference finds no job: `hint` is
 * {@linkcode occurrenceMiss}'s (why the instant cannot be read, the nearest
 * stored occurrences), kept apart so a face can cut `ref` without cutting it.
 */
export class JobNotFound extends Error {
  constructor(readonly ref: string, readonly hint: string) {
    super(`no job or occurrence "${ref}"${hint}`);
    this.name = "JobNotFound";
  }
}

/** How many stored occurrences of a schedule a near miss looks through, newest first. */
const NEAREST_SCAN = 5000;
/** How many occurrences a near miss lists on each side of the instant asked for. */
const NEAREST_EACH_SIDE = 3;

/**
 * Why `ref` found no job, for the error after `no job or occurrence "..."`:
 * why its instant could not be read, and the stored occurrences of its
 * schedule nearest the instant asked for (up to 3 before and 3 after; the
 * latest ones when the instant cannot be read), as `did you mean ...`.
 * Empty when `ref` is not shaped like an occurrence.
 */
export async function occurrenceMiss(
  store: Store,
  ref: string,
  zoneOf?: ZoneOf,
): Promise<string> {
  const read = readOccurrenceRef(ref, zoneOf);
  if (!read) return "";
  const why = "why" in read ? `: ${read.why}` : "";
  const prefix = `${read.scheduleId}@`;
  const stored = new Map<string, number>();
  let after: number | undefined;
  while (stored.size < NEAREST_SCAN) {
    const page = await store.jobsList({
      scheduleId: read.scheduleId,
      desc: true,
      limit: 500,
      ...(after === undefined ? {} : { after }),
    });
    for (const job of page) {
      const occurrence = job.occurrence;
      // Fan-out items (`<occurrence>#<key>`) are not occurrences of their own.
      if (occurrence === null || !occurrence.startsWith(prefix) || occurrence.includes("#")) {
        continue;
      }
      const instant = Date.parse(occurrence.slice(prefix.length));
      if (Number.isFinite(instant)) stored.set(occurrence, instant);
    }
    if (page.length < 500) break;
    after = page[page.length - 1]!.id;
  }
  if (stored.size === 0) {
    return `${why}; schedule "${read.scheduleId}" has no occurrence in the store`;
  }
  const all = [...stored].sort((a, b) => a[1] - b[1]);
  const target = read.instants[0];
  const near = target === undefined ? all.slice(-NEAREST_EACH_SIDE) : [
    ...all.filter(([, at]) => at < target).slice(-NEAREST_EACH_SIDE),
    ...all.filter(([, at]) => at >= target).slice(0, NEAREST_EACH_SIDE),
  ];
  const names = near.map(([id]) => JSON.stringify(id));
  const last = names.pop()!;
  const list = names.length > 0 ? `${names.join(", ")} or ${last}` : last;
  const which = target === undefined ? "latest" : "nearest";
  return `${why}; did you mean ${list}? (the ${which} stored occurrences)`;
}

/** A job with its attempts (oldest first) and its audit trail, or null when there is none. */
export async function jobDetail(
  store: Store,
  ref: string,
  zoneOf?: ZoneOf,
): Promise<JobDetail | null> {
  const job = await findJob(store, ref, zoneOf);
  if (!job) return null;
  return {
    job: redactJob(job),
    attempts: await store.attemptsList({ jobId: job.id }),
    audit: await store.auditList({ target: `job:${job.id}` }),
  };
}

/**
 * One job by id within a tenant's scope (null: installation-wide), or null
 * when there is none in it: the scope is part of the store's statement, so
 * another tenant's job is found exactly as a missing one is.
 */
export async function jobInScope(
  store: Store,
  id: number,
  tenant: string | null,
): Promise<Job | null> {
  if (!Number.isSafeInteger(id)) return null;
  const [job] = await store.jobsList({
    ids: [id],
    limit: 1,
    ...(tenant === null ? {} : { tenant }),
  });
  return job ?? null;
}

/**
 * One job by id or occurrence (in any spelling {@linkcode findJob} reads)
 * within a tenant's scope (null: installation-wide), or null when there is
 * none in it: as {@linkcode jobInScope}, the scope is part of the store's
 * statement, so another tenant's job is found exactly as a missing one is.
 */
export async function findJobInScope(
  store: Store,
  ref: string,
  tenant: string | null,
  zoneOf?: ZoneOf,
): Promise<Job | null> {
  if (/^\d+$/.test(ref)) return await jobInScope(store, Number(ref), tenant);
  const read = readOccurrenceRef(ref, zoneOf);
  if (!read) return null;
  for (const identity of new Set([ref, ...read.ids])) {
    const found = await store.jobsList({
      occurrence: identity,
      limit: 1,
      ...(tenant === null ? {} : { tenant }),
    });
    const job = found.find((j) => j.occurrence === identity);
    if (job) return job;
  }
  return null;
}

/** {@linkcode jobDetail} of a job by id within a tenant's scope (see {@linkcode jobInScope}). */
export async function jobDetailInScope(
  store: Store,
  id: number,
  tenant: string | null,
): Promise<JobDetail | null> {
  const job = await jobInScope(store, id, tenant);
  if (!job) return null;
  return {
    job: redactJob(job),
    attempts: await store.attemptsList({ jobId: job.id }),
    audit: await store.auditList({ target: `job:${job.id}` }),
  };
}

/** A copy of `job` whose args and meta carry no secret (see {@linkcode redactValue}). */
export function redactJob(job: Job): Job {
  return { ...job, args: redactValue(job.args), meta: redactValue(job.meta) as Job["meta"] };
}

// ------------------------------------------------------------------ actions

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
      ...(result.replaced ? { replaced: true } : {}),
    });
    return result;
  });
}

/** One job of {@linkcode enqueueJobs}: what {@linkcode enqueueJob} takes for one. */
export interface EnqueueEntry {
  worker: string;
  args: unknown;
  options: EnqueueOptions;
}

/** Raised when one job of a batch is refused: nothing of the batch was written. */
export class EnqueueEntryError extends EnqueueError {
  constructor(readonly index: number, readonly reason: string) {
    super(`job ${index}: ${reason}`);
    this.name = "EnqueueEntryError";
  }
}

/**
 * Enqueues `entries` in one transaction, results in their order, each
 * validated as {@linkcode enqueueJob} validates one and audited as it is
 * (`job.enqueue` on `job:<id>`). One job refused refuses them all
 * ({@linkcode EnqueueEntryError}, naming its index) before anything is
 * written: the batch is inserted whole or not at all.
 */
export async function enqueueJobs(
  store: Store,
  entries: readonly EnqueueEntry[],
  who: Actor,
): Promise<InsertResult[]> {
  const jobs = entries.map((entry, index) => {
    try {
      const job = buildJob(entry.worker, entry.args, entry.options, who.now);
      checkRunnerArgs(job.worker, job.args);
      return job;
    } catch (error) {
      if (error instanceof EnqueueError) throw new EnqueueEntryError(index, error.message);
      throw error;
    }
  });
  if (jobs.length === 0) return [];
  return await store.transaction(async (tx) => {
    const results = await tx.jobsInsert({ jobs, now: who.now });
    if (results.length !== jobs.length) {
      throw new Error(`enqueue: ${jobs.length} jobs inserted, ${results.length} results`);
    }
    for (const [index, result] of results.entries()) {
      await audit(tx, who, "job.enqueue", `job:${result.id}`, {
        worker: jobs[index]!.worker,
        queue: result.queue,
        duplicate: result.duplicate,
      });
    }
    return results;
  });
}
