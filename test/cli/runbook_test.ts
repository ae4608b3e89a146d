/**
 * `jobs runbook`: each schedule's procedures, every command printed with the
 * program's own name and quoted to paste as printed.
 */

import assert from "node:assert/strict";
import { shellQuote } from "../../src/cli/text.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import {
  insert,
  jobs,
  nightlyJob,
  NOW,
  SCHEDULES,
  withFixture,
} from "../support/operator_fixture.ts";

const MINUTE = 60_000;
const ESC = "\x1b";

Deno.test("jobs runbook prints each schedule's procedures with the commands to paste", async () => {
  await withFixture(async (f) => {
    await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    const { jobs: [claimed] } = await f.store.jobsClaim({
      queue: "default",
      node: "n1",
      limit: 1,
      now: NOW - MINUTE,
      leaseMs: MINUTE,
    });
    assert.ok(claimed);

    const r = await jobs(["runbook", "--db", f.db, "--config", f.config]);
    assert.equal(r.code, 0, r.err);
    const out = r.out;
    const db = f.db;
    const config = f.config;
    const has = (line: string) =>
      assert.ok(out.split("\n").includes(line), `missing: ${line}\n${out}`);
    has("## nightly");
    has(`  rhythm   cron "0 3 * * *" in UTC`);
    has(
      "  policies misfire catch_up (limit 100), grace 1m; overlap skip; queue default; 20 attempts",
    );
    has("  next run 2026-06-02T03:00:00.000Z (in 18h) (nightly@2026-06-02T03:00:00.000Z)");
    has(`    jobsctl ls --schedule nightly --db ${db}`);
    has(`    jobsctl show nightly@2026-06-01T03:00:00.000Z --db ${db}`);
    has(
      `    jobsctl replay nightly@2026-06-01T03:00:00.000Z --reason '<why you are replaying it>' --db ${db}`,
    );
    has(
      `    jobsctl replay nightly@2026-06-01T03:00:00.000Z --force --reason '<why you are breaking its lease to replay it>' --db ${db}`,
    );
    has(
      `    jobsctl disable nightly --reason '<why you are disabling it>' --db ${db} --config ${config}`,
    );
    has(
      `    jobsctl enable nightly --reason '<why you are enabling it>' --db ${db} --config ${config}`,
    );
    has(
      `    jobsctl run nightly --reason '<why you are running it now>' --db ${db} --config ${config}`,
    );
    has(
      `    jobsctl pause default --reason '<why you are pausing the queue>' --db ${db} --config ${config}`,
    );
    has(
      `    jobsctl resume default --reason '<why you are resuming the queue>' --db ${db} --config ${config}`,
    );
    has("## reindex-search");
    has("  next run only when someone runs it");
    has("  Guard: on-call engineer, outside business hours.");
    has(
      `    jobsctl run reindex-search --environment staging --reason '<why you are running it now>' --db ${db} --config ${config}`,
    );
    has(
      `    jobsctl pause mail --reason '<why you are pausing the queue>' --db ${db} --config ${config}`,
    );
    // Every command is printed for the program's own name: `jobs` is a shell builtin.
    const pasted = out.split("\n").filter((line) => /^ {4}\S/.test(line));
    assert.ok(pasted.length >= 15, out);
    assert.deepEqual(pasted.filter((line) => !line.startsWith("    jobsctl ")), []);
    assert.deepEqual(out.split("\n").filter((line) => line.trimStart().startsWith("jobs ")), []);
    assert.match(out, /## reindex-search[\s\S]*No occurrence in the store yet\./);

    const one = await jobs(["runbook", "reindex-search", "--config", f.config, "--json"]);
    assert.equal(one.code, 0, one.err);
    const book = JSON.parse(one.out);
    assert.deepEqual(book.schedules.map((s: { id: string }) => s.id), ["reindex-search"]);
    assert.deepEqual(
      book.schedules[0].procedures.map((p: { title: string }) => p.title),
      ["Inspect", "Replay an occurrence", "Disable / enable", "Run now", "Pause the queue"],
    );
    assert.deepEqual(book.schedules[0].procedures[3].commands, [
      `jobsctl run reindex-search --environment staging --reason '<why you are running it now>' --config ${
        shellQuote(f.config)
      }`,
    ]);

    const unknown = await jobs(["runbook", "nightlly", "--config", f.config, "--db", f.db]);
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.err,
      /^jobs runbook: no schedule "nightlly" in .*; did you mean "nightly"\? \(it has "nightly", "reindex-search"\)$/,
    );
  });
});

Deno.test("jobs runbook says a schedule's next run in its own zone beside UTC (issue 26.12)", async () => {
  await withFixture(async (f) => {
    await Deno.writeTextFile(
      f.config,
      SCHEDULES.replace(
        '    cron: "0 3 * * *"\n',
        '    cron: "0 3 * * *"\n    timezone: America/Sao_Paulo\n' +
          "    local_time: { reason: the shop closes at 01:00 local time, gap: shift, " +
          "overlap: first }\n",
      ),
    );
    const r = await jobs(["runbook", "nightly", "--db", f.db, "--config", f.config]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n");
    assert.ok(
      lines.includes(
        "  next run 2026-06-02T06:00:00.000Z (03:00 -03:00 America/Sao_Paulo, in 21h) " +
          "(nightly@2026-06-02T06:00:00.000Z)",
      ),
      r.out,
    );
    const json = JSON.parse(
      (await jobs(["runbook", "nightly", "--db", f.db, "--config", f.config, "--json"])).out,
    );
    assert.equal(json.schedules[0].timing.next, "2026-06-02T06:00:00.000Z");
  });
});

Deno.test("jobs runbook shell-quotes a stored occurrence so the command pastes as the same word", async () => {
  await withFixture(async (f) => {
    const odd = `nightly@it's $(reboot) ${ESC}[2J`;
    await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3), odd));
    const r = await jobs(["runbook", "nightly", "--config", f.config, "--db", f.db]);
    assert.equal(r.code, 0, r.err);
    assert.ok(!r.out.includes(ESC), "no raw escape");
    assert.ok(
      r.out.includes(`    jobsctl show $'nightly@it\\'s $(reboot) \\x1b[2J' --db ${f.db}`),
      r.out,
    );
  });
});

Deno.test("jobs runbook prints the stored definitions, with a warning, while the schedules file has a syntax error", async () => {
  await withFixture(async (f) => {
    await Deno.writeTextFile(f.config, SCHEDULES.replace('cron: "0 3 * * *"', 'cron: "0 3 * * *'));
    const r = await jobs(["runbook", "--db", f.db, "--config", f.config]);
    assert.equal(r.code, 0, r.err);
    const warning = new RegExp(
      `${f.config} has errors and is not in force \\(a daemon keeps running the last good ` +
        `definitions, shown below as the store has them\\): ${f.config}:\\d+`,
    );
    assert.match(r.err, new RegExp(`^jobs runbook: warning: ${warning.source}`));
    assert.match(r.out, new RegExp(`^warning: ${warning.source}`, "m"));
    const lines = r.out.split("\n");
    assert.ok(lines.includes("## nightly"), r.out);
    assert.ok(lines.includes(`  rhythm   cron "0 3 * * *" in UTC`), r.out);
    assert.ok(lines.includes("## reindex-search"), r.out);

    // Without stored definitions (a store no daemon synced) it fails on the file, as before.
    const empty = `${f.db}.empty`;
    await (await openSqliteStore(empty, { now: NOW })).close();
    const none = await jobs(["runbook", "--db", empty, "--config", f.config]);
    assert.equal(none.code, 1);
    assert.match(none.err, /jobs runbook: .*schedules\.yaml: 1 error/);
  });
});
