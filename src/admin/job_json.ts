/**
 * Jobs, attempts and audit rows as JSON shows them (`jobs ls --json`,
 * `jobs show --json`, `/api/v1`): every field, instants as ISO UTC, args,
 * meta, errors and output redacted. One shape for every face, so a script
 * reading the command line's JSON reads the API's.
 *
 * @module
 */

import { redact } from "../kernel/redact.ts";
import type { Attempt, Job } from "../kernel/types.ts";
import type { AuditRow } from "../store/store.ts";

/** An instant as ISO-8601 UTC with ms, or null. */
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** A job as `--json` prints it: every field, instants as ISO UTC, errors redacted (args and meta as given). */
export function jobJson(job: Job) {
  return {
    ...job,
    errors: job.errors.map((e) => ({ ...e, at: iso(e.at), error: redact(e.error) })),
    scheduledFor: iso(job.scheduledFor),
    leaseExpiresAt: iso(job.leaseExpiresAt),
    insertedAt: iso(job.insertedAt),
    scheduledAt: iso(job.scheduledAt),
    attemptedAt: iso(job.attemptedAt),
    completedAt: iso(job.completedAt),
    cancelledAt: iso(job.cancelledAt),
    discardedAt: iso(job.discardedAt),
  };
}

/** An attempt as `jobs show --json` prints it: instants as ISO UTC, error and output redacted. */
export function attemptJson(a: Attempt) {
  return {
    ...a,
    startedAt: iso(a.startedAt),
    finishedAt: iso(a.finishedAt),
    error: a.error === null ? null : redact(a.error),
    output: a.output === null ? null : redact(a.output),
  };
}

/** An audit row as `jobs show --json` prints it: its instant as ISO UTC. */
export function auditJson(row: AuditRow) {
  return { ...row, at: iso(row.at) };
}
