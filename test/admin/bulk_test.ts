/**
 * Bulk actions over everything a filter matched, door and worker together
 * on every backend: a retry of 20,000 discarded jobs previews 20,000, its
 * progress rises chunk by chunk and it completes with every job changed
 * (each audited under the person's name); an abort mid-way stops it with
 * the rest untouched; a tenant's run never touches another tenant's job,
 * even one forged into its snapshot; a run retried after a crash resumes
 * from `done`.
 */

import assert from "node:assert/strict";
import { abortBulk, BULK_QUEUE, previewBulk, startBulk } from "../../src/admin/bulk.ts";
import { bulkWorker } from "../../src/admin/bulk_worker.ts";
import { FakeClock } from "../../src/clock.ts";
import { performJob } from "../../src/testing.ts";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS, harnessTest, newJob } from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);

/** Inserts `count` discarded `mail` jobs of `tenant`; their ids, oldest first. */
async function seedDiscarded(store: Store, count: number, tenant: string | null = null) {
  const ids: number[] = [];
  for (let at = 0; at < count; at += 2000) {
    const jobs = Array.from(
      { length: Math.min(2000, count - at) },
      () => newJob({ scheduledAt: T0, worker: "mail", queue: "mail", tenant }),
    );
    const inserted = await store.jobsInsert({ jobs, now: T0 });
    const batch = inserted.map((r) => r.id);
    await store.jobsDiscard({ ids: batch, now: T0, reason: "smtp down" });
    ids.push(...batch);
  }
  return ids;
}

/** `store` whose `bulkRunProgress` also calls `spy` with each `done` it records. */
function spied(store: Store, spy: (done: number) => Promise<void> | void): Store {
  return new Proxy(store, {
    get(target, key) {
      if (key === "bulkRunProgress") {
        return async (params: Parameters<Store["bulkRunProgress"]>[0]) => {
          const ok = await target.bulkRunProgress(params);
          await spy(params.done);
          return ok;
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const who = { actor: "ada", reason: "smtp is back", now: T0 };

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("a bulk retry of 20,000 matching jobs previews them, shows progress and completes", async ({ store }) => {
    await seedDiscarded(store, 20_000);
    const filter = { state: "discarded" as const, worker: "mail" };
    assert.deepEqual(await previewBulk(store, filter, null), { count: 20_000, capped: false });
    const run = await startBulk(store, { action: "retry", filter, tenant: null, who });
    assert.equal(run.total, 20_000);
    assert.equal(run.state, "running");
    const [job] = await store.jobsList({ queue: BULK_QUEUE });
    assert.equal(job?.worker, "jobs.bulk");
    const start = await store.auditPage({ action: "bulk.start", limit: 10 });
    assert.deepEqual(start.map((a) => [a.actor, a.target]), [["ada", `bulk:${run.id}`]]);

    const seen: number[] = [];
    const clock = new FakeClock(T0 + 1000);
    const worker = bulkWorker({ store: () => spied(store, (done) => void seen.push(done)), clock });
    const result = await performJob(worker, { kind: "bulk", run: run.id }, { clock });
    assert.equal(result.outcome, "completed");
    assert.equal(seen.length, 40);
    assert.deepEqual(seen.slice(0, 3), [500, 1000, 1500]);
    const ended = await store.bulkRunGet({ id: run.id });
    assert.deepEqual(
      [ended?.state, ended?.done, ended?.changed, ended?.skipped, ended?.finishedAt],
      ["completed", 20_000, 20_000, 0, T0 + 1000],
    );
    assert.equal(await store.jobsCountMatching({ state: "discarded", worker: "mail" }), 0);
    assert.equal(await store.jobsCountMatching({ state: "available", worker: "mail" }), 20_000);
    const audits = await store.auditPage({ action: "job.retry", limit: 3 });
    assert.deepEqual(
      audits.map((a) => [a.actor, a.reason]),
      Array(3).fill(["ada", "smtp is back"]),
    );
  });

  test("the walk lets the process run between chunks (requests, heartbeats, claims)", async ({ store }) => {
    await seedDiscarded(store, 3000);
    const run = await startBulk(store, {
      action: "retry",
      filter: { state: "discarded" },
      tenant: null,
      who,
    });
    // A timer of the process: on SQLite every store call answers at once, so
    // only a turn of the event loop between chunks lets it fire mid-walk.
    const turns: number[] = [];
    const seen: number[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = () => {
      turns.push(seen.length);
      timer = setTimeout(tick, 0);
    };
    timer = setTimeout(tick, 0);
    const clock = new FakeClock(T0);
    try {
      const worker = bulkWorker({
        store: () => spied(store, (done) => void seen.push(done)),
        clock,
      });
      await performJob(worker, { kind: "bulk", run: run.id }, { clock });
    } finally {
      clearTimeout(timer);
    }
    assert.equal(seen.length, 6);
    assert.ok(
      turns.some((chunks) => chunks > 0 && chunks < 6),
      `the process ran between chunks (timer turns after chunks: ${JSON.stringify(turns)})`,
    );
  });

  test("an abort mid-way stops the walk between chunks, the rest untouched", async ({ store }) => {
    await seedDiscarded(store, 5000);
    const filter = { state: "discarded" as const };
    const run = await startBulk(store, { action: "retry", filter, tenant: null, who });
    const clock = new FakeClock(T0);
    const worker = bulkWorker({
      store: () =>
        spied(store, async (done) => {
          if (done === 1500) assert.equal(await abortBulk(store, run.id, null, who), true);
        }),
      clock,
    });
    assert.equal(
      (await performJob(worker, { kind: "bulk", run: run.id }, { clock })).outcome,
      "completed",
    );
    const ended = await store.bulkRunGet({ id: run.id });
    assert.deepEqual([ended?.state, ended?.done, ended?.changed], ["aborted", 1500, 1500]);
    assert.equal(await store.jobsCountMatching({ state: "discarded" }), 3500);
    assert.equal(
      await abortBulk(store, run.id, null, who),
      false,
      "an ended run is not aborted twice",
    );
    assert.equal((await store.auditPage({ action: "bulk.abort", limit: 10 })).length, 1);
  });

  test("a tenant's run acts in its scope only, even on ids forged into its snapshot", async ({ store }) => {
    const acme = await seedDiscarded(store, 600, "acme");
    const globex = await seedDiscarded(store, 600, "globex");
    const filter = { state: "discarded" as const };
    assert.deepEqual(await previewBulk(store, filter, "acme"), { count: 600, capped: false });
    const fair = await startBulk(store, { action: "retry", filter, tenant: "acme", who });
    assert.equal(fair.total, 600);
    assert.equal(await store.bulkRunGet({ id: fair.id, tenant: "globex" }), null);
    assert.equal(await abortBulk(store, fair.id, "globex", who), false);
    const forged = await store.bulkRunCreate({
      action: "retry",
      filter: {},
      ids: [...globex, ...acme],
      actor: "mallory",
      reason: null,
      tenant: "acme",
      now: T0,
    });
    const clock = new FakeClock(T0);
    const worker = bulkWorker({ store: () => store, clock });
    await performJob(worker, { kind: "bulk", run: forged.id }, { clock });
    const ended = await store.bulkRunGet({ id: forged.id });
    assert.deepEqual([ended?.state, ended?.changed, ended?.skipped], ["completed", 600, 600]);
    assert.equal(
      await store.jobsCountMatching({ state: "discarded", tenant: "globex" }),
      600,
      "globex's jobs untouched",
    );
  });

  test("a run retried after a crash resumes from done", async ({ store }) => {
    const ids = await seedDiscarded(store, 1200);
    const run = await startBulk(store, {
      action: "cancel",
      filter: { ids: [1], state: "discarded" },
      tenant: null,
      who,
    });
    // The snapshot is the filter's matches: an `ids` filter is not a way to name jobs.
    assert.equal(run.total, 1200);
    const retry = await store.bulkRunCreate({
      action: "retry",
      filter: {},
      ids,
      actor: "ada",
      reason: null,
      tenant: null,
      now: T0,
    });
    await store.bulkRunProgress({ id: retry.id, done: 1000, changed: 1000, skipped: 0 });
    const clock = new FakeClock(T0);
    await performJob(bulkWorker({ store: () => store, clock }), { kind: "bulk", run: retry.id }, {
      clock,
    });
    const ended = await store.bulkRunGet({ id: retry.id });
    assert.deepEqual([ended?.state, ended?.done, ended?.changed], ["completed", 1200, 1200]);
    assert.equal(await store.jobsCountMatching({ state: "discarded" }), 1000);
  });
}
