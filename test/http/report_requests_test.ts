/**
 * The daemon's report routes in process, on a real port over a temp SQLite
 * store, for requests a black-box run found faults in (issue 25, items
 * 11-13): params named like object properties are unknown params (400
 * `report-param-unknown`), a tenant that cannot be a storage path is
 * refused at the request (400 `tenant-invalid` with the rule), a failed
 * run's error is one line without stack frames, and a path with malformed
 * percent-encoding is a 400 `path-invalid` that logs nothing.
 */

import assert from "node:assert/strict";
import { SystemClock } from "../../src/clock.ts";
import { defineReport } from "../../src/report/definition.ts";
import { REQUEST_BUDGET_KEY } from "../../src/report/limits.ts";
import { TENANT_RULE } from "../../src/report/tenant.ts";
import { startHttpServer } from "../../src/http/server.ts";
import { storageOf } from "../../src/runners/report.ts";
import { tempDir, tempStore } from "../support/stores.ts";
import { MARCH, statementOptions, writeStatementSources } from "../support/statement_report.ts";

const TOKEN = "report-requests-token";
const REQUEST = { params: MARCH, tenant: "acme", actor: "ada", roles: ["finance"] };

/** A server with the statement report, its log, and a call helper; disposed of with `await using`. */
async function serving() {
  const dir = await tempDir();
  const opened = await tempStore();
  const { store } = opened;
  await writeStatementSources(dir.path);
  const report = defineReport(statementOptions({ folder: `${dir.path}/exports` }), dir.path);
  // A request answers 202 at once: nothing runs the queue here.
  await store.settingSet({ key: REQUEST_BUDGET_KEY, value: 1, now: 0 });
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const server = await startHttpServer({
    store,
    listen: "127.0.0.1:0",
    token: TOKEN,
    logger: (event, fields) => events.push({ event, fields }),
    clock: new SystemClock(),
    reports: { reports: () => [report], storage: storageOf(() => undefined) },
  });
  const base = `http://127.0.0.1:${server.addr!.port}`;
  /** `method path` with the bearer (unless `bearer` is false) and `body` as raw text. */
  const call = async (
    method: "GET" | "POST",
    path: string,
    body?: string,
    bearer = true,
  ) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: bearer ? { authorization: `Bearer ${TOKEN}` } : {},
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
    async [Symbol.asyncDispose]() {
      await server.close();
      await opened[Symbol.asyncDispose]();
      await dir.cleanup();
    },
  };
}

Deno.test("POST /reports/<id>/runs answers 400 report-param-unknown for params named like object properties", async () => {
  await using s = await serving();
  for (const name of ["constructor", "toString", "hasOwnProperty", "__proto__", "valueOf"]) {
    // Raw JSON: a `__proto__` key must reach the server as the caller wrote it.
    const body = `{"params":{"from":"2026-03-01","to":"2026-04-01",${
      JSON.stringify(name)
    }:"x"},"tenant":"acme","actor":"ada","roles":["finance"]}`;
    const got = await s.call("POST", "/reports/statement/runs", body);
    assert.equal(got.status, 400, `${name}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.code, "report-param-unknown", name);
    assert.equal(got.body.field, `params.${name}`);
    assert.match(got.body.error, new RegExp(`has no parameter "${name}"`));
  }
  assert.deepEqual(await s.store.reportRunsList({}), [], "no run was started");
  const ok = await s.call("POST", "/reports/statement/runs", JSON.stringify(REQUEST));
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
  assert.deepEqual(s.events.filter((e) => e.event === "http.error"), []);
});

Deno.test("POST /reports/<id>/runs answers 400 tenant-invalid with the rule for a tenant that cannot be a storage path", async () => {
  await using s = await serving();
  const bad = ["../x", "a/b", ".", "..", "-x", "a\u0000b", "a\nb", "x".repeat(300), "Zoë & Co"];
  for (const tenant of bad) {
    const got = await s.call(
      "POST",
      "/reports/statement/runs",
      JSON.stringify({ ...REQUEST, tenant }),
    );
    assert.equal(got.status, 400, `${JSON.stringify(tenant)}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.code, "tenant-invalid");
    assert.equal(got.body.field, "tenant");
    assert.ok(got.body.error.includes(TENANT_RULE), got.body.error);
  }
  const numeric = await s.call(
    "POST",
    "/reports/statement/runs",
    JSON.stringify({ ...REQUEST, tenant: 7 }),
  );
  assert.equal(numeric.status, 400);
  assert.equal(numeric.body.code, "tenant-invalid");
  assert.deepEqual(await s.store.reportRunsList({}), [], "no run was started");
  const ok = await s.call(
    "POST",
    "/reports/statement/runs",
    JSON.stringify({ ...REQUEST, tenant: "Acme-2.eu_west" }),
  );
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
});

Deno.test("GET /reports/runs/<run> shows a failed run's error as one line, without stack frames or source paths", async () => {
  await using s = await serving();
  const started = await s.call("POST", "/reports/statement/runs", JSON.stringify(REQUEST));
  assert.equal(started.status, 202, JSON.stringify(started.body));
  // The job failed the way an unforeseen error is stored: message, frames, cause.
  const stored = 'Error: output key: tenant "../x" contains "/"\n' +
    "    at outputKey (file:///work/src/report/storage.ts:151:11)\n" +
    "    at runReport (file:///work/src/report/run.ts:84:15)\n" +
    "caused by: TypeError: boom\n    at x (file:///work/src/a.ts:1:1)";
  s.store.db.prepare("UPDATE jobs SET state = 'discarded', errors = ? WHERE id = ?")
    .run(JSON.stringify([{ attempt: 3, error: stored }]), started.body.job);
  const got = await s.call("GET", `/reports/runs/${started.body.run}`);
  assert.equal(got.status, 200, JSON.stringify(got.body));
  assert.equal(got.body.state, "failed");
  assert.equal(got.body.error, 'Error: output key: tenant "../x" contains "/"');
});

Deno.test("malformed percent-encoding in a report or download path is 400 path-invalid and logs nothing", async () => {
  await using s = await serving();
  for (const path of ["/downloads/%", "/downloads/%zz", "/downloads/%E0%A4%A"]) {
    const got = await s.call("GET", path, undefined, false);
    assert.equal(got.status, 400, `${path}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.code, "path-invalid", path);
  }
  for (const path of ["/reports/%E0%A4%A/runs", "/reports/%/runs", "/reports/%zz/runs"]) {
    const got = await s.call("POST", path, JSON.stringify(REQUEST));
    assert.equal(got.status, 400, `${path}: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.code, "path-invalid", path);
  }
  // Well-formed encoding still decodes: an unknown report is a 404 naming it.
  const unknown = await s.call("POST", "/reports/st%61tement%2Fx/runs", JSON.stringify(REQUEST));
  assert.equal(unknown.status, 404);
  assert.deepEqual(s.events.filter((e) => e.event === "http.error"), []);
});
