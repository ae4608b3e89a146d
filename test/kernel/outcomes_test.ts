import assert from "node:assert/strict";
import { type Backoff, defineWorker, exponentialBackoff, JobTimeoutError } from "../../src/mod.ts";
import { defaultBackoff } from "../../src/kernel/backoff.ts";
import type { Job } from "../../src/store.ts";
import { ERROR_CAP_BYTES } from "../../src/kernel/redact.ts";
import { drainAllJobs, drainQueue, waitUntil } from "../../src/testing.ts";
import { tempJobs } from "../support/stores.ts";

const bytes = (text: string) => new TextEncoder().encode(text).length;

type T = Awaited<ReturnType<typeof tempJobs>>;

/** Runs the job through every attempt by draining and moving the fake clock to its next run. */
async function runToEnd(t: T, id: number, limit = 100): Promise<Job> {
  for (let i = 0; i < limit; i++) {
    await drainQueue(t.jobs, "default");
    const job = (await t.store.jobGet({ id }))!;
    if (job.state === "completed" || job.state === "cancelled" || job.state === "discarded") {
      return job;
    }
    t.clock.set(Math.max(t.clock.now(), job.scheduledAt));
  }
  throw new Error(`job ${id} did not finish in ${limit} drains`);
}

Deno.test("defaultBackoff() is attempt^4 + 15 s + random(0..30 * attempt) s", () => {
  const cases: [attempt: number, random: number, seconds: number][] = [
    [1, 0, 1 + 15],
    [1, 0.5, 1 + 15 + 15],
    [2, 0.25, 16 + 15 + 15],
    [3, 0.5, 81 + 15 + 45],
    [5, 0.1, 625 + 15 + 15],
    [20, 0, 160_000 + 15],
    [20, 0.999, 160_000 + 15 + 0.999 * 600],
  ];
  for (const [attempt, random, seconds] of cases) {
    assert.equal(
      defaultBackoff(attempt, () => random),
      Math.round(seconds * 1000),
      `attempt ${attempt}, random ${random}`,
    );
  }
});

Deno.test("exponentialBackoff() stays within half and all of its capped ceiling", () => {
  const backoff = exponentialBackoff(1000, 10_000);
  assert.equal(backoff(1, () => 0), 500);
  assert.equal(backoff(1, () => 1), 1000);
  assert.equal(backoff(3, () => 0), 2000);
  assert.equal(backoff(30, () => 1), 10_000);
});

Deno.test("a thrown error makes the job retryable at now + the default backoff", async () => {
  const flaky = defineWorker({
    name: "flaky",
    perform: () => {
      throw new Error("upstream 503");
    },
  });
  await using t = await tempJobs([flaky]);
  const { id } = await t.jobs.enqueue(flaky, {});
  t.clock.advance(1234);
  const now = t.clock.now();
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.retryable, 1);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "retryable");
  assert.equal(job?.attempt, 1);
  assert.equal(job?.attemptedBy?.startsWith("drain:"), true);
  assert.equal(job?.leaseExpiresAt, null);
  // Attempt 1: 1 + 15 s plus up to 30 s of jitter.
  const delay = job!.scheduledAt - now;
  assert.ok(delay >= 16_000 && delay <= 46_000, `backoff of attempt 1 was ${delay} ms`);
  assert.equal(job?.errors.length, 1);
  assert.equal(job?.errors[0]?.attempt, 1);
  assert.equal(job?.errors[0]?.at, now);
  assert.ok(job?.errors[0]?.error.startsWith("upstream 503"), job?.errors[0]?.error);
});

Deno.test("drains apply the Jobs' injected random to the default backoff", async () => {
  const flaky = defineWorker({
    name: "flaky",
    perform: () => {
      throw new Error("upstream 503");
    },
  });
  await using t = await tempJobs([flaky], { random: () => 0.5 });
  const { id } = await t.jobs.enqueue(flaky, {});
  const now = t.clock.now();
  await drainQueue(t.jobs, "default");
  let job = await t.store.jobGet({ id });
  assert.equal(job?.scheduledAt, now + defaultBackoff(1, () => 0.5), "attempt 1: 1 + 15 + 15 s");
  t.clock.set(job!.scheduledAt);
  await drainQueue(t.jobs, "default");
  job = await t.store.jobGet({ id });
  assert.equal(
    job?.scheduledAt,
    t.clock.now() + (16 + 15 + 30) * 1000,
    "attempt 2: 2^4 + 15 + 0.5 * 60 s",
  );
});

Deno.test("a job that keeps failing is discarded at max attempts", async () => {
  let calls = 0;
  const failing = defineWorker({
    name: "failing",
    maxAttempts: 3,
    perform: () => {
      calls++;
      throw new Error(`failure ${calls}`);
    },
  });
  await using t = await tempJobs([failing]);
  const { id } = await t.jobs.enqueue(failing, {});
  const job = await runToEnd(t, id);
  assert.equal(calls, 3);
  assert.equal(job.state, "discarded");
  assert.equal(job.attempt, 3);
  assert.equal(job.fence, 3);
  assert.equal(job.discardedAt, t.clock.now());
  assert.deepEqual(job.errors.map((e) => e.attempt), [1, 2, 3]);
  assert.ok(job.errors[2]!.error.startsWith("failure 3"));
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => a.outcome), ["retryable", "retryable", "discarded"]);
  assert.deepEqual(attempts.map((a) => a.attempt), [1, 2, 3]);
  assert.deepEqual(attempts.map((a) => a.kind), ["run", "retry", "retry"]);
  assert.ok(attempts.every((a) => a.error?.startsWith("failure")));
});

Deno.test("every attempt writes one attempts row with its outcome, fence and times", async () => {
  let calls = 0;
  const once = defineWorker({
    name: "once",
    perform: () => {
      if (++calls === 1) throw new Error("first try fails");
    },
  });
  await using t = await tempJobs([once]);
  const { id } = await t.jobs.enqueue(once, {});
  const first = t.clock.now();
  const job = await runToEnd(t, id);
  assert.equal(job.state, "completed");
  assert.equal(job.completedAt, t.clock.now());
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.equal(attempts.length, 2);
  assert.deepEqual(attempts.map((a) => [a.attempt, a.fence, a.outcome]), [
    [1, 1, "retryable"],
    [2, 2, "completed"],
  ]);
  assert.equal(attempts[0]?.startedAt, first);
  assert.equal(attempts[0]?.finishedAt, first);
  assert.equal(attempts[1]?.startedAt, t.clock.now());
  assert.equal(attempts[1]?.error, null);
  assert.ok(attempts.every((a) => a.node?.startsWith("drain:")));
});

Deno.test("a worker's own backoff overrides the default", async () => {
  const seen: number[] = [];
  const backoff: Backoff = (attempt) => {
    seen.push(attempt);
    return attempt * 7_000;
  };
  const custom = defineWorker({
    name: "custom",
    maxAttempts: 3,
    backoff,
    perform: () => {
      throw new Error("nope");
    },
  });
  await using t = await tempJobs([custom]);
  const { id } = await t.jobs.enqueue(custom, {});
  await drainQueue(t.jobs, "default");
  let job = await t.store.jobGet({ id });
  assert.equal(job?.scheduledAt, t.clock.now() + 7_000);
  t.clock.advance(7_000);
  await drainQueue(t.jobs, "default");
  job = await t.store.jobGet({ id });
  assert.equal(job?.scheduledAt, t.clock.now() + 14_000);
  assert.deepEqual(seen, [1, 2]);
});

Deno.test("snooze(ms) reschedules the job without using up an attempt", async () => {
  let calls = 0;
  const sleepy = defineWorker({
    name: "sleepy",
    maxAttempts: 2,
    perform: () => (++calls <= 5 ? { snooze: 60_000 } : undefined),
  });
  await using t = await tempJobs([sleepy]);
  const { id } = await t.jobs.enqueue(sleepy, {});
  for (let i = 1; i <= 5; i++) {
    const result = await drainQueue(t.jobs, "default");
    assert.equal(result.snoozed, 1, `snooze ${i}`);
    const job = await t.store.jobGet({ id });
    assert.equal(job?.state, "scheduled", `snooze ${i}`);
    assert.equal(job?.attempt, 0, `snooze ${i} gives the attempt back`);
    assert.equal(job?.fence, i, "the fence still rises");
    assert.equal(job?.scheduledAt, t.clock.now() + 60_000);
    assert.deepEqual(job?.errors, []);
    // Not runnable before its time.
    t.clock.advance(59_999);
    assert.equal((await drainQueue(t.jobs, "default")).snoozed, 0);
    t.clock.advance(1);
  }
  assert.equal((await drainQueue(t.jobs, "default")).completed, 1);
  assert.equal(calls, 6, "ran 6 times with maxAttempts 2");
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "completed");
  assert.equal(job?.attempt, 1);
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => a.outcome), [
    "snoozed",
    "snoozed",
    "snoozed",
    "snoozed",
    "snoozed",
    "completed",
  ]);
});

Deno.test("snooze(0) makes the job available again at once", async () => {
  let calls = 0;
  const again = defineWorker({
    name: "again",
    maxAttempts: 1,
    perform: () => (++calls < 3 ? { snooze: 0 } : undefined),
  });
  await using t = await tempJobs([again]);
  const { id } = await t.jobs.enqueue(again, {});
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.snoozed, 2);
  assert.equal(result.completed, 1);
  assert.equal((await t.store.jobGet({ id }))?.state, "completed");
});

Deno.test("{ cancel: reason } cancels the job with the reason stored", async () => {
  const cancels = defineWorker({
    name: "cancels",
    perform: () => ({ cancel: "customer closed the account" }),
  });
  await using t = await tempJobs([cancels]);
  const { id } = await t.jobs.enqueue(cancels, {});
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.cancelled, 1);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "cancelled");
  assert.equal(job?.cancelledAt, t.clock.now());
  assert.equal(job?.errors[0]?.error, "customer closed the account");
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.outcome, a.error]), [
    ["cancelled", "customer closed the account"],
  ]);
});

Deno.test("{ discard: reason } discards the job at once with attempts left", async () => {
  const discards = defineWorker({
    name: "discards",
    maxAttempts: 10,
    perform: () => ({ discard: "malformed invoice" }),
  });
  await using t = await tempJobs([discards]);
  const { id } = await t.jobs.enqueue(discards, {});
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.discarded, 1);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "discarded");
  assert.equal(job?.attempt, 1);
  assert.equal(job?.discardedAt, t.clock.now());
  assert.equal(job?.errors[0]?.error, "malformed invoice");
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.outcome, a.error]), [["discarded", "malformed invoice"]]);
});

Deno.test("a timeout aborts ctx.signal and the job lands in retryable with a timeout error", async () => {
  let started = false;
  let reason: unknown;
  const slow = defineWorker({
    name: "slow",
    timeout: 5_000,
    perform: async (_args, ctx) => {
      started = true;
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      reason = ctx.signal.reason;
    },
  });
  await using t = await tempJobs([slow]);
  const { id } = await t.jobs.enqueue(slow, {});
  const startedAt = t.clock.now();
  const draining = drainQueue(t.jobs, "default");
  await waitUntil(
    "the slow job to start and its timer to park",
    () => started && t.clock.sleepers > 0,
  );
  t.clock.advance(5_000);
  const result = await draining;
  assert.equal(result.retryable, 1);
  assert.ok(reason instanceof JobTimeoutError, `signal reason was ${String(reason)}`);
  assert.equal((reason as JobTimeoutError).ms, 5_000);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "retryable");
  assert.equal(job?.attempt, 1);
  assert.match(job!.errors[0]!.error, /timed out after 5000 ms/);
  const [attempt] = await t.store.attemptsList({ jobId: id });
  assert.equal(attempt?.outcome, "retryable");
  assert.equal(attempt?.startedAt, startedAt);
  assert.equal(attempt?.finishedAt, startedAt + 5_000);
  assert.match(attempt!.error!, /timed out after 5000 ms/);
});

Deno.test("a job that finishes before its timeout completes and leaves no timer behind", async () => {
  const quick = defineWorker({ name: "quick", timeout: 5_000, perform: () => undefined });
  await using t = await tempJobs([quick]);
  const { id } = await t.jobs.enqueue(quick, {});
  assert.equal((await drainQueue(t.jobs, "default")).completed, 1);
  assert.equal((await t.store.jobGet({ id }))?.state, "completed");
  assert.equal(t.clock.sleepers, 0);
});

Deno.test("a job of an unknown worker is discarded at once with a readable error", async () => {
  await using t = await tempJobs([]);
  const { id } = await t.jobs.enqueue("ghost", { n: 1 });
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.discarded, 1);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "discarded");
  assert.equal(job?.attempt, 1);
  assert.equal(job?.maxAttempts, 20, "discarded although attempts remained");
  assert.equal(job?.errors[0]?.error, 'unknown worker "ghost"');
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.outcome, a.error]), [
    ["discarded", 'unknown worker "ghost"'],
  ]);
});

Deno.test("args the worker's schema rejects are discarded at once with a readable error", async () => {
  let performed = 0;
  const typed = defineWorker<{ n: number }>({
    name: "typed",
    args: {
      parse(input: unknown) {
        const n = (input as { n?: unknown })?.n;
        if (typeof n !== "number") throw new TypeError(`n must be a number, got ${typeof n}`);
        return { n };
      },
    },
    perform: () => void performed++,
  });
  await using t = await tempJobs([typed]);
  const bad = await t.jobs.enqueue(typed, { n: "seven" } as unknown as { n: number });
  const good = await t.jobs.enqueue(typed, { n: 7 });
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.discarded, 1);
  assert.equal(result.completed, 1);
  assert.equal(performed, 1);
  const job = await t.store.jobGet({ id: bad.id });
  assert.equal(job?.state, "discarded");
  assert.equal(job?.attempt, 1);
  assert.match(job!.errors[0]!.error, /^invalid args: TypeError: n must be a number, got string/);
  // The message alone: the frames would say where the schema noticed, the same for every job.
  assert.equal(job!.errors[0]!.error, "invalid args: TypeError: n must be a number, got string");
  const [attempt] = await t.store.attemptsList({ jobId: bad.id });
  assert.equal(attempt?.outcome, "discarded");
  assert.match(attempt!.error!, /invalid args/);
  assert.equal((await t.store.jobGet({ id: good.id }))?.state, "completed");
});

Deno.test("a job keeps only its last 20 errors, each capped at 4 KiB", async () => {
  const noisy = defineWorker({
    name: "noisy",
    maxAttempts: 25,
    backoff: () => 1_000,
    perform: (_args, ctx) => {
      throw new Error(`failure of attempt ${ctx.attempt}: ${"x".repeat(10_000)}`);
    },
  });
  await using t = await tempJobs([noisy]);
  const { id } = await t.jobs.enqueue(noisy, {});
  const job = await runToEnd(t, id);
  assert.equal(job.state, "discarded");
  assert.equal(job.attempt, 25);
  assert.equal(job.errors.length, 20);
  assert.deepEqual(
    job.errors.map((e) => e.attempt),
    Array.from({ length: 20 }, (_, i) => i + 6),
  );
  for (const e of job.errors) {
    assert.ok(
      bytes(e.error) <= ERROR_CAP_BYTES,
      `error of attempt ${e.attempt}: ${bytes(e.error)}`,
    );
    assert.ok(e.error.startsWith(`failure of attempt ${e.attempt}:`));
  }
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.equal(attempts.length, 25, "the audit trail keeps every attempt");
  assert.ok(attempts.every((a) => bytes(a.error ?? "") <= ERROR_CAP_BYTES));
});

Deno.test("drainAllJobs runs retries to the end without moving the clock", async () => {
  let calls = 0;
  const flaky = defineWorker({
    name: "flaky",
    maxAttempts: 3,
    perform: () => {
      calls++;
      throw new Error("still down");
    },
  });
  await using t = await tempJobs([flaky]);
  const { id } = await t.jobs.enqueue(flaky, {});
  const result = await drainAllJobs(t.jobs);
  assert.equal(calls, 3);
  assert.equal(result.retryable, 2);
  assert.equal(result.discarded, 1);
  assert.equal((await t.store.jobGet({ id }))?.state, "discarded");
});

Deno.test("ctx.output keeps the attempt's output, redacted and cut to its last 64 KiB", async () => {
  let calls = 0;
  const noisy = defineWorker({
    name: "noisy",
    maxAttempts: 2,
    backoff: () => 0,
    perform: (_args, ctx) => {
      calls++;
      if (calls === 1) {
        ctx.output(`${"x".repeat(70 * 1024)}\nlast line: password=hunter2`);
        throw new Error("exit 3");
      }
      ctx.output("all good");
    },
  });
  await using t = await tempJobs([noisy]);
  const { id } = await t.jobs.enqueue(noisy, {});
  await drainAllJobs(t.jobs);
  const [failed, passed] = await t.store.attemptsList({ jobId: id });
  assert.equal(failed?.outcome, "retryable");
  const output = failed?.output ?? "";
  assert.ok(new TextEncoder().encode(output).length <= 64 * 1024, `${output.length} bytes kept`);
  assert.match(output, /^\[truncated \d+ bytes\] …x+/);
  assert.match(output, /last line: password=\[REDACTED\]$/);
  assert.doesNotMatch(output, /hunter2/);
  assert.equal(passed?.outcome, "completed");
  assert.equal(passed?.output, "all good");
});

Deno.test("a backoff in the job's meta (a schedule's) wins over the worker's", async () => {
  const flaky = defineWorker({
    name: "flaky-meta",
    backoff: () => 999_000,
    perform: () => {
      throw new Error("down");
    },
  });
  await using t = await tempJobs([flaky]);
  const { id } = await t.jobs.enqueue(flaky, {}, {
    meta: { backoff: { kind: "fixed", delayMs: 30_000 } },
  });
  const now = t.clock.now();
  await drainQueue(t.jobs, "default");
  assert.equal((await t.store.jobGet({ id }))?.scheduledAt, now + 30_000);
});
