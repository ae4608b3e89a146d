/**
 * One body of tests written against the `Store` interface and run for every
 * backend in `BACKENDS` (test/support/backends.ts). A new backend (PostgreSQL) adds one entry to the
 * list; the body does not change. Nothing here touches SQL or a concrete
 * store type: rows are made through `jobsInsert`, `jobsClaim` and
 * `jobsRecord`, and time is passed in as `now`.
 */

import assert from "node:assert/strict";
import type { ClaimedJob, JobResult, JobState, NewJob } from "../src/kernel/types.ts";
import type { JobFilter, JobMatch, Store, StoreTx } from "../src/store/store.ts";
import { BACKENDS, harnessTest, newJob as makeJob } from "./support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const LEASE_MS = 30_000;

/** A plain job due at T0 unless told otherwise. */
function newJob(fields: Partial<NewJob> = {}): NewJob {
  return makeJob({ scheduledAt: T0, ...fields });
}

function completed(job: ClaimedJob, fields: { fence?: number } = {}): JobResult {
  return {
    id: job.id,
    fence: fields.fence ?? job.fence,
    attempt: job.attempt,
    startedAt: job.attemptedAt,
    outcome: "completed",
  };
}

function retryable(job: ClaimedJob, at: number): JobResult {
  return {
    id: job.id,
    fence: job.fence,
    attempt: job.attempt,
    startedAt: job.attemptedAt,
    outcome: "retryable",
    error: "boom",
    at,
  };
}

async function insert(store: Store, jobs: NewJob[], now = T0): Promise<number[]> {
  return (await store.jobsInsert({ jobs, now })).map((r) => r.id);
}

async function claim(
  store: Store,
  fields: { queue?: string; node?: string; limit?: number; now?: number } = {},
): Promise<ClaimedJob[]> {
  const { jobs } = await store.jobsClaim({
    queue: fields.queue ?? "default",
    node: fields.node ?? "node-a",
    limit: fields.limit ?? 10,
    now: fields.now ?? T0,
    leaseMs: LEASE_MS,
  });
  return jobs;
}

async function claimOne(store: Store, fields: Parameters<typeof claim>[1] = {}) {
  const jobs = await claim(store, { ...fields, limit: 1 });
  assert.equal(jobs.length, 1, "expected to claim one job");
  return jobs[0]!;
}

async function stateOf(store: Store, id: number): Promise<JobState | undefined> {
  return (await store.jobGet({ id }))?.state;
}

/** The rows {@linkcode writeEverything} changes, as they are before it. */
interface TxFixture {
  cancel: number;
  discard: number;
  retry: number;
  replay: number;
}

/**
 * Two waiting jobs (to cancel and discard), two cancelled ones (to retry
 * and replay), a schedule `tx-s`, and the settings `tx.kept` = 1 and
 * `tx.gone` = "gone soon".
 */
async function txFixture(store: Store): Promise<TxFixture> {
  const [cancel, discard, retry, replay] = await insert(store, [
    newJob(),
    newJob(),
    newJob({ queue: "tx-retry" }),
    newJob({ queue: "tx-replay" }),
  ]);
  await store.jobsCancel({ ids: [retry!, replay!], now: T0, reason: "set up" });
  await store.schedulesSync({ schedules: [{ id: "tx-s", hash: "h1", tenant: null }], now: T0 });
  await store.settingSet({ key: "tx.kept", value: 1, now: T0 });
  await store.settingSet({ key: "tx.gone", value: "gone soon", now: T0 });
  return { cancel: cancel!, discard: discard!, retry: retry!, replay: replay! };
}

/**
 * Every write of {@linkcode STORE_TX_METHODS} through `tx`, each checked to
 * have done its work, and what the reads inside `tx` then see.
 */
async function writeEverything(tx: StoreTx, f: TxFixture) {
  const now = T0 + 10;
  const [fresh] = await tx.jobsInsert({ jobs: [newJob({ worker: "tx-new" })], now });
  assert.equal(fresh?.duplicate, false);
  assert.deepEqual(await tx.jobsCancel({ ids: [f.cancel], now, reason: "tx" }), [f.cancel]);
  assert.deepEqual(await tx.jobsDiscard({ ids: [f.discard], now, reason: "tx" }), [f.discard]);
  assert.deepEqual(await tx.jobsRetry({ ids: [f.retry], now }), [f.retry]);
  assert.deepEqual(
    await tx.jobReplay({ id: f.replay, now, actor: "ops", reason: "tx", force: false }),
    { replayed: true, was: "cancelled" },
  );
  await tx.queuePause({ name: "tx-q", paused: true, now });
  assert.equal(
    await tx.scheduleSetEnabled({ id: "tx-s", enabled: false, reason: "tx", actor: "ops", now }),
    true,
  );
  await tx.schedulesSync({ schedules: [{ id: "tx-new", hash: "h2", tenant: null }], now });
  await tx.settingSet({ key: "tx.kept", value: 2, now });
  await tx.settingDelete({ key: "tx.gone" });
  await tx.auditRecord({
    at: now,
    actor: "ops",
    action: "tx.test",
    target: "tx:target",
    reason: "in the transaction",
  });
  return {
    cancelled: (await tx.jobGet({ id: f.cancel }))?.state,
    retried: (await tx.jobsList({ ids: [f.retry] })).map((j) => j.state),
    setting: await tx.settingGet({ key: "tx.kept" }),
    paused: (await tx.queuesList()).find((q) => q.name === "tx-q")?.paused,
    enabled: (await tx.schedulesList({ ids: ["tx-s"] }))[0]?.enabled,
  };
}

/** What {@linkcode writeEverything} touched, as the store now holds it. */
async function txSnapshot(store: Store, f: TxFixture) {
  const ids = [f.cancel, f.discard, f.retry, f.replay];
  return {
    states: await Promise.all(ids.map((id) => stateOf(store, id))),
    inserted: (await store.jobsList({ worker: "tx-new" })).length,
    audit: (await store.auditList({ target: "tx:target" })).map((a) => [a.action, a.reason]),
    paused: (await store.queuesList()).find((q) => q.name === "tx-q")?.paused ?? false,
    schedules: (await store.schedulesList({})).map((s) => [s.id, s.enabled]),
    settings: [
      await store.settingGet({ key: "tx.kept" }),
      await store.settingGet({ key: "tx.gone" }),
    ],
  };
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  // ------------------------------------------------------------------ insert

  test("jobsInsert() returns ids in input order, scheduled when due later", async ({ store }) => {
    const results = await store.jobsInsert({
      now: T0,
      jobs: [
        newJob({ args: `{"n":0}` }),
        newJob({ args: `{"n":1}`, scheduledAt: T0 + 60_000 }),
        newJob({ args: `{"n":2}`, queue: "mail" }),
        newJob({ args: `{"n":3}`, scheduledAt: T0 - 1 }),
      ],
    });
    assert.equal(results.length, 4);
    assert.deepEqual(results.map((r) => r.state), [
      "available",
      "scheduled",
      "available",
      "available",
    ]);
    assert.deepEqual(results.map((r) => r.queue), ["default", "default", "mail", "default"]);
    assert.ok(results.every((r) => !r.duplicate));
    assert.equal(new Set(results.map((r) => r.id)).size, 4);
    for (const [n, r] of results.entries()) {
      assert.deepEqual((await store.jobGet({ id: r.id }))?.args, { n });
    }
  });

  // ------------------------------------------------------------------- claim

  test("jobsClaim() takes only available jobs of its queue that are due now", async ({ store }) => {
    const [due, later, other] = await insert(store, [
      newJob(),
      newJob({ scheduledAt: T0 + 1000 }), // scheduled
      newJob({ queue: "other" }),
    ]);
    // Available, but inserted "in the future": not due at T0.
    const [notDue] = await insert(store, [newJob({ scheduledAt: T0 + 5000 })], T0 + 5000);
    assert.equal(await stateOf(store, notDue!), "available");
    // A retryable job, due, is not claimable until staged.
    const [retry] = await insert(store, [newJob()]);
    const first = await claim(store, { limit: 10 });
    assert.deepEqual(first.map((j) => j.id).sort((a, b) => a - b), [due, retry]);
    const retried = first.find((j) => j.id === retry)!;
    await store.jobsRecord({
      node: "node-a",
      now: T0,
      results: [retryable(retried, T0)],
    });
    assert.equal(await stateOf(store, retry!), "retryable");

    // Executing, retryable, scheduled, not-due and other-queue jobs: nothing to claim.
    assert.deepEqual(await claim(store, { node: "node-b" }), []);
    assert.equal(await stateOf(store, due!), "executing");
    assert.equal(await stateOf(store, later!), "scheduled");
    assert.equal(await stateOf(store, other!), "available");

    const [otherJob] = await claim(store, { queue: "other" });
    assert.equal(otherJob?.id, other);
    const [late] = await claim(store, { now: T0 + 5000 });
    assert.equal(late?.id, notDue);
  });

  test("jobsClaim() orders by priority, then scheduled_at, then id", async ({ store }) => {
    const [e, a, b, c, d] = await insert(store, [
      newJob({ priority: 2, scheduledAt: T0 - 5000 }),
      newJob({ priority: 1, scheduledAt: T0 - 3000 }),
      newJob({ priority: 0, scheduledAt: T0 - 1000 }),
      newJob({ priority: 0, scheduledAt: T0 - 2000 }),
      newJob({ priority: 0, scheduledAt: T0 - 2000 }),
    ]);
    const order: number[] = [];
    for (let i = 0; i < 5; i++) order.push((await claimOne(store)).id);
    assert.deepEqual(order, [c, d, b, a, e]);
    assert.deepEqual(await claim(store), []);
  });

  test("jobsClaim() with a limit takes the first jobs in claim order", async ({ store }) => {
    const [low, high1, high2] = await insert(store, [
      newJob({ priority: 5 }),
      newJob({ priority: 0 }),
      newJob({ priority: 0 }),
    ]);
    const jobs = await claim(store, { limit: 2 });
    assert.deepEqual(jobs.map((j) => j.id).sort((x, y) => x - y), [high1, high2]);
    assert.equal(await stateOf(store, low!), "available");
  });

  test("jobsClaim() increments attempt and fence and sets attempted_by and the lease", async ({ store }) => {
    const [id] = await insert(store, [newJob({ maxAttempts: 3, priority: 4 })]);
    const job = await claimOne(store, { node: "node-a", now: T0 + 10 });
    assert.equal(job.id, id);
    assert.equal(job.attempt, 1);
    assert.equal(job.fence, 1);
    assert.equal(job.attemptedAt, T0 + 10);
    assert.equal(job.maxAttempts, 3);
    assert.equal(job.priority, 4);
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "executing");
    assert.equal(row?.attempt, 1);
    assert.equal(row?.fence, 1);
    assert.equal(row?.attemptedBy, "node-a");
    assert.equal(row?.attemptedAt, T0 + 10);
    assert.equal(row?.leaseExpiresAt, T0 + 10 + LEASE_MS);
  });

  test("jobsClaim() on a paused queue claims nothing until it is resumed", async ({ store }) => {
    const [id] = await insert(store, [newJob()]);
    const [other] = await insert(store, [newJob({ queue: "other" })]);
    await store.queuePause({ name: "default", paused: true, now: T0 });
    const queues = await store.queuesList();
    assert.deepEqual(queues.map((q) => [q.name, q.paused]), [["default", true]]);
    assert.deepEqual(await claim(store), []);
    assert.equal(await stateOf(store, id!), "available");
    assert.equal((await claimOne(store, { queue: "other" })).id, other);

    await store.queuePause({ name: "default", paused: false, now: T0 + 1 });
    assert.equal((await store.queuesList())[0]?.paused, false);
    assert.equal((await claimOne(store)).id, id);
  });

  test("jobsClaim() from two connections never hands out a job twice", async ({ store, connect }) => {
    const other = await connect();
    const ids = await insert(store, Array.from({ length: 60 }, () => newJob()));
    const seen: number[] = [];
    const drain = async (s: Store, node: string) => {
      for (;;) {
        const jobs = await claim(s, { node, limit: 3 });
        if (jobs.length === 0) return;
        seen.push(...jobs.map((j) => j.id));
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    };
    await Promise.all([drain(store, "node-a"), drain(other, "node-b")]);
    assert.equal(seen.length, ids.length);
    assert.deepEqual([...seen].sort((a, b) => a - b), ids);
  });

  // ------------------------------------------------------------ record, fence

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

  // ------------------------------------------------------------------ cancel

  test("jobsCancel() of an executing job breaks its lease and writes a cancelled attempt", async ({ store }) => {
    const [waiting, done] = await insert(store, [newJob({ priority: 9 }), newJob({ priority: 8 })]);
    const [id] = await insert(store, [newJob()]);
    const job = await claimOne(store, { node: "node-a" });
    assert.equal(job.id, id);
    const finished = await claimOne(store, { node: "node-a" });
    assert.equal(finished.id, done);
    await store.jobsRecord({ node: "node-a", now: T0, results: [completed(finished)] });

    const cancelled = await store.jobsCancel({
      ids: [id!, waiting!, done!, 999_999],
      now: T0 + 5,
      reason: "operator: stop it",
    });
    assert.deepEqual(cancelled.sort((a, b) => a - b), [waiting, id].sort((a, b) => a! - b!));
    assert.equal(await stateOf(store, done!), "completed");

    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "cancelled");
    assert.equal(row?.cancelledAt, T0 + 5);
    assert.equal(row?.leaseExpiresAt, null);
    assert.equal(row?.errors.at(-1)?.error, "operator: stop it");

    const renewal = await store.jobsRenew({
      node: "node-a",
      leases: [{ id: id!, fence: job.fence }],
      now: T0 + 6,
      leaseMs: LEASE_MS,
    });
    assert.deepEqual(renewal.lost, [{ id: id!, fence: job.fence }]);
    const report = await store.jobsRecord({
      node: "node-a",
      now: T0 + 7,
      results: [completed(job)],
    });
    assert.deepEqual(report, { recorded: [], lost: [id] });
    assert.equal(await stateOf(store, id!), "cancelled");

    const attempts = await store.attemptsList({ jobId: id! });
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]?.outcome, "cancelled");
    assert.equal(attempts[0]?.fence, 1);
    assert.equal(attempts[0]?.node, "node-a");
    assert.equal(attempts[0]?.error, "operator: stop it");
    assert.equal(attempts[0]?.finishedAt, T0 + 5);
    // A job that never ran has no attempt to end.
    assert.deepEqual(await store.attemptsList({ jobId: waiting! }), []);
    assert.equal(await stateOf(store, waiting!), "cancelled");
  });

  // --------------------------------------------------- operator: retry, discard

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

  test("jobsDiscard() discards jobs not final and breaks an executing job's lease", async ({ store }) => {
    const [waiting, id, done] = await insert(store, [
      newJob({ priority: 9 }),
      newJob({ priority: 0 }),
      newJob({ priority: 1 }),
    ]);
    const job = await claimOne(store);
    assert.equal(job.id, id);
    const finished = await claimOne(store);
    await store.jobsRecord({ node: "node-a", now: T0, results: [completed(finished)] });

    const discarded = await store.jobsDiscard({
      ids: [id!, waiting!, done!],
      now: T0 + 5,
      reason: "operator: poison",
    });
    assert.deepEqual(discarded, [id, waiting]);
    assert.equal(await stateOf(store, done!), "completed");
    const row = await store.jobGet({ id: id! });
    assert.equal(row?.state, "discarded");
    assert.equal(row?.discardedAt, T0 + 5);
    assert.equal(row?.errors.at(-1)?.error, "operator: poison");
    assert.equal(await stateOf(store, waiting!), "discarded");

    const renewal = await store.jobsRenew({
      node: "node-a",
      leases: [{ id: id!, fence: job.fence }],
      now: T0 + 6,
      leaseMs: LEASE_MS,
    });
    assert.equal(renewal.lost.length, 1);
    const attempts = await store.attemptsList({ jobId: id! });
    assert.deepEqual(
      attempts.map((a) => [a.fence, a.node, a.kind, a.outcome, a.error]),
      [[1, "node-a", "run", "discarded", "operator: poison"]],
    );
  });

  // ------------------------------------------------------------------ replay

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

  test("jobsPrunable() counts what jobsPrune() and jobsPruneSchedule() then delete", async ({ store }) => {
    const ids = await insert(store, [
      newJob(),
      newJob(),
      newJob({ occurrence: "keep@x", scheduleId: "keep" }),
      newJob({ occurrence: "other@x", scheduleId: "other" }),
      newJob({ priority: 9 }),
    ]);
    const claimed = await claim(store, { limit: 4 });
    await store.jobsRecord({
      node: "node-a",
      now: T0 + 1,
      results: claimed.map((j) => completed(j)),
    });
    await store.jobsCancel({ ids: [ids[4]!], now: T0 + 2, reason: "no" });

    const byState = { completed: T0 + 2, cancelled: T0 + 2 };
    assert.equal(await store.jobsPrunable({ before: byState }), 4);
    assert.equal(await store.jobsPrunable({ before: { ...byState, cancelled: T0 + 3 } }), 5);
    assert.equal(await store.jobsPrunable({ before: { discarded: T0 + 9 } }), 0);
    // A schedule with its own retention: kept while younger than its cutoff.
    const keep = [{ scheduleId: "keep", before: T0 + 1 }];
    assert.equal(await store.jobsPrunable({ before: byState, schedules: keep }), 3);
    const older = [{ scheduleId: "keep", before: T0 + 5 }];
    assert.equal(await store.jobsPrunable({ before: byState, schedules: older }), 4);

    assert.equal(await store.jobsPrune({ before: byState, limit: 100, except: ["keep"] }), 3);
    assert.equal(await store.jobsPrunable({ before: byState, schedules: keep }), 0);
    assert.equal(await store.jobsPrunable({ before: byState, schedules: older }), 1);
  });

  // ---------------------------------------------------------------- filters

  test("jobsList() filters by schedule, occurrence and a case-insensitive search", async ({ store }) => {
    const [nightly, hourly, mail, tagged, failed, percent] = await insert(store, [
      newJob({ occurrence: "nightly@2026-01-01T00:00:00.000Z", scheduleId: "nightly" }),
      newJob({ occurrence: "hourly@2026-01-01T00:00:00.000Z", scheduleId: "hourly" }),
      newJob({ worker: "SendMail", args: `{"to":"a@example.com"}` }),
      newJob({ tags: `["Billing","eu"]` }),
      newJob({ maxAttempts: 1, priority: 9 }),
      newJob({ args: `{"rate":"100%_off"}` }),
    ]);
    const job = await claimOne(store, { queue: "default" });
    assert.equal(job.id, nightly);
    const last = await claim(store, { limit: 10 });
    const failing = last.find((j) => j.id === failed)!;
    await store.jobsRecord({
      node: "node-a",
      now: T0,
      results: [{
        ...retryable(failing, T0),
        outcome: "discarded",
        error: "Timeout Talking To S3",
      }],
    });
    const ids = async (filter: Parameters<Store["jobsList"]>[0]) =>
      (await store.jobsList(filter)).map((j) => j.id);

    assert.deepEqual(await ids({ scheduleId: "nightly" }), [nightly]);
    assert.deepEqual(await ids({ occurrence: "hourly@2026-01-01T00:00:00.000Z" }), [hourly]);
    assert.deepEqual(await ids({ occurrence: "hourly" }), []);
    assert.deepEqual(await ids({ search: "sendmail" }), [mail]);
    assert.deepEqual(await ids({ search: "EXAMPLE.com" }), [mail]);
    assert.deepEqual(await ids({ search: "billing" }), [tagged]);
    assert.deepEqual(await ids({ search: "talking to s3" }), [failed]);
    assert.deepEqual(await ids({ search: "HOURLY@" }), [hourly]);
    // % and _ are literal, not wildcards.
    assert.deepEqual(await ids({ search: "0%_o" }), [percent]);
    assert.deepEqual(await ids({ search: "%" }), [percent]);
    assert.deepEqual(await ids({ search: "_" }), [percent]);
    assert.deepEqual(await ids({ search: "\\" }), []);
    assert.deepEqual(await ids({ search: "@", scheduleId: "hourly" }), [hourly]);
    assert.deepEqual(await ids({ search: "@", desc: true, limit: 2 }), [mail, hourly]);
  });

  test("jobsList() searches tags and errors for text JSON escapes (quotes, backslashes, newlines)", async ({ store }) => {
    const [quoted, slashed, plain] = await insert(store, [
      newJob({ tags: JSON.stringify(['say "hi"']) }),
      newJob({ tags: JSON.stringify(["C:\\temp"]) }),
      newJob({ tags: JSON.stringify(["hi"]) }),
    ]);
    const [failing] = await insert(store, [newJob()]);
    await store.jobsDiscard({ ids: [failing!], now: T0, reason: 'line one\nsaid "no"' });
    const ids = async (search: string) => (await store.jobsList({ search })).map((j) => j.id);
    assert.deepEqual(await ids('"hi"'), [quoted]);
    assert.deepEqual(await ids("hi"), [quoted, plain]);
    assert.deepEqual(await ids(":\\t"), [slashed]);
    assert.deepEqual(await ids('one\nsaid "NO"'), [failing]);
    assert.deepEqual(await ids("said"), [failing]);
  });

  test("jobsList() and jobsCountMatching() search what a reader is shown, never a redacted secret", async ({ store }) => {
    const [argv, keyed, contact, failing] = await insert(store, [
      newJob({ args: JSON.stringify({ argv: ["deploy", "password=PASS-222"] }) }),
      newJob({ args: JSON.stringify({ password: "PASS-333" }) }),
      newJob({ args: JSON.stringify({ note: "contact the PASS-2 desk" }) }),
      newJob(),
    ]);
    // An error stored before `pass=` was a secret name: shown redacted all the same.
    await store.jobsDiscard({ ids: [failing!], now: T0, reason: "login with pass=PASS-444" });
    const ids = async (search: string, more: Omit<JobFilter, "search"> = {}) =>
      (await store.jobsList({ ...more, search })).map((j) => j.id);
    const found: [string, (number | undefined)[]][] = [
      ["PASS-2", [contact]],
      ["PASS-222", []],
      ["PASS-333", []],
      ["PASS-444", []],
      ["password", [argv, keyed]],
      ["password=", [argv]],
      ["pass=", [failing]],
      ["[REDACTED]", [argv, keyed, failing]],
      ["password=[REDACTED]", [argv]],
      ['"password":"[REDACTED]"', [keyed]],
      ["d=[red", [argv]],
      ["acted]", [argv, keyed, failing]],
      // "act" is in "contact" and in every [REDACTED] a reader sees.
      ["act", [argv, keyed, contact, failing]],
    ];
    for (const [search, expected] of found) {
      assert.deepEqual(await ids(search), expected, search);
      assert.equal(await store.jobsCountMatching({ search }), expected.length, `${search} counted`);
    }
    assert.deepEqual(await ids("act", { desc: true, limit: 2 }), [failing, contact]);
    assert.deepEqual(await ids("act", { desc: true, limit: 2, after: contact }), [keyed, argv]);
    assert.equal(await store.jobsCountMatching({ search: "act" }, { atMost: 3 }), 3);
  });

  test("a search pages past rows whose stored text matches and whose shown text does not", async ({ store }) => {
    // Ids 1-250: every tenth says "PASS-2" where a reader sees it, the others only in a secret.
    const jobs = Array.from({ length: 250 }, (_, n) =>
      newJob({
        args: JSON.stringify(
          n % 10 === 9 ? { note: `PASS-2 shown ${n}` } : { argv: [`password=PASS-2${n}`] },
        ),
      }));
    const ids = await insert(store, jobs);
    const shown = ids.filter((_, n) => n % 10 === 9);
    for (const desc of [false, true]) {
      const expected = desc ? [...shown].reverse() : shown;
      const paged: number[] = [];
      let after: number | undefined;
      for (let page = 0; page < 50; page++) {
        const rows = await store.jobsList({ search: "pass-2", desc, limit: 4, after });
        paged.push(...rows.map((j) => j.id));
        if (rows.length < 4) break;
        after = rows.at(-1)!.id;
      }
      assert.deepEqual(paged, expected, desc ? "desc" : "asc");
    }
    assert.equal(await store.jobsCountMatching({ search: "PASS-2" }), 25);
    assert.equal(await store.jobsCountMatching({ search: "PASS-2" }, { atMost: 7 }), 7);
    assert.equal(await store.jobsCountMatching({ search: "PASS-2", above: ids[199] }), 5);
  });

  test("jobsList() pages with after: each job exactly once, in order, asc and desc, any filter", async ({ store }) => {
    const queues = ["default", "mail", "reports"];
    const ids = await insert(
      store,
      Array.from({ length: 41 }, (_, n) =>
        newJob({
          queue: queues[n % 3],
          args: JSON.stringify({ n, note: n % 5 === 0 ? "needle" : "hay" }),
          scheduleId: n % 4 === 0 ? "nightly" : null,
          occurrence: n % 4 === 0 ? `nightly@${new Date(T0 + n * 60_000).toISOString()}` : null,
        })),
    );
    await store.jobsDiscard({ ids: ids.filter((_, n) => n % 6 === 1), now: T0, reason: "poison" });
    await store.jobsCancel({ ids: ids.filter((_, n) => n % 7 === 2), now: T0, reason: "stop" });
    await claim(store, { queue: "mail", limit: 4 });
    const all = await store.jobsList({});
    assert.deepEqual(all.map((j) => j.id), ids, "the whole list, oldest first");

    const filters: [Parameters<Store["jobsList"]>[0], (j: (typeof all)[number]) => boolean][] = [
      [{}, () => true],
      [{ state: "discarded" }, (j) => j.state === "discarded"],
      [{ state: "cancelled", queue: "mail" }, (j) => j.state === "cancelled" && j.queue === "mail"],
      [{ state: ["available", "executing"] }, (j) => ["available", "executing"].includes(j.state)],
      [{ queue: "reports" }, (j) => j.queue === "reports"],
      [{ scheduleId: "nightly" }, (j) => j.scheduleId === "nightly"],
      [{ search: "NEEDLE" }, (j) => (j.args as { note: string }).note === "needle"],
      [
        { state: "discarded", search: "needle" },
        (j) => j.state === "discarded" && (j.args as { note: string }).note === "needle",
      ],
    ];
    for (const [filter, keep] of filters) {
      for (const desc of [false, true]) {
        const expected = all.filter(keep).map((j) => j.id);
        if (desc) expected.reverse();
        assert.ok(expected.length > 0, `${JSON.stringify(filter)} matches something`);
        const what = `${JSON.stringify(filter)}${desc ? " desc" : ""}`;
        assert.deepEqual(
          (await store.jobsList({ ...filter, desc })).map((j) => j.id),
          expected,
          what,
        );
        const paged: number[] = [];
        let after: number | undefined;
        for (let page = 0; page < 50; page++) {
          const rows = await store.jobsList({ ...filter, desc, limit: 3, after });
          paged.push(...rows.map((j) => j.id));
          if (rows.length < 3) break;
          after = rows.at(-1)!.id;
        }
        assert.deepEqual(paged, expected, `${what}, paged by 3`);
      }
    }
    // Past the end, and from an id that is not a job: still in order.
    assert.deepEqual(await store.jobsList({ after: ids.at(-1)!, limit: 3 }), []);
    assert.deepEqual(
      (await store.jobsList({ desc: true, after: ids.at(-1)! + 1000, limit: 2 })).map((j) => j.id),
      ids.slice(-2).reverse(),
    );
  });

  test("jobsList() refuses an unknown state and an after that is not an id, naming them", async ({ store }) => {
    await assert.rejects(
      store.jobsList({ state: "finished" as JobState }),
      (e: Error) => e instanceof RangeError && /state must be one of .*"finished"/.test(e.message),
    );
    await assert.rejects(
      store.jobsList({ after: 1.5 }),
      (e: Error) => e instanceof RangeError && /after must be a job id .*1\.5/.test(e.message),
    );
  });

  // ------------------------------------------------------------------- stage

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

  // ------------------------------------------------------------------- count

  test("jobsCount() counts by queue and state, optionally for one queue", async ({ store }) => {
    await insert(store, [
      newJob(),
      newJob(),
      newJob(),
      newJob({ queue: "mail" }),
      newJob({ queue: "mail", scheduledAt: T0 + 1000 }),
    ]);
    await claimOne(store);
    const key = (rows: { queue: string; state: string; count: number }[]) =>
      rows.map((r) => `${r.queue}/${r.state}=${r.count}`).sort();
    assert.deepEqual(key(await store.jobsCount({})), [
      "default/available=2",
      "default/executing=1",
      "mail/available=1",
      "mail/scheduled=1",
    ]);
    assert.deepEqual(key(await store.jobsCount({ queue: "mail" })), [
      "mail/available=1",
      "mail/scheduled=1",
    ]);
    assert.deepEqual(await store.jobsCount({ queue: "none" }), []);
  });

  test("queuesOldestAvailable() gives each queue's earliest available job, at any priority", async ({ store }) => {
    await insert(store, [
      newJob({ scheduledAt: T0 - 5000, priority: 9 }),
      newJob({ scheduledAt: T0 - 1000, priority: 0 }),
      newJob({ queue: "mail", scheduledAt: T0 - 3000, priority: 4 }),
      newJob({ queue: "mail", scheduledAt: T0 - 7000, priority: 4 }),
      // Not available: neither counts.
      newJob({ queue: "late", scheduledAt: T0 + 60_000 }),
    ]);
    await claimOne(store, { queue: "mail", now: T0 });
    assert.deepEqual(
      await store.queuesOldestAvailable({ queues: ["default", "mail", "late", "none"] }),
      [{ queue: "default", scheduledAt: T0 - 5000 }, { queue: "mail", scheduledAt: T0 - 3000 }],
    );
    assert.deepEqual(await store.queuesOldestAvailable({ queues: [] }), []);
  });

  test("schedulesOutcomes() gives each schedule's last outcome and its discarded occurrences since the last completed one", async ({ store }) => {
    await store.schedulesSync({
      schedules: ["nightly", "quiet"].map((id) => ({ id, hash: "h", tenant: null })),
      now: T0,
    });
    const occurrence = (i: number) =>
      newJob({
        scheduleId: "nightly",
        occurrence: `nightly@${new Date(T0 + i * 1000).toISOString()}`,
        scheduledFor: T0 + i * 1000,
        maxAttempts: 1,
      });
    await insert(store, [0, 1, 2, 3, 4].map(occurrence));
    let now = T0;
    const end = async (outcome: "completed" | "discarded" | "cancelled", queue = "default") => {
      const job = await claimOne(store, { queue, now });
      now += 1000;
      await store.jobsRecord({
        node: "node-a",
        now,
        results: [
          outcome === "completed"
            ? completed(job)
            : { ...retryable(job, now), outcome, error: "boom" },
        ],
      });
    };
    assert.deepEqual(await store.schedulesOutcomes({}), []);
    await end("completed");
    assert.deepEqual(await store.schedulesOutcomes({}), [
      { scheduleId: "nightly", lastOutcome: "completed", lastOutcomeAt: now, failures: 0 },
    ]);
    await end("discarded");
    await end("cancelled"); // neither a failure nor a success: the run goes on
    await end("discarded");
    const failed = now;
    // A fan-out item of the schedule is not an occurrence: it counts for nothing.
    await insert(store, [newJob({ queue: "fan", scheduleId: "nightly", maxAttempts: 1 })], now);
    await end("discarded", "fan");
    assert.deepEqual(await store.schedulesOutcomes({}), [
      { scheduleId: "nightly", lastOutcome: "discarded", lastOutcomeAt: failed, failures: 2 },
    ]);
    assert.deepEqual(await store.schedulesOutcomes({ ids: ["quiet"] }), []);
    await end("completed");
    assert.deepEqual(await store.schedulesOutcomes({ ids: ["nightly", "quiet"] }), [
      { scheduleId: "nightly", lastOutcome: "completed", lastOutcomeAt: now, failures: 0 },
    ]);
  });

  test("leadersList() reads every role's holder, released ones included", async ({ store }) => {
    assert.deepEqual(await store.leadersList(), []);
    const held = await store.leaderTake({ name: "maintenance", node: "a", now: T0, ttlMs: 5000 });
    assert.deepEqual(await store.leadersList(), [
      { name: "maintenance", node: "a", fence: held.fence, expiresAt: T0 + 5000, acquiredAt: T0 },
    ]);
    await store.leaderRelease({ name: "maintenance", node: "a", fence: held.fence });
    assert.deepEqual((await store.leadersList()).map((l) => l.node), [null]);
  });

  test("jobsCountMatching() counts what every page of jobsList() holds, for any filter", async ({ store }) => {
    const queues = ["default", "mail", "reports"];
    const ids = await insert(
      store,
      Array.from({ length: 23 }, (_, n) =>
        newJob({
          queue: queues[n % 3],
          worker: n % 2 === 0 ? "send" : "build",
          tags: JSON.stringify(n % 5 === 0 ? ["vip"] : []),
          args: JSON.stringify({ n, note: n % 4 === 0 ? "needle" : "hay" }),
          scheduleId: n % 6 === 0 ? "nightly" : null,
          occurrence: n % 6 === 0 ? `nightly@${new Date(T0 + n * 60_000).toISOString()}` : null,
        })),
    );
    await store.jobsDiscard({ ids: ids.filter((_, n) => n % 4 === 1), now: T0, reason: "poison" });
    await store.jobsCancel({ ids: ids.filter((_, n) => n % 7 === 2), now: T0, reason: "stop" });
    await claim(store, { queue: "mail", limit: 2 });
    const all = await store.jobsList({});
    type Keep = (j: (typeof all)[number]) => boolean;
    const note = (j: (typeof all)[number]) => (j.args as { note: string }).note;
    const cases: [JobMatch, Keep][] = [
      [{}, () => true],
      [{ state: "discarded" }, (j) => j.state === "discarded"],
      [{ state: "executing" }, (j) => j.state === "executing"],
      [{ state: ["available", "cancelled"] }, (j) => ["available", "cancelled"].includes(j.state)],
      [{ state: [] }, () => false],
      [{ queue: "mail", state: "cancelled" }, (j) => j.queue === "mail" && j.state === "cancelled"],
      [{ worker: "build" }, (j) => j.worker === "build"],
      [{ tag: "vip" }, (j) => j.tags.includes("vip")],
      [{ scheduleId: "nightly" }, (j) => j.scheduleId === "nightly"],
      [{ search: "NEEDLE" }, (j) => note(j) === "needle"],
      [{ search: "poison" }, (j) => j.errors.some((e) => e.error.includes("poison"))],
      [
        { state: "discarded", queue: "reports", search: "needle" },
        (j) => j.state === "discarded" && j.queue === "reports" && note(j) === "needle",
      ],
      [{ ids: [ids[0]!, ids[5]!, 99_999] }, (j) => j.id === ids[0] || j.id === ids[5]],
    ];
    for (const [filter, keep] of cases) {
      const expected = all.filter(keep).length;
      const what = JSON.stringify(filter);
      assert.equal(await store.jobsCountMatching(filter), expected, what);
      assert.equal((await store.jobsList(filter)).length, expected, `${what} listed`);
    }
    assert.ok(all.some((j) => j.state === "discarded") && all.some((j) => j.state === "executing"));
    await assert.rejects(
      store.jobsCountMatching({ state: "finished" as JobState }),
      (e: Error) => e instanceof RangeError && /state must be one of .*"finished"/.test(e.message),
    );
  });

  test("jobsThroughput() counts completions and failed attempts per queue and bucket", async ({ store }) => {
    const MIN = 60_000;
    await insert(store, [newJob(), newJob(), newJob(), newJob(), newJob({ queue: "mail" })]);
    await insert(store, [newJob({ queue: "mail" })]);
    const [a, b, c, d] = await claim(store, { limit: 4 });
    const [m1, m2] = await claim(store, { queue: "mail", limit: 2 });
    const record = (now: number, results: JobResult[]) =>
      store.jobsRecord({ node: "node-a", now, results });
    await record(T0 - 1, [completed(d!)]); // before the window
    await record(T0 + 10_000, [completed(a!)]);
    await record(T0 + 5_000, [completed(m1!)]);
    await record(T0 + MIN + 10_000, [completed(b!)]);
    await record(T0 + MIN + 15_000, [retryable(c!, T0 + MIN + 15_000)]);
    await record(T0 + 2 * MIN + 1, [{ ...retryable(m2!, 0), outcome: "discarded", error: "x" }]);
    // The failed job's next attempt succeeds later: it counts where it completes.
    await store.jobsStage({ now: T0 + MIN + 15_000, limit: 10 });
    const [again] = await claim(store, { limit: 1, now: T0 + MIN + 15_000 + 1 });
    assert.equal(again?.id, c!.id);
    await record(T0 + 3 * MIN + 1, [completed(again!)]); // after the window

    const rows = await store.jobsThroughput({ since: T0, until: T0 + 3 * MIN, bucketMs: MIN });
    assert.deepEqual(rows, [
      { queue: "default", bucket: T0, completed: 1, failed: 0 },
      { queue: "default", bucket: T0 + MIN, completed: 1, failed: 1 },
      { queue: "mail", bucket: T0, completed: 1, failed: 0 },
      { queue: "mail", bucket: T0 + 2 * MIN, completed: 0, failed: 1 },
    ]);
    assert.deepEqual(
      await store.jobsThroughput({ since: T0 - MIN, until: T0 + 4 * MIN, bucketMs: 4 * MIN }),
      [
        { queue: "default", bucket: T0 - MIN, completed: 3, failed: 1 },
        // The last bucket starts at T0 + 3 min and is cut short by until.
        { queue: "default", bucket: T0 + 3 * MIN, completed: 1, failed: 0 },
        { queue: "mail", bucket: T0 - MIN, completed: 1, failed: 1 },
      ],
    );
    assert.deepEqual(await store.jobsThroughput({ since: T0, until: T0, bucketMs: MIN }), []);
    await assert.rejects(
      store.jobsThroughput({ since: T0, until: T0 + MIN, bucketMs: 0 }),
      /bucketMs must be at least 1, got 0/,
    );
    await assert.rejects(
      store.jobsThroughput({ since: T0, until: T0 - 1, bucketMs: MIN }),
      /until must not be before since/,
    );
  });

  test("jobsDeadLetters() groups discarded jobs by worker, schedule and first error line", async ({ store }) => {
    const ids = await insert(store, [
      newJob({ worker: "mail" }),
      newJob({ worker: "mail" }),
      newJob({ worker: "mail" }),
      newJob({ worker: "mail", scheduleId: "nightly" }),
      newJob({ worker: "report" }),
      newJob({ worker: "report" }),
    ]);
    const discard = (n: number[], now: number, reason: string) =>
      store.jobsDiscard({ ids: n.map((i) => ids[i]!), now, reason });
    await discard([0], T0 + 1, "smtp refused\n  at send (mail.ts:1)");
    await discard([1], T0 + 3, "smtp refused\n  at send (mail.ts:9)");
    await discard([2], T0 + 2, "bad address");
    await discard([3], T0 + 4, "smtp refused");
    // Only the last error counts: an earlier failure of this job is history.
    const [r] = await claim(store, { limit: 1 });
    assert.equal(r?.id, ids[4]);
    await store.jobsRecord({ node: "node-a", now: T0, results: [retryable(r!, T0)] });
    await discard([4], T0 + 5, "report gone");
    await discard([5], T0 + 6, "report gone");
    assert.deepEqual(await store.jobsDeadLetters({ limit: 10 }), [
      {
        worker: "report",
        scheduleId: null,
        error: "report gone",
        count: 2,
        latestId: ids[5],
        latestAt: T0 + 6,
      },
      {
        worker: "mail",
        scheduleId: null,
        error: "smtp refused",
        count: 2,
        latestId: ids[1],
        latestAt: T0 + 3,
      },
      {
        worker: "mail",
        scheduleId: "nightly",
        error: "smtp refused",
        count: 1,
        latestId: ids[3],
        latestAt: T0 + 4,
      },
      {
        worker: "mail",
        scheduleId: null,
        error: "bad address",
        count: 1,
        latestId: ids[2],
        latestAt: T0 + 2,
      },
    ]);
    assert.deepEqual((await store.jobsDeadLetters({ limit: 1 })).map((g) => g.count), [2]);
    // A retried dead letter leaves its group.
    await store.jobsRetry({ ids: [ids[5]!], now: T0 + 7 });
    const [top] = await store.jobsDeadLetters({ limit: 1 });
    assert.deepEqual([top?.worker, top?.count, top?.latestId], ["mail", 2, ids[1]]);
    await assert.rejects(store.jobsDeadLetters({ limit: 0 }), /limit must be .* got 0/);
  });

  // --------------------------------------------------------------- settings

  test("settingGet() returns null until settingSet() writes, then the latest value", async ({ store }) => {
    assert.equal(await store.settingGet({ key: "retention" }), null);
    await store.settingSet({ key: "retention", value: { completed: 7 }, now: T0 });
    await store.settingSet({ key: "limit", value: 3, now: T0 });
    assert.deepEqual(await store.settingGet({ key: "retention" }), { completed: 7 });
    await store.settingSet({ key: "retention", value: { completed: 1, tags: ["a"] }, now: T0 });
    assert.deepEqual(await store.settingGet({ key: "retention" }), { completed: 1, tags: ["a"] });
    assert.equal(await store.settingGet({ key: "limit" }), 3);
  });

  test("settingDelete() removes one setting and ignores an absent key", async ({ store }) => {
    await store.settingSet({ key: "fanout.cursor:a", value: { cursor: 1 }, now: T0 });
    await store.settingSet({ key: "fanout.cursor:b", value: { cursor: 2 }, now: T0 });
    await store.settingDelete({ key: "fanout.cursor:a" });
    await store.settingDelete({ key: "fanout.cursor:a" });
    await store.settingDelete({ key: "never" });
    assert.equal(await store.settingGet({ key: "fanout.cursor:a" }), null);
    assert.deepEqual(await store.settingGet({ key: "fanout.cursor:b" }), { cursor: 2 });
  });

  // ------------------------------------------------------------ transactions

  test("transaction() runs every StoreTx write inside it: a throw after them leaves nothing", async ({ store }) => {
    const before = await txFixture(store);
    await assert.rejects(
      store.transaction(async (tx) => {
        await writeEverything(tx, before);
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    const s = await txSnapshot(store, before);
    assert.deepEqual(s.states, ["available", "available", "cancelled", "cancelled"]);
    assert.equal(s.inserted, 0);
    assert.deepEqual(s.audit, []);
    assert.equal(s.paused, false);
    assert.deepEqual(s.schedules, [["tx-s", true]]);
    assert.deepEqual(s.settings, [1, "gone soon"]);
  });

  test("transaction() commits every StoreTx write together when it resolves", async ({ store }) => {
    const before = await txFixture(store);
    const inside = await store.transaction((tx) => writeEverything(tx, before));
    // Reads inside the transaction saw its own writes.
    assert.deepEqual(inside, {
      cancelled: "cancelled",
      retried: ["available"],
      setting: 2,
      paused: true,
      enabled: false,
    });
    const s = await txSnapshot(store, before);
    assert.deepEqual(s.states, ["cancelled", "discarded", "available", "available"]);
    assert.equal(s.inserted, 1);
    assert.deepEqual(s.audit, [["tx.test", "in the transaction"]]);
    assert.equal(s.paused, true);
    assert.deepEqual(s.schedules, [["tx-new", true], ["tx-s", false]]);
    assert.deepEqual(s.settings, [2, null]);
    // The replay's pending attempt row is the replay's once it runs.
    const [replayed] = await claim(store, { queue: "tx-replay", now: T0 + 20 });
    assert.equal(replayed?.id, before.replay);
    await store.jobsRecord({ node: "node-a", now: T0 + 20, results: [completed(replayed!)] });
    const attempts = await store.attemptsList({ jobId: before.replay });
    assert.deepEqual(attempts.map((a) => [a.kind, a.actor]), [["replay", "ops"]]);
  });

  test("a StoreTx call after its transaction ended is refused and joins no other", async ({ store }) => {
    let leaked: StoreTx | null = null;
    await store.transaction((tx) => {
      leaked = tx;
      return Promise.resolve();
    });
    const tx = leaked as unknown as StoreTx;
    await assert.rejects(
      tx.settingSet({ key: "late", value: 1, now: T0 }),
      /transaction has ended/,
    );
    await assert.rejects(tx.jobsInsert({ jobs: [newJob()], now: T0 }), /transaction has ended/);
    // Not even while another transaction is open.
    await assert.rejects(
      store.transaction(async (other) => {
        await other.settingSet({ key: "other", value: 1, now: T0 });
        await assert.rejects(
          tx.auditRecord({ at: T0, actor: "x", action: "late", target: "t", reason: null }),
          /transaction has ended/,
        );
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    assert.equal(await store.settingGet({ key: "late" }), null);
    assert.equal(await store.settingGet({ key: "other" }), null);
    assert.deepEqual(await store.auditList({ target: "t" }), []);
  });

  // ------------------------------------------------------------------ nodes

  test("nodeBeat() registers and refreshes, nodesExpire() and nodeRemove() delete", async ({ store }) => {
    await store.nodeBeat({ node: "n1", queues: { default: 2 }, now: T0 });
    await store.nodeBeat({ node: "n2", queues: { mail: 1 }, now: T0 + 1000 });
    await store.nodeBeat({ node: "n1", queues: { default: 3 }, now: T0 + 5000 });
    assert.deepEqual(await store.nodesList(), [
      {
        node: "n1",
        queues: { default: 3 },
        startedAt: T0,
        heartbeatAt: T0 + 5000,
        environment: null,
      },
      {
        node: "n2",
        queues: { mail: 1 },
        startedAt: T0 + 1000,
        heartbeatAt: T0 + 1000,
        environment: null,
      },
    ]);
    assert.equal(await store.nodesExpire({ before: T0 + 3000 }), 1);
    assert.deepEqual((await store.nodesList()).map((n) => n.node), ["n1"]);
    await store.nodeRemove({ node: "n1" });
    await store.nodeRemove({ node: "never-registered" });
    assert.deepEqual(await store.nodesList(), []);
  });

  test("nodeBeat() stores the node's environment with each beat, null when not stated", async ({ store }) => {
    await store.nodeBeat({ node: "n1", queues: {}, environment: "staging", now: T0 });
    await store.nodeBeat({ node: "n2", queues: {}, now: T0 });
    assert.deepEqual((await store.nodesList()).map((n) => [n.node, n.environment]), [
      ["n1", "staging"],
      ["n2", null],
    ]);
    // A restarted daemon with another --environment replaces it at its next beat.
    await store.nodeBeat({ node: "n1", queues: {}, environment: "production", now: T0 + 1000 });
    await store.nodeBeat({ node: "n2", queues: {}, environment: "staging", now: T0 + 1000 });
    assert.deepEqual((await store.nodesList()).map((n) => [n.node, n.environment]), [
      ["n1", "production"],
      ["n2", "staging"],
    ]);
  });

  test("workersList() names each worker the jobs use once, by name", async ({ store }) => {
    assert.deepEqual(await store.workersList(), []);
    await store.jobsInsert({
      jobs: ["send", "mailer", "send", "jobs.command"].map((worker) => newJob({ worker })),
      now: T0,
    });
    assert.deepEqual(await store.workersList(), ["jobs.command", "mailer", "send"]);
  });
}
