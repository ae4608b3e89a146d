/**
 * The tenant walk: on every backend, a principal of tenant `acme` holding
 * every role calls every route of the role table with the ids and names of
 * tenant `globex` (and, for lists, with no id at all). No answer shows
 * anything of globex's, no route acts on globex's rows, and a tenant named
 * in a query is refused or ignored, never used. A route of `API_ROUTES` without an entry in
 * {@linkcode WALK} fails the test, so a new route cannot skip the walk.
 */

import assert from "node:assert/strict";
import { API_ROUTES, routeKey } from "../../src/http/access.ts";
import { createToken } from "../../src/admin/tokens.ts";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS, newJob } from "../support/backends.ts";
import { apiHarness, runWithDrops, threeTenants } from "./api_support.ts";
import { startWorkflowRun } from "../../src/admin/workflows.ts";
import { definePipeline } from "../../src/ingest/definition.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { addWorkItem, workActor } from "../../src/admin/work.ts";
import { previewWorkBulk } from "../../src/admin/work_bulk.ts";

/** Globex's rows of every kind, and the word only globex's rows contain. */
interface Seeded {
  /** Globex's job. */
  job: number;
  /** Globex's schedule. */
  schedule: string;
  /** Globex's report run. */
  reportRun: number;
  /** Globex's workflow run. */
  workflowRun: number;
  /** Globex's drop. */
  drop: number;
  /** Globex's work item (of PAYOUTS) and the manifest of its bulk preview. */
  workKey: string;
  manifest: string;
}

/** A workflow and a pipeline both tenants may start. */
const SOLO = compileWorkflow({
  id: "solo",
  steps: [{ id: "only", worker: "w.only", queue: "only", maxAttempts: 1 }],
});
const CATALOG = definePipeline({
  id: "catalog",
  source: { file: "/dev/null" },
  key: "sku",
  steps: [],
  dropReasons: ["duplicate", "poison"],
  sink: { worker: "sink" },
  freshness: { mode: "bounded", withinMs: 3_600_000 },
});

/** A work queue both tenants' items are in, with a bulk money action. */
const PAYOUTS = compileWorkQueue({
  id: "payouts",
  claim: "optional",
  leaseMs: 3_600_000,
  actions: [{ id: "pay", run: { kind: "worker", worker: "pay_out" } }],
  bulk: [{
    id: "release",
    action: "pay",
    money: { amount: "amount", currency: "currency" },
    confirmBy: { totp: "approver" },
    secondPerson: true,
  }],
});

/** What a route is called with: globex's ids in the path, a valid body, a query. */
interface Step {
  params?: (s: Seeded) => Record<string, string>;
  body?: unknown;
  query?: string;
}

const REASON = { reason: "the tenant walk" };

/** Every route of the table, as the walk calls it. */
const WALK: Record<string, Step> = {
  [routeKey("GET", "/api/v1/me")]: {},
  [routeKey("GET", "/api/v1/openapi.json")]: {},
  [routeKey("GET", "/api/v1/jobs")]: { query: "limit=500" },
  [routeKey("POST", "/api/v1/jobs")]: { body: { worker: "send", args: { to: "walk" } } },
  [routeKey("GET", "/api/v1/jobs/:id")]: { params: (s) => ({ id: String(s.job) }) },
  [routeKey("POST", "/api/v1/jobs/:id/retry")]: {
    params: (s) => ({ id: String(s.job) }),
    body: REASON,
  },
  [routeKey("POST", "/api/v1/jobs/:id/cancel")]: {
    params: (s) => ({ id: String(s.job) }),
    body: REASON,
  },
  [routeKey("POST", "/api/v1/jobs/:id/discard")]: {
    params: (s) => ({ id: String(s.job) }),
    body: REASON,
  },
  [routeKey("POST", "/api/v1/jobs/batch")]: {
    body: { jobs: [{ worker: "send", args: { to: "walk" } }] },
  },
  [routeKey("GET", "/api/v1/jobs/:id/replay")]: { params: (s) => ({ id: String(s.job) }) },
  [routeKey("POST", "/api/v1/jobs/:id/replay")]: {
    params: (s) => ({ id: String(s.job) }),
    body: { ...REASON, definition: "as-planned", force: true },
  },
  [routeKey("GET", "/api/v1/audit")]: { query: "limit=500" },
  [routeKey("GET", "/api/v1/queues")]: {},
  [routeKey("POST", "/api/v1/queues/:name/pause")]: { params: () => ({ name: "globex-mail" }) },
  [routeKey("POST", "/api/v1/queues/:name/resume")]: { params: () => ({ name: "globex-mail" }) },
  [routeKey("GET", "/api/v1/schedules")]: {},
  [routeKey("POST", "/api/v1/schedules/:id/disable")]: {
    params: (s) => ({ id: s.schedule }),
    body: REASON,
  },
  [routeKey("POST", "/api/v1/schedules/:id/enable")]: {
    params: (s) => ({ id: s.schedule }),
    body: REASON,
  },
  [routeKey("GET", "/api/v1/reports")]: {},
  [routeKey("GET", "/api/v1/reports/runs")]: { query: "limit=500" },
  // A report is not a tenant's (its runs are): globex's name is no report at all.
  [routeKey("POST", "/api/v1/reports/:id/runs")]: {
    params: () => ({ id: "globex-statement" }),
    body: { params: {} },
  },
  [routeKey("GET", "/api/v1/reports/runs/:run")]: {
    params: (s) => ({ run: String(s.reportRun) }),
  },
  [routeKey("POST", "/api/v1/reports/runs/:run/links")]: {
    params: (s) => ({ run: String(s.reportRun) }),
    body: {},
  },
  [routeKey("GET", "/api/v1/workflows")]: { query: "limit=500" },
  [routeKey("POST", "/api/v1/workflows")]: { body: { workflow: "solo", input: { to: "walk" } } },
  [routeKey("GET", "/api/v1/workflows/:id")]: { params: (s) => ({ id: String(s.workflowRun) }) },
  [routeKey("POST", "/api/v1/workflows/:id/cancel")]: {
    params: (s) => ({ id: String(s.workflowRun) }),
    body: REASON,
  },
  [routeKey("POST", "/api/v1/workflows/:id/retry")]: {
    params: (s) => ({ id: String(s.workflowRun) }),
    body: REASON,
  },
  [routeKey("GET", "/api/v1/pipelines")]: {},
  // A pipeline is not a tenant's (its runs are): globex's name is no pipeline at all.
  [routeKey("POST", "/api/v1/pipelines/:name/runs")]: {
    params: () => ({ name: "globex-catalog" }),
    body: REASON,
  },
  [routeKey("GET", "/api/v1/drops")]: { query: "limit=500" },
  [routeKey("POST", "/api/v1/drops/:id/replay")]: {
    params: (s) => ({ id: String(s.drop) }),
    body: REASON,
  },
  // Installation-wide data: a tenant's principal is refused (403) whatever it names.
  [routeKey("GET", "/api/v1/settings")]: {},
  [routeKey("PUT", "/api/v1/settings/:key")]: {
    params: () => ({ key: "reports.request_budget" }),
    body: { value: "5s", ...REASON },
  },
  [routeKey("POST", "/api/v1/settings/:key/unset")]: {
    params: () => ({ key: "reports.request_budget" }),
    body: REASON,
  },
  [routeKey("GET", "/api/v1/nodes")]: {},
  [routeKey("GET", "/api/v1/status")]: {},
  [routeKey("GET", "/api/v1/users")]: {},
  [routeKey("POST", "/api/v1/users")]: {
    body: { name: "mallory", roles: ["admin"], password: "correct horse battery" },
  },
  [routeKey("POST", "/api/v1/users/:name/disable")]: { params: () => ({ name: "globex-admin" }) },
  [routeKey("POST", "/api/v1/users/:name/enable")]: { params: () => ({ name: "globex-admin" }) },
  [routeKey("GET", "/api/v1/tokens")]: {},
  [routeKey("POST", "/api/v1/tokens")]: { body: { name: "mallory", roles: ["admin"] } },
  [routeKey("POST", "/api/v1/tokens/:name/revoke")]: { params: () => ({ name: "globex-ci" }) },
  // A work queue is not a tenant's (its items are): globex's name is no queue at all.
  [routeKey("GET", "/api/v1/work/:queue/items")]: { params: () => ({ queue: "globex-payouts" }) },
  [routeKey("POST", "/api/v1/work/:queue/items")]: {
    params: () => ({ queue: "globex-payouts" }),
    body: { key: "walk", data: {} },
  },
  [routeKey("POST", "/api/v1/work/:queue/next")]: {
    params: () => ({ queue: "globex-payouts" }),
    body: {},
  },
  [routeKey("GET", "/api/v1/work/:queue/items/:key")]: {
    params: (s) => ({ queue: "payouts", key: s.workKey }),
  },
  [routeKey("POST", "/api/v1/work/:queue/items/:key/claim")]: {
    params: (s) => ({ queue: "payouts", key: s.workKey }),
    body: { break: true, ...REASON },
  },
  [routeKey("POST", "/api/v1/work/:queue/items/:key/release")]: {
    params: (s) => ({ queue: "payouts", key: s.workKey }),
    body: {},
  },
  [routeKey("POST", "/api/v1/work/:queue/items/:key/skip")]: {
    params: (s) => ({ queue: "payouts", key: s.workKey }),
    body: {},
  },
  [routeKey("POST", "/api/v1/work/:queue/items/:key/actions/:action")]: {
    params: (s) => ({ queue: "payouts", key: s.workKey, action: "pay" }),
    body: { break: true, ...REASON },
  },
  [routeKey("POST", "/api/v1/work/:queue/bulk/:bulk/preview")]: {
    params: (s) => ({ queue: "payouts", bulk: "release", key: s.workKey }),
    body: { keys: ["globex-p1"] },
  },
  [routeKey("POST", "/api/v1/bulk/:manifest/request")]: {
    params: (s) => ({ manifest: s.manifest }),
    body: {},
  },
  [routeKey("POST", "/api/v1/bulk/:manifest/confirm")]: {
    params: (s) => ({ manifest: s.manifest }),
    body: { code: "123456" },
  },
  [routeKey("GET", "/api/v1/schedules/:id/next")]: { params: (s) => ({ id: s.schedule }) },
  [routeKey("POST", "/api/v1/schedules/:id/run")]: {
    params: (s) => ({ id: s.schedule }),
    body: REASON,
  },
};

/** Globex's rows: a job in its own queue, a schedule of its own. */
async function seed(store: Store, now: number): Promise<Seeded> {
  const root = { actor: "root", reason: null, now };
  const ids = await threeTenants(store, now);
  await store.schedulesSync({
    schedules: [
      { id: "nightly:acme", hash: "h1", tenant: "acme" },
      { id: "nightly:globex", hash: "h1", tenant: "globex" },
    ],
    now,
  });
  const [reportJob] = await store.jobsInsert({
    jobs: [newJob({ queue: "reports", worker: "jobs.report", tenant: "globex", scheduledAt: now })],
    now,
  });
  const made = await store.reportRunCreate({
    report: "statement",
    jobId: reportJob!.id,
    tenant: "globex",
    actor: "globex-clerk",
    roles: ["operator"],
    params: { account: "globex-main" },
    sort: null,
    format: "csv",
    now,
    maxConcurrent: 5,
  });
  assert.ok("run" in made);
  await createToken(
    store,
    { name: "globex-ci", roles: ["operator"], tenant: "globex", expiresInMs: null },
    root,
    "host",
  );
  // A person of globex's (stored as the door stores one; the hash is never checked here).
  await store.principalInsert({
    principal: {
      kind: "person",
      name: "globex-admin",
      roles: ["admin"],
      tenant: "globex",
      secretHash: "scrypt$ln=17,r=8,p=1$c2FsdA$aGFzaA",
      createdBy: "root",
    },
    now,
  });
  const workflow = await startWorkflowRun(store, {
    definition: SOLO,
    input: { for: "globex" },
    tenant: "globex",
    actor: "globex-clerk",
    now,
  });
  const [drop] = await runWithDrops(store, "catalog", now, [["duplicate", "globex-sku"]], "globex");
  const clerk = await workActor(store, "globex-admin", { door: "library", now });
  await addWorkItem(store, PAYOUTS, {
    key: "globex-p1",
    data: { amount: "100", currency: "EUR" },
  }, clerk);
  const preview = await previewWorkBulk(store, [PAYOUTS], {
    queue: "payouts",
    bulk: "release",
  }, clerk);
  return {
    job: ids.globex,
    schedule: "nightly:globex",
    reportRun: made.run.id,
    workflowRun: workflow.id,
    drop: drop!,
    workKey: "globex-p1",
    manifest: preview.manifest.hash,
  };
}

/** What globex's rows look like, to compare before and after the walk. */
async function globexState(store: Store, s: Seeded): Promise<unknown> {
  const job = await store.jobGet({ id: s.job });
  const [schedule] = await store.schedulesList({ ids: [s.schedule] });
  return {
    job: job && { state: job.state, attempt: job.attempt, scheduledAt: job.scheduledAt },
    audit: (await store.auditList({ target: `job:${s.job}` })).length,
    schedule: schedule && { enabled: schedule.enabled },
    scheduleAudit: (await store.auditList({ target: `schedule:${s.schedule}` })).length,
    reportRun: (await store.reportRunGet({ id: s.reportRun }))?.state,
    principals: (await store.principalsList({})).filter((p) => p.tenant === "globex")
      .map((p) => [p.name, p.disabled, p.updatedAt]),
    workflow: (await store.workflowGet({ id: s.workflowRun }))?.run.state,
    drops: (await store.ingestDropsList({ pipeline: "catalog" })).map((d) => [d.id, d.replayedAt]),
    work: await store.workItemGet({ queue: "payouts", key: s.workKey }),
    manifestAudit: (await store.auditList({ target: `manifest:${s.manifest}` })).length,
    globexAudit:
      (await store.auditPage({ limit: 1000 })).filter((row) => /globex/.test(row.target)).length,
  };
}

Deno.test("the tenant walk names every route of the role table", () => {
  for (const route of API_ROUTES) {
    const key = routeKey(route.method, route.path);
    assert.ok(WALK[key], `${key} has no step in the tenant walk`);
  }
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: acme's principal, with every role, sees and changes nothing of globex's through any route`, async () => {
    await using api = await apiHarness(backend, {
      reports: {
        reports: () => [],
        storage: () => ({}) as never,
        base: () => Promise.resolve("https://jobs.example.test"),
      },
      definitions: () => ({ workflows: [SOLO], pipelines: [CATALOG], workQueues: [PAYOUTS] }),
    });
    const s = await seed(api.store, api.clock.now());
    const before = await globexState(api.store, s);
    const acme = await api.token("acme-all", ["viewer", "operator", "approver", "admin"], "acme");
    for (const route of API_ROUTES) {
      const key = routeKey(route.method, route.path);
      const step = WALK[key]!;
      const params = step.params?.(s) ?? {};
      const path = route.path.replace(/:(\w+)/g, (_, name: string) => {
        assert.ok(params[name] !== undefined, `${key}: the walk gives no ${name}`);
        return encodeURIComponent(params[name]!);
      });
      const answer = await api.call(
        route.method,
        path + (step.query ? `?${step.query}` : ""),
        acme,
        route.method === "GET" ? undefined : step.body ?? {},
      );
      assert.ok(answer.status < 500, `${key}: ${answer.status} ${answer.text}`);
      if (route.path.includes(":")) {
        assert.ok(
          answer.status === 403 || answer.status === 404,
          `${key} with globex's id: ${answer.status} ${answer.text.slice(0, 300)}`,
        );
      }
      // A refusal may echo the id asked for; nothing else may name globex.
      const shown = Object.values(params).reduce(
        (text, value) => text.replaceAll(JSON.stringify(value).slice(1, -1), ""),
        answer.text,
      );
      assert.ok(
        !/globex/i.test(shown),
        `${key} showed globex's: ${answer.text.slice(0, 300)}`,
      );
      if (route.method === "GET" && !route.path.includes(":") && answer.status === 200) {
        const named = await api.call(
          "GET",
          `${route.path}?${step.query ? `${step.query}&` : ""}tenant=globex`,
          acme,
        );
        // Refused, or ignored: the same answer as without it.
        if (named.status !== 400) {
          assert.equal(named.status, 200, `${key}?tenant=globex: ${named.text}`);
          assert.equal(named.text, answer.text, `${key}?tenant=globex changed the answer`);
        }
      }
    }
    assert.deepEqual(await globexState(api.store, s), before, "globex's rows changed");
  });
}
