/**
 * A library user's pipeline: `jobs.ingest(pipeline)` enqueues a run that
 * the runtime of the same `Jobs` runs (the ingest runner registered on
 * first use), with the user's TypeScript step and sink found by name.
 */

import assert from "node:assert/strict";
import { openJobs, silentLogger } from "../../src/mod.ts";
import { type CompiledPipeline, defineSink, defineStep } from "../../src/ingest.ts";
import { waitUntil } from "../../src/testing.ts";
import { tempDir } from "../support/stores.ts";

Deno.test("jobs.ingest() runs a pipeline through the library's own runtime", async () => {
  const dir = await tempDir();
  const feed = `${dir.path}/feed.ndjson`;
  await Deno.writeTextFile(
    feed,
    ['{"sku":"a","qty":5}', '{"sku":"b","qty":1}', "not json", '{"sku":"c","qty":3}'].join("\n"),
  );
  const sunk: string[] = [];
  const jobs = await openJobs(`${dir.path}/jobs.db`, {
    logger: silentLogger,
    workers: [
      defineStep({
        name: "low",
        run: (r) => (r.qty as number) < 2 ? { drop: "below-threshold" } : { keep: true },
      }),
      defineSink({
        name: "collect",
        write: (batch) => {
          for (const { key } of batch) sunk.push(key);
        },
      }),
    ],
  });
  const pipeline: CompiledPipeline = {
    id: "catalog",
    hash: "h",
    source: { kind: "file", path: feed, format: "ndjson", encoding: "utf-8" },
    key: ["sku"],
    steps: [{ name: "low", mark: "drop", sources: [], run: { kind: "worker", worker: "low" } }],
    dropReasons: ["below-threshold", "poison"],
    buffer: { capacity: 100, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "collect" },
    sinkBatch: 10,
    freshness: null,
    sources: {},
    queue: "ingest",
    maxAttempts: 1,
    dropsRetentionMs: 86_400_000,
  };
  try {
    const job = await jobs.ingest(pipeline);
    const runtime = await jobs.start({ queues: { ingest: 1 } });
    const run = await waitUntil("the run ended", async () => {
      const run = await jobs.store.ingestRunByJob({ jobId: job.id });
      return run && run.state !== "running" ? run : null;
    });
    await runtime.stop({ grace: 0 });
    assert.equal(run.state, "completed");
    assert.deepEqual(sunk, ["catalog/a", "catalog/c"]);
    assert.deepEqual(run.counts, {
      received: 4,
      kept: 2,
      sunk: 2,
      failed: 1,
      pending: 0,
      dropped: { "below-threshold": 1 },
    });
  } finally {
    await jobs.close({ grace: 0 });
    await dir.cleanup();
  }
});

Deno.test("a runtime that only serves the pipeline's queue runs a run another Jobs enqueued", async () => {
  const dir = await tempDir();
  const feed = `${dir.path}/feed.ndjson`;
  await Deno.writeTextFile(feed, ['{"sku":"a"}', '{"sku":"b"}'].join("\n"));
  const sunk: string[] = [];
  const collect = defineSink({
    name: "collect",
    write: (batch) => {
      for (const { key } of batch) sunk.push(key);
    },
  });
  const pipeline: CompiledPipeline = {
    id: "feed",
    hash: "h",
    source: { kind: "file", path: feed, format: "ndjson", encoding: "utf-8" },
    key: ["sku"],
    steps: [],
    dropReasons: ["poison"],
    buffer: { capacity: 100, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "collect" },
    sinkBatch: 10,
    freshness: null,
    sources: {},
    queue: "ingest",
    maxAttempts: 1,
    dropsRetentionMs: 86_400_000,
  };
  const producer = await openJobs(`${dir.path}/jobs.db`, { logger: silentLogger });
  // This node never calls ingest(): it has the sink and serves the queue.
  const node = await openJobs(`${dir.path}/jobs.db`, { logger: silentLogger, workers: [collect] });
  try {
    const job = await producer.ingest(pipeline);
    const runtime = await node.start({ queues: { ingest: 1 } });
    const run = await waitUntil("the run ended", async () => {
      const run = await node.store.ingestRunByJob({ jobId: job.id });
      return run && run.state !== "running" ? run : null;
    });
    await runtime.stop({ grace: 0 });
    assert.equal(run.state, "completed", run.error ?? "");
    assert.deepEqual(sunk, ["feed/a", "feed/b"]);
  } finally {
    await node.close({ grace: 0 });
    await producer.close({ grace: 0 });
    await dir.cleanup();
  }
});
