/**
 * The console's tenant walk, in process on every backend: a person of
 * tenant `acme` holding every role opens every page of the role table and
 * posts every action with the ids and names of tenant `globex` (and, for
 * lists, with none), and reads the live stream. No answer shows anything of
 * globex's (but the echo of the id asked for), and no action changes
 * globex's rows. A route of `CONSOLE_ROUTES` without a step fails the walk,
 * so a new page cannot skip it.
 */

import assert from "node:assert/strict";
import { enqueueJob } from "../../src/admin/jobs.ts";
import { addPerson } from "../../src/admin/people.ts";
import { listSessions, sessionHandle, signIn } from "../../src/admin/sessions.ts";
import { createToken } from "../../src/admin/tokens.ts";
import { FakeClock } from "../../src/clock.ts";
import { CONSOLE_ROUTES, consoleRouteKey } from "../../src/console/access.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS, newJob } from "../support/backends.ts";
import { runWithDrops } from "../http/api_support.ts";
import { startWorkflowRun } from "../../src/admin/workflows.ts";
import { startBulk } from "../../src/admin/bulk.ts";
import { definePipeline } from "../../src/ingest/definition.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { previewWorkBulk, requestWorkBulk } from "../../src/admin/work_bulk.ts";
import type { WorkActor } from "../../src/admin/work.ts";

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

const ORIGIN = "http://127.0.0.1:9464";

/** Globex's rows, by kind. */
interface Seeded {
  job: number;
  schedule: string;
  person: string;
  token: string;
  session: string;
  workflowRun: number;
  drop: number;
  reportRun: number;
  bulkRun: number;
  workItem: string;
  /** The manifest of globex's bulk preview, with a code asked for it. */
  manifest: string;
}

/** How a step calls its route: globex's ids in the path, a form, a query. */
interface Step {
  params?: (s: Seeded) => Record<string, string>;
  form?: Record<string, string>;
  query?: string;
  /** The path names something every tenant shares (a pipeline): it may answer 200. */
  shared?: true;
}

const REASON = { reason: "the tenant walk" };

/** Every route of the console's table, as the walk calls it. */
const WALK: Record<string, Step> = {
  "GET /": {},
  "GET /events": {},
  "GET /jobs": {},
  "POST /jobs/retry": { form: { ...REASON }, query: "" },
  "POST /jobs/cancel": { form: { ...REASON } },
  "POST /jobs/discard": { form: { ...REASON } },
  "GET /jobs/:id": { params: (s) => ({ id: String(s.job) }) },
  "POST /jobs/:id/retry": { params: (s) => ({ id: String(s.job) }), form: REASON },
  "POST /jobs/:id/cancel": { params: (s) => ({ id: String(s.job) }), form: REASON },
  "POST /jobs/:id/discard": { params: (s) => ({ id: String(s.job) }), form: REASON },
  "POST /jobs/:id/replay": {
    params: (s) => ({ id: String(s.job) }),
    form: { ...REASON, definition: "as-planned", force: "on" },
  },
  "GET /queues": {},
  "POST /queues/:name/pause": { params: () => ({ name: "globex-mail" }), form: REASON },
  "POST /queues/:name/resume": { params: () => ({ name: "globex-mail" }), form: REASON },
  "GET /schedules": {},
  "GET /schedules/:id": { params: (s) => ({ id: s.schedule }) },
  "POST /schedules/:id/disable": { params: (s) => ({ id: s.schedule }), form: REASON },
  "POST /schedules/:id/enable": { params: (s) => ({ id: s.schedule }), form: REASON },
  "POST /schedules/:id/run": { params: (s) => ({ id: s.schedule }), form: REASON },
  "GET /audit": {},
  "GET /people": {},
  "POST /people": {
    form: { name: "mallory", roles: "admin", password: "pw-1", password2: "pw-1", ...REASON },
  },
  "POST /people/:name/roles": {
    params: (s) => ({ name: s.person }),
    form: { roles: "admin", ...REASON },
  },
  "POST /people/:name/disable": { params: (s) => ({ name: s.person }), form: REASON },
  "POST /people/:name/enable": { params: (s) => ({ name: s.person }), form: REASON },
  "POST /people/:name/totp": { params: (s) => ({ name: s.person }), form: REASON },
  "POST /people/:name/remove": {
    params: (s) => ({ name: s.person }),
    form: { ...REASON, confirm: "on" },
  },
  "GET /tokens": {},
  "POST /tokens": { form: { name: "mallory", roles: "admin", ...REASON } },
  "POST /tokens/:name/revoke": { params: (s) => ({ name: s.token }), form: REASON },
  "GET /sessions": {},
  "GET /workflows": {},
  "GET /workflows/:id": { params: (s) => ({ id: String(s.workflowRun) }) },
  "POST /workflows/:id/retry": { params: (s) => ({ id: String(s.workflowRun) }), form: REASON },
  "POST /workflows/:id/cancel": { params: (s) => ({ id: String(s.workflowRun) }), form: REASON },
  "GET /pipelines": {},
  // A pipeline is not a tenant's (its runs and drops are): acme sees catalog's, not globex's.
  "GET /pipelines/:name/drops": { params: () => ({ name: "catalog" }), shared: true },
  "POST /pipelines/:name/runs": { params: () => ({ name: "globex-catalog" }), form: REASON },
  "POST /drops/:id/replay": { params: (s) => ({ id: String(s.drop) }), form: REASON },
  "GET /jobs/bulk": { query: "action=retry&queue=globex-mail" },
  "POST /jobs/bulk": { form: { ...REASON, action: "retry", queue: "globex-mail" } },
  "GET /bulk": {},
  "GET /bulk/:id": { params: (s) => ({ id: String(s.bulkRun) }) },
  "POST /bulk/:id/abort": { params: (s) => ({ id: String(s.bulkRun) }), form: REASON },
  "GET /reports": {},
  "POST /reports/:id/runs": { params: () => ({ id: "globex-statement" }), form: REASON },
  "POST /reports/runs/:run/links": { params: (s) => ({ run: String(s.reportRun) }), form: {} },
  "POST /sessions/:handle/revoke": { params: (s) => ({ handle: s.session }), form: REASON },
  // A work queue is every tenant's (its items are each one's): acme sees its own, not globex's.
  "GET /work": {},
  "GET /work/:queue": { params: () => ({ queue: "disputes" }), shared: true },
  "POST /work/:queue/next": { params: () => ({ queue: "disputes" }), form: REASON },
  "GET /work/:queue/:key": { params: (s) => ({ queue: "disputes", key: s.workItem }) },
  "POST /work/:queue/:key/claim": {
    params: (s) => ({ queue: "disputes", key: s.workItem }),
    form: REASON,
  },
  "POST /work/:queue/:key/release": {
    params: (s) => ({ queue: "disputes", key: s.workItem }),
    form: REASON,
  },
  "POST /work/:queue/:key/skip": {
    params: (s) => ({ queue: "disputes", key: s.workItem }),
    form: REASON,
  },
  "POST /work/:queue/:key/reassign": {
    params: (s) => ({ queue: "disputes", key: s.workItem }),
    form: { ...REASON, to: "acme-all" },
  },
  "POST /work/:queue/:key/do/:action": {
    params: (s) => ({ queue: "disputes", key: s.workItem, action: "refund" }),
    form: REASON,
  },
  "GET /work/:queue/bulk/:bulk": {
    params: () => ({ queue: "disputes", bulk: "refund-all" }),
    query: "key=globex-dispute",
    shared: true,
  },
  "POST /work/:queue/bulk/:bulk/preview": {
    params: () => ({ queue: "disputes", bulk: "refund-all" }),
    form: { key: "globex-dispute" },
  },
  "GET /bulk-money/:manifest": { params: (s) => ({ manifest: s.manifest }) },
  "POST /bulk-money/:manifest/request": { params: (s) => ({ manifest: s.manifest }), form: {} },
  "POST /bulk-money/:manifest/confirm": {
    params: (s) => ({ manifest: s.manifest }),
    form: { code: "123456" },
  },
};

/** The work queue both tenants' items are in. */
const DISPUTES = compileWorkQueue({
  id: "disputes",
  claim: "optional",
  leaseMs: 3_600_000,
  show: ["customer"],
  actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
  bulk: [{
    id: "refund-all",
    action: "refund",
    money: { amount: "amount", currency: "currency" },
    confirmBy: { command: ["/bin/sh", "-c", "cat >/dev/null"] },
    secondPerson: true,
  }],
});

/** Globex's rows: a job with its args, a schedule, a person with a session, a token. */
async function seed(store: Store, now: number): Promise<Seeded> {
  const root = { actor: "root", reason: null, now };
  const job = await enqueueJob(store, "globex-worker", { to: "ceo@globex.test" }, {
    queue: "globex-mail",
    tenant: "globex",
  }, root);
  await store.schedulesSync({
    schedules: [
      { id: "nightly:acme", hash: "h1", tenant: "acme" },
      { id: "nightly:globex", hash: "h1", tenant: "globex" },
    ],
    now,
  });
  await addPerson(
    store,
    { name: "globex-admin", roles: ["admin"], tenant: "globex", password: "pw-globex" },
    root,
    "host",
  );
  await signIn(store, "globex-admin", "pw-globex", { now, address: "192.0.2.9", userAgent: "x" });
  const [session] = await listSessions(store, { person: "globex-admin" });
  await createToken(
    store,
    { name: "globex-ci", roles: ["operator"], tenant: "globex", expiresInMs: null },
    root,
    "host",
  );
  const workflow = await startWorkflowRun(store, {
    definition: SOLO,
    input: { for: "globex" },
    tenant: "globex",
    actor: "globex-clerk",
    now,
  });
  const [drop] = await runWithDrops(store, "catalog", now, [["duplicate", "globex-sku"]], "globex");
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
  const bulk = await startBulk(store, {
    action: "cancel",
    filter: { queue: "globex-mail" },
    tenant: "globex",
    who: { actor: "globex-clerk", reason: "globex's own", now },
  });
  const added = await store.workItemAdd({
    queue: "disputes",
    key: "globex-dispute",
    tenant: "globex",
    data: { customer: "globex-corp", amount: "70", currency: "EUR" },
    score: null,
    actor: "globex-clerk",
    now,
  });
  assert.ok(added);
  const globexAdmin: WorkActor = {
    person: "globex-admin",
    roles: ["admin"],
    tenant: "globex",
    door: "library",
    reason: null,
    now,
  };
  const preview = await previewWorkBulk(store, [DISPUTES], {
    queue: "disputes",
    bulk: "refund-all",
  }, globexAdmin);
  await requestWorkBulk(store, { clock: new FakeClock(now) }, [DISPUTES], {
    manifest: preview.manifest.hash,
  }, globexAdmin);
  return {
    manifest: preview.manifest.hash,
    workItem: "globex-dispute",
    bulkRun: bulk.id,
    workflowRun: workflow.id,
    drop: drop!,
    reportRun: made.run.id,
    job: job.id,
    schedule: "nightly:globex",
    person: "globex-admin",
    token: "globex-ci",
    session: sessionHandle(session!),
  };
}

/** What globex's rows look like, to compare before and after the walk. */
async function globexState(store: Store, s: Seeded): Promise<unknown> {
  const job = await store.jobGet({ id: s.job });
  const [schedule] = await store.schedulesList({ ids: [s.schedule] });
  return {
    job: job && [job.state, job.attempt, job.scheduledAt],
    schedule: schedule?.enabled,
    principals: (await store.principalsList({})).filter((p) => p.tenant === "globex")
      .map((p) => [p.kind, p.name, p.roles, p.disabled, p.updatedAt]),
    sessions: (await listSessions(store, { person: s.person })).length,
    queues: await store.queuesList(),
    audit: (await store.auditPage({ limit: 1000 })).filter((r) => /globex/.test(r.target)).length,
    workflow: (await store.workflowGet({ id: s.workflowRun }))?.run.state,
    drops: (await store.ingestDropsList({ pipeline: "catalog" })).map((d) => [d.id, d.replayedAt]),
    reportRun: (await store.reportRunGet({ id: s.reportRun }))?.state,
    bulkRun: await store.bulkRunGet({ id: s.bulkRun }),
    work: await store.workItemGet({ queue: "disputes", key: s.workItem }),
    totp: await store.totpEnrolment({ person: s.person }),
    bulkRequest: await store.bulkRequestLatest({ manifest: s.manifest }),
  };
}

Deno.test("the console's tenant walk names every route of its role table", () => {
  for (const route of CONSOLE_ROUTES) {
    const key = consoleRouteKey(route.method, route.path);
    assert.ok(WALK[key], `${key} has no step in the console's tenant walk`);
  }
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: acme's person, with every role, sees and changes nothing of globex's on any page`, async () => {
    const clock = new FakeClock();
    const h = await backend.open(clock.now());
    const app = consoleApp({
      store: h.store,
      clock,
      logger: () => {},
      definitions: () => ({ workflows: [SOLO], pipelines: [CATALOG] }),
      workQueues: () => [DISPUTES],
      reports: {
        reports: () => [],
        storage: () => ({}) as never,
        base: () => Promise.resolve("https://jobs.example.test"),
      },
    });
    try {
      const s = await seed(h.store, clock.now());
      const root = { actor: "root", reason: null, now: clock.now() };
      await addPerson(
        h.store,
        {
          name: "acme-all",
          roles: ["viewer", "operator", "approver", "admin"],
          tenant: "acme",
          password: "pw",
        },
        root,
        "host",
      );
      const signedIn = await signIn(h.store, "acme-all", "pw", {
        now: clock.now(),
        address: "192.0.2.1",
        userAgent: "walk",
      });
      assert.ok(signedIn);
      const before = await globexState(h.store, s);
      for (const route of CONSOLE_ROUTES) {
        const key = consoleRouteKey(route.method, route.path);
        const step = WALK[key]!;
        const params = step.params?.(s) ?? {};
        const path = route.path.replace(/:(\w+)/g, (_, name: string) => {
          assert.ok(params[name] !== undefined, `${key}: the walk gives no ${name}`);
          return encodeURIComponent(params[name]!);
        });
        const form = route.method === "POST"
          ? new URLSearchParams({
            ...step.form,
            // A selection or a filter naming globex's job.
            ids: String(s.job),
            id: String(s.job),
            tenant: "globex",
          }).toString()
          : undefined;
        const response = await app.fetch(
          new Request(`${ORIGIN}${path}${step.query ? `?${step.query}` : ""}`, {
            method: route.method,
            headers: {
              cookie: `${SESSION_COOKIE}=${signedIn.id}`,
              "sec-fetch-site": "same-origin",
              ...(form === undefined
                ? {}
                : { "content-type": "application/x-www-form-urlencoded" }),
            },
            redirect: "manual",
            ...(form === undefined ? {} : { body: form }),
          }),
          { remote: "192.0.2.1" },
        );
        const text = await firstOf(response, route.path === "/events");
        assert.ok(response.status < 500, `${key}: ${response.status} ${text.slice(0, 300)}`);
        if (route.method === "GET" && route.path.includes(":") && !step.shared) {
          assert.ok(
            response.status === 403 || response.status === 404,
            `${key} with globex's id: ${response.status}`,
          );
        }
        // A refusal may echo the id asked for; nothing else may name globex.
        const asked = [
          ...Object.values(params),
          ...new URLSearchParams(step.query ?? "").values(),
          ...Object.values(step.form ?? {}),
        ];
        const shown = asked.reduce(
          (t, v) => t.replaceAll(v, "").replaceAll(encodeURIComponent(v), ""),
          text,
        );
        assert.ok(!/globex/i.test(shown), `${key} showed globex's: ${shown.slice(0, 400)}`);
        // A filter naming globex is not globex's view: the tenant comes from the session.
        if (route.method === "GET" && !route.path.includes(":") && route.path !== "/events") {
          const named = await app.fetch(
            new Request(`${ORIGIN}${path}?tenant=globex&queue=globex-mail`, {
              headers: { cookie: `${SESSION_COOKIE}=${signedIn.id}` },
              redirect: "manual",
            }),
            { remote: "192.0.2.1" },
          );
          const namedText = (await named.text()).replaceAll("globex-mail", "");
          assert.ok(
            !/globex/i.test(namedText.replace(/value="globex"/g, "")),
            `${key}?tenant=globex`,
          );
        }
      }
      assert.deepEqual(await globexState(h.store, s), before, "globex's rows changed");
    } finally {
      await h.close();
    }
  });
}

/** A page's text; for the event stream, what it sends first (then it is cancelled). */
async function firstOf(response: Response, stream: boolean): Promise<string> {
  if (!stream) return await response.text();
  const reader = response.body!.getReader();
  let text = "";
  const decoder = new TextDecoder();
  while (!text.includes("\n\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  assert.match(text, /^event: snapshot\ndata: /, text);
  return text;
}
