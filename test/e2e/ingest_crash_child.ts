/**
 * A node of the ingest crash test (`ingest_crash_test.ts`), killed with
 * SIGKILL mid-run and started again: it opens the store given on the
 * command line through the library, registers the pipeline's TypeScript
 * step and sink and the `jobs.ingest` runner, starts a runtime on the
 * `ingest` queue with a short lease and short maintenance intervals (so a
 * dead node's run comes back within about a second), prints `ready`, and
 * runs until it is killed or sent SIGTERM.
 *
 * The step drops every record whose `n` is a multiple of 7 as
 * `below-threshold` and pauses every 100 records, so a run of
 * {@linkcode FEED_RECORDS} records spans several seconds and many chunks.
 * The sink upserts each batch into `ingest_crash_sink` of the same store,
 * keyed by the idempotency key it is handed, counting `writes` per key,
 * then pauses, so kills also land between a batch's write and its chunk's
 * commit (the batch is written again on resume: `writes` > 1).
 *
 * Usage: ingest_crash_child.ts <location> <node>
 *
 * @module
 */

import {
  definePipeline,
  type Jobs,
  openJobs,
  type PostgresTx,
  silentLogger,
  type SqliteTx,
} from "../../src/mod.ts";
import { type CompiledPipeline, defineSink, defineStep } from "../../src/ingest.ts";
import { ingestWorker } from "../../src/runners/ingest.ts";
import { countedTable, pause } from "../support/crash_table.ts";

/** The pipeline's id: the sink's keys are `<PIPELINE>/<sku>`. */
export const PIPELINE = "crash-feed";
/** Well-formed records in the feed, `n` 1..FEED_RECORDS. */
export const FEED_RECORDS = 20_000;
/** A malformed line follows every this many records. */
export const MALFORMED_EVERY = 1000;

/** The sku of record `n`: unique per record. */
export const skuOf = (n: number) => `sku-${String(n).padStart(5, "0")}`;

/** Whether the step drops record `n` (as `below-threshold`). */
export const droppedByStep = (n: number) => n % 7 === 0;

/** The feed's lines: every record once, and a distinct malformed line after every MALFORMED_EVERY. */
export function feedLines(): string[] {
  const lines: string[] = [];
  for (let n = 1; n <= FEED_RECORDS; n++) {
    lines.push(JSON.stringify({ sku: skuOf(n), n }));
    // Distinct text: identical bad lines would share one failure identity.
    if (n % MALFORMED_EVERY === 0) lines.push(`not json ${n}`);
  }
  return lines;
}

/**
 * The pipeline over the NDJSON file at `feed`: many small chunks (500
 * records, sink batches of 100), and attempts enough for every kill.
 */
export function crashPipeline(feed: string): CompiledPipeline {
  return definePipeline({
    id: PIPELINE,
    source: { file: feed },
    key: "sku",
    steps: [{ drop: "below-threshold", run: { worker: "crash-threshold" } }],
    dropReasons: ["below-threshold", "poison"],
    buffer: { capacity: 500, overflow: "block" },
    sinkBatch: 100,
    sink: { worker: "crash-sink" },
    // Every kill uses an attempt up: far more than the test's kills could take.
    maxAttempts: 100,
  });
}

/** The sink's table: each key it wrote, with `writes` counting the sink calls that wrote it. */
const sinkTable = countedTable("ingest_crash_sink", "writes");

/** Creates the table the sink writes (both stores). */
export const createSinkTable = sinkTable.create;

/** Every key the sink wrote, with how many sink calls wrote it. */
export const readSink = sinkTable.read;

async function main(): Promise<void> {
  const [location, node] = Deno.args;
  if (!location || !node) {
    console.error("usage: ingest_crash_child.ts <location> <node>");
    Deno.exit(2);
  }
  const step = defineStep({
    name: "crash-threshold",
    run: async (record, ctx) => {
      const n = record.n as number;
      // 30 ms per 100 records: a chunk of 500 takes about 150 ms.
      if (n % 100 === 0) await pause(30, ctx.signal);
      return droppedByStep(n) ? { drop: "below-threshold" } : { keep: true };
    },
  });
  const sink = defineSink({
    name: "crash-sink",
    write: async (batch, ctx) => {
      await sinkTable.write(jobs, batch.map((entry) => entry.key));
      // Written but not yet committed: a kill here makes the batch be written again.
      await pause(5, ctx.signal);
    },
  });
  // (The sink reaches `jobs` only once it runs, after it is opened.)
  const jobs: Jobs<SqliteTx | PostgresTx> = await openJobs(location, {
    workers: [step, sink],
    logger: silentLogger,
  });
  // This node enqueues nothing, so `jobs.ingest()` never registered the
  // runner here: without it the run's job would be discarded as an unknown worker.
  jobs.register(ingestWorker({
    store: () => jobs.store,
    clock: jobs.clock,
    env: (name) => Deno.env.get(name),
    logger: silentLogger,
    workers: () => jobs.registry,
  }));
  Deno.addSignalListener("SIGTERM", async () => {
    await jobs.close({ grace: 2000 });
    Deno.exit(0);
  });
  await jobs.start({
    node,
    queues: { ingest: 1 },
    leaseMs: 900,
    heartbeatMs: 150,
    pollMs: 50,
    stageMs: 100,
    rescueMs: 100,
  });
  console.log("ready");
}

if (import.meta.main) await main();
