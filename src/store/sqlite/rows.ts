/**
 * Between SQLite rows and the kernel's types, and the one SQLite error the
 * store must recognise.
 *
 * @module
 */

import type { SQLInputValue } from "node:sqlite";
import type { ClaimedJob, InsertResult, NewJob } from "../../kernel/types.ts";

export {
  escapeLike,
  num,
  type Row,
  toAttempt,
  toInsertResult,
  toJob,
  toScheduleRow,
} from "../rows.ts";

/** SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  return error instanceof Error && /database (table )?is locked|SQLITE_BUSY/i.test(error.message);
}

export function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

/** A job as the values of the insert statement, in the order of its columns. */
export function insertRow(job: NewJob): SQLInputValue[] {
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

/**
 * A claim row, in the order of the claim's RETURNING list, claimed from
 * `queue` at `now` (its `attempted_at`); NULL meta and tags are the empty
 * `{}` and `[]` (the columns are NOT NULL: the claim returns those as NULL).
 */
export function toClaimed(row: unknown[], queue: string, now: number): ClaimedJob {
  return {
    id: row[0] as number,
    queue,
    worker: row[1] as string,
    args: row[2] as string,
    meta: (row[3] as string | null) ?? "{}",
    tags: (row[4] as string | null) ?? "[]",
    occurrence: row[5] as string | null,
    attempt: row[6] as number,
    maxAttempts: row[7] as number,
    priority: row[8] as number,
    fence: row[9] as number,
    insertedAt: row[10] as number,
    scheduledAt: row[11] as number,
    attemptedAt: now,
    tenant: row[13] as string | null,
  };
}
