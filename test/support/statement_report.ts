/**
 * The statement report fixture of the report tests that run it whole (the
 * daemon's report API, a run into a real bucket): its schedules file, its
 * query, a ledger, and the exact CSV a March run writes for each tenant.
 *
 * It is a copy of the fixture of test/cli/reports_test.ts (same file, same
 * ledger) kept here because importing a `_test.ts` module registers its
 * tests too: every importer would run that file's tests again. That file
 * can import this one instead of keeping its own.
 */

import { DatabaseSync } from "node:sqlite";
import type { ReportOptions } from "../../src/report/definition.ts";

/** The statement's query: one tenant's March rows, a page at a time by id. */
export const STATEMENT_QUERY = `SELECT id, booked_at, description, amount
FROM ledger
WHERE tenant = :tenant AND booked_at >= :from AND booked_at < :to
  AND id > coalesce(:after_key, -1)
ORDER BY id
LIMIT :page_size
`;

/** A schedules file declaring the statement report (folder storage `./exports`, max_range 93d). */
export const STATEMENT_SCHEDULES = `version: 1
schedules: []
reports:
  - id: statement
    need:
      report: monthly statement of one customer's ledger
      volume: 2 million ledger rows a month per large tenant
      plan: a range scan over ledger by (tenant, booked_at); 40 s on the large tenants
      latency_target: 5m
      max_result: 500000 rows
      operator: finance-ops
    source: { sqlite: ./app.db }
    query: ./statement.sql
    params:
      from: { type: date }
      to: { type: date }
    paging: { mode: pages, size: 5, key: id }
    audit: { reason: customer statements, target: finance-audit }
    format: { type: csv, encoding: utf-8, columns: [id, booked_at, description, amount] }
    authorize: { roles: [finance], sensitive: { description: [finance-lead] } }
    storage: { folder: ./exports }
    contact: finance-ops@example.com
    limits: { max_range: 93d }
`;

/** Descriptions that a spreadsheet would take for formulas, or that need quoting. */
export const TRICKY = [
  '=HYPERLINK("http://x")',
  "+1",
  "-1+1",
  "@SUM(A1)",
  "\tlead tab",
  "\rlead cr",
  'say "hi", then\nleave',
  "café ünïcode",
];

/** The statement report as the library declares it, stored in `storage` (paths relative to its folder). */
export function statementOptions(storage: ReportOptions["storage"]): ReportOptions {
  return {
    id: "statement",
    need: {
      report: "monthly statement of one customer's ledger",
      volume: "2 million ledger rows a month per large tenant",
      plan: "a range scan over ledger by (tenant, booked_at)",
      latency_target: "5m",
      max_result: "500000 rows",
      operator: "finance-ops",
    },
    source: { sqlite: "./app.db" },
    query: "./statement.sql",
    params: { from: { type: "date" }, to: { type: "date" } },
    paging: { mode: "pages", size: 5, key: "id" },
    audit: { reason: "customer statements", target: "finance-audit" },
    format: { type: "csv", columns: ["id", "booked_at", "description", "amount"] },
    authorize: { roles: ["finance"], sensitive: { description: ["finance-lead"] } },
    storage,
    contact: "finance-ops@example.com",
  };
}

/** The March parameters of a statement run. */
export const MARCH = { from: "2026-03-01", to: "2026-04-01" } as const;

/** acme: 12 rows in March (the tricky ones first), one in February; globex: 3 in March. */
export function makeLedger(path: string): void {
  const db = new DatabaseSync(path);
  try {
    db.exec(`CREATE TABLE ledger (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,
      booked_at TEXT NOT NULL, description TEXT, amount REAL)`);
    const insert = db.prepare(
      "INSERT INTO ledger (tenant, booked_at, description, amount) VALUES (?, ?, ?, ?)",
    );
    insert.run("acme", "2026-02-27", "february", 1);
    for (let i = 0; i < 12; i++) {
      insert.run(
        "acme",
        `2026-03-${String(i + 1).padStart(2, "0")}`,
        TRICKY[i] ?? `row ${i}`,
        i - 2.5,
      );
    }
    for (let i = 0; i < 3; i++) insert.run("globex", "2026-03-05", `globex secret ${i}`, 1000 + i);
  } finally {
    db.close();
  }
}

/** Writes `statement.sql` and the ledger `app.db` into `dir`, where the schedules file points. */
export async function writeStatementSources(dir: string): Promise<void> {
  await Deno.writeTextFile(`${dir}/statement.sql`, STATEMENT_QUERY);
  makeLedger(`${dir}/app.db`);
}

/** The description cells of acme's March rows as the CSV writes them: escaped, quoted. */
const ACME_CELLS = [
  `"'=HYPERLINK(""http://x"")"`,
  "'+1",
  "'-1+1",
  "'@SUM(A1)",
  "'\tlead tab",
  `"'\rlead cr"`,
  `"say ""hi"", then\nleave"`,
  "café ünïcode",
  "row 8",
  "row 9",
  "row 10",
  "row 11",
];

/**
 * The exact CSV of a March statement run for `tenant`: the header, then each
 * row, CRLF-terminated; descriptions shown to a `finance-lead`, else masked.
 */
export function statementCsv(tenant: "acme" | "globex", options: { lead: boolean }): string {
  const rows = tenant === "acme"
    ? ACME_CELLS.map((
      cell,
      i,
    ) => [i + 2, `2026-03-${String(i + 1).padStart(2, "0")}`, cell, i - 2.5])
    : [0, 1, 2].map((i) => [14 + i, "2026-03-05", `globex secret ${i}`, 1000 + i]);
  const lines = rows.map(([id, at, cell, amount]) =>
    `${id},${at},${options.lead ? cell : "[REDACTED]"},${amount}`
  );
  return ["id,booked_at,description,amount", ...lines].map((line) => `${line}\r\n`).join("");
}
