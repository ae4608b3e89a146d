/**
 * Makes `app.db` beside this file: a `ledger` of two tenants for the
 * statement example, with a few descriptions a spreadsheet would take for
 * formulas. Run it once, from its folder, with
 * `npx --yes deno@2.9.6 run -A make_app_db.ts`
 * (with Deno on PATH, `deno run -A make_app_db.ts`).
 */

import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";

// Not URL.pathname, which keeps a space in the folder's path as %20.
const path = fileURLToPath(new URL("./app.db", import.meta.url));
try {
  Deno.removeSync(path);
} catch {
  // not made yet
}
const db = new DatabaseSync(path);
db.exec(`CREATE TABLE ledger (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,
  booked_at TEXT NOT NULL, description TEXT, amount REAL);
  CREATE INDEX ledger_tenant_booked ON ledger (tenant, booked_at)`);
const insert = db.prepare(
  "INSERT INTO ledger (tenant, booked_at, description, amount) VALUES (?, ?, ?, ?)",
);
const notes = [
  "coffee beans",
  '=HYPERLINK("http://x")',
  "refund, partial",
  "@SUM(A1)",
  "Zoë's café",
];
for (let day = 1; day <= 31; day++) {
  for (let i = 0; i < 40; i++) {
    const booked = `2026-03-${String(day).padStart(2, "0")}`;
    insert.run("acme", booked, notes[(day + i) % notes.length]!, Math.round((i - 15) * 125) / 100);
  }
  insert.run("globex", `2026-03-${String(day).padStart(2, "0")}`, "globex only", 99);
}
db.close();
console.log(`${path}: 1240 acme rows and 31 globex rows in March 2026`);
