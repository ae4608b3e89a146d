/**
 * Invariant 6 on PostgreSQL: a daemon (a real subprocess) runs 2,000 jobs
 * while every one of its sessions is killed with `pg_terminate_backend`
 * every few hundred ms for 10 s. Every job completes exactly once: its side
 * effect (a ledger line) appears once, none failed, retried or was
 * discarded, and a second attempt is allowed only where the kill forced a
 * rescue (a claim committed whose answer the daemon never received). The
 * node reports the outages on /readyz (503) and recovers (200).
 */

import assert from "node:assert/strict";
import { SystemClock } from "../../src/clock.ts";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { newJob, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { readLines, spawnDaemon } from "../support/daemon_process.ts";
import { tempDir } from "../support/stores.ts";

const JOBS = 2000;
const KILL_FOR_MS = 10_000;
const KILL_EVERY_MS = 300;
const NODE = "outage-node";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;

/** Each job appends its id to the ledger (its side effect), then takes 50 ms: 2,000 of them at 8 at once outlast the 10 s of kills. */
const WORKERS = `import { defineWorker } from "${MOD}";
export const ledger = defineWorker<{ n: number }>({
  name: "ledger",
  perform: async (_args, ctx) => {
    await Deno.writeTextFile("LEDGER", ctx.job.id + "\\n", { append: true });
    await new Promise((resolve) => setTimeout(resolve, 50));
  },
});
`;

const SCHEDULES = `version: 1
workers: ./workers.ts
queues:
  default: { concurrency: 8 }
schedules: []
`;

async function jobStates(store: PostgresStore): Promise<Map<string, number>> {
  return await store.transaction(async (tx) => {
    const rows = await tx.sql`SELECT state, count(*)::int AS n FROM jobs GROUP BY state`;
    return new Map(rows.map((r) => [String(r.state), Number(r.n)]));
  });
}

Deno.test({
  name:
    "2,000 jobs on PostgreSQL complete once each while the daemon's sessions are terminated every 300 ms for 10 s",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await tempDir();
    const schema = testSchema();
    const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
    const clock = new SystemClock();
    const store = await openPostgresStore(url, {
      now: clock.now(),
      max: 2,
      applicationName: "pg-outage-test",
    });
    const ledger = `${dir.path}/ledger`;
    try {
      await Deno.writeTextFile(`${dir.path}/workers.ts`, WORKERS.replace("LEDGER", ledger));
      const config = `${dir.path}/schedules.yaml`;
      await Deno.writeTextFile(config, SCHEDULES);
      await using daemon = spawnDaemon([
        "--db",
        url,
        "--config",
        config,
        "--node",
        NODE,
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        `${dir.path}/state`,
        "--shutdown-grace",
        "5000",
      ], { name: NODE, signal: AbortSignal.timeout(85_000) });
      const port = Number((await daemon.waitFor("http.listening", undefined, 60_000)).port);
      await daemon.waitFor("daemon.started", undefined, 30_000);

      // /readyz polled throughout: it must go 503 during the kills and 200 again after.
      const readiness: number[] = [];
      let polling = true;
      const poller = (async () => {
        while (polling) {
          try {
            const response = await fetch(`http://127.0.0.1:${port}/readyz`);
            await response.body?.cancel();
            if (readiness.at(-1) !== response.status) readiness.push(response.status);
          } catch {
            // The daemon is busy; the next poll answers.
          }
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();

      for (let from = 0; from < JOBS; from += 500) {
        const batch = Array.from(
          { length: Math.min(500, JOBS - from) },
          (_, i) =>
            newJob({
              worker: "ledger",
              args: JSON.stringify({ n: from + i }),
              maxAttempts: 5,
              scheduledAt: 0,
            }),
        );
        await store.jobsInsert({ jobs: batch, now: clock.now() });
      }

      // Kill every session of the daemon, again and again.
      const applicationName = `jobs ${NODE}`;
      let killed = 0;
      const killUntil = performance.now() + KILL_FOR_MS;
      while (performance.now() < killUntil) {
        const rows = await store.transaction((tx) =>
          tx.sql`SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
            WHERE application_name = ${applicationName}`
        );
        killed += rows.filter((r) => r.done === true).length;
        await new Promise((resolve) => setTimeout(resolve, KILL_EVERY_MS));
      }
      const doneWhenKillsEnded = (await jobStates(store)).get("completed") ?? 0;

      // A claim whose answer was lost waits out its lease (30 s) before the lifeline rescues it.
      await waitUntil("every job completed", async () => {
        const states = await jobStates(store);
        if ((states.get("completed") ?? 0) === JOBS) return true;
        if (daemon.exited) throw new Error(`the daemon exited:\n${daemon.log()}`);
        return false;
      }, { timeoutMs: 60_000, intervalMs: 250 });
      await waitUntil("/readyz ready again", () => readiness.at(-1) === 200, {
        timeoutMs: 20_000,
      });
      polling = false;
      await poller;

      assert.ok(killed >= 10, `sessions were terminated: ${killed}`);
      assert.ok(
        doneWhenKillsEnded < JOBS,
        `the kills overlapped the run (${doneWhenKillsEnded} done when they ended)`,
      );
      const states = await jobStates(store);
      assert.deepEqual([...states], [["completed", JOBS]], "completed, none failed or discarded");

      // Every job's side effect happened once.
      const lines = await readLines(ledger);
      const counts = new Map<string, number>();
      for (const id of lines) counts.set(id, (counts.get(id) ?? 0) + 1);
      const twice = [...counts].filter(([, n]) => n > 1);
      assert.deepEqual(twice, [], "no job ran twice");
      assert.equal(counts.size, JOBS);

      // One attempt per job, unless the kill forced a rescue of a claim never seen.
      const attempts = await store.transaction((tx) =>
        tx.sql`SELECT j.id, j.attempt,
            count(*) FILTER (WHERE a.outcome = 'orphaned')::int AS orphaned,
            count(*) FILTER (WHERE a.outcome = 'completed')::int AS completed,
            count(*) FILTER (WHERE a.outcome NOT IN ('orphaned', 'completed')
              OR a.outcome IS NULL)::int AS other
          FROM jobs j JOIN attempts a ON a.job_id = j.id GROUP BY j.id, j.attempt`
      );
      assert.equal(attempts.length, JOBS);
      for (const row of attempts) {
        const job = `job ${row.id}`;
        assert.equal(row.completed, 1, `${job}: completed once`);
        assert.equal(row.other, 0, `${job}: no failed or unfinished attempt`);
        assert.equal(row.attempt, 1 + row.orphaned, `${job}: a second attempt only after a rescue`);
      }
      const rescued = attempts.filter((r) => r.orphaned > 0).length;

      const ready = readiness.join(" ");
      assert.match(ready, /^(200 )?.*503.*200$/, `/readyz went 503 and back: ${ready}`);
      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, daemon.log());
      const logged = (event: string) => daemon.events.filter((e) => e.event === event).length;
      console.log(
        `killed ${killed} sessions; rescued ${rescued}; readyz ${readiness.length} changes; ` +
          `store.degraded ${logged("store.degraded")}, store.error ${logged("store.error")}, ` +
          `store.recovered ${logged("store.recovered")}`,
      );
      // Bounded logs: one line where an outage begins and one where it ends, not one per failure.
      assert.ok(logged("store.error") <= 2, daemon.log());
      assert.equal(logged("job.unrecorded"), 0);
    } finally {
      try {
        await store.transaction((tx) => tx.sql`DROP SCHEMA ${tx.sql(schema)} CASCADE`);
      } finally {
        await store.close();
        await dir.cleanup();
      }
    }
  },
});
