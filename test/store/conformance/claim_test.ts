/**
 * The claim, on every backend: which jobs it takes (available, due, of its
 * queue, not paused), in which order, what it sets (attempt, fence, owner,
 * lease), that two connections never take one job twice, and a busy
 * producer's batches: hundreds of completions written with the next claim in
 * one call. On PostgreSQL a batch of plain completions is one statement of
 * its own (no join, values looked up by id), so those check what that
 * statement must keep from the transaction it replaces: fencing per row, each
 * attempt's values and kind, which jobs the claim takes, and the unique key
 * cleared.
 */

import assert from "node:assert/strict";
import type { ClaimedJob } from "../../../src/kernel/types.ts";
import type { Store } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import {
  claim,
  claimOne,
  completed,
  insert,
  LEASE_MS,
  newJob,
  retryable,
  stateOf,
  T0,
} from "./helpers.ts";

/** Five jobs whose claim order is, by their insert order, 3, 4, 2, 1, 0. */
function fiveInOrder() {
  return [
    newJob({ priority: 2, scheduledAt: T0 - 5000 }),
    newJob({ priority: 1, scheduledAt: T0 - 3000 }),
    newJob({ priority: 0, scheduledAt: T0 - 1000 }),
    newJob({ priority: 0, scheduledAt: T0 - 2000 }),
    newJob({ priority: 0, scheduledAt: T0 - 2000 }),
  ];
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsClaim() takes only available jobs of its queue that are due now", async ({ store }) => {
    const [due, later, other] = await insert(store, [
      newJob(),
      newJob({ scheduledAt: T0 + 1000 }), // scheduled
      newJob({ queue: "other" }),
    ]);
    // Available, but inserted "in the future": not due at T0.
    const [notDue] = await insert(store, [newJob({ scheduledAt: T0 + 5000 })], T0 + 5000);
    assert.equal(await stateOf(store, notDue!), "available");
    // A retryable job, due, is not claimable until staged.
    const [retry] = await insert(store, [newJob()]);
    const first = await claim(store, { limit: 10 });
    assert.deepEqual(first.map((j) => j.id).sort((a, b) => a - b), [due, retry]);
    const retried = first.find((j) => j.id === retry)!;
    await store.jobsRecord({
      node: "node-a",
      now: T0,
      results: [retryable(retried, T0)],
    });
    assert.equal(await stateOf(store, retry!), "retryable");

    // Executing, retryable, scheduled, not-due and other-queue jobs: nothing to claim.
    assert.deepEqual(await claim(store, { node: "node-b" }), []);
    assert.equal(await stateOf(store, due!), "executing");
    assert.equal(await stateOf(store, later!), "scheduled");
    assert.equal(await stateOf(store, other!), "available");

    const [otherJob] = await claim(store, { queue: "other" });
    assert.equal(otherJob?.id, other);
    const [late] = await claim(store, { now: T0 + 5000 });
    assert.equal(late?.id, notDue);
  });

  test("jobsClaim() orders by priority, then scheduled_at, then id", async ({ store }) => {
    const [e, a, b, c, d] = await insert(store, fiveInOrder());
    const order: number[] = [];
    for (let i = 0; i < 5; i++) order.push((await claimOne(store)).id);
    assert.deepEqual(order, [c, d, b, a, e]);
    assert.deepEqual(await claim(store), []);
  });

  test("jobsClaim() hands a batch out in claim order, so its most urgent jobs start first", async ({ store }) => {
    const [e, a, b, c, d] = await insert(store, fiveInOrder());
    assert.deepEqual((await claim(store)).map((j) => j.id), [c, d, b, a, e]);
  });

  test("jobsClaim() with a limit takes the first jobs in claim order", async ({ store }) => {
    const [low, high1, high2] = await insert(store, [
      newJob({ priority: 5 }),
      newJob({ priority: 0 }),
      newJob({ priority: 0 }),
    ]);
    const jobs = await claim(store, { limit: 2 });
    assert.deepEqual(jobs.map((j) => j.id).sort((x, y) => x - y), [high1, high2]);
    assert.equal(await stateOf(store, low!), "available");
  });

  test("jobsClaim() increments attempt and fence and sets attempted_by and the lease", async ({ store }) => {
    const [id] = await insert(store, [newJob({ maxAttempts: 3, priority: 4 })]);
    const job = await claimOne(store, { node: "node-a", now: T0 + 10 });
    assert.equal(job.id, id);
    assert.equal(job.attempt, 1);
    assert.equal(job.fence, 1);
    assert.equal(job.attemptedAt, T0 + 10);
    assert.equal(job.maxAttempts, 3);
    assert.equal(job.priority, 4);
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "executing");
    assert.equal(row?.attempt, 1);
    assert.equal(row?.fence, 1);
    assert.equal(row?.attemptedBy, "node-a");
    assert.equal(row?.attemptedAt, T0 + 10);
    assert.equal(row?.leaseExpiresAt, T0 + 10 + LEASE_MS);
  });

  test("jobsClaim() on a paused queue claims nothing until it is resumed", async ({ store }) => {
    const [id] = await insert(store, [newJob()]);
    const [other] = await insert(store, [newJob({ queue: "other" })]);
    await store.queuePause({ name: "default", paused: true, now: T0 });
    const queues = await store.queuesList();
    assert.deepEqual(queues.map((q) => [q.name, q.paused]), [["default", true]]);
    assert.deepEqual(await claim(store), []);
    assert.equal(await stateOf(store, id!), "available");
    assert.equal((await claimOne(store, { queue: "other" })).id, other);

    await store.queuePause({ name: "default", paused: false, now: T0 + 1 });
    assert.equal((await store.queuesList())[0]?.paused, false);
    assert.equal((await claimOne(store)).id, id);
  });

  test("jobsClaim() from two connections never hands out a job twice", async ({ store, connect }) => {
    const other = await connect();
    const ids = await insert(store, Array.from({ length: 60 }, () => newJob()));
    const seen: number[] = [];
    const drain = async (s: Store, node: string) => {
      for (;;) {
        const jobs = await claim(s, { node, limit: 3 });
        if (jobs.length === 0) return;
        seen.push(...jobs.map((j) => j.id));
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    };
    await Promise.all([drain(store, "node-a"), drain(other, "node-b")]);
    assert.equal(seen.length, ids.length);
    assert.deepEqual([...seen].sort((a, b) => a - b), ids);
  });

  test("jobsClaim() writes 300 completions, fenced per row, and claims the next 300", async ({ store }) => {
    const jobs = Array.from({ length: 600 }, (_, i) =>
      newJob({
        scheduledAt: T0,
        args: JSON.stringify({ i }),
        priority: i % 3,
        uniqueKey: i % 50 === 0 ? `key-${i}` : null,
      }));
    const ids = (await store.jobsInsert({ jobs, now: T0 })).map((r) => r.id);
    // Claim order: priority, then scheduled_at (all T0), then id.
    const inOrder = ids.map((id, i) => ({ id, priority: i % 3 }))
      .sort((x, y) => x.priority - y.priority || x.id - y.id).map((x) => x.id);
    const { jobs: first } = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit: 300,
      now: T0,
      leaseMs: LEASE_MS,
    });
    assert.equal(first.length, 300);

    // Every tenth has a stale fence, and its result must be reported lost.
    const results = first.map((job, k) =>
      completed(job, {
        fence: k % 10 === 9 ? job.fence + 1 : job.fence,
        ...(k % 7 === 0 ? { output: `out ${job.id}` } : {}),
        ...(k % 11 === 0 ? { definition: `def-${k}` } : {}),
      })
    );
    const { jobs: next, report } = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit: 300,
      now: T0 + 5,
      leaseMs: LEASE_MS,
      results,
    });
    const stale = first.filter((_, k) => k % 10 === 9).map((j) => j.id);
    assert.deepEqual(report.lost, stale);
    assert.deepEqual(report.recorded, first.filter((_, k) => k % 10 !== 9).map((j) => j.id));

    const idsOf = (claimed: ClaimedJob[]) => claimed.map((j) => j.id).sort((x, y) => x - y);
    const sortedIds = (list: number[]) => [...list].sort((x, y) => x - y);
    assert.deepEqual(idsOf(first), sortedIds(inOrder.slice(0, 300)));
    assert.deepEqual(idsOf(next), sortedIds(inOrder.slice(300)), "the next 300 in claim order");
    assert.ok(next.every((j) => j.attempt === 1 && j.fence === 1 && j.attemptedAt === T0 + 5));

    for (const [k, job] of first.entries()) {
      const row = await store.jobGet({ id: job.id });
      const attempts = await store.attemptsList({ jobId: job.id });
      if (k % 10 === 9) {
        assert.equal(row?.state, "executing");
        assert.deepEqual(attempts, []);
        continue;
      }
      assert.equal(row?.state, "completed");
      assert.equal(row?.completedAt, T0 + 5);
      assert.equal(row?.leaseExpiresAt, null);
      assert.equal(row?.uniqueKey, null, "a final state clears the unique key");
      assert.deepEqual(
        attempts.map((a) => [a.fence, a.node, a.kind, a.startedAt, a.finishedAt, a.outcome]),
        [[1, "node-a", "run", T0, T0 + 5, "completed"]],
      );
      assert.equal(attempts[0]?.output, k % 7 === 0 ? `out ${job.id}` : null);
      assert.equal(attempts[0]?.definition, k % 11 === 0 ? `def-${k}` : null);
    }
  });

  test("jobsClaim() records a second attempt as a retry and a replayed one as a replay", async ({ store }) => {
    const [a, b] = (await store.jobsInsert({
      jobs: [newJob({ scheduledAt: T0 }), newJob({ scheduledAt: T0 })],
      now: T0,
    })).map((r) => r.id);
    const { jobs: claimed } = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit: 2,
      now: T0,
      leaseMs: LEASE_MS,
    });
    const byId = new Map(claimed.map((j) => [j.id, j]));
    // a fails once and comes back; b completes and is replayed by an operator.
    await store.jobsRecord({
      node: "node-a",
      now: T0 + 1,
      results: [
        { ...completed(byId.get(a!)!), outcome: "retryable", error: "boom", at: T0 + 2 },
        completed(byId.get(b!)!),
      ],
    });
    await store.jobsStage({ now: T0 + 2, limit: 10 });
    await store.jobReplay({ id: b!, now: T0 + 2, actor: "erin", reason: "redo", force: false });
    const { jobs: again } = await store.jobsClaim({
      queue: "default",
      node: "node-b",
      limit: 2,
      now: T0 + 3,
      leaseMs: LEASE_MS,
    });
    assert.equal(again.length, 2);
    const { report } = await store.jobsClaim({
      queue: "default",
      node: "node-b",
      limit: 2,
      now: T0 + 4,
      leaseMs: LEASE_MS,
      results: again.map((j) => completed(j)),
    });
    assert.deepEqual([...report.recorded].sort((x, y) => x - y), [a!, b!].sort((x, y) => x - y));
    const kinds = async (id: number) =>
      (await store.attemptsList({ jobId: id })).map((x) => [x.fence, x.node, x.kind, x.actor]);
    assert.deepEqual(await kinds(a!), [[1, "node-a", "run", null], [2, "node-b", "retry", null]]);
    assert.deepEqual(await kinds(b!), [[1, "node-a", "run", null], [
      2,
      "node-b",
      "replay",
      "erin",
    ]]);
  });
}
