/**
 * Maintenance leadership on every backend: the `leaders` row (one holder,
 * a renewal keeps the fence, a takeover raises it, racing takes have one
 * winner), the Leadership loop on a FakeClock (another node takes over
 * within one lease when the leader hangs or cannot reach the store, and at
 * its next try after a clean stop), and runtimes in `maintenance: "leader"`
 * sharing one database: only the leader stages, rescues, prunes and plans,
 * while every node beats and claims.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import type { PostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import type { LeaderState, Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { leaderMarginMs, Leadership } from "../../src/runtime/leadership.ts";
import type { Logger } from "../../src/kernel/logger.ts";
import { StoreHealth } from "../../src/runtime/store_health.ts";
import {
  type Backend,
  BACKENDS,
  type Harness,
  openPostgresHarness,
  POSTGRES_TEST_URL,
} from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";

const T0 = Date.UTC(2026, 0, 1);
const TTL = 3000;
const ROLE = "maintenance";

/** One test body, run on every backend of BACKENDS. */
function test(name: string, fn: (backend: Backend) => Promise<void>): void {
  for (const backend of BACKENDS) Deno.test(`[${backend.name}] ${name}`, () => fn(backend));
}

/** A harness of `backend` at T0, closed after `fn`. */
async function withHarness(backend: Backend, fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await backend.open(T0);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/**
 * `store` with every call counted by method; while `hang` is set its
 * leaderTake calls wait (a hung process) until `unhang()`, and while
 * `fail` is set they fail (the store is out of reach).
 */
function watched(store: Store) {
  const calls = new Map<string, number>();
  const hung: (() => void)[] = [];
  const w = {
    calls,
    hang: false,
    fail: false,
    /** Calls made and not settled yet, hung ones left out. */
    inflight: 0,
    count: (method: string) => calls.get(method) ?? 0,
    unhang: () => {
      w.hang = false;
      hung.splice(0).forEach((go) => go());
    },
    store: new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const method = String(prop);
          calls.set(method, (calls.get(method) ?? 0) + 1);
          if (method === "leaderTake" && w.fail) {
            return Promise.reject(new Error("connection refused"));
          }
          if (method === "leaderTake" && w.hang) {
            return new Promise<void>((go) => hung.push(go)).then(() => value.apply(target, args));
          }
          const result = value.apply(target, args);
          if (!(result instanceof Promise)) return result;
          w.inflight++;
          return result.finally(() => w.inflight--);
        };
      },
    }) as Store,
  };
  return w;
}

type Watched = ReturnType<typeof watched>;

/** A logger that keeps every event. */
function recorder(): { log: Logger; events: { event: string; fields: Record<string, unknown> }[] } {
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  return { log: (event, fields) => void events.push({ event, fields }), events };
}

/** A Leadership of `node` on `w`'s store, logging into `log`. */
function leadership(w: Watched, clock: FakeClock, node: string, log: Logger): Leadership {
  const health = new StoreHealth({ clock, logger: log });
  return new Leadership({ store: w.store, clock, logger: log, health }, { node, ttlMs: TTL });
}

/**
 * Advances the clock by `ms`, then waits until the loops it woke made their
 * calls and sleep again: `sleepers` pending sleeps, no call of `stores` in
 * flight.
 */
async function advance(clock: FakeClock, ms: number, sleepers: number, ...stores: Watched[]) {
  clock.advance(ms);
  await waitUntil(
    `${sleepers} loop(s) asleep again at +${clock.now() - T0} ms`,
    () => clock.sleepers === sleepers && stores.every((w) => w.inflight === 0),
    { intervalMs: 2 },
  );
}

// ------------------------------------------------------------------ the row

test("leaderTake() gives the role to one node; a renewal keeps the fence, a takeover raises it", async (backend) => {
  await withHarness(backend, async (h) => {
    const a = h.store;
    const b = await h.connect();
    const take = (store: Store, node: string, now: number) =>
      store.leaderTake({ name: ROLE, node, now, ttlMs: TTL });

    assert.deepEqual(await take(a, "a", T0), {
      held: true,
      node: "a",
      fence: 1,
      expiresAt: T0 + TTL,
    });
    assert.deepEqual(await take(b, "b", T0 + 1), {
      held: false,
      node: "a",
      fence: 1,
      expiresAt: T0 + TTL,
    });
    // A renewal before the expiry: same fence, later expiry.
    assert.deepEqual(await take(a, "a", T0 + 1000), {
      held: true,
      node: "a",
      fence: 1,
      expiresAt: T0 + 1000 + TTL,
    });
    // One ms before the renewed expiry the role is still a's.
    assert.equal((await take(b, "b", T0 + 1000 + TTL - 1)).held, false);
    // At the expiry b takes it over, with a higher fence.
    assert.deepEqual(await take(b, "b", T0 + 1000 + TTL), {
      held: true,
      node: "b",
      fence: 2,
      expiresAt: T0 + 1000 + 2 * TTL,
    });
    // a's late renewal (its clock still at its old expiry) changes nothing.
    assert.deepEqual(await take(a, "a", T0 + 1000 + TTL - 1), {
      held: false,
      node: "b",
      fence: 2,
      expiresAt: T0 + 1000 + 2 * TTL,
    });
    // A node taking its own expired row back starts a new term.
    const later = T0 + 1000 + 2 * TTL;
    assert.deepEqual(await take(b, "b", later), {
      held: true,
      node: "b",
      fence: 3,
      expiresAt: later + TTL,
    });
    // Another role is another row.
    const other = await b.leaderTake({ name: "other", node: "b", now: T0, ttlMs: TTL });
    assert.equal(other.held, true);
    assert.equal(other.fence, 1);
  });
});

test("leaderRelease() frees the role only for its holder's fence; the next take raises the fence", async (backend) => {
  await withHarness(backend, async (h) => {
    const a = h.store;
    const b = await h.connect();
    await a.leaderTake({ name: ROLE, node: "a", now: T0, ttlMs: TTL });
    assert.equal(await b.leaderRelease({ name: ROLE, node: "b", fence: 1 }), false);
    assert.equal(await a.leaderRelease({ name: ROLE, node: "a", fence: 2 }), false);
    assert.equal(
      (await b.leaderTake({ name: ROLE, node: "b", now: T0 + 1, ttlMs: TTL })).held,
      false,
      "a still holds it after the refused releases",
    );
    assert.equal(await a.leaderRelease({ name: ROLE, node: "a", fence: 1 }), true);
    assert.equal(await a.leaderRelease({ name: ROLE, node: "a", fence: 1 }), false);
    // Released long before its expiry: b takes it at once.
    assert.deepEqual(await b.leaderTake({ name: ROLE, node: "b", now: T0 + 2, ttlMs: TTL }), {
      held: true,
      node: "b",
      fence: 2,
      expiresAt: T0 + 2 + TTL,
    });
    assert.equal(await b.leaderRelease({ name: "nobody", node: "b", fence: 2 }), false);
  });
});

test("leaderTake() by two connections at the same instant: exactly one holds the role, 20 rounds", async (backend) => {
  await withHarness(backend, async (h) => {
    const a = h.store;
    const b = await h.connect();
    let fence = 0;
    for (let round = 0; round < 20; round++) {
      // Each round at the expiry of the last: the row is expired for both.
      const now = T0 + round * TTL;
      const [x, y] = await Promise.all([
        a.leaderTake({ name: ROLE, node: "a", now, ttlMs: TTL }),
        b.leaderTake({ name: ROLE, node: "b", now, ttlMs: TTL }),
      ]);
      assert.equal(Number(x.held) + Number(y.held), 1, `round ${round}: ${JSON.stringify([x, y])}`);
      const winner = x.held ? x : y;
      const loser = x.held ? y : x;
      fence++;
      assert.equal(winner.fence, fence, `round ${round}: one takeover, one fence more`);
      assert.deepEqual({ ...loser, held: true }, winner, "the loser sees the winner's row");
    }
  });
});

/**
 * How many sessions named `name` wait for a lock now, counted from a
 * transaction of `store`.
 */
async function waitingForLock(store: PostgresStore, name: string): Promise<number> {
  const [row] = await store.transaction((tx) =>
    tx.sql`SELECT count(*)::integer AS n FROM pg_stat_activity
      WHERE application_name = ${name} AND wait_event_type = 'Lock'`
  );
  return Number(row?.n ?? 0);
}

Deno.test("[postgres] two takes of an expired row queued on its row lock: the first takes it, the second sees it taken", async () => {
  const h = await openPostgresHarness(T0);
  const store = h.store as PostgresStore;
  const url = `${POSTGRES_TEST_URL}?schema=${store.schema}`;
  const name = `${store.schema}_racer`;
  const open = () => openPostgresStore(url, { migrate: false, max: 1, applicationName: name });
  const [a, b] = [await open(), await open()];
  try {
    await store.leaderTake({ name: ROLE, node: "old", now: T0, ttlMs: TTL });
    const now = T0 + TTL; // the row has just expired for both
    let racing!: Promise<[LeaderState, LeaderState]>;
    await store.transaction(async (tx) => {
      // The barrier: the row locked until both takes wait for it. Taking
      // with a SELECT and then an UPDATE would let both of them through.
      await tx.sql`SELECT * FROM leaders WHERE name = ${ROLE} FOR UPDATE`;
      racing = Promise.all([
        a.leaderTake({ name: ROLE, node: "a", now, ttlMs: TTL }),
        b.leaderTake({ name: ROLE, node: "b", now, ttlMs: TTL }),
      ]);
      await waitUntil(
        "both takes waiting on the row",
        async () => (await waitingForLock(store, name)) === 2,
      );
    });
    const [x, y] = await racing;
    assert.equal([x, y].filter((s) => s.held).length, 1, JSON.stringify([x, y]));
    const winner = x.held ? x : y;
    assert.equal(winner.fence, 2);
    assert.deepEqual({ ...(x.held ? y : x), held: true }, winner);
  } finally {
    await a.close();
    await b.close();
    await h.close();
  }
});

// ---------------------------------------------------------------- the loop

test("one leader at a time: renewals every third of the lease keep it and its fence", async (backend) => {
  await withHarness(backend, async (h) => {
    const clock = new FakeClock(T0);
    const log = recorder();
    const wa = watched(h.store);
    const wb = watched(await h.connect());
    const a = leadership(wa, clock, "a", log.log);
    const b = leadership(wb, clock, "b", log.log);
    const flips: string[] = [];
    b.onChange((leader) => flips.push(`b:${leader}`));
    await a.start();
    await b.start();
    assert.equal(a.isLeader, true);
    assert.equal(a.fence, 1);
    assert.equal(b.isLeader, false);
    assert.equal(b.holder, "a");
    for (let i = 1; i <= 9; i++) {
      await advance(clock, TTL / 3, 2, wa, wb);
      assert.deepEqual([a.isLeader, b.isLeader], [true, false], `at +${i * TTL / 3} ms`);
      assert.equal(a.fence, 1);
    }
    assert.equal(wa.count("leaderTake"), 10, "a renewed every third of the lease");
    assert.equal(wb.count("leaderTake"), 10);
    assert.deepEqual(flips, []);
    assert.deepEqual(log.events.map((e) => [e.event, e.fields.node, e.fields.fence]), [
      ["leader.acquired", "a", 1],
    ]);
    await a.stop();
    await b.stop();
  });
});

test("a leader that hangs stops a margin before its lease's expiry and is replaced at it, with a higher fence; its late renewal loses", async (backend) => {
  await withHarness(backend, async (h) => {
    const clock = new FakeClock(T0);
    const log = recorder();
    const wa = watched(h.store);
    const wb = watched(await h.connect());
    const a = leadership(wa, clock, "a", log.log);
    const b = leadership(wb, clock, "b", log.log);
    await a.start();
    await b.start();

    // a's last renewal was at T0: its lease ends at T0 + TTL, its hold a margin earlier.
    wa.hang = true;
    // a's hung renewal waits beside the timer of its loss.
    await advance(clock, TTL / 3, 2, wb);
    await advance(clock, TTL / 3, 2, wb);
    assert.equal(b.isLeader, false, "b waits for the lease a holds");
    assert.equal(a.isLeader, true, "a hangs inside its hold");
    await advance(clock, TTL / 3, 1, wb);
    assert.equal(clock.now(), T0 + TTL);
    assert.equal(b.isLeader, true, "b took over at the expiry, within one lease");
    assert.equal(b.fence, 2);
    assert.equal(a.isLeader, false, "a's own clock says its hold is over");

    // a wakes up: its renewal from before the takeover changes nothing.
    wa.unhang();
    await advance(clock, TTL / 3, 2, wa, wb);
    assert.deepEqual([a.isLeader, b.isLeader], [false, true]);
    assert.equal(b.fence, 2);
    assert.deepEqual(
      log.events.map((e) => [e.event, e.fields.node, e.fields.fence ?? e.fields.reason]),
      [
        ["leader.acquired", "a", 1],
        ["leader.lost", "a", "expired"],
        ["leader.acquired", "b", 2],
      ],
    );
    await a.stop();
    await b.stop();
  });
});

for (const mode of ["fails", "hangs"] as const) {
  test(`a leader whose renewal ${mode} stops being leader, and says so, strictly before anyone may take over`, async (backend) => {
    await withHarness(backend, async (h) => {
      const clock = new FakeClock(T0);
      const events: { event: string; at: number; fields: Record<string, unknown> }[] = [];
      const wa = watched(h.store);
      const a = leadership(wa, clock, "a", (event, fields) => {
        if (event.startsWith("leader.")) events.push({ event, at: clock.now(), fields });
      });
      const other = await h.connect();
      const take = (now: number) => other.leaderTake({ name: ROLE, node: "c", now, ttlMs: TTL });
      await a.start();
      if (mode === "fails") wa.fail = true;
      else wa.hang = true;
      // Either the loop (after a failed renewal) or the timer beside the hung one sleeps.
      await advance(clock, TTL / 3, 1, wa);
      await advance(clock, TTL / 3, 1, wa);
      const lossAt = T0 + TTL - leaderMarginMs(TTL);
      assert.ok(lossAt < T0 + TTL);
      await advance(clock, lossAt - 1 - clock.now(), 1, wa);
      assert.equal(a.isLeader, true, "a holds the role up to its margin");
      assert.deepEqual(events.map((e) => e.event), ["leader.acquired"]);
      await advance(clock, 1, mode === "fails" ? 1 : 0, wa);
      assert.equal(a.isLeader, false, `a still counts itself leader at +${clock.now() - T0} ms`);
      const lost = events.find((e) => e.event === "leader.lost");
      assert.deepEqual(lost && { at: lost.at, ...lost.fields }, {
        at: lossAt,
        name: ROLE,
        node: "a",
        reason: "expired",
        holder: null,
      });
      // Nobody may take the role until its expiry: a stopped before that.
      assert.equal((await take(lossAt)).held, false);
      assert.equal((await take(T0 + TTL - 1)).held, false);
      assert.equal((await take(T0 + TTL)).held, true);
      wa.unhang();
      await a.stop();
    });
  });
}

test("a leader that cannot reach the store stops being leader a margin before its expiry, and another takes over at it", async (backend) => {
  await withHarness(backend, async (h) => {
    const clock = new FakeClock(T0);
    const log = recorder();
    const wa = watched(h.store);
    const wb = watched(await h.connect());
    const a = leadership(wa, clock, "a", log.log);
    const b = leadership(wb, clock, "b", log.log);
    await a.start();
    await b.start();
    wa.fail = true;
    await advance(clock, TTL / 3, 2, wa, wb);
    await advance(clock, TTL / 3, 2, wa, wb);
    assert.equal(a.isLeader, true, "still inside the lease it wrote");
    await advance(clock, TTL / 3, 2, wa, wb);
    assert.deepEqual([a.isLeader, b.isLeader], [false, true]);
    const lost = log.events.find((e) => e.event === "leader.lost");
    assert.deepEqual(lost?.fields, { name: ROLE, node: "a", reason: "expired", holder: null });
    await a.stop();
    await b.stop();
  });
});

test("a clean stop releases the role: the follower takes it at its next try, long before the lease ran out", async (backend) => {
  await withHarness(backend, async (h) => {
    const clock = new FakeClock(T0);
    const log = recorder();
    const wa = watched(h.store);
    const wb = watched(await h.connect());
    const a = leadership(wa, clock, "a", log.log);
    const b = leadership(wb, clock, "b", log.log);
    await a.start();
    await b.start();
    await advance(clock, TTL / 3, 2, wa, wb); // a renews until T0 + TTL/3 + TTL
    await a.stop();
    assert.equal(a.isLeader, false);
    assert.equal(wa.count("leaderRelease"), 1);
    await advance(clock, TTL / 3, 1, wb);
    assert.equal(b.isLeader, true, "taken at +2/3 of a lease, not at a's expiry");
    assert.equal(b.fence, 2);
    assert.deepEqual(log.events.map((e) => [e.event, e.fields.node, e.fields.reason]), [
      ["leader.acquired", "a", undefined],
      ["leader.lost", "a", "released"],
      ["leader.acquired", "b", undefined],
    ]);
    await b.stop();
    // The last one out leaves the role free for whoever starts next.
    const next = await h.store.leaderTake({ name: ROLE, node: "c", now: clock.now(), ttlMs: TTL });
    assert.deepEqual([next.held, next.fence], [true, 3]);
  });
});

// ------------------------------------------------------------- the runtime

/** The store calls only the maintenance passes make. */
const MAINTENANCE_CALLS = [
  "jobsStage",
  "jobsRescue",
  "nodesExpire",
  "jobsPrune",
  "jobsPruneSchedule",
  "schedulePlan",
];

test("runtimes in leader mode: only the leader stages, rescues, prunes and plans; the other takes over at once after its stop", async (backend) => {
  await withHarness(backend, async (h) => {
    const clock = new FakeClock(T0);
    const log = recorder();
    const tick = defineWorker({ name: "tick", perform: () => {} });
    const every = scheduleOf({ id: "tick", every: "1s", queue: "default" });
    const wa = watched(h.store);
    const wb = watched(await h.connect());
    const start = (w: Watched, node: string) =>
      new Jobs({ store: w.store, workers: [tick], clock, logger: log.log }).start({
        queues: { default: 1 },
        node,
        maintenance: "leader",
        leaderTtlMs: TTL,
        schedules: () => [every],
        // Longer than the test runs: these two pass only when woken.
        rescueMs: 600_000,
        pruneMs: 600_000,
      });
    const a = await start(wa, "a");
    const b = await start(wb, "b");
    try {
      assert.equal(a.maintaining, true);
      assert.equal(b.maintaining, false);
      await waitUntil("a planned and ran occurrences", async () => {
        clock.advance(250);
        const done = await h.store.jobsList({ scheduleId: "tick", state: "completed" });
        return done.length >= 3;
      }, { intervalMs: 10 });
      assert.ok(wa.count("schedulePlan") > 0 && wa.count("jobsStage") > 0);
      for (const method of MAINTENANCE_CALLS) {
        assert.equal(wb.count(method), 0, `b called ${method} while a led`);
      }
      assert.ok(wb.count("nodeBeat") > 1, "b beats");
      assert.ok(wb.count("jobsClaim") > 0, "b claims");
      assert.ok(wb.count("leaderTake") > 1, "b keeps trying");

      await a.stop({ grace: 0 });
      const before = new Map(MAINTENANCE_CALLS.map((m) => [m, wb.count(m)]));
      await waitUntil("b leads", () => {
        if (b.maintaining) return true;
        clock.advance(250);
        return false;
      }, { intervalMs: 10 });
      // At once: the lifeline and the pruner are woken, not left to their 10 minutes.
      await waitUntil(
        "b's passes ran",
        () =>
          ["jobsStage", "jobsRescue", "nodesExpire", "jobsPrune", "schedulePlan"]
            .every((m) => wb.count(m) > before.get(m)!),
      );
      const acquired = log.events.filter((e) => e.event === "leader.acquired");
      assert.deepEqual(acquired.map((e) => [e.fields.node, e.fields.fence]), [["a", 1], ["b", 2]]);
      const [stopped] = log.events.filter((e) => e.event === "leader.lost");
      assert.deepEqual([stopped?.fields.node, stopped?.fields.reason], ["a", "released"]);

      // b plans on from where a stopped: each occurrence once.
      const planned = clock.now();
      await waitUntil("b planned on", async () => {
        clock.advance(250);
        const jobs = await h.store.jobsList({ scheduleId: "tick" });
        return jobs.some((j) => j.scheduledAt >= planned + 2000);
      }, { intervalMs: 10 });
      const jobs = await h.store.jobsList({ scheduleId: "tick" });
      const occurrences = jobs.map((j) => j.occurrence);
      assert.equal(new Set(occurrences).size, occurrences.length);
      const instants = jobs.map((j) => j.scheduledFor!).sort((x, y) => x - y);
      for (let i = 1; i < instants.length; i++) {
        assert.equal(instants[i]! - instants[i - 1]!, 1000, "no occurrence skipped");
      }
    } finally {
      await a.stop({ grace: 0 });
      await b.stop({ grace: 0 });
    }
  });
});

Deno.test("[sqlite] the default runtime maintains on every node, without a leaders row", async () => {
  await withHarness(BACKENDS[0]!, async (h) => {
    const clock = new FakeClock(T0);
    const wa = watched(h.store);
    const wb = watched(await h.connect());
    const start = (w: Watched, node: string) =>
      new Jobs({ store: w.store, clock, logger: () => {} }).start({ queues: { default: 1 }, node });
    const a = await start(wa, "a");
    const b = await start(wb, "b");
    try {
      assert.equal(a.leadership, null);
      assert.deepEqual([a.maintaining, b.maintaining], [true, true]);
      await waitUntil("both stage", () => {
        clock.advance(250);
        return wa.count("jobsStage") > 0 && wb.count("jobsStage") > 0;
      }, { intervalMs: 10 });
      assert.equal(wa.count("leaderTake") + wb.count("leaderTake"), 0);
    } finally {
      await a.stop({ grace: 0 });
      await b.stop({ grace: 0 });
    }
  });
});

Deno.test("a runtime refuses an unknown maintenance mode and a lease too short to renew", async () => {
  const jobs = new Jobs({ store: {} as Store, clock: new FakeClock(T0), logger: () => {} });
  await assert.rejects(
    // deno-lint-ignore no-explicit-any
    jobs.start({ queues: { default: 1 }, node: "n", maintenance: "sometimes" as any }),
    /maintenance must be "everywhere" or "leader", got "sometimes"/,
  );
  await assert.rejects(
    jobs.start({ queues: { default: 1 }, node: "n", maintenance: "leader", leaderTtlMs: 2 }),
    /leaderTtlMs must be an integer >= 3, got 2/,
  );
});
