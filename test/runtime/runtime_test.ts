/**
 * The runtime on one node: producers, heartbeat, stager and shutdown, on a
 * FakeClock. Local inserts wake the producers; the plugins' timers tick only
 * when a test advances the clock.
 */

import assert from "node:assert/strict";
import type { JobContext } from "../../src/kernel/worker.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { rescueOrphans } from "../../src/runtime/lifeline.ts";
import { LeaseLostError, ShutdownError } from "../../src/kernel/abort_reasons.ts";
import { tempJobs } from "../support/stores.ts";
import { counts } from "../support/rescue.ts";

/** A worker whose jobs wait for their signal (or `release()`), recording what they saw. */
function holdingWorker(name = "hold", options: { ignoreSignal?: boolean } = {}) {
  const seen: JobContext[] = [];
  const reasons = new Map<number, unknown>();
  const releases: (() => void)[] = [];
  const worker = defineWorker({
    name,
    perform: async (_args, ctx) => {
      seen.push(ctx);
      await new Promise<void>((resolve) => {
        releases.push(resolve);
        if (!options.ignoreSignal) {
          ctx.signal.addEventListener("abort", () => resolve(), { once: true });
        }
      });
      if (ctx.signal.aborted) reasons.set(ctx.job.id, ctx.signal.reason);
    },
  });
  return {
    worker,
    seen,
    reasons,
    /** Lets every waiting job return. */
    release: () => releases.splice(0).forEach((r) => r()),
  };
}

async function stateOf(
  store: { jobGet(p: { id: number }): Promise<{ state: string } | null> },
  id: number,
) {
  return (await store.jobGet({ id }))?.state;
}

Deno.test("a started runtime runs a job, registers its node, and deregisters on stop", async () => {
  const ran: number[] = [];
  const work = defineWorker({ name: "work", perform: (_args, ctx) => void ran.push(ctx.job.id) });
  await using t = await tempJobs([work]);
  const runtime = await t.jobs.start({ queues: { default: 2 }, node: "n1" });
  assert.equal(runtime.node, "n1");
  const nodes = await t.store.nodesList();
  assert.deepEqual(nodes.map((n) => [n.node, n.queues]), [["n1", { default: 2 }]]);

  const { id } = await t.jobs.enqueue(work, {});
  await waitUntil("the job completed", async () => (await stateOf(t.store, id)) === "completed");
  assert.deepEqual(ran, [id]);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.attemptedBy, "n1");
  assert.equal(job?.fence, 1);
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.node, a.outcome]), [["n1", "completed"]]);
  assert.deepEqual((await t.store.nodesList()).map((n) => n.node), ["n1"]);

  await runtime.stop({ grace: 5000 });
  assert.deepEqual(await t.store.nodesList(), []);
});

Deno.test("stop() waits within its grace for running jobs, which are then recorded", async () => {
  const hold = holdingWorker("hold", { ignoreSignal: true });
  await using t = await tempJobs([hold.worker]);
  const runtime = await t.jobs.start({ queues: { default: 2 }, node: "n1" });
  const { id } = await t.jobs.enqueue(hold.worker, {});
  await waitUntil("the job started", () => hold.seen.length === 1);
  const stopped = runtime.stop({ grace: 60_000 });
  hold.release();
  await stopped;
  assert.equal(await stateOf(t.store, id), "completed");
  assert.deepEqual(await t.store.nodesList(), []);
});

Deno.test("an operator cancel aborts a running job through its signal", async () => {
  const hold = holdingWorker();
  await using t = await tempJobs([hold.worker]);
  const runtime = await t.jobs.start({ queues: { default: 2 }, node: "n1", heartbeatMs: 1000 });
  const { id } = await t.jobs.enqueue(hold.worker, {});
  await waitUntil("the job started", () => hold.seen.length === 1);
  const ctx = hold.seen[0]!;
  assert.equal(ctx.signal.aborted, false);

  await t.store.jobsCancel({ ids: [id], now: t.clock.now(), reason: "operator said so" });
  t.clock.advance(1000); // the next heartbeat finds the lease gone
  await waitUntil("the job's signal fired", () => ctx.signal.aborted);
  assert.ok(ctx.signal.reason instanceof LeaseLostError);
  await waitUntil("the job left the node", () => runtime.running === 0);
  assert.equal(await stateOf(t.store, id), "cancelled");
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.outcome, a.error]), [["cancelled", "operator said so"]]);
  await runtime.stop({ grace: 1000 });
});

Deno.test("a paused queue is not fetched until another process resumes it", async () => {
  const ran: number[] = [];
  const work = defineWorker({ name: "work", perform: (_args, ctx) => void ran.push(ctx.job.id) });
  const other = defineWorker({ name: "other", queue: "other", perform: () => {} });
  await using t = await tempJobs([work, other]);
  await t.store.queuePause({ name: "default", paused: true, now: t.clock.now() });
  const runtime = await t.jobs.start({ queues: { default: 2, other: 1 }, node: "n1" });

  const { id } = await t.jobs.enqueue(work, {});
  // A job enqueued after it in another queue runs: the runtime is fetching.
  const probe = await t.jobs.enqueue(other, {});
  await waitUntil(
    "the other queue's job completed",
    async () => (await stateOf(t.store, probe.id)) === "completed",
  );
  runtime.wake();
  t.clock.advance(5000); // poll timers and the stager tick; the queue stays paused
  const probe2 = await t.jobs.enqueue(other, {});
  await waitUntil(
    "a later job completed",
    async () => (await stateOf(t.store, probe2.id)) === "completed",
  );
  assert.equal(await stateOf(t.store, id), "available");
  assert.deepEqual(ran, []);

  // Another process (its own connection) resumes: the commit wakes this node.
  const elsewhere = await openSqliteStore(t.path);
  try {
    await elsewhere.queuePause({ name: "default", paused: false, now: t.clock.now() });
  } finally {
    await elsewhere.close();
  }
  await waitUntil(
    "the job completed after resume",
    async () => (await stateOf(t.store, id)) === "completed",
  );
  assert.deepEqual(ran, [id]);
  await runtime.stop({ grace: 1000 });
});

Deno.test("a queue resumed on the same store runs its jobs after runtime.wake()", async () => {
  const work = defineWorker({ name: "work", perform: () => {} });
  await using t = await tempJobs([work]);
  await t.store.queuePause({ name: "default", paused: true, now: t.clock.now() });
  const runtime = await t.jobs.start({ queues: { default: 1 }, node: "n1" });
  const { id } = await t.jobs.enqueue(work, {});
  assert.equal(await stateOf(t.store, id), "available");
  await t.store.queuePause({ name: "default", paused: false, now: t.clock.now() });
  runtime.wake();
  await waitUntil("the job completed", async () => (await stateOf(t.store, id)) === "completed");
  await runtime.stop({ grace: 1000 });
});

Deno.test("stop() with grace 0 leaves a running job executing for the lifeline to rescue", async () => {
  const hold = holdingWorker("stuck", { ignoreSignal: true });
  await using t = await tempJobs([hold.worker]);
  const leaseMs = 30_000;
  const runtime = await t.jobs.start({ queues: { default: 2 }, node: "n1", leaseMs });
  const { id } = await t.jobs.enqueue(hold.worker, {});
  await waitUntil("the job started", () => hold.seen.length === 1);
  const ctx = hold.seen[0]!;

  await runtime.stop({ grace: 0 });
  assert.ok(ctx.signal.aborted, "shutdown aborts the job's signal");
  assert.ok(ctx.signal.reason instanceof ShutdownError);
  assert.deepEqual(await t.store.nodesList(), []);
  const left = await t.store.jobGet({ id });
  assert.equal(left?.state, "executing");
  assert.equal(left?.attemptedBy, "n1");
  assert.equal(left?.fence, 1);
  assert.equal(left?.leaseExpiresAt, left!.attemptedAt! + leaseMs);
  assert.deepEqual(await t.store.attemptsList({ jobId: id }), []);

  // The job's perform ends after the node stopped: still nothing recorded.
  hold.release();
  assert.equal(await stateOf(t.store, id), "executing");

  // Before the lease ends the lifeline leaves it; after, it rescues it.
  assert.equal((await rescueOrphans(t.store, left!.leaseExpiresAt!)).rescued, 0);
  const report = await rescueOrphans(t.store, left!.leaseExpiresAt! + 1);
  assert.deepEqual(counts(report), { rescued: 1, discarded: 0, queues: ["default"] });
  const rescued = await t.store.jobGet({ id });
  assert.equal(rescued?.state, "available");
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => [a.node, a.outcome, a.error]), [
    ["n1", "orphaned", "orphaned: lease of n1 expired"],
  ]);
});

Deno.test("a job enqueued with `in` runs once the clock passes its time", async () => {
  const ran: number[] = [];
  const work = defineWorker({ name: "work", perform: (_args, ctx) => void ran.push(ctx.job.id) });
  await using t = await tempJobs([work]);
  const runtime = await t.jobs.start({ queues: { default: 2 }, node: "n1", stageMs: 1000 });
  const { id, state } = await t.jobs.enqueue(work, {}, { in: 60_000 });
  assert.equal(state, "scheduled");

  // Most of the way there: the stager leaves it scheduled.
  t.clock.advance(30_000);
  await waitUntil("the stager is parked", () => t.clock.sleepers > 0);
  const probe = await t.jobs.enqueue(work, {});
  await waitUntil(
    "a due job completed",
    async () => (await stateOf(t.store, probe.id)) === "completed",
  );
  assert.equal(await stateOf(t.store, id), "scheduled");
  assert.deepEqual(ran, [probe.id]);

  t.clock.advance(30_000);
  await waitUntil(
    "the scheduled job completed",
    async () => (await stateOf(t.store, id)) === "completed",
  );
  assert.deepEqual(ran, [probe.id, id]);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.attemptedAt, job!.scheduledAt);
  await runtime.stop({ grace: 1000 });
});

Deno.test("fast jobs are prefetched, and stop() gives back the ones not started with no attempt spent", async () => {
  const quick = defineWorker({ name: "quick", perform: () => {} });
  const hold = holdingWorker("hold");
  await using t = await tempJobs([quick, hold.worker]);
  const runtime = await t.jobs.start({ queues: { default: 1 }, node: "n1" });
  // Teach the producer that jobs here take no time: it starts to claim ahead.
  await t.jobs.enqueueMany(Array.from({ length: 30 }, () => ({ worker: quick, args: {} })));
  await waitUntil(
    "the quick jobs completed",
    async () => (await t.store.jobsCount({ state: "completed" }))[0]?.count === 30,
  );
  const blocker = await t.jobs.enqueue(hold.worker, {});
  const rest = await t.jobs.enqueueMany(
    Array.from({ length: 20 }, () => ({ worker: quick, args: {} })),
  );
  await waitUntil("the blocking job started", () => hold.seen.length === 1);
  // One slot, held by the blocker: every quick job claimed from now on waits in the buffer.
  await waitUntil(
    "the producer claimed ahead of its free slots",
    async () =>
      (await t.store.jobsList({ ids: rest.map((r) => r.id) })).some((j) => j.state === "executing"),
  );

  await runtime.stop({ grace: 0 });
  const after = await t.store.jobsList({ ids: rest.map((r) => r.id) });
  assert.ok(after.every((j) => j.state === "available" && j.attempt === 0), JSON.stringify(after));
  assert.ok(after.some((j) => j.fence === 1), "released jobs keep their raised fence");
  assert.equal(
    await stateOf(t.store, blocker.id),
    "executing",
    "the running job is left to the lifeline",
  );
});

Deno.test("a store that fails for a while loses no result and fails no job", async () => {
  const work = defineWorker({ name: "work", perform: () => {} });
  await using t = await tempJobs([work]);
  const { id } = await t.jobs.enqueue(work, {});
  // The store refuses every claim-and-record transaction until healed.
  const store = t.store;
  const claim = store.jobsClaim.bind(store);
  let failing = true;
  let refused = 0;
  store.jobsClaim = (params) => {
    if (failing && (params.results?.length ?? 0) > 0) {
      refused++;
      return Promise.reject(new Error("database is locked"));
    }
    return claim(params);
  };
  const runtime = await t.jobs.start({ queues: { default: 1 }, node: "n1" });
  await waitUntil("the result was refused", () => refused > 0);
  assert.equal(await stateOf(store, id), "executing", "nothing written while the store fails");
  failing = false;
  // The producer backs off on the injected clock; move it past the backoff.
  await waitUntil("the result was written", async () => {
    t.clock.advance(100);
    return (await stateOf(store, id)) === "completed";
  });
  const attempts = await store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((a) => a.outcome), ["completed"]);
  await runtime.stop({ grace: 0 });
});

Deno.test("a job enqueued while a claim is under way is not left waiting for the timer", async () => {
  const ran: number[] = [];
  const work = defineWorker({ name: "work", perform: (_args, ctx) => void ran.push(ctx.job.id) });
  await using t = await tempJobs([work]);
  const store = t.store;
  const claim = store.jobsClaim.bind(store);
  let late: Promise<{ id: number }> | null = null;
  store.jobsClaim = async (params) => {
    const out = await claim(params);
    // The first claim found the queue empty; a job commits (and wakes the
    // producer) before that claim's answer is back, as on a remote store.
    if (late === null && params.limit > 0 && out.jobs.length === 0) {
      late = t.jobs.enqueue(work, {});
      await late;
    }
    return out;
  };
  const runtime = await t.jobs.start({ queues: { default: 1 }, node: "n1" });
  await waitUntil("the claim under way saw the enqueue", () => late !== null);
  const { id } = await late!;
  // The injected clock stands still: only the wake can start the job.
  await waitUntil("the late job ran", () => ran.includes(id));
  await runtime.stop({ grace: 0 });
});
