/**
 * `/api/v1/reports` on every backend, with the statement report run by a
 * real report worker (folder storage) on a FakeClock:
 *
 * - a viewer lists the declared reports and the runs, and is refused (403,
 *   the role named) requesting a run or a link;
 * - an operator of acme requests a run: the run and its audit row name
 *   `token:<name>`, carry acme and the principal's roles; a body naming
 *   `tenant`, `actor` or `roles` is 400 and starts nothing;
 * - globex's principal sees none of acme's runs (list, show, link: 404);
 * - an installation-wide principal is refused an isolated report (400
 *   `tenant-required`) and runs a shared one, which a tenant's principal is
 *   refused (403); a report naming only roles of its own refuses the API's
 *   principals (403 `role-refused`);
 * - a run outliving its budget is 202 with its Location; `max_concurrent`
 *   reached is 429 `report-limit`;
 * - a link downloads its run only, whatever the caller says its tenant is;
 *   tampered 403, expired 410, and a token whose signed tenant is not the
 *   run's 403.
 */

import assert from "node:assert/strict";
import { downloadSecret } from "../../src/admin/reports.ts";
import { createToken } from "../../src/admin/tokens.ts";
import { FakeClock } from "../../src/clock.ts";
import { apiApp, type ApiOptions } from "../../src/http/api/app.ts";
import { downloadRoute } from "../../src/http/reports.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { defineReport } from "../../src/report/definition.ts";
import { REQUEST_BUDGET_KEY } from "../../src/report/limits.ts";
import { mintToken } from "../../src/report/tokens.ts";
import { reportWorker, storageOf } from "../../src/runners/report.ts";
import { waitUntil } from "../../src/testing.ts";
import { type Backend, backendJobs, BACKENDS } from "../support/backends.ts";
import {
  MARCH,
  statementCsv,
  statementOptions,
  writeStatementSources,
} from "../support/statement_report.ts";
import { tempDir } from "../support/stores.ts";
import { INSTALL_TOKEN } from "./api_support.ts";

const BASE = "https://jobs.example.test";

/** A shared report: every tenant's March rows (one company's ledger). */
const ALL_QUERY = `SELECT id, booked_at, description, amount FROM ledger
WHERE booked_at >= :from AND booked_at < :to AND id > coalesce(:after_key, -1)
ORDER BY id LIMIT :page_size
`;

/**
 * The API over a fresh store of `backend` with the statement report (its
 * roles: `finance` and the API's `operator`), a shared `ledger` report and
 * a `locked` one for `finance` only; with `run`, a runtime runs the
 * reports queue. Closed with `await using`.
 */
async function reportsHarness(backend: Backend, options: { run?: boolean } = {}) {
  const dir = await tempDir();
  await writeStatementSources(dir.path);
  await Deno.writeTextFile(`${dir.path}/all.sql`, ALL_QUERY);
  const folder = { folder: `${dir.path}/exports` };
  const statement = defineReport({
    ...statementOptions(folder),
    authorize: { roles: ["finance", "operator"], sensitive: { description: ["finance-lead"] } },
  }, dir.path);
  const ledger = defineReport({
    ...statementOptions(folder),
    id: "ledger",
    query: "./all.sql",
    tenancy: { mode: "shared", reason: "one company's ledger" },
    authorize: { roles: ["operator", "admin"] },
  }, dir.path);
  const locked = defineReport({ ...statementOptions(folder), id: "locked" }, dir.path);
  const reports = [statement, ledger, locked];
  const clock = new FakeClock();
  const worker = reportWorker({
    store: () => t.store,
    clock,
    logger: silentLogger,
    env: () => undefined,
    tmpDir: dir.path,
  });
  const t = await backendJobs(backend, [worker], { clock });
  const runtime = options.run ? await t.jobs.start({ queues: { reports: 1 }, node: "n1" }) : null;
  const storage = storageOf(() => undefined);
  const routes: NonNullable<ApiOptions["reports"]> = {
    reports: () => reports,
    storage,
    wake: (queues) => runtime?.wake(queues),
    base: () => Promise.resolve(BASE),
  };
  const app = await apiApp({
    store: t.store,
    clock,
    logger: silentLogger,
    token: INSTALL_TOKEN,
    reports: routes,
  });
  const token = async (name: string, roles: string[], tenant: string | null = null) =>
    (await createToken(t.store, { name, roles, tenant, expiresInMs: null }, {
      actor: "root",
      reason: null,
      now: clock.now(),
    }, "host")).secret;
  /** One request, answered: the fake clock moves on while it waits within its budget. */
  const call = async (method: string, path: string, secret: string, body?: unknown) => {
    const pending = Promise.resolve(app.fetch(
      new Request(`http://api.test${path}`, {
        method,
        headers: {
          authorization: `Bearer ${secret}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
      { remote: "192.0.2.1" },
    ));
    let answer: Response | null = null;
    pending.then((r) => answer = r, () => answer = null);
    const response = await waitUntil(`${method} ${path} answered`, async () => {
      await Promise.race([pending, new Promise((r) => setTimeout(r, 2))]).catch(() => {});
      if (answer) return answer;
      clock.advance(25);
      return null;
    }, { timeoutMs: 30_000 });
    // deno-lint-ignore no-explicit-any -- the tests read whatever JSON came back
    const json: any = await response.json();
    return { status: response.status, json, headers: response.headers };
  };
  /** `GET /downloads/<token>` as the daemon serves it, with `headers`. */
  const download = async (url: string, headers: Record<string, string> = {}) => {
    const request = new Request(url, { headers });
    const response = await downloadRoute(request, new URL(url), {
      store: t.store,
      clock,
      routes,
    });
    assert.ok(response, url);
    return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
  };
  return {
    store: t.store,
    clock,
    dir: dir.path,
    call,
    token,
    download,
    async [Symbol.asyncDispose]() {
      await t[Symbol.asyncDispose]();
      await dir.cleanup();
    },
  };
}

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer lists /api/v1/reports and runs, and gets 403 naming the role requesting a run or a link`, async () => {
    await using api = await reportsHarness(backend);
    const viewer = await api.token("reader", ["viewer"], "acme");
    const listed = await api.call("GET", "/api/v1/reports", viewer);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.json.reports.map((r: { id: string }) => r.id), [
      "statement",
      "ledger",
      "locked",
    ]);
    const [statement] = listed.json.reports;
    assert.deepEqual(statement.params, { from: { type: "date" }, to: { type: "date" } });
    assert.deepEqual(statement.formats, ["csv"]);
    assert.equal(statement.tenancy, "isolated");
    assert.deepEqual(statement.roles, ["finance", "operator"]);
    assert.ok(!JSON.stringify(statement).includes(api.dir), "no path of the host is shown");
    const runs = await api.call("GET", "/api/v1/reports/runs", viewer);
    assert.equal(runs.status, 200);
    assert.deepEqual(runs.json, { runs: [], next: null });
    const refused = await api.call("POST", "/api/v1/reports/statement/runs", viewer, {
      params: MARCH,
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, "role-required");
    assert.match(refused.json.error.message, /"operator"/);
    const link = await api.call("POST", "/api/v1/reports/runs/1/links", viewer, {});
    assert.equal(link.status, 403);
    assert.equal(link.json.error.code, "role-required");
    assert.deepEqual(await api.store.reportRunsList({}), []);
  });

  Deno.test(`${backend.name}: an operator of acme runs a report as token:<name> for acme; globex's principal cannot see it; a body naming who asks is 400`, async () => {
    await using api = await reportsHarness(backend, { run: true });
    await api.store.settingSet({ key: REQUEST_BUDGET_KEY, value: 3_600_000, now: 0 });
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const globex = await api.token("globex-ops", ["operator"], "globex");
    for (const extra of [{ tenant: "globex" }, { actor: "ada" }, { roles: ["finance-lead"] }]) {
      const named = await api.call("POST", "/api/v1/reports/statement/runs", acme, {
        params: MARCH,
        ...extra,
      });
      assert.equal(named.status, 400, JSON.stringify(extra));
      assert.equal(named.json.error.code, "body-invalid");
      assert.match(named.json.error.message, /unknown field/);
    }
    assert.deepEqual(await api.store.reportRunsList({}), [], "no run was started");

    const ran = await api.call("POST", "/api/v1/reports/statement/runs", acme, {
      params: MARCH,
      format: "csv",
    });
    assert.equal(ran.status, 200, JSON.stringify(ran.json));
    assert.equal(ran.json.state, "completed", JSON.stringify(ran.json));
    assert.equal(ran.json.tenant, "acme");
    assert.equal(ran.json.actor, "token:acme-ops");
    assert.equal(ran.json.rows, 12);
    assert.equal(ran.json.output, `${api.dir}/exports/acme/statement/${ran.json.run}.csv`);
    // Masked: the principal holds operator, not finance-lead.
    assert.equal(
      await Deno.readTextFile(ran.json.output),
      statementCsv("acme", { lead: false }),
    );
    const stored = await api.store.reportRunGet({ id: ran.json.run });
    assert.deepEqual(stored?.roles, ["operator"]);
    const audit = await api.store.auditList({ target: "finance-audit" });
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.details.tenant]),
      [["report.run", "token:acme-ops", "acme"]],
    );

    const other = await api.call("POST", "/api/v1/reports/statement/runs", globex, {
      params: MARCH,
    });
    assert.equal(other.status, 200, JSON.stringify(other.json));
    assert.equal(other.json.tenant, "globex");
    assert.equal(other.json.rows, 3);

    // Each tenant's principal sees its own run only; the installation sees both.
    const runsOf = async (secret: string, query = "") =>
      (await api.call("GET", `/api/v1/reports/runs${query}`, secret)).json.runs
        .map((r: { run: number }) => r.run);
    assert.deepEqual(await runsOf(acme), [ran.json.run]);
    assert.deepEqual(await runsOf(globex), [other.json.run]);
    assert.deepEqual(await runsOf(INSTALL_TOKEN), [other.json.run, ran.json.run]);
    const paged = await api.call("GET", "/api/v1/reports/runs?limit=1", INSTALL_TOKEN);
    assert.deepEqual(paged.json.next, other.json.run);
    assert.deepEqual(await runsOf(INSTALL_TOKEN, `?limit=1&after=${other.json.run}`), [
      ran.json.run,
    ]);
    assert.deepEqual(await runsOf(INSTALL_TOKEN, "?report=ledger"), []);
    const named = await api.call("GET", "/api/v1/reports/runs?tenant=acme", globex);
    assert.equal(named.status, 400);
    assert.equal(named.json.error.code, "query-invalid");

    const shown = await api.call("GET", `/api/v1/reports/runs/${ran.json.run}`, acme);
    assert.equal(shown.status, 200);
    assert.equal(shown.json.state, "completed");
    for (const path of [`/api/v1/reports/runs/${ran.json.run}`, "/api/v1/reports/runs/99999"]) {
      const hidden = await api.call("GET", path, globex);
      assert.equal(hidden.status, 404, path);
      assert.equal(hidden.json.error.code, "run-not-found");
    }
    const link = await api.call("POST", `/api/v1/reports/runs/${ran.json.run}/links`, globex, {});
    assert.equal(link.status, 404);
    assert.equal(link.json.error.code, "run-not-found");
    const unknown = await api.call("POST", "/api/v1/reports/nope/runs", acme, { params: {} });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, "report-not-found");
    const format = await api.call("POST", "/api/v1/reports/statement/runs", acme, {
      params: MARCH,
      format: "ndjson",
    });
    assert.equal(format.status, 400);
    assert.equal(format.json.error.code, "format-invalid");
  });

  Deno.test(`${backend.name}: an isolated report needs a tenant's principal, a shared one an installation-wide one, and the report's roles are the principal's`, async () => {
    await using api = await reportsHarness(backend, { run: true });
    await api.store.settingSet({ key: REQUEST_BUDGET_KEY, value: 3_600_000, now: 0 });
    const wide = await api.token("ops", ["operator"]);
    const acme = await api.token("acme-ops", ["operator"], "acme");
    for (const secret of [wide, INSTALL_TOKEN]) {
      const refused = await api.call("POST", "/api/v1/reports/statement/runs", secret, {
        params: MARCH,
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.json.error.code, "tenant-required");
      assert.match(refused.json.error.message, /jobs tokens create --tenant/);
    }
    const shared = await api.call("POST", "/api/v1/reports/ledger/runs", acme, { params: MARCH });
    assert.equal(shared.status, 403);
    assert.equal(shared.json.error.code, "installation-scope-required");
    const locked = await api.call("POST", "/api/v1/reports/locked/runs", acme, { params: MARCH });
    assert.equal(locked.status, 403);
    assert.equal(locked.json.error.code, "role-refused");
    assert.match(locked.json.error.message, /may be run by the roles finance; token:acme-ops/);
    assert.deepEqual(await api.store.reportRunsList({}), [], "no run was started");

    const ledger = await api.call("POST", "/api/v1/reports/ledger/runs", INSTALL_TOKEN, {
      params: MARCH,
    });
    assert.equal(ledger.status, 200, JSON.stringify(ledger.json));
    assert.equal(ledger.json.tenant, null);
    assert.equal(ledger.json.actor, "token:installation");
    assert.equal(ledger.json.rows, 15);
    // A tenant's principal does not see the shared run either.
    assert.equal(
      (await api.call("GET", `/api/v1/reports/runs/${ledger.json.run}`, acme)).status,
      404,
    );
    const params = await api.call("POST", "/api/v1/reports/statement/runs", acme, {
      params: { ...MARCH, from: 20260301 },
    });
    assert.equal(params.status, 400);
    assert.equal(params.json.error.code, "report-param-invalid");
    assert.match(params.json.error.message, /must be a date/);
  });

  Deno.test(`${backend.name}: a run past its budget is 202 with its Location; past max_concurrent 429 report-limit`, async () => {
    await using api = await reportsHarness(backend);
    await api.store.settingSet({ key: REQUEST_BUDGET_KEY, value: 1, now: 0 });
    await api.store.settingSet({ key: "report.statement.max_concurrent", value: 1, now: 0 });
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const queued = await api.call("POST", "/api/v1/reports/statement/runs", acme, {
      params: MARCH,
    });
    assert.equal(queued.status, 202, JSON.stringify(queued.json));
    assert.equal(queued.json.state, "queued");
    assert.equal(queued.json.budgetMs, 1);
    assert.equal(queued.headers.get("location"), `/api/v1/reports/runs/${queued.json.run}`);
    const busy = await api.call("POST", "/api/v1/reports/statement/runs", acme, {
      params: MARCH,
    });
    assert.equal(busy.status, 429);
    assert.equal(busy.json.error.code, "report-limit");
    assert.match(busy.json.error.message, /max_concurrent 1/);
    const link = await api.call("POST", `/api/v1/reports/runs/${queued.json.run}/links`, acme, {});
    assert.equal(link.status, 409);
    assert.equal(link.json.error.code, "no-output");
  });

  Deno.test(`${backend.name}: a link downloads its own run only, signed with its tenant: the caller's say is not asked`, async () => {
    await using api = await reportsHarness(backend, { run: true });
    await api.store.settingSet({ key: REQUEST_BUDGET_KEY, value: 3_600_000, now: 0 });
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const globex = await api.token("globex-ops", ["operator"], "globex");
    const ran = await api.call("POST", "/api/v1/reports/statement/runs", acme, { params: MARCH });
    assert.equal(ran.json.state, "completed", JSON.stringify(ran.json));
    const theirs = await api.call("POST", "/api/v1/reports/statement/runs", globex, {
      params: MARCH,
    });
    assert.equal(theirs.json.state, "completed", JSON.stringify(theirs.json));
    const named = await api.call("POST", `/api/v1/reports/runs/${ran.json.run}/links`, acme, {
      actor: "ada",
    });
    assert.equal(named.status, 400);
    assert.equal(named.json.error.code, "body-invalid");

    const before = api.clock.now();
    const minted = await api.call("POST", `/api/v1/reports/runs/${ran.json.run}/links`, acme, {
      ttl_ms: 60_000,
    });
    assert.equal(minted.status, 201, JSON.stringify(minted.json));
    assert.equal(minted.json.kind, "daemon");
    assert.equal(minted.json.run, ran.json.run);
    // The fake clock moves while a request waits: the expiry is 60 s from some instant of the call.
    const expires = Date.parse(minted.json.expires);
    assert.ok(
      expires > before + 60_000 - 1 && expires <= api.clock.now() + 60_000,
      minted.json.expires,
    );
    const url: string = minted.json.url;
    assert.match(url, new RegExp(`^${BASE}/downloads/[\\w-]+\\.[\\w-]+$`));
    const own = await api.download(url);
    assert.equal(own.status, 200);
    assert.equal(decode(own.bytes), statementCsv("acme", { lead: false }));
    // Whatever tenant the caller names, the link serves what it was signed for.
    for (const said of [{ "x-jobs-tenant": "globex" }, { "x-jobs-tenant": "acme" }]) {
      const got = await api.download(url, said);
      assert.equal(got.status, 200);
      assert.equal(decode(got.bytes), statementCsv("acme", { lead: false }));
    }
    assert.equal((await api.download(`${url}?tenant=globex`)).status, 200);
    // Tampered, and signed for another tenant than the run's: 403.
    const token = url.slice(url.lastIndexOf("/") + 1);
    const flipped = token.slice(0, 5) + (token[5] === "A" ? "B" : "A") + token.slice(6);
    const tampered = await api.download(`${BASE}/downloads/${flipped}`);
    assert.equal(tampered.status, 403);
    assert.deepEqual(JSON.parse(decode(tampered.bytes)), { error: "forged" });
    const crossed = await mintToken(await downloadSecret(api.store), {
      run: theirs.json.run,
      tenant: "acme",
      actor: "token:acme-ops",
      expires: api.clock.now() + 60_000,
    });
    const refused = await api.download(`${BASE}/downloads/${crossed}`);
    assert.equal(refused.status, 403);
    assert.deepEqual(JSON.parse(decode(refused.bytes)), { error: "tenant" });
    // Past its ttl: 410.
    api.clock.advance(60_000);
    const late = await api.download(url);
    assert.equal(late.status, 410);
    assert.deepEqual(JSON.parse(decode(late.bytes)), { error: "expired" });

    const audit = await api.store.auditList({ target: "finance-audit" });
    const acmeRows = audit.filter((a) => a.details.run === ran.json.run);
    assert.deepEqual(acmeRows.map((a) => [a.action, a.actor]), [
      ["report.run", "token:acme-ops"],
      ["report.link", "token:acme-ops"],
      ["report.download", "token:acme-ops"],
      ["report.download", "token:acme-ops"],
      ["report.download", "token:acme-ops"],
      ["report.download", "token:acme-ops"],
    ]);
    assert.ok(!audit.some((a) => a.action === "report.download" && a.details.run !== ran.json.run));
  });
}
