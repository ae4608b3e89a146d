/**
 * The daemon's HTTP endpoint: `/healthz` (the process is alive), `/readyz`
 * (the node can use the store), `/metrics` (Prometheus text), `/api/v1`
 * (`api/app.ts`: bearer tokens of the store, or this token as an installation-wide
 * admin; reports are `api/reports.ts`) and `/downloads/<token>` (a report's
 * download link, whose signed token is its own credential: `reports.ts`);
 * every other path is the web console (`../console/app.ts`: people's
 * sessions, never a bearer token).
 * It binds to loopback unless given a token; with a token every route but
 * `/healthz` and `/downloads/` requires `Authorization: Bearer <token>`,
 * compared in constant time.
 *
 * Readiness does not check the schema version: `Store` has no read-only way
 * to ask for it (`migrate` writes). The version is checked when the store
 * opens (a newer schema is refused), and a store that is not migrated fails
 * the read `/readyz` makes, so it reports 503 then.
 *
 * A read is not enough to be ready: a SQLite file locked by another process
 * still answers reads (WAL) while every write waits. So `/readyz` first asks
 * the daemon (`degraded`) whether its own writes are failing, and answers
 * 503 with that reason; `/healthz` stays 200 meanwhile (the process is fine,
 * restarting it would not help).
 *
 * A store that stops answering (a server paused, a network that drops every
 * packet) hangs its reads, and the runtime's calls hang with them until the
 * driver gives up (10 s to connect, longer on a session already open), so
 * nothing is degraded meanwhile. The first probe answers 503 at its
 * deadline; until its read is answered or fails, every later probe answers
 * 503 at once saying since when the store is silent, rather than waiting out
 * the deadline again (past a prober's own timeout) and queueing another read
 * behind the hung ones.
 *
 * @module
 */

import type { WorkQueueDefinition } from "../workqueue/types.ts";
import { hostname } from "node:os";
import { derivedPublicUrl } from "../admin/public_url.ts";
import type { Clock } from "../clock.ts";
import type { CompiledPipeline } from "../ingest/types.ts";
import { redact } from "../kernel/redact.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";
import { METRICS_CONTENT_TYPE, type MetricsSnapshot, renderMetrics } from "./metrics.ts";
import { apiApp, type ApiDefinitions } from "./api/app.ts";
import type { SmtpSettings } from "../workqueue/channels.ts";
import { consoleApp } from "../console/app.ts";
import { LiveFeed } from "../console/live.ts";
import type { SessionTimeouts } from "../admin/sessions.ts";
import { tokenChecker } from "./bearer.ts";
import { downloadRoute, type ReportRoutes } from "./reports.ts";

/** Options for {@linkcode startHttpServer}. */
export interface HttpServerOptions {
  /** The store `/readyz` and `/metrics` read from; never written. */
  store: Store;
  /**
   * `host:port` (`[::1]:9464` for IPv6), port 0 picks a free port; `off`
   * starts nothing. A host other than loopback requires `token`.
   */
  listen: string;
  /** When set, every route but `/healthz` requires `Authorization: Bearer <token>`. */
  token?: string;
  /** Receives `http.listening` and `http.error`; never sees the token. */
  logger: Logger;
  /** Times the `/readyz` deadline, and is the `now` of `/metrics`' ingest freshness. */
  clock: Clock;
  /** The daemon's in-memory counters, added to `/metrics` when given. */
  metrics?: () => MetricsSnapshot;
  /**
   * The schedules file's pipelines as they are now (read on each scrape, so
   * a reloaded file counts): when given, `/metrics` adds their freshness
   * (`jobs_ingest_stale`, `jobs_ingest_freshness_seconds`,
   * `jobs_ingest_last_completed_timestamp_seconds`) read from the store.
   */
  pipelines?: () => readonly CompiledPipeline[];
  /**
   * The schedules file's workflows and pipelines as they are now (read on
   * each request, so a reloaded file counts): what `/api/v1` starts runs
   * of (`POST /api/v1/workflows`, `POST /api/v1/pipelines/{name}/runs`,
   * `POST /api/v1/drops/{id}/replay`). Without them those answer 409.
   */
  definitions?: () => ApiDefinitions;
  /** The SMTP server mailed confirmation codes go through (`JOBS_SMTP_URL`, `JOBS_SMTP_FROM`). */
  smtp?: SmtpSettings | null;
  /**
   * The schedules file's work queues as they are now (read on each request
   * and scrape, so a reloaded file counts): what the console's Work pages
   * list and act on, what its live feed counts, and each queue's series on
   * `/metrics` (`jobs_work_items_open`, `jobs_work_oldest_open_age_seconds`,
   * `jobs_work_claims_expired_total`, `jobs_work_actions_total`), read from
   * the store in one call. Without them the console shows none.
   */
  workQueues?: () => readonly WorkQueueDefinition[];
  /**
   * The queues the schedules file declares and the daemon runs, as they are
   * now: each gets its `/metrics` series (`jobs_jobs`, and
   * `jobs_queue_oldest_available_seconds`) even while it holds no job.
   */
  queues?: () => readonly string[];
  /**
   * The schedules file's reports, for `/api/v1/reports` (the principal's
   * identity; `api/reports.ts`) and downloads (`GET /downloads/<token>`,
   * whose signed token is its own credential; `reports.ts`). Without it
   * `/api/v1/reports` lists none and downloads are 404.
   */
  reports?: ReportRoutes;
  /**
   * Why the daemon cannot do its work now (its store calls fail), or null
   * when it can: a reason makes `/readyz` answer 503 with it.
   */
  degraded?: () => string | null;
  /**
   * How long the web console's sessions live (`src/console/`, served at
   * every path this list does not name). @default idle 30 min, absolute 12 h
   */
  sessionTimeouts?: SessionTimeouts;
  /**
   * How long `/readyz` waits for the store before answering 503, in ms.
   * While the read of a probe that ran out of time is still unanswered (the
   * store hangs), later probes answer 503 at once instead of waiting again.
   * Under a second, so a prober with the common one-second timeout (a
   * Kubernetes readiness probe's default) reads the 503 rather than nothing.
   * @default 800
   */
  readyTimeoutMs?: number;
}

/** A running endpoint. */
export interface HttpServer {
  /** Where it listens, or null when `listen` is `off`. */
  addr: { hostname: string; port: number } | null;
  /** Stops listening and waits for requests in flight. */
  close(): Promise<void>;
}

/** Parses `listen`: `null` for `off`, else the host and port; throws naming the value. */
function parseListen(listen: string): { hostname: string; port: number } | null {
  if (listen.trim().toLowerCase() === "off") return null;
  const match = /^\[([^\]]+)\]:(\d+)$/.exec(listen) ?? /^([^:\[\]]+):(\d+)$/.exec(listen);
  const port = match ? Number(match[2]) : NaN;
  if (!match || !Number.isInteger(port) || port > 65535) {
    throw new Error(`http: listen address "${listen}" is not host:port or off`);
  }
  return { hostname: match[1]!, port };
}

/** Whether `hostname` only accepts connections from this machine. */
function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Starts the endpoint (or nothing, for `listen: "off"`). Refuses a
 * non-loopback address without a token, and a port it cannot bind.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const { store, logger, clock } = options;
  const target = parseListen(options.listen);
  if (target === null) return { addr: null, close: () => Promise.resolve() };
  if (options.token !== undefined && options.token === "") {
    throw new Error("http: the token is empty; give a non-empty token or none");
  }
  if (!isLoopback(target.hostname) && options.token === undefined) {
    throw new Error(
      `http: listening on "${options.listen}" (not loopback) requires a token`,
    );
  }
  const authorized = options.token === undefined ? null : await tokenChecker(options.token);
  const readyTimeoutMs = options.readyTimeoutMs ?? 800;
  /** `http://host:port` once listening: the start of its download links unless told another. */
  let base = "";

  /** The reports as `/api/v1` and the console use them: links join the public URL or `base`. */
  const reports = options.reports
    ? { ...options.reports, base: options.reports.publicUrl ?? (() => Promise.resolve(base)) }
    : undefined;
  const api = await apiApp({
    store,
    clock,
    logger,
    ...(options.token ? { token: options.token } : {}),
    ...(reports ? { reports } : {}),
    ...(options.reports ? { settingReports: options.reports.reports } : {}),
    ...(options.definitions ? { definitions: options.definitions } : {}),
    ...(options.smtp ? { smtp: options.smtp } : {}),
  });

  const live = new LiveFeed(store, clock, logger, undefined, options.workQueues);
  const web = consoleApp({
    store,
    clock,
    logger,
    live,
    ...(options.sessionTimeouts ? { timeouts: options.sessionTimeouts } : {}),
    ...(reports ? { reports } : {}),
    ...(options.definitions ? { definitions: options.definitions } : {}),
    ...(options.workQueues ? { workQueues: options.workQueues } : {}),
    ...(options.smtp ? { smtp: options.smtp } : {}),
  });

  const handler = async (request: Request, info: Deno.ServeHandlerInfo): Promise<Response> => {
    try {
      const path = new URL(request.url).pathname;
      const remote = (info.remoteAddr as Deno.NetAddr).hostname ?? "unknown";
      if (path === "/api/v1" || path.startsWith("/api/v1/")) {
        return await api.fetch(request, { remote });
      }
      if (ownRoute(path)) return await route(request);
      return await web.fetch(request, { remote });
    } catch (error) {
      // A malformed percent-encoding a route decoded: the caller's fault, so
      // a 400 and no `http.error` line (anyone reaching the listener could
      // otherwise fill the log). The download route answers it itself.
      if (error instanceof URIError) return text(400, "path-invalid: malformed percent-encoding");
      throw error;
    }
  };

  const route = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === "/healthz") return onlyGet(request) ?? text(200, "ok");
    if (options.reports && path.startsWith("/downloads/")) {
      const answer = await downloadRoute(request, url, { store, clock, routes: options.reports });
      if (answer) return answer;
    }
    if (authorized && !(await authorized(request.headers.get("authorization")))) {
      return text(401, "unauthorized", { "www-authenticate": "Bearer" });
    }
    if (path === "/readyz") return onlyGet(request) ?? await ready();
    if (path === "/metrics") return onlyGet(request) ?? await metrics();
    return text(404, "not found");
  };

  /** The read of a probe past its deadline, until it settles: since when the store is silent. */
  let silent: { since: number } | null = null;

  const ready = async (): Promise<Response> => {
    const reason = options.degraded?.() ?? null;
    if (reason !== null) return text(503, `degraded: ${oneLine(reason)}`);
    if (silent !== null) {
      return text(
        503,
        `store did not answer: a read sent ${clock.now() - silent.since} ms ago is still waiting`,
      );
    }
    const deadline = new AbortController();
    const began = clock.now();
    try {
      const read = store.jobsCount({ state: "executing" }).then(() => true);
      const answered = await Promise.race([
        read,
        clock.sleep(readyTimeoutMs, deadline.signal).then(() => false),
      ]);
      if (!answered) {
        const hung = { since: began };
        silent = hung;
        read.catch(() => {}).finally(() => {
          if (silent === hung) silent = null;
        });
        return text(503, `store did not answer within ${readyTimeoutMs} ms`);
      }
      return text(200, "ready");
    } catch (error) {
      return text(503, `store unreachable: ${oneLine(error)}`);
    } finally {
      deadline.abort();
    }
  };

  const metrics = async (): Promise<Response> => {
    try {
      const pipelines = options.pipelines?.();
      const workQueues = options.workQueues?.();
      const page = await renderMetrics(
        store,
        options.metrics?.(),
        pipelines ? { pipelines, now: clock.now() } : undefined,
        { now: clock.now(), declared: options.queues?.() ?? [] },
        workQueues ? { queues: workQueues, now: clock.now() } : undefined,
      );
      return new Response(page, {
        status: 200,
        headers: { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" },
      });
    } catch (error) {
      logger("http.error", { path: "/metrics", error: oneLine(error) });
      return text(503, `metrics unavailable: ${oneLine(error)}`);
    }
  };

  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: target.hostname,
      port: target.port,
      onListen: (addr) => logger("http.listening", { hostname: addr.hostname, port: addr.port }),
      onError: (error) => {
        logger("http.error", { error: oneLine(error) });
        return text(500, "internal error");
      },
    }, handler);
  } catch (error) {
    throw new Error(`http: cannot listen on "${options.listen}": ${oneLine(error)}`);
  }
  base = derivedPublicUrl(server.addr, hostname());
  let closed: Promise<void> | null = null;
  return {
    addr: { hostname: server.addr.hostname, port: server.addr.port },
    // The console's live streams never end of themselves: end them first, then wait for the rest.
    close: () => closed ??= live.close().then(() => server.shutdown()),
  };
}

/** Whether `path` is one of the endpoint's own routes rather than the console's. */
function ownRoute(path: string): boolean {
  return path === "/healthz" || path === "/readyz" || path === "/metrics" ||
    path.startsWith("/downloads/");
}

function onlyGet(request: Request): Response | null {
  if (request.method === "GET" || request.method === "HEAD") return null;
  return text(405, "method not allowed", { allow: "GET, HEAD" });
}

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body + "\n", {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", ...headers },
  });
}

/** The first line of an error's message, redacted: a reason fits on one line. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redact(message.split("\n", 1)[0]!.trim());
}
