/**
 * The PostgreSQL store's wake-ups survive losing their connection: the
 * LISTEN session killed with `pg_terminate_backend`, and the server gone and
 * back (a TCP proxy in front of it closed and reopened, the shared server
 * untouched). Each time notifications arrive again within a deadline, the
 * listener is woken when LISTEN is back (for what was committed while it
 * was not), and reconnects back off within bounds.
 */

import assert from "node:assert/strict";
import {
  openPostgresStore,
  type PostgresStore,
  reconnectBackoffS,
} from "../../src/store/postgres/postgres_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { newJob, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp_proxy.ts";

/** How long a lost LISTEN may take to come back (the server is local). */
const BACK_WITHIN_MS = 10_000;

interface Setup {
  /** Connected directly: inserts (and notifies) and kills sessions. */
  direct: PostgresStore;
  /** Connected through the proxy, listening. */
  listening: PostgresStore;
  proxy: TcpProxy;
  applicationName: string;
  [Symbol.asyncDispose](): Promise<void>;
}

async function setup(): Promise<Setup> {
  const schema = testSchema();
  const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
  const direct = await openPostgresStore(url, { now: 0, max: 2, applicationName: "listen-test" });
  const proxy = startTcpProxy();
  const applicationName = `listen-test ${schema}`;
  const listening = await openPostgresStore(proxy.url(url), {
    migrate: false,
    max: 2,
    applicationName,
    connectTimeoutS: 2,
  });
  return {
    direct,
    listening,
    proxy,
    applicationName,
    [Symbol.asyncDispose]: async () => {
      proxy.up(); // the listening store's close says goodbye through it
      await listening.close();
      await proxy.close();
      try {
        await direct.transaction((tx) => tx.sql`DROP SCHEMA ${tx.sql(schema)} CASCADE`);
      } finally {
        await direct.close();
      }
    },
  };
}

/** Inserts one job of queue `q` through `store`, which notifies its channel. */
async function insert(store: PostgresStore): Promise<void> {
  await store.jobsInsert({ jobs: [newJob({ queue: "q", scheduledAt: 0 })], now: 0 });
}

/** The pids of the sessions of `applicationName` whose last statement was a LISTEN. */
async function listenSessions(store: PostgresStore, applicationName: string): Promise<number[]> {
  return await store.transaction(async (tx) => {
    const rows = await tx.sql`SELECT pid FROM pg_stat_activity
      WHERE application_name = ${applicationName} AND query ILIKE 'listen %'`;
    return rows.map((r) => Number(r.pid));
  });
}

/**
 * Inserts a job every 50 ms until `heard()` exceeds `before`: a notification
 * sent before LISTEN is back is lost, so one insert would prove nothing.
 */
async function heardAgain(
  what: string,
  direct: PostgresStore,
  heard: () => number,
  before: number,
): Promise<void> {
  await waitUntil(what, async () => {
    if (heard() > before) return true;
    await insert(direct);
    return false;
  }, { timeoutMs: BACK_WITHIN_MS, intervalMs: 50 });
}

Deno.test("onExternalChange() hears another connection's insert", async () => {
  await using s = await setup();
  let heard = 0;
  const off = s.listening.onExternalChange(() => heard++);
  await waitUntil("LISTEN in place", async () => {
    return (await listenSessions(s.direct, s.applicationName)).length === 1;
  }, { timeoutMs: BACK_WITHIN_MS });
  const before = heard;
  await insert(s.direct);
  await waitUntil("the insert heard", () => heard > before, { timeoutMs: BACK_WITHIN_MS });
  off();
});

Deno.test("onExternalChange() hears inserts again after its LISTEN session is terminated", async () => {
  await using s = await setup();
  let heard = 0;
  const off = s.listening.onExternalChange(() => heard++);
  const [first] = await waitUntil("LISTEN in place", async () => {
    const pids = await listenSessions(s.direct, s.applicationName);
    return pids.length === 1 ? pids : null;
  }, { timeoutMs: BACK_WITHIN_MS });
  await heardAgain("the first insert heard", s.direct, () => heard, 0);

  for (let round = 0; round < 3; round++) {
    const [pid] = await listenSessions(s.direct, s.applicationName);
    assert.ok(pid !== undefined, "a LISTEN session to terminate");
    await s.direct.transaction((tx) => tx.sql`SELECT pg_terminate_backend(${pid}::int)`);
    const again = await waitUntil(`round ${round}: a new LISTEN session`, async () => {
      const pids = await listenSessions(s.direct, s.applicationName);
      return pids.length === 1 && pids[0] !== pid ? pids[0] : null;
    }, { timeoutMs: BACK_WITHIN_MS });
    assert.notEqual(again, first);
    await heardAgain(`round ${round}: an insert heard again`, s.direct, () => heard, heard);
  }
  off();
});

Deno.test("onExternalChange() hears inserts again once the server is back, and wakes on re-LISTEN", async () => {
  await using s = await setup();
  let heard = 0;
  const off = s.listening.onExternalChange(() => heard++);
  await heardAgain("the first insert heard", s.direct, () => heard, 0);

  await s.proxy.down();
  // Committed while the listener cannot hear it: the re-LISTEN wakes it instead.
  await insert(s.direct);
  const beforeUp = heard;
  // The outage lasts long enough for several refused reconnects, so the backoff has grown.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(heard, beforeUp, "nothing heard while the server is away");
  const acceptedBefore = s.proxy.accepted;
  s.proxy.up();
  // No insert after up(): only the re-LISTEN can wake the listener.
  await waitUntil("the listener woken by the re-LISTEN", () => heard > beforeUp, {
    timeoutMs: BACK_WITHIN_MS,
  });
  assert.ok(s.proxy.accepted > acceptedBefore, "it came back through the proxy");
  await heardAgain("an insert heard after the outage", s.direct, () => heard, heard);
  off();
});

Deno.test("onExternalChange() subscribed while the server is away listens once it answers", async () => {
  await using s = await setup();
  await s.proxy.down();
  let heard = 0;
  const off = s.listening.onExternalChange(() => heard++);
  await new Promise((resolve) => setTimeout(resolve, 500)); // the first LISTEN fails meanwhile
  s.proxy.up();
  await waitUntil("LISTEN in place", async () => {
    return (await listenSessions(s.direct, s.applicationName)).length === 1;
  }, { timeoutMs: BACK_WITHIN_MS });
  await heardAgain("an insert heard", s.direct, () => heard, heard);
  off();
});

Deno.test("reconnectBackoffS() retries a clean close at once, then 100 ms doubling to 5 s, jittered", () => {
  assert.equal(reconnectBackoffS(0), 0);
  for (let i = 0; i < 200; i++) {
    const first = reconnectBackoffS(1);
    assert.ok(first >= 0.05 && first <= 0.1, `retry 1: ${first}`);
    const fourth = reconnectBackoffS(4);
    assert.ok(fourth >= 0.4 && fourth <= 0.8, `retry 4: ${fourth}`);
    const late = reconnectBackoffS(40);
    assert.ok(late >= 2.5 && late <= 5, `retry 40: ${late}`);
  }
});
