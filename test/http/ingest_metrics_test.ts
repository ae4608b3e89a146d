/**
 * Ingest pipelines on `/metrics`: the counters a MetricsRegistry keeps from
 * the engine's events (records by outcome, drops by reason, runs by state,
 * zeros included), and the freshness gauges read from a real SQLite store at
 * the server's injected clock's time (stale, the promise, the newest
 * completed run).
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { MetricsRegistry, renderMetrics } from "../../src/http/metrics.ts";
import { startHttpServer } from "../../src/http/server.ts";
import { definePipeline } from "../../src/ingest/definition.ts";
import type { CompiledPipeline, Freshness } from "../../src/ingest/types.ts";
import type { Store } from "../../src/store/store.ts";
import { newJob } from "../support/backends.ts";
import { tempStore } from "../support/stores.ts";
import { parseProm, type Sample, value } from "./prom.ts";

const HOUR = 3_600_000;

/** A pipeline of the schedules file with `freshness` (none when null). */
function pipeline(id: string, freshness: Freshness | null): CompiledPipeline {
  return definePipeline({
    id,
    source: { file: "/dev/null" },
    key: "sku",
    steps: [],
    dropReasons: ["duplicate", "poison"],
    sink: { worker: "sink" },
    ...(freshness ? { freshness } : {}),
  });
}

/** A run of `pipeline` opened, given one chunk and finished `completed`, all at `at`. */
async function completedRun(store: Store, pipeline: string, at: number): Promise<void> {
  await store.jobsInsert({
    jobs: [newJob({ queue: "ingest", worker: "jobs.ingest", scheduledAt: at })],
    now: at,
  });
  const { jobs } = await store.jobsClaim({
    queue: "ingest",
    node: "n1",
    limit: 1,
    now: at,
    leaseMs: 60_000,
  });
  const job = jobs[0]!;
  const run = await store.ingestRunOpen({
    pipeline,
    hash: "h1",
    jobId: job.id,
    fence: job.fence,
    trigger: "schedule",
    now: at,
  });
  assert.ok(run);
  const lease = { runId: run.id, jobId: job.id, fence: job.fence };
  assert.ok(
    await store.ingestChunkCommit({
      lease,
      pipeline,
      delta: { received: 1, kept: 1, sunk: 1, failed: 0, dropped: {} },
      pending: 0,
      cursor: "1",
      drops: [],
      failures: [],
      cleared: [],
      now: at,
    }),
  );
  assert.ok(
    await store.ingestRunFinish({ lease, state: "completed", error: null, pending: 0, now: at }),
  );
}

/** The series of `name`, as `pipeline -> value` (the family's other labels ignored). */
function byPipeline(samples: Sample[], name: string): Record<string, number> {
  return Object.fromEntries(
    samples.filter((s) => s.name === name).map((s) => [s.labels.pipeline, s.value]),
  );
}

Deno.test("ingest events count records by outcome, drops by reason and runs by state", async () => {
  await using t = await tempStore();
  const registry = new MetricsRegistry();
  registry.record("ingest.chunk", {
    pipeline: "catalog",
    run: 1,
    received: 10,
    kept: 7,
    sunk: 7,
    failed: 1,
    dropped: { duplicate: 2 },
  });
  registry.record("ingest.chunk", {
    pipeline: "catalog",
    run: 1,
    received: 5,
    kept: 4,
    sunk: 4,
    failed: 0,
    dropped: { duplicate: 0, out_of_stock: 1 },
  });
  // A chunk of nothing still makes every series, so rate() has one from the start.
  registry.record("ingest.chunk", {
    pipeline: "prices",
    run: 2,
    received: 0,
    kept: 0,
    sunk: 0,
    failed: 0,
    dropped: {},
  });
  registry.record("ingest.paged", { pipeline: "catalog", run: 1, capacity: 100 });
  registry.record("ingest.finished", { pipeline: "catalog", run: 1, state: "paged", counts: {} });
  registry.record("ingest.finished", { pipeline: "catalog", run: 3, state: "completed" });
  registry.record("ingest.unbalanced", { pipeline: "prices", run: 2, error: "does not add up" });
  registry.record("ingest.finished", { pipeline: "prices", run: 2, state: "failed" });

  const samples = parseProm(await renderMetrics(t.store, registry.snapshot()));
  const records = (pipeline: string, outcome: string) =>
    value(samples, "jobs_ingest_records_total", { pipeline, outcome });
  assert.deepEqual(
    ["received", "kept", "sunk", "dropped", "failed"].map((o) => records("catalog", o)),
    [15, 11, 11, 3, 1],
  );
  assert.deepEqual(
    ["received", "kept", "sunk", "dropped", "failed"].map((o) => records("prices", o)),
    [0, 0, 0, 0, 0],
  );
  const dropped = (pipeline: string, reason: string) =>
    value(samples, "jobs_ingest_dropped_total", { pipeline, reason });
  assert.equal(dropped("catalog", "duplicate"), 2);
  assert.equal(dropped("catalog", "out_of_stock"), 1);
  assert.equal(samples.filter((s) => s.name === "jobs_ingest_dropped_total").length, 2);
  const runs = (pipeline: string, state: string) =>
    value(samples, "jobs_ingest_runs_total", { pipeline, state });
  // The paged run is counted once, by its ingest.finished.
  assert.equal(runs("catalog", "paged"), 1);
  assert.equal(runs("catalog", "completed"), 1);
  assert.equal(runs("prices", "failed"), 1);
  assert.equal(samples.filter((s) => s.name === "jobs_ingest_runs_total").length, 3);
  // No run id becomes a label.
  assert.ok(samples.every((s) => !("run" in s.labels)));
  // Without pipelines the store's ingest rows are not read.
  assert.equal(samples.some((s) => s.name === "jobs_ingest_stale"), false);
});

Deno.test("a malformed ingest.chunk counts nothing it cannot read as a count", async () => {
  await using t = await tempStore();
  const registry = new MetricsRegistry();
  registry.record("ingest.chunk", {
    pipeline: "catalog",
    received: -3,
    kept: "7",
    sunk: NaN,
    failed: Infinity,
    dropped: { duplicate: -1, stale: 2 },
  });
  const samples = parseProm(await renderMetrics(t.store, registry.snapshot()));
  const records = (outcome: string) =>
    value(samples, "jobs_ingest_records_total", { pipeline: "catalog", outcome });
  assert.deepEqual(
    ["received", "kept", "sunk", "dropped", "failed"].map(records),
    [0, 0, 0, 2, 0],
  );
  assert.equal(
    value(samples, "jobs_ingest_dropped_total", { pipeline: "catalog", reason: "duplicate" }),
    0,
  );
});

Deno.test("/metrics says a bounded pipeline whose run completed 3 h ago against 1 h is stale", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  const start = clock.now();
  await completedRun(t.store, "catalog", start);
  clock.advance(3 * HOUR);
  await completedRun(t.store, "prices", clock.now() - 10 * 60_000);
  await completedRun(t.store, "library_feed", start + HOUR);
  const pipelines = [
    pipeline("catalog", { mode: "bounded", withinMs: HOUR }),
    pipeline("prices", { mode: "bounded", withinMs: HOUR }),
    pipeline("never_ran", { mode: "bounded", withinMs: 2 * HOUR }),
    pipeline("advisory", { mode: "advisory", authority: "the ERP" }),
    pipeline("unpromised", null),
  ];
  const server = await startHttpServer({
    store: t.store,
    listen: "127.0.0.1:0",
    logger: () => {},
    clock,
    pipelines: () => pipelines,
  });
  try {
    const response = await fetch(`http://127.0.0.1:${server.addr!.port}/metrics`);
    assert.equal(response.status, 200);
    const samples = parseProm(await response.text());
    assert.deepEqual(byPipeline(samples, "jobs_ingest_stale"), {
      catalog: 1,
      prices: 0,
      never_ran: 1,
    });
    assert.deepEqual(byPipeline(samples, "jobs_ingest_freshness_seconds"), {
      catalog: 3600,
      prices: 3600,
      never_ran: 7200,
    });
    // Every pipeline with a completed run, the store's undeclared ones too.
    assert.deepEqual(byPipeline(samples, "jobs_ingest_last_completed_timestamp_seconds"), {
      catalog: start / 1000,
      prices: (clock.now() - 10 * 60_000) / 1000,
      library_feed: (start + HOUR) / 1000,
    });
  } finally {
    await server.close();
  }
});

Deno.test("jobs_ingest_stale turns 1 once the injected clock passes the promise", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  await completedRun(t.store, "catalog", clock.now());
  const pipelines = [pipeline("catalog", { mode: "bounded", withinMs: HOUR })];
  const stale = async () =>
    value(
      parseProm(await renderMetrics(t.store, undefined, { pipelines, now: clock.now() })),
      "jobs_ingest_stale",
      { pipeline: "catalog" },
    );
  clock.advance(HOUR);
  assert.equal(await stale(), 0);
  clock.advance(1);
  assert.equal(await stale(), 1);
});
