/**
 * The `reports:` section of `schedules.yaml`: the issue's statement report
 * is valid and compiled; `jobs check` refuses, at the field's line and with
 * its code, a report without its need record, without paging, without
 * audit, with a parameter the query uses but nobody declared, and a
 * tenant-isolated report whose query never binds `:tenant`.
 */

import assert from "node:assert/strict";
import { queryParams } from "../../src/report/definition.ts";
import { type ConfigError, parseSchedules } from "../../src/config/load.ts";
import { runJobs, withFiles } from "../support/cli.ts";

const NOW = Date.UTC(2026, 11, 3);

const STATEMENT_SQL = `SELECT id, booked_at, description, amount FROM ledger
  WHERE tenant = :tenant AND booked_at >= :from AND booked_at < :to AND id > :after_key
  ORDER BY id LIMIT :page_size`;

/** The issue's shape; line numbers are used below. */
const ISSUE = [
  "version: 1",
  "reports:",
  "  - id: statement",
  "    need:",
  "      report: monthly statement of one customer's ledger",
  "      volume: 2 million ledger rows a month per large tenant",
  "      plan: a range scan over ledger by (tenant, booked_at); 40 s on the large tenants",
  "      latency_target: 5m",
  "      max_result: 500000 rows",
  "      operator: finance-ops",
  "    source: { sqlite: ./app.db }",
  "    query: ./reports/statement.sql",
  "    params:",
  "      from: { type: date }",
  "      to: { type: date }",
  "    paging: { mode: pages, size: 5000, key: id }",
  "    audit: { reason: customer statements, target: finance-audit }",
  "    format: { type: csv, encoding: utf-8, columns: [id, booked_at, description, amount] }",
  "    authorize: { roles: [finance], sensitive: { description: [finance-lead] } }",
  "    storage: { folder: ./exports }",
  "    contact: finance-ops@example.com",
];

function yaml(lines: string[]): string {
  return lines.join("\n") + "\n";
}

function parse(lines: string[], sql: string | null = STATEMENT_SQL) {
  return parseSchedules(yaml(lines), "/srv/app/schedules.yaml", { readQuery: () => sql });
}

function errors(lines: string[], sql?: string | null): ConfigError[] {
  const result = parse(lines, sql);
  if (result.ok) assert.fail("expected errors, the file parsed");
  return result.errors;
}

const without = (pattern: RegExp) => ISSUE.filter((line) => !pattern.test(line));

Deno.test("the issue's statement report parses, with its paths the file's", () => {
  const result = parse(ISSUE);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  const [report] = result.config.reports;
  assert.equal(report!.id, "statement");
  assert.equal(report!.query, "/srv/app/reports/statement.sql");
  assert.deepEqual(report!.source, { sqlite: "/srv/app/app.db" });
  assert.deepEqual(report!.storage, { folder: "/srv/app/exports" });
  assert.deepEqual(report!.tenancy, { mode: "isolated" });
  assert.deepEqual(report!.format?.columns, ["id", "booked_at", "description", "amount"]);
});

Deno.test("a report without its need record, or with a need field missing, is report-need-missing", () => {
  const none = errors(
    without(/^ {4}need:|^ {6}(report|volume|plan|latency_target|max_result|operator):/),
  );
  assert.deepEqual(none.map((e) => [e.code, e.line]), [["report-need-missing", 3]]);
  const noPlan = errors(without(/^ {6}plan:/));
  assert.deepEqual(noPlan.map((e) => [e.code, e.line]), [["report-need-missing", 5]]);
  assert.match(noPlan[0]!.message, /need\.plan is missing/);
  assert.match(noPlan[0]!.message, /report "statement"/);
});

Deno.test("a report without paging or without audit is refused", () => {
  const paging = errors(without(/^ {4}paging:/), STATEMENT_SQL);
  assert.ok(paging.some((e) => e.code === "report-paging-missing" && e.line === 3));
  const audit = errors(without(/^ {4}audit:/));
  assert.deepEqual(audit.map((e) => [e.code, e.line]), [["report-audit-missing", 3]]);
  const none = [...ISSUE];
  none[15] = "    paging: { mode: none }";
  assert.deepEqual(errors(none).map((e) => [e.code, e.line]), [["report-paging-missing", 16]]);
});

Deno.test("a report that stores its output without a contact is report-contact-missing", () => {
  const found = errors(without(/^ {4}contact:/));
  assert.deepEqual(found.map((e) => [e.code, e.line]), [["report-contact-missing", 3]]);
});

Deno.test("a parameter the query uses and nobody declared is report-param-unbound; :tenant is required", () => {
  const extra = errors(ISSUE, STATEMENT_SQL.replace("ORDER BY id", "AND kind = :kind ORDER BY id"));
  assert.deepEqual(extra.map((e) => [e.code, e.line]), [["report-param-unbound", 12]]);
  assert.match(extra[0]!.message, /:kind, which is not declared in params \(declared: from, to/);
  const noTenant = errors(ISSUE, STATEMENT_SQL.replace("tenant = :tenant AND ", ""));
  assert.deepEqual(noTenant.map((e) => [e.code, e.line]), [["report-tenant-missing", 12]]);
  // Shared reports say why, and need no :tenant.
  const shared = [...ISSUE, "    tenancy: { mode: shared, reason: one firm's own ledger }"];
  assert.ok(parse(shared, STATEMENT_SQL.replace("tenant = :tenant AND ", "")).ok);
  const engine = [...ISSUE];
  engine.splice(15, 0, "      tenant: { type: string }");
  assert.ok(errors(engine).some((e) => e.code === "report-param-unbound" && e.line === 16));
  const unread = errors(ISSUE, null);
  assert.deepEqual(unread.map((e) => [e.code, e.line]), [["report-query-unreadable", 12]]);
});

Deno.test("queryParams skips strings, quoted names, comments and casts", () => {
  assert.deepEqual(
    queryParams(
      `SELECT ':no', "a:b", x::text -- :comment\n/* :block */ FROM t WHERE a = :a AND b = :b OR a = :a`,
    ),
    ["a", "b"],
  );
});

Deno.test("jobs check lists a report's bounds and fails on a broken one, reading the query file", async () => {
  await withFiles(yaml(ISSUE), async ({ dir, config }) => {
    await Deno.mkdir(`${dir}/reports`);
    await Deno.writeTextFile(`${dir}/reports/statement.sql`, STATEMENT_SQL);
    const ok = await runJobs(["check", "--config", config], { now: NOW });
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /1 report/);
    assert.match(
      ok.out,
      /report statement: csv \[id, booked_at, description, amount\], pages of 5000 by id, params from: date, to: date, tenant isolated, audit to finance-audit/,
    );
    await Deno.writeTextFile(`${dir}/reports/statement.sql`, "SELECT 1 WHERE x = :x");
    const bad = await runJobs(["check", "--config", config], { now: NOW });
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /schedules\.yaml:12:\d+: .*report-param-unbound: the query uses :x/);
    assert.match(bad.err, /report-tenant-missing/);
  });
});

Deno.test("defineReport reads the query from its folder and throws every problem with its code", async () => {
  const { defineReport, ReportDefinitionError } = await import("../../src/report.ts");
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/statement.sql`,
      STATEMENT_SQL.replace("tenant = :tenant AND ", ""),
    );
    const options = {
      id: "statement",
      need: {
        report: "monthly statement",
        volume: "2M rows",
        plan: "range scan",
        latency_target: "5m",
        max_result: "500000 rows",
        operator: "finance-ops",
      },
      source: { sqlite: "./app.db" },
      query: "./statement.sql",
      params: { from: { type: "date" as const }, to: { type: "date" as const } },
      audit: { reason: "statements", target: "finance-audit" },
      format: { type: "csv" as const, columns: ["id", "booked_at", "description", "amount"] },
      storage: { folder: "./exports" },
      contact: "finance-ops@example.com",
    };
    let error: unknown;
    try {
      defineReport(options, dir);
    } catch (thrown) {
      error = thrown;
    }
    assert.ok(error instanceof ReportDefinitionError, String(error));
    assert.deepEqual(error.problems.map((p) => p.code).sort(), [
      "report-paging-missing",
      "report-tenant-missing",
    ]);
    await Deno.writeTextFile(`${dir}/statement.sql`, STATEMENT_SQL);
    const compiled = defineReport(
      { ...options, paging: { mode: "pages", size: 5000, key: "id" } },
      dir,
    );
    assert.equal(compiled.query, `${dir}/statement.sql`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a report's limits: parse into canonical numbers (ms, bytes, counts)", () => {
  const result = parse([
    ...ISSUE,
    "    limits: { max_rows: 500000, max_runtime: 10m, max_bytes: 200MB, max_range: 93d, " +
    "max_concurrent: 1, lifetime: 3d }",
  ]);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  assert.deepEqual(result.config.reports[0]!.limits, {
    max_rows: 500_000,
    max_runtime: 600_000,
    max_bytes: 200_000_000,
    max_range: 93 * 86_400_000,
    max_concurrent: 1,
    lifetime: 3 * 86_400_000,
  });
  const iso = parse([...ISSUE, "    limits:", "      max_runtime: PT15M", "      max_bytes: 1GiB"]);
  if (!iso.ok) assert.fail(iso.errors.map((e) => e.message).join("\n"));
  assert.deepEqual(iso.config.reports[0]!.limits, { max_runtime: 900_000, max_bytes: 1024 ** 3 });
  // No limits: none from the file, so the defaults apply.
  const none = parse(ISSUE);
  assert.ok(none.ok && none.config.reports[0]!.limits === undefined);
});

Deno.test("a bad limit is an error at its line and column, naming the field and the value", () => {
  const bad = errors([
    ...ISSUE,
    "    limits:",
    "      max_rows: -3",
    "      max_runtime: 10",
    "      max_bytes: lots",
    "      max_range: P1M",
    "      max_concurent: 1",
  ]);
  assert.deepEqual(
    bad.map((e) => [e.code, e.line, e.column, e.field, e.value]),
    [
      ["schedule-invalid", 23, 17, "limits.max_rows", -3],
      ["schedule-invalid", 24, 20, "limits.max_runtime", 10],
      ["schedule-invalid", 25, 18, "limits.max_bytes", "lots"],
      ["schedule-invalid", 26, 18, "limits.max_range", "P1M"],
      ["schedule-invalid", 27, 7, "limits.max_concurent", undefined],
    ],
  );
  assert.equal(
    bad[0]!.message,
    '/srv/app/schedules.yaml:23:17: report "statement": limits.max_rows must be a whole number ' +
      "above zero, such as 500000, got -3",
  );
  assert.match(bad[1]!.message, /limits\.max_runtime must be a duration such as "30s", .*got 10$/);
  assert.match(bad[2]!.message, /limits\.max_bytes must be a size such as "500MB", .*got "lots"$/);
  assert.match(bad[3]!.message, /limits\.max_range must not count months or years/);
  assert.match(
    bad[4]!.message,
    /unknown field "limits\.max_concurent"; did you mean "max_concurrent"\?/,
  );
});
