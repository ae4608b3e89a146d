/**
 * The maintenance plugins as plain functions of (store, now): the lifeline,
 * the pruner and the stager. No runtime and no timers: each test makes rows
 * with the factory, calls one pass, and reads the rows back.
 */

import assert from "node:assert/strict";
import type { JobResult } from "../../src/kernel/types.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { rescueOrphans } from "../../src/runtime/lifeline.ts";
import { pruneJobs } from "../../src/runtime/pruner.ts";
import { stageJobs } from "../../src/runtime/stager.ts";
import { newJob } from "../support/backends.ts";
import { insertJob, tempStore } from "../support/stores.ts";
import { counts } from "../support/rescue.ts";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 2, 1);

// ------------------------------------------------------------------- lifeline

Deno.test("rescueOrphans() rescues only expired leases and leaves live ones untouched", async () => {
  await using t = await tempStore();
  const expired = await insertJob(t.store, {
    state: "executing",
    queue: "mail",
    attempt: 1,
    maxAttempts: 3,
    attemptedBy: "dead-node",
    attemptedAt: NOW - 40_000,
    leaseExpiresAt: NOW - 1,
  });
  const live = await insertJob(t.store, {
    state: "executing",
    attempt: 1,
    maxAttempts: 3,
    attemptedBy: "live-node",
    attemptedAt: NOW - 1000,
    leaseExpiresAt: NOW + 10_000,
  });
  const waiting = await insertJob(t.store, { state: "available", insertedAt: NOW - DAY });

  const report = await rescueOrphans(t.store, NOW);
  assert.deepEqual(counts(report), { rescued: 1, discarded: 0, queues: ["mail"] });
  assert.deepEqual(report.jobs.map((j) => [j.id, j.node, j.state]), [
    [expired.id, "dead-node", "available"],
  ]);

  const rescued = await t.store.jobGet({ id: expired.id });
  assert.equal(rescued?.state, "available");
  // It keeps its scheduled time: long due, it goes ahead of newer work.
  assert.equal(rescued?.scheduledAt, expired.scheduledAt);
  assert.equal(rescued?.leaseExpiresAt, null);
  assert.equal(rescued?.fence, 1);
  assert.deepEqual(rescued?.errors, [
    { at: NOW, attempt: 1, error: "orphaned: lease of dead-node expired" },
  ]);
  const attempts = await t.store.attemptsList({ jobId: expired.id });
  assert.deepEqual(attempts, [{
    jobId: expired.id,
    attempt: 1,
    fence: 1,
    node: "dead-node",
    kind: "run",
    actor: null,
    reason: null,
    startedAt: NOW - 40_000,
    finishedAt: NOW,
    outcome: "orphaned",
    output: null,
    error: "orphaned: lease of dead-node expired",
    definition: null,
  }]);

  assert.deepEqual(await t.store.jobGet({ id: live.id }), live);
  assert.deepEqual(await t.store.attemptsList({ jobId: live.id }), []);
  assert.deepEqual(await t.store.jobGet({ id: waiting.id }), waiting);

  // A second pass finds nothing; the rescued job is claimed again with a higher fence.
  assert.deepEqual(counts(await rescueOrphans(t.store, NOW)), {
    rescued: 0,
    discarded: 0,
    queues: [],
  });
  const { jobs } = await t.store.jobsClaim({
    queue: "mail",
    node: "other-node",
    limit: 1,
    now: NOW,
    leaseMs: 30_000,
  });
  assert.equal(jobs[0]?.id, expired.id);
  assert.equal(jobs[0]?.fence, 2);
  assert.equal(jobs[0]?.attempt, 2);
});

Deno.test("rescueOrphans() discards an orphan with no attempts left", async () => {
  await using t = await tempStore();
  const last = await insertJob(t.store, {
    state: "executing",
    attempt: 3,
    maxAttempts: 3,
    attemptedBy: "dead-node",
    attemptedAt: NOW - 40_000,
    leaseExpiresAt: NOW - 5000,
  });
  assert.deepEqual(counts(await rescueOrphans(t.store, NOW)), {
    rescued: 0,
    discarded: 1,
    queues: [],
  });
  const row = await t.store.jobGet({ id: last.id });
  assert.equal(row?.state, "discarded");
  assert.equal(row?.discardedAt, NOW);
  assert.equal(row?.leaseExpiresAt, null);
  assert.equal(row?.errors.at(-1)?.error, "orphaned: lease of dead-node expired");
  const attempts = await t.store.attemptsList({ jobId: last.id });
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0]?.outcome, "orphaned");
  assert.equal(attempts[0]?.kind, "retry");
  assert.equal(attempts[0]?.attempt, 3);
  assert.equal(attempts[0]?.error, "orphaned: lease of dead-node expired");
  // Discarded is final: nothing claims it.
  const { jobs } = await t.store.jobsClaim({
    queue: "default",
    node: "n",
    limit: 1,
    now: NOW,
    leaseMs: 1000,
  });
  assert.deepEqual(jobs, []);
});

Deno.test("rescueOrphans() rescues at most limit jobs per pass", async () => {
  await using t = await tempStore();
  for (let i = 0; i < 3; i++) {
    await insertJob(t.store, {
      state: "executing",
      attempt: 1,
      attemptedBy: "dead-node",
      attemptedAt: NOW - 60_000,
      leaseExpiresAt: NOW - 1000 + i,
    });
  }
  assert.equal((await rescueOrphans(t.store, NOW, { limit: 2 })).rescued, 2);
  assert.equal((await rescueOrphans(t.store, NOW, { limit: 2 })).rescued, 1);
  assert.equal((await rescueOrphans(t.store, NOW, { limit: 2 })).rescued, 0);
});

// --------------------------------------------------------------------- pruner

let queueSeq = 0;

/** A job that really ran: claimed and recorded at `at`, so it has an attempt row. */
async function finishedJob(
  store: SqliteStore,
  outcome: "completed" | "cancelled" | "discarded",
  at: number,
): Promise<number> {
  const queue = `prune-${++queueSeq}`;
  await insertJob(store, { queue, insertedAt: at - 1000 });
  const { jobs } = await store.jobsClaim({ queue, node: "n", limit: 1, now: at, leaseMs: 1000 });
  const job = jobs[0]!;
  const base = { id: job.id, fence: job.fence, attempt: job.attempt, startedAt: job.attemptedAt };
  const result: JobResult = outcome === "completed"
    ? { ...base, outcome }
    : { ...base, outcome, error: `${outcome} on purpose` };
  const report = await store.jobsRecord({ node: "n", now: at, results: [result] });
  assert.deepEqual(report.recorded, [job.id]);
  return job.id;
}

Deno.test("pruneJobs() deletes only final jobs older than retention, with their attempts", async () => {
  await using t = await tempStore();
  const gone = [
    await finishedJob(t.store, "completed", NOW - 8 * DAY),
    await finishedJob(t.store, "cancelled", NOW - 31 * DAY),
    await finishedJob(t.store, "discarded", NOW - 31 * DAY),
  ];
  const kept = [
    await finishedJob(t.store, "completed", NOW - 6 * DAY),
    await finishedJob(t.store, "cancelled", NOW - 29 * DAY),
    await finishedJob(t.store, "discarded", NOW - 29 * DAY),
  ];
  // Old but not final: never pruned, however old.
  const old = NOW - 365 * DAY;
  const unfinished = [
    await insertJob(t.store, { state: "available", insertedAt: old }),
    await insertJob(t.store, { state: "scheduled", insertedAt: old, scheduledAt: old + 1 }),
    await insertJob(t.store, { state: "retryable", insertedAt: old, attempt: 1 }),
    await insertJob(t.store, {
      state: "executing",
      insertedAt: old,
      attempt: 1,
      attemptedBy: "n",
      attemptedAt: old,
      leaseExpiresAt: old + 1000,
    }),
  ].map((j) => j.id);

  assert.deepEqual(await pruneJobs(t.store, NOW), { deleted: 3 });

  for (const id of gone) {
    assert.equal(await t.store.jobGet({ id }), null, `job ${id} should be pruned`);
    assert.deepEqual(await t.store.attemptsList({ jobId: id }), []);
  }
  for (const id of kept) {
    assert.notEqual(await t.store.jobGet({ id }), null, `job ${id} should be kept`);
    assert.equal((await t.store.attemptsList({ jobId: id })).length, 1);
  }
  for (const id of unfinished) assert.notEqual(await t.store.jobGet({ id }), null);
  assert.deepEqual(await pruneJobs(t.store, NOW), { deleted: 0 });

  // A shorter retention for one state prunes more of that state only.
  assert.deepEqual(await pruneJobs(t.store, NOW, { retention: { completed: DAY } }), {
    deleted: 1,
  });
  assert.equal(await t.store.jobGet({ id: kept[0]! }), null);
  assert.notEqual(await t.store.jobGet({ id: kept[1]! }), null);
});

Deno.test("pruneJobs() deletes in batches of batch rows, at most maxBatches per pass", async () => {
  await using t = await tempStore();
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await finishedJob(t.store, "completed", NOW - 10 * DAY));
  const recent = await finishedJob(t.store, "completed", NOW - DAY);
  const limits: number[] = [];
  const spy = {
    jobsPrune: (params: Parameters<Store["jobsPrune"]>[0]) => {
      limits.push(params.limit);
      return t.store.jobsPrune(params);
    },
  } as unknown as Store;

  assert.deepEqual(await pruneJobs(spy, NOW, { batch: 2, maxBatches: 1 }), { deleted: 2 });
  assert.deepEqual(limits, [2]);
  assert.equal((await t.store.jobsList({ state: "completed" })).length, 4);

  limits.length = 0;
  assert.deepEqual(await pruneJobs(spy, NOW, { batch: 2 }), { deleted: 3 });
  // 2 + 1: a short batch means nothing is left, so the pass stops.
  assert.deepEqual(limits, [2, 2]);
  assert.deepEqual((await t.store.jobsList({})).map((j) => j.id), [recent]);
  for (const id of ids) assert.deepEqual(await t.store.attemptsList({ jobId: id }), []);
});

// --------------------------------------------------------------------- stager

Deno.test("stageJobs() makes due scheduled and retryable jobs available and returns nextAt", async () => {
  await using t = await tempStore();
  const dueScheduled = await insertJob(t.store, {
    state: "scheduled",
    queue: "mail",
    insertedAt: NOW - 5000,
    scheduledAt: NOW - 1,
  });
  const dueRetry = await insertJob(t.store, {
    state: "retryable",
    attempt: 1,
    insertedAt: NOW - 5000,
    scheduledAt: NOW,
  });
  const laterRetry = await insertJob(t.store, {
    state: "retryable",
    attempt: 1,
    insertedAt: NOW - 5000,
    scheduledAt: NOW + 3000,
  });
  const laterScheduled = await insertJob(t.store, {
    state: "scheduled",
    insertedAt: NOW - 5000,
    scheduledAt: NOW + 5000,
  });
  const available = await insertJob(t.store, { insertedAt: NOW - 5000 });

  const report = await stageJobs(t.store, NOW);
  assert.equal(report.staged, 2);
  assert.deepEqual([...report.queues].sort(), ["default", "mail"]);
  assert.equal(report.nextAt, NOW + 3000);
  assert.equal((await t.store.jobGet({ id: dueScheduled.id }))?.state, "available");
  assert.equal((await t.store.jobGet({ id: dueRetry.id }))?.state, "available");
  assert.equal((await t.store.jobGet({ id: laterRetry.id }))?.state, "retryable");
  assert.equal((await t.store.jobGet({ id: laterScheduled.id }))?.state, "scheduled");
  assert.deepEqual(await t.store.jobGet({ id: available.id }), available);

  assert.deepEqual(await stageJobs(t.store, NOW + 3000), {
    staged: 1,
    queues: ["default"],
    nextAt: NOW + 5000,
  });
  assert.deepEqual(await stageJobs(t.store, NOW + 5000), {
    staged: 1,
    queues: ["default"],
    nextAt: null,
  });
  assert.deepEqual(await stageJobs(t.store, NOW + 10_000), {
    staged: 0,
    queues: [],
    nextAt: null,
  });
});

Deno.test("stageJobs() moves at most limit jobs per pass, earliest first", async () => {
  await using t = await tempStore();
  const ids: number[] = [];
  for (const offset of [30, 10, 20]) {
    const job = await insertJob(t.store, {
      state: "scheduled",
      insertedAt: NOW - 100,
      scheduledAt: NOW - offset,
    });
    ids.push(job.id);
  }
  const first = await stageJobs(t.store, NOW, { limit: 2 });
  assert.equal(first.staged, 2);
  assert.equal(first.nextAt, NOW - 10);
  assert.equal((await t.store.jobGet({ id: ids[1]! }))?.state, "scheduled");
  assert.equal((await stageJobs(t.store, NOW, { limit: 2 })).staged, 1);
});

Deno.test("pruneJobs() keeps a schedule's occurrences exactly as long as its own retention", async () => {
  await using t = await tempStore();
  const HOUR = 60 * 60 * 1000;
  /** A final job, completed `age` ms before NOW, of `schedule` (or a plain job). */
  const completed = async (schedule: string | null, age: number, state = "completed") => {
    const [row] = await t.store.jobsInsert({
      now: NOW - age,
      jobs: [newJob({
        maxAttempts: 1,
        scheduledAt: NOW - age,
        occurrence: schedule ? `${schedule}@${new Date(NOW - age).toISOString()}` : null,
        scheduleId: schedule,
        scheduledFor: schedule ? NOW - age : null,
      })],
    });
    if (state === "completed") {
      t.store.db.prepare("UPDATE jobs SET state = 'completed', completed_at = ? WHERE id = ?")
        .run(NOW - age, row!.id);
    }
    return row!.id;
  };
  const plainOld = await completed(null, 8 * DAY);
  const keepRecent = await completed("keep", 8 * DAY);
  const keepOld = await completed("keep", 31 * DAY);
  const shortOld = await completed("short", 2 * HOUR);
  const shortWaiting = await completed("short", 3 * DAY, "available");

  const { deleted } = await pruneJobs(t.store, NOW, {
    schedules: [{ id: "keep", retentionMs: 30 * DAY }, { id: "short", retentionMs: HOUR }],
  });
  assert.equal(deleted, 3);
  const left = (await t.store.jobsList({})).map((j) => j.id);
  assert.deepEqual(left, [keepRecent, shortWaiting].sort((a, b) => a - b));
  assert.ok(![plainOld, keepOld, shortOld].some((id) => left.includes(id)));
});
