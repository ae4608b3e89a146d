/**
 * The ingest tables behind the store's `ingest*` methods, on both stores:
 * a run opened once per job and resumed by it, chunks that add up and
 * merge drops per reason, every write fenced by the run's job, failure
 * counts across runs, the state a run reads as once its job ended, the
 * summaries' window, and the drops' listing, replay mark and pruning.
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
}
