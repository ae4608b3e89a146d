/**
 * The `report` phase of the benchmark: a report run exporting REPORT_N rows
 * of a 6-column query to CSV, from a SQLite source and from a PostgreSQL
 * source, as a `jobs.report` job of the library's runtime (claim, the
 * keyset pages of 5,000 rows each its own statement, the writer, the
 * file, the folder storage's copy, the fenced finish), against the same
 * pages read by the same driver and written by `csv-stringify`.
 *
 * ```sh
 * PHASES=report deno task bench
 * PHASES=report REPORT_N=200000 RUNS=1 deno task bench
 * ```
 *
 * Each run is a process of its own (this module with `--child`), so its
 * peak RSS (`VmHWM`, the SQLite export's thread included) is its own; ours
 * runs at REPORT_N / 4 rows too, to show the peak does not grow with the
 * row count. The rows are made before the clock starts: a SQLite file and
 * a table in a schema of its own on PostgreSQL (`BENCH_PG`, default the
 * test database), dropped after.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { stringify } from "csv-stringify/sync";
import { defineReport, FakeClock, Jobs, openJobs, silentLogger } from "../src/mod.ts";
import { reportWorker } from "../src/runners/report.ts";
import { postgresDriver } from "../src/store/drivers.ts";

/** The phase's settings. */
export interface ReportConfig {
  n: number;
  pg: string;
  timeoutMs: number;
}

/** What one pass measured. */
export interface ReportTimes {
  sqlitePerS: number;
  sqliteStringifyPerS: number;
  postgresPerS: number;
  postgresStringifyPerS: number;
  /** Peak RSS of our SQLite run at n / 4 and n rows, MB. */
  peakShortMb: number;
  peakLongMb: number;
  /** The live heap after our SQLite run at n / 4 and n rows, MB. */
  liveShortMb: number;
  liveLongMb: number;
  postgresPeakMb: number;
}

const PAGE = 5_000;
const COLUMNS = ["id", "name", "amount", "created_at", "active", "note"];
type Source = "sqlite" | "postgres";
type Impl = "ours" | "stringify";

interface ChildResult {
  rows: number;
  bytes: number;
  perS: number;
  peakMb: number;
  /** The heap still alive after a full collection at the end, MB: what the run kept. */
  liveMb: number;
}

/** Runs the phase once; the data is made fresh for it and removed after. */
export async function phaseReport(
  cfg: ReportConfig,
  log: (message: string) => void,
): Promise<ReportTimes> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-bench-report-" });
  const schema = `bench_report_${crypto.randomUUID().slice(0, 8)}`;
  const postgres = await postgresDriver();
  const sql = postgres(cfg.pg, { max: 1, onnotice: () => {} });
  try {
    const started = performance.now();
    makeSqlite(`${dir}/app.db`, cfg.n);
    await makePostgres(sql, schema, cfg.n);
    log(
      `report: ${cfg.n} rows made in both sources in ${Math.round(performance.now() - started)} ms`,
    );
    const run = (source: Source, impl: Impl, n: number) =>
      runChild(dir, schema, cfg, source, impl, n);
    const short = await run("sqlite", "ours", Math.floor(cfg.n / 4));
    const sqlite = await run("sqlite", "ours", cfg.n);
    const sqliteStringify = await run("sqlite", "stringify", cfg.n);
    const pg = await run("postgres", "ours", cfg.n);
    const pgStringify = await run("postgres", "stringify", cfg.n);
    log(
      `report: sqlite ${Math.round(sqlite.perS)} rows/s (csv-stringify ${
        Math.round(sqliteStringify.perS)
      }), postgres ${Math.round(pg.perS)} rows/s (csv-stringify ${
        Math.round(pgStringify.perS)
      }), peak ${short.peakMb.toFixed(1)} / ${sqlite.peakMb.toFixed(1)} MB, live after ${
        short.liveMb.toFixed(1)
      } / ${sqlite.liveMb.toFixed(1)} MB, ` +
        `${(sqlite.bytes / 1e6).toFixed(1)} MB of CSV`,
    );
    return {
      sqlitePerS: sqlite.perS,
      sqliteStringifyPerS: sqliteStringify.perS,
      postgresPerS: pg.perS,
      postgresStringifyPerS: pgStringify.perS,
      peakShortMb: short.peakMb,
      peakLongMb: sqlite.peakMb,
      liveShortMb: short.liveMb,
      liveLongMb: sqlite.liveMb,
      postgresPeakMb: pg.peakMb,
    };
  } finally {
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await sql.end();
    await Deno.remove(dir, { recursive: true });
  }
}

/** `n` rows of the 6 columns, with now and then a comma, a quote, non-ASCII or a formula start. */
function makeSqlite(path: string, n: number): void {
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, name TEXT,
    amount REAL, created_at TEXT, active INTEGER, note TEXT)`);
  db.prepare(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
    INSERT INTO items SELECT i, 'acme',
      CASE i % 8 WHEN 0 THEN 'Barbara, Jr.' WHEN 1 THEN 'Donald "Don"' WHEN 2 THEN 'Zoë'
        ELSE 'name ' || i END,
      (i % 2000) / 4.0 - 250, '2026-03-' || printf('%02d', 1 + i % 28) || 'T10:00:00Z',
      i % 2, CASE WHEN i % 50 = 0 THEN '=SUM(A' || i || ')' ELSE 'note ' || i END
    FROM s`).run(n);
  db.close();
}

// deno-lint-ignore no-explicit-any
async function makePostgres(sql: any, schema: string, n: number): Promise<void> {
  await sql.unsafe(`CREATE SCHEMA ${schema}`);
  await sql.unsafe(`CREATE TABLE ${schema}.items (id bigint PRIMARY KEY, tenant text NOT NULL,
    name text, amount double precision, created_at text, active boolean, note text)`);
  await sql.unsafe(
    `INSERT INTO ${schema}.items SELECT i, 'acme',
      CASE i % 8 WHEN 0 THEN 'Barbara, Jr.' WHEN 1 THEN 'Donald "Don"' WHEN 2 THEN 'Zoë'
        ELSE 'name ' || i END,
      (i % 2000) / 4.0 - 250, '2026-03-' || lpad((1 + i % 28)::text, 2, '0') || 'T10:00:00Z',
      i % 2 = 1, CASE WHEN i % 50 = 0 THEN '=SUM(A' || i || ')' ELSE 'note ' || i END
    FROM generate_series(1, $1::int) AS i`,
    [n],
  );
  await sql.unsafe(`ANALYZE ${schema}.items`);
}

function queryOf(source: Source, schema: string): string {
  const table = source === "sqlite" ? "items" : `${schema}.items`;
  // SQLite searches the key's index for `id > coalesce(...)`, and scans for `IS NULL OR`.
  const after = source === "sqlite"
    ? "id > coalesce(:after_key, -1)"
    : "(:after_key::bigint IS NULL OR id > :after_key::bigint)";
  return `SELECT id, name, amount, created_at, active, note FROM ${table}
    WHERE tenant = :tenant${source === "postgres" ? "::text" : ""}
      AND id <= :upto${source === "postgres" ? "::bigint" : ""}
      AND ${after}
    ORDER BY id LIMIT :page_size${source === "postgres" ? "::int" : ""}`;
}

async function runChild(
  dir: string,
  schema: string,
  cfg: ReportConfig,
  source: Source,
  impl: Impl,
  n: number,
): Promise<ChildResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      import.meta.filename!,
      "--child",
      dir,
      schema,
      cfg.pg,
      source,
      impl,
      String(n),
    ],
    stdout: "piped",
    stderr: "inherit",
    signal: AbortSignal.timeout(cfg.timeoutMs),
  }).output();
  if (!out.success) throw new Error(`report ${source} ${impl} of ${n} rows failed (${out.code})`);
  const result = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  if (result.rows !== n) throw new Error(`report ${source} ${impl}: ${result.rows} rows, not ${n}`);
  return result;
}

function peakMb(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024;
}

/** Ours: a report run of the runtime, from the enqueue to its end. */
async function ours(dir: string, schema: string, pg: string, source: Source, n: number) {
  const query = `${dir}/${source}-${n}.sql`;
  await Deno.writeTextFile(query, queryOf(source, schema));
  const report = defineReport({
    id: `bench-${source}`,
    need: {
      report: "benchmark",
      volume: `${n} rows`,
      plan: "keyset pages",
      latency_target: "1m",
      max_result: `${n} rows`,
      operator: "bench",
    },
    source: source === "sqlite" ? { sqlite: `${dir}/app.db` } : { postgres: pg },
    query,
    params: { upto: { type: "integer" } },
    paging: { mode: "pages", size: PAGE, key: "id" },
    audit: { reason: "benchmark", target: "bench" },
    format: { type: "csv", columns: COLUMNS },
    storage: { folder: `${dir}/out-${source}-${n}` },
    contact: "bench@example.com",
    limits: { max_rows: n + 1, max_bytes: 2 ** 40 },
  });
  const clock = new FakeClock();
  const store = await openJobs(`${dir}/jobs-${source}-${n}.db`, { clock, logger: silentLogger });
  const jobs: Jobs = store;
  jobs.register(reportWorker({
    store: () => jobs.store,
    clock,
    logger: silentLogger,
    env: () => undefined,
    tmpDir: dir,
  }));
  const start = performance.now();
  const { run } = await jobs.report(report, {
    params: { upto: String(n) },
    tenant: "acme",
    actor: "bench",
  });
  const runtime = await jobs.start({ queues: { reports: 1 }, node: "bench" });
  for (;;) {
    const seen = await jobs.store.reportRunGet({ id: run.id });
    if (seen && seen.state !== "queued" && seen.state !== "running") {
      const ms = performance.now() - start;
      if (seen.state !== "completed") throw new Error(`run ${seen.state}: ${seen.error}`);
      await runtime.stop({ grace: 0 });
      await jobs.close();
      return { rows: seen.rows, bytes: seen.bytes, perS: seen.rows / (ms / 1000) };
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** csv-stringify over the same pages, read by the same driver, to a file. */
async function withStringify(dir: string, schema: string, pg: string, source: Source, n: number) {
  const file = await Deno.open(`${dir}/stringify-${source}.csv`, {
    write: true,
    create: true,
    truncate: true,
  });
  const write = async (text: string) => {
    const bytes = new TextEncoder().encode(text);
    for (let w = 0; w < bytes.length;) w += await file.write(bytes.subarray(w));
    return bytes.length;
  };
  const options = {
    record_delimiter: "\r\n",
    cast: { boolean: (v: boolean) => (v ? "true" : "false") },
    escape_formulas: true,
  };
  const start = performance.now();
  let rows = 0;
  let bytes = await write(stringify([COLUMNS], options));
  let after: number | null = null;
  if (source === "sqlite") {
    const db = new DatabaseSync(`${dir}/app.db`, { readOnly: true });
    const page = db.prepare(queryOf("sqlite", schema));
    for (;;) {
      const batch = page.all({
        tenant: "acme",
        upto: n,
        after_key: after,
        page_size: PAGE,
      }) as Record<
        string,
        unknown
      >[];
      if (batch.length > 0) {
        bytes += await write(stringify(batch, { ...options, columns: COLUMNS }));
        rows += batch.length;
        after = batch.at(-1)!.id as number;
      }
      if (batch.length < PAGE) break;
    }
    db.close();
  } else {
    const postgres = await postgresDriver();
    const sql = postgres(pg, { max: 1, onnotice: () => {} });
    const text = queryOf("postgres", schema).replace(":tenant::text", "$1::text")
      .replaceAll(":after_key::bigint", "$2::bigint").replace(":page_size::int", "$3::int")
      .replace(":upto::bigint", "$4::bigint");
    for (;;) {
      const batch = await sql.unsafe(text, ["acme", after, PAGE, n]) as Record<string, unknown>[];
      if (batch.length > 0) {
        bytes += await write(stringify(batch, { ...options, columns: COLUMNS }));
        rows += batch.length;
        after = Number(batch.at(-1)!.id);
      }
      if (batch.length < PAGE) break;
    }
    await sql.end();
  }
  file.close();
  return { rows, bytes, perS: rows / ((performance.now() - start) / 1000) };
}

if (import.meta.main && Deno.args[0] === "--child") {
  const [, dir, schema, pg, source, impl, n] = Deno.args as [
    string,
    string,
    string,
    string,
    Source,
    Impl,
    string,
  ];
  const result = impl === "ours"
    ? await ours(dir, schema, pg, source, Number(n))
    : await withStringify(dir, schema, pg, source, Number(n));
  (globalThis as { gc?: () => void }).gc?.();
  const liveMb = Deno.memoryUsage().heapUsed / 1024 / 1024;
  console.log(JSON.stringify({ ...result, peakMb: peakMb(), liveMb }));
}
