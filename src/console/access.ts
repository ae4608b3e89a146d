/**
 * Who may use which page of the console: the one table
 * ({@linkcode CONSOLE_ROUTES}) naming every route a page registers (method
 * and path pattern, as the router spells it) and the roles that may use
 * it, denying by default whatever it does not name, as `API_ROUTES` does
 * for `/api/v1` (`src/http/access.ts`, whose `refusal` both share). A GET
 * route (a page) reads, so its roles are `READ` unless it shows what only
 * some may see; a POST route acts, so it names its action and takes that
 * action's roles from the action table (`src/admin/actions.ts`), and a
 * page draws its button only for a principal `mayTake` allows.
 *
 * The few routes that stand before a session (sign-in, sign-out, the
 * assets) are {@linkcode PUBLIC_CONSOLE_ROUTES}; `test/console/access_test.ts`
 * walks every route the console registers and fails on one that is in
 * neither list.
 *
 * @module
 */

import { ACTIONS, type AdminAction, READ } from "../admin/actions.ts";
import type { Role } from "../admin/roles.ts";

/** The methods a console route uses: pages are GET, actions are POST (HTML forms). */
export type ConsoleMethod = "GET" | "POST";

/** One route of the console and the roles that may use it. */
export interface ConsoleRoute {
  method: ConsoleMethod;
  /** The path pattern as the router registers it (`/jobs/:id`). */
  path: string;
  roles: readonly Role[];
  /** What the route does, when it acts (a page names none): its roles are the action's. */
  action?: AdminAction;
  /** One line: what it shows or does. */
  summary: string;
}

/** A route that acts: its action, and the roles the action table gives it. */
export function acts(action: AdminAction): { action: AdminAction; roles: readonly Role[] } {
  return { action, roles: ACTIONS[action] };
}

/** The role table of the console's pages, denying by default whatever it does not name. */
export const CONSOLE_ROUTES: readonly ConsoleRoute[] = [
  {
    method: "GET",
    path: "/",
    roles: READ,
    summary: "Overview: queues and nodes (a tenant's person: its jobs by state)",
  },
  // Workflows, Pipelines, Reports.
  { method: "GET", path: "/workflows", roles: READ, summary: "Workflow runs with their state" },
  {
    method: "GET",
    path: "/workflows/:id",
    roles: READ,
    summary: "A workflow run as the tree of its steps, its compensations and audit",
  },
  {
    method: "POST",
    path: "/workflows/:id/retry",
    ...acts("workflow.retry"),
    summary: "Retry a failed run",
  },
  {
    method: "POST",
    path: "/workflows/:id/cancel",
    ...acts("workflow.cancel"),
    summary: "Cancel a run",
  },
  {
    method: "GET",
    path: "/pipelines",
    roles: READ,
    summary: "Pipelines: freshness, newest runs, drops by reason",
  },
  {
    method: "GET",
    path: "/pipelines/:name/drops",
    roles: READ,
    summary: "A pipeline's dropped records",
  },
  {
    method: "POST",
    path: "/pipelines/:name/runs",
    ...acts("ingest.run"),
    summary: "Run a pipeline now",
  },
  {
    method: "POST",
    path: "/drops/:id/replay",
    ...acts("ingest.replay"),
    summary: "Replay one dropped record",
  },
  {
    method: "GET",
    path: "/reports",
    roles: READ,
    summary: "Reports: the declared ones, their runs, the request form",
  },
  {
    method: "POST",
    path: "/reports/:id/runs",
    ...acts("report.run"),
    summary: "Request a run of a report",
  },
  {
    method: "POST",
    path: "/reports/runs/:run/links",
    ...acts("report.link"),
    summary: "Mint a download link of a completed run",
  },
];

/** The routes before a session: `METHOD /path` as the router registers them. */
export const PUBLIC_CONSOLE_ROUTES: readonly string[] = [
  "GET /login",
  "POST /login",
  "POST /logout",
  "GET /assets/:name",
];

/** The key of a route: `GET /jobs/:id`. */
export function consoleRouteKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}

const BY_KEY: ReadonlyMap<string, ConsoleRoute> = new Map(
  CONSOLE_ROUTES.map((r) => [consoleRouteKey(r.method, r.path), r]),
);

/** The table's entry of a route, or undefined: then nobody may use it. */
export function consoleRouteOf(method: string, path: string): ConsoleRoute | undefined {
  return BY_KEY.get(consoleRouteKey(method, path));
}
