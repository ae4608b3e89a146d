/**
 * The words of the queue, shared by the kernel, the stores and the runtime.
 *
 * @module
 */

/** Where a job is in its life; see docs/ARCHITECTURE.md for the diagram. */
export type JobState =
  | "scheduled"
  | "available"
  | "executing"
  | "retryable"
  | "completed"
  | "cancelled"
  | "discarded";

/** Every state, in the order a job usually passes through them. */
export const JOB_STATES: readonly JobState[] = [
  "scheduled",
  "available",
  "executing",
  "retryable",
  "completed",
  "cancelled",
  "discarded",
];

/** States a job never leaves on its own; rows stay until the pruner removes them. */
export const FINAL_STATES: readonly JobState[] = ["completed", "cancelled", "discarded"];

/** States in which a job still has work ahead of it. */
export const INCOMPLETE_STATES: readonly JobState[] = [
  "scheduled",
  "available",
  "executing",
  "retryable",
];

/** One stored error of a job: the last 20 are kept, each capped at 4 KiB. */
export interface JobError {
  /** When the attempt failed, UTC epoch ms. */
  at: number;
  /** The attempt that failed. */
  attempt: number;
  /** The redacted, capped message. */
  error: string;
}

/** A row of `jobs`, as the store returns it. */
export interface Job {
  id: number;
  tenant: string | null;
  state: JobState;
  queue: string;
  worker: string;
  args: unknown;
  meta: Record<string, unknown>;
  tags: string[];
  errors: JobError[];
  scheduleId: string | null;
  scheduledFor: number | null;
  occurrence: string | null;
  uniqueKey: string | null;
  uniqueStates: "incomplete" | "all" | null;
  attempt: number;
  maxAttempts: number;
  priority: number;
  attemptedBy: string | null;
  fence: number;
  leaseExpiresAt: number | null;
  insertedAt: number;
  scheduledAt: number;
  attemptedAt: number | null;
  completedAt: number | null;
  cancelledAt: number | null;
  discardedAt: number | null;
}

/** A row of `attempts`. */
export interface Attempt {
  jobId: number;
  attempt: number;
  fence: number;
  node: string | null;
  kind: "run" | "retry" | "replay";
  actor: string | null;
  reason: string | null;
  startedAt: number;
  finishedAt: number | null;
  outcome: AttemptOutcome | null;
  error: string | null;
  /** The output excerpt the worker kept (`ctx.output`), redacted, at most 64 KiB. */
  output: string | null;
  /** The hash of the schedule definition this attempt ran (null: not a schedule's, or planned before 0006). */
  definition: string | null;
}

/** How an attempt ended. */
export type AttemptOutcome =
  | "completed"
  | "snoozed"
  | "cancelled"
  | "discarded"
  | "retryable"
  | "orphaned";

/** A job ready to insert: every option already resolved and validated. */
export interface NewJob {
  queue: string;
  worker: string;
  /** The args as JSON text (already serialized and size-checked). */
  args: string;
  meta: string;
  tags: string;
  tenant: string | null;
  priority: number;
  maxAttempts: number;
  /** When it becomes runnable; in the future means `scheduled`, else `available`. */
  scheduledAt: number;
  uniqueKey: string | null;
  uniqueStates: "incomplete" | "all" | null;
  occurrence: string | null;
  scheduleId: string | null;
  scheduledFor: number | null;
  /**
   * Debounce on the unique key: when a job holding it still waits
   * (scheduled, available, retryable), this insert replaces its args, meta,
   * tags and priority instead of being refused, and with `extend` pushes
   * its start out to this job's `scheduledAt` (never earlier).
   */
  debounce?: { extend: boolean } | null;
}

/**
 * What a job runs: the fields a replay or retry rewrites when it runs the
 * schedule's live definition instead of the one the job was planned with.
 */
export type JobDefinition = Pick<
  NewJob,
  "worker" | "args" | "meta" | "tags" | "queue" | "priority" | "maxAttempts"
>;

/** What an insert did: the job's id, and whether it already existed (uniqueness). */
export interface InsertResult {
  id: number;
  duplicate: boolean;
  /** A debounced insert replaced the waiting job `id` (which is `duplicate` too). */
  replaced?: boolean;
  queue: string;
  state: JobState;
}

/** A job this node has claimed: the lease is (id, fence, node). */
export interface ClaimedJob {
  id: number;
  queue: string;
  worker: string;
  /** JSON text; parsed by the executor, not the store. */
  args: string;
  meta: string;
  tags: string;
  occurrence: string | null;
  attempt: number;
  maxAttempts: number;
  priority: number;
  fence: number;
  insertedAt: number;
  scheduledAt: number;
  attemptedAt: number;
  /** The tenant the job (and so its lease) is scoped to, or null. */
  tenant: string | null;
}

/**
 * The end of one attempt, as the executor decided it; the store writes it
 * only if the lease (id, state executing, node, fence) still holds.
 */
export type JobResult =
  & {
    id: number;
    fence: number;
    attempt: number;
    /** When the attempt started (the claim's `attempted_at`). */
    startedAt: number;
    /** The occurrence identity, when the job is a schedule's occurrence. */
    occurrence?: string | null;
    /** The attempt's output excerpt (redacted, last 64 KiB), when the worker kept one. */
    output?: string;
    /** The hash of the schedule definition the attempt ran, when the job carries one. */
    definition?: string;
    /** The workflow run the job is a step of: the store advances it in the same transaction. */
    workflow?: number;
    /** A step's result, as JSON text (already size-checked), when it completed with one. */
    value?: string;
    /** For a step's job: its definition, step and kind, for logs and metrics. */
    step?: { workflow: string; step: string; kind: "step" | "compensation" };
  }
  & (
    | { outcome: "completed" }
    | { outcome: "snoozed"; until: number }
    | { outcome: "cancelled"; error: string }
    | { outcome: "discarded"; error: string }
    | { outcome: "retryable"; error: string; at: number }
  );

/** Which results the store wrote, and which found their lease gone. */
export interface RecordReport {
  recorded: number[];
  lost: number[];
  /** Queues that got available jobs from the record (the next steps of workflow runs). */
  queues?: string[];
}

/** What a planner sees of one schedule, inside the transaction that plans it. */
export interface PlanContext {
  enabled: boolean;
  lastPlannedFor: number | null;
  /** Its occurrences executing now. */
  executing: number;
  /** Its occurrences waiting to run (scheduled, available, retryable). */
  waiting: number;
}

/** What a planner decided for one schedule. */
export interface PlanDecision {
  /** Occurrences to insert (identity in `occurrence`; duplicates are ignored). */
  jobs: NewJob[];
  /** Occurrences to record as cancelled, with `reason` as their error. */
  cancelled: { job: NewJob; reason: string }[];
  /** Occurrences the misfire policy skipped, and the latest of them. */
  misfires: number;
  lastMisfireFor: number | null;
  /** The new recovery point, or null to leave it. */
  plannedFor: number | null;
}
