/**
 * Debounce on unique keys, on every backend: a job enqueued with
 * `unique.debounce` waits its window, and a later insert of the same key
 * while it waits replaces its args (one row, the latest args), extending
 * the wait only when asked; once it executes, a later insert is refused as a
 * duplicate, as uniqueness always refuses.
 */

import assert from "node:assert/strict";
import { buildJob } from "../../../src/kernel/enqueue.ts";
import type { UniqueOptions } from "../../../src/kernel/unique.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { LEASE_MS, T0 } from "./helpers.ts";

const DEBOUNCED: UniqueOptions = { by: { keys: ["doc"] }, debounce: 60_000 };

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("debounce: a later insert of the key replaces the waiting job's args and keeps one row", async ({ store }) => {
    const first = buildJob("reindex", { doc: 7, rev: 1 }, { unique: DEBOUNCED }, T0);
    assert.equal(first.scheduledAt, T0 + 60_000, "the job waits its window");
    const [a] = await store.jobsInsert({ jobs: [first], now: T0 });
    assert.equal(a!.duplicate, false);
    assert.equal(a!.state, "scheduled");

    const later = buildJob("reindex", { doc: 7, rev: 2 }, { unique: DEBOUNCED }, T0 + 20_000);
    const [b] = await store.jobsInsert({ jobs: [later], now: T0 + 20_000 });
    assert.equal(b!.id, a!.id);
    assert.equal(b!.replaced, true);
    // In one batch too: the last of the same key wins.
    const twice = [3, 4].map((rev) =>
      buildJob("reindex", { doc: 7, rev }, { unique: DEBOUNCED }, T0 + 30_000)
    );
    const results = await store.jobsInsert({ jobs: twice, now: T0 + 30_000 });
    assert.deepEqual(results.map((r) => [r.id, r.replaced]), [[a!.id, true], [a!.id, true]]);

    const rows = await store.jobsList({ worker: "reindex" });
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0]!.args, { doc: 7, rev: 4 });
    assert.equal(rows[0]!.scheduledAt, T0 + 60_000, "without extend the window stays");

    // Another key is another job.
    const other = buildJob("reindex", { doc: 8, rev: 1 }, { unique: DEBOUNCED }, T0);
    const [c] = await store.jobsInsert({ jobs: [other], now: T0 });
    assert.notEqual(c!.id, a!.id);
  });

  test("debounce with extend: each replacing insert pushes the start a window out", async ({ store }) => {
    const unique: UniqueOptions = {
      by: { keys: ["doc"] },
      debounce: { window: 60_000, extend: true },
    };
    const [a] = await store.jobsInsert({
      jobs: [buildJob("reindex", { doc: 1, rev: 1 }, { unique }, T0)],
      now: T0,
    });
    await store.jobsInsert({
      jobs: [buildJob("reindex", { doc: 1, rev: 2 }, { unique }, T0 + 45_000)],
      now: T0 + 45_000,
    });
    const job = await store.jobGet({ id: a!.id });
    assert.equal(job!.scheduledAt, T0 + 105_000);
    assert.deepEqual(job!.args, { doc: 1, rev: 2 });
  });

  test("debounce: once the job executes, a later insert is refused as a duplicate", async ({ store }) => {
    const [a] = await store.jobsInsert({
      jobs: [buildJob("reindex", { doc: 5, rev: 1 }, { unique: DEBOUNCED }, T0)],
      now: T0,
    });
    await store.jobsStage({ now: T0 + 60_000, limit: 10 });
    const { jobs } = await store.jobsClaim({
      queue: "default",
      node: "n",
      limit: 1,
      now: T0 + 60_000,
      leaseMs: LEASE_MS,
    });
    assert.deepEqual(jobs.map((j) => j.id), [a!.id]);
    const [b] = await store.jobsInsert({
      jobs: [buildJob("reindex", { doc: 5, rev: 2 }, { unique: DEBOUNCED }, T0 + 61_000)],
      now: T0 + 61_000,
    });
    assert.equal(b!.id, a!.id);
    assert.equal(b!.duplicate, true);
    assert.equal(b!.replaced, undefined);
    assert.deepEqual((await store.jobGet({ id: a!.id }))!.args, { doc: 5, rev: 1 });
  });
}
