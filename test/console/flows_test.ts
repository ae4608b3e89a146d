/**
 * The console's Workflows, Pipelines and Reports routes in process, on
 * every backend (the browser tests are `test/e2e/console_flows_test.ts`):
 * a tenant's person lists its tenant's runs and gets a 404 page for
 * another's; a hostile workflow key renders escaped; a filter that cannot
 * be one is a 400 page (a NUL included, which PostgreSQL would refuse);
 * a placeholder reason is refused with nothing audited; a viewer's
 * hand-made POST is 403; a retry lands with the person as the actor;
 * actions on what is not there (a drop, a pipeline, a report) are 404
 * pages; keyset paging carries the filter.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { startWorkflowRun } from "../../src/admin/workflows.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { RUNS_PER_PAGE } from "../../src/console/workflows.tsx";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import type { ApiReports } from "../../src/http/api/reports.ts";
import { defineReport } from "../../src/report/definition.ts";
import { storageOf } from "../../src/runners/report.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { type Backend, BACKENDS } from "../support/backends.ts";
import { statementOptions, writeStatementSources } from "../support/statement_report.ts";
import { tempDir } from "../support/stores.ts";

const ORIGIN = "http://127.0.0.1:9464";
const HOSTILE = `<img src=x onerror=alert(1)>"onmouseover=alert(2)`;

const PAIR = compileWorkflow({
  id: "pair",
  steps: [
    { id: "first", worker: "w.first", queue: "first", maxAttempts: 1 },
    { id: "second", worker: "w.second", queue: "second", maxAttempts: 1, dependsOn: ["first"] },
  ],
});

async function harness(backend: Backend, reports?: ApiReports) {
  const clock = new FakeClock();
  const h = await backend.open(clock.now());
  const app = consoleApp({
    store: h.store,
    clock,
    logger: () => {},
    definitions: () => ({ workflows: [PAIR], pipelines: [] }),
    ...(reports ? { reports } : {}),
  });
  const root = { actor: "root", reason: null, now: clock.now() };
  for (
    const [name, roles, tenant] of [
      ["otto", ["operator"], "acme"],
      ["vera", ["viewer"], "acme"],
      ["ada", ["admin"], null],
    ] as const
  ) {
    await addPerson(h.store, { name, roles: [...roles], tenant, password: "pw" }, root, "host");
  }
  const cookies = new Map<string, string>();
  const call = async (who: string, method: string, path: string, body?: string) => {
    const headers: Record<string, string> = { "sec-fetch-site": "same-origin" };
    const cookie = cookies.get(who);
    if (cookie) headers.cookie = `${SESSION_COOKIE}=${cookie}`;
    if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await app.fetch(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers,
        redirect: "manual",
        ...(body === undefined ? {} : { body }),
      }),
      { remote: "127.0.0.1" },
    );
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  for (const name of ["otto", "vera", "ada"]) {
    const answer = await call(name, "POST", "/login", `name=${name}&password=pw`);
    cookies.set(
      name,
      /^__Host-jobs_session=([\w-]+);/.exec(answer.headers.get("set-cookie")!)![1]!,
    );
  }
  const start = async (tenant: string, key: string) =>
    (await startWorkflowRun(h.store, {
      definition: PAIR,
      input: {},
      key,
      tenant,
      actor: "root",
      now: clock.now(),
    })).id;
  return {
    ...h,
    call,
    start,
    async [Symbol.asyncDispose]() {
      await h.close();
    },
  };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console's workflow pages keep to the tenant and refuse what they must`, async () => {
    await using c = await harness(backend);
    const acme = await c.start("acme", HOSTILE);
    const globex = await c.start("globex", "globex-secret");

    const listed = await c.call("otto", "GET", "/workflows");
    assert.equal(listed.status, 200);
    assert.match(listed.text, new RegExp(`data-run="${acme}"`));
    assert.ok(!listed.text.includes("globex"), "no globex row for acme");
    assert.ok(!listed.text.includes(HOSTILE), "the hostile key is escaped");
    assert.equal((await c.call("otto", "GET", `/workflows/${globex}`)).status, 404);
    assert.equal((await c.call("otto", "GET", "/workflows/nope")).status, 404);
    const shown = await c.call("otto", "GET", `/workflows/${acme}`);
    assert.equal(shown.status, 200);
    assert.ok(shown.text.includes("&lt;img src=x"), "the key shows as text");
    assert.match(shown.text, /data-action="cancel"/);
    assert.ok(!/ style=/.test(shown.text), "no inline style");
    const all = await c.call("ada", "GET", "/workflows");
    assert.match(all.text, new RegExp(`data-run="${globex}"`));

    for (const query of ["state=nope", "after=abc", "workflow=a%00b"]) {
      assert.equal((await c.call("otto", "GET", `/workflows?${query}`)).status, 400, query);
    }
    const filtered = await c.call("otto", "GET", "/workflows?state=failed");
    assert.ok(!filtered.text.includes(`data-run="${acme}"`));

    const placeholder = await c.call("otto", "POST", `/workflows/${acme}/cancel`, "reason=n%2Fa");
    assert.equal(placeholder.status, 400);
    assert.match(placeholder.text, /is not a reason/);
    assert.equal((await c.store.auditList({ target: `workflow:${acme}` })).length, 1);
    const viewer = await c.call("vera", "GET", `/workflows/${acme}`);
    assert.ok(!viewer.text.includes("data-action="), "a viewer sees no action");
    const refused = await c.call("vera", "POST", `/workflows/${acme}/cancel`, "reason=by+hand");
    assert.equal(refused.status, 403);
    const other = await c.call("otto", "POST", `/workflows/${globex}/cancel`, "reason=not+mine");
    assert.equal(other.status, 404, "another tenant's run cannot be acted on");
    const retry = await c.call("otto", "POST", `/workflows/${acme}/retry`, "reason=try+again");
    assert.equal(retry.status, 409, "a running run is not retried");
    const cancelled = await c.call(
      "otto",
      "POST",
      `/workflows/${acme}/cancel`,
      "reason=not+needed",
    );
    assert.equal(cancelled.status, 303);
    assert.equal(cancelled.headers.get("location"), `/workflows/${acme}?done=cancel`);
    const trail = await c.store.auditList({ target: `workflow:${acme}` });
    assert.deepEqual(
      trail.filter((r) => r.action === "workflow.cancel").map((r) => [r.actor, r.reason]),
      [["otto", "not needed"]],
    );
    assert.equal(
      (await c.store.auditList({ target: `workflow:${globex}` })).length,
      1,
      "globex's run untouched",
    );
  });

  Deno.test(`${backend.name}: the console's pipeline and report actions on what is not there are 404 pages`, async () => {
    await using c = await harness(backend);
    for (
      const [path, body] of [
        ["/drops/999/replay", "reason=fix+shipped"],
        ["/pipelines/nowhere/runs", ""],
        ["/reports/nowhere/runs", ""],
        ["/reports/runs/999/links", ""],
      ]
    ) {
      const answer = await c.call("otto", "POST", path!, body);
      assert.equal(answer.status, 404, `${path}: ${answer.text.slice(0, 200)}`);
    }
    for (const path of ["/pipelines", "/pipelines/catalog/drops", "/reports"]) {
      const page = await c.call("otto", "GET", path);
      assert.equal(page.status, 200, path);
    }
    assert.equal((await c.call("otto", "GET", "/reports?after=x")).status, 400);
    assert.equal((await c.call("vera", "POST", "/pipelines/nowhere/runs", "")).status, 403);
  });

  Deno.test(`${backend.name}: the workflows list pages by keyset, keeping its filter`, async () => {
    await using c = await harness(backend);
    for (let i = 0; i <= RUNS_PER_PAGE; i++) await c.start("acme", `k-${i}`);
    const first = await c.call("otto", "GET", "/workflows?workflow=pair");
    const next = /href="(\/workflows\?[^"]+)" rel="next"/.exec(first.text)?.[1];
    assert.ok(next, "a next page");
    const query = new URLSearchParams(next.replaceAll("&amp;", "&").split("?")[1]);
    assert.equal(query.get("workflow"), "pair");
    const second = await c.call("otto", "GET", `/workflows?${query}`);
    assert.equal(second.text.match(/data-run="/g)?.length, 1);
  });
}

/** The statement report (tenant-isolated, date params) and a shared copy, in folder storage. */
async function statementReports(dir: string): Promise<ApiReports> {
  await writeStatementSources(dir);
  const folder = { folder: `${dir}/exports` };
  const authorize = { roles: ["finance", "operator"] };
  const statement = defineReport({ ...statementOptions(folder), authorize }, dir);
  const ledger = defineReport({
    ...statementOptions(folder),
    id: "ledger",
    tenancy: { mode: "shared", reason: "one company's ledger" },
    authorize,
  }, dir);
  return {
    reports: () => [statement, ledger],
    storage: storageOf(() => undefined),
    base: () => Promise.resolve("https://jobs.example.test"),
  };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console's report form follows the declared params and the API's scope rules`, async () => {
    const dir = await tempDir();
    await using _cleanup = { [Symbol.asyncDispose]: dir.cleanup };
    await using c = await harness(backend, await statementReports(dir.path));
    const page = await c.call("otto", "GET", "/reports");
    assert.equal(page.status, 200);
    assert.equal(page.text.match(/type="date" name="param\.(from|to)"/g)?.length, 2);
    assert.match(page.text, /action="\/reports\/statement\/runs"/, "acme may request statement");
    assert.ok(!page.text.includes('action="/reports/ledger/runs"'), "not the shared one");
    const wide = await c.call("ada", "GET", "/reports");
    assert.match(wide.text, /action="\/reports\/ledger\/runs"/, "ada may request the shared one");
    assert.ok(!wide.text.includes('action="/reports/statement/runs"'));

    const shared = await c.call("otto", "POST", "/reports/ledger/runs", "param.from=2026-03-01");
    assert.equal(shared.status, 403);
    const isolated = await c.call(
      "ada",
      "POST",
      "/reports/statement/runs",
      "param.from=2026-03-01",
    );
    assert.equal(isolated.status, 400);
    assert.match(isolated.text, /tenant-isolated/);
    const bad = await c.call(
      "otto",
      "POST",
      "/reports/statement/runs",
      "param.from=March&param.to=2026-04-01",
    );
    assert.equal(bad.status, 400);
    assert.match(bad.text, /must be a date/);
    const viewer = await c.call("vera", "GET", "/reports");
    assert.ok(!viewer.text.includes('data-action="request"'), "a viewer sees no form");
    assert.equal(
      (await c.call("vera", "POST", "/reports/statement/runs", "param.from=2026-03-01")).status,
      403,
    );

    const requested = await c.call(
      "otto",
      "POST",
      "/reports/statement/runs",
      "param.from=2026-03-01&param.to=2026-04-01",
    );
    assert.equal(requested.status, 303);
    assert.equal(requested.headers.get("location"), "/reports?done=requested");
    const [run] = await c.store.reportRunsList({ tenant: "acme" });
    assert.deepEqual([run?.actor, run?.tenant, run?.roles], ["otto", "acme", ["operator"]]);
    assert.deepEqual(run?.params, { from: "2026-03-01", to: "2026-04-01" });
    const listed = await c.call("otto", "GET", "/reports");
    assert.match(listed.text, new RegExp(`data-report-run="${run!.id}"`));
    assert.ok(!(await c.call("ada", "GET", "/reports")).text.includes("Download link"));
    const early = await c.call("otto", "POST", `/reports/runs/${run!.id}/links`, "");
    assert.equal(early.status, 409, "a queued run has no output to link");
  });
}
