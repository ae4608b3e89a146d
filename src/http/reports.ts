/**
 * The daemon's report routes:
 *
 * - `POST /reports/<id>/runs` (bearer token): the same request as `jobs
 *   report` (`{ params, tenant, actor, roles, sort }` as JSON). The run is
 *   started and waited for up to the `reports.request_budget` setting:
 *   200 with the ended run when it ended within it, else 202 with the run
 *   id and `Location: /reports/runs/<run>`. A refused request is 400 (bad
 *   request) or 403 (a role the report does not allow), a limit 429.
 * - `GET /reports/runs/<run>` (bearer token): the run, with its progress.
 * - `POST /reports/runs/<run>/links` (bearer token; `{ actor, ttl_ms }`): a
 *   download link, as `jobs report url` mints it, whole: joined to the
 *   stored explicit public URL (`jobs daemon --public-url`), else to the
 *   URL this daemon listens on.
 * - `GET /downloads/<token>`: no bearer (the signed token is the
 *   credential, bound to run, tenant, actor and expiry). Forged or
 *   tampered 403, expired 410, another tenant's 403 when the caller says
 *   whose it is (`X-Jobs-Tenant` or `?tenant=`); every download audited.
 *
 * @module
 */

import { download, mintLink, ReportRequestError, runJson, startReport } from "../admin/reports.ts";
import type { Clock } from "../clock.ts";
import type { CompiledReport } from "../report/definition.ts";
import { ReportLimitExceeded, requestBudget } from "../report/limits.ts";
import type { OutputStorage } from "../report/storage.ts";
import { REPORT_QUEUE } from "../report/types.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";

/** What the report routes need from the daemon. */
export interface ReportRoutes {
  /** The schedules file's reports as they are now. */
  reports: () => readonly CompiledReport[];
  storage: (report: CompiledReport) => OutputStorage;
  /** Wakes this node's producers of `queues` (a run just queued need not wait for their poll). */
  wake?: (queues: string[]) => void;
  /**
   * The URL a download link is joined to (`https://jobs.example.com`); by
   * default the one the listener is bound to.
   */
  publicUrl?: () => Promise<string>;
}

/** How often a request within its budget looks at its run. */
const BUDGET_POLL_MS = 25;

/** The longest a link may live (S3's own bound on a pre-signed URL). */
const MAX_TTL_MS = 7 * 86_400_000;

/** Longest request body read, in bytes. */
const MAX_BODY_BYTES = 64 * 1024;

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  });

/**
 * A refused request: `{ error, code }` (plus `field` or `limit` where they
 * say more). `error` stays the one-line message it always was; `code` is
 * stable for a program to branch on.
 */
const refusal = (
  status: number,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) => json(status, { error: message, code, ...extra }, headers);

/**
 * A path segment percent-decoded, or null when its encoding is malformed
 * (`%`, `%zz`, a cut UTF-8 sequence): a 400 for the caller, never the
 * URIError that reached the listener's error handler as a 500 and an
 * `http.error` line per request.
 */
function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** The answer to a path whose percent-encoding is malformed. */
const badPath = () => refusal(400, "path-invalid", "the path is not valid percent-encoded UTF-8");

const ENDED = new Set(["completed", "failed", "cancelled"]);

/**
 * The answer to a report route, or null when `path` is not one. `bearer`
 * says whether the request carried the daemon's token (routes other than
 * downloads need it).
 */
export async function reportRoute(
  request: Request,
  url: URL,
  bearer: boolean | null,
  deps: {
    store: Store;
    clock: Clock;
    logger: Logger;
    routes: ReportRoutes;
    base: () => Promise<string>;
  },
): Promise<Response | null> {
  const { store, clock, routes } = deps;
  const path = url.pathname;
  const declared = (id: string) => routes.reports().find((r) => r.id === id);

  const downloadMatch = /^\/downloads\/([^/]+)$/.exec(path);
  if (downloadMatch) {
    if (request.method !== "GET") return json(405, { error: "use GET" }, { allow: "GET" });
    const token = decoded(downloadMatch[1]!);
    if (token === null) return badPath();
    const tenant = request.headers.get("x-jobs-tenant") ?? url.searchParams.get("tenant");
    const got = await download({
      store,
      token,
      now: clock.now(),
      ...(tenant !== null ? { tenant } : {}),
      reports: declared,
      storage: routes.storage,
    });
    if (!got.ok) return json(got.status, { error: got.reason });
    return new Response(got.body, {
      status: 200,
      headers: {
        "content-type": got.mediaType,
        "content-length": String(got.bytes),
        "content-disposition": `attachment; filename="${got.fileName}"`,
        "cache-control": "no-store",
      },
    });
  }

  const start = /^\/reports\/([^/]+)\/runs$/.exec(path);
  const one = /^\/reports\/runs\/(\d+)$/.exec(path);
  const links = /^\/reports\/runs\/(\d+)\/links$/.exec(path);
  if (!start && !one && !links) return null;
  if (bearer !== true) {
    return json(401, {
      error: bearer === null
        ? "the report API needs the daemon's token (jobs daemon --token)"
        : "unauthorized",
    }, { "www-authenticate": "Bearer" });
  }

  if (one) {
    if (request.method !== "GET") return json(405, { error: "use GET" }, { allow: "GET" });
    const run = await store.reportRunGet({ id: Number(one[1]) });
    return run ? json(200, runJson(run)) : json(404, { error: `no run ${one[1]}` });
  }

  const body = await readBody(request);
  if ("error" in body) return json(400, { error: body.error });
  const input = body.value;

  if (links) {
    if (request.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
    const run = await store.reportRunGet({ id: Number(links[1]) });
    const report = run ? declared(run.report) : undefined;
    if (!run || !report) return json(404, { error: `no run ${links[1]} of a declared report` });
    const actor = typeof input.actor === "string" ? input.actor : "";
    if (!actor.trim()) return json(400, { error: "actor is required" });
    const ttl = input.ttl_ms ?? 10 * 60_000;
    if (
      typeof ttl !== "number" || !Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_TTL_MS
    ) {
      return json(400, {
        error: `ttl_ms must be a whole number of ms from 1 to ${MAX_TTL_MS} (7 d)`,
      });
    }
    try {
      const link = await mintLink({
        store,
        report,
        storage: routes.storage(report),
        runId: run.id,
        actor,
        ttlMs: ttl,
        now: clock.now(),
        base: deps.base,
      });
      return json(201, { ...link, expires: new Date(link.expires).toISOString() });
    } catch (error) {
      return json(409, { error: (error as Error).message });
    }
  }

  if (request.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
  const id = decoded(start![1]!);
  if (id === null) return badPath();
  const report = declared(id);
  if (!report) return json(404, { error: `no report ${JSON.stringify(start![1])}` });
  const given = input.params ?? {};
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    return refusal(400, "params-invalid", "params must be a JSON object of name: value", {
      field: "params",
    });
  }
  if (input.tenant !== undefined && input.tenant !== null && typeof input.tenant !== "string") {
    return refusal(400, "tenant-invalid", "tenant must be a string", { field: "tenant" });
  }
  // fromEntries defines own properties: a `__proto__` key stays a (refused) param, not a prototype.
  const params: Record<string, string> = Object.fromEntries(
    Object.entries(given).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
  );
  let started;
  try {
    started = await startReport(store, report, {
      params,
      tenant: typeof input.tenant === "string" ? input.tenant : null,
      actor: typeof input.actor === "string" ? input.actor : "",
      roles: Array.isArray(input.roles) ? input.roles.map(String) : [],
      sort: typeof input.sort === "string" ? input.sort : null,
    }, clock.now());
  } catch (error) {
    if (error instanceof ReportLimitExceeded) {
      return refusal(429, "report-limit", error.message, { limit: error.limit });
    }
    if (error instanceof ReportRequestError) {
      return refusal(error.field === "roles" ? 403 : 400, error.code, error.message, {
        field: error.field,
      });
    }
    throw error;
  }
  routes.wake?.([REPORT_QUEUE]);
  const budget = await requestBudget((key) => store.settingGet({ key }));
  const until = clock.now() + budget;
  let run = started.run;
  while (!ENDED.has(run.state) && clock.now() < until) {
    await clock.sleep(Math.min(BUDGET_POLL_MS, Math.max(1, until - clock.now())));
    run = (await store.reportRunGet({ id: run.id })) ?? run;
  }
  if (ENDED.has(run.state)) return json(200, runJson(run));
  return json(202, { ...runJson(run), budgetMs: budget }, {
    location: `/reports/runs/${run.id}`,
  });
}

/** The request's JSON object body (an empty body is `{}`). */
async function readBody(
  request: Request,
): Promise<{ value: Record<string, unknown> } | { error: string }> {
  if (request.method === "GET") return { value: {} };
  const text = await request.text();
  if (new TextEncoder().encode(text).length > MAX_BODY_BYTES) {
    return { error: `the body is over ${MAX_BODY_BYTES} bytes` };
  }
  if (text.trim() === "") return { value: {} };
  try {
    const value = JSON.parse(text);
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return { error: "the body must be a JSON object" };
    }
    return { value };
  } catch {
    return { error: "the body is not JSON" };
  }
}
