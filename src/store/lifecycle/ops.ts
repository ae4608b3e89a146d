/**
 * Every primitive op the shared lifecycle modules yield (`jobs.ts`,
 * `schedules.ts`, `leaders.ts`, `work_items.ts`, and the workflow bookkeeping's), and the
 * two ways a store drives a generator of them: synchronously inside its
 * write transaction (SQLite) or awaiting each answer (PostgreSQL, which
 * also pipelines the ops that answer nothing; see its adapter).
 *
 * A new kind of row with a lifecycle of its own gets a file here: its ops,
 * what each answers, and its decisions as generators; then each adapter
 * answers its ops, one statement each.
 *
 * @module
 */

import type { Op } from "../../workflow/bookkeeping.ts";
import type { FlowOp } from "./flow.ts";
import type { JobOp } from "./jobs.ts";
import type { LeaderOp } from "./leaders.ts";
import type { ScheduleOp } from "./schedules.ts";
import type { WorkItemOp } from "./work_items.ts";

/** Any op a store answers for the shared lifecycle. */
export type StoreOp = JobOp | ScheduleOp | LeaderOp | FlowOp | Op | WorkItemOp;

/** A generator of {@linkcode StoreOp}s returning `R`. */
export type StoreOps<R> = Generator<StoreOp, R, unknown>;

/** The concern whose file in each adapter answers an op. */
export type OpConcern = "jobs" | "schedules" | "leaders" | "flow" | "workflows" | "workItems";

/**
 * Which concern answers each op: one table for both adapters, exhaustive,
 * so a new op cannot be added without naming the file that answers it.
 */
const CONCERN_OF: Readonly<Record<StoreOp["op"], OpConcern>> = {
  jobsExpired: "jobs",
  jobsLock: "jobs",
  runsLockOfJobs: "jobs",
  runsLock: "jobs",
  jobLeaseEnd: "jobs",
  jobsComplete: "jobs",
  jobRecord: "jobs",
  attemptsInsert: "jobs",
  attemptEnd: "jobs",
  schedulesCompleted: "jobs",
  jobStop: "jobs",
  jobRunAgain: "jobs",
  jobRedefine: "jobs",
  replayPending: "jobs",
  jobsStage: "jobs",
  nextDue: "jobs",
  jobsDelete: "jobs",
  attemptsDelete: "jobs",
  countsMove: "jobs",
  wake: "jobs",
  scheduleLock: "schedules",
  scheduleActive: "schedules",
  occurrencesInsert: "schedules",
  scheduleAdvance: "schedules",
  scheduleSet: "schedules",
  leaderTake: "leaders",
  leaderGet: "leaders",
  leaderRelease: "leaders",
  flowLock: "flow",
  flowRead: "flow",
  flowCursorSet: "flow",
  flowBuckets: "flow",
  flowTake: "flow",
  flowBucketsWrite: "flow",
  all: "workflows",
  stepsByJobs: "workflows",
  stepsFinish: "workflows",
  itemsEnded: "workflows",
  itemResults: "workflows",
  runsGet: "workflows",
  runByKey: "workflows",
  runInsert: "workflows",
  snapshots: "workflows",
  rows: "workflows",
  jobsInsert: "workflows",
  jobsCancel: "workflows",
  itemsCancel: "workflows",
  jobsRetry: "workflows",
  stepsInsert: "workflows",
  stepsReopen: "workflows",
  stepsDelete: "workflows",
  runsSet: "workflows",
  auditRecord: "workflows",
  itemsExpire: "workItems",
  itemUpsert: "workItems",
  itemGet: "workItems",
  itemTake: "workItems",
  itemNextTake: "workItems",
  itemRelease: "workItems",
  itemSkip: "workItems",
  itemReassign: "workItems",
  itemDone: "workItems",
  itemJobInsert: "workItems",
  itemRescore: "workItems",
  itemJobSet: "workItems",
  itemEventsInsert: "workItems",
};

/** Whether a schedules file answers `op`. */
export function isScheduleOp(op: StoreOp): op is ScheduleOp {
  return CONCERN_OF[op.op] === "schedules";
}

/** Whether a nodes-and-leaders file answers `op`. */
export function isLeaderOp(op: StoreOp): op is LeaderOp {
  return CONCERN_OF[op.op] === "leaders";
}

/** Whether a flow file answers `op` (a limited claim's). */
export function isFlowOp(op: StoreOp): op is FlowOp {
  return CONCERN_OF[op.op] === "flow";
}

/** Whether a workflows file answers `op` (the workflow bookkeeping's). */
export function isWorkflowOp(op: StoreOp): op is Op {
  return CONCERN_OF[op.op] === "workflows";
}

/** Whether a work-items file answers `op`. */
export function isWorkItemOp(op: StoreOp): op is WorkItemOp {
  return CONCERN_OF[op.op] === "workItems";
}

/** Drives `ops` with a synchronous store (SQLite). */
export function runStoreOps<R>(ops: StoreOps<R>, answer: (op: StoreOp) => unknown): R {
  let next = ops.next();
  while (!next.done) next = ops.next(answer(next.value));
  return next.value;
}
