/**
 * The job lifecycle, written once for every store: which state a job goes
 * to when its node records an attempt, when its lease expires, when an
 * operator cancels, discards, retries or replays it, when it becomes due
 * or is pruned; the error texts; which moves the counts take; when an
 * attempt row is written for an attempt its node never recorded; when the
 * workflow bookkeeping hears of an end; which queues wake. It knows no SQL.
 *
 * Each function is a generator of {@linkcode JobOp}s (and of the workflow
 * bookkeeping's {@linkcode Op}s, which it delegates to), as in
 * `src/workflow/bookkeeping.ts`: each op is one primitive read or write that
 * an adapter answers with one statement (SQLite's batching of a large
 * batch into sized pieces is how it answers one op). A row lock is a no-op
 * where the store has none (SQLite holds the write lock for the whole
 * transaction). The store drives the generator inside one write transaction
 * (see `ops.ts`), synchronously on SQLite and with `await` on PostgreSQL.
 *
 * @module
 */

import type { JobDefinition, JobResult, JobState } from "../../kernel/types.ts";
import {
  jobsEnded,
  type Op,
  type Outcome,
  type StepEnd,
  stepEndsOf,
} from "../../workflow/bookkeeping.ts";
import type { JobsStopParams, Lease, RescuedJob } from "../store.ts";
import type { RecordReport } from "../../kernel/types.ts";

/** A final state. */
export type FinalState = "completed" | "cancelled" | "discarded";

/** An executing job as the lifecycle reads it: whose lease, at which fence, which attempt. */
export interface LeasedJob {
  id: number;
  queue: string;
  state: JobState;
  attempt: number;
  maxAttempts: number;
  fence: number;
  /** The node holding (or that held) the lease; null before any claim. */
  attemptedBy: string | null;
  /** When that attempt started; null before any claim. */
  attemptedAt: number | null;
}

/** One job's move between states, for the counts (`to` null: deleted). */
export interface CountMove {
  id: number;
  queue: string;
  from: JobState;
  to: JobState | null;
  /** The queue it is in after the move, when it changed (a retry with another definition). */
  toQueue?: string;
}

/** The final jobs a prune deletes: up to `limit` of the jobs matched. */
export type PruneTarget =
  | { state: FinalState; before: number; except: string[] }
  | { scheduleId: string; before: number };

/**
 * One primitive read or write of jobs (and their attempts, replays, counts
 * and schedules), and what the store answers ({@linkcode JobOpAnswers}).
 */
export type JobOp =
  /** Executing jobs whose lease expired before `now`, oldest lease first (locked, skipping locked ones). */
  | { op: "jobsExpired"; now: number; limit: number }
  /** The jobs with these ids, in id order, locked for this transaction. */
  | { op: "jobsLock"; ids: number[] }
  /** Locks the workflow runs whose steps these jobs are, in id order, before their jobs. */
  | { op: "runsLockOfJobs"; jobIds: number[] }
  /** Locks these workflow runs, in id order, before their jobs. */
  | { op: "runsLock"; runIds: number[] }
  /**
   * Ends the lease `lease` held (unless it was lost meanwhile): the job
   * becomes `to`; a final state clears its unique key (unless uniqueness
   * covers all states) and stamps its time; `error` is appended to its
   * errors. Answers whether the lease was still held.
   */
  | {
    op: "jobLeaseEnd";
    lease: Lease & { node: string };
    to: "available" | "discarded";
    now: number;
    error: string;
  }
  /**
   * Completes the leased jobs of `results` (each still held by `node` at its
   * fence); answers those written, with their queues.
   */
  | { op: "jobsComplete"; node: string; now: number; results: JobResult[] }
  /**
   * Writes a result other than a completion for a job `node` still holds;
   * answers its queue and new state, or null when the lease was lost.
   */
  | {
    op: "jobRecord";
    node: string;
    now: number;
    result: Exclude<JobResult, { outcome: "completed" }>;
  }
  /** Writes the attempt rows of results `node` recorded now (with the pending replay each was). */
  | { op: "attemptsInsert"; node: string; now: number; results: JobResult[] }
  /** Writes the attempt row of an attempt that someone other than its node ended. */
  | {
    op: "attemptEnd";
    job: LeasedJob;
    now: number;
    outcome: "orphaned" | "cancelled" | "discarded";
    error: string;
  }
  /** Schedules whose occurrences these completed jobs are: their last completion is now. */
  | { op: "schedulesCompleted"; jobIds: number[]; now: number }
  /** An operator's cancel or discard of a job that is not final; answers whether it changed. */
  | { op: "jobStop"; id: number; to: "cancelled" | "discarded"; now: number; error: string }
  /**
   * Makes a job runnable now, with an attempt more if they are used up, when
   * its state is one of `from`; answers its queue and fence, or null.
   */
  | { op: "jobRunAgain"; id: number; from: readonly JobState[]; now: number }
  /** Gives a job another definition (after a retry or replay that runs it). */
  | { op: "jobRedefine"; id: number; definition: JobDefinition }
  /** The replay waiting for the job's next claim (after the fence of its latest claim). */
  | { op: "replayPending"; id: number; after: number; actor: string; reason: string; now: number }
  /** Makes up to `limit` due scheduled or retryable jobs available; answers each with the state it left. */
  | { op: "jobsStage"; now: number; limit: number }
  /** When the next scheduled or retryable job is due, or null. */
  | { op: "nextDue" }
  /** Deletes final jobs (oldest first, locked ones skipped); answers each with its queue and state. */
  | { op: "jobsDelete"; target: PruneTarget; limit: number }
  /** Deletes the attempts and replays of jobs just deleted. */
  | { op: "attemptsDelete"; jobIds: number[] }
  /** Moves in the job counts, written with this transaction. */
  | { op: "countsMove"; moves: CountMove[] }
  /** Tells every listening node that jobs of these queues became runnable. */
  | { op: "wake"; queues: string[] };

/** What the store answers to each {@linkcode JobOp}. */
export interface JobOpAnswers {
  jobsExpired: LeasedJob[];
  jobsLock: LeasedJob[];
  runsLockOfJobs: void;
  runsLock: void;
  jobLeaseEnd: boolean;
  jobsComplete: { id: number; queue: string }[];
  jobRecord: { queue: string; state: JobState } | null;
  attemptsInsert: void;
  attemptEnd: void;
  schedulesCompleted: void;
  jobStop: boolean;
  jobRunAgain: { queue: string; fence: number } | null;
  jobRedefine: void;
  replayPending: void;
  jobsStage: { id: number; queue: string; was: JobState }[];
  nextDue: number | null;
  jobsDelete: { id: number; queue: string; state: JobState }[];
  attemptsDelete: void;
  countsMove: void;
  wake: void;
}

/** A generator of {@linkcode JobOp}s (and of the workflow bookkeeping's ops) returning `R`. */
export type JobOps<R> = Generator<JobOp | Op, R, unknown>;

/** Yields `op` and types the store's answer. */
function* ask<O extends JobOp>(op: O): JobOps<JobOpAnswers[O["op"]]> {
  return (yield op) as JobOpAnswers[O["op"]];
}

/** The error a job's attempt ends with when its node's lease expired. */
export function orphanedError(node: string): string {
  return `orphaned: lease of ${node} expired`;
}

/** The states an operator's retry takes a job from. */
const RETRYABLE_FROM: readonly JobState[] = [
  "scheduled",
  "retryable",
  "completed",
  "cancelled",
  "discarded",
];

/**
 * Records what `node` reports of the attempts it ran: each result whose
 * lease `node` still holds at its fence is written with its attempt row;
 * the others are lost (another node has the job now, or an operator ended
 * it). Steps' jobs that ended advance their runs (locked first, in id
 * order, so two batches ending steps of the same runs cannot deadlock).
 */
export function* recordResults(
  params: { node: string; now: number; results: JobResult[] },
): JobOps<RecordReport> {
  const { node, now, results } = params;
  const recorded: JobResult[] = [];
  const runIds = results.filter((r) => r.workflow !== undefined).map((r) => r.workflow!);
  if (runIds.length > 0) yield* ask({ op: "runsLock", runIds });
  const moves: CountMove[] = [];
  const done = results.filter((r) => r.outcome === "completed");
  if (done.length > 0) {
    const written = yield* ask({ op: "jobsComplete", node, now, results: done });
    const ids = new Set<number>();
    for (const { id, queue } of written) {
      ids.add(id);
      moves.push({ id, queue, from: "executing", to: "completed" });
    }
    for (const r of done) if (ids.has(r.id)) recorded.push(r);
  }
  for (const r of results) {
    if (r.outcome === "completed") continue;
    const row = yield* ask({ op: "jobRecord", node, now, result: r });
    if (row === null) continue;
    moves.push({ id: r.id, queue: row.queue, from: "executing", to: row.state });
    recorded.push(r);
  }
  if (moves.length > 0) yield* ask({ op: "countsMove", moves });
  if (recorded.length > 0) yield* ask({ op: "attemptsInsert", node, now, results: recorded });
  const occurrences = recorded
    .filter((r) => r.occurrence && r.workflow === undefined && r.outcome === "completed")
    .map((r) => r.id);
  if (occurrences.length > 0) yield* ask({ op: "schedulesCompleted", jobIds: occurrences, now });
  const ends = stepEndsOf(recorded, node);
  const queues = ends.length > 0 ? (yield* jobsEnded({ ends, now })).queues : [];
  const kept = new Set(recorded.map((r) => r.id));
  const report: RecordReport = {
    recorded: recorded.map((r) => r.id),
    lost: results.filter((r) => !kept.has(r.id)).map((r) => r.id),
  };
  if (queues.length > 0) report.queues = queues;
  return report;
}

/** What a rescue did. */
export interface RescueReport {
  rescued: number;
  discarded: number;
  queues: string[];
  jobs: RescuedJob[];
}

/**
 * Rescues jobs whose lease expired (their node died or was cut off): each
 * runs again while it has attempts left and is discarded otherwise, with
 * the error `orphaned: lease of <node> expired` and an attempt row for the
 * attempt its node never recorded. A discarded step ends its run's step.
 */
export function* rescueJobs(params: { now: number; limit: number }): JobOps<RescueReport> {
  const { now } = params;
  const expired = yield* ask({ op: "jobsExpired", now, limit: params.limit });
  let rescued = 0;
  let discarded = 0;
  const queues = new Set<string>();
  const ends: StepEnd[] = [];
  const jobs: RescuedJob[] = [];
  const moves: CountMove[] = [];
  for (const job of expired) {
    const node = String(job.attemptedBy);
    const error = orphanedError(node);
    const to = job.attempt < job.maxAttempts ? "available" : "discarded";
    const lease = { id: job.id, fence: job.fence, node };
    if (!(yield* ask({ op: "jobLeaseEnd", lease, to, now, error }))) continue;
    moves.push({ id: job.id, queue: job.queue, from: "executing", to });
    yield* ask({ op: "attemptEnd", job, now, outcome: "orphaned", error });
    jobs.push({
      id: job.id,
      queue: job.queue,
      node,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      state: to,
    });
    if (to === "available") {
      rescued++;
      queues.add(job.queue);
    } else {
      discarded++;
      ends.push({ jobId: job.id, state: "discarded", value: null, error });
    }
  }
  if (moves.length > 0) yield* ask({ op: "countsMove", moves });
  const next: Outcome = yield* jobsEnded({ ends, now });
  for (const q of next.queues) queues.add(q);
  if (queues.size > 0) yield* ask({ op: "wake", queues: [...queues] });
  return { rescued, discarded, queues: [...queues], jobs };
}

/**
 * An operator's cancel or discard of the jobs that are not final; answers
 * the ids changed. The runs whose steps they are, then the jobs, are
 * locked in id order (two operators stopping overlapping sets cannot
 * deadlock), so the state read is the state changed. An attempt in flight
 * ends here: its node finds the lease gone and records nothing, so the
 * operator's action writes the attempt row.
 */
export function* stopJobs(
  to: "cancelled" | "discarded",
  params: JobsStopParams,
): JobOps<number[]> {
  if (params.ids.length === 0) return [];
  const { now, reason } = params;
  yield* ask({ op: "runsLockOfJobs", jobIds: params.ids });
  const targets = yield* ask({ op: "jobsLock", ids: params.ids });
  const byId = new Map(targets.map((job) => [job.id, job]));
  const stopped: number[] = [];
  const ends: StepEnd[] = [];
  const moves: CountMove[] = [];
  for (const id of params.ids) {
    const job = byId.get(id);
    if (!job) continue;
    if (!(yield* ask({ op: "jobStop", id, to, now, error: reason }))) continue;
    moves.push({ id, queue: job.queue, from: job.state, to });
    stopped.push(id);
    if (job.state === "executing") {
      yield* ask({ op: "attemptEnd", job, now, outcome: to, error: reason });
    }
    // A second id of the same job in the list finds it final now.
    byId.set(id, { ...job, state: to });
    ends.push({ jobId: id, state: to, value: null, error: reason, by: params.actor });
  }
  if (moves.length > 0) yield* ask({ op: "countsMove", moves });
  yield* jobsEnded({ ends, now });
  return stopped;
}

/**
 * An operator's retry: each job that waits or is final runs again now
 * (with another definition where `definitions` gives one); answers the ids
 * changed.
 */
export function* retryJobs(params: {
  ids: number[];
  now: number;
  definitions?: ReadonlyMap<number, JobDefinition>;
}): JobOps<number[]> {
  if (params.ids.length === 0) return [];
  const targets = yield* ask({ op: "jobsLock", ids: params.ids });
  const byId = new Map(targets.map((job) => [job.id, job]));
  const changed: number[] = [];
  const queues: string[] = [];
  const moves: CountMove[] = [];
  for (const id of params.ids) {
    const job = byId.get(id);
    if (!job) continue;
    const again = yield* ask({ op: "jobRunAgain", id, from: RETRYABLE_FROM, now: params.now });
    if (again === null) continue;
    changed.push(id);
    const definition = params.definitions?.get(id);
    if (definition) yield* ask({ op: "jobRedefine", id, definition });
    const queue = definition?.queue ?? again.queue;
    moves.push({ id, queue: job.queue, from: job.state, to: "available", toQueue: queue });
    byId.set(id, { ...job, state: "available", queue });
    queues.push(queue);
  }
  if (moves.length > 0) yield* ask({ op: "countsMove", moves });
  if (queues.length > 0) yield* ask({ op: "wake", queues: [...new Set(queues)] });
  return changed;
}

/**
 * An operator's replay of one job, whatever its state: it runs again now
 * (an executing job only with `force`: its running attempt ends here,
 * cancelled, and its node finds the lease gone), and its next attempt row
 * names the replay. Answers null for no such job.
 */
export function* replayJob(params: {
  id: number;
  now: number;
  actor: string;
  reason: string;
  force: boolean;
  definition?: JobDefinition;
}): JobOps<{ replayed: boolean; was: JobState } | null> {
  const { id, now } = params;
  const [job] = yield* ask({ op: "jobsLock", ids: [id] });
  if (!job) return null;
  const was = job.state;
  if (was === "executing") {
    if (!params.force) return { replayed: false, was };
    const error = `replayed by ${params.actor}: ${params.reason}`;
    yield* ask({ op: "attemptEnd", job, now, outcome: "cancelled", error });
  }
  const again = yield* ask({ op: "jobRunAgain", id, from: [was], now });
  if (again === null) return { replayed: false, was };
  if (params.definition) yield* ask({ op: "jobRedefine", id, definition: params.definition });
  const queue = params.definition?.queue ?? job.queue;
  yield* ask({
    op: "countsMove",
    moves: [{ id, queue: job.queue, from: was, to: "available", toQueue: queue }],
  });
  // The pending replay records the fence of the job's latest claim, so the
  // next claim's attempt row (fence above it) is the replay's.
  yield* ask({
    op: "replayPending",
    id,
    after: again.fence,
    actor: params.actor,
    reason: params.reason,
    now,
  });
  yield* ask({ op: "wake", queues: [queue] });
  return { replayed: true, was };
}

/** Makes due jobs available; answers how many, their queues, and when the next is due. */
export function* stageJobs(
  params: { now: number; limit: number },
): JobOps<{ staged: number; queues: string[]; nextAt: number | null }> {
  const rows = yield* ask({ op: "jobsStage", now: params.now, limit: params.limit });
  if (rows.length > 0) {
    const moves = rows.map((r): CountMove => ({
      id: r.id,
      queue: r.queue,
      from: r.was,
      to: "available",
    }));
    yield* ask({ op: "countsMove", moves });
  }
  const nextAt = yield* ask({ op: "nextDue" });
  const queues = [...new Set(rows.map((r) => r.queue))];
  if (queues.length > 0) yield* ask({ op: "wake", queues });
  return { staged: rows.length, queues, nextAt };
}

/**
 * Deletes up to `limit` final jobs that became final before the cutoffs,
 * each state's oldest first, except occurrences of the schedules in
 * `except`, with their attempts and replays; answers how many.
 */
export function* pruneJobs(params: {
  before: Partial<Record<FinalState, number>>;
  limit: number;
  except?: string[];
}): JobOps<number> {
  let left = params.limit;
  let deleted = 0;
  for (const [state, before] of Object.entries(params.before)) {
    if (left <= 0 || before === undefined) continue;
    const target = { state: state as FinalState, before, except: params.except ?? [] };
    const n = yield* deleteJobs(target, left);
    deleted += n;
    left -= n;
  }
  return deleted;
}

/** Deletes up to `limit` of one schedule's final occurrences, oldest first; answers how many. */
export function* pruneScheduleJobs(
  params: { scheduleId: string; before: number; limit: number },
): JobOps<number> {
  return yield* deleteJobs({ scheduleId: params.scheduleId, before: params.before }, params.limit);
}

function* deleteJobs(target: PruneTarget, limit: number): JobOps<number> {
  const rows = yield* ask({ op: "jobsDelete", target, limit });
  if (rows.length === 0) return 0;
  const moves = rows.map((r): CountMove => ({ id: r.id, queue: r.queue, from: r.state, to: null }));
  yield* ask({ op: "countsMove", moves });
  yield* ask({ op: "attemptsDelete", jobIds: rows.map((r) => r.id) });
  return rows.length;
}
