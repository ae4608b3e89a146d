/**
 * `kill -9` of a daemon in the middle of a job, then a restart on the same
 * file: the job runs again once its lease has expired, with a higher fence,
 * and nothing is lost or completed twice.
 *
 * The job's command runs in a process group of its own, and a SIGKILLed
 * daemon runs no code, so the command outlives it as an orphan until the
 * restart: the new daemon finds the group recorded in `<db>.groups/` and
 * kills it before the rerun starts, so the two never overlap. (`finally`
 * still kills it, should that fail.)
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { withStore } from "../support/stores.ts";
import {
  daemonDir,
  killGroup,
  POLL,
  processAlive,
  readLines,
  startDaemon,
} from "../support/daemon_process.ts";

/**
 * Every second; the first occurrence to take the lock writes `started` and
 * sleeps (and is the one the kill interrupts); every other run, the rerun of
 * that first one included, appends `<occurrence> <fence>` to the ledger.
 */
function schedules(dir: string): string {
  const script = `if mkdir "$1/lock" 2>/dev/null; then ` +
    `echo "$JOBS_OCCURRENCE $JOBS_FENCE $$" > "$1/started.tmp"; mv "$1/started.tmp" "$1/started"; ` +
    `exec sleep 300; fi; echo "$JOBS_OCCURRENCE $JOBS_FENCE" >> "$1/ledger"`;
  return `version: 1
queues:
  default: { concurrency: 4 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ${JSON.stringify(["sh", "-c", script, "sh", dir])}
`;
}

Deno.test({
  name:
    "kill -9 mid-job, restart: the orphan is killed, then the job reruns after its lease expires with a higher fence, once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    await Deno.writeTextFile(config, schedules(dir.path));
    let orphan: number | undefined;
    await using first = await startDaemon({ db, config, node: "d1" });
    try {
      const [occurrence, fence, pid] = await waitUntil("the long job started", async () => {
        const text = await Deno.readTextFile(`${dir.path}/started`).catch(() => "");
        const words = text.trim().split(" ");
        return words.length === 3 ? words as [string, string, string] : null;
      }, { timeoutMs: 60_000, ...POLL });
      orphan = Number(pid);
      assert.equal(fence, "1");
      // The command can write its file before the daemon, just back from
      // spawning it, has recorded its group: kill the daemon only once the
      // record is there (a kill before it would leave nothing to reap).
      const record = `${db}.groups/${orphan}.json`;
      await waitUntil("the daemon to record the command's group", async () => {
        return await Deno.stat(record).then(() => true, () => false);
      }, { timeoutMs: 10_000, ...POLL });

      const killed = await first.stop("SIGKILL");
      assert.equal(killed.signal, "SIGKILL");
      const held = await withStore(db, async (store) => {
        const [job] = await store.jobsList({ occurrence });
        return job!;
      });
      assert.deepEqual([held.state, held.attemptedBy, held.fence], ["executing", "d1", 1]);
      assert.ok(processAlive(orphan), "the killed daemon's command lives on as an orphan");
      const records = [...Deno.readDirSync(`${db}.groups`)].map((e) => e.name);
      assert.ok(records.includes(`${orphan}.json`), `recorded groups: ${records.join(", ")}`);

      {
        await using second = await startDaemon({ db, config, node: "d2" });
        // Reaped at start, before the runtime starts: long before the lease lets the rerun in.
        const reaped = await second.waitFor(
          "command.orphan_reaped",
          (e) => e.pgid === orphan,
          60_000,
        );
        assert.deepEqual([reaped.job, reaped.fence], [held.id, 1]);
        await waitUntil("the orphan to be gone", () => !processAlive(orphan!), {
          timeoutMs: 10_000,
          ...POLL,
        });
        assert.ok(
          !(await readLines(ledger)).includes(`${occurrence} 2`),
          "the orphan was killed before the rerun started",
        );
        // d2 logged the reaping before it ran any job at all.
        const order = second.events.map((e) => e.event);
        const firstJob = order.indexOf("job.start");
        const reapedAt = order.indexOf("command.orphan_reaped");
        assert.ok(firstJob === -1 || reapedAt < firstJob, second.log());
        // The lease is the runtime's default (30 s, renewed every 10 s): no option shortens it.
        await waitUntil(`${occurrence} to complete on d2`, () =>
          withStore(db, async (store) => {
            const [job] = await store.jobsList({ occurrence });
            return job?.state === "completed";
          }), { timeoutMs: 85_000, intervalMs: 500 });
        // Other jobs d1 held when it died come back the same way; wait for all of them.
        await waitUntil("every job d1 held to be rescued", () =>
          withStore(db, async (store) => {
            const executing = await store.jobsList({ state: "executing" });
            return executing.every((j) => j.attemptedBy !== "d1");
          }), { timeoutMs: 60_000, intervalMs: 500 });
        const status = await second.stop("SIGTERM");
        assert.equal(status.code, 0, second.log());
      }

      const rows = await readLines(ledger);
      assert.ok(rows.includes(`${occurrence} 2`), `the rerun with fence 2:\n${rows.join("\n")}`);
      assert.equal(new Set(rows).size, rows.length, `an attempt ran twice:\n${rows.join("\n")}`);
      await withStore(db, async (store) => {
        const [job] = await store.jobsList({ occurrence });
        const attempts = await store.attemptsList({ jobId: job!.id });
        assert.deepEqual(attempts.map((a) => [a.node, a.fence, a.outcome]), [
          ["d1", 1, "orphaned"],
          ["d2", 2, "completed"],
        ]);
        assert.ok(
          attempts[1]!.startedAt >= held.leaseExpiresAt!,
          "the rerun started only after the lease had expired",
        );
        // Nothing lost, nothing completed twice: each completed job's last
        // fence is in the ledger, and no job has two completed attempts.
        const jobs = await store.jobsList({ scheduleId: "tick" });
        assert.deepEqual(jobs.filter((j) => j.state === "executing"), []);
        for (const j of jobs.filter((j) => j.state === "completed")) {
          assert.ok(rows.includes(`${j.occurrence} ${j.fence}`), `${j.occurrence} not in ledger`);
          const outcomes = (await store.attemptsList({ jobId: j.id })).map((a) => a.outcome);
          assert.equal(outcomes.filter((o) => o === "completed").length, 1, j.occurrence!);
        }
        const known = new Set(jobs.map((j) => j.occurrence));
        assert.ok(rows.every((row) => known.has(row.split(" ")[0]!)), rows.join("\n"));
      });
    } finally {
      // The daemon first, so that it starts nothing more; the temp dir goes last.
      await first[Symbol.asyncDispose]();
      if (orphan !== undefined) killGroup(orphan);
    }
  },
});
