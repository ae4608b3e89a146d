/**
 * What only the PostgreSQL store has: its location and schema, migrations
 * under an advisory lock, LISTEN/NOTIFY wake-ups, the caller's own rows in
 * a store transaction, and races between connections decided by row locks.
 * The race tests hold a lock in one connection's open transaction, wait
 * (with a deadline, never a sleep) until the other connection's statement
 * is seen waiting for it or past it in `pg_stat_activity`, then let go: each
 * fails if the store's statement does not lock, wait or skip as it must.
 *
 * Every test works in a schema of its own (`jobs_test_<random>`) and drops
 * it. PostgreSQL must be running: an unreachable server fails these tests.
 */

import assert from "node:assert/strict";
import { createConnection } from "node:net";
import type { NewJob, PlanContext } from "../../src/kernel/types.ts";
import {
  isLostSessionStray,
  openPostgresStore,
  PostgresStore,
  redactLocation,
} from "../../src/store/postgres/postgres_store.ts";
import { KNOWN_VERSION } from "../../src/store/postgres/migrations.ts";
import { StoreLockedError, StoreOpenError } from "../../src/store/errors.ts";
import { SchemaTooNewError } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import {
  dropTestSchema,
  type Harness,
  newJob,
  openPostgresHarness,
  POSTGRES_TEST_URL,
  testSchema,
} from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

/** A fresh schema's URL, and a cleanup that drops it. */
function freshSchema(): { url: string; schema: string; drop(): Promise<void> } {
  const schema = testSchema();
  const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
  return {
    url,
    schema,
    drop: () => dropTestSchema(schema),
  };
}

/**
 * How many sessions named `name` are waiting for a lock now, counted from a
 * transaction of `store` (any connection of the same database).
 */
async function waitingForLock(store: PostgresStore, name: string): Promise<number> {
  const [row] = await store.transaction((tx) =>
    tx.sql`SELECT count(*)::integer AS n FROM pg_stat_activity
      WHERE application_name = ${name} AND wait_event_type = 'Lock'`
  );
  return Number(row?.n ?? 0);
}

/** `promise`, or a failure naming `what` after `ms` of real time (a wait that never ends). */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function occurrence(id: string, at: number): NewJob {
  return newJob({
    scheduledAt: at,
    occurrence: `${id}@${new Date(at).toISOString()}`,
    scheduleId: id,
    scheduledFor: at,
  });
}

Deno.test("location drops the password and kind is postgres", async () => {
  const url = "postgres://app:s3cret@127.0.0.1:5432/test?schema=jobs_a";
  const store = new PostgresStore(url);
  try {
    assert.equal(store.kind, "postgres");
    assert.equal(store.location, "postgres://app@127.0.0.1:5432/test?schema=jobs_a");
    assert.equal(store.schema, "jobs_a");
    assert.ok(!redactLocation("postgresql://u:pw@h/db").includes("pw"));
  } finally {
    await store.close();
  }
});

Deno.test("a schema name that is not a plain lowercase identifier is refused, naming it", () => {
  assert.throws(
    () => new PostgresStore(`${POSTGRES_TEST_URL}?schema=Jobs;DROP`),
    (error: unknown) => error instanceof StoreOpenError && error.message.includes(`"Jobs;DROP"`),
  );
});

Deno.test("an unreachable server is a StoreOpenError without the password", async () => {
  await assert.rejects(
    openPostgresStore("postgres://app:s3cret@127.0.0.1:1/test", { connectTimeoutS: 2 }),
    (error: unknown) =>
      error instanceof StoreOpenError && !error.message.includes("s3cret") &&
      error.message.includes("postgres://app@127.0.0.1:1/test"),
  );
});

Deno.test("opening creates the missing schema, and migrate() again applies nothing", async () => {
  const fresh = freshSchema();
  try {
    const store = await openPostgresStore(fresh.url, { now: T0 });
    try {
      assert.equal(await store.schemaVersion(), KNOWN_VERSION);
      assert.deepEqual(await store.migrate({ now: T0 + 1 }), {
        applied: [],
        version: KNOWN_VERSION,
      });
      const [row] = await store.transaction((tx) =>
        tx.sql`SELECT count(*)::integer AS n, min(applied_at) AS at FROM schema_migrations`
      );
      assert.equal(row?.n, KNOWN_VERSION);
      assert.equal(Number(row?.at), T0);
    } finally {
      await store.close();
    }
  } finally {
    await fresh.drop();
  }
});

Deno.test("two stores migrating one new schema at once apply each migration once", async () => {
  const fresh = freshSchema();
  const a = await openPostgresStore(fresh.url, { migrate: false, max: 1 });
  const b = await openPostgresStore(fresh.url, { migrate: false, max: 1 });
  try {
    const reports = await Promise.all([a.migrate({ now: T0 }), b.migrate({ now: T0 })]);
    assert.deepEqual(
      reports.flatMap((r) => r.applied).sort((x, y) => x - y),
      Array.from({ length: KNOWN_VERSION }, (_, i) => i + 1),
    );
    assert.deepEqual(reports.map((r) => r.version), [KNOWN_VERSION, KNOWN_VERSION]);
  } finally {
    await a.close();
    await b.close();
    await fresh.drop();
  }
});

Deno.test("a schema newer than this program is refused with SchemaTooNewError, untouched", async () => {
  const fresh = freshSchema();
  try {
    const store = await openPostgresStore(fresh.url, { now: T0 });
    await store.transaction((tx) =>
      tx.sql`INSERT INTO schema_migrations (version, name, applied_at)
        VALUES (${KNOWN_VERSION + 1}, 'from the future', 0)`
    );
    await store.close();
    await assert.rejects(
      openPostgresStore(fresh.url, { now: T0 }),
      (error: unknown) =>
        error instanceof SchemaTooNewError && error.found === KNOWN_VERSION + 1 &&
        error.known === KNOWN_VERSION,
    );
    const look = await openPostgresStore(fresh.url, { migrate: false, readOnly: true });
    try {
      assert.equal(await look.schemaVersion(), KNOWN_VERSION + 1);
      await assert.rejects(look.nodeBeat({ node: "n", queues: {}, now: T0 }), /read-only/);
    } finally {
      await look.close();
    }
  } finally {
    await fresh.drop();
  }
});

Deno.test("transaction() commits the caller's rows with the job and rolls both back", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  try {
    await store.transaction((tx) => tx.sql`CREATE TABLE orders (id integer PRIMARY KEY)`);
    const [kept] = await store.transaction(async (tx) => {
      await tx.sql`INSERT INTO orders (id) VALUES (1)`;
      return await tx.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 });
    });
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.sql`INSERT INTO orders (id) VALUES (2)`;
        await tx.jobsInsert({ jobs: [newJob({ scheduledAt: T0, worker: "lost" })], now: T0 });
        throw new Error("the order failed");
      }),
      /the order failed/,
    );
    const orders = await store.transaction((tx) => tx.sql`SELECT id FROM orders ORDER BY id`);
    assert.deepEqual(orders.map((r) => r.id), [1]);
    assert.deepEqual((await store.jobsList({})).map((j) => j.id), [kept!.id]);
  } finally {
    await h.close();
  }
});

Deno.test("onExternalChange() wakes a listener when another connection inserts", async () => {
  const h = await openPostgresHarness(T0);
  try {
    const other = await h.connect();
    let wakes = 0;
    const off = h.store.onExternalChange(() => wakes++);
    try {
      // LISTEN takes effect asynchronously: insert until one wake arrives.
      await waitUntil("a NOTIFY from the other connection", async () => {
        await other.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 });
        return wakes > 0;
      }, { intervalMs: 20 });
    } finally {
      off();
    }
  } finally {
    await h.close();
  }
});

Deno.test("an occurrence inserted on two connections at once: the second waits, then finds it", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  const name = `${store.schema}_b`;
  const b = await openPostgresStore(`${POSTGRES_TEST_URL}?schema=${store.schema}`, {
    migrate: false,
    applicationName: name,
  });
  try {
    const job = occurrence("s", T0);
    let racing!: Promise<Awaited<ReturnType<typeof b.jobsInsert>>>;
    const [mine] = await store.transaction(async (tx) => {
      const inserted = await tx.jobsInsert({ jobs: [job], now: T0 });
      // The barrier: b's insert of the same identity must wait for this
      // transaction (the unique index), neither inserting nor failing.
      racing = b.jobsInsert({ jobs: [job], now: T0 });
      await waitUntil(
        "b waiting on the uncommitted occurrence",
        async () => (await waitingForLock(store, name)) === 1,
      );
      return inserted;
    });
    const [theirs] = await racing;
    assert.equal(mine?.duplicate, false);
    assert.deepEqual(theirs, { ...mine!, duplicate: true });
    assert.equal((await store.jobsList({})).length, 1);

    // Rolled back, the waiting insert goes in after all.
    const second = occurrence("s", T0 + MINUTE);
    let after!: ReturnType<typeof b.jobsInsert>;
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.jobsInsert({ jobs: [second], now: T0 });
        after = b.jobsInsert({ jobs: [second], now: T0 });
        await waitUntil("b waiting again", async () => (await waitingForLock(store, name)) === 1);
        throw new Error("rolled back");
      }),
      /rolled back/,
    );
    const [fresh] = await after;
    assert.equal(fresh?.duplicate, false);
    assert.equal((await store.jobGet({ id: fresh!.id }))?.occurrence, second.occurrence);
  } finally {
    await b.close();
    await h.close();
  }
});

Deno.test("schedulePlan() waits for the schedule's row lock and plans from what was committed", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  const name = `${store.schema}_b`;
  const b = await openPostgresStore(`${POSTGRES_TEST_URL}?schema=${store.schema}`, {
    migrate: false,
    applicationName: name,
  });
  try {
    await store.schedulesSync({ schedules: [{ id: "s", hash: "h", tenant: null }], now: T0 });
    const seen: PlanContext[] = [];
    let planning!: ReturnType<typeof b.schedulePlan>;
    await store.transaction(async (tx) => {
      // Another planner, mid-decision: it holds the row and moves the
      // recovery point. b must not decide until it commits.
      await tx.sql`SELECT 1 FROM schedules WHERE id = 's' FOR UPDATE`;
      planning = b.schedulePlan({
        id: "s",
        now: T0 + MINUTE,
        plan: (ctx) => {
          seen.push(ctx);
          return {
            jobs: [],
            cancelled: [],
            misfires: 0,
            lastMisfireFor: null,
            plannedFor: null,
          };
        },
      });
      await waitUntil(
        "b waiting for the schedule's row",
        async () => (await waitingForLock(store, name)) === 1,
      );
      assert.deepEqual(seen, [], "b planned while the row was locked");
      await tx.sql`UPDATE schedules SET last_planned_for = ${T0 + MINUTE}::bigint
        WHERE id = 's'`;
    });
    await planning;
    assert.deepEqual(seen.map((ctx) => ctx.lastPlannedFor), [T0 + MINUTE]);
  } finally {
    await b.close();
    await h.close();
  }
});

Deno.test("a write blocked by another session's LOCK TABLE fails after lockTimeoutMs as the store being locked", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  const name = `${store.schema}_locked`;
  const b = await openPostgresStore(`${POSTGRES_TEST_URL}?schema=${store.schema}`, {
    migrate: false,
    applicationName: name,
    lockTimeoutMs: 200,
  });
  try {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = store.transaction(async (tx) => {
      await tx.sql`LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE`;
      locked();
      await released;
    });
    try {
      await isLocked;
      // Without a bound the insert would wait for as long as the lock is
      // held; the deadline only turns that wait into a failure saying so.
      const error = await within(
        20_000,
        "the blocked insert to fail",
        b.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 }).then(
          () => new Error("the insert went through a held lock"),
          (e: unknown) => e,
        ),
      );
      assert.ok(error instanceof StoreLockedError, String(error));
      assert.equal(error.waitedMs, 200);
      assert.equal(error.location, b.location);
      assert.match(
        error.message,
        /^the store is locked: a statement waited 200 ms for a lock another session holds/,
      );
      assert.equal((error.cause as { code?: string }).code, "55P03");
      // A claim (a write inside a transaction) fails the same way.
      await assert.rejects(
        within(
          20_000,
          "the blocked claim to fail",
          b.jobsClaim({
            queue: "default",
            node: "n",
            limit: 1,
            now: T0,
            leaseMs: MINUTE,
            results: [],
          }),
        ),
        StoreLockedError,
      );
    } finally {
      release();
      await holding;
    }
    // The bound is on waiting for locks, not on running: a long statement runs on.
    await b.transaction((tx) => tx.sql`SELECT pg_sleep(0.5)`);
    assert.equal((await b.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 })).length, 1);
  } finally {
    await b.close();
    await h.close();
  }
});

Deno.test("jobsClaim() skips rows another transaction has locked instead of waiting", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  try {
    const other = await h.connect();
    const ids = (await store.jobsInsert({
      jobs: Array.from({ length: 4 }, () => newJob({ scheduledAt: T0 })),
      now: T0,
    })).map((r) => r.id);
    const claimed = await store.transaction(async (tx) => {
      // A claimer mid-claim holds the first two rows.
      await tx.sql`SELECT id FROM jobs WHERE id = ANY(${ids.slice(0, 2)}::bigint[]) FOR UPDATE`;
      const { jobs } = await within(
        10_000,
        "the claim waited for the locked rows",
        other.jobsClaim({ queue: "default", node: "node-b", limit: 4, now: T0, leaseMs: MINUTE }),
      );
      return jobs.map((j) => j.id);
    });
    assert.deepEqual(claimed, ids.slice(2));
    const { jobs } = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit: 4,
      now: T0,
      leaseMs: MINUTE,
    });
    assert.deepEqual(jobs.map((j) => j.id), ids.slice(0, 2));
  } finally {
    await h.close();
  }
});

Deno.test("schedulePlan() of an occurrence a claimer holds does not wait for the claimer", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  try {
    const other = await h.connect();
    await store.schedulesSync({ schedules: [{ id: "s", hash: "h", tenant: null }], now: T0 });
    const job = occurrence("s", T0);
    const [first] = await store.jobsInsert({ jobs: [job], now: T0 });
    const plan = () => ({
      jobs: [job],
      cancelled: [],
      misfires: 0,
      lastMisfireFor: null,
      plannedFor: T0,
    });
    const planned = await store.transaction(async (tx) => {
      // A claimer mid-claim: it has moved the occurrence's row and would
      // next lock the schedule's row, which a waiting planner would hold.
      await tx.sql`UPDATE jobs SET state = 'executing', fence = fence + 1
        WHERE id = ${first!.id}::bigint`;
      return await within(
        10_000,
        "the planner waited for the claimer's row",
        other.schedulePlan({ id: "s", now: T0, plan }),
      );
    });
    assert.deepEqual(planned.inserted, [{ ...first!, duplicate: true }]);
    assert.equal((await store.jobsList({})).length, 1);
  } finally {
    await h.close();
  }
});

/**
 * A store of one connection on the schema of `h`, whose sessions are named
 * so a test can terminate them, and `terminate()`, which ends its session
 * while it runs a statement (retrying until one runs).
 */
async function victimOf(h: Harness, schema: string, connectTimeoutS = 10, closeTimeoutS = 5) {
  const name = `victim ${schema}`;
  const victim = await openPostgresStore(`${POSTGRES_TEST_URL}?schema=${schema}`, {
    migrate: false,
    max: 1,
    applicationName: name,
    connectTimeoutS,
    closeTimeoutS,
  });
  const admin = h.store as PostgresStore;
  const terminate = () =>
    waitUntil("a statement of the victim runs, and its session is terminated", async () => {
      const [killed] = await admin.transaction((tx) =>
        tx.sql`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE application_name = ${name} AND state = 'active'`
      );
      return Number(killed!.n) === 1;
    });
  return { victim, terminate };
}

Deno.test("a session terminated inside a transaction: the next statements reconnect at once", async () => {
  const h = await openPostgresHarness(0);
  try {
    const schema = (h.store as PostgresStore).schema;
    // postgres.js 3.4.9 as released kept the rollback it had queued for the
    // dead session and never sent the next session's startup message: every
    // statement then waited out the connect timeout (here 30 s) and failed.
    const { victim, terminate } = await victimOf(h, schema, 30);
    try {
      for (let round = 1; round <= 3; round++) {
        const running = victim.transaction((tx) => tx.sql`SELECT pg_sleep(30)`);
        await terminate();
        await assert.rejects(running);
        const seen: string[] = [];
        const jobs = await waitUntil(`round ${round}: the store answers again`, async () => {
          try {
            return await victim.jobsList({});
          } catch (error) {
            seen.push((error as { code?: string }).code ?? String(error));
            return null;
          }
        }, { timeoutMs: 5_000 });
        assert.deepEqual(jobs, []);
        assert.ok(!seen.includes("CONNECT_TIMEOUT"), `round ${round}: ${seen.join(", ")}`);
      }
    } finally {
      await victim.close();
    }
  } finally {
    await h.close();
  }
});

Deno.test("close() after a session ended mid-statement does not wait out the close timeout", async () => {
  const h = await openPostgresHarness(0);
  try {
    const schema = (h.store as PostgresStore).schema;
    // postgres.js 3.4.9 kept the statement of a session that ended under it
    // as still running, so ending the pool waited for it until the close
    // timeout (5 s: a daemon's stop after a server restart); here 60 s.
    const { victim, terminate } = await victimOf(h, schema, 10, 60);
    const running = victim.transaction((tx) => tx.sql`SELECT pg_sleep(30)`);
    await terminate();
    await assert.rejects(running, /terminat|CONNECTION_CLOSED/);
    await within(
      20_000,
      "close() with nothing running (it waited for its timeout)",
      victim.close(),
    );
  } finally {
    await h.close();
  }
});

Deno.test("a lost session's stray rejection does not end the process; any other error still would", async () => {
  const h = await openPostgresHarness(0);
  try {
    const { victim, terminate } = await victimOf(h, (h.store as PostgresStore).schema);
    try {
      // A statement whose session is terminated under it: the error postgres.js makes for it.
      const running = victim.transaction((tx) => tx.sql`SELECT pg_sleep(30)`);
      await terminate();
      const lost = await running.then(() => null, (error: Error) => error);
      assert.ok(lost instanceof Error, "the statement failed");
      assert.equal(
        isLostSessionStray(lost),
        true,
        `${lost.name} ${(lost as { code?: string }).code}`,
      );
      const syntax = await (h.store as PostgresStore).transaction((tx) => tx.sql`SELEC 1`)
        .then(() => null, (error: Error) => error);
      assert.ok(syntax instanceof Error);
      assert.equal(isLostSessionStray(syntax), false, "a SQL error is no stray");
      assert.equal(isLostSessionStray(new TypeError("x")), false);
      // The socket's own error for a connect the server refused, as the
      // driver rejects a reserved connection's waiter with it: a stray too.
      const refused = await new Promise<Error>((resolve) => {
        const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const port = closed.addr.port;
        closed.close();
        createConnection({ host: "127.0.0.1", port }).on("error", resolve);
      });
      assert.match(refused.message, /ECONNREFUSED/);
      assert.equal(isLostSessionStray(refused), true, refused.stack);
      const ours = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
        code: "ECONNREFUSED",
      });
      assert.equal(isLostSessionStray(ours), false, "one with a frame of ours is not the driver's");

      // Unhandled, as postgres.js leaves one when nobody awaits its own
      // promise: without the store's guard this fails the test as uncaught.
      Promise.reject(lost);
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      await victim.close();
    }
  } finally {
    await h.close();
  }
});

Deno.test("a limited claim whose cursor write fails commits nothing and says why", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  try {
    await store.jobsInsert({
      jobs: [newJob({ tenant: "t0", scheduledAt: T0 }), newJob({ tenant: "t1", scheduledAt: T0 })],
      now: T0,
    });
    const claim = () =>
      store.jobsClaim({
        queue: "default",
        node: "a",
        limit: 2,
        now: T0,
        leaseMs: MINUTE,
        flow: { partition: { by: { kind: "tenant" }, limit: 1 } },
      });
    // The round robin's cursor is written before the take, in the same
    // transaction: without its table, that write fails, and so must the claim.
    await store.transaction((tx) => tx.sql`ALTER TABLE flow_cursors RENAME TO flow_cursors_gone`);
    await assert.rejects(claim(), /flow_cursors/);
    const counts = await store.jobsCount({ queue: "default" });
    assert.deepEqual(counts.map((c) => [c.state, c.count]), [["available", 2]]);
    await store.transaction((tx) => tx.sql`ALTER TABLE flow_cursors_gone RENAME TO flow_cursors`);
    const { jobs } = await claim();
    assert.equal(jobs.length, 2);
    assert.deepEqual(
      (await store.jobsCount({ queue: "default" })).map((c) => [c.state, c.count]),
      [["executing", 2]],
    );
  } finally {
    await h.close();
  }
});
