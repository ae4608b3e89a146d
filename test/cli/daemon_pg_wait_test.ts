/**
 * `jobs daemon` on a PostgreSQL server that is not there yet (a TCP proxy
 * in front of the shared server, down at start): it waits and logs instead
 * of exiting (`store.waiting` once with the reason and the location without
 * its password, then at a bounded rate), starts normally once the server
 * answers, and a SIGTERM while it waits ends it cleanly. The wait itself
 * ({@linkcode openWhenReachable}) is checked on a FakeClock first.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { isStoreUnreachable, StoreOpenError } from "../../src/store/errors.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { openWhenReachable } from "../../src/runtime/store_health.ts";
import { waitUntil } from "../../src/testing.ts";
import { dropTestSchema, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { spawnDaemon } from "../support/daemon_process.ts";
import { tempDir } from "../support/stores.ts";
import { startTcpProxy } from "../support/tcp_proxy.ts";

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 2 }
schedules: []
`;

/** Trust authentication ignores it; it must never be printed all the same. */
const PASSWORD = "sekrit-pw";

/** The daemon's URL: through the proxy, with a password, in a fresh schema. */
function daemonUrl(port: number, schema: string): string {
  const url = new URL(POSTGRES_TEST_URL);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  url.password = PASSWORD;
  url.searchParams.set("schema", schema);
  return url.toString();
}

Deno.test({
  name: "jobs daemon started while PostgreSQL is away waits, logs at a bounded rate, then starts",
  sanitizeResources: false,
  fn: async () => {
    const dir = await tempDir();
    const schema = testSchema();
    await using proxy = startTcpProxy();
    await proxy.down();
    try {
      const config = `${dir.path}/schedules.yaml`;
      await Deno.writeTextFile(config, SCHEDULES);
      await using daemon = spawnDaemon([
        "--db",
        daemonUrl(proxy.port, schema),
        "--config",
        config,
        "--node",
        "waiter",
        "--listen",
        "off",
        "--state-dir",
        `${dir.path}/state`,
      ], { name: "waiter", signal: AbortSignal.timeout(80_000) });

      const first = await daemon.waitFor("store.waiting", undefined, 60_000);
      assert.match(String(first.error), /ECONNREFUSED/);
      assert.equal(
        first.location,
        `postgres://postgres@127.0.0.1:${proxy.port}/test?schema=${schema}`,
      );
      // Several attempts fail (100 ms doubling) while the server stays away...
      const began = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 2500)); // the outage lasts a while
      assert.equal(daemon.exited, null, `it waits rather than exits:\n${daemon.log()}`);
      const waiting = daemon.events.filter((e) => e.event === "store.waiting");
      // ...but are logged once, then at most once per 30 s.
      assert.ok(performance.now() - began < 30_000);
      assert.equal(waiting.length, 1, `bounded:\n${daemon.log()}`);

      proxy.up();
      const reachable = await daemon.waitFor("store.reachable", undefined, 30_000);
      assert.ok(Number(reachable.attempts) >= 3, `it retried: ${JSON.stringify(reachable)}`);
      await daemon.waitFor("daemon.started", undefined, 30_000);
      const store = await openPostgresStore(`${POSTGRES_TEST_URL}?schema=${schema}`, {
        migrate: false,
        max: 1,
      });
      try {
        await waitUntil("the node registered", async () => {
          return (await store.nodesList()).some((n) => n.node === "waiter");
        }, { timeoutMs: 30_000, intervalMs: 100 });
      } finally {
        await store.close();
      }
      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, daemon.log());
      assert.doesNotMatch(daemon.log(), new RegExp(PASSWORD), "the password is never printed");
    } finally {
      await proxy.close();
      await dropTestSchema(schema);
      await dir.cleanup();
    }
  },
});

Deno.test({
  name: "jobs daemon waiting for PostgreSQL exits cleanly on SIGTERM",
  sanitizeResources: false,
  fn: async () => {
    const dir = await tempDir();
    const schema = testSchema();
    await using proxy = startTcpProxy();
    await proxy.down();
    try {
      const config = `${dir.path}/schedules.yaml`;
      await Deno.writeTextFile(config, SCHEDULES);
      await using daemon = spawnDaemon([
        "--db",
        daemonUrl(proxy.port, schema),
        "--config",
        config,
        "--node",
        "quitter",
        "--listen",
        "off",
        "--state-dir",
        `${dir.path}/state`,
      ], { name: "quitter", signal: AbortSignal.timeout(80_000) });
      await daemon.waitFor("store.waiting", undefined, 60_000);
      const status = await daemon.stop("SIGTERM", 10_000);
      assert.equal(status.code, 0, daemon.log());
      const stopped = daemon.events.find((e) => e.event === "daemon.stopped");
      assert.ok(stopped, `it says it stopped:\n${daemon.log()}`);
      assert.equal(daemon.events.some((e) => e.event === "daemon.started"), false);
    } finally {
      await proxy.close();
      await dropTestSchema(schema);
      await dir.cleanup();
    }
  },
});

/** An error as postgres.js raises it for a refused connection, wrapped as the store does. */
function refused(): StoreOpenError {
  const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
    code: "ECONNREFUSED",
  });
  return new StoreOpenError("postgres://u@h/db", cause.message, { cause });
}

Deno.test("isStoreUnreachable() tells an outage from a refusal", () => {
  assert.equal(isStoreUnreachable(refused()), true);
  for (const code of ["57P01", "57014", "08006", "CONNECTION_CLOSED", "CONNECT_TIMEOUT"]) {
    assert.equal(isStoreUnreachable(Object.assign(new Error(code), { code })), true, code);
  }
  for (const code of ["28P01", "28000", "42P01", "23505", undefined]) {
    assert.equal(isStoreUnreachable(Object.assign(new Error("no"), { code })), false, code);
  }
  assert.equal(isStoreUnreachable(null), false);
});

Deno.test("openWhenReachable() retries an unreachable store with backoff, logging once", async () => {
  const clock = new FakeClock();
  const lines: { event: string; fields: Record<string, unknown> }[] = [];
  let calls = 0;
  const opening = openWhenReachable(() => {
    calls++;
    return calls < 6 ? Promise.reject(refused()) : Promise.resolve("open");
  }, {
    clock,
    logger: (event, fields = {}) => lines.push({ event, fields }),
    location: "postgres://u@h/db",
    random: () => 0.999,
  });
  // 100 ms doubling (jittered by a factor of 0.9995 here).
  for (const [i, waitMs] of [100, 200, 400, 800, 1599].entries()) {
    await waitUntil(`attempt ${i + 1} waits`, () => calls === i + 1 && clock.sleepers === 1);
    clock.advance(waitMs - 1);
    await Promise.resolve();
    assert.equal(calls, i + 1, `not retried before ${waitMs} ms`);
    clock.advance(1);
  }
  assert.equal(await opening, "open");
  assert.deepEqual(lines.map((l) => l.event), ["store.waiting", "store.reachable"]);
  assert.match(String(lines[0]!.fields.error), /ECONNREFUSED/);
  assert.equal(lines[1]!.fields.attempts, 6);
});

Deno.test("openWhenReachable() throws a refusal at once and stops waiting when aborted", async () => {
  const clock = new FakeClock();
  const denied = Object.assign(new Error('password authentication failed for user "u"'), {
    code: "28P01",
  });
  await assert.rejects(
    openWhenReachable(() => Promise.reject(denied), {
      clock,
      logger: () => {},
      location: "postgres://u@h/db",
    }),
    /password authentication failed/,
  );
  const stop = new AbortController();
  let calls = 0;
  const waiting = openWhenReachable(() => (calls++, Promise.reject(refused())), {
    clock,
    logger: () => {},
    location: "postgres://u@h/db",
    signal: stop.signal,
  });
  await waitUntil("the first attempt", () => calls === 1);
  stop.abort();
  assert.equal(await waiting, null);
  assert.equal(calls, 1);
});
