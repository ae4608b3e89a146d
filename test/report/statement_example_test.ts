/**
 * The statement example (`examples/statement/`), copied to a temp folder:
 * `make_app_db.ts` makes its ledger, the schedules file passes `jobs
 * check`, and `jobs report statement --wait --json` exports acme's March
 * (1,240 rows, masked for a finance actor, readable for a finance-lead,
 * no globex row), as the worked example of docs/reports.md shows.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runJobs } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";

const EXAMPLE = fileURLToPath(new URL("../../examples/statement/", import.meta.url));
const NOW = Date.UTC(2026, 3, 2, 9);

Deno.test("the statement example checks and exports acme's March, as docs/reports.md shows", async () => {
  const dir = await tempDir();
  try {
    for (const name of ["schedules.yaml", "statement.sql", "make_app_db.ts"]) {
      await Deno.copyFile(`${EXAMPLE}${name}`, `${dir.path}/${name}`);
    }
    const made = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${dir.path}/make_app_db.ts`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(made.success, new TextDecoder().decode(made.stderr));
    const config = `${dir.path}/schedules.yaml`;
    const db = `${dir.path}/jobs.db`;
    const run = (args: string[]) =>
      runJobs([...args, "--config", config], { now: NOW, env: { USER: "ada" } });

    const checked = await run(["check"]);
    assert.equal(checked.code, 0, checked.err);
    assert.match(checked.out, /report statement: csv \[id, booked_at, description, amount\]/);
    const migrated = await runJobs(["migrate", "--db", db], { now: NOW });
    assert.equal(migrated.code, 0, migrated.err);
    const march = ["--param", "from=2026-03-01", "--param", "to=2026-04-01", "--tenant", "acme"];

    const finance = await run([
      "report",
      "statement",
      ...march,
      "--role",
      "finance",
      "--wait",
      "--json",
      "--db",
      db,
    ]);
    assert.equal(finance.code, 0, finance.err);
    const masked = JSON.parse(finance.out);
    assert.equal(masked.rows, 1240);
    assert.equal(masked.output, `${dir.path}/exports/acme/statement/${masked.run}.csv`);
    const maskedText = await Deno.readTextFile(masked.output);
    assert.match(maskedText, /^1,2026-03-01,\[REDACTED\],-18\.75\r$/m);

    const lead = await run([
      "report",
      "statement",
      ...march,
      "--role",
      "finance",
      "--role",
      "finance-lead",
      "--wait",
      "--json",
      "--db",
      db,
    ]);
    assert.equal(lead.code, 0, lead.err);
    const text = await Deno.readTextFile(JSON.parse(lead.out).output);
    const lines = text.split("\r\n");
    assert.equal(lines[0], "id,booked_at,description,amount");
    assert.equal(lines[1], `1,2026-03-01,"'=HYPERLINK(""http://x"")",-18.75`);
    assert.equal(lines[2], `2,2026-03-01,"refund, partial",-17.5`);
    assert.equal(lines[3], "3,2026-03-01,'@SUM(A1),-16.25");
    assert.equal(lines[4], "4,2026-03-01,Zoë's café,-15");
    assert.doesNotMatch(text, /globex/);

    const wide = await run([
      "report",
      "statement",
      "--param",
      "from=2026-01-01",
      "--param",
      "to=2026-04-15",
      "--tenant",
      "acme",
      "--role",
      "finance",
      "--db",
      db,
    ]);
    assert.equal(wide.code, 1);
    assert.match(wide.err, /\(104 days\) exceeds max_range 93d/);
  } finally {
    await dir.cleanup();
  }
});
