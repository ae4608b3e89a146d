import assert from "node:assert/strict";
import { AssertionError } from "node:assert";
import { defineWorker, FakeClock, JobTimeoutError } from "../src/mod.ts";
import {
  assertEnqueued,
  drainAllJobs,
  drainQueue,
  enqueued,
  performJob,
  refuteEnqueued,
  waitUntil,
} from "../src/testing.ts";
import { type Backend, type BackendJobs, backendJobs, BACKENDS } from "./support/backends.ts";

/** One test body, run on every backend of BACKENDS. */
function test(name: string, fn: (backend: Backend) => Promise<void>): void {
  for (const backend of BACKENDS) Deno.test(`[${backend.name}] ${name}`, () => fn(backend));
}

const mail = defineWorker<{ to: { id: number; name: string }; plan: string }>({
  name: "mail",
  perform: () => {},
});
const bill = defineWorker<{ account: number }>({
  name: "bill",
  queue: "billing",
  perform: () => {},
});

test("assertEnqueued matches on partial args, meta, tags and priority", async (backend) => {
  await using t = await backendJobs(backend, [mail, bill]);
  const { id } = await t.jobs.enqueue(mail, { to: { id: 7, name: "Ada" }, plan: "pro" }, {
    tags: ["welcome", "eu"],
    meta: { campaign: "spring", source: "signup" },
    priority: 3,
  });
  await t.jobs.enqueue(bill, { account: 7 });

  const found = await assertEnqueued(t.jobs, { worker: mail, args: { to: { id: 7 } } });
  assert.deepEqual(found.map((j) => j.id), [id]);
  await assertEnqueued(t.jobs, { worker: "mail", args: { plan: "pro" } });
  await assertEnqueued(t.jobs, { worker: mail, meta: { campaign: "spring" }, tags: ["eu"] });
  await assertEnqueued(t.jobs, { worker: mail, priority: 3, queue: "default" });
  await assertEnqueued(t.jobs, { queue: "billing", args: { account: 7 } });
  await assertEnqueued(t.jobs, { args: { account: 7 } });
});

test("assertEnqueued fails with a message naming the filter and the worker's jobs", async (backend) => {
  await using t = await backendJobs(backend, [mail, bill]);
  const { id } = await t.jobs.enqueue(mail, { to: { id: 7, name: "Ada" }, plan: "pro" });
  await assert.rejects(
    () => assertEnqueued(t.jobs, { worker: mail, args: { plan: "free" } }),
    (error: unknown) => {
      assert.ok(error instanceof AssertionError, String(error));
      assert.match(error.message, /^expected a job matching \{.*"worker":"mail".*\}, found none/);
      assert.ok(error.message.includes('"args":{"plan":"free"}'), error.message);
      assert.ok(error.message.includes(`#${id} mail available`), error.message);
      assert.ok(error.message.includes('"plan":"pro"'), error.message);
      return true;
    },
  );
  await assert.rejects(
    () => assertEnqueued(t.jobs, { worker: bill }),
    (error: unknown) =>
      error instanceof AssertionError && /"worker":"bill".*the store has no such job/.test(
        error.message,
      ),
  );
  // A nested partial must match deeply, not just by key.
  await assert.rejects(
    () => assertEnqueued(t.jobs, { worker: mail, args: { to: { id: 8 } } }),
    AssertionError,
  );
  await assert.rejects(() => assertEnqueued(t.jobs, { worker: mail, tags: ["vip"] }));
});

test("refuteEnqueued passes when nothing matches and fails naming what matched", async (backend) => {
  await using t = await backendJobs(backend, [mail, bill]);
  await refuteEnqueued(t.jobs, { worker: mail });
  const { id } = await t.jobs.enqueue(mail, { to: { id: 1, name: "Bo" }, plan: "pro" });
  await refuteEnqueued(t.jobs, { worker: mail, args: { plan: "free" } });
  await refuteEnqueued(t.jobs, { worker: bill });
  await assert.rejects(
    () => refuteEnqueued(t.jobs, { worker: mail, args: { plan: "pro" } }),
    (error: unknown) => {
      assert.ok(error instanceof AssertionError, String(error));
      assert.match(error.message, /^expected no job matching \{.*\}, found 1: /);
      assert.ok(error.message.includes(`#${id} mail available`), error.message);
      return true;
    },
  );
});

test("enqueued looks at incomplete jobs unless a state is given", async (backend) => {
  await using t = await backendJobs(backend, [mail]);
  const args = { to: { id: 1, name: "Bo" }, plan: "pro" };
  const done = await t.jobs.enqueue(mail, args);
  await drainQueue(t.jobs, "default");
  const later = await t.jobs.enqueue(mail, args, { in: 60_000 });
  assert.deepEqual((await enqueued(t.jobs, { worker: mail })).map((j) => j.id), [later.id]);
  assert.deepEqual(
    (await enqueued(t.jobs, { worker: mail, state: "completed" })).map((j) => j.id),
    [done.id],
  );
  assert.deepEqual(
    (await enqueued(t.jobs, { state: ["completed", "scheduled"] })).map((j) => j.id),
    [done.id, later.id],
  );
  await refuteEnqueued(t.jobs, { worker: mail, state: "available" });
  await assertEnqueued(t.jobs, { worker: mail, state: "scheduled" });
});

Deno.test("performJob runs a worker without a store and returns how the attempt ended", async () => {
  const seen: unknown[] = [];
  const outcomes = defineWorker<{ do: string }>({
    name: "outcomes",
    maxAttempts: 3,
    perform: (args, ctx) => {
      seen.push({ args, attempt: ctx.attempt, key: ctx.idempotencyKey });
      switch (args.do) {
        case "snooze":
          return { snooze: 30_000 };
        case "cancel":
          return { cancel: "not needed" };
        case "discard":
          return { discard: "bad input" };
        case "throw":
          throw new Error("boom");
      }
      return undefined;
    },
  });
  const clock = new FakeClock();
  const now = clock.now();
  assert.equal((await performJob(outcomes, { do: "ok" })).outcome, "completed");
  assert.deepEqual(seen[0], { args: { do: "ok" }, attempt: 1, key: "job:1" });
  const snoozed = await performJob(outcomes, { do: "snooze" }, { clock });
  assert.deepEqual(
    { outcome: snoozed.outcome, until: (snoozed as { until: number }).until },
    { outcome: "snoozed", until: now + 30_000 },
  );
  assert.deepEqual(await performJob(outcomes, { do: "cancel" }, { clock }), {
    id: 1,
    fence: 1,
    attempt: 1,
    startedAt: now,
    outcome: "cancelled",
    error: "not needed",
  });
  const discarded = await performJob(outcomes, { do: "discard" });
  assert.equal(discarded.outcome, "discarded");
  const retry = await performJob(outcomes, { do: "throw" }, { clock });
  assert.equal(retry.outcome, "retryable");
  const at = (retry as { at: number }).at;
  assert.ok(at >= now + 16_000 && at <= now + 46_000, `retry at +${at - now} ms`);
  const last = await performJob(outcomes, { do: "throw" }, { attempt: 3 });
  assert.equal(last.outcome, "discarded", "the last attempt's error discards");
  assert.match((last as { error: string }).error, /^boom/);
  await performJob(outcomes, { do: "ok" }, { occurrence: "nightly@2026-01-01T00:00:00.000Z" });
  assert.equal((seen.at(-1) as { key: string }).key, "nightly@2026-01-01T00:00:00.000Z");
});

Deno.test("performJob validates args and passes abort and timeout to ctx.signal", async () => {
  const typed = defineWorker<{ n: number }>({
    name: "typed",
    args: {
      parse(input: unknown) {
        if (typeof (input as { n?: unknown }).n !== "number") throw new Error("n must be a number");
        return input as { n: number };
      },
    },
    perform: () => {},
  });
  const invalid = await performJob(typed, { n: "x" } as unknown as { n: number });
  assert.equal(invalid.outcome, "discarded");
  assert.match((invalid as { error: string }).error, /^invalid args: n must be a number/);

  const waits = defineWorker({
    name: "waits",
    timeout: 1_000,
    perform: async (_args, ctx) => {
      if (!ctx.signal.aborted) {
        await new Promise((resolve) =>
          ctx.signal.addEventListener("abort", resolve, { once: true })
        );
      }
      if (!(ctx.signal.reason instanceof JobTimeoutError)) return { cancel: "aborted" };
      return undefined;
    },
  });
  const control = new AbortController();
  const aborted = performJob(waits, {}, { signal: control.signal });
  control.abort(new Error("stop"));
  assert.equal((await aborted).outcome, "cancelled");

  const clock = new FakeClock();
  const timing = performJob(waits, {}, { clock });
  await waitUntil("the timeout timer to park on the fake clock", () => clock.sleepers > 0);
  clock.advance(1_000);
  const timedOut = await timing;
  assert.equal(timedOut.outcome, "retryable");
  assert.match((timedOut as { error: string }).error, /timed out after 1000 ms/);
});

Deno.test("performJob refuses args JSON cannot hold, as enqueue does", async () => {
  await assert.rejects(
    () => performJob(mail, { to: { id: 1n, name: "x" }, plan: "p" } as never),
    /performJob "mail": args cannot be serialized/,
  );
});

test("drainQueue runs only its queue and only due jobs without withScheduled", async (backend) => {
  await using t = await backendJobs(backend, [mail, bill]);
  await t.jobs.enqueue(mail, { to: { id: 1, name: "a" }, plan: "p" });
  const later = await t.jobs.enqueue(mail, { to: { id: 2, name: "b" }, plan: "p" }, { in: 60_000 });
  await t.jobs.enqueue(bill, { account: 1 });
  const result = await drainQueue(t.jobs, "default");
  assert.deepEqual(result, {
    completed: 1,
    snoozed: 0,
    cancelled: 0,
    discarded: 0,
    retryable: 0,
    lost: 0,
  });
  await assertEnqueued(t.jobs, { worker: bill, state: "available" });
  assert.equal((await t.store.jobGet({ id: later.id }))?.state, "scheduled");
  t.clock.advance(60_000);
  assert.equal((await drainQueue(t.jobs, "default")).completed, 1, "due once the clock reaches it");
});

test("drainQueue with withScheduled runs a job scheduled for later at once", async (backend) => {
  await using t = await backendJobs(backend, [mail]);
  const { id } = await t.jobs.enqueue(mail, { to: { id: 1, name: "a" }, plan: "p" }, {
    in: 3_600_000,
  });
  assert.equal((await drainQueue(t.jobs, "default")).completed, 0);
  const result = await drainQueue(t.jobs, "default", { withScheduled: true });
  assert.equal(result.completed, 1);
  assert.equal((await t.store.jobGet({ id }))?.state, "completed");
});

test("drainAllJobs runs every queue, scheduled jobs and jobs enqueued by jobs", async (backend) => {
  const ran: string[] = [];
  // deno-lint-ignore prefer-const
  let t!: BackendJobs;
  const child = defineWorker<{ n: number }>({
    name: "child",
    queue: "children",
    perform: (args) => void ran.push(`child ${args.n}`),
  });
  const parent = defineWorker<{ n: number }>({
    name: "parent",
    perform: async (args) => {
      ran.push(`parent ${args.n}`);
      await t.jobs.enqueue(child, { n: args.n });
    },
  });
  await using jobs = await backendJobs(backend, [parent, child]);
  t = jobs;
  await t.jobs.enqueue(parent, { n: 1 });
  await t.jobs.enqueue(parent, { n: 2 }, { in: 86_400_000 });
  const result = await drainAllJobs(t.jobs);
  assert.equal(result.completed, 4);
  assert.deepEqual(ran.sort(), ["child 1", "child 2", "parent 1", "parent 2"]);
  await refuteEnqueued(t.jobs, {});
});

test("drainAllJobs without recursion runs one round only", async (backend) => {
  // deno-lint-ignore prefer-const
  let t!: BackendJobs;
  const child = defineWorker({ name: "child", perform: () => {} });
  const parent = defineWorker({
    name: "parent",
    perform: async () => void await t.jobs.enqueue(child, {}),
  });
  await using jobs = await backendJobs(backend, [parent, child]);
  t = jobs;
  await t.jobs.enqueue(parent, {});
  const result = await drainAllJobs(t.jobs, { withRecursion: false });
  assert.equal(result.completed, 1);
  await assertEnqueued(t.jobs, { worker: child, state: "available" });
});

Deno.test("waitUntil returns the condition's value once it holds", async () => {
  let polls = 0;
  const value = await waitUntil("the third poll", () => (++polls >= 3 ? { polls } : null), {
    intervalMs: 1,
  });
  assert.deepEqual(value, { polls: 3 });
  assert.equal(await waitUntil("an async condition", () => Promise.resolve("yes")), "yes");
});

Deno.test("waitUntil times out with a message naming what it waited for", async () => {
  await assert.rejects(
    () => waitUntil("the invoice job to complete", () => false, { timeoutMs: 20, intervalMs: 2 }),
    (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.equal(error.message, "timed out after 20 ms waiting for the invoice job to complete");
      return true;
    },
  );
});
