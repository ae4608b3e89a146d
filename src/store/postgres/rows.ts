/**
 * Between PostgreSQL rows (as postgres.js returns them: `bigint` columns as
 * strings, `jsonb` parsed, `boolean` as booleans) and the kernel's types.
 *
 * @module
 */

import type { ClaimedJob } from "../../kernel/types.ts";

export {
  escapeLike,
  json,
  num,
  type Row,
  toAttempt,
  toInsertResult,
  toJob,
  toScheduleRow,
} from "../rows.ts";
import type { Row } from "../rows.ts";

/** A row of the claim's RETURNING list. */
export function toClaimed(row: Row): ClaimedJob {
  return {
    id: Number(row.id),
    queue: String(row.queue),
    worker: String(row.worker),
    args: String(row.args),
    meta: String(row.meta),
    tags: String(row.tags),
    occurrence: row.occurrence as string | null,
    attempt: Number(row.attempt),
    maxAttempts: Number(row.max_attempts),
    priority: Number(row.priority),
    fence: Number(row.fence),
    insertedAt: Number(row.inserted_at),
    scheduledAt: Number(row.scheduled_at),
    attemptedAt: Number(row.attempted_at),
    tenant: (row.tenant as string | null) ?? null,
  };
}
