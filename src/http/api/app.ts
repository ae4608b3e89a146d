/**
 * `/api/v1`: the store over HTTP, with the identity of the principal the
 * bearer credential names (see `../access.ts`). Routed by Hono; each noun's
 * file beside this one registers its routes (`register<Noun>`) through
 * {@linkcode ApiRouter.on}, which puts every route behind the credential and
 * the role table `API_ROUTES`, denying what the table does not name.
 *
 * An unexpected failure is a 500 whose body says nothing but `internal`, the
 * detail going to the log (`http.error`, redacted). Failed bearer attempts
 * are counted per source address (`../failures.ts`): past the limit the
 * address gets 429 until its window ends.
 *
 * @module
 */

import { Hono } from "hono";
import { authenticateToken } from "../../admin/tokens.ts";
import type { Clock } from "../../clock.ts";
import type { CompiledPipeline } from "../../ingest/types.ts";
import type { Logger } from "../../kernel/logger.ts";
import { redact } from "../../kernel/redact.ts";
import type { Store } from "../../store/store.ts";
import type { CompiledWorkflow } from "../../workflow/types.ts";
import {
  actorOf,
  INSTALLATION_ADMIN,
  type Principal,
  refusal,
  routeKey,
  routeOf,
} from "../access.ts";
import { tokenChecker } from "../bearer.ts";
import { FailureLimiter, type FailureLimitOptions } from "../failures.ts";
import { registerAudit } from "./audit.ts";
import { ApiError, type ApiRouter, type Ctx, type Env, refuse } from "./common.ts";
import { registerJobs } from "./jobs.ts";
import { registerMe } from "./me.ts";
import { openApiDocument } from "./openapi.ts";
import { registerPrincipals } from "./principals.ts";
import { registerQueues } from "./queues.ts";
import { type ApiReports, registerReports } from "./reports.ts";
import { registerSchedules } from "./schedules.ts";
import { registerSettings, type SettingReports } from "./settings.ts";
import { registerStatus } from "./status.ts";
import { registerPipelines } from "./pipelines.ts";
import { registerWorkflows } from "./workflows.ts";
import { registerWork } from "./work.ts";
import type { SmtpSettings } from "../../workqueue/channels.ts";
import type { WorkQueueDefinition } from "../../workqueue/types.ts";

export { type ApiEnv, MAX_BODY_BYTES, MAX_JSON_DEPTH } from "./common.ts";

/** Options of {@linkcode apiApp}. */
export interface ApiOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The daemon's old single `--token`: an installation-wide admin. */
  token?: string;
  /** How failed bearer attempts are limited per source address. */
  failures?: FailureLimitOptions;
  /** The schedules file's reports, their storage and where links point; none when not given. */
  reports?: ApiReports;
  /** The schedules file's reports, whose limits are settings; none when not given. */
  settingReports?: SettingReports;
  /**
   * The definitions of the schedules file the daemon loaded, as they are
   * now (read on each request, so a reloaded file counts): what a workflow
   * start, a pipeline run and a drop's replay run. Without them those
   * routes answer 409 `definitions-unavailable`.
   */
  definitions?: () => ApiDefinitions;
  /** The SMTP server mailed confirmation codes go through (`JOBS_SMTP_URL`); none: e-mail fails. */
  smtp?: SmtpSettings | null;
}

/** The schedules file's definitions the API starts runs of. */
export interface ApiDefinitions {
  /** Its workflows, their attempts filled from the daemon's workers (as its own starts run). */
  workflows: readonly CompiledWorkflow[];
  pipelines: readonly CompiledPipeline[];
  /** Its work queues (`/api/v1/work`); none when not given. */
  workQueues?: readonly WorkQueueDefinition[];
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
        // Every stored role: the route tables name the built-in ones, and a work
        // queue's role (`support`) passes only the work routes that let it.
        roles: token.roles,
        tenant: token.tenant,
      };
    }
    failures.fail(remote);
    return bad("the token is unknown, expired, revoked or disabled");
  };

  const router: ApiRouter = {
    store,
    clock,
    logger,
    on(method, path, handler) {
      const route = routeOf(method, path);
      app.on(method, path, async (c) => {
        const principal = await authenticate(c);
        if (principal instanceof Response) return principal;
        const refused = refusal(principal, route);
        if (refused) return refuse(c, new ApiError(refused.status, refused.code, refused.message));
        controlFree(c);
        return await handler(c, principal);
      });
    },
    who: (p, reason) => ({ actor: actorOf(p), reason, now: clock.now() }),
  };

  registerMe(router);
  const description = openApiDocument();
  router.on("GET", "/api/v1/openapi.json", (c) => Promise.resolve(c.json(description)));
  registerJobs(router);
  registerAudit(router);
  registerQueues(router);
  registerSchedules(router);
  registerReports(router, options.reports);
  registerSettings(router, options.settingReports);
  registerStatus(router);
  registerPrincipals(router);
  registerWorkflows(router, options.definitions);
  registerPipelines(router, options.definitions);
  registerWork(router, options.definitions, options.smtp ?? null);
  return app;
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
 * Refuses (400 `path-invalid`, `query-invalid`) a path parameter or query
 * value holding a NUL or another C0 control character: no id or name holds
 * one, and PostgreSQL refuses a NUL in text, which would otherwise surface
 * as a 500 from whichever statement met it first.
 */
function controlFree(c: Ctx): void {
  // deno-lint-ignore no-control-regex -- the control characters are what this finds
  const control = /[\u0000-\u001f\u007f]/;
  for (const [name, value] of Object.entries(c.req.param() as Record<string, string>)) {
    if (control.test(value)) {
      throw new ApiError(400, "path-invalid", `path parameter ${name} holds a control character`);
    }
  }
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (control.test(name) || values.some((v) => control.test(v))) {
      throw new ApiError(400, "query-invalid", "the query holds a control character");
    }
  }
}

/** The first line of an error's message, redacted. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redact(message.split("\n", 1)[0]!.trim());
}
