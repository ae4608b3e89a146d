import assert from "node:assert/strict";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { runJobs } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const SCHEDULES = `version: 1
schedules:
  - id: nightly
    cron: "0 3 * * *"
    run: { command: ["true"] }
`;

async function withFiles(fn: (db: string, config: string) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  try {
    const config = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(config, SCHEDULES);
    await fn(`${dir.path}/jobs.db`, config);
  } finally {
    await dir.cleanup();
  }
}

Deno.test("jobs pause and resume change the queue for every process and are audited", async () => {
  await withFiles(async (db) => {
    const env = { USER: "ada" };
    const paused = await runJobs(["pause", "mail", "--db", db, "--reason", "provider outage"], {
      now: NOW,
      env,
    });
    assert.equal(paused.code, 0, paused.err);
    assert.match(paused.out, /^queue mail paused for every process/);
    const again = await runJobs(["pause", "mail", "--db", db], { now: NOW + 1, env });
    assert.match(again.out, /already paused/);
    const resumed = await runJobs(["resume", "mail", "--db", db, "--actor", "grace"], {
      now: NOW + 2,
      env,
    });
    assert.match(resumed.out, /^queue mail resumed/);

    const store = await openSqliteStore(db);
    try {
      assert.deepEqual((await store.queuesList()).map((q) => [q.name, q.paused]), [[
        "mail",
        false,
      ]]);
      const audit = await store.auditList({ target: "queue:mail" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason]), [
        ["queue.pause", "ada", "provider outage"],
        ["queue.pause", "ada", null],
        ["queue.resume", "grace", null],
      ]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("jobs disable needs a reason, is stored and audited, and enable undoes it", async () => {
  await withFiles(async (db, config) => {
    const env = { USER: "ada" };
    const noReason = await runJobs(["disable", "nightly", "--db", db, "--config", config], {
      now: NOW,
      env,
    });
    assert.equal(noReason.code, 2);
    assert.match(noReason.err, /^jobs disable: .*"--reason/);

    const disabled = await runJobs(
      ["disable", "nightly", "--db", db, "--config", config, "--reason", "vendor API down"],
      { now: NOW, env },
    );
    assert.equal(disabled.code, 0, disabled.err);
    assert.match(disabled.out, /nightly disabled: nothing new is planned/);
    const shown = await runJobs(["schedules", "--db", db, "--config", config], { now: NOW, env });
    assert.match(shown.out, /^nightly .* disabled: vendor API down$/m);

    const unknown = await runJobs(
      ["disable", "nightlly", "--db", db, "--config", config, "--reason", "typo"],
      { now: NOW, env },
    );
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no schedule "nightlly"/);

    const enabled = await runJobs(
      ["enable", "nightly", "--db", db, "--config", config, "--reason", "vendor back"],
      { now: NOW + 60_000, env },
    );
    assert.match(enabled.out, /nightly enabled: the planner resumes it/);
    const store = await openSqliteStore(db);
    try {
      const [row] = await store.schedulesList({ ids: ["nightly"] });
      assert.equal(row?.enabled, true);
      const audit = await store.auditList({ target: "schedule:nightly" });
      assert.deepEqual(audit.map((a) => [a.action, a.reason, a.details.was]), [
        ["schedule.disable", "vendor API down", true],
        ["schedule.enable", "vendor back", false],
      ]);
    } finally {
      await store.close();
    }
  });
});
