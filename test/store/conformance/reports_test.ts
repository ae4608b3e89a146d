/**
 * The report-run methods of the `Store` interface, called directly on every
 * backend: a run made queued for its `jobs.report` job within the report's
 * `max_concurrent` (counted under one lock, also from two connections at
 * once), started, advanced and finished only under its job's lease, the
 * state it reads as once its job ended without it, its listing by report,
 * tenant, page and state, and what the pruner reads and deletes.
 */

import assert from "node:assert/strict";
import type { ClaimedJob } from "../../../src/kernel/types.ts";
import type { ReportRun } from "../../../src/report/types.ts";
import type {
  IngestLease,
  ReportRunCreateParams,
  ReportRunFinishParams,
  Store,
} from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claimOne, completed, insert, newJob, stateOf, T0 } from "./helpers.ts";

const QUEUE = "reports";

/** A `jobs.report` job waiting in the queue "reports", inserted at `now`. */
async function reportJob(store: Pick<Store, "jobsInsert">, now = T0): Promise<number> {
  const [id] = await insert(
    store as Store,
    [newJob({ queue: QUEUE, worker: "jobs.report", scheduledAt: now })],
    now,
  );
  return id!;
}

/** A run of the report "sales" for acme's ann, for a new job unless `jobId` is given. */
async function create(
  store: Pick<Store, "jobsInsert" | "reportRunCreate">,
  fields: Partial<ReportRunCreateParams> = {},
) {
  const now = fields.now ?? T0;
  return await store.reportRunCreate({
    report: "sales",
    jobId: fields.jobId ?? await reportJob(store, now),
    tenant: "acme",
    actor: "ann",
    roles: ["viewer"],
    params: { from: "2026-01-01", top: 10, paid: true },
    sort: null,
    format: "csv",
    now,
    maxConcurrent: 5,
    ...fields,
  });
}

/** The run `create` made, failing the test when it was refused. */
function made(result: { run: ReportRun } | { active: number[] }): ReportRun {
  assert.ok("run" in result, `refused: runs ${JSON.stringify(result)} are active`);
  return result.run;
}

/** Claims the oldest report job and starts its run; the run's lease. */
async function started(
  store: Store,
  now = T0 + 1,
): Promise<{ job: ClaimedJob; lease: IngestLease }> {
  const job = await claimOne(store, { queue: QUEUE, now });
  const run = await store.reportRunStart({ jobId: job.id, fence: job.fence, now });
  assert.ok(run, `the run of job ${job.id} starts`);
  return { job, lease: { runId: run.id, jobId: job.id, fence: job.fence } };
}

/** A finish of `lease`'s run: completed with 3 rows unless `fields` say otherwise. */
function finish(
  store: Store,
  lease: IngestLease,
  fields: Partial<ReportRunFinishParams> = {},
): Promise<boolean> {
  return store.reportRunFinish({
    lease,
    state: "completed",
    rows: 3,
    bytes: 30,
    output: `/out/${lease.runId}.csv`,
    storageKey: `acme/sales/${lease.runId}.csv`,
    error: null,
    limit: null,
    expiresAt: T0 + 1000,
    now: T0 + 2,
    ...fields,
  });
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("reportRunCreate() makes a queued run for its job while fewer than maxConcurrent of the report's runs are queued or running", async ({ store }) => {
    const job = await reportJob(store);
    const first = made(await create(store, { jobId: job, sort: "amount", format: "ndjson" }));
    assert.deepEqual(first, {
      id: first.id,
      report: "sales",
      state: "queued",
      jobId: job,
      tenant: "acme",
      actor: "ann",
      roles: ["viewer"],
      params: { from: "2026-01-01", top: 10, paid: true },
      sort: "amount",
      format: "ndjson",
      rows: 0,
      bytes: 0,
      output: null,
      storageKey: null,
      error: null,
      limit: null,
      requestedAt: T0,
      startedAt: null,
      updatedAt: T0,
      finishedAt: null,
      expiresAt: null,
    });
    assert.deepEqual(await store.reportRunGet({ id: first.id }), first);
    const second = made(await create(store, { maxConcurrent: 2, tenant: null }));
    await started(store);
    // Queued or running, both hold a place: nothing is written.
    assert.deepEqual(await create(store, { maxConcurrent: 2 }), { active: [first.id, second.id] });
    assert.equal((await store.reportRunsList({})).length, 2);
    // Another report's runs are its own.
    made(await create(store, { report: "stock", maxConcurrent: 1 }));
    // A run whose job ended without it holds no place.
    await store.jobsCancel({ ids: [second.jobId], now: T0 + 3, reason: "operator: not now" });
    const third = made(await create(store, { maxConcurrent: 2, now: T0 + 4 }));
    assert.equal(third.requestedAt, T0 + 4);
    assert.deepEqual(await create(store, { maxConcurrent: 2 }), { active: [first.id, third.id] });
    assert.equal(await store.reportRunGet({ id: third.id + 100 }), null);
  });

  test("reportRunCreate() from two connections at once lets exactly maxConcurrent runs through", async ({ store, connect }) => {
    const other = await connect();
    const jobs = await insert(
      store,
      Array.from({ length: 8 }, () => newJob({ queue: QUEUE, worker: "jobs.report" })),
    );
    const results = await Promise.all(
      jobs.map((jobId, n) => create(n % 2 === 0 ? store : other, { jobId, maxConcurrent: 3 })),
    );
    const runs = results.filter((r) => "run" in r);
    assert.equal(runs.length, 3);
    assert.equal((await store.reportRunsList({})).length, 3);
    for (const r of results) if ("active" in r) assert.equal(r.active.length, 3);
  });

  test("reportRunStart() starts the run of a held job only; a retry starts it again from nothing, keeping its first start", async ({ store }) => {
    const run = made(await create(store));
    assert.equal(await store.reportRunStart({ jobId: run.jobId, fence: 0, now: T0 }), null);
    const job = await claimOne(store, { queue: QUEUE, now: T0 + 1 });
    assert.equal(
      await store.reportRunStart({ jobId: job.id, fence: job.fence + 1, now: T0 + 1 }),
      null,
    );
    assert.deepEqual(await store.reportRunGet({ id: run.id }), run);
    const running = await store.reportRunStart({ jobId: job.id, fence: job.fence, now: T0 + 1 });
    assert.deepEqual(running, { ...run, state: "running", startedAt: T0 + 1, updatedAt: T0 + 1 });

    const lease = { runId: run.id, jobId: job.id, fence: job.fence };
    const progress = (l: IngestLease, rows: number, now = T0 + 2) =>
      store.reportRunProgress({ lease: l, rows, bytes: rows * 10, now });
    assert.equal(await progress(lease, 7), true);
    assert.equal(await progress({ ...lease, fence: job.fence + 1 }, 99), false);
    assert.equal(await progress({ ...lease, runId: run.id + 1 }, 99), false);
    let row = await store.reportRunGet({ id: run.id });
    assert.deepEqual([row?.rows, row?.bytes, row?.updatedAt], [7, 70, T0 + 2]);

    // The attempt fails and the job runs again: the run starts over.
    await store.jobsRecord({
      node: "node-a",
      now: T0 + 3,
      results: [{ ...completed(job), outcome: "retryable", error: "db gone", at: T0 + 4 }],
    });
    assert.equal(await progress(lease, 8, T0 + 3), false);
    await store.jobsStage({ now: T0 + 4, limit: 10 });
    const again = await claimOne(store, { queue: QUEUE, now: T0 + 4 });
    const restarted = await store.reportRunStart({
      jobId: again.id,
      fence: again.fence,
      now: T0 + 5,
    });
    assert.deepEqual(
      [restarted?.state, restarted?.rows, restarted?.bytes, restarted?.startedAt],
      ["running", 0, 0, T0 + 1],
    );
    assert.equal(await progress(lease, 9, T0 + 6), false, "the first attempt's lease is gone");
    assert.equal(await progress({ ...lease, fence: again.fence }, 9, T0 + 6), true);
    row = await store.reportRunGet({ id: run.id });
    assert.deepEqual([row?.rows, row?.updatedAt], [9, T0 + 6]);
  });

  test("reportRunFinish() ends a running run once, under its job's lease; a run whose job ended without it reads as that end", async ({ store }) => {
    const run = made(await create(store));
    const { job, lease } = await started(store);
    const idle = made(await create(store));
    const idleJob = await claimOne(store, { queue: QUEUE, now: T0 + 1 });
    const idleLease = { runId: idle.id, jobId: idleJob.id, fence: idleJob.fence };
    assert.equal(await finish(store, idleLease), false, "a queued run is not finished");
    assert.equal(await finish(store, { ...lease, runId: idle.id }), false, "another run's id");
    assert.equal(await finish(store, { ...lease, fence: lease.fence + 1 }), false, "a stale fence");
    assert.deepEqual(await store.reportRunGet({ id: idle.id }), idle);

    assert.equal(await finish(store, lease, { now: T0 + 6 }), true);
    const stored = await store.reportRunGet({ id: run.id });
    assert.deepEqual(stored, {
      ...run,
      state: "completed",
      rows: 3,
      bytes: 30,
      output: `/out/${run.id}.csv`,
      storageKey: `acme/sales/${run.id}.csv`,
      startedAt: T0 + 1,
      updatedAt: T0 + 6,
      finishedAt: T0 + 6,
      expiresAt: T0 + 1000,
    });
    assert.equal(await finish(store, lease, { now: T0 + 7 }), false, "ended once");
    // Its job completing after it changes nothing.
    await store.jobsRecord({ node: "node-a", now: T0 + 7, results: [completed(job)] });
    assert.deepEqual(await store.reportRunGet({ id: run.id }), stored);

    assert.ok(await store.reportRunStart({ jobId: idleJob.id, fence: idleJob.fence, now: T0 + 8 }));
    assert.equal(
      await finish(store, idleLease, {
        state: "failed",
        rows: 0,
        bytes: 0,
        output: null,
        storageKey: null,
        error: "report sales: max_rows 3 reached",
        limit: "max_rows",
        expiresAt: null,
        now: T0 + 9,
      }),
      true,
    );
    const limited = await store.reportRunGet({ id: idle.id });
    assert.deepEqual(
      [limited?.state, limited?.error, limited?.limit, limited?.finishedAt, limited?.expiresAt],
      ["failed", "report sales: max_rows 3 reached", "max_rows", T0 + 9, null],
    );

    // Runs whose jobs ended without them: discarded, completed, cancelled while queued.
    const lost = made(await create(store, { now: T0 + 10 }));
    const orphan = made(await create(store, { now: T0 + 10 }));
    const waiting = made(await create(store, { now: T0 + 10 }));
    const a = await started(store, T0 + 10);
    const b = await started(store, T0 + 10);
    assert.deepEqual([a.lease.runId, b.lease.runId], [lost.id, orphan.id]);
    await store.jobsRecord({
      node: "node-a",
      now: T0 + 11,
      results: [
        { ...completed(a.job), outcome: "discarded", error: "export crashed" },
        completed(b.job),
      ],
    });
    await store.jobsCancel({ ids: [waiting.jobId], now: T0 + 11, reason: "operator: stop" });
    const reads = async (id: number) => {
      const read = await store.reportRunGet({ id });
      return [read?.state, read?.error, read?.finishedAt];
    };
    assert.deepEqual(await reads(lost.id), ["failed", "export crashed", null]);
    assert.deepEqual(await reads(orphan.id), ["failed", "its job is completed", null]);
    assert.deepEqual(await reads(waiting.id), ["cancelled", "operator: stop", null]);
  });

  test("reportRunsList() gives runs newest first by report and tenant, pages with before, and filters by the state a run reads as", async ({ store }) => {
    const ids: number[] = [];
    const tenants = ["acme", "globex", null];
    for (let n = 0; n < 9; n++) {
      const report = n % 2 === 0 ? "sales" : "stock";
      ids.push(made(await create(store, { report, tenant: tenants[n % 3]!, now: T0 + n })).id);
    }
    const list = async (filter: Parameters<Store["reportRunsList"]>[0]) =>
      (await store.reportRunsList(filter)).map((r) => r.id);
    const newest = [...ids].reverse();
    assert.deepEqual(await list({}), newest);
    assert.deepEqual(await list({ tenant: "acme" }), [ids[6], ids[3], ids[0]]);
    assert.deepEqual(await list({ tenant: "globex", report: "stock" }), [ids[7], ids[1]]);
    assert.deepEqual(await list({ tenant: "initech" }), []);
    assert.deepEqual(await list({ report: "sales", limit: 2 }), [ids[8], ids[6]]);
    assert.deepEqual(await list({ report: "sales", limit: 2, before: ids[6] }), [ids[4], ids[2]]);
    // The oldest run's job cancelled, the next one's started: the states they read as.
    const first = await store.reportRunGet({ id: ids[0]! });
    await store.jobsCancel({ ids: [first!.jobId], now: T0 + 20, reason: "operator: gone" });
    const { lease } = await started(store, T0 + 21);
    assert.equal(lease.runId, ids[1]);
    assert.deepEqual(await list({ state: "cancelled" }), [ids[0]]);
    assert.deepEqual(await list({ state: "running" }), [ids[1]]);
    assert.deepEqual(await list({ state: "queued", limit: 3 }), newest.slice(0, 3));
    assert.deepEqual(await list({ state: "queued", tenant: "acme" }), [ids[6], ids[3]]);
    assert.deepEqual(await list({ state: "completed" }), []);
  });

  test("reportRunGet() with a tenant reads that tenant's run only, as the statement decides", async ({ store }) => {
    const acme = made(await create(store, { tenant: "acme" }));
    const globex = made(await create(store, { tenant: "globex" }));
    const shared = made(await create(store, { tenant: null }));
    const get = async (id: number, tenant?: string) =>
      (await store.reportRunGet({ id, ...(tenant === undefined ? {} : { tenant }) }))?.id ?? null;
    assert.equal(await get(acme.id, "acme"), acme.id);
    assert.equal(await get(globex.id, "acme"), null);
    assert.equal(await get(shared.id, "acme"), null);
    assert.equal(await get(globex.id, "globex"), globex.id);
    // Without a tenant, any run: the command line's and an installation-wide principal's view.
    assert.equal(await get(globex.id), globex.id);
    assert.equal(await get(shared.id), shared.id);
    assert.equal(await get(999_999, "acme"), null);
  });

  test("reportRunsExpired() gives completed runs whose output expired, oldest expiry first; reportRunsEndedBefore() those that ended without one; reportRunDelete() removes a run", async ({ store }) => {
    const expiries = [T0 + 500, T0 + 100, T0 + 300];
    const completedRuns: number[] = [];
    for (const expiresAt of expiries) {
      const run = made(await create(store));
      const { lease } = await started(store);
      assert.ok(await finish(store, lease, { expiresAt, now: T0 + 2 }));
      completedRuns.push(run.id);
    }
    const expired = async (now: number, limit = 10) =>
      (await store.reportRunsExpired({ now, limit })).map((r) => r.id);
    assert.deepEqual(await expired(T0 + 99), []);
    assert.deepEqual(await expired(T0 + 300), [completedRuns[1], completedRuns[2]]);
    assert.deepEqual(await expired(T0 + 1000, 1), [completedRuns[1]]);

    // Ended without an output: failed at +10, cancelled at +20, a queued run whose job was cancelled at +5.
    const failedRun = made(await create(store, { now: T0 + 3 }));
    const f = await started(store, T0 + 3);
    assert.ok(
      await finish(store, f.lease, {
        state: "failed",
        output: null,
        storageKey: null,
        expiresAt: null,
        error: "x",
        now: T0 + 10,
      }),
    );
    const cancelledRun = made(await create(store, { now: T0 + 3 }));
    const c = await started(store, T0 + 3);
    assert.ok(
      await finish(store, c.lease, {
        state: "cancelled",
        output: null,
        storageKey: null,
        expiresAt: null,
        error: "stop",
        now: T0 + 20,
      }),
    );
    const dropped = made(await create(store, { now: T0 + 5 }));
    await store.jobsCancel({ ids: [dropped.jobId], now: T0 + 6, reason: "operator: no" });
    // Still going: a queued run and a running one.
    made(await create(store, { now: T0 }));
    await started(store, T0 + 7);
    made(await create(store, { now: T0 }));
    const endedBefore = async (before: number, limit = 10) =>
      (await store.reportRunsEndedBefore({ before, limit })).map((r) => r.id);
    assert.deepEqual(await endedBefore(T0 + 5), []);
    assert.deepEqual(await endedBefore(T0 + 6), [dropped.id]);
    assert.deepEqual(await endedBefore(T0 + 11), [failedRun.id, dropped.id]);
    assert.deepEqual(await endedBefore(T0 + 10_000), [failedRun.id, cancelledRun.id, dropped.id]);
    assert.deepEqual(await endedBefore(T0 + 10_000, 2), [failedRun.id, cancelledRun.id]);

    const deletedJob = (await store.reportRunGet({ id: completedRuns[1]! }))!.jobId;
    assert.equal(await store.reportRunDelete({ id: completedRuns[1]! }), true);
    assert.equal(await store.reportRunDelete({ id: completedRuns[1]! }), false);
    assert.equal(await store.reportRunGet({ id: completedRuns[1]! }), null);
    assert.deepEqual(await expired(T0 + 1000), [completedRuns[2], completedRuns[0]]);
    // The run's job is the jobs' own to keep or prune.
    assert.equal(await stateOf(store, deletedJob), "executing");
  });

  test("reportRunCreate() and reportRunGet() inside transaction() see each other and roll back with the job", async ({ store }) => {
    const inside = async (tx: Parameters<Parameters<Store["transaction"]>[0]>[0]) => {
      const first = made(await create(tx, { maxConcurrent: 1 }));
      assert.deepEqual(await tx.reportRunGet({ id: first.id }), first);
      assert.deepEqual(await create(tx, { maxConcurrent: 1 }), { active: [first.id] });
      return first;
    };
    await assert.rejects(
      store.transaction(async (tx) => {
        await inside(tx);
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    assert.deepEqual(await store.reportRunsList({}), []);
    assert.equal(await store.jobsCountMatching({ queue: QUEUE }), 0);
    const kept = await store.transaction((tx) => inside(tx));
    assert.deepEqual(await store.reportRunsList({}), [kept]);
    assert.equal(await stateOf(store, kept.jobId), "available");
  });

  test("a run's params, actor, roles, tenant and sort keep quotes, backslashes, escaped U+0000 and any script as given", async ({ store }) => {
    const params = {
      note: 'say "hi"\nnul \\u0000 ☃ 😀',
      path: "C:\\temp\\%_",
      n: -1.5,
      yes: false,
    };
    const run = made(
      await create(store, {
        params,
        actor: 'ann "ops" ñ',
        roles: ["viewer", "rôle ☃"],
        tenant: "société",
        sort: "montant ↓",
      }),
    );
    const read = await store.reportRunGet({ id: run.id });
    assert.deepEqual(
      [read?.params, read?.actor, read?.roles, read?.tenant, read?.sort],
      [params, 'ann "ops" ñ', ["viewer", "rôle ☃"], "société", "montant ↓"],
    );
    assert.deepEqual((await store.reportRunsList({ tenant: "société" })).map((r) => r.id), [
      run.id,
    ]);
    const { lease } = await started(store);
    const error = 'report sales: run 1 failed: column "montant" ☃\ttab';
    assert.ok(
      await finish(store, lease, {
        state: "failed",
        error,
        output: null,
        storageKey: null,
        expiresAt: null,
      }),
    );
    assert.equal((await store.reportRunGet({ id: run.id }))?.error, error);
  });
}
