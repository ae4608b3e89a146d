/**
 * `/api/v1/pipelines` and `/api/v1/drops`: each pipeline's freshness and
 * newest runs (`jobs pipelines`), a run now (`jobs ingest`), the dropped
 * records (`jobs drops`) and the replay of one (`jobs drops replay`),
 * through the doors of `src/admin/pipelines.ts`, each action audited with
 * the principal as actor.
 *
 * A tenant's principal sees its tenant's runs and their drops only, the
 * tenant in the store's statements (`IngestRunFilter.tenant`,
 * `IngestDropFilter.tenant`, `ingestSummaries({ tenant })`); another
 * tenant's drop answers 404 as a missing one. A run it starts carries its
 * tenant (its `jobs.ingest` job does, and the run's row copies it); a
 * replay carries the tenant of the drop's run. The pipelines themselves
 * are the schedules file's, which every tenant shares: the view lists
 * each, with the principal's runs of it.
 *
 * The definitions are the schedules file's the daemon loaded (`ApiOptions.
 * definitions`): without them the view lists only the pipelines the store
 * has runs of, and a run or a replay answers 409 `definitions-unavailable`;
 * a pipeline the file does not declare is 404 `pipeline-not-found` (a
 * drop's, 409 `pipeline-not-declared`: the drop is there, its definition
 * is not).
 *
 * @module
 */

import { z } from "zod";
import {
  dropJson,
  PipelineActionRefused,
  pipelinesView,
  pipelineViewJson,
  replayDrop,
  startIngestRun,
} from "../../admin/pipelines.ts";
import type { CompiledPipeline } from "../../ingest/types.ts";
import { redact } from "../../kernel/redact.ts";
import { routeKey } from "../access.ts";
import type { ApiDefinitions } from "./app.ts";
import {
  ActionBody,
  ApiError,
  type ApiRouter,
  checkedReason,
  ID_TEXT,
  keysetPage,
  LIMIT_TEXT,
  pageLimit,
  param,
  quoted,
  readBody,
  readQuery,
  type RouteSchemas,
  tenantScope,
  TEXT,
} from "./common.ts";

/** The query of `GET /api/v1/pipelines`. */
export const PipelinesQuery = z.strictObject({
  runs: z.string().regex(/^([1-9]|[1-4]\d|50)$/)
    .describe("how many of each pipeline's newest runs, 1 to 50, default 5").optional(),
});

/** The body of `POST /api/v1/pipelines/{name}/runs`: the reason is optional, as on the CLI. */
export const IngestBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail").optional(),
});

/** The query of `GET /api/v1/drops`: the filters of `jobs drops`, and the page. */
export const DropsQuery = z.strictObject({
  pipeline: TEXT.describe("drops of this pipeline").optional(),
  reason: TEXT.describe("drops with this reason").optional(),
  run: ID_TEXT.describe("drops of this ingest run").optional(),
  after: ID_TEXT.describe("the `next` of the previous page").optional(),
  limit: LIMIT_TEXT.describe("drops per page, 1 to 500, default 50").optional(),
});

/** The body of `POST /api/v1/drops/{id}/replay`. */
export const ReplayBody = ActionBody.extend({
  again: z.boolean().describe("replay a drop that was replayed before").optional(),
});

/** An ingest run as the API shows it (`jobs pipelines --json`'s `recent`). */
export const IngestRunAnswer = z.looseObject({
  id: z.int(),
  state: z.string(),
  trigger: z.string(),
  tenant: z.string().nullable(),
  job: z.int(),
  received: z.int(),
  sunk: z.int(),
  dropped: z.record(z.string(), z.int()),
  failed: z.int(),
  pending: z.int(),
  error: z.string().nullable(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});

/** A pipeline as the API shows it (`jobs pipelines --json`). */
export const PipelineAnswer = z.object({
  id: z.string(),
  declared: z.boolean(),
  hash: z.string().nullable(),
  runs: z.int(),
  recent: z.array(IngestRunAnswer),
  droppedLastHour: z.record(z.string(), z.int()),
  droppedLastDay: z.record(z.string(), z.int()),
  freshness: z.object({
    mode: z.string(),
    withinMs: z.int().nullable(),
    authority: z.string().nullable(),
    lastCompletedAt: z.string().nullable(),
    ageMs: z.int().nullable(),
    stale: z.boolean(),
  }).nullable(),
});

/** The answer of `GET /api/v1/pipelines`. */
export const PipelinesAnswer = z.object({ pipelines: z.array(PipelineAnswer) });

/** The answer of `POST /api/v1/pipelines/{name}/runs` (`jobs ingest --json`). */
export const IngestAnswer = z.object({
  job: z.int().describe("the jobs.ingest job that runs it; its run row is made when it starts"),
  pipeline: z.string(),
  queue: z.string(),
});

/** A drop as the API shows it (`jobs drops --json`). */
export const DropAnswer = z.object({
  id: z.int(),
  pipeline: z.string(),
  runId: z.int(),
  recordKey: z.string().nullable(),
  reason: z.string(),
  step: z.string(),
  at: z.string().nullable(),
  excerpt: z.string(),
  replayable: z.boolean(),
  replayedAt: z.string().nullable(),
  replayedJob: z.int().nullable(),
});

/** The answer of `GET /api/v1/drops`. */
export const DropsPage = z.object({ drops: z.array(DropAnswer), next: z.int().nullable() });

/** The answer of `POST /api/v1/drops/{id}/replay` (`jobs drops replay --json`). */
export const ReplayAnswer = z.object({ drop: z.int(), job: z.int(), pipeline: z.string() });

/** The schemas of the pipelines and drops routes, by route key. */
export const PIPELINES_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/pipelines")]: {
    query: PipelinesQuery,
    answer: PipelinesAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/pipelines/:name/runs")]: {
    body: IngestBody,
    answer: IngestAnswer,
    status: 201,
  },
  [routeKey("GET", "/api/v1/drops")]: { query: DropsQuery, answer: DropsPage, status: 200 },
  [routeKey("POST", "/api/v1/drops/:id/replay")]: {
    body: ReplayBody,
    answer: ReplayAnswer,
    status: 201,
  },
};

/**
 * Registers the pipelines and drops routes; `definitions` is the daemon's
 * schedules file as it is now (none: a run or a replay answers 409).
 */
export function registerPipelines(
  api: ApiRouter,
  definitions: (() => ApiDefinitions) | undefined,
): void {
  const { store, clock } = api;
  const declared = (): readonly CompiledPipeline[] => {
    if (!definitions) {
      throw new ApiError(
        409,
        "definitions-unavailable",
        "this server has no schedules file to take the pipeline's definition from",
      );
    }
    return definitions().pipelines;
  };

  api.on("GET", "/api/v1/pipelines", async (c, p) => {
    const query = readQuery(c, PipelinesQuery);
    const views = await pipelinesView({
      store,
      pipelines: definitions?.().pipelines ?? [],
      now: clock.now(),
      tenant: p.tenant,
      ...(query.runs === undefined ? {} : { recent: Number(query.runs) }),
    });
    return c.json({ pipelines: views.map(pipelineViewJson) });
  });

  api.on("POST", "/api/v1/pipelines/:name/runs", async (c, p) => {
    const { reason } = await readBody(c, IngestBody);
    checkedReason(reason);
    const name = param(c, "name");
    const pipeline = declared().find((d) => d.id === name);
    if (!pipeline) {
      throw new ApiError(
        404,
        "pipeline-not-found",
        `no pipeline ${quoted(name)} in the daemon's schedules file`,
      );
    }
    const job = await startIngestRun(store, pipeline, api.who(p, reason ?? null), p.tenant);
    return c.json({ job, pipeline: pipeline.id, queue: pipeline.queue }, 201);
  });

  api.on("GET", "/api/v1/drops", async (c, p) => {
    const query = readQuery(c, DropsQuery);
    const limit = pageLimit(query.limit);
    const drops = await store.ingestDropsList({
      ...(query.pipeline === undefined ? {} : { pipeline: query.pipeline }),
      ...(query.reason === undefined ? {} : { reason: query.reason }),
      ...(query.run === undefined ? {} : { runId: Number(query.run) }),
      ...(query.after === undefined ? {} : { before: Number(query.after) }),
      ...tenantScope(p),
      limit: limit + 1,
    });
    const { page, next } = keysetPage(drops, limit, (row) => row.id);
    return c.json({ drops: page.map(dropJson), next });
  });

  api.on("POST", "/api/v1/drops/:id/replay", async (c, p) => {
    const body = await readBody(c, ReplayBody);
    checkedReason(body.reason);
    const text = param(c, "id");
    const id = /^\d{1,15}$/.test(text) ? Number(text) : -1;
    const drop = id < 1
      ? null
      : await store.ingestDropGet({ id, ...(p.tenant === null ? {} : { tenant: p.tenant }) });
    if (!drop) throw new ApiError(404, "drop-not-found", `no drop ${quoted(text)}`);
    const pipelines = declared();
    if (!pipelines.some((d) => d.id === drop.pipeline)) {
      throw new ApiError(
        409,
        "pipeline-not-declared",
        `drop ${id} is of pipeline ${quoted(drop.pipeline)}, which the daemon's schedules file ` +
          `does not declare`,
      );
    }
    const who = api.who(p, body.reason);
    try {
      const replayed = await replayDrop(store, {
        id,
        pipeline: (name) => pipelines.find((d) => d.id === name) ?? null,
        who: { ...who, reason: body.reason },
        again: body.again ?? false,
        tenant: p.tenant,
      });
      return c.json({ drop: id, job: replayed.job, pipeline: replayed.drop.pipeline }, 201);
    } catch (error) {
      if (error instanceof PipelineActionRefused) {
        const message = error.message.replace("--again", '"again": true');
        throw new ApiError(409, "not-applicable", redact(message));
      }
      throw error;
    }
  });
}
