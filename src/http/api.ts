/**
 * `/api/v1`: the store's jobs over HTTP, with the identity of the principal
 * the bearer credential names (see `access.ts`). Routed by Hono; each route
 * is registered here and named, with its roles, in `API_ROUTES`.
 *
 * Every refusal is `{"error": {"code", "message"}}` with a status that says
 * its class (400, 401, 403, 404, 409, 413, 429); an unexpected failure is a
 * 500 whose body says nothing but `internal`, the detail going to the log
 * (`http.error`, redacted). Bodies are read up to {@linkcode MAX_BODY_BYTES}
 * and JSON nested deeper than {@linkcode MAX_JSON_DEPTH} is refused before a
 * schema sees it. Failed bearer attempts are counted per source address
 * (`failures.ts`): past the limit the address gets 429 until its window ends.
 *
 * A tenant-scoped principal reads and acts on its tenant's jobs only: the
 * tenant goes into the store's statement (`JobFilter.tenant`), and a job of
 * another tenant answers 404, as one that does not exist. A tenant named in
 * a query or body is refused (400): the schemas are strict.
 *
 * Queues are not tenant data: a queue holds every tenant's jobs, and a
 * pause stops them all; nor, yet, are schedules (the store reads them all
 * at once, with no tenant in the statement). Their routes answer a
 * tenant's principal 403
 * (`installation-scope-required`); only installation-wide principals use
 * them. The views read the schedules the store last synced (what the
 * daemon runs), as the API has no schedules file of its own.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import type { z } from "zod";
import { type Role, ROLES } from "../admin/roles.ts";
import { attemptJson, auditJson, jobJson } from "../admin/job_json.ts";
import { type Actor, placeholderMessage, placeholderReason } from "../admin/audit.ts";
import {
  applyJobAction,
  enqueueJob,
  jobDetailInScope,
  jobInScope,
  jobsView,
} from "../admin/jobs.ts";
import { EnqueueError, type EnqueueOptions } from "../kernel/enqueue.ts";
import { authenticateToken } from "../admin/tokens.ts";
import { nodesView } from "../admin/nodes.ts";
import { queueJson, queuesView, setQueuePaused } from "../admin/queues.ts";
import {
  scheduleJson,
  schedulesView,
  setScheduleEnabled,
  storedConfig,
} from "../admin/schedules.ts";
import type { JobState } from "../kernel/types.ts";
import type { Clock } from "../clock.ts";
import type { Logger } from "../kernel/logger.ts";
import { redact } from "../kernel/redact.ts";
import type { JobFilter, Store } from "../store/store.ts";
import { ActionBody, AuditQuery, EnqueueBody, JobsQuery, QueueActionBody } from "./api_schemas.ts";
import {
  actorOf,
  INSTALLATION_ADMIN,
  type Principal,
  refusal,
  routeKey,
  routeOf,
} from "./access.ts";
import { tokenChecker } from "./bearer.ts";
import { openApiDocument } from "./openapi.ts";
import { FailureLimiter, type FailureLimitOptions } from "./failures.ts";
import { nestedDeeper } from "../text/nesting.ts";

/** Request bodies are read up to this many bytes; a longer one is refused (413). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** JSON nested deeper than this (arrays and objects) is refused (400). */
export const MAX_JSON_DEPTH = 32;

/** Options of {@linkcode apiApp}. */
export interface ApiOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The daemon's old single `--token`: an installation-wide admin. */
  token?: string;
  /** How failed bearer attempts are limited per source address. */
  failures?: FailureLimitOptions;
}

/** What the server hands each request besides itself: where it comes from. */
export interface ApiEnv {
  /** The source address (no port), for the failure limit. */
  remote: string;
}

type Env = { Bindings: ApiEnv; Variables: { principal: Principal } };
type Ctx = Context<Env>;

/** A refusal: its status, stable code and one-sentence message become the JSON answer. */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The refusal body every route answers. */
function refuse(c: Ctx, error: ApiError, headers: Record<string, string> = {}): Response {
  return c.json({ error: { code: error.code, message: error.message } }, error.status, headers);
}

/**
 * The `/api/v1` application: `app.fetch(request, { remote })`. Routes the
 * table does not name are refused to everyone.
 */
export async function apiApp(options: ApiOptions): Promise<Hono<Env>> {
  const { store, clock, logger } = options;
  const installation = options.token === undefined ? null : await tokenChecker(options.token);
  const failures = new FailureLimiter(clock, options.failures);
  const app = new Hono<Env>();

  app.onError((error, c) => {
    if (error instanceof ApiError) return refuse(c, error);
    logger("http.error", { path: c.req.path, error: oneLine(error) });
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });
  app.notFound((c) => refuse(c, new ApiError(404, "not-found", "no such route")));

  /** Who the credential names, or the refusal (401, 429). */
  const authenticate = async (c: Ctx): Promise<Principal | Response> => {
    const remote = c.env?.remote ?? "unknown";
    const wait = failures.blockedFor(remote);
    if (wait > 0) {
      return refuse(
        c,
        new ApiError(429, "too-many-failures", "too many failed credentials from this address"),
        { "retry-after": String(Math.ceil(wait / 1000)) },
      );
    }
    const header = c.req.header("authorization") ?? null;
    const match = /^Bearer +(\S+)$/i.exec(header ?? "");
    const bad = (message: string) =>
      refuse(c, new ApiError(401, "unauthorized", message), { "www-authenticate": "Bearer" });
    if (!match) return bad("a bearer token is required");
    if (installation && (await installation(header))) return INSTALLATION_ADMIN;
    const token = await authenticateToken(store, match[1]!, clock.now());
    if (token) {
      return {
        name: token.name,
        kind: "token",
        roles: knownRoles(token.roles),
        tenant: token.tenant,
      };
    }
    failures.fail(remote);
    return bad("the token is unknown, expired, revoked or disabled");
  };

  /** Registers one route behind the credential and the role table. */
  const on = (
    method: "GET" | "POST",
    path: string,
    handler: (c: Ctx, principal: Principal) => Promise<Response>,
  ) => {
    const route = routeOf(method, path);
    app.on(method, path, async (c) => {
      const principal = await authenticate(c);
      if (principal instanceof Response) return principal;
      const refused = refusal(principal, route);
      if (refused) return refuse(c, new ApiError(refused.status, refused.code, refused.message));
      return await handler(c, principal);
    });
  };

  on("GET", "/api/v1/me", (c, p) =>
    Promise.resolve(c.json({
      name: p.name,
      kind: p.kind,
      roles: p.roles,
      tenant: p.tenant,
      actor: actorOf(p),
    })));

  const description = openApiDocument();
  on("GET", "/api/v1/openapi.json", (c) => Promise.resolve(c.json(description)));

  on("GET", "/api/v1/jobs", async (c, p) => {
    const query = checked(JobsQuery, c.req.query(), "query");
    const limit = query.limit === undefined ? 50 : Math.min(Number(query.limit), 500);
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

  on("GET", "/api/v1/jobs/:id", async (c, p) => {
    const detail = await jobDetailInScope(store, jobId(c), p.tenant);
    if (!detail) throw noJob(c);
    return c.json({
      job: jobJson(detail.job),
      attempts: detail.attempts.map(attemptJson),
      audit: detail.audit.map(auditJson),
    });
  });

  on("POST", "/api/v1/jobs", async (c, p) => {
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
      const result = await enqueueJob(store, body.worker, body.args ?? {}, options, who(p, null));
      return c.json({ id: result.id, duplicate: result.duplicate }, 201);
    } catch (error) {
      if (error instanceof EnqueueError) {
        throw new ApiError(400, "enqueue-refused", redact(error.message));
      }
      throw error;
    }
  });

  for (const action of ["retry", "cancel", "discard"] as const) {
    on("POST", `/api/v1/jobs/:id/${action}`, async (c, p) => {
      const { reason } = await readBody(c, ActionBody);
      const placeholder = placeholderReason(reason);
      if (placeholder !== null) {
        throw new ApiError(400, "reason-invalid", placeholderMessage(reason, placeholder));
      }
      const job = await jobInScope(store, jobId(c), p.tenant);
      if (!job) throw noJob(c);
      const { changed, skipped } = await applyJobAction(store, action, [job], who(p, reason));
      if (changed.length === 0) {
        const why = skipped[0]?.why ?? "cannot be changed";
        throw new ApiError(409, "not-applicable", `job ${job.id} ${why}: nothing to ${action}`);
      }
      return c.json({ id: job.id, action, was: job.state });
    });
  }

  on("GET", "/api/v1/audit", async (c, p) => {
    const query = checked(AuditQuery, c.req.query(), "query");
    const limit = query.limit === undefined ? 50 : Math.min(Number(query.limit), 500);
    const rows = await store.auditPage({
      ...(query.target === undefined ? {} : { target: query.target }),
      ...(query.after === undefined ? {} : { after: Number(query.after) }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    return c.json({
      audit: page.map(auditJson),
      next: rows.length > limit ? page.at(-1)!.id : null,
    });
  });

  on("GET", "/api/v1/queues", async (c, p) => {
    installationWide(p);
    const config = await storedConfig(store);
    const queues = await queuesView(store, config, await nodesView(store, clock.now()));
    return c.json({ queues: queues.map(queueJson) });
  });

  for (const action of ["pause", "resume"] as const) {
    on("POST", `/api/v1/queues/:name/${action}`, async (c, p) => {
      installationWide(p);
      const { reason } = await readBody(c, QueueActionBody);
      const placeholder = reason === undefined ? null : placeholderReason(reason);
      if (placeholder !== null) {
        throw new ApiError(400, "reason-invalid", placeholderMessage(reason!, placeholder));
      }
      const name = c.req.param("name") ?? "";
      const known = await queuesView(
        store,
        await storedConfig(store),
        await nodesView(store, clock.now()),
      );
      if (!known.some((q) => q.name === name)) {
        throw new ApiError(
          404,
          "queue-not-found",
          redact(
            `no queue ${
              JSON.stringify(name.slice(0, 200))
            } is used by a job, stored or served by a node`,
          ),
        );
      }
      const r = await setQueuePaused(store, name, action === "pause", who(p, reason ?? null));
      return c.json({ queue: r.queue, paused: r.paused, was: r.was });
    });
  }

  on("GET", "/api/v1/schedules", async (c, p) => {
    installationWide(p);
    const schedules = await schedulesView(store, await storedConfig(store), clock.now());
    return c.json({ schedules: schedules.map(scheduleJson) });
  });

  for (const action of ["disable", "enable"] as const) {
    on("POST", `/api/v1/schedules/:id/${action}`, async (c, p) => {
      installationWide(p);
      const { reason } = await readBody(c, ActionBody);
      const placeholder = placeholderReason(reason);
      if (placeholder !== null) {
        throw new ApiError(400, "reason-invalid", placeholderMessage(reason, placeholder));
      }
      const id = c.req.param("id") ?? "";
      const [row] = id.length > 200 ? [] : await store.schedulesList({ ids: [id] });
      if (!row) {
        throw new ApiError(
          404,
          "schedule-not-found",
          redact(`no schedule ${JSON.stringify(id.slice(0, 200))} in the store`),
        );
      }
      const r = await setScheduleEnabled(store, id, action === "enable", who(p, reason), null);
      return c.json({ schedule: r.id, enabled: r.enabled, was: r.was });
    });
  }

  /** The actor of an action `p` takes now, with its reason. */
  const who = (p: Principal, reason: string | null): Actor => ({
    actor: actorOf(p),
    reason,
    now: clock.now(),
  });

  return app;
}

/**
 * Refuses a tenant's principal (403) a route over installation-wide data:
 * queues and schedules are shared by every tenant.
 */
function installationWide(p: Principal): void {
  if (p.tenant !== null) {
    throw new ApiError(
      403,
      "installation-scope-required",
      `this route acts on data every tenant shares; a principal scoped to tenant ${
        JSON.stringify(p.tenant)
      } may not use it`,
    );
  }
}

/** The job id of the path, or -1 when it is not one (found as no job). */
function jobId(c: Ctx): number {
  const text = c.req.param("id") ?? "";
  return /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

/** The 404 of a job not in the principal's scope (or nowhere): the same answer for both. */
function noJob(c: Ctx): ApiError {
  return new ApiError(404, "job-not-found", `no job ${JSON.stringify(c.req.param("id"))}`);
}

/** The route keys `app` registers under `/api/v1` (middleware excluded). */
export function registeredRoutes(app: Hono<Env>): string[] {
  return [
    ...new Set(
      app.routes.filter((r) => r.method !== "ALL" && r.path.startsWith("/api/v1/"))
        .map((r) => routeKey(r.method, r.path)),
    ),
  ];
}

/**
 * The JSON body of `c`, read up to {@linkcode MAX_BODY_BYTES}, no deeper
 * than {@linkcode MAX_JSON_DEPTH}, and checked by `schema`; refused (400,
 * 413) naming the first field at fault.
 */
export async function readBody<S extends z.ZodType>(c: Ctx, schema: S): Promise<z.output<S>> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const body = c.req.raw.body;
  if (body) {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) throw tooLarge();
      chunks.push(chunk);
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError(400, "body-invalid", "the body is not JSON in UTF-8");
  }
  if (nestedDeeper(value, MAX_JSON_DEPTH)) {
    throw new ApiError(400, "body-too-deep", `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return checked(schema, value, "body");
}

/** `value` checked by `schema`, or a 400 naming the first field at fault in `where`. */
export function checked<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: string,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join(".") : null;
  const unknownKeys = issue.code === "unrecognized_keys" ? issue.keys.join(", ") : null;
  const message = unknownKeys !== null
    ? `${where}: unknown field ${JSON.stringify(unknownKeys)}`
    : `${where}${field === null ? "" : ` field ${JSON.stringify(field)}`}: ${issue.message}`;
  throw new ApiError(400, `${where}-invalid`, redact(message));
}

function tooLarge(): ApiError {
  return new ApiError(413, "body-too-large", `the body is over ${MAX_BODY_BYTES} bytes`);
}

/** The roles of `roles` this code knows; a name it does not know grants nothing. */
function knownRoles(roles: readonly string[]): Role[] {
  return roles.filter((r): r is Role => (ROLES as readonly string[]).includes(r));
}

/** The first line of an error's message, redacted. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redact(message.split("\n", 1)[0]!.trim());
}
