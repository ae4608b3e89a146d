/**
 * `/api/v1/workflows`: workflow runs as `jobs workflows` lists them and
 * `jobs workflow show --json` shows one, and the doors of `jobs start` and
 * `jobs workflow cancel|retry` (`src/admin/workflows.ts`), each audited
 * with the principal as actor.
 *
 * A tenant's principal lists, reads and acts on its tenant's runs only: the
 * tenant goes into the store's statement (`WorkflowFilter.tenant`,
 * `workflowGet({ tenant })`), and another tenant's run answers 404 as one
 * that does not exist. A run it starts carries its tenant, and so do the
 * run's step jobs (the engine copies the run's tenant onto each). A start's
 * key that already started a run outside the principal's tenant is refused
 * (409 `key-taken`) without naming that run.
 *
 * The definitions are the schedules file's the daemon loaded (`ApiOptions.
 * definitions`), not the store's: without them a start answers 409
 * `definitions-unavailable`; a workflow the file does not declare is 404.
 * Runs already started carry their definitions, so listing, showing,
 * cancelling and retrying need none.
 *
 * @module
 */

import { z } from "zod";
import { auditJson } from "../../admin/job_json.ts";
import {
  cancelWorkflowRun,
  listWorkflowRuns,
  retryWorkflowRun,
  startWorkflowRun,
  WorkflowActionRefused,
  workflowRunView,
  workflowSummaryJson,
  workflowViewJson,
} from "../../admin/workflows.ts";
import { EnqueueError } from "../../kernel/enqueue.ts";
import { redact } from "../../kernel/redact.ts";
import { RUN_STATES, type RunState } from "../../workflow/types.ts";
import { routeKey } from "../access.ts";
import type { ApiDefinitions } from "./app.ts";
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
  quoted,
  readBody,
  readQuery,
  type RouteSchemas,
  tenantScope,
  TEXT,
} from "./common.ts";

/** The query of `GET /api/v1/workflows`: the filters of `jobs workflows`, and the page. */
export const WorkflowsQuery = z.strictObject({
  state: oneOrSeveral(RUN_STATES, "one run state or several, comma-separated").optional(),
  workflow: TEXT.describe("runs of this workflow").optional(),
  after: ID_TEXT.describe("the `next` of the previous page").optional(),
  limit: LIMIT_TEXT.describe("runs per page, 1 to 500, default 50").optional(),
});

/** The body of `POST /api/v1/workflows` (`jobs start`). The tenant is the principal's. */
export const StartBody = z.strictObject({
  workflow: TEXT.describe("a workflow the daemon's schedules file declares"),
  input: z.unknown().describe("the run's input, any JSON value (default {})").optional(),
  key: TEXT.describe("an idempotency key: a second start with it returns the first run")
    .optional(),
  reason: z.string().min(1).max(1000).describe("why, for the audit trail").optional(),
});

/** How many of a run's steps are where. */
const StepCountsAnswer = z.object({
  total: z.int(),
  completed: z.int(),
  running: z.int(),
  failed: z.int(),
  cancelled: z.int(),
  waiting: z.int(),
});

/** A run of the listing (`jobs workflows --json`). */
export const WorkflowRunAnswer = z.object({
  id: z.int(),
  workflow: z.string(),
  state: z.enum(RUN_STATES as [RunState, ...RunState[]]),
  tenant: z.string().nullable(),
  key: z.string().nullable(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  error: z.string().nullable(),
  steps: StepCountsAnswer,
});

/** The answer of `GET /api/v1/workflows`. */
export const WorkflowsPage = z.object({
  workflows: z.array(WorkflowRunAnswer),
  next: z.int().nullable(),
});

/** The answer of `GET /api/v1/workflows/{id}` (`jobs workflow show --json`). */
export const WorkflowDetailAnswer = z.object({
  run: z.looseObject({
    id: z.int(),
    workflow: z.string(),
    state: z.enum(RUN_STATES as [RunState, ...RunState[]]),
    tenant: z.string().nullable(),
    input: z.unknown(),
  }),
  saga: z.boolean(),
  hash: z.string(),
  steps: z.array(z.looseObject({ id: z.string(), state: z.string() })),
  compensations: z.array(z.looseObject({ step: z.string(), state: z.string() })),
  audit: z.array(AuditAnswer),
});

/** The answer of `POST /api/v1/workflows`. */
export const StartAnswer = z.object({
  id: z.int(),
  workflow: z.string(),
  duplicate: z.boolean(),
});

/** The answer of `POST /api/v1/workflows/{id}/cancel|retry` (`jobs workflow cancel --json`). */
export const WorkflowActionAnswer = z.object({
  id: z.int(),
  workflow: z.string(),
  was: z.enum(RUN_STATES as [RunState, ...RunState[]]),
  state: z.enum(RUN_STATES as [RunState, ...RunState[]]),
  jobs: z.array(z.int()),
});

const ACTION: RouteSchemas = { body: ActionBody, answer: WorkflowActionAnswer, status: 200 };

/** The schemas of the workflows routes, by route key. */
export const WORKFLOWS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/workflows")]: {
    query: WorkflowsQuery,
    answer: WorkflowsPage,
    status: 200,
  },
  [routeKey("POST", "/api/v1/workflows")]: { body: StartBody, answer: StartAnswer, status: 201 },
  [routeKey("GET", "/api/v1/workflows/:id")]: { answer: WorkflowDetailAnswer, status: 200 },
  [routeKey("POST", "/api/v1/workflows/:id/cancel")]: ACTION,
  [routeKey("POST", "/api/v1/workflows/:id/retry")]: ACTION,
};

/**
 * Registers the workflows routes; `definitions` is the daemon's schedules
 * file as it is now (none: a start answers 409).
 */
export function registerWorkflows(
  api: ApiRouter,
  definitions: (() => ApiDefinitions) | undefined,
): void {
  const { store, clock } = api;

  api.on("GET", "/api/v1/workflows", async (c, p) => {
    const query = readQuery(c, WorkflowsQuery);
    const limit = pageLimit(query.limit);
    const runs = await listWorkflowRuns(store, {
      ...(query.state === undefined ? {} : { state: query.state.split(",") as RunState[] }),
      ...(query.workflow === undefined ? {} : { workflow: query.workflow }),
      ...(query.after === undefined ? {} : { after: Number(query.after) }),
      ...tenantScope(p),
      limit: limit + 1,
    });
    const { page, next } = keysetPage(runs, limit, (row) => row.id);
    return c.json({ workflows: page.map(workflowSummaryJson), next });
  });

  api.on("GET", "/api/v1/workflows/:id", async (c, p) => {
    const id = runId(c);
    const view = id < 1 ? null : await workflowRunView(store, id, p.tenant);
    if (!view) throw noRun(c);
    const trail = await store.auditList({ target: `workflow:${id}` });
    return c.json({ ...workflowViewJson(view), audit: trail.map(auditJson) });
  });

  api.on("POST", "/api/v1/workflows", async (c, p) => {
    const body = await readBody(c, StartBody);
    checkedReason(body.reason);
    if (!definitions) {
      throw new ApiError(
        409,
        "definitions-unavailable",
        "this server has no schedules file to take the workflow's definition from",
      );
    }
    const definition = definitions().workflows.find((w) => w.id === body.workflow);
    if (!definition) {
      throw new ApiError(
        404,
        "workflow-not-found",
        `no workflow ${quoted(body.workflow)} in the daemon's schedules file`,
      );
    }
    const who = api.who(p, body.reason ?? null);
    try {
      const started = await startWorkflowRun(store, {
        definition,
        input: body.input ?? {},
        key: body.key ?? null,
        tenant: p.tenant,
        actor: who.actor,
        reason: who.reason,
        now: who.now,
      });
      return c.json({ id: started.id, workflow: definition.id, duplicate: started.duplicate }, 201);
    } catch (error) {
      if (error instanceof EnqueueError) {
        throw new ApiError(400, "input-refused", redact(error.message));
      }
      if (error instanceof WorkflowActionRefused) {
        throw new ApiError(409, "key-taken", redact(error.message));
      }
      throw error;
    }
  });

  for (const action of ["cancel", "retry"] as const) {
    api.on("POST", `/api/v1/workflows/:id/${action}`, async (c, p) => {
      const { reason } = await readBody(c, ActionBody);
      checkedReason(reason);
      const id = runId(c);
      if (id < 1) throw noRun(c);
      const params = { id, reason, actor: api.who(p, reason).actor, now: clock.now() };
      try {
        const done = await (action === "cancel" ? cancelWorkflowRun : retryWorkflowRun)(store, {
          ...params,
          tenant: p.tenant,
        });
        return c.json(done);
      } catch (error) {
        if (error instanceof WorkflowActionRefused) {
          if (error.state === null) throw noRun(c);
          throw new ApiError(409, "not-applicable", redact(error.message));
        }
        throw error;
      }
    });
  }
}

/** The run id of the path, or -1 when it is not one (found as no run). */
function runId(c: Ctx): number {
  const text = c.req.param("id") ?? "";
  return /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

/** The 404 of a run not in the principal's scope (or nowhere): the same answer for both. */
function noRun(c: Ctx): ApiError {
  return new ApiError(
    404,
    "workflow-run-not-found",
    `no workflow run ${quoted(c.req.param("id") ?? "")}`,
  );
}
