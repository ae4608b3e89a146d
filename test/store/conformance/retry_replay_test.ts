/**
 * An operator's retry and replay, on every backend: which jobs a retry makes
 * available (and the extra attempt a used-up one gets), and a replay as a new
 * attempt of the same row, marked on the attempt that runs.
 */

import assert from "node:assert/strict";
import type { JobResult } from "../../../src/kernel/types.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, completed, insert, newJob, retryable, stateOf, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsRetry() makes waiting and final jobs available now, one more attempt if used up", async ({ store }) => {
    const [used, failed, later, running, ready] = await insert(store, [
      newJob({ maxAttempts: 1, priority: 0 }),
      newJob({ maxAttempts: 3, priority: 1 }),
      newJob({ scheduledAt: T0 + 60_000 }),
      newJob({ priority: 2 }),
      newJob({ priority: 9 }),
    ]);
    const first = await claimOne(store);
    assert.equal(first.id, used);
    const second = await claimOne(store);
    assert.equal(second.id, failed);
    const third = await claimOne(store);
    assert.equal(third.id, running);
    await store.jobsRecord({
      node: "node-a",
      now: T0 + 1,
      results: [
        { ...retryable(first, T0 + 10), outcome: "discarded", error: "boom" },
        retryable(second, T0 + 10_000),
      ],
    });
    assert.equal(await stateOf(store, used!), "discarded");
    assert.equal(await stateOf(store, failed!), "retryable");

    const changed = await store.jobsRetry({
      ids: [used!, failed!, later!, running!, ready!, 999_999],
      now: T0 + 5,
    });
    assert.deepEqual(changed, [used, failed, later]);
    for (const id of [used!, failed!, later!]) {
      const row = await store.jobGet({ id });
      assert.equal(row?.state, "available");
      assert.equal(row?.scheduledAt, T0 + 5);
      assert.equal(row?.discardedAt, null);
    }
    assert.equal((await store.jobGet({ id: used! }))?.maxAttempts, 2);
    assert.equal((await store.jobGet({ id: failed! }))?.maxAttempts, 3);
    assert.equal(await stateOf(store, running!), "executing");
    assert.equal(await stateOf(store, ready!), "available");

    const again = await claim(store, { now: T0 + 5 });
    assert.deepEqual(again.map((j) => j.id).sort((a, b) => a - b), [used, failed, later, ready]);
    assert.equal(again.find((j) => j.id === used)?.attempt, 2);
  });

  test("jobReplay() runs a completed occurrence again as a replay attempt of the same row", async ({ store }) => {
    const occurrence = "nightly@2026-01-01T00:00:00.000Z";
    const [id] = await insert(store, [
      newJob({ occurrence, scheduleId: "nightly", scheduledFor: T0, maxAttempts: 1 }),
    ]);
    const run = await claimOne(store);
    await store.jobsRecord({ node: "node-a", now: T0 + 1, results: [completed(run)] });

    assert.equal(
      await store.jobReplay({ id: 999_999, now: T0, actor: "x", reason: "y", force: false }),
      null,
    );
    const result = await store.jobReplay({
      id: id!,
      now: T0 + 100,
      actor: "alice",
      reason: "rerun after fix",
      force: false,
    });
    assert.deepEqual(result, { replayed: true, was: "completed" });
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "available");
    assert.equal(row?.occurrence, occurrence);
    assert.equal(row?.completedAt, null);
    assert.equal(row?.maxAttempts, 2);
    // The identity is unchanged: inserting the occurrence again is a duplicate of the same row.
    const [again] = await store.jobsInsert({
      jobs: [newJob({ occurrence, scheduleId: "nightly", scheduledFor: T0 })],
      now: T0 + 100,
    });
    assert.deepEqual([again?.id, again?.duplicate], [id, true]);

    const replay = await claimOne(store, { node: "node-b", now: T0 + 100 });
    assert.equal(replay.id, id);
    assert.equal(replay.fence, 2);
    assert.equal(replay.attempt, 2);
    await store.jobsRecord({
      node: "node-b",
      now: T0 + 200,
      results: [retryable(replay, T0 + 300)],
    });
    // Only the replay's own attempt carries the replay: the retry after it is a retry.
    await store.jobsRetry({ ids: [id!], now: T0 + 300 });
    const retry = await claimOne(store, { now: T0 + 300 });
    await store.jobsRecord({ node: "node-a", now: T0 + 400, results: [completed(retry)] });

    const attempts = await store.attemptsList({ jobId: id! });
    assert.deepEqual(
      attempts.map((a) => [a.fence, a.kind, a.actor, a.reason, a.outcome]),
      [
        [1, "run", null, null, "completed"],
        [2, "replay", "alice", "rerun after fix", "retryable"],
        [3, "retry", null, null, "completed"],
      ],
    );
  });

  test("jobReplay() refuses an executing job unless forced, which breaks its lease", async ({ store }) => {
    const [id] = await insert(store, [newJob({ occurrence: "hourly@x", scheduleId: "hourly" })]);
    const running = await claimOne(store, { node: "node-a" });
    const refused = await store.jobReplay({
      id: id!,
      now: T0 + 10,
      actor: "bob",
      reason: "stuck",
      force: false,
    });
    assert.deepEqual(refused, { replayed: false, was: "executing" });
    assert.equal(await stateOf(store, id!), "executing");
    assert.deepEqual(await store.attemptsList({ jobId: id! }), []);

    const forced = await store.jobReplay({
      id: id!,
      now: T0 + 20,
      actor: "bob",
      reason: "stuck",
      force: true,
    });
    assert.deepEqual(forced, { replayed: true, was: "executing" });
    const lease = { id: id!, fence: running.fence };
    assert.deepEqual(await store.jobsLeasesLost({ node: "node-a", leases: [lease] }), [lease]);
    const late = await store.jobsRecord({
      node: "node-a",
      now: T0 + 30,
      results: [completed(running)],
    });
    assert.deepEqual(late, { recorded: [], lost: [id] });
    assert.equal(await stateOf(store, id!), "available");

    const replay = await claimOne(store, { node: "node-b", now: T0 + 40 });
    assert.equal(replay.fence, running.fence + 1);
    await store.jobsRecord({ node: "node-b", now: T0 + 50, results: [completed(replay)] });
    const attempts = await store.attemptsList({ jobId: id! });
    assert.deepEqual(
      attempts.map((a) => [a.fence, a.node, a.kind, a.actor, a.outcome, a.error]),
      [
        [1, "node-a", "run", null, "cancelled", "replayed by bob: stuck"],
        [2, "node-b", "replay", "bob", "completed", null],
      ],
    );
  });

  test("jobReplay() marks the attempt that runs: a released claim leaves it pending", async ({ store }) => {
    const [id] = await insert(store, [newJob()]);
    const run = await claimOne(store, { node: "node-a" });
    await store.jobsRecord({ node: "node-a", now: T0 + 1, results: [completed(run)] });
    await store.jobReplay({ id: id!, now: T0 + 2, actor: "carol", reason: "one", force: false });
    // Replayed again before it ran: the latest who and why count.
    await store.jobReplay({ id: id!, now: T0 + 3, actor: "dave", reason: "two", force: false });
    const prefetched = await claimOne(store, { node: "node-b", now: T0 + 4 });
    const lease = { id: id!, fence: prefetched.fence };
    assert.deepEqual(await store.jobsRelease({ node: "node-b", leases: [lease] }), [lease]);
    const replay = await claimOne(store, { node: "node-c", now: T0 + 5 });
    const snoozed: JobResult = {
      id: id!,
      fence: replay.fence,
      attempt: replay.attempt,
      startedAt: replay.attemptedAt,
      outcome: "snoozed",
      until: T0 + 7,
    };
    await store.jobsRecord({ node: "node-c", now: T0 + 6, results: [snoozed] });
    await store.jobsStage({ now: T0 + 7, limit: 10 });
    const after = await claimOne(store, { node: "node-c", now: T0 + 7 });
    await store.jobsRecord({ node: "node-c", now: T0 + 8, results: [completed(after)] });
    const attempts = await store.attemptsList({ jobId: id! });
    assert.deepEqual(
      attempts.map((a) => [a.fence, a.node, a.kind, a.actor, a.reason, a.outcome]),
      [
        [1, "node-a", "run", null, null, "completed"],
        [3, "node-c", "replay", "dave", "two", "snoozed"],
        [4, "node-c", "retry", null, null, "completed"],
      ],
    );
  });
}
