/**
 * Invariant 6 on PostgreSQL, as `daemon_outage_test.ts` checks it on SQLite:
 * another session holds `LOCK TABLE <schema>.jobs IN ACCESS EXCLUSIVE MODE`
 * in an open transaction for longer than the daemon's busy timeout
 * (`JOBS_BUSY_TIMEOUT`, the sessions' `lock_timeout`). The daemon's writes
 * fail after that bound instead of waiting without a word: it logs
 * `store.degraded` saying the store is locked, `/readyz` answers 503 with
 * the reason (`/healthz` stays 200), and once the lock is released it logs
 * `store.recovered` and `/readyz` answers 200 again.
 */

import assert from "node:assert/strict";
import { SystemClock } from "../../src/clock.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { dropTestSchema, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { spawnDaemon } from "../support/daemon_process.ts";
import { tempDir } from "../support/stores.ts";

/** Far below the lock's hold: the daemon's writes give up and it must ride the outage out. */
const BUSY_TIMEOUT_MS = 300;

/** Every second an occurrence to plan (an insert) and a claim: writes of jobs keep coming. */
const SCHEDULES = `version: 1
queues:
  default: { concurrency: 2 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ["true"]
`;

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

Deno.test({
  name:
    "jobs daemon on PostgreSQL reports a LOCK TABLE on jobs held past its busy timeout as degraded, and recovers",
  sanitizeResources: false,
  fn: async () => {
    const dir = await tempDir();
    const schema = testSchema();
    const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
    const clock = new SystemClock();
    const locker = await openPostgresStore(url, { now: clock.now(), max: 2 });
    let release: (() => void) | null = null;
    let holding: Promise<void> | null = null;
    try {
      const config = `${dir.path}/schedules.yaml`;
      await Deno.writeTextFile(config, SCHEDULES);
      await using daemon = spawnDaemon([
        "--db",
        url,
        "--config",
        config,
        "--node",
        "locked-out",
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        `${dir.path}/state`,
      ], {
        name: "locked-out",
        env: { JOBS_BUSY_TIMEOUT: String(BUSY_TIMEOUT_MS) },
        signal: AbortSignal.timeout(120_000),
      });
      const port = Number((await daemon.waitFor("http.listening", undefined, 60_000)).port);
      await daemon.waitFor("daemon.started", undefined, 60_000);
      await waitUntil("occurrences completed", async () => {
        const jobs = await locker.jobsList({ state: "completed" });
        return jobs.length >= 1;
      }, { timeoutMs: 30_000, intervalMs: 100 });
      assert.equal((await get(port, "/readyz")).status, 200);

      // Another session locks the table and keeps its transaction open.
      const released = new Promise<void>((resolve) => (release = resolve));
      const locked = Promise.withResolvers<void>();
      holding = locker.transaction(async (tx) => {
        await tx.sql`LOCK TABLE ${tx.sql(schema)}.jobs IN ACCESS EXCLUSIVE MODE`;
        locked.resolve();
        await released;
      }).catch((error) => locked.reject(error));
      await locked.promise;

      const degraded = await daemon.waitFor("store.degraded", undefined, 30_000);
      assert.match(
        String(degraded.error),
        new RegExp(`is locked: a statement waited ${BUSY_TIMEOUT_MS} ms for a lock`),
        daemon.log(),
      );
      const ready = await waitUntil("/readyz reports degraded", async () => {
        const answer = await get(port, "/readyz");
        return answer.status === 503 ? answer : null;
      }, { timeoutMs: 20_000 });
      assert.match(
        ready.body,
        /^degraded: store calls failing since \S+ \(.+: the store is locked: a statement waited .+\)\n$/,
      );
      assert.equal((await get(port, "/healthz")).status, 200, "/healthz stays 200");

      // Released: the daemon recovers on its own.
      release!();
      await holding;
      holding = null;
      await daemon.waitFor("store.recovered", undefined, 30_000);
      await waitUntil("/readyz ready again", async () => {
        return (await get(port, "/readyz")).status === 200;
      }, { timeoutMs: 20_000 });

      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, daemon.log());
      const named = (event: string) => daemon.events.filter((e) => e.event === event);
      assert.equal(named("store.degraded").length, 1, daemon.log());
      assert.equal(named("store.recovered").length, 1, daemon.log());
      assert.equal(named("job.exception").length, 0, daemon.log());
    } finally {
      (release as (() => void) | null)?.();
      await holding;
      await locker.close();
      await dropTestSchema(schema);
      await dir.cleanup();
    }
  },
});
