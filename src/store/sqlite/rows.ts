/**
 * Between SQLite rows and the kernel's types, and the one SQLite error the
 * store must recognise.
 *
 * @module
 */

import type {
  Attempt,
  ClaimedJob,
  InsertResult,
  Job,
  JobState,
  NewJob,
} from "../../kernel/types.ts";
import type { ScheduleRow } from "../store.ts";

/** A row as node:sqlite returns it. */
export type Row = Record<string, unknown>;

/** SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  return error instanceof Error && /database (table )?is locked|SQLITE_BUSY/i.test(error.message);
}

/** `text` as a literal inside a LIKE pattern whose escape character is a backslash. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

/** A job as a row of the insert statement, in the order of its columns. */
export function insertRow(job: NewJob): unknown[] {
  return [
    job.queue,
    job.worker,
    job.args,
    job.meta,
    job.tags,
    job.tenant,
    job.priority,
    job.maxAttempts,
    job.scheduledAt,
    job.uniqueKey,
    job.uniqueStates,
    job.occurrence,
    job.scheduleId,
    job.scheduledFor,
  ];
}

export function inserted(job: NewJob, id: number, now: number): InsertResult {
  const state = job.scheduledAt > now ? "scheduled" : "available";
  return { id, duplicate: false, queue: job.queue, state };
}

export function toInsertResult(row: Row, duplicate: boolean): InsertResult {
  return {
    id: Number(row.id),
    duplicate,
    queue: String(row.queue),
    state: row.state as JobState,
  };
}

/** A claim row, in the order of the claim's RETURNING list. */
export function toClaimed(row: unknown[]): ClaimedJob {
  return {
    id: row[0] as number,
    queue: row[1] as string,
    worker: row[2] as string,
    args: row[3] as string,
    meta: row[4] as string,
    tags: row[5] as string,
    occurrence: row[6] as string | null,
    attempt: row[7] as number,
    maxAttempts: row[8] as number,
    priority: row[9] as number,
    fence: row[10] as number,
    insertedAt: row[11] as number,
    scheduledAt: row[12] as number,
    attemptedAt: row[13] as number,
  };
}

export function num(value: unknown): number | null {
  return value == null ? null : Number(value);
}

export function toJob(row: Row): Job {
  return {
    id: Number(row.id),
    tenant: row.tenant as string | null,
    state: row.state as JobState,
    queue: String(row.queue),
    worker: String(row.worker),
    args: JSON.parse(String(row.args)),
    meta: JSON.parse(String(row.meta)),
    tags: JSON.parse(String(row.tags)),
    errors: JSON.parse(String(row.errors)),
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
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason as string | null,
    disabledBy: row.disabled_by as string | null,
    disabledAt: num(row.disabled_at),
    definitionHash: row.definition_hash as string | null,
    lastPlannedFor: num(row.last_planned_for),
    lastStartedAt: num(row.last_started_at),
    lastCompletedAt: num(row.last_completed_at),
    misfires: Number(row.misfires),
    lastMisfireFor: num(row.last_misfire_for),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
