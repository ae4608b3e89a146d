/**
 * `jobs daemon` with what the file names beyond commands: a `workers:`
 * module of TypeScript workers, a fan-out schedule whose selection lists
 * items, and a manual schedule triggered by `jobs run` for another
 * environment than the daemon's, which the daemon discards unrun.
 */

import assert from "node:assert/strict";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { runJobs } from "../support/cli.ts";
import { daemonDir, spawnDaemon } from "../support/daemon_process.ts";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;

const WORKERS = `import { defineWorker } from "${MOD}";
export const greet = defineWorker<{ item: string }>({
  name: "greet",
  perform: async ({ item }, ctx) => {
    await Deno.writeTextFile("LEDGER", item + " " + ctx.job.occurrence + "\\n", { append: true });
  },
});
`;

const SCHEDULES = `version: 1
workers: ./workers.ts
queues:
  default: { concurrency: 4 }
schedules:
  - id: greet-all
    every: 1h
    misfire: fire_once
    grace: 2h
    selection:
      command: ["printf", "ada\\\\nbob\\\\ncy\\\\n"]
    batch_size: 2
    run:
      worker: greet
  - id: reindex
    manual: true
    guard: on-call only
    runs_where: staging
    run:
      command: ["sh", "-c", "echo ran >> MARKER"]
      cwd: DIR
`;

Deno.test({
  name:
    "jobs daemon runs a workers module's workers, fans out a selection, and refuses another environment's manual run",
  sanitizeResources: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    await Deno.writeTextFile(`${dir.path}/workers.ts`, WORKERS.replace("LEDGER", ledger));
    await Deno.writeTextFile(config, SCHEDULES.replace("DIR", dir.path));
    // Both triggered before the daemon starts (the hourly one's first slot is far off):
    // the fan-out now, and a run meant for staging.
    const now = Date.UTC(2026, 10, 30);
    // `jobs run` writes to an existing store only: made here as an operator would.
    const migrated = await runJobs(["migrate", "--db", db], { now });
    assert.equal(migrated.code, 0, migrated.err);
    const fan = await runJobs(["run", "greet-all", "--db", db, "--config", config], { now });
    assert.equal(fan.code, 0, fan.err);
    const run = await runJobs(
      ["run", "reindex", "--db", db, "--config", config, "--environment", "staging"].concat([
        "--reason",
        "test",
      ]),
      { now },
    );
    assert.equal(run.code, 0, run.err);
    await using daemon = spawnDaemon(
      ["--db", db, "--config", config, "--listen", "off", "--environment", "production"],
      { signal: AbortSignal.timeout(60_000) },
    );
    const events = daemon.events;
    try {
      const rows = await waitUntil("three items in the ledger", async () => {
        const text = await Deno.readTextFile(ledger).catch(() => "");
        const rows = text.split("\n").filter(Boolean);
        return rows.length >= 3 ? rows : null;
      }, { timeoutMs: 40_000 }).catch((error) => {
        throw new Error(`${error.message}: ${JSON.stringify(events.slice(-8))}`);
      });
      assert.deepEqual(rows.map((r) => r.split(" ")[0]).sort(), ["ada", "bob", "cy"]);
      assert.ok(rows.every((r) => /^\w+ greet-all@.*#[0-9a-f]{16}$/.test(r)), rows.join("\n"));
      const store = await openSqliteStore(db);
      try {
        const manual = await waitUntil("the manual run was discarded", async () => {
          const [job] = await store.jobsList({ scheduleId: "reindex" });
          return job?.state === "discarded" ? job : null;
        }, { timeoutMs: 30_000 });
        assert.match(manual.errors.at(-1)?.error ?? "", /runs_where is "staging".*"production"/);
      } finally {
        await store.close();
      }
      assert.equal(await Deno.stat(`${dir.path}/MARKER`).catch(() => null), null);
    } finally {
      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, JSON.stringify(events.slice(-5)));
    }
  },
});
