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

import { ACTIONS, ADMIN, type AdminAction, READ } from "../admin/actions.ts";
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
  /** A work queue's own roles pass too; the door decides per queue (see `ApiRoute.queueRoles`). */
  queueRoles?: true;
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
  {
    method: "GET",
    path: "/events",
    roles: READ,
    summary: "The live stream of a tab: snapshots of the person's scope (server-sent events)",
  },
  // Jobs.
  { method: "GET", path: "/jobs", roles: READ, summary: "Jobs: filtered, paged, counted" },
  { method: "POST", path: "/jobs/retry", ...acts("job.retry"), summary: "Retry selected jobs" },
  { method: "POST", path: "/jobs/cancel", ...acts("job.cancel"), summary: "Cancel selected jobs" },
  {
    method: "POST",
    path: "/jobs/discard",
    ...acts("job.discard"),
    summary: "Discard selected jobs",
  },
  {
    method: "GET",
    path: "/jobs/:id",
    roles: READ,
    summary: "Job: fields, attempts, output, definition, replay preview, audit",
  },
  { method: "POST", path: "/jobs/:id/retry", ...acts("job.retry"), summary: "Retry one job" },
  { method: "POST", path: "/jobs/:id/cancel", ...acts("job.cancel"), summary: "Cancel one job" },
  {
    method: "POST",
    path: "/jobs/:id/discard",
    ...acts("job.discard"),
    summary: "Discard one job",
  },
  { method: "POST", path: "/jobs/:id/replay", ...acts("job.replay"), summary: "Replay one job" },
  // Queues and Schedules.
  {
    method: "GET",
    path: "/queues",
    roles: READ,
    summary: "Queues: jobs by state, paused by whom, when and why, the nodes serving each",
  },
  {
    method: "POST",
    path: "/queues/:name/pause",
    ...acts("queue.pause"),
    summary: "Pauses a queue for every process, with a reason (installation-wide people only)",
  },
  {
    method: "POST",
    path: "/queues/:name/resume",
    ...acts("queue.resume"),
    summary: "Resumes a queue, with a reason (installation-wide people only)",
  },
  {
    method: "GET",
    path: "/schedules",
    roles: READ,
    summary: "Schedules in scope: rhythm, zone and DST policy, next runs, lasts, misfires, state",
  },
  {
    method: "GET",
    path: "/schedules/:id",
    roles: READ,
    summary: "A schedule: next 10 runs with DST notes, guard, occurrences, runbook commands",
  },
  {
    method: "POST",
    path: "/schedules/:id/disable",
    ...acts("schedule.disable"),
    summary: "Disables a schedule, with a reason",
  },
  {
    method: "POST",
    path: "/schedules/:id/enable",
    ...acts("schedule.enable"),
    summary: "Enables a schedule, with a reason",
  },
  {
    method: "POST",
    path: "/schedules/:id/run",
    ...acts("schedule.run"),
    summary: "Runs a schedule now, with a reason (and the environment, for a guarded one)",
  },
  // Audit, people, tokens and sessions.
  {
    method: "GET",
    path: "/audit",
    roles: READ,
    summary: "Audit: who did what to which target and why (a tenant's person: its jobs' rows)",
  },
  { method: "GET", path: "/people", roles: ADMIN, summary: "People: roles, tenant, last sign-in" },
  { method: "POST", path: "/people", ...acts("user.add"), summary: "Adds a person" },
  {
    method: "POST",
    path: "/people/:name/roles",
    ...acts("user.set"),
    summary: "Sets a person's roles and tenant",
  },
  {
    method: "POST",
    path: "/people/:name/disable",
    ...acts("user.disable"),
    summary: "Disables a person (their sessions end)",
  },
  {
    method: "POST",
    path: "/people/:name/enable",
    ...acts("user.enable"),
    summary: "Enables a person again",
  },
  {
    method: "POST",
    path: "/people/:name/totp",
    ...acts("user.totp"),
    summary: "Enrols a person's TOTP authenticator: its QR code shown once",
  },
  {
    method: "POST",
    path: "/people/:name/remove",
    ...acts("user.remove"),
    summary: "Removes a person (their sessions end)",
  },
  { method: "GET", path: "/tokens", roles: ADMIN, summary: "Tokens: never a secret or a hash" },
  {
    method: "POST",
    path: "/tokens",
    ...acts("token.create"),
    summary: "Creates a token: its secret shown once",
  },
  {
    method: "POST",
    path: "/tokens/:name/revoke",
    ...acts("token.revoke"),
    summary: "Revokes a token",
  },
  { method: "GET", path: "/sessions", roles: ADMIN, summary: "Every console session" },
  {
    method: "POST",
    path: "/sessions/:handle/revoke",
    ...acts("session.revoke"),
    summary: "Ends a console session",
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
  // Human work queues (`work.tsx`): the door decides per queue again (its `roles:`, claim mode).
  {
    method: "GET",
    path: "/work",
    queueRoles: true,
    roles: READ,
    summary: "Work queues the person may work: open, claimed, the oldest item's age",
  },
  {
    method: "GET",
    path: "/work/:queue",
    queueRoles: true,
    roles: READ,
    summary: "A work queue's open items in order, each score with its inputs, claims, Next",
  },
  {
    method: "POST",
    path: "/work/:queue/next",
    queueRoles: true,
    ...acts("work.claim"),
    summary: "Claims the best free item of a work queue and goes to it",
  },
  {
    method: "GET",
    path: "/work/:queue/:key",
    queueRoles: true,
    roles: READ,
    summary: "A work item: data, score with inputs, claim, history, actions and their outcome",
  },
  {
    method: "POST",
    path: "/work/:queue/:key/claim",
    queueRoles: true,
    ...acts("work.claim"),
    summary: "Claims a work item (on an optional queue, breaks a hold with a reason)",
  },
  {
    method: "POST",
    path: "/work/:queue/:key/release",
    queueRoles: true,
    ...acts("work.release"),
    summary: "Gives back one's claim on a work item",
  },
  {
    method: "POST",
    path: "/work/:queue/:key/skip",
    queueRoles: true,
    ...acts("work.skip"),
    summary: "Skips a work item for a while (not handed to the person again by Next)",
  },
  {
    method: "POST",
    path: "/work/:queue/:key/reassign",
    ...acts("work.reassign"),
    summary: "Hands a work item's claim to another person, with a reason",
  },
  {
    method: "POST",
    path: "/work/:queue/:key/do/:action",
    queueRoles: true,
    ...acts("work.do"),
    summary: "Takes a declared action on a work item, with a reason: one job, linked",
  },
  // Bulk money on work queues (`work_bulk.tsx`): the door decides per queue again (`mayWork`).
  // Whoever works a queue (its own roles too) previews and asks for a code; an approver confirms.
  {
    method: "GET",
    path: "/work/:queue/bulk/:bulk",
    queueRoles: true,
    roles: ACTIONS["bulk.preview"],
    summary: "A bulk money action of a work queue: what it selects, and the button to preview it",
  },
  {
    method: "POST",
    path: "/work/:queue/bulk/:bulk/preview",
    queueRoles: true,
    ...acts("bulk.preview"),
    summary: "Previews a bulk money action: every item with its amount, totals, the manifest",
  },
  {
    method: "GET",
    path: "/bulk-money/:manifest",
    queueRoles: true,
    roles: ACTIONS["bulk.confirm"],
    summary:
      "A manifest's code request: its items and totals, where the code went, the confirmation",
  },
  {
    method: "POST",
    path: "/bulk-money/:manifest/request",
    queueRoles: true,
    ...acts("bulk.request"),
    summary:
      "Sends a code bound to a previewed manifest through the bulk's confirm_by (never shown)",
  },
  {
    method: "POST",
    path: "/bulk-money/:manifest/confirm",
    ...acts("bulk.confirm"),
    summary: "Confirms a manifest with its code (an approver; a second person when it says so)",
  },
  // Bulk.
  { method: "GET", path: "/jobs/bulk", roles: READ, summary: "How many jobs a bulk action takes" },
  {
    method: "POST",
    path: "/jobs/bulk",
    ...acts("bulk.start"),
    summary: "Retry, cancel or discard every matching job, in the background",
  },
  { method: "GET", path: "/bulk", roles: READ, summary: "Bulk runs" },
  { method: "GET", path: "/bulk/:id", roles: READ, summary: "A bulk run's progress" },
  { method: "POST", path: "/bulk/:id/abort", ...acts("bulk.abort"), summary: "Stops a bulk run" },
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
