/**
 * Results and leases, on every backend: a result is written only by the node
 * that holds the job's lease with its current fence (jobsRecord, the results
 * a claim carries), renewals and releases are fenced alike, and a node can
 * ask which of its leases it lost.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, completed, insert, LEASE_MS, newJob, stateOf, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsRecord() with a stale fence or another node changes nothing and is lost", async ({ store }) => {
    await insert(store, [newJob()]);
    const job = await claimOne(store, { node: "node-a" });
    const before = await store.jobGet({ id: job.id });

    const stale = await store.jobsRecord({
      node: "node-a",
      now: T0 + 1,
      results: [completed(job, { fence: job.fence - 1 })],
    });
    assert.deepEqual(stale, { recorded: [], lost: [job.id] });
    const foreign = await store.jobsRecord({
      node: "node-b",
      now: T0 + 1,
      results: [completed(job)],
    });
    assert.deepEqual(foreign, { recorded: [], lost: [job.id] });
    const future = await store.jobsRecord({
      node: "node-a",
      now: T0 + 1,
      results: [completed(job, { fence: job.fence + 1 })],
    });
    assert.deepEqual(future, { recorded: [], lost: [job.id] });
    assert.deepEqual(await store.jobGet({ id: job.id }), before);
    assert.deepEqual(await store.attemptsList({ jobId: job.id }), []);

    const ok = await store.jobsRecord({ node: "node-a", now: T0 + 2, results: [completed(job)] });
    assert.deepEqual(ok, { recorded: [job.id], lost: [] });
    const row = await store.jobGet({ id: job.id });
    assert.equal(row?.state, "completed");
    assert.equal(row?.completedAt, T0 + 2);
    assert.equal(row?.leaseExpiresAt, null);
    const attempts = await store.attemptsList({ jobId: job.id });
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]?.outcome, "completed");
    assert.equal(attempts[0]?.node, "node-a");
    assert.equal(attempts[0]?.fence, 1);
    assert.equal(attempts[0]?.startedAt, T0);
    assert.equal(attempts[0]?.finishedAt, T0 + 2);

    // The lease ended with the completion: writing it again is lost too.
    const again = await store.jobsRecord({
      node: "node-a",
      now: T0 + 3,
      results: [completed(job)],
    });
    assert.deepEqual(again, { recorded: [], lost: [job.id] });
    assert.equal((await store.attemptsList({ jobId: job.id })).length, 1);
  });

  test("jobsClaim() writes its results first and reports stale ones lost", async ({ store }) => {
    await insert(store, [newJob(), newJob(), newJob()]);
    const [one, two] = await claim(store, { limit: 2 });
    const { jobs, report } = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit: 5,
      now: T0 + 1,
      leaseMs: LEASE_MS,
      results: [completed(one!), completed(two!, { fence: 99 })],
    });
    assert.deepEqual(report, { recorded: [one!.id], lost: [two!.id] });
    assert.equal(jobs.length, 1);
    assert.equal(await stateOf(store, one!.id), "completed");
    assert.equal(await stateOf(store, two!.id), "executing");
    assert.deepEqual(await store.attemptsList({ jobId: two!.id }), []);
  });

  test("jobsRenew() extends held leases and reports stale or foreign ones lost", async ({ store }) => {
    await insert(store, [newJob(), newJob()]);
    const [a, b] = await claim(store, { node: "node-a" });
    const held = { id: a!.id, fence: a!.fence };
    const stale = { id: b!.id, fence: b!.fence - 1 };

    const renewed = await store.jobsRenew({
      node: "node-a",
      leases: [held, stale],
      now: T0 + 10_000,
      leaseMs: LEASE_MS,
    });
    assert.deepEqual(renewed.lost, [stale]);
    assert.equal((await store.jobGet({ id: a!.id }))?.leaseExpiresAt, T0 + 10_000 + LEASE_MS);
    assert.equal((await store.jobGet({ id: b!.id }))?.leaseExpiresAt, T0 + LEASE_MS);

    const foreign = await store.jobsRenew({
      node: "node-b",
      leases: [held],
      now: T0 + 20_000,
      leaseMs: LEASE_MS,
    });
    assert.deepEqual(foreign.lost, [held]);
    assert.equal((await store.jobGet({ id: a!.id }))?.leaseExpiresAt, T0 + 10_000 + LEASE_MS);
    assert.deepEqual(await store.attemptsList({ jobId: a!.id }), []);
  });

  test("jobsLeasesLost() names the leases a node no longer holds", async ({ store }) => {
    await insert(store, [newJob(), newJob()]);
    const [a, b] = await claim(store, { node: "node-a" });
    const leaseA = { id: a!.id, fence: a!.fence };
    const leaseB = { id: b!.id, fence: b!.fence };
    assert.deepEqual(await store.jobsLeasesLost({ node: "node-a", leases: [leaseA, leaseB] }), []);
    assert.deepEqual(await store.jobsLeasesLost({ node: "node-b", leases: [leaseA] }), [leaseA]);
    const staleA = { id: a!.id, fence: a!.fence + 1 };
    assert.deepEqual(await store.jobsLeasesLost({ node: "node-a", leases: [staleA] }), [staleA]);
    await store.jobsRecord({ node: "node-a", now: T0, results: [completed(b!)] });
    assert.deepEqual(
      await store.jobsLeasesLost({ node: "node-a", leases: [leaseA, leaseB] }),
      [leaseB],
    );
    // Reads only: the held lease is unchanged.
    assert.equal((await store.jobGet({ id: a!.id }))?.state, "executing");
  });

  test("jobsRelease() gives back held leases only, the attempt unused and the fence kept", async ({ store }) => {
    const [id] = await insert(store, [newJob()]);
    const job = await claimOne(store, { node: "node-a" });
    const lease = { id: id!, fence: job.fence };
    assert.deepEqual(await store.jobsRelease({ node: "node-b", leases: [lease] }), []);
    assert.deepEqual(
      await store.jobsRelease({ node: "node-a", leases: [{ id: id!, fence: 0 }] }),
      [],
    );
    assert.equal(await stateOf(store, id!), "executing");

    assert.deepEqual(await store.jobsRelease({ node: "node-a", leases: [lease] }), [lease]);
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "available");
    assert.equal(row?.attempt, 0);
    assert.equal(row?.leaseExpiresAt, null);
    assert.deepEqual(await store.attemptsList({ jobId: id! }), []);
    // Released once: a second release and a late completion find no lease.
    assert.deepEqual(await store.jobsRelease({ node: "node-a", leases: [lease] }), []);
    const report = await store.jobsRecord({ node: "node-a", now: T0, results: [completed(job)] });
    assert.deepEqual(report.lost, [id]);

    const again = await claimOne(store, { node: "node-b" });
    assert.equal(again.attempt, 1);
    assert.equal(again.fence, 2);
  });
}
