/**
 * Who may use which route of `/api/v1`: the one table ({@linkcode API_ROUTES})
 * that names every route (method and path pattern, as the router spells it)
 * and the roles that may use it. A route the table does not name is refused
 * to everyone (denied by default), and `test/http/api_access_test.ts` walks
 * every route the router registers and fails on one the table lacks.
 *
 * A principal (who acts) comes only from the credential: a token of the
 * store, or the daemon's old single `--token`, which acts as the
 * installation-wide admin {@linkcode INSTALLATION_ADMIN}. Nothing a request
 * says (a body, a query, a header) names its principal, roles or tenant.
 *
 * @module
 */

import { ACTIONS, ADMIN, type AdminAction, READ } from "../admin/actions.ts";
import { type Role, ROLES } from "../admin/roles.ts";

/** Who acts through the API, as the credential says. */
export interface Principal {
  /** The token's or person's name; `installation` for the daemon's `--token`. */
  name: string;
  kind: "token" | "person" | "installation";
  /** Its roles; one the route tables do not name (a work queue's) opens no route. */
  roles: readonly string[];
  /** The tenant it is scoped to, or null: installation-wide. */
  tenant: string | null;
}

/** The principal of the daemon's single `--token`: an installation-wide admin. */
export const INSTALLATION_ADMIN: Principal = Object.freeze({
  name: "installation",
  kind: "installation",
  roles: Object.freeze(["admin"]) as readonly Role[],
  tenant: null,
});

/** How the audit trail names a principal: `token:<name>`, a person's own name. */
export function actorOf(principal: Principal): string {
  return principal.kind === "person" ? principal.name : `token:${principal.name}`;
}

/**
 * A route that acts: its action, and the roles the action table
 * (`src/admin/actions.ts`) gives that action, so a route cannot allow what
 * the door's action does not.
 */
function acts(action: AdminAction): { action: AdminAction; roles: readonly Role[] } {
  return { action, roles: ACTIONS[action] };
}

/** The methods `/api/v1` uses. */
export type ApiMethod = "GET" | "POST" | "PUT" | "DELETE";

/** One route of `/api/v1` and the roles that may use it. */
export interface ApiRoute {
  method: ApiMethod;
  /** The path pattern as the router registers it (`/api/v1/jobs/:id`). */
  path: string;
  roles: readonly Role[];
  /** What the route does, when it acts (a read names none): its roles are the action's. */
  action?: AdminAction;
  /**
   * A route of the work queues that a queue's own role (`support`, by its
   * `roles:`) may also pass: the door then decides per queue
   * (`mayWork`), and refuses a queue that does not name the role.
   */
  queueRoles?: true;
  /** One line for the OpenAPI document. */
  summary: string;
}

/** Whether `role` is one of a work queue's (none of the built-in ones). */
export function queueRole(role: string): boolean {
  return !(ROLES as readonly string[]).includes(role);
}

/** The role table: every route of `/api/v1`, denying by default whatever it does not name. */
export const API_ROUTES: readonly ApiRoute[] = [
  { method: "GET", path: "/api/v1/me", roles: READ, summary: "The principal of the credential" },
  { method: "GET", path: "/api/v1/openapi.json", roles: READ, summary: "This API's description" },
  // Jobs.
  { method: "GET", path: "/api/v1/jobs", roles: READ, summary: "Jobs matching filters" },
  { method: "POST", path: "/api/v1/jobs", ...acts("job.enqueue"), summary: "Enqueue one job" },
  {
    method: "POST",
    path: "/api/v1/jobs/batch",
    ...acts("job.enqueue"),
    summary: "Enqueue 1 to 1000 jobs in one transaction, all or none",
  },
  { method: "GET", path: "/api/v1/jobs/:id", roles: READ, summary: "One job with its attempts" },
  {
    method: "GET",
    path: "/api/v1/jobs/:id/replay",
    roles: READ,
    summary: "Preview a replay: which definition it would run and what differs",
  },
  {
    method: "POST",
    path: "/api/v1/jobs/:id/replay",
    ...acts("job.replay"),
    summary: "Replay one job: a new attempt of the same occurrence",
  },
  {
    method: "POST",
    path: "/api/v1/jobs/:id/retry",
    ...acts("job.retry"),
    summary: "Retry one job",
  },
  {
    method: "POST",
    path: "/api/v1/jobs/:id/cancel",
    ...acts("job.cancel"),
    summary: "Cancel one job",
  },
  {
    method: "POST",
    path: "/api/v1/jobs/:id/discard",
    ...acts("job.discard"),
    summary: "Discard one job",
  },
  // The audit log.
  {
    method: "GET",
    path: "/api/v1/audit",
    roles: READ,
    summary: "The audit log, newest first (a tenant's principal: its jobs' rows only)",
  },
  // Queues.
  {
    method: "GET",
    path: "/api/v1/queues",
    roles: READ,
    summary: "Every queue with its jobs by state and pause (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/queues/:name/pause",
    ...acts("queue.pause"),
    summary: "Pause a queue for every process (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/queues/:name/resume",
    ...acts("queue.resume"),
    summary: "Resume a queue for every process (installation-wide principals only)",
  },
  // Schedules.
  {
    method: "GET",
    path: "/api/v1/schedules",
    roles: READ,
    summary: "Every schedule with its stored state (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/schedules/:id/disable",
    ...acts("schedule.disable"),
    summary: "Disable a schedule, stored (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/schedules/:id/enable",
    ...acts("schedule.enable"),
    summary: "Enable a schedule, stored (installation-wide principals only)",
  },
  {
    method: "GET",
    path: "/api/v1/schedules/:id/next",
    roles: READ,
    summary: "A schedule's next occurrences (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/schedules/:id/run",
    ...acts("schedule.run"),
    summary: "Run a schedule now, guarded (installation-wide principals only)",
  },
  // Workflows.
  {
    method: "GET",
    path: "/api/v1/workflows",
    roles: READ,
    summary: "Workflow runs matching filters, newest first",
  },
  {
    method: "POST",
    path: "/api/v1/workflows",
    ...acts("workflow.start"),
    summary: "Start a run of a workflow the schedules file declares",
  },
  {
    method: "GET",
    path: "/api/v1/workflows/:id",
    roles: READ,
    summary: "One workflow run with its steps, compensations and audit trail",
  },
  {
    method: "POST",
    path: "/api/v1/workflows/:id/cancel",
    ...acts("workflow.cancel"),
    summary: "Cancel a workflow run",
  },
  {
    method: "POST",
    path: "/api/v1/workflows/:id/retry",
    ...acts("workflow.retry"),
    summary: "Retry a failed workflow run",
  },
  // Pipelines, ingest runs and drops.
  {
    method: "GET",
    path: "/api/v1/pipelines",
    roles: READ,
    summary: "Each pipeline's freshness, newest runs and drops (a tenant's: its runs)",
  },
  {
    method: "POST",
    path: "/api/v1/pipelines/:name/runs",
    ...acts("ingest.run"),
    summary: "Run a pipeline now (a tenant's principal: a run of its tenant)",
  },
  {
    method: "GET",
    path: "/api/v1/drops",
    roles: READ,
    summary: "Dropped records, newest first (a tenant's: of its runs)",
  },
  {
    method: "POST",
    path: "/api/v1/drops/:id/replay",
    ...acts("ingest.replay"),
    summary: "Replay one dropped record",
  },
  // Reports.
  {
    method: "GET",
    path: "/api/v1/reports",
    roles: READ,
    summary: "The reports the schedules file declares: parameters, formats, tenancy",
  },
  {
    method: "GET",
    path: "/api/v1/reports/runs",
    roles: READ,
    summary: "Report runs, newest first (a tenant's principal: its tenant's runs only)",
  },
  {
    method: "POST",
    path: "/api/v1/reports/:id/runs",
    ...acts("report.run"),
    summary: "Request a run for the principal and its tenant (200 ended, 202 under way)",
  },
  {
    method: "GET",
    path: "/api/v1/reports/runs/:run",
    roles: READ,
    summary: "One report run with its progress",
  },
  {
    method: "POST",
    path: "/api/v1/reports/runs/:run/links",
    ...acts("report.link"),
    summary: "A download link to a completed run's output, signed with its tenant",
  },
  // Work queues and their bulk money (a token works as itself; it never confirms money).
  {
    method: "GET",
    path: "/api/v1/work/:queue/items",
    queueRoles: true,
    roles: READ,
    summary: "A work queue's items in the order people get them, with scores (a tenant's: its own)",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/items",
    ...acts("work.add"),
    summary: "Add an item to a work queue, or update the one with its key (keeps its place)",
  },
  {
    method: "GET",
    path: "/api/v1/work/:queue/items/:key",
    queueRoles: true,
    roles: READ,
    summary: "One item with its data, claim and history",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/next",
    queueRoles: true,
    ...acts("work.claim"),
    summary: "Claim the queue's highest unclaimed item for the principal",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/items/:key/claim",
    queueRoles: true,
    ...acts("work.claim"),
    summary: "Claim an item for the principal (break: another's optional hold, with a reason)",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/items/:key/release",
    queueRoles: true,
    ...acts("work.release"),
    summary: "Give back the principal's claim on an item",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/items/:key/skip",
    queueRoles: true,
    ...acts("work.skip"),
    summary: "Hide an item from the principal's next for an hour, giving back its claim",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/items/:key/actions/:action",
    queueRoles: true,
    ...acts("work.do"),
    summary: "Act on an item: its action runs as one job keyed <queue>/<item>/<action>",
  },
  {
    method: "POST",
    path: "/api/v1/work/:queue/bulk/:bulk/preview",
    queueRoles: true,
    ...acts("bulk.preview"),
    summary: "The exact set a bulk money action would act on: amounts, totals, manifest",
  },
  {
    method: "POST",
    path: "/api/v1/bulk/:manifest/request",
    queueRoles: true,
    ...acts("bulk.request"),
    summary: "Send a code bound to a previewed manifest out of band (never in the answer)",
  },
  {
    method: "POST",
    path: "/api/v1/bulk/:manifest/confirm",
    ...acts("bulk.confirm"),
    summary: "Refused to every token (bulk-confirm-person-only): a person confirms money",
  },
  // Settings, nodes and status.
  {
    method: "GET",
    path: "/api/v1/settings",
    roles: READ,
    summary:
      "Every setting with its value, source and last change (installation-wide principals only)",
  },
  {
    method: "PUT",
    path: "/api/v1/settings/:key",
    ...acts("setting.set"),
    summary: "Store a setting's value, reason required (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/settings/:key/unset",
    ...acts("setting.unset"),
    summary: "Remove a stored setting, reason required (installation-wide principals only)",
  },
  {
    method: "GET",
    path: "/api/v1/nodes",
    roles: READ,
    summary: "The nodes and the maintenance leader (installation-wide principals only)",
  },
  {
    method: "GET",
    path: "/api/v1/status",
    roles: READ,
    summary: "What jobs status --json shows (installation-wide principals only)",
  },
  // People and tokens.
  {
    method: "GET",
    path: "/api/v1/users",
    roles: ADMIN,
    summary: "The people who sign in, by name (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/users",
    ...acts("user.add"),
    summary: "Add a person: refused to a token (token-cannot-mint); jobs users add on the host",
  },
  {
    method: "POST",
    path: "/api/v1/users/:name/disable",
    ...acts("user.disable"),
    summary: "Stop a person signing in (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/users/:name/enable",
    ...acts("user.enable"),
    summary: "Let a disabled person sign in again (installation-wide principals only)",
  },
  {
    method: "GET",
    path: "/api/v1/tokens",
    roles: ADMIN,
    summary: "The tokens, by name, never a secret (installation-wide principals only)",
  },
  {
    method: "POST",
    path: "/api/v1/tokens",
    ...acts("token.create"),
    summary:
      "Create a token: refused to a token (token-cannot-mint); jobs tokens create on the host",
  },
  {
    method: "POST",
    path: "/api/v1/tokens/:name/revoke",
    ...acts("token.revoke"),
    summary: "Revoke a token, itself included (installation-wide principals only)",
  },
];

/** The key of a route in the table: `GET /api/v1/jobs/:id`. */
export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}

const BY_KEY: ReadonlyMap<string, ApiRoute> = new Map(
  API_ROUTES.map((r) => [routeKey(r.method, r.path), r]),
);

/** The table's entry of a route, or undefined: then nobody may use it. */
export function routeOf(method: string, path: string): ApiRoute | undefined {
  return BY_KEY.get(routeKey(method, path));
}

/** Why `principal` may not use `route`, or null when it may. */
export function refusal(
  principal: Principal,
  route: ApiRoute | undefined,
): { status: 403; code: string; message: string } | null {
  if (route === undefined) {
    return { status: 403, code: "forbidden", message: "no role may use this route" };
  }
  const byQueue = route.queueRoles === true && principal.roles.some(queueRole);
  if (!byQueue && !route.roles.some((role) => principal.roles.includes(role))) {
    const needed = route.roles.length === 1
      ? `the role "${route.roles[0]}"`
      : `one of the roles ${route.roles.map((r) => `"${r}"`).join(", ")}`;
    return {
      status: 403,
      code: "role-required",
      message: `${route.method} ${route.path} needs ${needed}`,
    };
  }
  return null;
}
