/**
 * The pruner keeps up: a pass deletes everything that is due, batch by
 * batch, one short transaction each, while the claims of the same process
 * go between two batches; and the runtime's pruner reads its settings before
 * each pass, so a reloaded schedules file applies from the next one.
 *
 * The first test builds its 1,000,000 rows in a few statements
 * (`support/backlog.ts`) and takes 20-30 s; `PHASES=prune deno task bench`
 * times the same prune.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { pruneIngestDrops, pruneJobs, type PrunerOptions } from "../../src/runtime/pruner.ts";
import { newJob } from "../support/backends.ts";
import { insertCompletedBacklog } from "../support/backlog.ts";
import { insertJob, tempDir, tempStore } from "../support/stores.ts";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 2, 1);

/** The backlog of the first test: 1,000 batches of the default 1,000 rows. */
const BACKLOG = 1_000_000;
/**
 * The most prune batches that may run between two claims of the loop
 * beside them. The pass gives up the thread after each batch (a macrotask)
 * and a round of the claim loop takes one, so they alternate; a pass that
 * held the claims off would run all 1,000 batches with none between. Counted
 * in batches, not milliseconds, so a loaded machine cannot fail it.
 */
const BATCHES_BETWEEN_CLAIMS_BOUND = 5;

/** Completed rows in `queue`, from the state's own index. */
async function completedIn(store: Store, queue: string): Promise<number> {
  const rows = await store.jobsCount({ queue, state: "completed" });
  return rows.reduce((sum, row) => sum + row.count, 0);
}

/**
 * One worker on queue `live` beside the backlog: inserts a job, claims it,
 * completes it, and gives up the thread while the job "runs" (a macrotask,
 * as any real perform does). Stops when `until` resolves; returns, for each
 * claim, `at()` when it was claimed.
 */
async function claimLoop(
  store: SqliteStore,
  until: Promise<unknown>,
  at: () => number,
): Promise<number[]> {
  let done = false;
  until.finally(() => done = true).catch(() => {});
  const claimedAt: number[] = [];
  for (let i = 0; !done; i++) {
    const now = NOW + i;
    await store.jobsInsert({ jobs: [newJob({ queue: "live", scheduledAt: now })], now });
    const { jobs } = await store.jobsClaim({
      queue: "live",
      node: "live:1",
      limit: 1,
      now,
      leaseMs: 30_000,
    });
    const job = jobs[0]!;
    claimedAt.push(at());
    await new Promise((resolve) => setTimeout(resolve, 0));
    await store.jobsRecord({
      node: "live:1",
      now,
      results: [{
        id: job.id,
        fence: job.fence,
        attempt: job.attempt,
        startedAt: job.attemptedAt,
        outcome: "completed",
      }],
    });
  }
  return claimedAt;
}

Deno.test("pruneJobs() clears 1,000,000 completed jobs in one pass while claims go on between its batches", async () => {
  await using t = await tempStore();
  const { firstId, lastId } = insertCompletedBacklog(t.store, {
    count: BACKLOG,
    completedFrom: NOW - 30 * DAY,
  });
  assert.equal(await completedIn(t.store, "backlog"), BACKLOG);

  // The claims are timed in prune batches: how many had run when each was made.
  let batches = 0;
  const counting = {
    jobsPrune: (params: Parameters<Store["jobsPrune"]>[0]) => {
      batches++;
      return t.store.jobsPrune(params);
    },
  } as unknown as Store;
  const pass = pruneJobs(counting, NOW);
  const claimedAt = await claimLoop(t.store, pass, () => batches);
  const { deleted } = await pass;

  assert.equal(deleted, BACKLOG);
  assert.equal(await completedIn(t.store, "backlog"), 0);
  for (const id of [firstId, lastId]) {
    assert.equal(await t.store.jobGet({ id }), null);
    assert.deepEqual(await t.store.attemptsList({ jobId: id }), []);
  }
  // The live jobs completed just now: all kept, every one completed.
  assert.equal(await completedIn(t.store, "live"), claimedAt.length);

  // Claims went on from the first batch to the last, never more than a few batches apart.
  assert.ok(batches >= BACKLOG / 1000, `${batches} batches`);
  const marks = [0, ...claimedAt, batches];
  const gaps = marks.slice(1).map((mark, i) => mark - marks[i]!);
  const longest = Math.max(...gaps);
  assert.ok(
    longest <= BATCHES_BETWEEN_CLAIMS_BOUND,
    `${longest} of ${batches} prune batches ran between two claims`,
  );
  // The pass let the loop in between its batches (it runs once per batch; half leaves room).
  const during = claimedAt.filter((mark) => mark < batches).length;
  assert.ok(during >= BACKLOG / 1000 / 2, `${during} claims during ${batches} prune batches`);
});

Deno.test("pruneJobs() deletes every due batch in one pass, more than the old 20 per pass", async () => {
  await using t = await tempStore();
  insertCompletedBacklog(t.store, { count: 45, completedFrom: NOW - 10 * DAY });
  const limits: number[] = [];
  const spy = {
    jobsPrune: (params: Parameters<Store["jobsPrune"]>[0]) => {
      limits.push(params.limit);
      return t.store.jobsPrune(params);
    },
  } as unknown as Store;

  assert.deepEqual(await pruneJobs(spy, NOW, { batch: 2 }), { deleted: 45 });
  // 22 full batches and the short one that says nothing more is due.
  assert.equal(limits.length, 23);
  assert.ok(limits.every((limit) => limit === 2));
  assert.equal(await completedIn(t.store, "backlog"), 0);
});

Deno.test("pruneJobs() ends between two batches when its signal aborts, keeping what it deleted", async () => {
  await using t = await tempStore();
  insertCompletedBacklog(t.store, { count: 10, completedFrom: NOW - 10 * DAY });
  const stop = new AbortController();
  const spy = {
    jobsPrune: async (params: Parameters<Store["jobsPrune"]>[0]) => {
      const n = await t.store.jobsPrune(params);
      stop.abort();
      return n;
    },
  } as unknown as Store;

  assert.deepEqual(await pruneJobs(spy, NOW, { batch: 3, signal: stop.signal }), { deleted: 3 });
  assert.equal(await completedIn(t.store, "backlog"), 7);
  assert.deepEqual(await pruneJobs(t.store, NOW, { signal: stop.signal }), { deleted: 0 });
});

Deno.test("pruneJobs() refuses a batch that is not a whole number of at least 1", async () => {
  await using t = await tempStore();
  for (const batch of [0, -1, 1.5, NaN]) {
    await assert.rejects(
      pruneJobs(t.store, NOW, { batch }),
      new RangeError(`pruner batch must be an integer >= 1, got ${batch}`),
    );
  }
});

Deno.test("the runtime's pruner reads pruneMs before each wait and its settings before each pass", async () => {
  const dir = await tempDir();
  const clock = new FakeClock(NOW);
  const store = await openSqliteStore(`${dir.path}/jobs.db`, { now: NOW });
  const events: Array<{ event: string; fields: Record<string, unknown> }> = [];
  const jobs = new Jobs({
    store,
    workers: [],
    clock,
    logger: (event, fields) => events.push({ event, fields }),
  });
  try {
    // Completed 2 and 10 days before NOW: the default retention (7 days) prunes the older.
    const recent = await insertJob(store, { state: "completed", completedAt: NOW - 2 * DAY });
    const old = await insertJob(store, { state: "completed", completedAt: NOW - 10 * DAY });
    let settings: { pruneMs: number; pruner: PrunerOptions } = { pruneMs: 60_000, pruner: {} };
    const periods: number[] = [];
    await jobs.start({
      queues: { default: 1 },
      node: "pruner:1",
      pruneMs: () => {
        periods.push(settings.pruneMs);
        return settings.pruneMs;
      },
      pruner: () => settings.pruner,
    });
    const pruned = () => events.filter((e) => e.event === "pruner.deleted").map((e) => e.fields);
    assert.deepEqual(periods, [60_000], "the pruner's first wait has begun");

    clock.advance(60_000);
    await waitUntil("the first pass, and the wait after it", () => periods.length === 2);
    assert.deepEqual(pruned(), [{ node: "pruner:1", deleted: 1 }]);
    assert.equal(await store.jobGet({ id: old.id }), null);
    assert.notEqual(await store.jobGet({ id: recent.id }), null);

    // As a reload does: a shorter retention for the next pass, a longer period after it.
    settings = { pruneMs: 3_600_000, pruner: { retention: { completed: DAY } } };
    clock.advance(60_000);
    await waitUntil("the second pass, and the wait after it", () => periods.length === 3);
    assert.deepEqual(pruned(), [{ node: "pruner:1", deleted: 1 }, {
      node: "pruner:1",
      deleted: 1,
    }]);
    assert.equal(await store.jobGet({ id: recent.id }), null);
    assert.deepEqual(periods, [60_000, 60_000, 3_600_000]);
  } finally {
    await jobs.close({ grace: 0 });
    await dir.cleanup();
  }
});

Deno.test("pruneIngestDrops() keeps each pipeline's drops its retention, and the rest 30 days", async () => {
  await using temp = await tempStore();
  const { store } = temp;
  // One drop per pipeline, 10 days before NOW.
  for (const pipeline of ["catalog", "bank"]) {
    await store.jobsInsert({ jobs: [newJob({ queue: pipeline, scheduledAt: NOW })], now: NOW });
    const [job] = (await store.jobsClaim({
      queue: pipeline,
      node: "n1",
      limit: 1,
      now: NOW,
      leaseMs: 60_000,
    })).jobs;
    const run = await store.ingestRunOpen({
      pipeline,
      hash: "h",
      jobId: job!.id,
      fence: job!.fence,
      trigger: "manual",
      now: NOW - 10 * DAY,
    });
    assert.ok(
      await store.ingestChunkCommit({
        lease: { runId: run!.id, jobId: job!.id, fence: job!.fence },
        pipeline,
        delta: { received: 1, kept: 0, sunk: 0, failed: 0, dropped: { duplicate: 1 } },
        pending: 0,
        cursor: "x",
        drops: [{ recordKey: "a", reason: "duplicate", step: "s", excerpt: "a", record: "a" }],
        failures: [],
        cleared: [],
        now: NOW - 10 * DAY,
      }),
    );
  }
  const drops = async (pipeline: string) => (await store.ingestDropsList({ pipeline })).length;
  // catalog keeps its drops a week; bank, not listed, the default 30 days.
  const pass = await pruneIngestDrops(store, NOW, {
    drops: [{ pipeline: "catalog", retentionMs: 7 * DAY }],
  });
  assert.deepEqual(pass, { drops: 1 });
  assert.equal(await drops("catalog"), 0);
  assert.equal(await drops("bank"), 1);
  assert.deepEqual(await pruneIngestDrops(store, NOW + 20 * DAY + 1), { drops: 1 });
  assert.equal(await drops("bank"), 0);
});
