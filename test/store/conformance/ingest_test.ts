/**
 * The ingest tables behind the store's `ingest*` methods, on both stores:
 * a run opened once per job and resumed by it, chunks that add up and
 * merge drops per reason, every write fenced by the run's job, failure
 * counts across runs, the state a run reads as once its job ended, the
 * summaries' window, and the drops' listing, replay mark and pruning.
 * Then each method directly: a run per job and its lookups, how a run is
 * finished (fenced like the commits), the runs' listing by pipeline, page
 * and the state a run reads as, the summaries of several pipelines, and
 * the drops' filters, record, replay mark and pruning bounds.
 */

import assert from "node:assert/strict";
import type { ChunkDelta } from "../../../src/ingest/types.ts";
import type { IngestLease, Store } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest, newJob } from "../../support/backends.ts";

const NOW = Date.UTC(2026, 2, 1, 12);

/** A job claimed by node n1: executing, with its fence. */
async function claimedJob(store: Store, queue = "ingest"): Promise<{ id: number; fence: number }> {
  await store.jobsInsert({
    jobs: [newJob({ queue, worker: "jobs.ingest", scheduledAt: NOW })],
    now: NOW,
  });
  const { jobs } = await store.jobsClaim({
    queue,
    node: "n1",
    limit: 1,
    now: NOW,
    leaseMs: 60_000,
  });
  assert.equal(jobs.length, 1);
  return { id: jobs[0]!.id, fence: jobs[0]!.fence };
}

function delta(fields: Partial<ChunkDelta>): ChunkDelta {
  return { received: 0, kept: 0, sunk: 0, failed: 0, dropped: {}, ...fields };
}

async function openRun(store: Store, pipeline = "catalog") {
  const job = await claimedJob(store);
  const run = await store.ingestRunOpen({
    pipeline,
    hash: "h1",
    jobId: job.id,
    fence: job.fence,
    trigger: "manual",
    now: NOW,
  });
  assert.ok(run);
  const lease: IngestLease = { runId: run.id, jobId: job.id, fence: job.fence };
  return { job, run, lease };
}

/** Jobs of the queue "ingest" claimed by n1 at `now`, as many as `n`, in id order. */
async function claimedJobs(store: Store, n: number, now = NOW) {
  await store.jobsInsert({
    jobs: Array.from(
      { length: n },
      () => newJob({ queue: "ingest", worker: "jobs.ingest", scheduledAt: now }),
    ),
    now,
  });
  const { jobs } = await store.jobsClaim({
    queue: "ingest",
    node: "n1",
    limit: n,
    now,
    leaseMs: 60_000,
  });
  assert.equal(jobs.length, n);
  return jobs.sort((a, b) => a.id - b.id);
}

/** Commits one chunk of `lease` at `now` that drops `drops` (reason, record kept or not). */
function dropChunk(
  store: Store,
  lease: IngestLease,
  pipeline: string,
  now: number,
  drops: { key: string; reason: string; record?: string | null }[],
) {
  const dropped: Record<string, number> = {};
  for (const d of drops) dropped[d.reason] = (dropped[d.reason] ?? 0) + 1;
  return store.ingestChunkCommit({
    lease,
    pipeline,
    delta: delta({ received: drops.length, dropped }),
    pending: 0,
    cursor: `${now}`,
    drops: drops.map((d) => ({
      recordKey: d.key,
      reason: d.reason,
      step: "check",
      excerpt: d.key,
      record: d.record === undefined ? `{"key":"${d.key}"}` : d.record,
    })),
    failures: [],
    cleared: [],
    now,
  });
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, NOW);

  test("a run is opened once per job and resumed with its counts and cursor", async ({ store }) => {
    const { job, run, lease } = await openRun(store);
    assert.equal(run.state, "running");
    assert.deepEqual(run.counts, {
      received: 0,
      kept: 0,
      sunk: 0,
      failed: 0,
      pending: 0,
      dropped: {},
    });
    assert.ok(
      await store.ingestChunkCommit({
        lease,
        pipeline: "catalog",
        delta: delta({ received: 10, kept: 7, sunk: 7, failed: 1, dropped: { duplicate: 2 } }),
        pending: 0,
        cursor: '{"offset":100}',
        drops: [],
        failures: [],
        cleared: [],
        now: NOW + 1,
      }),
    );
    const again = await store.ingestRunOpen({
      pipeline: "catalog",
      hash: "h1",
      jobId: job.id,
      fence: job.fence,
      trigger: "manual",
      now: NOW + 2,
    });
    assert.equal(again?.id, run.id);
    assert.equal(again?.cursor, '{"offset":100}');
    assert.deepEqual(again?.counts, {
      received: 10,
      kept: 7,
      sunk: 7,
      failed: 1,
      pending: 0,
      dropped: { duplicate: 2 },
    });
  });

  test("chunks merge dropped counts per reason and store each drop", async ({ store }) => {
    const { run, lease } = await openRun(store);
    const drop = (reason: string, key: string) => ({
      recordKey: key,
      reason,
      step: "dedupe",
      excerpt: `{"sku":"${key}"}`,
      record: `{"sku":"${key}"}`,
    });
    const chunks: Record<string, number>[] = [{ duplicate: 2 }, { duplicate: 1, poison: 1 }];
    for (const [i, dropped] of chunks.entries()) {
      const drops = Object.entries(dropped).flatMap(([reason, n]) =>
        Array.from({ length: n }, (_, k) => drop(reason, `${i}-${reason}-${k}`))
      );
      assert.ok(
        await store.ingestChunkCommit({
          lease,
          pipeline: "catalog",
          delta: delta({ received: 5, dropped }),
          pending: 0,
          cursor: `${i}`,
          drops,
          failures: [],
          cleared: [],
          now: NOW + i,
        }),
      );
    }
    const got = await store.ingestRunGet({ id: run.id });
    assert.deepEqual(got?.counts.dropped, { duplicate: 3, poison: 1 });
    assert.equal(got?.counts.received, 10);
    const drops = await store.ingestDropsList({ pipeline: "catalog" });
    assert.equal(drops.length, 4);
    assert.ok(drops[0]!.id > drops[1]!.id, "newest first");
    assert.equal(
      (await store.ingestDropsList({ pipeline: "catalog", reason: "poison" })).length,
      1,
    );
    assert.equal(
      (await store.ingestDropsList({ pipeline: "catalog", runId: run.id + 99 })).length,
      0,
    );
    const page = await store.ingestDropsList({ pipeline: "catalog", limit: 2 });
    const next = await store.ingestDropsList({ pipeline: "catalog", before: page[1]!.id });
    assert.equal(next.length, 2);
    const one = await store.ingestDropGet({ id: drops[0]!.id });
    assert.equal(one?.replayable, true);
    assert.equal(one?.record, `{"sku":"1-poison-0"}`);
    assert.equal(await store.ingestDropReplayed({ id: one!.id, jobId: 77, now: NOW + 9 }), true);
    assert.equal((await store.ingestDropGet({ id: one!.id }))?.replayedJob, 77);
    assert.equal(await store.ingestDropReplayed({ id: 999_999, jobId: 77, now: NOW }), false);
  });

  test("a stale fence or a job no longer executing writes nothing", async ({ store }) => {
    const { job, run, lease } = await openRun(store);
    const commit = (l: IngestLease) =>
      store.ingestChunkCommit({
        lease: l,
        pipeline: "catalog",
        delta: delta({ received: 3 }),
        pending: 0,
        cursor: "x",
        drops: [{ recordKey: "a", reason: "duplicate", step: "s", excerpt: "a", record: null }],
        failures: [{ record: "b", error: "bad", excerpt: "b" }],
        cleared: [],
        now: NOW,
      });
    assert.equal(await commit({ ...lease, fence: lease.fence + 1 }), false);
    assert.equal(
      await store.ingestRunOpen({
        pipeline: "catalog",
        hash: "h",
        jobId: job.id,
        fence: job.fence + 1,
        trigger: "manual",
        now: NOW,
      }),
      null,
    );
    await store.jobsRecord({
      node: "n1",
      now: NOW,
      results: [{ id: job.id, fence: job.fence, attempt: 1, startedAt: NOW, outcome: "completed" }],
    });
    assert.equal(await commit(lease), false);
    assert.equal(
      await store.ingestRunFinish({ lease, state: "completed", error: null, pending: 0, now: NOW }),
      false,
    );
    const got = await store.ingestRunGet({ id: run.id });
    assert.equal(got?.counts.received, 0);
    assert.equal((await store.ingestDropsList({ pipeline: "catalog" })).length, 0);
    assert.equal((await store.ingestFailuresGet({ pipeline: "catalog", records: ["b"] })).size, 0);
  });

  test("failures rise by one per commit (once for a record twice in a chunk) and are cleared", async ({ store }) => {
    const { lease } = await openRun(store);
    const commit = (failures: string[], cleared: string[]) =>
      store.ingestChunkCommit({
        lease,
        pipeline: "catalog",
        delta: delta({ received: failures.length, failed: failures.length }),
        pending: 0,
        cursor: "x",
        drops: [],
        failures: failures.map((record) => ({ record, error: `bad ${record}`, excerpt: record })),
        cleared,
        now: NOW,
      });
    // The same record twice in one chunk is one failure of it, on both stores.
    assert.ok(await commit(["a", "b", "a"], []));
    assert.ok(await commit(["a"], ["b"]));
    const counts = await store.ingestFailuresGet({ pipeline: "catalog", records: ["a", "b", "c"] });
    assert.deepEqual([...counts.entries()], [["a", 2]]);
    const other = await store.ingestFailuresGet({ pipeline: "other", records: ["a"] });
    assert.equal(other.size, 0);
  });

  test("U+0000 in a chunk's drops, failures, reasons and run error is kept as \\u0000, and failures are found by their own keys", async ({ store }) => {
    const { run, lease } = await openRun(store);
    assert.ok(
      await store.ingestChunkCommit({
        lease,
        pipeline: "catalog",
        delta: delta({ received: 3, failed: 1, dropped: { "odd\0reason": 1, duplicate: 1 } }),
        pending: 0,
        cursor: "x",
        drops: [{
          recordKey: "k\0ey",
          reason: "duplicate",
          step: "st\0ep",
          excerpt: "a\0b",
          record: '{"sku":"raw\0"}',
        }],
        failures: [{ record: "f\0ail", error: "bad\0input", excerpt: "e\0x" }],
        cleared: [],
        now: NOW,
      }),
    );
    const [drop] = await store.ingestDropsList({ pipeline: "catalog" });
    assert.deepEqual(
      [drop?.recordKey, drop?.step, drop?.excerpt],
      ["k\\u0000ey", "st\\u0000ep", "a\\u0000b"],
    );
    assert.equal((await store.ingestDropGet({ id: drop!.id }))?.record, '{"sku":"raw\\u0000"}');
    assert.deepEqual(
      (await store.ingestRunGet({ id: run.id }))?.counts.dropped,
      { "odd\\u0000reason": 1, duplicate: 1 },
    );
    const counts = await store.ingestFailuresGet({ pipeline: "catalog", records: ["f\0ail", "x"] });
    assert.deepEqual([...counts.entries()], [["f\0ail", 1]]);
    assert.ok(
      await store.ingestChunkCommit({
        lease,
        pipeline: "catalog",
        delta: delta({ received: 1 }),
        pending: 0,
        cursor: "y",
        drops: [],
        failures: [],
        cleared: ["f\0ail"],
        now: NOW,
      }),
    );
    assert.equal(
      (await store.ingestFailuresGet({ pipeline: "catalog", records: ["f\0ail"] })).size,
      0,
    );
    assert.ok(
      await store.ingestRunFinish({
        lease,
        state: "failed",
        error: "does not add up\0",
        pending: 0,
        now: NOW + 1,
      }),
    );
    assert.equal((await store.ingestRunGet({ id: run.id }))?.error, "does not add up\\u0000");
  });

  test("a running run reads as its job's end: discarded is failed, cancelled is cancelled", async ({ store }) => {
    const { job, run } = await openRun(store);
    await store.jobsRecord({
      node: "n1",
      now: NOW,
      results: [{
        id: job.id,
        fence: job.fence,
        attempt: 1,
        startedAt: NOW,
        outcome: "discarded",
        error: "source unreachable",
      }],
    });
    const failed = await store.ingestRunGet({ id: run.id });
    assert.equal(failed?.state, "failed");
    assert.match(failed?.error ?? "", /discarded: source unreachable/);
    assert.equal((await store.ingestRunsList({ state: "failed" }))[0]?.id, run.id);
    assert.equal((await store.ingestRunsList({ state: "running" })).length, 0);

    const second = await openRun(store);
    await store.jobsCancel({ ids: [second.job.id], now: NOW, reason: "operator" });
    // An executing job is cancelled through its lease; a waiting one at once. Either way:
    const got = await store.ingestRunByJob({ jobId: second.job.id });
    assert.ok(got?.state === "running" || got?.state === "cancelled");
  });

  test("a finished run keeps its state; summaries count drops inside the window", async ({ store }) => {
    const { run, lease } = await openRun(store);
    assert.ok(
      await store.ingestChunkCommit({
        lease,
        pipeline: "catalog",
        delta: delta({ received: 2, dropped: { duplicate: 2 } }),
        pending: 0,
        cursor: "x",
        drops: [
          { recordKey: "a", reason: "duplicate", step: "s", excerpt: "a", record: "a" },
          { recordKey: "b", reason: "duplicate", step: "s", excerpt: "b", record: null },
        ],
        failures: [],
        cleared: [],
        now: NOW,
      }),
    );
    assert.ok(
      await store.ingestRunFinish({
        lease,
        state: "completed",
        error: null,
        pending: 0,
        now: NOW + 5,
      }),
    );
    const [summary] = await store.ingestSummaries({ since: NOW - 1 });
    assert.equal(summary?.pipeline, "catalog");
    assert.equal(summary?.runs, 1);
    assert.equal(summary?.lastRun?.id, run.id);
    assert.equal(summary?.lastRun?.state, "completed");
    assert.equal(summary?.lastCompletedAt, NOW + 5);
    assert.deepEqual(summary?.droppedSince, { duplicate: 2 });
    const [later] = await store.ingestSummaries({ since: NOW + 1 });
    assert.deepEqual(later?.droppedSince, {});
    assert.equal((await store.ingestDropsList({ pipeline: "catalog" }))[0]?.replayable, false);
  });

  test("drops list every pipeline's, newest first, when no pipeline is named", async ({ store }) => {
    for (const [i, pipeline] of ["catalog", "bank", "catalog"].entries()) {
      const { lease } = await openRun(store, pipeline);
      const reason = i === 1 ? "poison" : "duplicate";
      assert.ok(
        await store.ingestChunkCommit({
          lease,
          pipeline,
          delta: delta({ received: 1, dropped: { [reason]: 1 } }),
          pending: 0,
          cursor: "x",
          drops: [{ recordKey: `k${i}`, reason, step: "s", excerpt: "a", record: "a" }],
          failures: [],
          cleared: [],
          now: NOW + i,
        }),
      );
    }
    const all = await store.ingestDropsList({});
    assert.deepEqual(all.map((d) => [d.pipeline, d.recordKey]), [
      ["catalog", "k2"],
      ["bank", "k1"],
      ["catalog", "k0"],
    ]);
    assert.deepEqual((await store.ingestDropsList({ reason: "poison" })).map((d) => d.recordKey), [
      "k1",
    ]);
    assert.deepEqual(
      (await store.ingestDropsList({ before: all[0]!.id, limit: 1 })).map((d) => d.recordKey),
      ["k1"],
    );
    assert.deepEqual(
      (await store.ingestDropsList({ pipeline: "catalog" })).map((d) => d.recordKey),
      ["k2", "k0"],
    );
  });

  test("a run carries its job's tenant, and a tenant reads its runs, summaries and drops only", async ({ store }) => {
    const runs: Record<string, number> = {};
    for (const [i, tenant] of ["acme", "globex", null].entries()) {
      await store.jobsInsert({
        jobs: [newJob({ queue: `q${i}`, worker: "jobs.ingest", scheduledAt: NOW, tenant })],
        now: NOW,
      });
      const { jobs } = await store.jobsClaim({
        queue: `q${i}`,
        node: "n1",
        limit: 1,
        now: NOW,
        leaseMs: 60_000,
      });
      const job = jobs[0]!;
      const run = await store.ingestRunOpen({
        pipeline: "catalog",
        hash: "h1",
        jobId: job.id,
        fence: job.fence,
        trigger: "manual",
        now: NOW + i,
      });
      assert.equal(run?.tenant, tenant);
      runs[tenant ?? "none"] = run!.id;
      assert.ok(
        await store.ingestChunkCommit({
          lease: { runId: run!.id, jobId: job.id, fence: job.fence },
          pipeline: "catalog",
          delta: delta({ received: 1, dropped: { duplicate: 1 } }),
          pending: 0,
          cursor: "x",
          drops: [{
            recordKey: `k-${tenant}`,
            reason: "duplicate",
            step: "s",
            excerpt: "a",
            record: "a",
          }],
          failures: [],
          cleared: [],
          now: NOW + i,
        }),
      );
    }
    assert.equal((await store.ingestRunGet({ id: runs.acme! }))?.tenant, "acme");
    const ids = async (filter: Parameters<Store["ingestRunsList"]>[0]) =>
      (await store.ingestRunsList(filter)).map((r) => r.id);
    assert.deepEqual(await ids({}), [runs.none, runs.globex, runs.acme]);
    assert.deepEqual(await ids({ tenant: "acme" }), [runs.acme]);
    assert.deepEqual(await ids({ tenant: "acme", pipeline: "catalog" }), [runs.acme]);
    assert.deepEqual(await ids({ tenant: "initech" }), []);
    const [all] = await store.ingestSummaries({ since: NOW - 1 });
    assert.deepEqual([all?.runs, all?.lastRun?.id, all?.droppedSince], [3, runs.none, {
      duplicate: 3,
    }]);
    const [acme] = await store.ingestSummaries({ since: NOW - 1, tenant: "acme" });
    assert.deepEqual([acme?.runs, acme?.lastRun?.id, acme?.droppedSince], [1, runs.acme, {
      duplicate: 1,
    }]);
    assert.deepEqual(await store.ingestSummaries({ since: NOW - 1, tenant: "initech" }), []);
    const keys = async (filter: Parameters<Store["ingestDropsList"]>[0]) =>
      (await store.ingestDropsList(filter)).map((d) => d.recordKey);
    assert.deepEqual(await keys({}), ["k-null", "k-globex", "k-acme"]);
    assert.deepEqual(await keys({ tenant: "acme" }), ["k-acme"]);
    assert.deepEqual(await keys({ tenant: "globex", pipeline: "catalog" }), ["k-globex"]);
    const [globexDrop] = await store.ingestDropsList({ tenant: "globex" });
    assert.equal((await store.ingestDropGet({ id: globexDrop!.id }))?.recordKey, "k-globex");
    assert.equal(
      (await store.ingestDropGet({ id: globexDrop!.id, tenant: "globex" }))?.recordKey,
      "k-globex",
    );
    assert.equal(await store.ingestDropGet({ id: globexDrop!.id, tenant: "acme" }), null);
  });

  test("drops are pruned per pipeline's retention", async ({ store }) => {
    for (const pipeline of ["catalog", "bank"]) {
      const { lease } = await openRun(store, pipeline);
      assert.ok(
        await store.ingestChunkCommit({
          lease,
          pipeline,
          delta: delta({ received: 1, dropped: { duplicate: 1 } }),
          pending: 0,
          cursor: "x",
          drops: [{ recordKey: "a", reason: "duplicate", step: "s", excerpt: "a", record: "a" }],
          failures: [],
          cleared: [],
          now: NOW,
        }),
      );
    }
    // catalog keeps drops newer than NOW - 1; everything else must be newer than NOW + 1.
    const pruned = await store.ingestDropsPrune({
      before: [{ pipeline: "catalog", before: NOW - 1 }],
      otherwise: NOW + 1,
      limit: 100,
    });
    assert.equal(pruned, 1);
    assert.equal((await store.ingestDropsList({ pipeline: "catalog" })).length, 1);
    assert.equal((await store.ingestDropsList({ pipeline: "bank" })).length, 0);
  });

  test("ingestRunOpen() makes one run per job, which ingestRunByJob() and ingestRunGet() find; a job not held opens none", async ({ store }) => {
    const [a, b, c] = await claimedJobs(store, 3);
    const open = (
      job: { id: number; fence: number },
      pipeline: string,
      trigger: "schedule" | "manual" | "replay",
      now = NOW,
    ) =>
      store.ingestRunOpen({
        pipeline,
        hash: `h-${pipeline}`,
        jobId: job.id,
        fence: job.fence,
        trigger,
        now,
      });
    const first = await open(a!, "catalog", "schedule");
    const second = await open(b!, "catalog", "manual", NOW + 1);
    const third = await open(c!, "bank", "replay", NOW + 2);
    assert.deepEqual(first, {
      id: first!.id,
      pipeline: "catalog",
      hash: "h-catalog",
      state: "running",
      jobId: a!.id,
      trigger: "schedule",
      tenant: null,
      counts: { received: 0, kept: 0, sunk: 0, failed: 0, pending: 0, dropped: {} },
      cursor: null,
      error: null,
      startedAt: NOW,
      updatedAt: NOW,
      finishedAt: null,
    });
    assert.ok(first!.id < second!.id && second!.id < third!.id);
    assert.deepEqual([second?.trigger, third?.trigger, third?.pipeline], [
      "manual",
      "replay",
      "bank",
    ]);
    assert.deepEqual(await store.ingestRunByJob({ jobId: b!.id }), second);
    assert.deepEqual(await store.ingestRunGet({ id: third!.id }), third);

    // Reopened by its job (a retry): the same run, touched, keeping the hash it began with.
    const again = await store.ingestRunOpen({
      pipeline: "catalog",
      hash: "h-new",
      jobId: a!.id,
      fence: a!.fence,
      trigger: "manual",
      now: NOW + 9,
    });
    assert.deepEqual(again, { ...first, updatedAt: NOW + 9 });
    assert.deepEqual(await store.ingestRunGet({ id: first!.id }), again);

    assert.equal(await store.ingestRunGet({ id: third!.id + 100 }), null);
    assert.equal(await store.ingestRunByJob({ jobId: c!.id + 100 }), null);
    const [waiting] = (await store.jobsInsert({
      jobs: [newJob({ queue: "later", worker: "jobs.ingest", scheduledAt: NOW })],
      now: NOW,
    })).map((r) => r.id);
    assert.equal(
      await store.ingestRunOpen({
        pipeline: "catalog",
        hash: "h",
        jobId: waiting!,
        fence: 0,
        trigger: "manual",
        now: NOW,
      }),
      null,
    );
    assert.equal(await store.ingestRunByJob({ jobId: waiting! }), null);
  });

  test("ingestRunFinish() ends a run in its state with its pending count and error, fenced by its job; another run's id writes nothing", async ({ store }) => {
    const { job, run, lease } = await openRun(store);
    const other = await openRun(store, "bank");
    const finish = (l: IngestLease, now = NOW + 3) =>
      store.ingestRunFinish({ lease: l, state: "paged", error: "buffer full", pending: 5, now });
    assert.equal(await finish({ ...lease, fence: lease.fence + 1 }), false);
    assert.equal(await finish({ ...lease, runId: other.run.id }), false);
    assert.equal(await finish({ ...other.lease, runId: run.id }), false);
    assert.deepEqual(await store.ingestRunGet({ id: run.id }), run);
    assert.deepEqual(await store.ingestRunGet({ id: other.run.id }), other.run);

    assert.equal(await finish(lease), true);
    const paged = await store.ingestRunGet({ id: run.id });
    assert.deepEqual(
      [paged?.state, paged?.error, paged?.counts.pending, paged?.finishedAt, paged?.updatedAt],
      ["paged", "buffer full", 5, NOW + 3, NOW + 3],
    );
    // A stored end stays what it is once its job ends.
    await store.jobsRecord({
      node: "n1",
      now: NOW + 4,
      results: [{ id: job.id, fence: job.fence, attempt: 1, startedAt: NOW, outcome: "completed" }],
    });
    assert.equal((await store.ingestRunGet({ id: run.id }))?.state, "paged");
    assert.equal(await finish(lease, NOW + 5), false);
    // A running run whose job completed without ending it reads as failed, saying so.
    await store.jobsRecord({
      node: "n1",
      now: NOW + 4,
      results: [{
        id: other.job.id,
        fence: other.job.fence,
        attempt: 1,
        startedAt: NOW,
        outcome: "completed",
      }],
    });
    const orphan = await store.ingestRunGet({ id: other.run.id });
    assert.deepEqual([orphan?.state, orphan?.error, orphan?.finishedAt], [
      "failed",
      "its job was completed",
      null,
    ]);
  });

  test("ingestRunsList() gives runs newest first by pipeline, pages with before, and filters by the state a run reads as", async ({ store }) => {
    // 211 runs: the oldest failed (its job discarded), the next completed, then 209 running.
    const jobs = await claimedJobs(store, 211);
    const runs: number[] = [];
    for (const [n, job] of jobs.entries()) {
      const run = await store.ingestRunOpen({
        pipeline: n % 2 === 0 ? "catalog" : "bank",
        hash: "h",
        jobId: job.id,
        fence: job.fence,
        trigger: "schedule",
        now: NOW + n,
      });
      runs.push(run!.id);
    }
    await store.jobsDiscard({ ids: [jobs[0]!.id], now: NOW, reason: "feed gone" });
    const lease = { runId: runs[1]!, jobId: jobs[1]!.id, fence: jobs[1]!.fence };
    assert.ok(
      await store.ingestRunFinish({ lease, state: "completed", error: null, pending: 0, now: NOW }),
    );
    const ids = async (filter: Parameters<Store["ingestRunsList"]>[0]) =>
      (await store.ingestRunsList(filter)).map((r) => r.id);
    const newest = [...runs].reverse();
    assert.deepEqual(await ids({}), newest.slice(0, 50));
    assert.deepEqual(await ids({ limit: 3 }), newest.slice(0, 3));
    assert.deepEqual(await ids({ limit: 3, before: newest[2] }), newest.slice(3, 6));
    const catalog = newest.filter((id) => runs.indexOf(id) % 2 === 0);
    assert.deepEqual(await ids({ pipeline: "catalog", limit: 4 }), catalog.slice(0, 4));
    assert.deepEqual(await ids({ pipeline: "catalog", limit: 300 }), catalog);
    assert.deepEqual(await ids({ pipeline: "none" }), []);
    // The state a run reads as, found past the first pages of running ones.
    const [failed] = await store.ingestRunsList({ state: "failed" });
    assert.deepEqual([failed?.id, failed?.state, failed?.error], [
      runs[0],
      "failed",
      "its job was discarded: feed gone",
    ]);
    assert.deepEqual(await ids({ state: "completed", limit: 5 }), [runs[1]]);
    assert.deepEqual(await ids({ state: "failed", pipeline: "bank" }), []);
    assert.deepEqual(await ids({ state: "running", limit: 2 }), newest.slice(0, 2));
    assert.deepEqual(await ids({ state: "running", before: runs[3] }), [runs[2]!]);
    assert.equal((await ids({ state: "running", limit: 300 })).length, 209);
  });

  test("ingestSummaries() gives each pipeline, by name, its run count, newest run, last completion and drops since the window's start", async ({ store }) => {
    const ended = async (pipeline: string, at: number, state: "completed" | "failed") => {
      const { lease } = await openRun(store, pipeline);
      assert.ok(await dropChunk(store, lease, pipeline, at, [{ key: `${at}`, reason: "late" }]));
      assert.ok(await store.ingestRunFinish({ lease, state, error: null, pending: 0, now: at }));
    };
    await ended("orders", NOW + 10, "completed");
    await ended("orders", NOW + 20, "completed");
    await ended("orders", NOW + 30, "failed");
    await ended("catalog", NOW + 15, "failed");
    const running = await openRun(store, "orders");
    assert.ok(
      await dropChunk(store, running.lease, "orders", NOW + 40, [
        { key: "x", reason: "duplicate" },
        { key: "y", reason: "duplicate" },
      ]),
    );

    const summaries = await store.ingestSummaries({ since: NOW + 20 });
    assert.deepEqual(
      summaries.map((
        s,
      ) => [s.pipeline, s.runs, s.lastRun?.id, s.lastRun?.state, s.lastCompletedAt]),
      [
        [
          "catalog",
          1,
          (await store.ingestRunsList({ pipeline: "catalog" }))[0]?.id,
          "failed",
          null,
        ],
        ["orders", 4, running.run.id, "running", NOW + 20],
      ],
    );
    // The window includes its first instant.
    assert.deepEqual(summaries.map((s) => s.droppedSince), [{}, { late: 2, duplicate: 2 }]);
    assert.deepEqual(
      (await store.ingestSummaries({ since: NOW + 41 })).map((s) => s.droppedSince),
      [{}, {}],
    );
    assert.deepEqual(
      (await store.ingestSummaries({ since: 0 })).map((s) => s.droppedSince),
      [{ late: 1 }, { late: 3, duplicate: 2 }],
    );
  });

  test("ingestDropsList() filters one pipeline's drops by reason and run, newest first; ingestDropGet() holds the record only when it was kept", async ({ store }) => {
    const one = await openRun(store);
    const two = await openRun(store);
    const bank = await openRun(store, "bank");
    assert.ok(
      await dropChunk(store, one.lease, "catalog", NOW + 1, [
        { key: "a", reason: "duplicate" },
        { key: "b", reason: "poison", record: null },
      ]),
    );
    assert.ok(
      await dropChunk(store, two.lease, "catalog", NOW + 2, [
        { key: "c", reason: "duplicate", record: '{"c":"\\"quoted\\" ☃"}' },
      ]),
    );
    assert.ok(
      await dropChunk(store, bank.lease, "bank", NOW + 3, [{ key: "d", reason: "duplicate" }]),
    );
    const keys = async (filter: Parameters<Store["ingestDropsList"]>[0]) =>
      (await store.ingestDropsList(filter)).map((d) => d.recordKey);
    assert.deepEqual(await keys({ pipeline: "catalog" }), ["c", "b", "a"]);
    assert.deepEqual(await keys({ pipeline: "catalog", reason: "duplicate" }), ["c", "a"]);
    assert.deepEqual(await keys({ pipeline: "catalog", runId: one.run.id }), ["b", "a"]);
    assert.deepEqual(
      await keys({ pipeline: "catalog", runId: one.run.id, reason: "duplicate" }),
      ["a"],
    );
    assert.deepEqual(await keys({ pipeline: "catalog", runId: bank.run.id }), []);
    assert.deepEqual(await keys({ pipeline: "bank" }), ["d"]);
    assert.deepEqual(await keys({ pipeline: "nothing" }), []);

    const [c, b] = await store.ingestDropsList({ pipeline: "catalog", limit: 2 });
    assert.deepEqual(c, {
      id: c!.id,
      pipeline: "catalog",
      runId: two.run.id,
      recordKey: "c",
      reason: "duplicate",
      step: "check",
      at: NOW + 2,
      excerpt: "c",
      replayable: true,
      replayedAt: null,
      replayedJob: null,
    });
    assert.deepEqual(await store.ingestDropGet({ id: c!.id }), {
      ...c,
      record: '{"c":"\\"quoted\\" ☃"}',
    });
    assert.deepEqual(await store.ingestDropGet({ id: b!.id }), { ...b, record: null });
    assert.equal(b?.replayable, false);
    assert.equal(await store.ingestDropGet({ id: c!.id + 100 }), null);

    assert.equal(await store.ingestDropReplayed({ id: c!.id, jobId: 42, now: NOW + 9 }), true);
    const [replayed] = await store.ingestDropsList({ pipeline: "catalog", limit: 1 });
    assert.deepEqual([replayed?.replayedAt, replayed?.replayedJob], [NOW + 9, 42]);
    // Replayed again (another replay job): the latest is kept.
    assert.equal(await store.ingestDropReplayed({ id: c!.id, jobId: 43, now: NOW + 10 }), true);
    const again = await store.ingestDropGet({ id: c!.id });
    assert.deepEqual([again?.replayedAt, again?.replayedJob], [NOW + 10, 43]);
  });

  test("ingestDropsPrune() deletes at most limit drops older than their pipeline's cutoff, never one at it", async ({ store }) => {
    const catalog = await openRun(store);
    const bank = await openRun(store, "bank");
    for (let n = 0; n < 5; n++) {
      assert.ok(
        await dropChunk(store, catalog.lease, "catalog", NOW + n, [{
          key: `c${n}`,
          reason: "late",
        }]),
      );
      assert.ok(
        await dropChunk(store, bank.lease, "bank", NOW + n, [{ key: `b${n}`, reason: "late" }]),
      );
    }
    const prune = (limit: number) =>
      store.ingestDropsPrune({
        before: [{ pipeline: "catalog", before: NOW + 3 }],
        otherwise: NOW + 1,
        limit,
      });
    assert.equal(await prune(2), 2);
    assert.equal(await prune(10), 2);
    assert.equal(await prune(10), 0);
    const keys = async (pipeline: string) =>
      (await store.ingestDropsList({ pipeline })).map((d) => d.recordKey);
    assert.deepEqual(await keys("catalog"), ["c4", "c3"]);
    assert.deepEqual(await keys("bank"), ["b4", "b3", "b2", "b1"]);
    assert.equal(
      await store.ingestDropsPrune({ before: [], otherwise: NOW + 100, limit: 100 }),
      6,
    );
    assert.deepEqual(await keys("catalog"), []);
  });

  test("a chunk's commit and the work items its sink adds commit together, or neither", async ({ store }) => {
    const { lease } = await openRun(store, "chargebacks");
    const chunk = (fence: number, cursor: string) => ({
      lease: { ...lease, fence },
      pipeline: "chargebacks",
      delta: delta({ received: 1, kept: 1, sunk: 1 }),
      pending: 0,
      cursor,
      drops: [],
      failures: [],
      cleared: [],
      now: NOW,
    });
    const item = (key: string) => ({
      queue: "disputes",
      key,
      tenant: null,
      data: { amount: 1 },
      score: null,
      actor: "pipeline:chargebacks",
      now: NOW,
    });
    // A lost lease: the commit writes nothing, and the sink's add rolls back with it.
    await assert.rejects(
      store.transaction(async (tx) => {
        assert.ok(await tx.workItemAdd(item("D-1")));
        assert.deepEqual(
          await tx.ingestFailuresGet({ pipeline: "chargebacks", records: ["x"] }),
          new Map(),
        );
        if (!(await tx.ingestChunkCommit(chunk(lease.fence + 1, "c1")))) {
          throw new Error("lease lost");
        }
      }),
      /lease lost/,
    );
    assert.equal(await store.workItemGet({ queue: "disputes", key: "D-1" }), null);
    assert.equal((await store.ingestRunGet({ id: lease.runId }))!.counts.sunk, 0);
    await store.transaction(async (tx) => {
      assert.ok(await tx.workItemAdd(item("D-2")));
      assert.equal(await tx.ingestChunkCommit(chunk(lease.fence, "c2")), true);
    });
    assert.ok(await store.workItemGet({ queue: "disputes", key: "D-2" }));
    const run = (await store.ingestRunGet({ id: lease.runId }))!;
    assert.equal(run.counts.sunk, 1);
    assert.equal(run.cursor, "c2");
  });
}
