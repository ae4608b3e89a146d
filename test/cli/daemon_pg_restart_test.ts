/**
 * `jobs daemon` stopped after its PostgreSQL server went away and came back
 * (a TCP proxy in front of the shared server goes down with statements in
 * flight, then up again). Once it runs jobs again, a SIGTERM with
 * nothing running stops it as quickly as before the outage: postgres.js
 * 3.4.9 kept the statements of the sessions that ended under them as
 * running, so closing the pool waited out its 5 s timeout.
 *
 * The bound is in the daemon's own log (from `daemon.stopping` to
 * `daemon.stopped`), not around the process: 3 s stays well clear of a
 * stop on a loaded machine (0.1 s here) and still fails when the close waits
 * out those 5 s.
 */

import assert from "node:assert/strict";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { dropTestSchema, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { spawnDaemon } from "../support/daemon_process.ts";
import { tempDir } from "../support/stores.ts";
import { startTcpProxy } from "../support/tcp_proxy.ts";

/** Statements keep going: an occurrence every second, each a short command. */
const SCHEDULES = `version: 1
queues:
  default: { concurrency: 4 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ["true"]
`;

const STOP_BOUND_MS = 3000;

Deno.test({
  name: "jobs daemon stops at once after its PostgreSQL server went away and came back",
  sanitizeResources: false,
  fn: async () => {
    const dir = await tempDir();
    const schema = testSchema();
    await using proxy = startTcpProxy();
    let store: PostgresStore | null = null;
    try {
      const config = `${dir.path}/schedules.yaml`;
      await Deno.writeTextFile(config, SCHEDULES);
      await using daemon = spawnDaemon([
        "--db",
        proxy.url(`${POSTGRES_TEST_URL}?schema=${schema}`),
        "--config",
        config,
        "--node",
        "restarted",
        "--listen",
        "off",
        "--state-dir",
        `${dir.path}/state`,
      ], { name: "restarted", signal: AbortSignal.timeout(120_000) });
      await daemon.waitFor("daemon.started", undefined, 60_000);
      // The test's own view of the store, past the proxy.
      const view = store = await openPostgresStore(`${POSTGRES_TEST_URL}?schema=${schema}`, {
        migrate: false,
        max: 1,
      });

      // The server goes away under the daemon's sessions, several times;
      // after each, the daemon completes an occurrence again.
      const completed = async () => (await view.jobsList({ state: "completed" })).length;
      for (let round = 1; round <= 5; round++) {
        await waitUntil(`round ${round}: the daemon's sessions are open`, () => proxy.open >= 2);
        await proxy.down();
        await daemon.waitFor("store.degraded", undefined, 30_000);
        proxy.up();
        const before = await completed();
        await waitUntil(`round ${round}: an occurrence completed again`, async () => {
          return (await completed()) > before;
        }, { timeoutMs: 30_000, intervalMs: 100 }).catch((error: Error) => {
          throw new Error(`${error.message}; the daemon's log:\n${daemon.log()}`);
        });
      }

      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, daemon.log());
      const at = (event: string) => {
        const line = daemon.events.find((e) => e.event === event);
        assert.ok(line, `${event} logged:\n${daemon.log()}`);
        return Date.parse(String(line.time));
      };
      const stopMs = at("daemon.stopped") - at("daemon.stopping");
      assert.ok(stopMs < STOP_BOUND_MS, `the stop took ${stopMs} ms:\n${daemon.log()}`);
    } finally {
      await store?.close();
      await proxy.close();
      await dropTestSchema(schema);
      await dir.cleanup();
    }
  },
});
