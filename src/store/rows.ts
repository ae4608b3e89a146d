/**
 * Between database rows and the kernel's types, for every adapter: the
 * column names are the same in SQLite and PostgreSQL, and the differences
 * of the drivers (a `bigint` as a string, `jsonb` already parsed, a boolean
 * as 1 or `true`) are absorbed here. Adapter-specific rows (the SQLite
 * claim's positional RETURNING list) stay in the adapter.
 *
 * @module
 */

import type { Attempt, ClaimedJob, InsertResult, Job, JobState } from "../kernel/types.ts";
import type {
  BulkRun,
  LeaderRow,
  LeaderState,
  PrincipalKind,
  PrincipalRow,
  QueueLimitsRow,
  RescuedJob,
  ScheduleRow,
  SessionRow,
  WorkItemEvent,
  WorkItemEventKind,
  WorkItemRow,
  WorkQueueStats,
} from "./store.ts";
import type { LoadedRun } from "../workflow/bookkeeping.ts";
import type { LeasedJob } from "./lifecycle/jobs.ts";
import type { Holder } from "./lifecycle/leaders.ts";
import {
  RUN_STATES,
  type RunState,
  type WorkflowRun,
  type WorkflowStepRow,
} from "../workflow/types.ts";

/** A row as a driver returns it. */
export type Row = Record<string, unknown>;

/** `text` as a literal inside a LIKE pattern whose escape character is a backslash. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A nullable number column (a `bigint` may arrive as a string). */
export function num(value: unknown): number | null {
  return value == null ? null : Number(value);
}

/** A JSON column: text holding JSON, or a value the driver already parsed (`jsonb`). */
export function json(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}

export function toInsertResult(row: Row, duplicate: boolean): InsertResult {
  return {
    id: Number(row.id),
    duplicate,
    queue: String(row.queue),
    state: row.state as JobState,
  };
}

export function toJob(row: Row): Job {
  return {
    id: Number(row.id),
    tenant: row.tenant as string | null,
    state: row.state as JobState,
    queue: String(row.queue),
    worker: String(row.worker),
    args: json(row.args),
    meta: json(row.meta) as Job["meta"],
    tags: json(row.tags) as Job["tags"],
    errors: json(row.errors) as Job["errors"],
    scheduleId: row.schedule_id as string | null,
    scheduledFor: num(row.scheduled_for),
    occurrence: row.occurrence as string | null,
    uniqueKey: row.unique_key as string | null,
    uniqueStates: row.unique_states as "incomplete" | "all" | null,
    attempt: Number(row.attempt),
    maxAttempts: Number(row.max_attempts),
    priority: Number(row.priority),
    attemptedBy: row.attempted_by as string | null,
    fence: Number(row.fence),
    leaseExpiresAt: num(row.lease_expires_at),
    insertedAt: Number(row.inserted_at),
    scheduledAt: Number(row.scheduled_at),
    attemptedAt: num(row.attempted_at),
    completedAt: num(row.completed_at),
    cancelledAt: num(row.cancelled_at),
    discardedAt: num(row.discarded_at),
  };
}

export function toAttempt(row: Row): Attempt {
  return {
    jobId: Number(row.job_id),
    attempt: Number(row.attempt),
    fence: Number(row.fence),
    node: row.node as string | null,
    kind: row.kind as Attempt["kind"],
    actor: row.actor as string | null,
    reason: row.reason as string | null,
    startedAt: Number(row.started_at),
    finishedAt: num(row.finished_at),
    outcome: row.outcome as Attempt["outcome"],
    error: row.error as string | null,
    output: (row.output ?? null) as string | null,
    definition: (row.definition ?? null) as string | null,
  };
}

/** A `schedules` row. */
export function toScheduleRow(row: Row): ScheduleRow {
  return {
    id: String(row.id),
    tenant: row.tenant as string | null,
    enabled: row.enabled === true || row.enabled === 1,
    disabledReason: row.disabled_reason as string | null,
    disabledBy: row.disabled_by as string | null,
    disabledAt: num(row.disabled_at),
    definitionHash: row.definition_hash as string | null,
    definition: (row.definition ?? null) as string | null,
    lastPlannedFor: num(row.last_planned_for),
    lastStartedAt: num(row.last_started_at),
    lastCompletedAt: num(row.last_completed_at),
    misfires: Number(row.misfires),
    lastMisfireFor: num(row.last_misfire_for),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A `leaders` row (node, fence, expires_at); `held`: whether the caller holds it. */
export function toLeaderState(row: Row, held: boolean): LeaderState {
  return {
    held,
    node: row.node == null ? null : String(row.node),
    fence: Number(row.fence),
    expiresAt: Number(row.expires_at),
  };
}

/** A role's holder as the leadership lifecycle reads it. */
export function toHolder(row: Row): Holder {
  return {
    node: row.node == null ? null : String(row.node),
    fence: Number(row.fence),
    expiresAt: Number(row.expires_at),
  };
}

/** A `leaders` row as {@linkcode Store.leadersList} returns it. */
export function toLeaderRow(row: Row): LeaderRow {
  return {
    name: String(row.name),
    node: row.node == null ? null : String(row.node),
    fence: Number(row.fence),
    expiresAt: Number(row.expires_at),
    acquiredAt: Number(row.acquired_at),
  };
}

/**
 * A job {@linkcode Store.jobsRescue} moved, from its row as the rescue read
 * it (id, queue, attempt, max_attempts) and the state the move left it in.
 */
export function rescuedJob(row: Row, node: string, state: unknown): RescuedJob {
  return {
    id: Number(row.id),
    queue: String(row.queue),
    node,
    attempt: Number(row.attempt),
    maxAttempts: Number(row.max_attempts),
    state: state === "available" ? "available" : "discarded",
  };
}

/** A row of `workflow_runs` (input as stored: JSON text, or `jsonb` already parsed). */
export function toWorkflowRun(row: Row): WorkflowRun {
  return {
    id: Number(row.id),
    workflow: String(row.workflow),
    hash: String(row.hash),
    state: row.state as RunState,
    input: json(row.input),
    tenant: (row.tenant as string | null) ?? null,
    key: (row.key as string | null) ?? null,
    error: (row.error as string | null) ?? null,
    cancelReason: (row.cancel_reason as string | null) ?? null,
    startedAt: Number(row.started_at),
    finishedAt: num(row.finished_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A run as the workflow bookkeeping reads it: its row's fields and its definition's text. */
export function toLoadedRun(row: Row): LoadedRun {
  return {
    run: {
      id: Number(row.id),
      workflow: String(row.workflow),
      state: row.state as RunState,
      input: String(row.input),
      tenant: (row.tenant as string | null) ?? null,
      error: (row.error as string | null) ?? null,
      cancelReason: (row.cancel_reason as string | null) ?? null,
    },
    definition: String(row.definition),
  };
}

/** A row of `workflow_steps`; result and cursor stay JSON text. */
export function toWorkflowStepRow(row: Row): WorkflowStepRow {
  return {
    runId: Number(row.run_id),
    kind: row.kind as WorkflowStepRow["kind"],
    step: String(row.step),
    item: Number(row.item),
    jobId: num(row.job_id),
    state: row.state as WorkflowStepRow["state"],
    result: jsonText(row.result),
    cursor: jsonText(row.cursor),
    seq: num(row.seq),
    error: (row.error as string | null) ?? null,
    items: num(row.items),
    remaining: num(row.remaining),
    createdAt: Number(row.created_at),
    finishedAt: num(row.finished_at),
  };
}

/** A JSON column as text: SQLite stores text, PostgreSQL's `jsonb` arrives parsed. */
export function jsonText(value: unknown): string | null {
  if (value == null) return null;
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Refuses run states that are not one of {@linkcode RUN_STATES}. */
export function checkRunStates(state: RunState | RunState[] | undefined): RunState[] | null {
  if (state === undefined) return null;
  const states = Array.isArray(state) ? state : [state];
  for (const s of states) {
    if (!RUN_STATES.includes(s)) {
      throw new RangeError(`unknown run state "${s}": one of ${RUN_STATES.join(", ")}`);
    }
  }
  return states;
}

/**
 * Throws a RangeError naming the bound of a listing or a count that is not
 * a whole number: `after` and `above` (job ids), `atMost` (a count).
 */
export function checkBounds(bounds: { after?: number; above?: number; atMost?: number }): void {
  for (const name of ["after", "above"] as const) {
    const value = bounds[name];
    if (value !== undefined && !Number.isSafeInteger(value)) {
      throw new RangeError(`${name} must be a job id (a whole number), got ${value}`);
    }
  }
  const atMost = bounds.atMost;
  if (atMost !== undefined && !(Number.isSafeInteger(atMost) && atMost >= 0)) {
    throw new RangeError(`atMost must be a whole number >= 0, got ${atMost}`);
  }
}

/** Checks `jobsLeaseExpired`'s bounds: a RangeError names one that is not a whole number. */
export function checkLeaseExpired(params: { now: number; limit: number }): void {
  if (!Number.isSafeInteger(params.now)) {
    throw new RangeError(`now must be a whole number of ms, got ${params.now}`);
  }
  if (!(Number.isSafeInteger(params.limit) && params.limit >= 0)) {
    throw new RangeError(`limit must be a whole number >= 0, got ${params.limit}`);
  }
}

/** A job's row as the job lifecycle reads it (see `lifecycle/jobs.ts`). */
export function toLeasedJob(row: Row): LeasedJob {
  return {
    id: Number(row.id),
    queue: String(row.queue),
    state: row.state as JobState,
    attempt: Number(row.attempt),
    maxAttempts: Number(row.max_attempts),
    fence: Number(row.fence),
    attemptedBy: (row.attempted_by as string | null) ?? null,
    attemptedAt: row.attempted_at == null ? null : Number(row.attempted_at),
  };
}

/** A row of `principals` without its secret's hash (the columns a principal's reads select). */
export function toPrincipalRow(row: Row): PrincipalRow {
  return {
    kind: row.kind as PrincipalKind,
    name: String(row.name),
    displayName: row.display_name == null ? null : String(row.display_name),
    roles: json(row.roles) as string[],
    tenant: row.tenant == null ? null : String(row.tenant),
    disabled: row.disabled === true || row.disabled === 1 || row.disabled === 1n,
    expiresAt: num(row.expires_at),
    createdBy: String(row.created_by),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    lastUsedAt: num(row.last_used_at),
  };
}

/** A `sessions` row as {@linkcode SessionRow}. */
export function toSessionRow(row: Row): SessionRow {
  return {
    idHash: String(row.id_hash),
    person: String(row.person),
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
    expiresAt: Number(row.expires_at),
    address: row.address == null ? null : String(row.address),
    userAgent: row.user_agent == null ? null : String(row.user_agent),
  };
}

/** A `bulk_runs` row (without its snapshot) as a {@linkcode BulkRun}. */
export function toBulkRun(row: Row): BulkRun {
  const filter = typeof row.filter === "string" ? JSON.parse(row.filter) : row.filter;
  return {
    id: Number(row.id),
    action: String(row.action) as BulkRun["action"],
    filter: filter !== null && typeof filter === "object" ? filter as Record<string, unknown> : {},
    total: Number(row.total),
    done: Number(row.done),
    changed: Number(row.changed),
    skipped: Number(row.skipped),
    state: String(row.state) as BulkRun["state"],
    actor: String(row.actor),
    reason: row.reason == null ? null : String(row.reason),
    tenant: row.tenant == null ? null : String(row.tenant),
    createdAt: Number(row.created_at),
    finishedAt: row.finished_at == null ? null : Number(row.finished_at),
    abortRequested: row.abort_requested === true || Number(row.abort_requested) === 1,
  };
}

/** A row of `work_items` (with `action_state`, the state of its action's job, or null). */
export function toWorkItem(row: Row): WorkItemRow {
  const inputs = row.inputs == null ? null : json(row.inputs);
  return {
    id: Number(row.id),
    queue: String(row.queue),
    key: String(row.key),
    tenant: row.tenant == null ? null : String(row.tenant),
    data: json(row.data),
    score: row.score == null ? null : Number(row.score),
    scoreRate: row.score_rate == null ? null : Number(row.score_rate),
    inputs: inputs as Record<string, unknown> | null,
    ruleVersion: row.rule_version == null ? null : String(row.rule_version),
    requestedAt: Number(row.requested_at),
    updatedAt: Number(row.updated_at),
    state: String(row.state) as WorkItemRow["state"],
    claimOwner: row.claim_owner == null ? null : String(row.claim_owner),
    claimExpiresAt: row.claim_expires_at == null ? null : Number(row.claim_expires_at),
    claimFence: Number(row.claim_fence),
    skippedBy: row.skipped_by == null ? null : String(row.skipped_by),
    skippedUntil: row.skipped_until == null ? null : Number(row.skipped_until),
    outcome: row.outcome == null ? null : String(row.outcome),
    actionJobId: row.action_job_id == null ? null : Number(row.action_job_id),
    actionState: row.action_state == null ? null : String(row.action_state) as JobState,
    doneBy: row.done_by == null ? null : String(row.done_by),
    doneAt: row.done_at == null ? null : Number(row.done_at),
    doneReason: row.done_reason == null ? null : String(row.done_reason),
  };
}

/**
 * The rows of the work queues' aggregate read (`kind` `open`, `done` or
 * `expired`, with `n`, and for `open` the oldest `requested_at`, for
 * `done` the `outcome`) as one {@linkcode WorkQueueStats} per queue, by name.
 */
export function toWorkQueueStats(rows: readonly Row[]): WorkQueueStats[] {
  const byQueue = new Map<string, WorkQueueStats>();
  for (const row of rows) {
    const queue = String(row.queue);
    let stats = byQueue.get(queue);
    if (!stats) {
      byQueue.set(
        queue,
        stats = { queue, open: 0, oldestOpenAt: null, claimsExpired: 0, done: {} },
      );
    }
    const n = Number(row.n);
    if (row.kind === "open") {
      stats.open = n;
      stats.oldestOpenAt = row.oldest == null ? null : Number(row.oldest);
    } else if (row.kind === "expired") stats.claimsExpired = n;
    else stats.done[String(row.outcome)] = n;
  }
  return [...byQueue.values()].sort((a, b) => a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0);
}

/** A row of `work_item_events`. */
export function toWorkItemEvent(row: Row): WorkItemEvent {
  const detail = json(row.detail);
  return {
    id: Number(row.id),
    itemId: Number(row.item_id),
    at: Number(row.at),
    actor: String(row.actor),
    kind: String(row.kind) as WorkItemEventKind,
    reason: row.reason == null ? null : String(row.reason),
    fence: row.fence == null ? null : Number(row.fence),
    detail: detail !== null && typeof detail === "object" ? detail as Record<string, unknown> : {},
  };
}

/** A row of `queue_limits` as {@linkcode QueueLimitsRow}. */
export function toQueueLimits(row: Row): QueueLimitsRow {
  return {
    name: String(row.name),
    global: row.global_limit == null ? null : Number(row.global_limit),
    partitionLimit: row.partition_limit == null ? null : Number(row.partition_limit),
    rate: row.rate_limit == null ? null : {
      limit: Number(row.rate_limit),
      perMs: Number(row.rate_per),
      burst: Number(row.rate_burst),
    },
    updatedAt: Number(row.updated_at),
  };
}

/**
 * Claim order: priority, then due time, then id. A claim hands its jobs out
 * in it (RETURNING has no order of its own), so a batch starts its most
 * urgent jobs first.
 */
export function byClaimOrder(a: ClaimedJob, b: ClaimedJob): number {
  return a.priority - b.priority || a.scheduledAt - b.scheduledAt || a.id - b.id;
}
