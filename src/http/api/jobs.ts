/**
 * `/api/v1/jobs`: list, show, enqueue, and retry, cancel or discard one job,
 * through the doors of `src/admin/jobs.ts`.
 *
 * A tenant-scoped principal reads and acts on its tenant's jobs only: the
 * tenant goes into the store's statement (`JobFilter.tenant`), and a job of
 * another tenant answers 404, as one that does not exist. A tenant named in
 * a query or body is refused (400): the schemas are strict.
 *
 * @module
 */

import { z } from "zod";
import { attemptJson, auditJson, jobJson } from "../../admin/job_json.ts";
import {
  applyJobAction,
  enqueueJob,
  jobDetailInScope,
  jobInScope,
  jobsView,
} from "../../admin/jobs.ts";
import { EnqueueError, type EnqueueOptions } from "../../kernel/enqueue.ts";
import { redact } from "../../kernel/redact.ts";
import { JOB_STATES, type JobState } from "../../kernel/types.ts";
import type { JobFilter } from "../../store/store.ts";
import { routeKey } from "../access.ts";
import { AuditAnswer } from "./audit.ts";
import {
  ActionBody,
  ApiError,
  type ApiRouter,
  checkedReason,
  type Ctx,
  ID_TEXT,
  LIMIT_TEXT,
  pageLimit,
  readBody,
  readQuery,
  type RouteSchemas,
  TEXT,
} from "./common.ts";

const STATE = JOB_STATES.join("|");

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
  limit: LIMIT_TEXT.describe("jobs per page, 1 to 500, default 50").optional(),
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

/** The answer of `GET /api/v1/jobs`: a page and where the next starts (null: the last). */
export const JobsPage = z.object({ jobs: z.array(JobAnswer), next: z.int().nullable() });

/** The answer of `GET /api/v1/jobs/{id}` (`jobs show --json`). */
export const JobDetailAnswer = z.object({
  job: JobAnswer,
  attempts: z.array(z.looseObject({ attempt: z.int(), kind: z.string() })),
  audit: z.array(AuditAnswer),
});

/** The answer of `POST /api/v1/jobs`. */
export const EnqueueAnswer = z.object({ id: z.int(), duplicate: z.boolean() });

/** The answer of an action on one job. */
export const ActionAnswer = z.object({ id: z.int(), action: z.string(), was: z.string() });

const ACTION: RouteSchemas = { body: ActionBody, answer: ActionAnswer, status: 200 };

/** The schemas of the jobs routes, by route key. */
export const JOBS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/jobs")]: { query: JobsQuery, answer: JobsPage, status: 200 },
  [routeKey("POST", "/api/v1/jobs")]: { body: EnqueueBody, answer: EnqueueAnswer, status: 201 },
  [routeKey("GET", "/api/v1/jobs/:id")]: { answer: JobDetailAnswer, status: 200 },
  [routeKey("POST", "/api/v1/jobs/:id/retry")]: ACTION,
  [routeKey("POST", "/api/v1/jobs/:id/cancel")]: ACTION,
  [routeKey("POST", "/api/v1/jobs/:id/discard")]: ACTION,
};

/** Registers the jobs routes. */
export function registerJobs(api: ApiRouter): void {
  const { store } = api;

  api.on("GET", "/api/v1/jobs", async (c, p) => {
    const query = readQuery(c, JobsQuery);
    const limit = pageLimit(query.limit);
    const filter: JobFilter = {
      ...(query.state === undefined ? {} : { state: query.state.split(",") as JobState[] }),
      ...(query.queue === undefined ? {} : { queue: query.queue }),
      ...(query.worker === undefined ? {} : { worker: query.worker }),
      ...(query.tag === undefined ? {} : { tag: query.tag }),
      ...(query.schedule === undefined ? {} : { scheduleId: query.schedule }),
      ...(query.search === undefined ? {} : { search: query.search }),
      ...(query.after === undefined ? {} : { after: Number(query.after) }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
      limit: limit + 1,
    };
    const jobs = await jobsView(store, filter);
    const page = jobs.slice(0, limit);
    return c.json({
      jobs: page.map(jobJson),
      next: jobs.length > limit ? page.at(-1)!.id : null,
    });
  });

  api.on("GET", "/api/v1/jobs/:id", async (c, p) => {
    const detail = await jobDetailInScope(store, jobId(c), p.tenant);
    if (!detail) throw noJob(c);
    return c.json({
      job: jobJson(detail.job),
      attempts: detail.attempts.map(attemptJson),
      audit: detail.audit.map(auditJson),
    });
  });

  api.on("POST", "/api/v1/jobs", async (c, p) => {
    const body = await readBody(c, EnqueueBody);
    const options: EnqueueOptions = {
      ...(body.queue === undefined ? {} : { queue: body.queue }),
      ...(body.priority === undefined ? {} : { priority: body.priority }),
      ...(body.maxAttempts === undefined ? {} : { maxAttempts: body.maxAttempts }),
      ...(body.tags === undefined ? {} : { tags: body.tags }),
      ...(body.inMs === undefined ? {} : { in: body.inMs }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
    };
    try {
      const result = await enqueueJob(
        store,
        body.worker,
        body.args ?? {},
        options,
        api.who(p, null),
      );
      return c.json({ id: result.id, duplicate: result.duplicate }, 201);
    } catch (error) {
      if (error instanceof EnqueueError) {
        throw new ApiError(400, "enqueue-refused", redact(error.message));
      }
      throw error;
    }
  });

  for (const action of ["retry", "cancel", "discard"] as const) {
    api.on("POST", `/api/v1/jobs/:id/${action}`, async (c, p) => {
      const { reason } = await readBody(c, ActionBody);
      checkedReason(reason);
      const job = await jobInScope(store, jobId(c), p.tenant);
      if (!job) throw noJob(c);
      const { changed, skipped } = await applyJobAction(store, action, [job], api.who(p, reason));
      if (changed.length === 0) {
        const why = skipped[0]?.why ?? "cannot be changed";
        throw new ApiError(409, "not-applicable", `job ${job.id} ${why}: nothing to ${action}`);
      }
      return c.json({ id: job.id, action, was: job.state });
    });
  }
}

/** The job id of the path, or -1 when it is not one (found as no job). */
export function jobId(c: Ctx): number {
  const text = c.req.param("id") ?? "";
  return /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

/** The 404 of a job not in the principal's scope (or nowhere): the same answer for both. */
export function noJob(c: Ctx): ApiError {
  return new ApiError(404, "job-not-found", `no job ${JSON.stringify(c.req.param("id"))}`);
}
