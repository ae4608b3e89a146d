import assert from "node:assert/strict";
import { type Clock, FakeClock, MAX_TIMER_MS, SystemClock } from "../src/clock.ts";
import { execute } from "../src/kernel/executor.ts";
import type { ClaimedJob } from "../src/kernel/types.ts";
import { defineWorker } from "../src/kernel/worker.ts";
import { waitUntil } from "../src/testing.ts";

const DAY = 86_400_000;

function claimed(meta: Record<string, unknown>): ClaimedJob {
  return {
    id: 1,
    queue: "default",
    worker: "slow",
    args: "{}",
    meta: JSON.stringify(meta),
    tags: "[]",
    occurrence: null,
    attempt: 1,
    maxAttempts: 3,
    priority: 0,
    fence: 1,
    insertedAt: 0,
    scheduledAt: 0,
    attemptedAt: 0,
    tenant: null,
  };
}

/** A worker that finishes when `release` is called, or stops when aborted. */
function gated() {
  const gate = Promise.withResolvers<void>();
  let started = false;
  const worker = defineWorker({
    name: "slow",
    perform: async (_args, ctx) => {
      started = true;
      await Promise.race([
        gate.promise,
        new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true })),
      ]);
      if (ctx.signal.aborted) throw ctx.signal.reason;
    },
  });
  return { worker, release: () => gate.resolve(), started: () => started };
}

Deno.test("SystemClock.sleep() of 40 days is still pending when a 30 ms sleep ends (setTimeout clamps beyond 2^31-1 ms)", async () => {
  const clock = new SystemClock();
  const stop = new AbortController();
  let longDone = false;
  const long = clock.sleep(40 * DAY, stop.signal).then(() => longDone = true);
  await clock.sleep(30);
  assert.equal(longDone, false, "a 40-day sleep ended within 30 ms");
  stop.abort();
  await long;
});

Deno.test("SystemClock.sleep() chains timers and ends at its instant, never before", async () => {
  const clock = new SystemClock({ maxTimerMs: 10 });
  const start = Date.now();
  await clock.sleep(45);
  assert.ok(Date.now() - start >= 45, `ended after ${Date.now() - start} ms`);
  assert.equal(MAX_TIMER_MS, 2 ** 31 - 1);
});

Deno.test("a job with a 40-day timeout on the system clock is not timed out: it completes", async () => {
  const { worker, release, started } = gated();
  const clock: Clock = new SystemClock();
  const running = execute(claimed({ timeoutMs: 40 * DAY }), new AbortController(), {
    registry: new Map([["slow", worker]]),
    clock,
  });
  await waitUntil("the job to start", started);
  await clock.sleep(30);
  release();
  assert.equal((await running).outcome, "completed");
});

Deno.test("a job with a 40-day timeout on the fake clock times out at 40 days, not a millisecond before", async () => {
  const { worker, started } = gated();
  const clock = new FakeClock(0);
  let settled = false;
  const running = execute(claimed({ timeoutMs: 40 * DAY }), new AbortController(), {
    registry: new Map([["slow", worker]]),
    clock,
  }).finally(() => settled = true);
  await waitUntil("the job to start and its timer to park", () => started() && clock.sleepers > 0);
  clock.advance(40 * DAY - 1);
  await Promise.resolve();
  assert.equal(settled, false);
  clock.advance(1);
  const result = await running;
  assert.equal(result.outcome, "retryable");
  assert.match("error" in result ? result.error : "", /timed out after 3456000000 ms/);
});
