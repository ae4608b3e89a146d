/**
 * The settings commands end to end through the command line: `jobs
 * settings` lists the global settings and each report's limits with their
 * source (default, the schedules file, or a stored setting); `jobs
 * settings set <key> <value> --reason` stores a value, says what it was,
 * and the listing then shows who set it, when and why; the audit trail has
 * the row with the old and new values; `jobs settings unset` goes back to
 * the file's value or the default. Without `--reason`, with an unknown key
 * or a bad value, nothing changes. The main flow runs on both stores.
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../support/backends.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { STATEMENT_QUERY, STATEMENT_SCHEDULES } from "../support/statement_report.ts";

const NOW = Date.UTC(2026, 11, 3, 9);
const ENV = { USER: "ada" };

const SQL = STATEMENT_QUERY;
const SCHEDULES = STATEMENT_SCHEDULES.replace(
  "limits: { max_range: 93d }",
  "limits: { max_runtime: 10m, max_range: 93d }",
);

interface Listed {
  key: string;
  value: number | null;
  display: string;
  source: string;
  changed: { actor: string; at: string; reason: string | null; action: string } | null;
}

/** Runs `fn` with the schedules file (and its query file) and a command line on `db`. */
function withSettings(
  db: string | null,
  fn: (
    run: (args: string[], now?: number) => ReturnType<typeof runJobs>,
    files: { db: string; config: string },
  ) => Promise<void>,
): Promise<void> {
  return withFiles(SCHEDULES, async ({ dir, db: fileDb, config }) => {
    await Deno.writeTextFile(`${dir}/statement.sql`, SQL);
    const at = db ?? fileDb;
    const run = (args: string[], now = NOW) =>
      runJobs([...args, "--db", at, "--config", config], { now, env: ENV });
    if (db === null) {
      const migrated = await runJobs(["migrate", "--db", at], { now: NOW });
      assert.equal(migrated.code, 0, migrated.err);
    }
    await fn(run, { db: at, config });
  });
}

async function listed(run: (args: string[]) => ReturnType<typeof runJobs>): Promise<Listed[]> {
  const r = await run(["settings", "--json"]);
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out);
}

function byKey(list: Listed[], key: string): Listed {
  const found = list.find((s) => s.key === key);
  assert.ok(found, `no ${key} in ${list.map((s) => s.key).join(", ")}`);
  return found;
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: jobs settings set, the listing, the audit row and unset`, async () => {
    const h = await backend.open(NOW);
    try {
      await withSettings(h.location, async (run) => {
        // Defaults, and the file's own limits.
        const before = await listed(run);
        assert.deepEqual(before.map((s) => [s.key, s.display, s.source]), [
          ["reports.request_budget", "2s", "default"],
          ["report.statement.max_range", "93d", "file"],
          ["report.statement.max_rows", "1000000", "default"],
          ["report.statement.max_runtime", "10m", "file"],
          ["report.statement.max_concurrent", "2", "default"],
          ["report.statement.max_bytes", "1GiB", "default"],
          ["report.statement.lifetime", "7d", "default"],
        ]);
        assert.ok(before.every((s) => s.changed === null));

        const set = await run(
          ["settings", "set", "report.statement.max_rows", "500", "--reason", "month-end OOM"],
          NOW + 1_000,
        );
        assert.equal(set.code, 0, set.err);
        assert.equal(set.out, "report.statement.max_rows: 1000000 -> 500 (was default)");
        const runtime = await run(
          ["settings", "set", "report.statement.max_runtime", "PT45M", "--reason", "slow source"],
          NOW + 2_000,
        );
        assert.equal(runtime.out, "report.statement.max_runtime: 10m -> 45m (was file)");

        const after = await listed(run);
        assert.deepEqual(byKey(after, "report.statement.max_rows"), {
          ...byKey(after, "report.statement.max_rows"),
          value: 500,
          display: "500",
          source: "setting",
          changed: {
            actor: "ada",
            at: new Date(NOW + 1_000).toISOString(),
            reason: "month-end OOM",
            action: "setting.set",
          },
        });
        assert.equal(byKey(after, "report.statement.max_runtime").value, 2_700_000);
        const text = await run(["settings"]);
        assert.match(
          text.out,
          /^report\.statement\.max_rows +500 +setting +ada +2026-12-03T09:00:01\.000Z +month-end OOM$/m,
        );
        assert.match(text.out, /^report\.statement\.max_bytes +1GiB +default +- +- +-$/m);

        const trail = await h.store.auditList({ target: "setting:report.statement.max_rows" });
        assert.equal(trail.length, 1);
        assert.equal(trail[0]!.action, "setting.set");
        assert.equal(trail[0]!.actor, "ada");
        assert.equal(trail[0]!.reason, "month-end OOM");
        assert.equal(trail[0]!.at, NOW + 1_000);
        assert.deepEqual(trail[0]!.details, {
          old: 1_000_000,
          oldDisplay: "1000000",
          oldSource: "default",
          new: 500,
          newDisplay: "500",
        });
        assert.equal(await h.store.settingGet({ key: "report.statement.max_rows" }), 500);

        // Unset: back to the file's value, or the default.
        const unset = await run(
          ["settings", "unset", "report.statement.max_runtime", "--reason", "source fixed"],
          NOW + 3_000,
        );
        assert.equal(unset.code, 0, unset.err);
        assert.equal(unset.out, "report.statement.max_runtime: 45m -> 10m (back to file)");
        const unsetRows = await run(
          ["settings", "unset", "report.statement.max_rows", "--reason", "fixed"],
          NOW + 4_000,
        );
        assert.equal(unsetRows.out, "report.statement.max_rows: 500 -> 1000000 (back to default)");
        const last = await listed(run);
        assert.equal(byKey(last, "report.statement.max_runtime").source, "file");
        assert.equal(byKey(last, "report.statement.max_runtime").display, "10m");
        assert.equal(byKey(last, "report.statement.max_rows").source, "default");
        const unsetTrail = await h.store.auditList({
          target: "setting:report.statement.max_runtime",
        });
        assert.deepEqual(unsetTrail.map((r) => [r.action, r.reason]), [
          ["setting.set", "slow source"],
          ["setting.unset", "source fixed"],
        ]);
        assert.equal(await h.store.settingGet({ key: "report.statement.max_runtime" }), null);
      });
    } finally {
      await h.close();
    }
  });
}

Deno.test("jobs settings set without --reason is a usage error and changes nothing", async () => {
  await withSettings(null, async (run) => {
    const r = await run(["settings", "set", "report.statement.max_rows", "500"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^jobs settings set: required option "--reason <text>" not specified/);
    const unset = await run(["settings", "unset", "report.statement.max_rows"]);
    assert.equal(unset.code, 2);
    const list = await listed(run);
    assert.equal(byKey(list, "report.statement.max_rows").source, "default");
    assert.ok(list.every((s) => s.changed === null));
  });
});

Deno.test("an unknown key is refused with the nearest key, and nothing is stored", async () => {
  await withSettings(null, async (run) => {
    const typo = await run(["settings", "set", "report.statement.max_rowz", "5", "--reason", "x"]);
    assert.equal(typo.code, 2);
    assert.equal(
      typo.err,
      'jobs settings set: unknown setting "report.statement.max_rowz"; did you mean ' +
        '"report.statement.max_rows"? (jobsctl settings lists them)',
    );
    const report = await run([
      "settings",
      "set",
      "report.statment.max_rows",
      "5",
      "--reason",
      "x",
    ]);
    assert.equal(report.code, 2);
    assert.match(
      report.err,
      /unknown setting "report\.statment\.max_rows": the schedules file declares no report "statment"; did you mean "report\.statement\.max_rows"\?/,
    );
    const budget = await run(["settings", "set", "report.request_budget", "5s", "--reason", "x"]);
    assert.match(budget.err, /did you mean "reports\.request_budget"\?/);
    const list = await listed(run);
    assert.ok(list.every((s) => s.source !== "setting"));
  });
});

Deno.test("a bad value is refused naming the key and the value", async () => {
  await withSettings(null, async (run) => {
    const bytes = await run([
      "settings",
      "set",
      "report.statement.max_bytes",
      "lots",
      "--reason",
      "x",
    ]);
    assert.equal(bytes.code, 2);
    assert.equal(
      bytes.err,
      'jobs settings set: setting report.statement.max_bytes must be a size such as "500MB", ' +
        '"1GiB" or 1048576 (bytes), got "lots"',
    );
    const duration = await run([
      "settings",
      "set",
      "reports.request_budget",
      "5",
      "--reason",
      "x",
    ]);
    assert.equal(duration.code, 2);
    assert.match(duration.err, /setting reports\.request_budget must be a duration .*got "5"$/);
    const zero = await run([
      "settings",
      "set",
      "report.statement.max_concurrent",
      "0",
      "--reason",
      "x",
    ]);
    assert.match(zero.err, /max_concurrent must be a whole number above zero.*got "0"$/);
    assert.ok((await listed(run)).every((s) => s.source !== "setting"));
  });
});

Deno.test("jobs settings set --json, a global setting, and unset of nothing stored", async () => {
  await withSettings(null, async (run) => {
    const set = await run(
      ["settings", "set", "reports.request_budget", "PT5S", "--reason", "slow disks", "--json"],
    );
    assert.equal(set.code, 0, set.err);
    assert.deepEqual(JSON.parse(set.out), {
      key: "reports.request_budget",
      changed: true,
      value: 5_000,
      display: "5s",
      source: "setting",
      was: { value: 2_000, display: "2s", source: "default" },
    });
    const bytes = await run(
      ["settings", "set", "report.statement.max_bytes", "200MB", "--reason", "small disk"],
    );
    assert.equal(bytes.out, "report.statement.max_bytes: 1GiB -> 200MB (was default)");
    const nothing = await run(
      ["settings", "unset", "report.statement.lifetime", "--reason", "tidy"],
    );
    assert.equal(nothing.code, 0, nothing.err);
    assert.equal(nothing.out, "report.statement.lifetime: not set; 7d (default) applies");
    const list = await listed(run);
    assert.equal(byKey(list, "reports.request_budget").value, 5_000);
    assert.equal(byKey(list, "report.statement.lifetime").changed, null);
  });
});

Deno.test("a schedules file without reports has the global settings only", async () => {
  await withSettings(null, async (_run, { db, config }) => {
    await Deno.writeTextFile(config, "version: 1\nschedules: []\n");
    const r = await runJobs(["settings", "--db", db, "--config", config], { now: NOW, env: ENV });
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(r.out.split("\n").map((l) => l.split(/ +/).slice(0, 3)), [
      ["KEY", "VALUE", "SOURCE"],
      ["reports.request_budget", "2s", "default"],
    ]);
  });
});

Deno.test("a setting of a report the file no longer declares can still be unset, not set", async () => {
  await withSettings(null, async (run, { config }) => {
    const set = await run(["settings", "set", "report.statement.lifetime", "3d", "--reason", "x"]);
    assert.equal(set.code, 0, set.err);
    await Deno.writeTextFile(config, "version: 1\nschedules: []\n");
    const again = await run([
      "settings",
      "set",
      "report.statement.lifetime",
      "4d",
      "--reason",
      "x",
    ]);
    assert.equal(again.code, 2);
    assert.match(again.err, /the schedules file declares no report "statement"/);
    const unset = await run(["settings", "unset", "report.statement.lifetime", "--reason", "gone"]);
    assert.equal(unset.code, 0, unset.err);
    assert.equal(unset.out, "report.statement.lifetime: 3d -> 7d (back to default)");
    const missing = await run(["settings", "unset", "report.statement.lifetime", "--reason", "x"]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /unknown setting "report\.statement\.lifetime"/);
  });
});
