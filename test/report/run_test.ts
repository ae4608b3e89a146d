/**
 * Report runs under a runtime, from a SQLite source and from a PostgreSQL
 * source, on both job stores: an operator's cancel stops a run mid-query
 * (a SQLite statement before its next batch, a sleeping PostgreSQL
 * statement at once), the runtime limit interrupts a slow query, the
 * output-size limit stops a large one, each leaving no file behind; a
 * PostgreSQL source binds every value (a tenant carrying SQL is refused
 * before it runs) and keeps `date`, `bigint` and `numeric` values as they read.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { FakeClock } from "../../src/clock.ts";
import { defineReport, type ReportOptions } from "../../src/report/definition.ts";
import { openStorage } from "../../src/report/storage.ts";
import type { ReportRun } from "../../src/report/types.ts";
import { reportWorker } from "../../src/runners/report.ts";
import { postgresDriver } from "../../src/store/drivers.ts";
import { waitUntil } from "../../src/testing.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import type { Runtime } from "../../src/runtime/runtime.ts";
import {
  type BackendJobs,
  backendJobs,
  BACKENDS,
  dropTestSchema,
  POSTGRES_TEST_URL,
  testSchema,
} from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";
import { MARCH, statementOptions, writeStatementSources } from "../support/statement_report.ts";

const NEED = {
  report: "an export too slow for a request",
  volume: "millions of rows",
  plan: "a full scan",
  latency_target: "5m",
  max_result: "1000000 rows",
  operator: "ops",
};

/** A report of `query` (one statement, no paging) on `source`, stored in `folder`. */
function slowReport(
  id: string,
  source: ReportOptions["source"],
  query: string,
  folder: string,
): ReportOptions {
  return {
    id,
    need: NEED,
    source,
    query,
    paging: { mode: "none", reason: "one statement, read through in batches" },
    audit: { reason: "test", target: "test-audit" },
    format: { type: "csv", columns: ["id", "label"] },
    storage: { folder },
    contact: "ops@example.com",
  };
}

const SQLITE_SLOW =
  `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200000000)
SELECT x AS id, 'row ' || x AS label FROM n WHERE :tenant IS NOT NULL`;

const PG_SLOW =
  `SELECT 1 AS id, 'late' AS label FROM (SELECT pg_sleep(60)) AS s WHERE :tenant::text IS NOT NULL`;

/** The runs' folder and the runner's temp folder, with whatever is left in them. */
async function leftIn(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (path: string) => {
    for await (const entry of Deno.readDir(path)) {
      const full = `${path}/${entry.name}`;
      if (entry.isDirectory) await walk(full);
      else found.push(full.slice(dir.length + 1));
    }
  };
  await walk(dir).catch(() => {});
  return found;
}

/** The sleeping statements of report connections now on the PostgreSQL server. */
async function sleepingReports(): Promise<number> {
  const postgres = await postgresDriver();
  const sql = postgres(POSTGRES_TEST_URL, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = 'jobs report' AND state = 'active' AND query LIKE '%pg_sleep(60)%'`;
    return row!.n as number;
  } finally {
    await sql.end();
  }
}

interface Case {
  name: string;
  /** Whether the run's query is under way: a SQLite run has written rows, a PostgreSQL one sleeps on the server. */
  underWay(run: ReportRun | null): Promise<boolean>;
  /** Makes the source; returns its spec and a cleanup. */
  source(
    dir: string,
  ): Promise<{ spec: ReportOptions["source"]; query: string; close(): Promise<void> }>;
}

const SOURCES: Case[] = [
  {
    name: "SQLite source",
    underWay: (run) => Promise.resolve(run?.state === "running" && run.rows > 0),
    source: async (dir) => {
      const path = `${dir}/app.db`;
      new DatabaseSync(path).close();
      await Deno.writeTextFile(`${dir}/slow.sql`, SQLITE_SLOW);
      return { spec: { sqlite: path }, query: `${dir}/slow.sql`, close: () => Promise.resolve() };
    },
  },
  {
    name: "PostgreSQL source",
    underWay: async (run) => run?.state === "running" && await sleepingReports() > 0,
    source: async (dir) => {
      await Deno.writeTextFile(`${dir}/slow.sql`, PG_SLOW);
      return {
        spec: { postgres: POSTGRES_TEST_URL },
        query: `${dir}/slow.sql`,
        close: () => Promise.resolve(),
      };
    },
  },
];

/** Jobs on a fresh database of `backend` (FakeClock) with the report runner, its files in `tmpDir`. */
async function withRunner(
  backend: (typeof BACKENDS)[number],
  env: (name: string) => string | undefined,
  tmpDir?: string,
): Promise<BackendJobs> {
  const clock = new FakeClock();
  let t: BackendJobs | null = null;
  const worker = reportWorker({
    store: () => t!.store,
    clock,
    logger: silentLogger,
    env,
    ...(tmpDir ? { tmpDir } : {}),
  });
  t = await backendJobs(backend, [worker], { clock });
  return t;
}

/** A slow report's run on `backend` from `kind`, under way, handed to `body`; then its folders. */
async function underWay(
  backend: (typeof BACKENDS)[number],
  kind: Case,
  settings: Record<string, number>,
  body: (ctx: {
    t: BackendJobs;
    runtime: Runtime;
    run: number;
    job: number;
  }) => Promise<void>,
): Promise<{ out: string[]; tmp: string[] }> {
  const dir = await tempDir();
  const tmp = `${dir.path}/tmp`;
  await Deno.mkdir(tmp);
  const source = await kind.source(dir.path);
  await using t = await withRunner(backend, () => undefined, tmp);
  try {
    const report = defineReport(slowReport("slow", source.spec, source.query, `${dir.path}/out`));
    for (const [key, value] of Object.entries(settings)) {
      await t.store.settingSet({ key, value, now: 0 });
    }
    const { run, job } = await t.jobs.report(report, { params: {}, tenant: "acme", actor: "ada" });
    const runtime = await t.jobs.start({ queues: { reports: 1 }, node: "n1" });
    // A SQLite run has written rows, a PostgreSQL one sleeps on the server.
    await waitUntil(
      "the query is under way",
      async () => kind.underWay(await t.store.reportRunGet({ id: run.id })),
      { timeoutMs: 20_000 },
    );
    await body({ t, runtime, run: run.id, job });
    await runtime.stop({ grace: 0 });
    return { out: await leftIn(`${dir.path}/out`), tmp: await leftIn(tmp) };
  } finally {
    await source.close();
    await dir.cleanup();
  }
}

for (const backend of BACKENDS) {
  for (const kind of SOURCES) {
    Deno.test(`${backend.name}, ${kind.name}: a cancel stops a report mid-query and keeps nothing`, async () => {
      const left = await underWay(backend, kind, {}, async ({ t, runtime, run, job }) => {
        await t.store.jobsCancel({ ids: [job], now: t.clock.now(), reason: "wrong month" });
        t.clock.advance(1000); // the next heartbeat finds the lease gone
        await waitUntil("the run stopped", () => runtime.running === 0, { timeoutMs: 20_000 });
        const ended = await t.store.reportRunGet({ id: run });
        assert.equal(ended!.state, "cancelled");
        assert.equal(ended!.output, null);
        // The server's statement was interrupted, not left sleeping.
        await waitUntil("no report statement runs", async () => await sleepingReports() === 0);
      });
      assert.deepEqual(left, { out: [], tmp: [] });
    });

    Deno.test(`${backend.name}, ${kind.name}: max_runtime interrupts a slow query, named`, async () => {
      const settings = { "report.slow.max_runtime": 5000 };
      const left = await underWay(backend, kind, settings, async ({ t, run, job }) => {
        t.clock.advance(5000);
        await waitUntil("the run ended", async () => {
          const seen = await t.store.reportRunGet({ id: run });
          return seen?.state === "failed";
        }, { timeoutMs: 20_000 });
        const ended = (await t.store.reportRunGet({ id: run }))!;
        assert.equal(ended.limit, "max_runtime");
        assert.match(ended.error!, /max_runtime 5s \(setting report\.slow\.max_runtime\)/);
        await waitUntil(
          "the job ended",
          async () => (await t.store.jobGet({ id: job }))?.state === "discarded",
        );
      });
      assert.deepEqual(left, { out: [], tmp: [] });
    });
  }
}

Deno.test("postgres source: values bound, types kept, max_bytes stops a large output", async () => {
  const schema = testSchema();
  const postgres = await postgresDriver();
  const sql = postgres(POSTGRES_TEST_URL, { max: 1, onnotice: () => {} });
  const dir = await tempDir();
  try {
    await sql.unsafe(`CREATE SCHEMA ${schema}`);
    await sql.unsafe(`CREATE TABLE ${schema}.ledger (id bigint PRIMARY KEY, tenant text NOT NULL,
      booked_at date NOT NULL, description text, amount numeric(12,2))`);
    await sql.unsafe(`INSERT INTO ${schema}.ledger VALUES
      (1, 'acme', '2026-03-01', '-1+1', -12.50), (2, 'acme', '2026-03-02', 'b', 7.00),
      (9007199254740993, 'acme', '2026-03-03', 'big', 0.10), (4, 'globex', '2026-03-02', 'secret', 1)`);
    await Deno.writeTextFile(
      `${dir.path}/statement.sql`,
      `SELECT id, booked_at, description, amount FROM ${schema}.ledger
       WHERE tenant = :tenant AND booked_at >= :from::date AND booked_at < :to::date
         AND description IS DISTINCT FROM :memo::text
         AND (:after_key::bigint IS NULL OR id > :after_key::bigint)
       ORDER BY id LIMIT :page_size`,
    );
    const options: ReportOptions = {
      id: "statement",
      need: NEED,
      source: { postgres: "${APP_DATABASE_URL}" },
      query: "./statement.sql",
      params: { from: { type: "date" }, to: { type: "date" }, memo: { type: "string" } },
      paging: { mode: "pages", size: 2, key: "id" },
      audit: { reason: "statements", target: "finance-audit" },
      format: { type: "csv", columns: ["id", "booked_at", "description", "amount"] },
      storage: { folder: "./out" },
      contact: "ops@example.com",
    };
    const report = defineReport(options, dir.path);
    const env = (name: string) => name === "APP_DATABASE_URL" ? POSTGRES_TEST_URL : undefined;
    await using t = await withRunner(BACKENDS[0]!, env);
    const runtime = await t.jobs.start({ queues: { reports: 1 }, node: "n1" });
    const ended = async (id: number) => {
      let run: ReportRun | null = null;
      await waitUntil("the run ended", async () => {
        run = await t.store.reportRunGet({ id });
        return run?.state === "completed" || run?.state === "failed";
      }, { timeoutMs: 20_000 });
      return run! as ReportRun;
    };
    const month = { from: "2026-03-01", to: "2026-04-01", memo: "none" };

    const good = await ended(
      (await t.jobs.report(report, { params: month, tenant: "acme", actor: "ada" })).run.id,
    );
    assert.equal(good.state, "completed", good.error ?? "");
    assert.equal(good.rows, 3);
    assert.equal(
      await Deno.readTextFile(good.output!),
      "id,booked_at,description,amount\r\n" +
        "1,2026-03-01,'-1+1,-12.5\r\n" +
        "2,2026-03-02,b,7\r\n" +
        "9007199254740993,2026-03-03,big,0.1\r\n",
    );
    const storage = openStorage({ folder: `${dir.path}/out` });
    assert.deepEqual(await storage.list("acme/"), [`acme/statement/${good.id}.csv`]);

    // A value carrying SQL is bound: spliced, its OR 1=1 would read globex's row too.
    const injected = await ended(
      (await t.jobs.report(report, {
        params: { ...month, memo: "x' OR 1=1 --" },
        tenant: "acme",
        actor: "ada",
      })).run.id,
    );
    assert.equal(injected.state, "completed", injected.error ?? "");
    assert.equal(injected.rows, 3);
    assert.doesNotMatch(await Deno.readTextFile(injected.output!), /secret/);
    // A tenant carrying SQL never reaches the query: it is refused as no tenant.
    await assert.rejects(
      t.jobs.report(report, { params: month, tenant: "acme' OR 1=1 --", actor: "ada" }),
      (error: Error) => (error as { code?: string }).code === "tenant-invalid",
    );

    await t.store.settingSet({ key: "report.statement.max_bytes", value: 60, now: 0 });
    const big = await ended(
      (await t.jobs.report(report, { params: month, tenant: "acme", actor: "ada" })).run.id,
    );
    assert.equal(big.state, "failed");
    assert.equal(big.limit, "max_bytes");
    assert.match(big.error!, /max_bytes 60B/);
    assert.deepEqual(
      await storage.list("acme/"),
      [
        `acme/statement/${good.id}.csv`,
        `acme/statement/${injected.id}.csv`,
      ].sort(),
    );
    await runtime.stop({ grace: 0 });
  } finally {
    await sql.end();
    await dropTestSchema(schema);
    await dir.cleanup();
  }
});

Deno.test("a run removes the local file an earlier attempt's crashed process left", async () => {
  const dir = await tempDir();
  const tmp = `${dir.path}/tmp`;
  await Deno.mkdir(tmp);
  await using t = await withRunner(BACKENDS[0]!, () => undefined, tmp);
  try {
    await writeStatementSources(dir.path);
    const report = defineReport(statementOptions({ folder: "./out" }), dir.path);
    const { run } = await t.jobs.report(report, {
      params: MARCH,
      tenant: "acme",
      actor: "ada",
      roles: ["finance"],
    });
    // What a process killed during attempt 0 of this run left behind, and another run's file.
    await Deno.writeTextFile(`${tmp}/jobs-report-${run.id}-0.csv`, "id,booked_at\r\n1,");
    await Deno.writeTextFile(`${tmp}/jobs-report-${run.id + 1}-0.csv`, "not this run's");
    // What the folder holds when the run is recorded as completed: a reader
    // who sees "completed" must find no file of the run left behind.
    const finish = t.store.reportRunFinish.bind(t.store);
    let atFinish: string[] | null = null;
    t.store.reportRunFinish = async (params) => {
      atFinish = await leftIn(tmp);
      return await finish(params);
    };
    const runtime = await t.jobs.start({ queues: { reports: 1 }, node: "n1" });
    await waitUntil(
      "the run completed",
      async () => (await t.store.reportRunGet({ id: run.id }))?.state === "completed",
    );
    await runtime.stop({ grace: 0 });
    assert.deepEqual(atFinish, [`jobs-report-${run.id + 1}-0.csv`]);
    assert.deepEqual(await leftIn(tmp), [`jobs-report-${run.id + 1}-0.csv`]);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("an NDJSON report writes one JSON object a row, its columns in order, masked the same", async () => {
  const dir = await tempDir();
  await using t = await withRunner(BACKENDS[0]!, () => undefined);
  try {
    await writeStatementSources(dir.path);
    const options = statementOptions({ folder: "./out" });
    const report = defineReport(
      { ...options, format: { ...options.format!, type: "ndjson" } },
      dir.path,
    );
    const { run } = await t.jobs.report(report, {
      params: MARCH,
      tenant: "globex",
      actor: "ada",
      roles: ["finance"],
    });
    const runtime = await t.jobs.start({ queues: { reports: 1 }, node: "n1" });
    const done = await waitUntil("the run completed", async () => {
      const seen = await t.store.reportRunGet({ id: run.id });
      return seen?.state === "completed" ? seen : null;
    });
    await runtime.stop({ grace: 0 });
    assert.equal(done.output, `${dir.path}/out/globex/statement/${run.id}.ndjson`);
    const lines = (await Deno.readTextFile(done.output!)).split("\n");
    assert.equal(lines.pop(), "");
    assert.deepEqual(lines.map((l) => Object.keys(JSON.parse(l))), [
      ["id", "booked_at", "description", "amount"],
      ["id", "booked_at", "description", "amount"],
      ["id", "booked_at", "description", "amount"],
    ]);
    assert.deepEqual(JSON.parse(lines[0]!), {
      id: 14,
      booked_at: "2026-03-05",
      description: "[REDACTED]",
      amount: 1000,
    });
  } finally {
    await dir.cleanup();
  }
});
