/**
 * Issue 25.1 end to end: a daemon (a real subprocess) on PostgreSQL,
 * reaching it through a TCP proxy, runs a `sleep 60` command job; then its
 * database goes away, refused (the proxy down) or hanging (the proxy
 * stalled: connections open, no answer). The daemon cannot renew the lease,
 * so it must stop the command (its process gone) and log
 * `job.lease_expired` before the lease runs out in the store, when another
 * daemon could rescue the job and run it a second time, and must not log a
 * `job.stop` that says `completed`.
 */

import assert from "node:assert/strict";
import { SystemClock } from "../../src/clock.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { newJob, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import {
  killGroup,
  type LogEvent,
  pidsIn,
  processAlive,
  spawnDaemon,
} from "../support/daemon_process.ts";
import { tempDir } from "../support/stores.ts";
import { startTcpProxy } from "../support/tcp_proxy.ts";

/** Short, so the test takes seconds: renewed every 2 s, stopped 1.5 s before it runs out. */
const LEASE_MS = 6000;

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 1 }
schedules: []
`;

for (const mode of ["refused", "hanging"] as const) {
  Deno.test({
    name:
      `[postgres] a daemon whose database is ${mode} stops its command and logs job.lease_expired before the lease runs out`,
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
        applicationName: "pg-lease-expiry-test",
      });
      await using proxy = startTcpProxy();
      const pidFile = `${dir.path}/pids`;
      try {
        const config = `${dir.path}/schedules.yaml`;
        await Deno.writeTextFile(config, SCHEDULES);
        await using daemon = spawnDaemon([
          "--db",
          proxy.url(url),
          "--config",
          config,
          "--node",
          `lease-${mode}`,
          "--listen",
          "off",
          "--state-dir",
          `${dir.path}/state`,
          "--lease",
          String(LEASE_MS),
          "--shutdown-grace",
          "0",
        ], { name: `lease-${mode}`, signal: AbortSignal.timeout(90_000) });
        await daemon.waitFor("daemon.started", undefined, 60_000);

        const script = 'echo $$ >> "$1"; exec sleep 60';
        const [inserted] = await store.jobsInsert({
          jobs: [newJob({
            worker: "jobs.command",
            args: JSON.stringify({ kind: "command", argv: ["sh", "-c", script, "sh", pidFile] }),
            maxAttempts: 3,
            scheduledAt: 0,
          })],
          now: clock.now(),
        });
        const id = inserted!.id;
        const [pid] = await waitUntil("the command running", async () => {
          const pids = await pidsIn(pidFile);
          return pids.length > 0 ? pids : undefined;
        }, { timeoutMs: 30_000, intervalMs: 50 });
        assert.ok(processAlive(pid!), "the command runs");

        if (mode === "refused") await proxy.down();
        else proxy.stall();
        const cutAt = Date.now();

        const expired = await daemon.waitFor(
          "job.lease_expired",
          (e: LogEvent) => e.job === id,
          3 * LEASE_MS,
        );
        const expiresAt = Number(expired.expiresAt);
        const loggedAt = Date.parse(String(expired.time));
        assert.ok(
          loggedAt < expiresAt,
          `job.lease_expired logged ${loggedAt - expiresAt} ms after the lease ran out`,
        );
        assert.ok(expiresAt > cutAt, "the lease ran out only after the cut");
        assert.ok(Number(expired.renewFailingMs) > 0, JSON.stringify(expired));
        await waitUntil("the command gone", () => !processAlive(pid!), {
          timeoutMs: 3 * LEASE_MS,
          intervalMs: 20,
        });
        const goneAt = Date.now();
        assert.ok(
          goneAt < expiresAt,
          `the command still ran ${goneAt - expiresAt} ms after its lease ran out`,
        );
        console.log(
          `${mode}: job.lease_expired ${expiresAt - loggedAt} ms and the command gone ` +
            `${expiresAt - goneAt} ms before the lease ran out (${
              expiresAt - cutAt
            } ms after the cut)`,
        );
        const stops = daemon.events.filter((e) => e.event === "job.stop" && e.job === id);
        assert.ok(
          stops.every((e) => e.outcome !== "completed"),
          `job.stop said completed for a result not recorded:\n${daemon.log()}`,
        );
        if (mode === "hanging") proxy.resume();
        else proxy.up();
      } finally {
        for (const pid of await pidsIn(pidFile)) killGroup(pid);
        try {
          await store.transaction((tx) => tx.sql`DROP SCHEMA ${tx.sql(schema)} CASCADE`);
        } finally {
          await store.close();
          await dir.cleanup();
        }
      }
    },
  });
}
