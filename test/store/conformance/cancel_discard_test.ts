/**
 * An operator's cancel and discard, on every backend: waiting jobs stop at
 * once; an executing job's lease is broken and its attempt row written by
 * the action; final jobs are left as they are.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claimOne, completed, insert, LEASE_MS, newJob, stateOf, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsCancel() of an executing job breaks its lease and writes a cancelled attempt", async ({ store }) => {
    const [waiting, done] = await insert(store, [newJob({ priority: 9 }), newJob({ priority: 8 })]);
    const [id] = await insert(store, [newJob()]);
    const job = await claimOne(store, { node: "node-a" });
    assert.equal(job.id, id);
    const finished = await claimOne(store, { node: "node-a" });
    assert.equal(finished.id, done);
    await store.jobsRecord({ node: "node-a", now: T0, results: [completed(finished)] });

    const cancelled = await store.jobsCancel({
      ids: [id!, waiting!, done!, 999_999],
      now: T0 + 5,
      reason: "operator: stop it",
    });
    assert.deepEqual(cancelled.sort((a, b) => a - b), [waiting, id].sort((a, b) => a! - b!));
    assert.equal(await stateOf(store, done!), "completed");

    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "cancelled");
    assert.equal(row?.cancelledAt, T0 + 5);
    assert.equal(row?.leaseExpiresAt, null);
    assert.equal(row?.errors.at(-1)?.error, "operator: stop it");

    const renewal = await store.jobsRenew({
      node: "node-a",
      leases: [{ id: id!, fence: job.fence }],
      now: T0 + 6,
      leaseMs: LEASE_MS,
    });
    assert.deepEqual(renewal.lost, [{ id: id!, fence: job.fence }]);
    const report = await store.jobsRecord({
      node: "node-a",
      now: T0 + 7,
      results: [completed(job)],
    });
    assert.deepEqual(report, { recorded: [], lost: [id] });
    assert.equal(await stateOf(store, id!), "cancelled");

    const attempts = await store.attemptsList({ jobId: id! });
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]?.outcome, "cancelled");
    assert.equal(attempts[0]?.fence, 1);
    assert.equal(attempts[0]?.node, "node-a");
    assert.equal(attempts[0]?.error, "operator: stop it");
    assert.equal(attempts[0]?.finishedAt, T0 + 5);
    // A job that never ran has no attempt to end.
    assert.deepEqual(await store.attemptsList({ jobId: waiting! }), []);
    assert.equal(await stateOf(store, waiting!), "cancelled");
  });

  test("jobsDiscard() discards jobs not final and breaks an executing job's lease", async ({ store }) => {
    const [waiting, id, done] = await insert(store, [
      newJob({ priority: 9 }),
      newJob({ priority: 0 }),
      newJob({ priority: 1 }),
    ]);
    const job = await claimOne(store);
    assert.equal(job.id, id);
    const finished = await claimOne(store);
    await store.jobsRecord({ node: "node-a", now: T0, results: [completed(finished)] });

    const discarded = await store.jobsDiscard({
      ids: [id!, waiting!, done!],
      now: T0 + 5,
      reason: "operator: poison",
    });
    assert.deepEqual(discarded, [id, waiting]);
    assert.equal(await stateOf(store, done!), "completed");
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "discarded");
    assert.equal(row?.discardedAt, T0 + 5);
    assert.equal(row?.errors.at(-1)?.error, "operator: poison");
    assert.equal(await stateOf(store, waiting!), "discarded");

    const renewal = await store.jobsRenew({
      node: "node-a",
      leases: [{ id: id!, fence: job.fence }],
      now: T0 + 6,
      leaseMs: LEASE_MS,
    });
    assert.equal(renewal.lost.length, 1);
    const attempts = await store.attemptsList({ jobId: id! });
    assert.deepEqual(
      attempts.map((a) => [a.fence, a.node, a.kind, a.outcome, a.error]),
      [[1, "node-a", "run", "discarded", "operator: poison"]],
    );
  });
}
