/**
 * The job counts each store keeps (`job_counts`, src/store/job_counts.ts)
 * equal a COUNT(*) of the jobs table after every kind of write: jobs walked
 * through every transition on both stores, the counts compared with the
 * table's own after each step.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { JOB_STATES, type JobResult, type JobState } from "../../src/kernel/types.ts";
import { MIGRATIONS as POSTGRES_MIGRATIONS } from "../../src/store/postgres/migrations.ts";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { storeTransfer } from "../../src/store/transfer.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import {
  BACKENDS,
  dropTestSchema,
  harnessTest,
  newJob,
  openPostgresHarness,
  POSTGRES_TEST_URL,
  testSchema,
} from "../support/backends.ts";
import { insertJob, tempDir, tempStore } from "../support/stores.ts";
import { FOLD_INSERTS, UNCOUNTED_MAX } from "../../src/store/sqlite/counts.ts";

const NOW = Date.UTC(2026, 2, 1, 12);
const MINUTE = 60_000;

type Count = { queue: string; state: JobState; count: number };

/** The counts as the table holds them: a GROUP BY over every job. */
async function truth(store: Store): Promise<Count[]> {
  const text = `SELECT queue, state, count(*) AS count FROM jobs GROUP BY queue, state`;
  const rows = store.kind === "sqlite"
    ? (store as SqliteStore).db.prepare(text).all() as Record<string, unknown>[]
    : await (store as PostgresStore).transaction((tx) => tx.sql.unsafe(text));
  return rows
    .map((r) => ({ queue: String(r.queue), state: r.state as JobState, count: Number(r.count) }))
    .sort((a, b) =>
      (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0) ||
      JOB_STATES.indexOf(a.state) - JOB_STATES.indexOf(b.state)
    );
}

/** jobsCount and jobsCountMatching (by queue, state, both, several states) agree with the table. */
async function check(store: Store, step: string): Promise<void> {
  const expected = await truth(store);
  const byOrder = (rows: Count[]) =>
    [...rows].sort((a, b) =>
      (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0) ||
      JOB_STATES.indexOf(a.state) - JOB_STATES.indexOf(b.state)
    );
  assert.deepEqual(byOrder(await store.jobsCount({})), expected, `after ${step}: jobsCount`);
  const total = expected.reduce((sum, c) => sum + c.count, 0);
  assert.equal(await store.jobsCountMatching({}), total, `after ${step}: every job`);
  const queues = [...new Set(expected.map((c) => c.queue)), "nowhere"];
  for (const state of JOB_STATES) {
    const of = (q?: string) =>
      expected.filter((c) => c.state === state && (q === undefined || c.queue === q))
        .reduce((sum, c) => sum + c.count, 0);
    assert.deepEqual(
      byOrder(await store.jobsCount({ state })),
      expected.filter((c) => c.state === state),
      `after ${step}: jobsCount of ${state}`,
    );
    assert.equal(await store.jobsCountMatching({ state }), of(), `after ${step}: ${state}`);
    for (const queue of queues) {
      assert.equal(
        await store.jobsCountMatching({ queue, state }),
        of(queue),
        `after ${step}: ${queue} ${state}`,
      );
    }
  }
  for (const queue of queues) {
    assert.equal(
      await store.jobsCountMatching({ queue, state: ["available", "executing"] }),
      expected.filter((c) => c.queue === queue && ["available", "executing"].includes(c.state))
        .reduce((sum, c) => sum + c.count, 0),
      `after ${step}: ${queue} available or executing`,
    );
  }
}

/** The fields of a result that a claimed job gives it, as the executor copies them. */
const done = (
  job: {
    id: number;
    fence: number;
    attempt: number;
    attemptedAt: number;
    occurrence: string | null;
  },
) => ({
  id: job.id,
  fence: job.fence,
  attempt: job.attempt,
  startedAt: job.attemptedAt,
  ...(job.occurrence === null ? {} : { occurrence: job.occurrence }),
});

/** Walks jobs through every transition, checking the counts after each step. */
async function walk(store: Store, big: boolean): Promise<void> {
  let now = NOW;
  await check(store, "nothing");
  if (big) {
    await store.jobsInsert({
      now,
      jobs: Array.from({ length: 70 }, () => newJob({ scheduledAt: now })),
    });
    await check(store, "a big insert");
  }
  // Inserts: due now, due later, an occurrence twice (one row), another queue.
  await store.jobsInsert({
    now,
    jobs: [
      ...Array.from({ length: 8 }, () => newJob({ scheduledAt: now })),
      newJob({ scheduledAt: now + 10 * MINUTE, queue: "later" }),
      newJob({ scheduledAt: now, occurrence: "s@1", scheduleId: "s", scheduledFor: now }),
      newJob({ scheduledAt: now, occurrence: "s@1", scheduleId: "s", scheduledFor: now }),
      newJob({ scheduledAt: now, queue: "mail", uniqueKey: "k", maxAttempts: 1 }),
    ],
  });
  await store.jobsInsert({ now, jobs: [newJob({ scheduledAt: now, uniqueKey: "k" })] });
  await check(store, "inserts");

  // Claims, then every outcome a node records.
  const lease = { node: "n1", now, leaseMs: MINUTE };
  const { jobs: claimed } = await store.jobsClaim({ ...lease, queue: "default", limit: 7 });
  assert.equal(claimed.length, 7);
  await check(store, "a claim");
  const [c0, c1, c2, c3, c4, c5, c6] = claimed.map(done);
  const results: JobResult[] = [
    { ...c0!, outcome: "completed" },
    { ...c1!, outcome: "snoozed", until: now + 5 * MINUTE },
    { ...c2!, outcome: "snoozed", until: now },
    { ...c3!, outcome: "retryable", error: "boom", at: now + 2 * MINUTE },
    { ...c4!, outcome: "cancelled", error: "no" },
    { ...c5!, outcome: "discarded", error: "bad" },
    // A lost lease records nothing and counts nothing.
    { ...c6!, fence: c6!.fence + 1, outcome: "completed" },
  ];
  const report = await store.jobsRecord({ node: "n1", now, results });
  assert.deepEqual(report.lost, [c6!.id]);
  await check(store, "results of every outcome");

  // A batch of completions with the next claim, as the busy queue does.
  const next = await store.jobsClaim({
    ...lease,
    queue: "default",
    limit: 2,
    results: [{ ...c6!, outcome: "completed" }],
  });
  assert.deepEqual(next.report.recorded, [c6!.id]);
  await check(store, "completions with a claim");

  // A release gives a claimed job back.
  const released = await store.jobsRelease({
    node: "n1",
    leases: next.jobs.slice(0, 1).map((j) => ({ id: j.id, fence: j.fence })),
  });
  assert.equal(released.length, 1);
  await check(store, "a release");

  // Staging: the snoozed, the retryable and the later job come due.
  now += 11 * MINUTE;
  const staged = await store.jobsStage({ now, limit: 100 });
  assert.equal(staged.staged, 3);
  await check(store, "staging");
  if (big) {
    const bulk = Array.from({ length: 64 }, () => newJob({ scheduledAt: now, queue: "bulk" }));
    await store.jobsInsert({ now, jobs: bulk });
    await check(store, "a big insert taking in the jobs of the small ones");
  }

  // Rescue: one expired lease goes back, one with no attempt left is discarded.
  const mail = await store.jobsClaim({
    node: "n2",
    now,
    leaseMs: MINUTE,
    queue: "mail",
    limit: 1,
  });
  assert.equal(mail.jobs.length, 1);
  now += 2 * MINUTE;
  const rescue = await store.jobsRescue({ now, limit: 100 });
  assert.deepEqual([rescue.rescued, rescue.discarded], [1, 1]);
  await check(store, "a rescue");

  // An operator's cancel and discard, of a waiting and of an executing job.
  const { jobs: running } = await store.jobsClaim({ ...lease, now, queue: "default", limit: 2 });
  const waiting = (await store.jobsList({ state: "available", queue: "default" }))[0]!;
  const cancelled = await store.jobsCancel({
    ids: [running[0]!.id, waiting.id, waiting.id],
    now,
    reason: "r",
  });
  assert.equal(cancelled.length, 2);
  assert.deepEqual(await store.jobsDiscard({ ids: [running[1]!.id], now, reason: "r" }), [
    running[1]!.id,
  ]);
  await check(store, "an operator's cancel and discard");

  // Retries of every final state and a waiting one, one of them into another queue.
  const finals = await store.jobsList({ state: ["completed", "cancelled", "discarded"] });
  const retryable = await store.jobsList({ state: ["scheduled", "available"], limit: 1 });
  const ids = [...finals.slice(0, 3), ...retryable].map((j) => j.id);
  const moved = finals[0]!;
  const definitions = new Map([[moved.id, {
    worker: moved.worker,
    args: "{}",
    meta: "{}",
    tags: "[]",
    queue: "elsewhere",
    priority: 0,
    maxAttempts: 3,
  }]]);
  const retried = await store.jobsRetry({ ids, now, definitions });
  assert.ok(retried.length >= 3, `${retried.length} retried`);
  await check(store, "retries");

  // Replays: an executing job (forced) and a final one into another queue.
  const { jobs: [busy] } = await store.jobsClaim({ ...lease, now, queue: "default", limit: 1 });
  const replay = { now, actor: "ada", reason: "again" };
  assert.deepEqual(await store.jobReplay({ ...replay, id: busy!.id, force: true }), {
    replayed: true,
    was: "executing",
  });
  const final = (await store.jobsList({ state: ["completed", "cancelled", "discarded"] }))[0]!;
  const replayed = await store.jobReplay({
    ...replay,
    id: final.id,
    force: false,
    definition: { ...definitions.get(moved.id)!, queue: "replayed" },
  });
  assert.equal(replayed?.replayed, true);
  await check(store, "replays");

  // A planner's insert, with an occurrence it cancels at once (in the same
  // write as 64 more, with `big`: a write that moves a job it inserted).
  await store.schedulesSync({ schedules: [{ id: "p", hash: "h1", tenant: null }], now });
  const occurrence = (i: number) =>
    newJob({ scheduledAt: now, occurrence: `p@${i}`, scheduleId: "p", scheduledFor: now });
  await store.schedulePlan({
    id: "p",
    now,
    plan: () => ({
      jobs: Array.from({ length: big ? 65 : 1 }, (_, i) => occurrence(i + 3)),
      cancelled: [{
        job: newJob({ scheduledAt: now, occurrence: "p@2", scheduleId: "p", scheduledFor: now }),
        reason: "skipped: overlap",
      }],
      plannedFor: now,
      misfires: 0,
      lastMisfireFor: null,
    }),
  });
  await check(store, "a plan");

  // Workflow runs: a step completed (the next one inserted), then discarded
  // (the run fails) and retried; another run cancelled while its step waits.
  const definition = compileWorkflow({
    id: "flow",
    queue: "flows",
    steps: [{ id: "a", worker: "noop" }, { id: "b", worker: "noop", dependsOn: ["a"] }],
  });
  const start = { definition, input: "{}", tenant: null, now };
  const first = await store.workflowStart({ ...start, key: "run-1" });
  await check(store, "a workflow start");
  const step = async () =>
    (await store.jobsClaim({ ...lease, now, queue: "flows", limit: 1 })).jobs[0]!;
  const a = await step();
  await store.jobsRecord({
    node: "n1",
    now,
    results: [{ ...done(a), outcome: "completed", workflow: first.id, value: "1" }],
  });
  await check(store, "a workflow step's completion");
  const b = await step();
  await store.jobsRecord({
    node: "n1",
    now,
    results: [{ ...done(b), outcome: "discarded", error: "bad", workflow: first.id }],
  });
  await check(store, "a workflow step's discard");
  assert.equal((await store.workflowRetry({ id: first.id, now }))?.state, "running");
  await check(store, "a workflow retry");
  const second = await store.workflowStart({ ...start, key: "run-2" });
  assert.equal(
    (await store.workflowCancel({ id: second.id, now, reason: "stop" }))?.jobs.length,
    1,
  );
  await check(store, "a workflow cancel");

  // A caller's transaction: what it rolls back is not counted, what it commits is.
  await assert.rejects(
    store.transaction(async (tx) => {
      await tx.jobsInsert({ now, jobs: [newJob({ scheduledAt: now, queue: "tx" })] });
      const [any] = await tx.jobsList({ state: "available", limit: 1 });
      await tx.jobsCancel({ ids: [any!.id], now, reason: "in tx" });
      throw new Error("roll back");
    }),
    /roll back/,
  );
  await check(store, "a rolled-back transaction");
  await store.transaction(async (tx) => {
    await tx.jobsInsert({ now, jobs: [newJob({ scheduledAt: now, queue: "tx" })] });
    const [any] = await tx.jobsList({ state: "available", queue: "tx" });
    await tx.jobsDiscard({ ids: [any!.id], now, reason: "in tx" });
    if (big) {
      await tx.jobsInsert({
        now,
        jobs: Array.from({ length: 64 }, () => newJob({ scheduledAt: now, queue: "tx" })),
      });
      const [one] = await tx.jobsList({ state: "available", queue: "tx", limit: 1 });
      await tx.jobsCancel({ ids: [one!.id], now, reason: "in tx" });
    }
  });
  await check(store, "a committed transaction");

  // The pruner: by state and cutoff, and one schedule's own retention.
  now += 60 * MINUTE;
  const pruned = await store.jobsPrune({
    before: { completed: now, cancelled: now },
    limit: 3,
  });
  assert.ok(pruned > 0);
  await check(store, "a prune");
  await store.jobsPruneSchedule({ scheduleId: "p", before: now, limit: 10 });
  await store.jobsPrune({
    before: { completed: now, cancelled: now, discarded: now },
    limit: 1000,
  });
  await check(store, "a full prune");
  assert.ok((await truth(store)).every((c) => !["completed", "cancelled"].includes(c.state)));
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, NOW);

  for (const big of [false, true]) {
    // SQLite counts a write's changes only for jobs at or below its watermark
    // (src/store/sqlite/counts.ts), which a write of 64 jobs or more raises:
    // with `big`, the walk moves jobs on both sides of it.
    test(
      `the job counts equal a COUNT(*) after every transition${
        big ? ", with writes of many jobs among them" : ""
      }`,
      (h) => walk(h.store, big),
    );
  }

  test("an unknown state is refused by the counted total as by the counted table", async (h) => {
    await assert.rejects(
      h.store.jobsCountMatching({ state: "finished" as JobState }),
      RangeError,
    );
    await assert.rejects(h.store.jobsCount({ state: "finished" as JobState }), RangeError);
    assert.equal(await h.store.jobsCountMatching({ state: [] }), 0);
  });
}

Deno.test("postgres: deltas are folded into job_counts about once a second of the callers' time, exactly", async () => {
  const h = await openPostgresHarness(NOW);
  try {
    const store = h.store as PostgresStore;
    const deltas = async () =>
      Number(
        (await store.transaction((tx) => tx.sql`SELECT count(*) AS n FROM job_count_deltas`))[0]!
          .n,
      );
    let now = NOW;
    // The first write folds (nothing yet); the next ones within the second add deltas.
    for (let i = 0; i < 5; i++) {
      await store.jobsInsert({ now, jobs: [newJob({ scheduledAt: now })] });
      const { jobs } = await store.jobsClaim({
        queue: "default",
        node: "n",
        limit: 1,
        now,
        leaseMs: MINUTE,
      });
      await store.jobsRecord({
        node: "n",
        now,
        results: [{ ...done(jobs[0]!), outcome: "completed" }],
      });
      now += 100;
    }
    assert.ok(await deltas() > 0, "deltas wait to be folded");
    await check(store, "deltas not folded");
    now += 1000;
    await store.jobsInsert({ now, jobs: [newJob({ scheduledAt: now })] });
    assert.equal(await deltas(), 0, "a write a second later folds them");
    await check(store, "a fold");
    assert.deepEqual(await store.jobsCount({}), [
      { queue: "default", state: "available", count: 1 },
      { queue: "default", state: "completed", count: 5 },
    ]);
  } finally {
    await h.close();
  }
});

Deno.test("postgres: three nodes' batches at once are counted exactly", async () => {
  const h = await openPostgresHarness(NOW);
  try {
    const nodes = [h.store, await h.connect(), await h.connect()];
    const jobs = Array.from({ length: 300 }, () => newJob({ scheduledAt: NOW }));
    await h.store.jobsInsert({ now: NOW, jobs });
    // Each node claims and completes in batches, its clock a little apart, so folds interleave.
    await Promise.all(nodes.map(async (store, n) => {
      let now = NOW + n * 7;
      for (;;) {
        const { jobs } = await store.jobsClaim({
          queue: "default",
          node: `n${n}`,
          limit: 10,
          now,
          leaseMs: MINUTE,
        });
        if (jobs.length === 0) return;
        await store.jobsRecord({
          node: `n${n}`,
          now,
          results: jobs.map((j, i) =>
            i % 5 === 4
              ? { ...done(j), outcome: "discarded" as const, error: "x" }
              : { ...done(j), outcome: "completed" as const }
          ),
        });
        now += 400;
      }
    }));
    await check(h.store, "three nodes");
    assert.deepEqual(await h.store.jobsCount({}), [
      { queue: "default", state: "completed", count: 240 },
      { queue: "default", state: "discarded", count: 60 },
    ]);
  } finally {
    await h.close();
  }
});

Deno.test("sqlite: the migration counts the jobs a store already holds", async () => {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.name < "0011")) {
    db.exec(m.sql);
    db.prepare(`INSERT INTO schema_migrations VALUES (?, ?, 0)`).run(m.version, m.name);
  }
  const insert = db.prepare(`INSERT INTO jobs (state, queue, worker, args, max_attempts,
    inserted_at, scheduled_at) VALUES (?, ?, 'w', '{}', 5, 0, 0)`);
  for (const [i, state] of JOB_STATES.entries()) {
    for (let k = 0; k <= i; k++) insert.run(state, k % 2 ? "mail" : "default");
  }
  db.close();
  const store = await openSqliteStore(path, { now: NOW });
  try {
    await check(store, "the migration");
    assert.equal(await store.jobsCountMatching({}), 28);
  } finally {
    await store.close();
    await dir.cleanup();
  }
});

Deno.test("postgres: the migration counts the jobs a schema already holds", async () => {
  const schema = testSchema();
  const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
  const bare = await openPostgresStore(POSTGRES_TEST_URL, { migrate: false, max: 1 });
  try {
    await bare.transaction(async (tx) => {
      await tx.sql`CREATE SCHEMA ${tx.sql(schema)}`;
      await tx.sql.unsafe(`SET LOCAL search_path TO ${schema}`);
      await tx.sql`CREATE TABLE schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`;
      for (const m of POSTGRES_MIGRATIONS.filter((m) => m.name < "0004")) {
        await tx.sql.unsafe(m.sql).simple();
        await tx.sql`INSERT INTO schema_migrations VALUES (${m.version}, ${m.name}, 0)`;
      }
      for (const [i, state] of JOB_STATES.entries()) {
        for (let k = 0; k <= i; k++) {
          await tx.sql`INSERT INTO jobs (state, queue, worker, args, max_attempts, inserted_at,
              scheduled_at)
            VALUES (${state}, ${k % 2 ? "mail" : "default"}, 'w', '{}', 5, 0, 0)`;
        }
      }
    });
    const store = await openPostgresStore(url, { now: NOW });
    try {
      await check(store, "the migration");
      assert.equal(await store.jobsCountMatching({}), 28);
    } finally {
      await store.close();
    }
  } finally {
    await bare.close();
    await dropTestSchema(schema);
  }
});

Deno.test("migrate-store counts the copied jobs in its target, both ways", async () => {
  await using source = await tempStore();
  const now = NOW;
  await source.store.jobsInsert({
    now,
    jobs: [
      ...Array.from({ length: 6 }, () => newJob({ scheduledAt: now })),
      newJob({ scheduledAt: now + MINUTE, queue: "mail" }),
    ],
  });
  const { jobs } = await source.store.jobsClaim({
    queue: "default",
    node: "n",
    limit: 4,
    now,
    leaseMs: MINUTE,
  });
  await source.store.jobsRecord({
    node: "n",
    now,
    results: [
      { ...done(jobs[0]!), outcome: "completed" },
      { ...done(jobs[1]!), outcome: "discarded", error: "x" },
      { ...done(jobs[2]!), outcome: "retryable", error: "y", at: now + MINUTE },
    ],
  });
  const expected = await source.store.jobsCount({});
  const pg = await openPostgresHarness(NOW);
  try {
    await storeTransfer(source.store, pg.store, { now: NOW + 10 * MINUTE });
    await check(pg.store, "a copy to PostgreSQL");
    assert.deepEqual(await pg.store.jobsCount({}), expected);
    const back = await tempDir();
    const target = await openSqliteStore(`${back.path}/jobs.db`, { now: NOW });
    try {
      await storeTransfer(pg.store, target, { now: NOW + 10 * MINUTE });
      await check(target, "a copy back to SQLite");
      assert.deepEqual(await target.jobsCount({}), expected);
    } finally {
      await target.close();
      await back.cleanup();
    }
  } finally {
    await pg.close();
  }
});

Deno.test("sqlite: a write of many jobs, or an insert past 10,000 above the watermark, takes the new jobs into the counts", async () => {
  await using t = await tempStore();
  const through = () =>
    Number(
      (t.store.db.prepare("SELECT through FROM job_counts_through").get() as { through: number })
        .through,
    );
  const stored = () =>
    Number(
      (t.store.db.prepare("SELECT coalesce(sum(count), 0) AS n FROM job_counts").get() as {
        n: number;
      }).n,
    );
  // Small writes leave their jobs above the watermark, counted from the table.
  for (let i = 0; i < 3; i++) {
    await t.store.jobsInsert({ now: NOW, jobs: [newJob({ scheduledAt: NOW })] });
  }
  assert.deepEqual([through(), stored()], [0, 0]);
  await check(t.store, "small writes");
  // A write of FOLD_INSERTS jobs takes them in, and the small writes' jobs with them.
  const many = Array.from({ length: FOLD_INSERTS }, () => newJob({ scheduledAt: NOW }));
  await t.store.jobsInsert({ now: NOW, jobs: many });
  assert.deepEqual([through(), stored()], [3 + FOLD_INSERTS, 3 + FOLD_INSERTS]);
  await check(t.store, "a write of many");
  // Rows written by hand (a test factory) above the watermark are counted from the table.
  await insertJob(t.store, { state: "discarded", queue: "by-hand" });
  await check(t.store, "a row by hand");
  // One job at a time: the watermark stays until more than UNCOUNTED_MAX wait
  // above it (the row by hand is one of them).
  const before = through();
  for (let i = 1; i < UNCOUNTED_MAX; i++) {
    await t.store.jobsInsert({ now: NOW, jobs: [newJob({ scheduledAt: NOW })] });
  }
  assert.equal(through(), before, "10,000 above the watermark are counted from the table");
  await check(t.store, "10,000 above the watermark");
  await t.store.jobsInsert({ now: NOW, jobs: [newJob({ scheduledAt: NOW })] });
  assert.equal(through(), before + UNCOUNTED_MAX + 1, "the next insert takes them in");
  assert.equal(stored(), before + UNCOUNTED_MAX + 1);
  await check(t.store, "an insert past the limit");
});
