/**
 * Issue 25.1, in-process on a FakeClock: a node whose lease renewals fail
 * (the store refuses them) or hang (the store never answers) stops its jobs
 * a margin before their leases run out in the store, logs
 * `job.lease_expired`, and never logs `job.stop` as completed for a result
 * the store has not recorded.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import type { SqliteStore, SqliteTx } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { rescueOrphans } from "../../src/runtime/lifeline.ts";
import type { Logger } from "../../src/kernel/logger.ts";
import { LeaseExpiredError } from "../../src/kernel/abort_reasons.ts";
import { leaseMarginMs } from "../../src/runtime/runtime.ts";
import { tempStore } from "../support/stores.ts";

const LEASE_MS = 30_000;
const HEARTBEAT_MS = 1000;

/**
 * The store behind a switch: `refused` rejects every call as an unreachable
 * database does; `hung` holds every call without an answer until the mode
 * goes back to `open` (then the held calls go through).
 */
function switched(store: SqliteStore) {
  const state = {
    mode: "open" as "open" | "refused" | "hung",
    held: [] as (() => void)[],
    open() {
      state.mode = "open";
      for (const go of state.held.splice(0)) go();
    },
  };
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      const method = String(prop);
      if (method === "close" || method === "onExternalChange") return value.bind(target);
      return (...args: unknown[]) => {
        if (state.mode === "refused") {
          return Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:5432"));
        }
        if (state.mode === "hung") {
          return new Promise((resolve, reject) => {
            state.held.push(() => value.apply(target, args).then(resolve, reject));
          });
        }
        return value.apply(target, args);
      };
    },
  }) as Store<SqliteTx>;
  return { store: wrapped, state };
}

async function setUp() {
  const temp = await tempStore();
  const clock = new FakeClock();
  const { store, state } = switched(temp.store);
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const logger: Logger = (event, fields) => events.push({ event, fields });
  const runs: { startedAt: number; abortedAt: number | null; reason: unknown }[] = [];
  const releases: (() => void)[] = [];
  const hold = defineWorker({
    name: "hold",
    perform: async (_args, ctx) => {
      const run = { startedAt: clock.now(), abortedAt: null as number | null, reason: null };
      runs.push(run);
      await new Promise<void>((resolve) => {
        releases.push(resolve);
        ctx.signal.addEventListener("abort", () => {
          run.abortedAt = clock.now();
          run.reason = ctx.signal.reason;
          resolve();
        }, { once: true });
      });
    },
  });
  const jobs = new Jobs({ store, workers: [hold], clock, logger });
  const runtime = await jobs.start({
    queues: { default: 2 },
    node: "n1",
    leaseMs: LEASE_MS,
    heartbeatMs: HEARTBEAT_MS,
    rescueMs: 5000,
  });
  return {
    jobs,
    runtime,
    clock,
    state,
    events,
    runs,
    hold,
    release: () => releases.splice(0).forEach((r) => r()),
    file: temp.store,
    async [Symbol.asyncDispose]() {
      state.open();
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

for (const mode of ["refused", "hung"] as const) {
  Deno.test(`a job whose renewals are ${mode} is stopped a margin before its lease expires, with job.lease_expired`, async () => {
    await using t = await setUp();
    const { id } = await t.jobs.enqueue(t.hold, {});
    await waitUntil("the job started", () => t.runs.length === 1);
    const started = t.runs[0]!.startedAt;
    t.state.mode = mode;
    const margin = leaseMarginMs(LEASE_MS);
    // Up to the margin the job runs on: renewals may still come through.
    await drive(t.clock, LEASE_MS - margin - 250);
    assert.equal(t.runs[0]!.abortedAt, null, "stopped before the margin");
    await drive(t.clock, margin - 250);
    const run = t.runs[0]!;
    assert.notEqual(run.abortedAt, null, "still running when the lease runs out");
    assert.ok(run.abortedAt! < started + LEASE_MS, `stopped at +${run.abortedAt! - started} ms`);
    assert.ok(run.reason instanceof LeaseExpiredError, String(run.reason));
    const expired = t.events.filter((e) => e.event === "job.lease_expired");
    assert.equal(expired.length, 1, JSON.stringify(t.events.map((e) => e.event)));
    const fields = expired[0]!.fields;
    assert.equal(fields.queue, "default");
    assert.equal(fields.job, id);
    assert.equal(fields.node, "n1");
    assert.equal(fields.expiresAt, started + LEASE_MS);
    // The first renewal was due a third of the lease in.
    assert.ok(Number(fields.renewFailingMs) > 0, JSON.stringify(fields));
    await waitUntil("job.stop logged", () => t.events.some((e) => e.event === "job.stop"));
    const stops = t.events.filter((e) => e.event === "job.stop");
    assert.deepEqual(stops.map((e) => e.fields.outcome), ["abandoned"]);
    assert.ok(t.runtime.health.degraded, "the failed renewals are reported");
  });
}

Deno.test("job.stop waits for the store: never completed for a result not recorded, lease_lost for one refused", async () => {
  await using t = await setUp();
  const first = await t.jobs.enqueue(t.hold, {});
  await waitUntil("the job started", () => t.runs.length === 1);
  t.state.mode = "refused";
  t.release();
  await waitUntil("the result waits", () => t.runtime.unrecorded === 1);
  await drive(t.clock, 5000);
  assert.deepEqual(
    t.events.filter((e) => e.event === "job.stop").map((e) => e.fields),
    [],
    "job.stop logged for a result the store has not recorded",
  );
  t.state.open();
  await waitUntil("the result is written", async () => {
    await drive(t.clock, 250);
    return (await t.file.jobGet({ id: first.id }))?.state === "completed";
  });
  await waitUntil("job.stop logged", () => t.events.some((e) => e.event === "job.stop"));
  assert.deepEqual(
    t.events.filter((e) => e.event === "job.stop").map((e) => [e.fields.job, e.fields.outcome]),
    [[first.id, "completed"]],
  );

  // A second result waits past its lease; another node's lifeline rescues the job meanwhile.
  const second = await t.jobs.enqueue(t.hold, {});
  await waitUntil("the second job started", () => t.runs.length === 2);
  t.state.mode = "refused";
  t.release();
  await waitUntil("the result waits", () => t.runtime.unrecorded === 1);
  await drive(t.clock, LEASE_MS + 1000, 1000);
  await rescueOrphans(t.file, t.clock.now());
  t.state.open();
  await waitUntil("the result is refused by the fence", async () => {
    await drive(t.clock, 250);
    return t.events.some((e) => e.event === "job.stop" && e.fields.job === second.id);
  });
  const stop = t.events.find((e) => e.event === "job.stop" && e.fields.job === second.id)!;
  assert.equal(stop.fields.outcome, "lease_lost");
  assert.ok(t.events.some((e) => e.event === "job.lease_lost" && e.fields.job === second.id));
});
