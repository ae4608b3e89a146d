/**
 * Claims and fencing end to end: racing claimers (in one process and across
 * OS processes) run each job exactly once, and a node whose lease is gone
 * (rescued elsewhere, or cancelled by an operator) changes nothing.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { SystemClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import type { JobResult } from "../../src/kernel/types.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { drainQueue, waitUntil } from "../../src/testing.ts";
import { rescueOrphans } from "../../src/runtime/lifeline.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { LeaseLostError } from "../../src/kernel/abort_reasons.ts";
import { denoScript } from "../support/processes.ts";
import { tempJobs, tempStore } from "../support/stores.ts";
import { counts } from "../support/rescue.ts";

const CHILD = fileURLToPath(new URL("../support/child_drain.ts", import.meta.url));

Deno.test("claim() runs each job once under 4 racing drains", async () => {
  const runs = new Map<number, number>();
  const count = defineWorker({
    name: "count",
    perform: async (_args, ctx) => {
      runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1);
      // Yield to the timer queue so the other drains claim while this job runs.
      await new Promise((resolve) => setTimeout(resolve, 0));
    },
  });
  await using t = await tempJobs([count]);
  const inserted = await t.jobs.enqueueMany(
    Array.from({ length: 30 }, (_, n) => ({ worker: count, args: { n } })),
  );
  const ids = inserted.map((r) => r.id);

  const results = await Promise.all(
    Array.from({ length: 4 }, () => drainQueue(t.jobs, "default", { batch: 1 })),
  );

  assert.equal(runs.size, 30);
  for (const id of ids) assert.equal(runs.get(id), 1, `job ${id} ran ${runs.get(id)} times`);
  assert.equal(results.reduce((n, r) => n + r.completed, 0), 30);
  assert.equal(results.reduce((n, r) => n + r.lost, 0), 0);
  assert.ok(
    results.filter((r) => r.completed > 0).length >= 2,
    `the drains did not race: ${JSON.stringify(results.map((r) => r.completed))}`,
  );
  const rows = await t.store.jobsList({ ids });
  assert.ok(rows.every((j) => j.state === "completed" && j.fence === 1 && j.attempt === 1));
});

/** Spawns `n` child_drain.ts processes on `path` and returns the ids each ran. */
async function runChildren(
  path: string,
  mode: "drain" | "runtime",
  n: number,
  total: number,
): Promise<{ node: string; ids: number[] }[]> {
  const children = Array.from({ length: n }, (_, i) =>
    denoScript(CHILD, [
      path,
      mode,
      String(n),
      `child-${i}`,
      String(total),
    ], {
      stdout: "piped",
      stderr: "piped",
      // A wedged child is killed rather than hanging the suite.
      signal: AbortSignal.timeout(90_000),
    }).output());
  const outputs = await Promise.all(children);
  return outputs.map((out, i) => {
    const stdout = new TextDecoder().decode(out.stdout).trim();
    const stderr = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 0, `child-${i} exited with ${out.code}: ${stderr}`);
    const last = stdout.split("\n").at(-1) ?? "";
    return JSON.parse(last) as { node: string; ids: number[] };
  });
}

/**
 * Every job exactly once, on every try. A try where the OS let one process
 * drain everything before the others got a core proves no race, so the
 * scenario runs again (up to 3 times) until at least two processes took part.
 */
async function assertRanOnceAcrossProcesses(mode: "drain" | "runtime"): Promise<void> {
  let active = 0;
  for (let attempt = 1; attempt <= 3 && active < 2; attempt++) {
    active = await runOnceAcrossProcesses(mode);
  }
  assert.ok(active >= 2, `in 3 tries, only ${active} process ran jobs: the claims did not race`);
}

/** One try: returns how many processes ran jobs. */
async function runOnceAcrossProcesses(mode: "drain" | "runtime"): Promise<number> {
  const TOTAL = 3000;
  await using t = await tempStore();
  // The children read the system clock: insert with it, so every job is due.
  const jobs = new Jobs({ store: t.store, clock: new SystemClock(), logger: silentLogger });
  const inserted = await jobs.enqueueMany(
    Array.from({ length: TOTAL }, (_, n) => ({ worker: "record", args: { n } })),
  );
  const ids = inserted.map((r) => r.id);

  const outputs = await runChildren(t.path, mode, 3, TOTAL);

  const all = outputs.flatMap((o) => o.ids);
  const union = new Set(all);
  assert.equal(union.size, TOTAL, "every job ran");
  assert.equal(all.length, TOTAL, `${all.length - union.size} jobs ran more than once`);
  assert.deepEqual([...union].sort((a, b) => a - b), ids);

  const counts = await t.store.jobsCount({});
  assert.deepEqual(counts, [{ queue: "default", state: "completed", count: TOTAL }]);
  const rows = await t.store.jobsList({});
  assert.ok(rows.every((j) => j.fence === 1 && j.attempt === 1), "a job was claimed twice");
  // Each job ran on the node that performed it: its attempt row names that node.
  const ranBy = new Map<number, string>();
  for (const o of outputs) for (const id of o.ids) ranBy.set(id, o.node);
  for (const row of rows) assert.equal(row.attemptedBy, ranBy.get(row.id));
  return outputs.filter((o) => o.ids.length > 0).length;
}

Deno.test({
  name: "claim() runs each of 3,000 jobs once across 3 draining OS processes",
  sanitizeResources: false,
  fn: () => assertRanOnceAcrossProcesses("drain"),
});

Deno.test({
  name: "claim() runs each of 3,000 jobs once across 3 OS processes running a runtime",
  sanitizeResources: false,
  fn: () => assertRanOnceAcrossProcesses("runtime"),
});

Deno.test("a completion with a stale fence changes nothing after the lifeline rescued the job", async () => {
  const work = defineWorker({ name: "work", maxAttempts: 3, perform: () => {} });
  await using t = await tempJobs([work]);
  const { id } = await t.jobs.enqueue(work, {});
  const leaseMs = 30_000;

  const claimA = await t.store.jobsClaim({
    queue: "default",
    node: "node-a",
    limit: 1,
    now: t.clock.now(),
    leaseMs,
  });
  const a = claimA.jobs[0]!;
  assert.equal(a.fence, 1);

  // Node A goes quiet; before the lease ends the lifeline leaves the job alone.
  t.clock.advance(leaseMs - 1);
  assert.equal((await rescueOrphans(t.store, t.clock.now())).rescued, 0);
  assert.equal((await t.store.jobGet({ id }))?.attemptedBy, "node-a");
  t.clock.advance(2);
  assert.deepEqual(counts(await rescueOrphans(t.store, t.clock.now())), {
    rescued: 1,
    discarded: 0,
    queues: ["default"],
  });

  const claimB = await t.store.jobsClaim({
    queue: "default",
    node: "node-b",
    limit: 1,
    now: t.clock.now(),
    leaseMs,
  });
  const b = claimB.jobs[0]!;
  assert.equal(b.id, id);
  assert.equal(b.fence, 2);

  // Node A wakes up and reports its attempt: fence 1 is stale.
  const late: JobResult = {
    id,
    fence: a.fence,
    attempt: a.attempt,
    startedAt: a.attemptedAt,
    outcome: "completed",
  };
  const report = await t.store.jobsRecord({ node: "node-a", now: t.clock.now(), results: [late] });
  assert.deepEqual(report, { recorded: [], lost: [id] });
  const renewal = await t.store.jobsRenew({
    node: "node-a",
    leases: [{ id, fence: a.fence }],
    now: t.clock.now(),
    leaseMs,
  });
  assert.equal(renewal.lost.length, 1);
  let row = await t.store.jobGet({ id });
  assert.equal(row?.state, "executing");
  assert.equal(row?.attemptedBy, "node-b");
  assert.equal(row?.fence, 2);
  assert.equal(row?.leaseExpiresAt, t.clock.now() + leaseMs);

  const done = await t.store.jobsRecord({
    node: "node-b",
    now: t.clock.now(),
    results: [{ ...late, fence: b.fence, attempt: b.attempt, startedAt: b.attemptedAt }],
  });
  assert.deepEqual(done, { recorded: [id], lost: [] });
  row = await t.store.jobGet({ id });
  assert.equal(row?.state, "completed");
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(attempts.map((x) => [x.fence, x.node, x.outcome]), [
    [1, "node-a", "orphaned"],
    [2, "node-b", "completed"],
  ]);
});

Deno.test("a running job whose lease is cancelled has its signal fire and its node records nothing", async () => {
  let started = 0;
  let reason: unknown = null;
  const hold = defineWorker({
    name: "hold",
    perform: async (_args, ctx) => {
      started++;
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      reason = ctx.signal.reason;
      // Returning normally would complete the job, if the node still recorded it.
    },
  });
  const quick = defineWorker({ name: "quick", perform: () => {} });
  await using t = await tempJobs([hold, quick]);
  const runtime = await t.jobs.start({ queues: { default: 2 }, node: "n1", heartbeatMs: 1000 });
  const { id } = await t.jobs.enqueue(hold, {});
  await waitUntil("the job started", () => started === 1);
  assert.equal((await t.store.jobGet({ id }))?.attemptedBy, "n1");

  assert.deepEqual(await t.store.jobsCancel({ ids: [id], now: t.clock.now(), reason: "stop" }), [
    id,
  ]);
  // The heartbeat notices the broken lease on its next beat.
  t.clock.advance(1000);
  await waitUntil("the job's signal fired", () => reason !== null);
  assert.ok(reason instanceof LeaseLostError, `signal reason: ${reason}`);
  await waitUntil("the job left the node", () => runtime.running === 0);

  // Another job round-trips through claim and record: any pending result is written by now.
  const next = await t.jobs.enqueue(quick, {});
  await waitUntil(
    "the next job completed",
    async () => (await t.store.jobGet({ id: next.id }))?.state === "completed",
  );
  const row = await t.store.jobGet({ id });
  assert.equal(row?.state, "cancelled");
  assert.deepEqual(row?.errors.map((e) => e.error), ["stop"]);
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.equal(attempts.length, 1, JSON.stringify(attempts));
  assert.equal(attempts[0]?.outcome, "cancelled");
  assert.equal(attempts[0]?.error, "stop");
  await runtime.stop({ grace: 0 });
});
