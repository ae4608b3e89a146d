/**
 * `/api/v1/reports`: the reports the schedules file declares, their runs
 * (list, request, progress) and download links, through the doors of
 * `src/admin/reports.ts`, with the principal's identity. These are the
 * daemon's old `/reports/...` routes, moved: nothing about who asks is read
 * from the request any more.
 *
 * - The actor of a run and of a link is the principal (`token:<name>`,
 *   {@linkcode actorOf}); a body naming `actor`, `roles` or `tenant` is
 *   refused 400 `body-invalid` (the schemas are strict).
 * - The tenant is the principal's. A tenant's principal runs a
 *   tenant-isolated report for its own tenant, sees only its tenant's runs
 *   (the tenant in the store's statement: `reportRunsList`,
 *   `reportRunGet`), and another tenant's run answers 404 as a missing one.
 *   A report of `tenancy: shared` reads rows every tenant shares, so a
 *   tenant's principal is refused it (403 `installation-scope-required`).
 *   An installation-wide principal has no tenant to bind, so it may run a
 *   shared report but not an isolated one (400 `tenant-required`): a
 *   program runs those with a token scoped to the tenant (`jobs tokens
 *   create --tenant acme`), and a person on the host with `jobs report
 *   --tenant acme` (the command line, the root of trust, names any tenant).
 * - The roles a report checks (`authorize.roles`, and `authorize.sensitive`
 *   for masking) are matched against the principal's roles (`viewer`,
 *   `operator`, `approver`, `admin`), never against roles a request
 *   names. A report that lists only roles of its own (`finance`) is run
 *   over the API by nobody (403 `role-refused`): list `operator` (or
 *   `admin`) there to let the API's principals run it, and name them in
 *   `sensitive` to let them read a masked column. The route table lets
 *   `operator` and `admin` request runs and links, and every role read.
 * - A request waits up to the `reports.request_budget` setting: 200 with
 *   the ended run when it ended within it, else 202 with
 *   `Location: /api/v1/reports/runs/<run>`. A limit is 429 `report-limit`.
 *
 * @module
 */

import { z } from "zod";
import { NoPublicUrl } from "../../admin/public_url.ts";
import {
  mintLink,
  reportJson,
  ReportRequestError,
  reportRunInScope,
  reportRuns,
  runJson,
  startReport,
} from "../../admin/reports.ts";
import type { CompiledReport } from "../../report/definition.ts";
import { ReportLimitExceeded, requestBudget } from "../../report/limits.ts";
import { REPORT_QUEUE } from "../../report/types.ts";
import { actorOf, type Principal, routeKey } from "../access.ts";
import type { ReportRoutes } from "../reports.ts";
import {
  ApiError,
  type ApiRouter,
  type Ctx,
  ID_TEXT,
  installationWide,
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

/** What the report routes need from the daemon: its reports, their storage, and where links point. */
export interface ApiReports extends ReportRoutes {
  /** `https://host[:port][/path]` a download link is joined to. */
  base: () => Promise<string>;
}

/** How often a request within its budget looks at its run. */
const BUDGET_POLL_MS = 25;

/** The longest a link may live (S3's own bound on a pre-signed URL). */
export const MAX_LINK_TTL_MS = 7 * 86_400_000;

/** A link lives this long unless `ttl_ms` says otherwise. */
const DEFAULT_LINK_TTL_MS = 10 * 60_000;

const ENDED = new Set(["completed", "failed", "cancelled"]);

/** A declared parameter's value: its text, or a JSON number or boolean (read as its text). */
const ParamValue = z.union([z.string().max(10_000), z.number(), z.boolean()]);

/**
 * The parameters of a request. A `__proto__` key is refused: a record
 * would drop it silently (it is no parameter of any report anyway).
 */
const Params = z.preprocess(
  (value, ctx) => {
    if (value !== null && typeof value === "object" && Object.hasOwn(value, "__proto__")) {
      ctx.issues.push({
        code: "custom",
        message: 'no report has a parameter "__proto__"',
        input: value,
      });
    }
    return value;
  },
  z.record(z.string().min(1).max(200), ParamValue),
);

/** The body of `POST /api/v1/reports/{id}/runs`. Who asks is the principal, never the body. */
export const RunRequestBody = z.strictObject({
  params: Params.describe("the report's declared parameters, name: value").optional(),
  sort: TEXT.describe("one of the report's sort keys").optional(),
  format: z.enum(["csv", "ndjson"]).describe("the report's format (it writes one)").optional(),
});

/** The body of `POST /api/v1/reports/runs/{run}/links`. */
export const LinkBody = z.strictObject({
  ttl_ms: z.int().min(1).max(MAX_LINK_TTL_MS)
    .describe("how long the link works, in ms (default 10 minutes, never past the output's expiry)")
    .optional(),
});

/** The query of `GET /api/v1/reports/runs`. */
export const RunsQuery = z.strictObject({
  report: TEXT.describe("only this report's runs").optional(),
  after: ID_TEXT.describe("the `next` of the previous page").optional(),
  limit: LIMIT_TEXT.describe("runs per page, 1 to 500, default 50").optional(),
});

/** A declared report as the API lists it. */
export const ReportAnswer = z.object({
  id: z.string(),
  params: z.record(
    z.string(),
    z.object({ type: z.string(), values: z.array(z.string()).optional() }),
  ),
  formats: z.array(z.string()),
  tenancy: z.enum(["isolated", "shared"]),
  sort: z.object({ keys: z.array(z.string()), default: z.string().nullable() }).nullable(),
  roles: z.array(z.string()),
  description: z.string().nullable(),
});

/** The answer of `GET /api/v1/reports`. */
export const ReportsAnswer = z.object({ reports: z.array(ReportAnswer) });

/** A run as the API shows it (`jobs reports --json`'s): instants as ISO UTC, the error one line. */
export const RunAnswer = z.object({
  run: z.int(),
  report: z.string(),
  state: z.string(),
  rows: z.int(),
  bytes: z.int(),
  output: z.string().nullable(),
  job: z.int(),
  tenant: z.string().nullable(),
  actor: z.string(),
  params: z.record(z.string(), z.unknown()),
  error: z.string().nullable(),
  limit: z.string().nullable(),
  requestedAt: z.string().nullable(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
});

/** The answer of `GET /api/v1/reports/runs`. */
export const RunsPage = z.object({ runs: z.array(RunAnswer), next: z.int().nullable() });

/** The 202 of a request that outlived its budget: the run so far, and the budget. */
export const RunAccepted = RunAnswer.extend({ budgetMs: z.int() });

/** The answer of `POST /api/v1/reports/runs/{run}/links`. */
export const LinkAnswer = z.object({
  run: z.int(),
  url: z.string(),
  expires: z.string(),
  kind: z.enum(["s3", "daemon"]),
});

/** The schemas of the reports routes, by route key. */
export const REPORTS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/reports")]: { answer: ReportsAnswer, status: 200 },
  [routeKey("GET", "/api/v1/reports/runs")]: { query: RunsQuery, answer: RunsPage, status: 200 },
  [routeKey("POST", "/api/v1/reports/:id/runs")]: {
    body: RunRequestBody,
    answer: RunAnswer,
    status: 200,
    accepted: RunAccepted,
  },
  [routeKey("GET", "/api/v1/reports/runs/:run")]: { answer: RunAnswer, status: 200 },
  [routeKey("POST", "/api/v1/reports/runs/:run/links")]: {
    body: LinkBody,
    answer: LinkAnswer,
    status: 201,
  },
};

/** Registers the reports routes over `reports` (none declared when not given). */
export function registerReports(api: ApiRouter, reports: ApiReports | undefined): void {
  const { store, clock } = api;
  const declared = (): readonly CompiledReport[] => reports?.reports() ?? [];
  const reportOf = (id: string) => declared().find((r) => r.id === id);

  api.on(
    "GET",
    "/api/v1/reports",
    (c) => Promise.resolve(c.json({ reports: declared().map(reportJson) })),
  );

  api.on("GET", "/api/v1/reports/runs", async (c, p) => {
    const query = readQuery(c, RunsQuery);
    const limit = pageLimit(query.limit);
    const runs = await reportRuns(store, {
      ...(query.report === undefined ? {} : { report: query.report }),
      ...(query.after === undefined ? {} : { before: Number(query.after) }),
      ...tenantScope(p),
      limit: limit + 1,
    });
    const { page, next } = keysetPage(runs, limit, (row) => row.id);
    return c.json({ runs: page.map(runJson), next });
  });

  api.on("GET", "/api/v1/reports/runs/:run", async (c, p) => {
    const run = await reportRunInScope(store, runId(c), p.tenant);
    if (!run) throw noRun(c);
    return c.json(runJson(run));
  });

  api.on("POST", "/api/v1/reports/:id/runs", async (c, p) => {
    const body = await readBody(c, RunRequestBody);
    const report = reportOf(param(c, "id"));
    if (!report || !reports) {
      throw new ApiError(404, "report-not-found", `no report ${quoted(param(c, "id"))}`);
    }
    const tenant = tenantFor(report, p);
    if (body.format !== undefined && body.format !== report.format?.type) {
      throw new ApiError(
        400,
        "format-invalid",
        `report ${report.id} writes ${report.format?.type ?? "no format"}, not ${body.format}`,
      );
    }
    // fromEntries defines own properties: a param named like an object property stays a param.
    const params: Record<string, string> = Object.fromEntries(
      Object.entries(body.params ?? {}).map(([k, v]) => [k, String(v)]),
    );
    let started;
    try {
      started = await startReport(store, report, {
        params,
        tenant,
        actor: actorOf(p),
        roles: [...p.roles],
        sort: body.sort ?? null,
      }, clock.now());
    } catch (error) {
      if (error instanceof ReportLimitExceeded) {
        throw new ApiError(429, "report-limit", error.message);
      }
      if (error instanceof ReportRequestError) {
        throw new ApiError(error.field === "roles" ? 403 : 400, error.code, error.message);
      }
      throw error;
    }
    reports.wake?.([REPORT_QUEUE]);
    const budget = await requestBudget((key) => store.settingGet({ key }));
    const until = clock.now() + budget;
    let run = started.run;
    while (!ENDED.has(run.state) && clock.now() < until) {
      await clock.sleep(Math.min(BUDGET_POLL_MS, Math.max(1, until - clock.now())));
      run = (await store.reportRunGet({ id: run.id })) ?? run;
    }
    if (ENDED.has(run.state)) return c.json(runJson(run));
    return c.json({ ...runJson(run), budgetMs: budget }, 202, {
      location: `/api/v1/reports/runs/${run.id}`,
    });
  });

  api.on("POST", "/api/v1/reports/runs/:run/links", async (c, p) => {
    const body = await readBody(c, LinkBody);
    const run = await reportRunInScope(store, runId(c), p.tenant);
    if (!run) throw noRun(c);
    const report = reportOf(run.report);
    if (!report || !reports) {
      throw new ApiError(
        404,
        "report-not-found",
        `run ${run.id} is of report ${
          quoted(run.report)
        }, which the schedules file no longer declares`,
      );
    }
    if (run.state !== "completed" || run.storageKey === null) {
      throw new ApiError(409, "no-output", `run ${run.id} is ${run.state}: it has no output`);
    }
    if (run.expiresAt !== null && run.expiresAt <= clock.now()) {
      throw new ApiError(409, "output-expired", `run ${run.id}: its output expired`);
    }
    const link = await mintLink({
      store,
      report,
      storage: reports.storage(report),
      runId: run.id,
      actor: actorOf(p),
      ...tenantScope(p),
      ttlMs: body.ttl_ms ?? DEFAULT_LINK_TTL_MS,
      now: clock.now(),
      base: reports.base,
    }).catch((error) => {
      if (error instanceof NoPublicUrl) throw new ApiError(409, "no-public-url", error.message);
      throw error;
    });
    return c.json({ ...link, expires: new Date(link.expires).toISOString() }, 201);
  });
}

/**
 * The tenant a run of `report` requested by `p` reads: the principal's.
 * A shared report is refused to a tenant's principal (403), an isolated
 * one to an installation-wide principal, which has no tenant (400).
 */
function tenantFor(report: CompiledReport, p: Principal): string | null {
  if (report.tenancy.mode === "shared") {
    installationWide(p);
    return null;
  }
  if (p.tenant === null) {
    throw new ApiError(
      400,
      "tenant-required",
      `report ${report.id} is tenant-isolated and this principal is installation-wide: ` +
        `request it with a token scoped to the tenant (jobs tokens create --tenant <t>), ` +
        `or run it on the host (jobs report ${report.id} --tenant <t>)`,
    );
  }
  return p.tenant;
}

/** The run id of the path, or -1 when it is not one (found as no run). */
function runId(c: Ctx): number {
  const text = c.req.param("run") ?? "";
  return /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

/** The 404 of a run not in the principal's scope (or nowhere): the same answer for both. */
function noRun(c: Ctx): ApiError {
  return new ApiError(404, "run-not-found", `no report run ${quoted(param(c, "run"))}`);
}
