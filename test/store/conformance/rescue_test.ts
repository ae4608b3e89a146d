/**
 * Expired leases, on every backend: jobsRescue() gives an orphaned job back
 * (its attempt ended `orphaned`), and the fence rising with every claim makes
 * the first claimer's late writes lost.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claimOne, completed, insert, LEASE_MS, newJob, stateOf, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("the fence rises on every claim: a rescued job claimed again has fence 2", async ({ store }) => {
    const [id] = await insert(store, [newJob({ maxAttempts: 5 })]);
    const first = await claimOne(store, { node: "node-a" });
    assert.equal(first.fence, 1);
    // The lease has not expired yet: nothing to rescue.
    assert.deepEqual(await store.jobsRescue({ now: T0 + LEASE_MS - 1, limit: 10 }), {
      rescued: 0,
      discarded: 0,
      queues: [],
      jobs: [],
    });
    const later = T0 + LEASE_MS + 1;
    assert.deepEqual(await store.jobsRescue({ now: later, limit: 10 }), {
      rescued: 1,
      discarded: 0,
      queues: ["default"],
      jobs: [{
        id,
        queue: "default",
        node: "node-a",
        attempt: 1,
        maxAttempts: 5,
        state: "available",
      }],
    });
    assert.equal(await stateOf(store, id!), "available");
    const second = await claimOne(store, { node: "node-b", now: later });
    assert.equal(second.id, id);
    assert.equal(second.fence, 2);
    assert.equal(second.attempt, 2);

    // The first claimer's completion and renewal carry fence 1: both lost.
    const report = await store.jobsRecord({
      node: "node-a",
      now: later,
      results: [completed(first)],
    });
    assert.deepEqual(report, { recorded: [], lost: [id] });
    const renewal = await store.jobsRenew({
      node: "node-a",
      leases: [{ id: id!, fence: 1 }],
      now: later,
      leaseMs: LEASE_MS,
    });
    assert.equal(renewal.lost.length, 1);
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "executing");
    assert.equal(row?.attemptedBy, "node-b");
    assert.equal(row?.fence, 2);

    await store.jobsRecord({ node: "node-b", now: later + 1, results: [completed(second)] });
    const attempts = await store.attemptsList({ jobId: id! });
    assert.deepEqual(
      attempts.map((a) => [a.fence, a.node, a.outcome]),
      [[1, "node-a", "orphaned"], [2, "node-b", "completed"]],
    );
  });
}
