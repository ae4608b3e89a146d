/**
 * The web console: server-rendered HTML pages over the doors of
 * `src/admin/`, served by `jobs daemon` on its listener at `/` beside
 * `/api/v1` (`src/http/server.ts` routes every path that is not the API,
 * `/healthz`, `/readyz`, `/metrics` or `/downloads/` here). Routed by Hono
 * and rendered by its JSX (`jsx.ts`); each page's file registers its routes
 * through {@linkcode ConsoleRouter.page} (`common.ts`), which puts every
 * route behind the session and the role table `CONSOLE_ROUTES`
 * (`access.ts`), denying what the table does not name.
 *
 * Who acts comes only from the session cookie (`security.ts`): an
 * `Authorization` header is never read here, as `/api/v1` never reads the
 * cookie. A page without a live session leads to `/login` (`?ended` when
 * the cookie named a session that has ended). Every answer carries the
 * Content-Security-Policy and its companions; every request that changes
 * state passes the CSRF check first (403 otherwise). An unexpected failure
 * is a 500 page that says nothing else, the detail going to the log
 * (`http.error`, redacted).
 *
 * @module
 */

import { Hono, type MiddlewareHandler } from "hono";
import { FailureLimiter, type FailureLimitOptions } from "../admin/failures.ts";
import { DEFAULT_TIMEOUTS, resolveSession, type SessionTimeouts } from "../admin/sessions.ts";
import { SignInLimiter } from "../admin/people.ts";
import type { Clock } from "../clock.ts";
import { actorOf, type Principal, refusal } from "../http/access.ts";
import type { ApiDefinitions } from "../http/api/app.ts";
import type { ApiReports } from "../http/api/reports.ts";
import type { Logger } from "../kernel/logger.ts";
import { redact } from "../kernel/redact.ts";
import type { Store } from "../store/store.ts";
import { consoleRouteKey, consoleRouteOf, PUBLIC_CONSOLE_ROUTES } from "./access.ts";
import { assetResponse } from "./assets.ts";
import type { ConsoleEnv, ConsoleRouter, Ctx, NavEntry, PageContent } from "./common.ts";
import { errorPage } from "./error_page.tsx";
import { renderPage } from "./layout.tsx";
import { PAGES } from "./pages.ts";
import { crossSite, SECURITY_HEADERS, sessionIdOf } from "./security.ts";
import { registerSignIn } from "./sign_in.tsx";
import { LiveFeed } from "./live.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";
import type { SmtpSettings } from "../workqueue/channels.ts";

/** Options of {@linkcode consoleApp}. */
export interface ConsoleOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** How long sessions live. @default DEFAULT_TIMEOUTS (idle 30 min, absolute 12 h) */
  timeouts?: SessionTimeouts;
  /** How failed sign-ins are limited per source address. @default 10 a minute */
  failures?: FailureLimitOptions;
  /**
   * The shared poller the pages' live stream reads (`live.ts`); the server
   * closes it before it stops, which ends every stream. @default a new one
   */
  live?: LiveFeed;
  /**
   * The definitions of the schedules file the daemon loaded, as they are
   * now (as `ApiOptions.definitions`): what the Workflows and Pipelines
   * pages start runs and replays of. Without them those actions are refused.
   */
  definitions?: () => ApiDefinitions;
  /** The schedules file's reports, their storage and where links point (as `ApiOptions.reports`). */
  reports?: ApiReports;
  /**
   * The schedules file's work queues as they are now (read on each request,
   * so a reloaded file counts): what the Work pages list and act on, and
   * what the live feed counts. Without them the console shows no queue.
   */
  workQueues?: () => readonly WorkQueueDefinition[];
  /** The SMTP server a bulk's e-mailed confirmation code goes through (as `ApiOptions.smtp`). */
  smtp?: SmtpSettings;
}

/** The console application: `app.fetch(request, { remote })`. */
export function consoleApp(options: ConsoleOptions): Hono<ConsoleEnv> {
  const { store, clock, logger } = options;
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS;
  const app = new Hono<ConsoleEnv>();
  const navEntries: NavEntry[] = [];

  app.onError(async (error, c) => {
    logger("http.error", { path: c.req.path, error: oneLine(error) });
    return await errorPage(c, 500, "Something went wrong on the server; the log says what.");
  });
  app.notFound(async (c) => await errorPage(c, 404, "There is no such page."));

  app.use("*", async (c, next) => {
    await next();
    secured(c.res);
  });

  app.get("/assets/:name", (c) => assetResponse(c.req.path) ?? c.notFound());
  registerSignIn(app, {
    sameOrigin,
    store,
    clock,
    timeouts,
    names: new SignInLimiter(clock),
    addresses: new FailureLimiter(clock, options.failures),
  });

  /** The person the cookie's session names, or the answer that leads to sign-in. */
  const authenticate = async (c: Ctx): Promise<Principal | Response> => {
    const id = sessionIdOf(c.req.raw);
    const person = id === null ? null : await resolveSession(store, id, clock.now(), timeouts);
    if (person !== null) return person;
    return c.redirect(id === null ? "/login" : "/login?ended", 303);
  };

  const router: ConsoleRouter = {
    store,
    clock,
    logger,
    ...(options.definitions ? { definitions: options.definitions } : {}),
    ...(options.reports ? { reports: options.reports } : {}),
    workQueues: options.workQueues ?? (() => []),
    ...(options.smtp ? { smtp: options.smtp } : {}),
    page(method, path, handler) {
      const route = consoleRouteOf(method, path);
      app.on(method, path, sameOrigin, async (c) => {
        const principal = await authenticate(c);
        if (principal instanceof Response) return principal;
        const refused = refusal(principal, route);
        if (refused) return await errorPage(c, 403, refused.message);
        return await handler(c, principal);
      });
    },
    nav(entry) {
      navEntries.push(entry);
      navEntries.sort((a, b) => a.order - b.order);
    },
    async render(c, principal, content: PageContent) {
      const nav = navEntries.filter((e) =>
        refusal(principal, consoleRouteOf("GET", e.path)) === null
      );
      return await renderPage(c, { ...content, principal, nav });
    },
    who: (p, reason) => ({ actor: actorOf(p), reason, now: clock.now() }),
    live: options.live ??
      new LiveFeed(store, clock, logger, undefined, options.workQueues ?? (() => [])),
  };

  for (const register of PAGES) register(router);
  return app;
}

/** The route keys `app` registers (middleware excluded), and whether each is public. */
export function consoleRoutes(app: Hono<ConsoleEnv>): { key: string; isPublic: boolean }[] {
  const keys = [
    ...new Set(
      app.routes.filter((r) => r.method !== "ALL").map((r) => consoleRouteKey(r.method, r.path)),
    ),
  ];
  return keys.map((key) => ({ key, isPublic: PUBLIC_CONSOLE_ROUTES.includes(key) }));
}

/**
 * The CSRF check every route runs first (`security.ts`): a request from
 * another site that would change state is refused (403) before anything
 * reads it. A path no route names answers 404 whatever its method.
 */
export const sameOrigin: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  const refused = crossSite(c.req.raw);
  if (refused !== null) return await errorPage(c, 403, `Refused: ${refused}.`);
  await next();
  return undefined;
};

/** `response` with the headers every answer carries: no-store unless it says otherwise. */
function secured(response: Response): Response {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.headers.set(name, value);
  if (!response.headers.has("cache-control")) response.headers.set("cache-control", "no-store");
  return response;
}

/** The first line of an error's message, redacted. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redact(message.split("\n", 1)[0]!.trim());
}
