/**
 * The stager, on every backend: jobsStage() makes due scheduled and
 * retryable jobs available, at most `limit` per call, and says when the next
 * one is due.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, insert, newJob, retryable, stateOf, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsStage() makes due scheduled and retryable jobs available and returns nextAt", async ({ store }) => {
    const [soon, last, now] = await insert(store, [
      newJob({ scheduledAt: T0 + 1000 }),
      newJob({ scheduledAt: T0 + 5000, queue: "other" }),
      newJob(),
    ]);
    const job = await claimOne(store);
    assert.equal(job.id, now);
    await store.jobsRecord({
      node: "node-a",
      now: T0,
      results: [retryable(job, T0 + 2000)],
    });
    assert.equal(await stateOf(store, now!), "retryable");

    assert.deepEqual(await store.jobsStage({ now: T0 + 500, limit: 100 }), {
      staged: 0,
      queues: [],
      nextAt: T0 + 1000,
    });
    const staged = await store.jobsStage({ now: T0 + 2000, limit: 100 });
    assert.deepEqual(staged, { staged: 2, queues: ["default"], nextAt: T0 + 5000 });
    assert.equal(await stateOf(store, soon!), "available");
    assert.equal(await stateOf(store, now!), "available");
    assert.equal(await stateOf(store, last!), "scheduled");
    const again = await claim(store, { now: T0 + 2000 });
    assert.deepEqual(again.map((j) => j.id).sort((a, b) => a - b), [soon, now]);
    assert.equal(again.find((j) => j.id === now)?.fence, 2);

    assert.deepEqual(await store.jobsStage({ now: T0 + 5000, limit: 100 }), {
      staged: 1,
      queues: ["other"],
      nextAt: null,
    });
  });

  test("jobsStage() moves at most limit jobs per call", async ({ store }) => {
    await insert(store, Array.from({ length: 5 }, (_, i) => newJob({ scheduledAt: T0 + 10 + i })));
    const first = await store.jobsStage({ now: T0 + 100, limit: 3 });
    assert.equal(first.staged, 3);
    assert.equal(first.nextAt, T0 + 13);
    const second = await store.jobsStage({ now: T0 + 100, limit: 3 });
    assert.equal(second.staged, 2);
    assert.equal(second.nextAt, null);
  });
}
