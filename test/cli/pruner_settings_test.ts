/**
 * The schedules file's `pruner:` on the command line: `jobs check` prints
 * the settings the pruner will use, `jobs prune` keeps to the file's
 * retention unless an option says otherwise, and `jobs daemon` prunes on
 * the file's period with its retention.
 */

import assert from "node:assert/strict";
import { SystemClock } from "../../src/clock.ts";
import { runJobs, seedJobs, withFiles } from "../support/cli.ts";
import { daemonDir, startDaemon } from "../support/daemon_process.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const DAY = 24 * 60 * 60 * 1000;

const WITH_PRUNER = `version: 1
pruner:
  batch: 500
  retention: { completed: 30d }
schedules: []
`;

Deno.test("jobs check prints the file's pruner settings with the defaults filled in", async () => {
  await withFiles(WITH_PRUNER, async ({ config }) => {
    const text = await runJobs(["check", "--config", config], { now: NOW });
    assert.equal(text.code, 0, text.err);
    assert.equal(
      text.out,
      `${config}: valid, 0 schedules, 0 queues; pruner every 1m, batch 500, ` +
        // formatDuration writes 30 days as weeks and days.
        "retention completed 4w2d, cancelled 4w2d, discarded 4w2d",
    );
    const json = await runJobs(["check", "--config", config, "--json"], { now: NOW });
    assert.deepEqual(JSON.parse(json.out).pruner, {
      everyMs: 60_000,
      batch: 500,
      retention: { completed: 30 * DAY, cancelled: 30 * DAY, discarded: 30 * DAY },
    });
  });
});

Deno.test("jobs check refuses a pruner.batch of 0 with its line and field", async () => {
  await withFiles(WITH_PRUNER.replace("batch: 500", "batch: 0"), async ({ config }) => {
    const { code, err } = await runJobs(["check", "--config", config], { now: NOW });
    assert.equal(code, 1);
    assert.match(err, /schedules\.yaml:3:10: pruner\.batch must be at least 1, got 0/);
  });
});

Deno.test("jobs prune deletes by the file's pruner.retention unless an option says otherwise", async () => {
  const file = "version: 1\npruner:\n  retention: { completed: 10s }\nschedules: []\n";
  await withFiles(file, async ({ db, config }) => {
    // Completed 40 s before NOW: past the file's 10 s, well within the default 7 days.
    await seedJobs(db, NOW, [{}, {}], { claim: 2, complete: 2 });
    const byFile = await runJobs(["prune", "--db", db, "--config", config, "--dry-run"], {
      now: NOW,
    });
    assert.equal(byFile.code, 0, byFile.err);
    assert.match(byFile.out, /^would delete 2 jobs \(completed older than 10s,/);
    const byOption = await runJobs(
      ["prune", "--db", db, "--config", config, "--completed", "1d", "--dry-run"],
      { now: NOW },
    );
    assert.equal(byOption.code, 0, byOption.err);
    assert.match(byOption.out, /^would delete 0 jobs \(completed older than 1d,/);
  });
});

Deno.test({
  name: "jobs daemon prunes every pruner.every with the file's pruner.retention",
  sanitizeResources: false,
  fn: async () => {
    await using dir = await daemonDir();
    await Deno.writeTextFile(
      dir.config,
      "version: 1\npruner: { every: 1s, retention: { completed: 1h } }\nschedules: []\n",
    );
    // Completed a day ago: past the file's hour, within the default 7 days (and the
    // default period of 60 s would not come within the wait below).
    const ids = await seedJobs(dir.db, new SystemClock().now() - DAY, [{}, {}], {
      claim: 2,
      complete: 2,
    });
    await using daemon = await startDaemon({ db: dir.db, config: dir.config, node: "p1" });
    const pruned = await daemon.waitFor("pruner.deleted", undefined, 20_000);
    assert.deepEqual([pruned.node, pruned.deleted], ["p1", ids.length]);
    const status = await daemon.stop("SIGTERM");
    assert.equal(status.code, 0, daemon.log());
  },
});
