/**
 * The schemas of `/api/v1`: one zod schema per route's query, body and
 * answer. The routes validate requests with them (`api.ts`) and the OpenAPI
 * document is generated from them (`openapi.ts`), so the two cannot drift.
 *
 * Every request schema is strict: a field it does not name (a `tenant`,
 * say) is refused with 400, never read.
 *
 * @module
 */

import { z } from "zod";
import { JOB_STATES } from "../kernel/types.ts";

const STATE = JOB_STATES.join("|");
/** A name as queues, workers and tags spell them, bounded. */
const TEXT = z.string().min(1).max(200);
/** An id in a query string or path: digits only. */
const ID_TEXT = z.string().regex(/^\d{1,15}$/);

/** The query of `GET /api/v1/jobs`: the filters of `jobs ls`, and the page. */
export const JobsQuery = z.strictObject({
  state: z.string().regex(new RegExp(`^(${STATE})(,(${STATE}))*$`))
    .describe("one state or several, comma-separated").optional(),
  queue: TEXT.optional(),
  worker: TEXT.optional(),
  tag: TEXT.optional(),
  schedule: TEXT.describe("occurrences of this schedule").optional(),
  search: TEXT.describe("a case-insensitive substring of what a reader is shown").optional(),
  after: ID_TEXT.describe("the `next` of the previous page").optional(),
  limit: z.string().regex(/^([1-9]\d{0,2})$/).describe("jobs per page, 1 to 500, default 50")
    .optional(),
});

/** The query of `GET /api/v1/audit`. */
export const AuditQuery = z.strictObject({
  target: TEXT.describe("one target: job:<id>, schedule:<id>, a queue, token:<name>")
    .optional(),
  after: ID_TEXT.describe("the `next` of the previous page").optional(),
  limit: z.string().regex(/^([1-9]\d{0,2})$/).describe("rows per page, 1 to 500, default 50")
    .optional(),
});

/** The body of `POST /api/v1/jobs`. The tenant is the principal's, never the body's. */
export const EnqueueBody = z.strictObject({
  worker: TEXT,
  args: z.unknown().optional(),
  queue: TEXT.optional(),
  priority: z.int().min(0).max(9).optional(),
  maxAttempts: z.int().min(1).max(1000).optional(),
  tags: z.array(TEXT).max(50).optional(),
  /** Run no earlier than this many ms from now. */
  inMs: z.int().min(0).max(10 * 365 * 86_400_000).optional(),
});

/** The body of `POST /api/v1/jobs/{id}/retry|cancel|discard`. */
export const ActionBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail"),
});

/** The body of `POST /api/v1/queues/{name}/pause|resume`: the reason is optional, as on the CLI. */
export const QueueActionBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail").optional(),
});

/** A queue as the API shows it (`jobs status --json`'s `queues`). */
export const QueueAnswer = z.object({
  name: z.string(),
  counts: z.record(z.string(), z.int()),
  paused: z.boolean(),
  pausedInFile: z.boolean(),
  declaredConcurrency: z.int().nullable(),
  nodes: z.record(z.string(), z.int()),
  pause: z.object({
    at: z.string().nullable(),
    actor: z.string().nullable(),
    reason: z.string().nullable(),
  }).nullable(),
});

/** The answer of `GET /api/v1/queues`. */
export const QueuesAnswer = z.object({ queues: z.array(QueueAnswer) });

/** The answer of `POST /api/v1/queues/{name}/pause|resume` (`jobs pause --json`). */
export const QueueActionAnswer = z.object({
  queue: z.string(),
  paused: z.boolean(),
  was: z.boolean(),
});

/** A schedule as the API shows it (`jobs status --json`'s `schedules`): instants as ISO UTC. */
export const ScheduleAnswer = z.object({
  id: z.string(),
  declared: z.boolean(),
  manual: z.boolean(),
  enabled: z.boolean(),
  disabledIn: z.enum(["file", "store"]).nullable(),
  disabledReason: z.string().nullable(),
  disabledBy: z.string().nullable(),
  disabledAt: z.string().nullable(),
  next: z.string().nullable(),
  nextOccurrence: z.string().nullable(),
  lastPlannedFor: z.string().nullable(),
  lastStartedAt: z.string().nullable(),
  lastCompletedAt: z.string().nullable(),
  misfires: z.int(),
  lastMisfireFor: z.string().nullable(),
  lastOutcome: z.enum(["completed", "cancelled", "discarded"]).nullable(),
  lastOutcomeAt: z.string().nullable(),
  failures: z.int(),
  definitionHash: z.string().nullable(),
  timezone: z.string().nullable(),
});

/** The answer of `GET /api/v1/schedules`. */
export const SchedulesAnswer = z.object({ schedules: z.array(ScheduleAnswer) });

/** The answer of `POST /api/v1/schedules/{id}/disable|enable` (`jobs disable --json`). */
export const ScheduleActionAnswer = z.object({
  schedule: z.string(),
  enabled: z.boolean(),
  was: z.boolean(),
});

/** A job as the API shows it (`jobs show --json`'s `job`). */
export const JobAnswer = z.looseObject({
  id: z.int(),
  state: z.enum(JOB_STATES as [string, ...string[]]),
  queue: z.string(),
  worker: z.string(),
  tenant: z.string().nullable(),
  args: z.unknown(),
  tags: z.array(z.string()),
  attempt: z.int(),
  maxAttempts: z.int(),
  insertedAt: z.string().nullable(),
});

/** An audit row as the API shows it. */
export const AuditAnswer = z.object({
  id: z.int(),
  at: z.string().nullable(),
  actor: z.string(),
  action: z.string(),
  target: z.string(),
  reason: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
});

/** The answer of `GET /api/v1/jobs`: a page and where the next starts (null: the last). */
export const JobsPage = z.object({ jobs: z.array(JobAnswer), next: z.int().nullable() });

/** The answer of `GET /api/v1/jobs/{id}` (`jobs show --json`). */
export const JobDetailAnswer = z.object({
  job: JobAnswer,
  attempts: z.array(z.looseObject({ attempt: z.int(), kind: z.string() })),
  audit: z.array(AuditAnswer),
});

/** The answer of `GET /api/v1/audit`. */
export const AuditPage = z.object({ audit: z.array(AuditAnswer), next: z.int().nullable() });

/** The answer of `POST /api/v1/jobs`. */
export const EnqueueAnswer = z.object({ id: z.int(), duplicate: z.boolean() });

/** The answer of an action on one job. */
export const ActionAnswer = z.object({ id: z.int(), action: z.string(), was: z.string() });

/** The answer of `GET /api/v1/me`. */
export const MeAnswer = z.object({
  name: z.string(),
  kind: z.enum(["token", "person", "installation"]),
  roles: z.array(z.string()),
  tenant: z.string().nullable(),
  actor: z.string(),
});

/** Every refusal. */
export const ErrorAnswer = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});
