/**
 * `/api/v1/jobs`: list, show, enqueue (one, or a batch in one transaction),
 * retry, cancel or discard one job, and replay one (with the preview of the
 * definition it would run), through the doors of `src/admin/jobs.ts`.
 *
 * A replay's live definition is the one the store last synced (the API has
 * no schedules file of its own): a schedule's job whose schedule has no
 * stored definition is refused a live replay (409
 * `live-definition-unavailable`) rather than silently run as planned.
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
import type { DefinitionChoice } from "../../admin/definitions.ts";
import {
  applyJobAction,
  AS_PLANNED,
  type DefinitionSource,
  EnqueueEntryError,
  enqueueJob,
  enqueueJobs,
  findJobInScope,
  jobDetailInScope,
  jobInScope,
  jobsView,
  previewReplay,
  replayJob,
  zonesOf,
} from "../../admin/jobs.ts";
import { storedLiveSchedules } from "../../admin/schedules.ts";
import { EnqueueError, type EnqueueOptions } from "../../kernel/enqueue.ts";
import { BUILT_IN_WORKERS } from "../../kernel/runs.ts";
import { redact } from "../../kernel/redact.ts";
import { type Job, JOB_STATES, type JobState } from "../../kernel/types.ts";
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
  keysetPage,
  LIMIT_TEXT,
  oneOrSeveral,
  pageLimit,
  param,
  quoted,
  readBody,
  readQuery,
  type RouteSchemas,
  tenantScope,
  TEXT,
} from "./common.ts";

/** The query of `GET /api/v1/jobs`: the filters of `jobs ls`, and the page. */
export const JobsQuery = z.strictObject({
  state: oneOrSeveral(JOB_STATES, "one state or several, comma-separated").optional(),
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

/** The body of `POST /api/v1/jobs/batch`: 1 to 1000 jobs, each as `POST /api/v1/jobs` takes one. */
export const BatchBody = z.strictObject({
  jobs: z.array(EnqueueBody).min(1).max(1000),
});

/** The answer of `POST /api/v1/jobs/batch`: the ids in the order of the request. */
export const BatchAnswer = z.object({ ids: z.array(z.int()), duplicates: z.int() });

/** Which definition a replay runs: the store's synced one (the default) or the job's own. */
export const DefinitionText = z.enum(["live", "as-planned"]);

/** The query of `GET /api/v1/jobs/{id}/replay`. */
export const ReplayQuery = z.strictObject({
  definition: DefinitionText.describe(
    "live (default): the stored definition; as-planned: the job's own",
  )
    .optional(),
});

/** The body of `POST /api/v1/jobs/{id}/replay` (`jobs replay --reason [--as-planned] [--force]`). */
export const ReplayBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail"),
  definition: DefinitionText.describe(
    "live (default): the stored definition; as-planned: the job's own",
  )
    .optional(),
  force: z.boolean().describe("replay an executing job too, breaking its lease").optional(),
});

/** Which definition a replay runs and what differs from the planned one. */
export const DefinitionAnswer = z.object({
  runs: DefinitionText,
  why: z.string().nullable(),
  planned: z.string().nullable(),
  hash: z.string().nullable(),
  differences: z.array(z.string()).describe("`field: planned -> live`, one per differing leaf"),
});

/** The answer of `GET /api/v1/jobs/{id}/replay`: what a replay would run, nothing changed. */
export const ReplayPreviewAnswer = z.object({
  id: z.int(),
  occurrence: z.string().nullable(),
  state: z.enum(JOB_STATES as [string, ...string[]]),
  executing: z.boolean().describe("a replay needs `force`, which breaks the running lease"),
  definition: DefinitionAnswer,
});

/**
 * The answer of `POST /api/v1/jobs/{id}/replay`. A replay is a new attempt
 * of the same job (its row and occurrence identity), so `id` is `replayOf`.
 */
export const ReplayAnswer = z.object({
  id: z.int(),
  replayOf: z.int(),
  occurrence: z.string().nullable(),
  was: z.enum(JOB_STATES as [string, ...string[]]),
  state: z.literal("available"),
  forced: z.boolean(),
  definition: DefinitionAnswer,
});

/** The answer of an action on one job. */
export const ActionAnswer = z.object({ id: z.int(), action: z.string(), was: z.string() });

const ACTION: RouteSchemas = { body: ActionBody, answer: ActionAnswer, status: 200 };

/** The schemas of the jobs routes, by route key. */
export const JOBS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/jobs")]: { query: JobsQuery, answer: JobsPage, status: 200 },
  [routeKey("POST", "/api/v1/jobs")]: { body: EnqueueBody, answer: EnqueueAnswer, status: 201 },
  [routeKey("POST", "/api/v1/jobs/batch")]: { body: BatchBody, answer: BatchAnswer, status: 201 },
  [routeKey("GET", "/api/v1/jobs/:id")]: { answer: JobDetailAnswer, status: 200 },
  [routeKey("GET", "/api/v1/jobs/:id/replay")]: {
    query: ReplayQuery,
    answer: ReplayPreviewAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/jobs/:id/replay")]: {
    body: ReplayBody,
    answer: ReplayAnswer,
    status: 201,
  },
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
      ...tenantScope(p),
      limit: limit + 1,
    };
    const jobs = await jobsView(store, filter);
    const { page, next } = keysetPage(jobs, limit, (row) => row.id);
    return c.json({ jobs: page.map(jobJson), next });
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
    notBuiltIn(body.worker, 'body field "worker"');
    try {
      const result = await enqueueJob(
        store,
        body.worker,
        body.args ?? {},
        enqueueOptions(body, p.tenant),
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

  api.on("POST", "/api/v1/jobs/batch", async (c, p) => {
    const body = await readBody(c, BatchBody);
    body.jobs.forEach((job, i) => notBuiltIn(job.worker, `body field "jobs.${i}.worker"`));
    const entries = body.jobs.map((job) => ({
      worker: job.worker,
      args: job.args ?? {},
      options: enqueueOptions(job, p.tenant),
    }));
    try {
      const results = await enqueueJobs(store, entries, api.who(p, null));
      return c.json({
        ids: results.map((r) => r.id),
        duplicates: results.filter((r) => r.duplicate).length,
      }, 201);
    } catch (error) {
      if (error instanceof EnqueueEntryError) {
        throw new ApiError(
          400,
          "enqueue-refused",
          redact(`body field "jobs.${error.index}": ${error.reason}; nothing was enqueued`),
        );
      }
      throw error;
    }
  });

  api.on("GET", "/api/v1/jobs/:id/replay", async (c, p) => {
    const query = readQuery(c, ReplayQuery);
    const job = await replayTarget(api, param(c, "id"), p.tenant);
    const source = await replaySource(api, job, query.definition ?? "live");
    const preview = await previewReplay(store, String(job.id), source);
    if (!preview) throw noJob(c);
    return c.json({
      id: job.id,
      occurrence: job.occurrence,
      state: preview.job.state,
      executing: preview.job.state === "executing",
      definition: definitionJson(preview.definition),
    });
  });

  api.on("POST", "/api/v1/jobs/:id/replay", async (c, p) => {
    const body = await readBody(c, ReplayBody);
    checkedReason(body.reason);
    const job = await replayTarget(api, param(c, "id"), p.tenant);
    const source = await replaySource(api, job, body.definition ?? "live");
    const who = { ...api.who(p, body.reason), reason: body.reason };
    const result = await replayJob(store, String(job.id), who, body.force === true, source);
    if (!result.replayed) {
      throw new ApiError(
        409,
        "job-executing",
        `job ${job.id} is executing; nothing changed. Send "force": true to break its lease ` +
          `and replay it`,
      );
    }
    return c.json({
      id: result.job.id,
      replayOf: job.id,
      occurrence: result.job.occurrence,
      was: result.was,
      state: "available",
      forced: result.was === "executing",
      definition: definitionJson(result.definition),
    }, 201);
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

/** The library's enqueue options of one job of a body, with the principal's tenant. */
function enqueueOptions(body: z.output<typeof EnqueueBody>, tenant: string | null): EnqueueOptions {
  return {
    ...(body.queue === undefined ? {} : { queue: body.queue }),
    ...(body.priority === undefined ? {} : { priority: body.priority }),
    ...(body.maxAttempts === undefined ? {} : { maxAttempts: body.maxAttempts }),
    ...(body.tags === undefined ? {} : { tags: body.tags }),
    ...(body.inMs === undefined ? {} : { in: body.inMs }),
    ...(tenant === null ? {} : { tenant }),
  };
}

/**
 * The job a replay names in its path, by id or occurrence (`jobs replay
 * <job|occurrence>`: a local time without offset is read in the zone of the
 * schedule's stored definition), within the principal's tenant; else 404.
 */
async function replayTarget(api: ApiRouter, ref: string, tenant: string | null): Promise<Job> {
  const at = ref.indexOf("@");
  const zones = at > 0 && ref.length <= 300
    ? zonesOf((await storedLiveSchedules(api.store, [ref.slice(0, at)])).schedules)
    : undefined;
  const job = ref.length > 300 ? null : await findJobInScope(api.store, ref, tenant, zones);
  if (!job) throw new ApiError(404, "job-not-found", `no job or occurrence ${quoted(ref)}`);
  return job;
}

/**
 * Where replaying `job` takes its definition: its own (`as-planned`), or its
 * schedule's as the store last synced it (`live`); a schedule's job whose
 * schedule has no stored definition is refused a live replay (409).
 */
async function replaySource(
  api: ApiRouter,
  job: Job,
  definition: "live" | "as-planned",
): Promise<DefinitionSource> {
  if (definition === "as-planned") return AS_PLANNED;
  const ids = job.scheduleId === null ? [] : [job.scheduleId];
  const live = await storedLiveSchedules(api.store, ids);
  if (job.scheduleId !== null && !live.schedules!.some((s) => s.id === job.scheduleId)) {
    throw new ApiError(
      409,
      "live-definition-unavailable",
      `job ${job.id} is an occurrence of schedule ${
        quoted(job.scheduleId)
      }, which has no definition in the store (a daemon syncs it from the schedules file); ` +
        `replay it with "definition": "as-planned" to run the definition it was planned with`,
    );
  }
  return { live, asPlanned: false };
}

/** A definition choice as the API says it: `as-planned` asked for is said in the API's words. */
function definitionJson(choice: DefinitionChoice): DefinitionChoice {
  return choice.why === "--as-planned"
    ? { ...choice, why: `"definition": "as-planned" was asked for` }
    : choice;
}

/**
 * Refuses (403 `worker-reserved`) a built-in worker: `jobs.command` runs the
 * argv its args name, `jobs.http` calls the URL they name, and the others
 * start runs of definitions, so a token that could enqueue one could run
 * anything on the daemon's host. They come from the schedules file and the
 * command line on the host; a program enqueues its own named workers.
 */
function notBuiltIn(worker: string, where: string): void {
  if (BUILT_IN_WORKERS.has(worker)) {
    throw new ApiError(
      403,
      "worker-reserved",
      `${where}: ${JSON.stringify(worker)} is a built-in worker, which runs what its args say; ` +
        `it is enqueued by the schedules file or \`jobs enqueue\` on the host, not over the API`,
    );
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
