/**
 * `/metrics` fed by a running runtime, wired as the daemon wires it: the
 * runtime's events pass through a MetricsRegistry, and the page shows what
 * happened (completions, failures, durations, outcomes, store health,
 * planner lag, leadership) next to what the store holds, as valid Prometheus text with
 * no args or error text in it.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { degradedReason, snapshotOf } from "../../src/cli/daemon.ts";
import { MetricsRegistry, renderMetrics } from "../../src/http/metrics.ts";
import { startHttpServer } from "../../src/http/server.ts";
import { Jobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { newJob } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";
import { tempStore } from "../support/stores.ts";
import { parseProm, value } from "./prom.ts";

Deno.test("/metrics after running jobs shows their completions, failures, durations and outcomes", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  const registry = new MetricsRegistry();
  const ok = defineWorker({ name: "ok", perform: () => {} });
  const boom = defineWorker({
    name: "boom",
    maxAttempts: 2,
    perform: () => {
      throw new Error("kaboom with token=hunter2");
    },
  });
  const jobs = new Jobs({
    store: t.store,
    workers: [ok, boom],
    clock,
    logger: registry.tap(silentLogger),
  });
  try {
    const runtime = await jobs.start({ queues: { default: 2 }, node: "n1" });
    const done = await jobs.enqueueMany([1, 2, 3].map(() => ({ worker: ok, args: { n: 1 } })));
    const failing = await jobs.enqueue(boom, { secret: "args-never-shown" });
    await waitUntil("the jobs ran", async () => {
      const counts = await t.store.jobsCount({});
      return counts.find((c) => c.state === "completed")?.count === 3 &&
        counts.find((c) => c.state === "retryable")?.count === 1;
    });
    // The retry comes due: its second and last attempt discards it.
    await waitUntil("the failing job was discarded", async () => {
      clock.advance(60_000);
      return (await t.store.jobGet({ id: failing.id }))?.state === "discarded";
    });

    const server = await startHttpServer({
      store: t.store,
      listen: "127.0.0.1:0",
      logger: silentLogger,
      clock,
      metrics: () => snapshotOf(registry, runtime, clock.now()),
      degraded: () => degradedReason(runtime),
    });
    try {
      const response = await fetch(`http://127.0.0.1:${server.addr!.port}/metrics`);
      const page = await response.text();
      assert.equal(response.status, 200);
      const samples = parseProm(page);
      const okLabels = { queue: "default", worker: "ok" };
      const boomLabels = { queue: "default", worker: "boom" };
      assert.equal(value(samples, "jobs_completions_total", okLabels), 3);
      assert.equal(value(samples, "jobs_completions_total", boomLabels), undefined);
      assert.equal(value(samples, "jobs_failures_total", boomLabels), 2);
      assert.equal(value(samples, "jobs_attempt_duration_seconds_count", okLabels), 3);
      assert.equal(
        value(samples, "jobs_attempt_duration_seconds_bucket", { ...okLabels, le: "+Inf" }),
        3,
      );
      const sum = value(samples, "jobs_attempt_duration_seconds_sum", okLabels)!;
      assert.ok(sum >= 0 && Number.isFinite(sum));
      const outcome = (o: string) =>
        value(samples, "jobs_attempts_total", { queue: "default", outcome: o });
      assert.equal(outcome("completed"), 3);
      assert.equal(outcome("retryable"), 1);
      assert.equal(outcome("discarded"), 1);
      assert.equal(value(samples, "jobs_jobs", { queue: "default", state: "completed" }), 3);
      assert.equal(value(samples, "jobs_jobs", { queue: "default", state: "discarded" }), 1);
      assert.equal(value(samples, "jobs_store_degraded", {}), 0);
      assert.equal(value(samples, "jobs_results_unrecorded", {}), 0);
      assert.equal(value(samples, "jobs_planner_lag_seconds", {}), 0);
      for (const secret of ["kaboom", "hunter2", "args-never-shown"]) {
        assert.ok(!page.includes(secret), `${secret} is not on the page`);
      }
      assert.equal(done.length, 3);
    } finally {
      await server.close();
    }
  } finally {
    await jobs.close({ grace: 0 });
  }
});

Deno.test("/metrics and /readyz show a failing store: errors by step, degraded, planner lag", async () => {
  await using t = await tempStore();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const registry = new MetricsRegistry();
  const jobs = new Jobs({ store: t.store, clock, logger: registry.tap(silentLogger) });
  const every = scheduleOf({ id: "tick", every: "1s", queue: "default" });
  try {
    const runtime = await jobs.start({
      queues: { default: 1 },
      node: "n1",
      schedules: () => [every],
    });
    await waitUntil("the planner planned", async () => {
      clock.advance(100);
      return (await t.store.jobsList({ scheduleId: "tick" })).length > 0;
    });
    assert.ok(runtime.plannerLagMs(clock.now()) < 1000);

    // The planner's writes fail from now on, as on a read-only file.
    const plan = t.store.schedulePlan.bind(t.store);
    let refuse = true;
    t.store.schedulePlan = (params) =>
      refuse ? Promise.reject(new Error("attempt to write a readonly database")) : plan(params);
    const from = clock.now();
    await waitUntil("ten seconds of failing planner passes", () => {
      clock.advance(250);
      return clock.now() - from >= 10_000 && runtime.health.degraded;
    });
    const page = await renderMetrics(t.store, snapshotOf(registry, runtime, clock.now()));
    const samples = parseProm(page);
    assert.equal(value(samples, "jobs_store_degraded", {}), 1);
    assert.ok(value(samples, "jobs_store_errors_total", { source: "planner" })! >= 5);
    assert.ok(value(samples, "jobs_planner_lag_seconds", {})! >= 9, page);
    assert.match(
      degradedReason(runtime) ?? "",
      /^store calls failing since 2026-01-01T\S+ \(planner: attempt to write a readonly database\)$/,
    );

    refuse = false;
    await waitUntil("the planner caught up", () => {
      clock.advance(250);
      return !runtime.health.degraded && runtime.plannerLagMs(clock.now()) < 1000;
    });
    assert.equal(degradedReason(runtime), null);
  } finally {
    await jobs.close({ grace: 0 });
  }
});

Deno.test("/metrics shows jobs_leader 1 on the node holding the maintenance role, 0 on the others", async () => {
  await using t = await tempStore();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const other = await openSqliteStore(t.path);
  const registry = new MetricsRegistry();
  const open = (store: typeof t.store) => new Jobs({ store, clock, logger: silentLogger });
  const [first, second, plain] = [open(t.store), open(other), open(await openSqliteStore(t.path))];
  try {
    const lead = { queues: { default: 1 }, maintenance: "leader" } as const;
    const a = await first.start({ ...lead, node: "a" });
    const b = await second.start({ ...lead, node: "b" });
    const c = await plain.start({ queues: { default: 1 }, node: "c" });
    const leader = async (runtime: typeof a) => {
      const page = await renderMetrics(t.store, snapshotOf(registry, runtime, clock.now()));
      return value(parseProm(page), "jobs_leader", { node: runtime.node });
    };
    assert.deepEqual([await leader(a), await leader(b)], [1, 0]);
    assert.equal(await leader(c), 1, "without leadership every node maintains");

    await a.stop({ grace: 0 });
    await waitUntil("b leads", async () => {
      clock.advance(1000);
      return (await leader(b)) === 1;
    });
    assert.equal(await leader(a), 0);
  } finally {
    await first.close({ grace: 0 });
    await second.close({ grace: 0 });
    await plain.close({ grace: 0 });
  }
});

Deno.test("/metrics shows each schedule's last success and failures in a row, each queue's oldest wait, and a declared empty queue", async () => {
  await using t = await tempStore();
  const now = Date.UTC(2026, 5, 10, 9);
  const clock = new FakeClock(now);
  const store = t.store;
  await store.schedulesSync({
    schedules: ["hello", "fresh"].map((id) => ({ id, hash: "h", tenant: null })),
    now: now - 10 * 60_000,
  });
  // hello: one occurrence completed, then three discarded.
  const outcomes = ["completed", "discarded", "discarded", "discarded"] as const;
  for (const [i, outcome] of outcomes.entries()) {
    const at = now - (10 - i) * 60_000;
    await store.jobsInsert({
      now: at,
      jobs: [newJob({
        queue: "sched",
        scheduledAt: at,
        maxAttempts: 1,
        scheduleId: "hello",
        occurrence: `hello@${new Date(at).toISOString()}`,
        scheduledFor: at,
      })],
    });
    const [job] =
      (await store.jobsClaim({ queue: "sched", node: "n1", limit: 1, now: at, leaseMs: 60_000 }))
        .jobs;
    const base = {
      id: job!.id,
      fence: job!.fence,
      attempt: job!.attempt,
      startedAt: at,
      occurrence: job!.occurrence,
    };
    await store.jobsRecord({
      node: "n1",
      now: at + 5000,
      results: [
        outcome === "completed" ? { ...base, outcome } : { ...base, outcome, error: "exit 1" },
      ],
    });
  }
  // mail: the oldest of two available jobs has waited 90 s (the newer one's priority is higher).
  await store.jobsInsert({
    now,
    jobs: [
      newJob({ queue: "mail", scheduledAt: now - 90_000, priority: 5 }),
      newJob({ queue: "mail", scheduledAt: now - 30_000, priority: 0 }),
    ],
  });

  const server = await startHttpServer({
    store,
    listen: "127.0.0.1:0",
    logger: silentLogger,
    clock,
    queues: () => ["mail", "empty"],
  });
  try {
    const page = await (await fetch(`http://127.0.0.1:${server.addr!.port}/metrics`)).text();
    const samples = parseProm(page);
    assert.equal(
      value(samples, "jobs_schedule_last_success_timestamp_seconds", { schedule: "hello" }),
      (now - 10 * 60_000 + 5000) / 1000,
    );
    assert.equal(
      value(samples, "jobs_schedule_last_success_timestamp_seconds", { schedule: "fresh" }),
      undefined,
      "no success yet: no sample",
    );
    assert.equal(value(samples, "jobs_schedule_consecutive_failures", { schedule: "hello" }), 3);
    assert.equal(value(samples, "jobs_schedule_consecutive_failures", { schedule: "fresh" }), 0);
    assert.equal(value(samples, "jobs_queue_oldest_available_seconds", { queue: "mail" }), 90);
    assert.equal(value(samples, "jobs_queue_oldest_available_seconds", { queue: "sched" }), 0);
    assert.equal(value(samples, "jobs_queue_oldest_available_seconds", { queue: "empty" }), 0);
    for (const state of ["available", "executing", "completed", "discarded"]) {
      assert.equal(value(samples, "jobs_jobs", { queue: "empty", state }), 0, `empty/${state}`);
    }
    assert.equal(value(samples, "jobs_jobs", { queue: "mail", state: "available" }), 2);
  } finally {
    await server.close();
  }
});

Deno.test("jobs_leases_lost_total counts the leases a node stopped because it could not renew them", () => {
  const registry = new MetricsRegistry();
  registry.record("job.lease_lost", { queue: "payments", job: 1, node: "n1" });
  registry.record("job.lease_expired", { queue: "payments", job: 2, node: "n1" });
  registry.record("job.lease_expired", { queue: "default", job: 3, node: "n1" });
  assert.deepEqual(
    registry.snapshot().leasesLost?.sort((a, b) => a.queue.localeCompare(b.queue)),
    [{ queue: "default", value: 1 }, { queue: "payments", value: 2 }],
  );
});
