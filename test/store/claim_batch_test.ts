/**
 * A busy producer's batches, on every backend: hundreds of completions
 * written with the next claim in one call. On PostgreSQL a batch of plain
 * completions is one statement of its own (no join, values looked up by
 * id), so these check what that statement must keep from the transaction
 * it replaces: fencing per row, each attempt's values and kind, which jobs
 * the claim takes, and the unique key cleared.
 */

import assert from "node:assert/strict";
import type { ClaimedJob, JobResult } from "../../src/kernel/types.ts";
import { BACKENDS, harnessTest, newJob } from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const LEASE_MS = 30_000;

function completed(job: ClaimedJob, fields: Partial<JobResult> = {}): JobResult {
  return {
    id: job.id,
    fence: job.fence,
    attempt: job.attempt,
    startedAt: job.attemptedAt,
    outcome: "completed",
    ...fields,
  } as JobResult;
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

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
