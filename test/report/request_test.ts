/**
 * A report request as the library checks it (`checkRequest`, which the
 * daemon's API and `jobs report` share): parameters are looked up as the
 * report's own declarations, so names every object inherits (`constructor`,
 * `toString`) are unknown unless declared, and work when declared; the
 * tenant is held to one rule before a run exists; a job that carries a
 * tenant no storage can hold (enqueued around the check) fails at once,
 * without retries that hold a `max_concurrent` slot.
 */

import assert from "node:assert/strict";
import { startReport } from "../../src/admin/reports.ts";
import { FakeClock } from "../../src/clock.ts";
import { checkReport, defineReport, type ReportOptions } from "../../src/report/definition.ts";
import { checkRequest, ReportRequestError } from "../../src/report/query.ts";
import { TENANT_RULE, tenantProblem } from "../../src/report/tenant.ts";
import { reportJob, reportWorker } from "../../src/runners/report.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { drainQueue } from "../../src/testing.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { tempDir, tempJobs } from "../support/stores.ts";
import { MARCH, statementOptions, writeStatementSources } from "../support/statement_report.ts";

const REQUEST = { params: { ...MARCH }, tenant: "acme", actor: "ada", roles: ["finance"] };

/** The statement report, compiled against its sources in `dir`. */
function statement(dir: string, extra: Partial<ReportOptions> = {}) {
  return defineReport({ ...statementOptions({ folder: `${dir}/exports` }), ...extra }, dir);
}

/** The ReportRequestError `fn` throws. */
function refusal(fn: () => unknown): ReportRequestError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ReportRequestError) return error;
    throw error;
  }
  assert.fail("the request was accepted");
}

/** Tenants that cannot be a storage path segment, or break the rule otherwise. */
const BAD_TENANTS = [
  "../x",
  "a/b",
  ".",
  "..",
  ".hidden",
  "-rf",
  "a\\b",
  "a\u0000b",
  "a\nb",
  "x".repeat(300),
  "x".repeat(65),
  " acme",
  "Zoë",
];

Deno.test("checkRequest() refuses params named like object properties as unknown, naming them", async () => {
  const dir = await tempDir();
  try {
    await writeStatementSources(dir.path);
    const report = statement(dir.path);
    for (const name of ["constructor", "toString", "hasOwnProperty", "__proto__", "valueOf"]) {
      const params = Object.fromEntries([...Object.entries(MARCH), [name, "x"]]);
      const error = refusal(() => checkRequest(report, { ...REQUEST, params }));
      assert.equal(error.code, "report-param-unknown", `${name}: ${error.message}`);
      assert.equal(error.field, `params.${name}`);
      assert.match(error.message, new RegExp(`has no parameter "${name}"`));
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a report that declares a param named constructor takes it, and refuses a request without it", async () => {
  const dir = await tempDir();
  try {
    await writeStatementSources(dir.path);
    await Deno.writeTextFile(
      `${dir.path}/ctor.sql`,
      (await Deno.readTextFile(`${dir.path}/statement.sql`)).replace(
        "WHERE tenant = :tenant",
        "WHERE tenant = :tenant AND :constructor IS NOT NULL AND :toString IS NOT NULL",
      ),
    );
    const report = statement(dir.path, {
      query: "./ctor.sql",
      params: {
        from: { type: "date" },
        to: { type: "date" },
        constructor: { type: "string" as const, values: ["a", "b"] },
        toString: { type: "integer" as const },
      },
    });
    const checked = checkRequest(report, {
      ...REQUEST,
      params: { ...MARCH, constructor: "a", toString: "7" },
    });
    assert.deepEqual(checked.params, { ...MARCH, constructor: "a", toString: 7 });

    const missing = refusal(() => checkRequest(report, { ...REQUEST, params: { ...MARCH } }));
    assert.equal(missing.code, "report-param-missing");
    assert.match(missing.message, /needs the param constructor \(a string\)/);
    const notListed = refusal(() =>
      checkRequest(report, { ...REQUEST, params: { ...MARCH, constructor: "c", toString: "1" } })
    );
    assert.match(notListed.message, /param constructor="c" is not one of a, b/);

    // A sort key is looked up the same way: `constructor` is not one.
    const sorted = refusal(() =>
      checkRequest(report, {
        ...REQUEST,
        params: { ...MARCH, constructor: "a", toString: "1" },
        sort: "constructor",
      })
    );
    assert.equal(sorted.code, "sort-invalid");
  } finally {
    await dir.cleanup();
  }
});

Deno.test("checkReport() refuses a param declared as __proto__, and a default sort that is only inherited", () => {
  const params: Record<string, { type: "string" }> = {};
  Object.defineProperty(params, "__proto__", {
    value: { type: "string" },
    enumerable: true,
    configurable: true,
    writable: true,
  });
  const problems = checkReport({
    ...statementOptions({ folder: "./exports" }),
    params,
    sort: { keys: { id: "id" }, default: "constructor" },
  });
  assert.ok(
    problems.some((p) =>
      p.code === "report-param-name-invalid" &&
      /param "__proto__" cannot be declared/.test(p.message)
    ),
    JSON.stringify(problems),
  );
  assert.ok(
    problems.some((p) =>
      p.code === "report-sort-invalid" && /default sort "constructor"/.test(p.message)
    ),
    JSON.stringify(problems),
  );
});

Deno.test("checkRequest() refuses a tenant that cannot be a storage path, with the rule it broke", async () => {
  const dir = await tempDir();
  try {
    await writeStatementSources(dir.path);
    const report = statement(dir.path);
    for (const tenant of BAD_TENANTS) {
      const error = refusal(() => checkRequest(report, { ...REQUEST, tenant }));
      assert.equal(error.code, "tenant-invalid", `${JSON.stringify(tenant)}: ${error.message}`);
      assert.equal(error.field, "tenant");
      assert.ok(error.message.includes(TENANT_RULE), error.message);
      assert.ok(!error.message.includes("\n") && !error.message.includes("\u0000"), error.message);
      assert.ok(error.message.length < 400, error.message);
    }
    assert.match(
      refusal(() => checkRequest(report, { ...REQUEST, tenant: "x".repeat(300) })).message,
      /is longer than 64 characters \(300\)/,
    );
    for (const tenant of ["acme", "Acme-2.eu_west", "7", "x".repeat(64)]) {
      assert.equal(tenantProblem(tenant), null, tenant);
      assert.equal(checkRequest(report, { ...REQUEST, tenant }).tenant, tenant);
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a run whose tenant cannot be a storage path fails at once, discarded, and frees its max_concurrent slot", async () => {
  const dir = await tempDir();
  const clock = new FakeClock();
  // The worker is made before the store it reads: it asks for it when it runs.
  const opened: { store?: SqliteStore } = {};
  await using t = await tempJobs([
    reportWorker({ store: () => opened.store!, clock, logger: silentLogger, env: () => undefined }),
  ], { clock });
  opened.store = t.store;
  try {
    await writeStatementSources(dir.path);
    const report = statement(dir.path);
    await t.store.settingSet({ key: "report.statement.max_concurrent", value: 1, now: 0 });
    // Enqueued around checkRequest, as an older version or a direct insert could.
    const now = t.clock.now();
    const request = {
      params: { ...MARCH },
      tenant: "../x",
      actor: "ada",
      roles: ["finance"],
      sort: null,
    };
    const runId = await t.store.transaction(async (tx) => {
      const [job] = await tx.jobsInsert({ jobs: [reportJob(report, request, { now })], now });
      const made = await tx.reportRunCreate({
        report: report.id,
        jobId: job!.id,
        tenant: request.tenant,
        actor: request.actor,
        roles: request.roles,
        params: request.params,
        sort: null,
        format: "csv",
        now,
        maxConcurrent: 1,
      });
      assert.ok("run" in made);
      return made.run.id;
    });

    const drained = await drainQueue(t.jobs, "reports");
    assert.deepEqual({ discarded: drained.discarded, retryable: drained.retryable }, {
      discarded: 1,
      retryable: 0,
    });
    const run = (await t.store.reportRunGet({ id: runId }))!;
    assert.equal(run.state, "failed");
    assert.match(run.error!, /tenant "\.\.\/x" contains "\/"; run \d+ wrote nothing$/);
    assert.ok(!run.error!.includes("\n"), run.error!);

    // The slot is free: the next request is not refused for max_concurrent.
    const next = await startReport(t.store, report, REQUEST, t.clock.now());
    assert.equal(next.run.state, "queued");
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a run whose source fails on every attempt ends failed with one line of why", async () => {
  const dir = await tempDir();
  const clock = new FakeClock();
  const opened: { store?: SqliteStore } = {};
  await using t = await tempJobs([
    reportWorker({ store: () => opened.store!, clock, logger: silentLogger, env: () => undefined }),
  ], { clock });
  opened.store = t.store;
  try {
    await writeStatementSources(dir.path);
    const report = statement(dir.path, { source: { sqlite: "./missing.db" } });
    const started = await startReport(t.store, report, REQUEST, t.clock.now());
    const drained = await drainQueue(t.jobs, "reports", { withScheduled: true });
    assert.deepEqual({ retryable: drained.retryable, discarded: drained.discarded }, {
      retryable: 2,
      discarded: 1,
    });
    const run = (await t.store.reportRunGet({ id: started.run.id }))!;
    assert.equal(run.state, "failed");
    assert.match(run.error!, /^report statement: run \d+ failed: .*unable to open database file/);
    assert.ok(!run.error!.includes("\n"), run.error!);
    const job = (await t.store.jobGet({ id: started.job }))!;
    assert.equal(job.state, "discarded");
  } finally {
    await dir.cleanup();
  }
});
