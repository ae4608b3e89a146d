/**
 * The daemon's report routes in process, on a real port over a temp SQLite
 * store, for requests a black-box run found faults in (issue 25, items
 * 11-13), as `/api/v1/reports` answers them now (issue 28: who asks is the
 * bearer token's principal): params named like object properties are
 * unknown params (400 `report-param-unknown`), a principal whose tenant
 * cannot be a storage path is refused at the request (400 `tenant-invalid`
 * with the rule), a failed run's error is one line without stack frames, a
 * path with malformed percent-encoding is refused and logs nothing, and the
 * old `/reports/...` routes, which took `actor`, `roles` and `tenant` from
 * the body, are gone (404).
 */

import assert from "node:assert/strict";
import { createToken } from "../../src/admin/tokens.ts";
import { SystemClock } from "../../src/clock.ts";
import { defineReport } from "../../src/report/definition.ts";
import { REQUEST_BUDGET_KEY } from "../../src/report/limits.ts";
import { TENANT_RULE } from "../../src/report/tenant.ts";
import { startHttpServer } from "../../src/http/server.ts";
import { storageOf } from "../../src/runners/report.ts";
import { tempDir, tempStore } from "../support/stores.ts";
import { MARCH, statementOptions, writeStatementSources } from "../support/statement_report.ts";

const TOKEN = "report-requests-token";
const REQUEST = { params: MARCH };

/**
 * A server with the statement report (runnable by `operator`), its log, a
 * call helper, and `token(tenant)`: an operator's secret scoped to
 * `tenant`; disposed of with `await using`.
 */
async function serving() {
  const dir = await tempDir();
  const opened = await tempStore();
  const { store } = opened;
  await writeStatementSources(dir.path);
  const report = defineReport({
    ...statementOptions({ folder: `${dir.path}/exports` }),
    authorize: { roles: ["finance", "operator"] },
  }, dir.path);
  // A request answers 202 at once: nothing runs the queue here.
  await store.settingSet({ key: REQUEST_BUDGET_KEY, value: 1, now: 0 });
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const clock = new SystemClock();
  const server = await startHttpServer({
    store,
    listen: "127.0.0.1:0",
    token: TOKEN,
    logger: (event, fields) => events.push({ event, fields }),
    clock,
    reports: { reports: () => [report], storage: storageOf(() => undefined) },
  });
  const base = `http://127.0.0.1:${server.addr!.port}`;
  let made = 0;
  /** An operator's token scoped to `tenant`. */
  const token = async (tenant: string) =>
    (await createToken(
      store,
      {
        name: `ops-${++made}`,
        roles: ["operator"],
        tenant,
        expiresInMs: null,
      },
      { actor: "root", reason: null, now: clock.now() },
      "host",
    )).secret;
  /** `method path` with `bearer` (none when null) and `body` as raw text. */
  const call = async (
    method: "GET" | "POST",
    path: string,
    bearer: string | null,
    body?: string,
  ) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    // deno-lint-ignore no-explicit-any
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = { text };
    }
    return { status: response.status, body: json };
  };
  return {
    store,
    events,
    call,
    token,
    async [Symbol.asyncDispose]() {
      await server.close();
      await opened[Symbol.asyncDispose]();
      await dir.cleanup();
    },
  };
}

Deno.test("POST /api/v1/reports/<id>/runs answers 400 report-param-unknown for params named like object properties", async () => {
  await using s = await serving();
  const acme = await s.token("acme");
  for (const name of ["constructor", "toString", "hasOwnProperty", "valueOf"]) {
    const body = `{"params":{"from":"2026-03-01","to":"2026-04-01",${JSON.stringify(name)}:"x"}}`;
    const got = await s.call("POST", "/api/v1/reports/statement/runs", acme, body);
    assert.equal(got.status, 400, `${name}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.error.code, "report-param-unknown", name);
    assert.match(got.body.error.message, new RegExp(`has no parameter "${name}"`));
  }
  // Raw JSON: a `__proto__` key reaches the server as the caller wrote it, and is refused.
  const proto = await s.call(
    "POST",
    "/api/v1/reports/statement/runs",
    acme,
    `{"params":{"from":"2026-03-01","to":"2026-04-01","__proto__":"x"}}`,
  );
  assert.equal(proto.status, 400, JSON.stringify(proto.body));
  assert.equal(proto.body.error.code, "body-invalid");
  assert.match(proto.body.error.message, /"__proto__"/);
  assert.deepEqual(await s.store.reportRunsList({}), [], "no run was started");
  const ok = await s.call("POST", "/api/v1/reports/statement/runs", acme, JSON.stringify(REQUEST));
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
  assert.deepEqual(s.events.filter((e) => e.event === "http.error"), []);
});

Deno.test("POST /api/v1/reports/<id>/runs answers 400 tenant-invalid with the rule for a principal whose tenant cannot be a storage path, and never reads a tenant from the body", async () => {
  await using s = await serving();
  // Token names allow `:` and `/` and 128 characters; a storage path segment does not.
  for (const tenant of ["a/b", "a:b", "x".repeat(100)]) {
    const got = await s.call(
      "POST",
      "/api/v1/reports/statement/runs",
      await s.token(tenant),
      JSON.stringify(REQUEST),
    );
    assert.equal(got.status, 400, `${JSON.stringify(tenant)}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.error.code, "tenant-invalid");
    assert.ok(got.body.error.message.includes(TENANT_RULE), got.body.error.message);
  }
  const acme = await s.token("Acme-2.eu_west");
  for (const tenant of ["globex", 7, null]) {
    const named = await s.call(
      "POST",
      "/api/v1/reports/statement/runs",
      acme,
      JSON.stringify({ ...REQUEST, tenant }),
    );
    assert.equal(named.status, 400);
    assert.equal(named.body.error.code, "body-invalid");
  }
  assert.deepEqual(await s.store.reportRunsList({}), [], "no run was started");
  const ok = await s.call("POST", "/api/v1/reports/statement/runs", acme, JSON.stringify(REQUEST));
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
  assert.equal(ok.body.tenant, "Acme-2.eu_west");
});

Deno.test("GET /api/v1/reports/runs/<run> shows a failed run's error as one line, without stack frames or source paths", async () => {
  await using s = await serving();
  const acme = await s.token("acme");
  const started = await s.call(
    "POST",
    "/api/v1/reports/statement/runs",
    acme,
    JSON.stringify(REQUEST),
  );
  assert.equal(started.status, 202, JSON.stringify(started.body));
  // The job failed the way an unforeseen error is stored: message, frames, cause.
  const stored = 'Error: output key: tenant "../x" contains "/"\n' +
    "    at outputKey (file:///work/src/report/storage.ts:151:11)\n" +
    "    at runReport (file:///work/src/report/run.ts:84:15)\n" +
    "caused by: TypeError: boom\n    at x (file:///work/src/a.ts:1:1)";
  s.store.db.prepare("UPDATE jobs SET state = 'discarded', errors = ? WHERE id = ?")
    .run(JSON.stringify([{ attempt: 3, error: stored }]), started.body.job);
  const got = await s.call("GET", `/api/v1/reports/runs/${started.body.run}`, acme);
  assert.equal(got.status, 200, JSON.stringify(got.body));
  assert.equal(got.body.state, "failed");
  assert.equal(got.body.error, 'Error: output key: tenant "../x" contains "/"');
});

Deno.test("malformed percent-encoding in a download path is 400 path-invalid, in a report path a 404, and logs nothing", async () => {
  await using s = await serving();
  const acme = await s.token("acme");
  for (const path of ["/downloads/%", "/downloads/%zz", "/downloads/%E0%A4%A"]) {
    const got = await s.call("GET", path, null);
    assert.equal(got.status, 400, `${path}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.code, "path-invalid", path);
  }
  for (const path of ["/api/v1/reports/%E0%A4%A/runs", "/api/v1/reports/%/runs"]) {
    const got = await s.call("POST", path, acme, JSON.stringify(REQUEST));
    // The router keeps a segment it cannot decode as it came: no report has that id.
    assert.equal(got.status, 404, `${path}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.error.code, "report-not-found", path);
  }
  // Well-formed encoding still decodes: an unknown report is a 404 naming it.
  const unknown = await s.call(
    "POST",
    "/api/v1/reports/st%61tement%2Fx/runs",
    acme,
    JSON.stringify(REQUEST),
  );
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error.code, "report-not-found");
  assert.match(unknown.body.error.message, /"statement\/x"/);
  assert.deepEqual(s.events.filter((e) => e.event === "http.error"), []);
});

Deno.test("the old /reports/... routes are gone: the daemon's token starts nothing there, whatever the body says", async () => {
  await using s = await serving();
  const old = JSON.stringify({ ...REQUEST, tenant: "acme", actor: "ada", roles: ["finance"] });
  for (
    const [method, path] of [
      ["POST", "/reports/statement/runs"],
      ["GET", "/reports/runs/1"],
      ["POST", "/reports/runs/1/links"],
    ] as const
  ) {
    const got = await s.call(method, path, TOKEN, method === "POST" ? old : undefined);
    // The paths are the console's now: it reads no bearer token, refuses a change from no page
    // of its own (403), and sends a reader with no session to sign in (303).
    assert.ok(
      [303, 403, 404].includes(got.status),
      `${method} ${path}: ${got.status} ${JSON.stringify(got.body).slice(0, 200)}`,
    );
  }
  assert.deepEqual(await s.store.reportRunsList({}), [], "no run was started");
});
