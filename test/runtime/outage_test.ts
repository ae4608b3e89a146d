/**
 * Invariant 6, in-process on a FakeClock: while the store refuses calls as a
 * SQLite file locked past its busy timeout does, the runtime backs off, logs
 * at a bounded rate, reports degraded, keeps every finished job's result
 * (and its lease) until the store takes it, fails and re-runs nothing, and
 * resumes on its own.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import type { JobContext } from "../../src/kernel/worker.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import type { SqliteStore, SqliteTx } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import type { Logger } from "../../src/kernel/logger.ts";
import { tempStore } from "../support/stores.ts";

/** The message node:sqlite gives when the write lock stays taken. */
const BUSY = "database is locked";

/**
 * The store, behind a switch: while `refuses(method)` is true, that method
 * rejects as a locked SQLite file does, and nothing reaches the file.
 */
function flaky(store: SqliteStore) {
  const state = {
    refuses: (_method: string) => false,
    refused: 0,
    calls: new Map<string, number>(),
  };
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      const method = String(prop);
      if (method === "close" || method === "onExternalChange") return value.bind(target);
      return (...args: unknown[]) => {
        if (state.refuses(method)) {
          state.refused++;
          return Promise.reject(new Error(`${BUSY} (SQLITE_BUSY)`));
        }
        state.calls.set(method, (state.calls.get(method) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  }) as Store<SqliteTx>;
  return { store: wrapped, state };
}

/** A worker whose jobs run until `release()`. */
function holdingWorker() {
  const seen: JobContext[] = [];
  const releases: (() => void)[] = [];
  const worker = defineWorker({
    name: "hold",
    perform: async (_args, ctx) => {
      seen.push(ctx);
      await new Promise<void>((resolve) => releases.push(resolve));
    },
  });
  return { worker, seen, release: () => releases.splice(0).forEach((r) => r()) };
}

function recorder(): {
  logger: Logger;
  events: { event: string; fields: Record<string, unknown> }[];
} {
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  return { logger: (event, fields) => events.push({ event, fields }), events };
}

async function setUp(options: { leaseMs?: number; heartbeatMs?: number } = {}) {
  const temp = await tempStore();
  const clock = new FakeClock();
  const { store, state } = flaky(temp.store);
  const log = recorder();
  const hold = holdingWorker();
  const quick = defineWorker({ name: "quick", perform: () => {} });
  const jobs = new Jobs({ store, workers: [hold.worker, quick], clock, logger: log.logger });
  const runtime = await jobs.start({
    queues: { default: 3 },
    node: "n1",
    leaseMs: options.leaseMs ?? 30_000,
    heartbeatMs: options.heartbeatMs ?? 1000,
    rescueMs: 5000,
  });
  return {
    jobs,
    runtime,
    clock,
    state,
    log,
    hold,
    quick,
    /** The file itself, read past the switch. */
    file: temp.store,
    async [Symbol.asyncDispose]() {
      state.refuses = () => false;
      await jobs.close({ grace: 0 });
      await temp[Symbol.asyncDispose]();
    },
  };
}

/** Moves the clock `ms` forward in steps, letting the loops run between steps. */
async function drive(clock: FakeClock, ms: number, step = 250): Promise<void> {
  for (let passed = 0; passed < ms; passed += step) {
    clock.advance(step);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

function named(events: { event: string }[], name: string): number {
  return events.filter((e) => e.event === name).length;
}

Deno.test("a store locked past its busy timeout fails no job: results wait, the node is degraded, then recovers", async () => {
  await using t = await setUp();
  const ids = (await t.jobs.enqueueMany([1, 2, 3].map(() => ({ worker: t.hold.worker, args: {} }))))
    .map((r) => r.id);
  await waitUntil("the three jobs started", () => t.hold.seen.length === 3);

  t.state.refuses = () => true;
  t.hold.release();
  await waitUntil(
    "the results were refused and kept",
    () => t.state.refused > 0 && t.runtime.unrecorded === 3,
  );
  // A minute of outage: heartbeats, retries and plugin passes all fail.
  await drive(t.clock, 60_000);
  assert.ok(t.runtime.health.degraded);
  const status = t.runtime.health.status();
  assert.ok(!status.ok && status.error.includes(BUSY), JSON.stringify(status));
  assert.equal(t.runtime.unrecorded, 3, "every result is still held");
  for (const job of await t.file.jobsList({ ids })) {
    assert.equal(job.state, "executing", "nothing written, nothing failed");
    assert.deepEqual(await t.file.attemptsList({ jobId: job.id }), []);
  }
  // Bounded logging: one line when it began, then at most one per 30 s.
  assert.ok(t.state.refused > 60, `many calls were refused (${t.state.refused})`);
  assert.equal(named(t.log.events, "store.degraded"), 1);
  assert.ok(named(t.log.events, "store.error") <= 2, JSON.stringify(t.log.events));
  assert.equal(named(t.log.events, "job.exception"), 0);

  t.state.refuses = () => false;
  await waitUntil("the held results were written", async () => {
    t.clock.advance(250);
    const jobs = await t.file.jobsList({ ids });
    return jobs.every((j) => j.state === "completed");
  });
  for (const id of ids) {
    const attempts = await t.file.attemptsList({ jobId: id });
    assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome]), [[1, "completed"]]);
    const job = await t.file.jobGet({ id });
    assert.equal(job?.fence, 1, "never claimed again");
  }
  await waitUntil("every step recovered", () => {
    t.clock.advance(250);
    return !t.runtime.health.degraded;
  });
  assert.equal(named(t.log.events, "store.recovered"), 1);
  assert.deepEqual(t.runtime.health.status(), { ok: true });
  assert.ok(t.runtime.health.errors().some((e) => e.source === "producer:default" && e.count > 0));
  assert.ok(t.runtime.health.errors().some((e) => e.source === "heartbeat" && e.count > 0));

  // The producer fetches again on its own.
  const after = await t.jobs.enqueue(t.quick, {});
  await waitUntil(
    "a new job completed",
    async () => (await t.file.jobGet({ id: after.id }))?.state === "completed",
  );
});

Deno.test("a result waiting through an outage longer than the lease is not rescued by the node's own lifeline", async () => {
  // No heartbeat within the test: only the lifeline can renew before it rescues.
  await using t = await setUp({ leaseMs: 3000, heartbeatMs: 600_000 });
  const { id } = await t.jobs.enqueue(t.hold.worker, {});
  await waitUntil("the job started", () => t.hold.seen.length === 1);
  t.state.refuses = () => true;
  t.hold.release();
  await waitUntil("the result was kept", () => t.runtime.unrecorded === 1);
  await drive(t.clock, 12_000);
  const held = await t.file.jobGet({ id });
  assert.ok(held!.leaseExpiresAt! < t.clock.now(), "the stored lease ran out during the outage");

  // Everything comes back but the claim-and-record write: the lifeline runs first.
  t.state.refuses = (method) => method === "jobsClaim";
  const rescues = t.state.calls.get("jobsRescue") ?? 0;
  await waitUntil("the lifeline ran", () => {
    t.clock.advance(250);
    return (t.state.calls.get("jobsRescue") ?? 0) > rescues;
  });
  const after = await t.file.jobGet({ id });
  assert.equal(after?.state, "executing", "the lifeline left it: its lease was renewed first");
  assert.ok(after!.leaseExpiresAt! > t.clock.now());
  assert.deepEqual(await t.file.attemptsList({ jobId: id }), []);

  t.state.refuses = () => false;
  await waitUntil("the result was written", async () => {
    t.clock.advance(250);
    return (await t.file.jobGet({ id }))?.state === "completed";
  });
  const attempts = await t.file.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome]), [[1, "completed"]]);
  assert.equal(t.hold.seen.length, 1, "the job ran once");
});

Deno.test("stop() during an outage ends after its grace, giving up the unwritten results to the lifeline", async () => {
  await using t = await setUp();
  const { id } = await t.jobs.enqueue(t.hold.worker, {});
  await waitUntil("the job started", () => t.hold.seen.length === 1);
  t.state.refuses = () => true;
  t.hold.release();
  await waitUntil("the result was kept", () => t.runtime.unrecorded === 1);

  let stopped = false;
  const stopping = t.runtime.stop({ grace: 2000 }).then(() => (stopped = true));
  await waitUntil("the runtime stopped", () => {
    t.clock.advance(250);
    return stopped;
  });
  await stopping;
  const gaveUp = t.log.events.find((e) => e.event === "job.unrecorded");
  assert.deepEqual(gaveUp?.fields, { queue: "default", job: id, outcome: "completed" });
  assert.equal(t.runtime.unrecorded, 0);
  // Left executing: its lease expires and a lifeline sends it back (at least once).
  assert.equal((await t.file.jobGet({ id }))?.state, "executing");
});

Deno.test("job.start carries the queue wait, job.stop the outcome, job.exception the error", async () => {
  await using t = await setUp();
  const boom = defineWorker({
    name: "boom",
    perform: () => {
      throw new Error("failed with password=hunter2");
    },
  });
  t.jobs.register(boom);
  // Due in 1 s, claimed 3 s from now: it waited 2 s in its queue.
  const late = await t.jobs.enqueue(t.quick, {}, { in: 1000 });
  await waitUntil("the stager is parked", () => t.clock.sleepers > 0);
  t.clock.advance(3000);
  await waitUntil("the late job stopped", () => named(t.log.events, "job.stop") === 1);
  const failing = await t.jobs.enqueue(boom, {});
  await waitUntil("the failing job raised", () => named(t.log.events, "job.exception") === 1);

  const start = t.log.events.find((e) => e.event === "job.start")!.fields;
  assert.deepEqual(start, {
    queue: "default",
    job: late.id,
    worker: "quick",
    attempt: 1,
    waitMs: 2000,
  });
  const stop = t.log.events.find((e) => e.event === "job.stop")!.fields;
  assert.equal(stop.outcome, "completed");
  assert.equal(typeof stop.durationMs, "number");
  const exception = t.log.events.find((e) => e.event === "job.exception")!.fields;
  assert.equal(exception.job, failing.id);
  assert.equal(exception.outcome, "retryable");
  assert.match(String(exception.error), /failed with password=\[REDACTED\]/);
});
