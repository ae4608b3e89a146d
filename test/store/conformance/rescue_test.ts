/**
 * Expired leases, on every backend: jobsRescue() gives an orphaned job back
 * (its attempt ended `orphaned`), and the fence rising with every claim makes
 * the first claimer's late writes lost.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, completed, insert, LEASE_MS, newJob, stateOf, T0 } from "./helpers.ts";

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

  test("jobsLeaseExpired lists executing jobs past their lease, oldest expiry first, in a tenant's scope", async ({ store }) => {
    const [acme, globex, later] = await insert(store, [
      newJob({ tenant: "acme" }),
      newJob({ tenant: "globex" }),
      newJob({ tenant: "acme" }),
    ]);
    await claim(store, { limit: 2 });
    await claim(store, { now: T0 + 1000 });
    // Nothing has expired yet.
    assert.deepEqual(await store.jobsLeaseExpired({ now: T0 + LEASE_MS, limit: 10 }), []);
    const expired = await store.jobsLeaseExpired({ now: T0 + LEASE_MS + 1, limit: 10 });
    assert.deepEqual(expired.map((j) => j.id), [acme, globex]);
    assert.equal(expired[0]!.attemptedBy, "node-a");
    assert.equal(expired[0]!.state, "executing");
    const all = await store.jobsLeaseExpired({ now: T0 + LEASE_MS + 2000, limit: 10 });
    assert.deepEqual(all.map((j) => j.id), [acme, globex, later]);
    assert.deepEqual(
      (await store.jobsLeaseExpired({ now: T0 + LEASE_MS + 2000, limit: 1 })).map((j) => j.id),
      [acme],
    );
    assert.deepEqual(
      (await store.jobsLeaseExpired({ now: T0 + LEASE_MS + 2000, limit: 10, tenant: "acme" }))
        .map((j) => j.id),
      [acme, later],
    );
    // Rescued, a job is no longer stuck.
    await store.jobsRescue({ now: T0 + LEASE_MS + 2000, limit: 10 });
    assert.deepEqual(await store.jobsLeaseExpired({ now: T0 + LEASE_MS + 2000, limit: 10 }), []);
    await assert.rejects(
      () => store.jobsLeaseExpired({ now: T0, limit: 1.5 }),
      (error) => error instanceof RangeError && /limit/.test(error.message),
    );
  });
}
