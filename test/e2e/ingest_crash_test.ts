/**
 * `kill -9` of the node running an ingest pipeline, mid-run, 8 times: the
 * one run resumes from its committed cursor each time and completes, its
 * counts add up to the feed, and no key is counted as sunk twice.
 *
 * The node is a child process (`ingest_crash_child.ts`) running the
 * `jobs.ingest` runner through the library with a 0.9 s lease, so a killed
 * node's run comes back within about a second. The parent writes a feed of
 * 20,000 records (and a malformed line after every 1,000), enqueues ONE run
 * with `jobs.ingest`, then 8 times starts a child, waits until the run has
 * committed records beyond what it had, waits a random short while more and
 * SIGKILLs it; a kill lands in the step, between a sink batch's write and
 * its chunk's commit, or in the commit. Then a last child finishes the run.
 *
 * The sink upserts by its idempotency key and counts writes per key: a key
 * written more than once is a batch whose chunk commit the kill lost (the
 * idempotent sink absorbs it; the test prints how many). What must never
 * happen is the run counting a key as sunk twice: `sunk` equals the
 * distinct keys in the sink table, and each kept key is there once.
 *
 * The kill points come from a seed shown in the test's name:
 * `JOBS_CRASH_SEED=<seed>` replays them (the interleaving with the node's
 * own timing can still differ).
 */

import assert from "node:assert/strict";
import {
  type Jobs,
  openJobs,
  type PostgresTx,
  silentLogger,
  type SqliteTx,
} from "../../src/mod.ts";
import type { IngestRun } from "../../src/ingest.ts";
import { waitUntil } from "../../src/testing.ts";
import { tempDir } from "../support/stores.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import { CrashNode } from "../support/crash_node.ts";
import {
  crashPipeline,
  createSinkTable,
  droppedByStep,
  FEED_RECORDS,
  feedLines,
  MALFORMED_EVERY,
  PIPELINE,
  readSink,
  skuOf,
} from "./ingest_crash_child.ts";
import { seeded } from "../support/seeded.ts";

const CHILD = new URL("./ingest_crash_child.ts", import.meta.url).pathname;
const KILLS = 8;
const SEED = Number(Deno.env.get("JOBS_CRASH_SEED") ?? Math.floor(Math.random() * 2 ** 31));

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dropTotal = (run: IngestRun) => Object.values(run.counts.dropped).reduce((a, b) => a + b, 0);

/** The body, on the store at `location` (a SQLite file or a PostgreSQL schema); `dir` holds the feed. */
async function crashMidRun(location: string, dir: string): Promise<void> {
  const random = seeded(SEED);
  const feed = `${dir}/feed.ndjson`;
  const feedText = feedLines();
  await Deno.writeTextFile(feed, feedText.join("\n") + "\n");
  const jobs = await openJobs(location, { logger: silentLogger }) as Jobs<SqliteTx | PostgresTx>;
  try {
    await createSinkTable(jobs);
    const pipeline = crashPipeline(feed);
    const job = await jobs.ingest(pipeline);
    const runOf = () => jobs.store.ingestRunByJob({ jobId: job.id });

    let midRun = 0;
    let committed = 0;
    const progress: number[] = [];
    for (let kill = 1; kill <= KILLS; kill++) {
      await using node = new CrashNode(
        CHILD,
        [location, `ingest-crash-${kill}`],
        `ingest-crash-${kill}`,
      );
      await waitUntil(`ingest-crash-${kill} to be ready`, () => node.ready, { timeoutMs: 20_000 });
      // Wait for the node to commit a chunk past what the run had, so the kill lands mid-run.
      await waitUntil(
        `ingest-crash-${kill} to commit past record ${committed} (seed ${SEED})`,
        async () => {
          if (node.exited) {
            throw new Error(`ingest-crash-${kill} ended by itself: ${await node.stderr()}`);
          }
          const run = await runOf();
          return run !== null && (run.counts.received > committed || run.state !== "running");
        },
        { timeoutMs: 20_000, intervalMs: 10 },
      );
      // The kill point itself (random by design), not a wait for something.
      await delay(Math.floor(random() * 250));
      const status = await node.kill();
      assert.equal(status.signal, "SIGKILL", `ingest-crash-${kill} ended before its kill`);
      const run = (await runOf())!;
      assert.equal(
        run.state,
        "running",
        `kill ${kill} came after the run ended: the feed is too short for ${KILLS} kills (seed ${SEED})`,
      );
      midRun++;
      committed = run.counts.received;
      progress.push(committed);
    }

    await using last = new CrashNode(CHILD, [location, "ingest-crash-last"], "ingest-crash-last");
    await waitUntil("ingest-crash-last to be ready", () => last.ready, { timeoutMs: 20_000 });
    const run = await waitUntil(
      `the run to end after ${KILLS} kills (seed ${SEED})`,
      async () => {
        if (last.exited) {
          throw new Error(`ingest-crash-last ended by itself: ${await last.stderr()}`);
        }
        const run = await runOf();
        return run !== null && run.state !== "running" ? run : null;
      },
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    const stopped = await last.stop();
    assert.equal(stopped.status.code, 0, stopped.stderr);

    const why = `seed ${SEED}, ${midRun} of ${KILLS} kills mid-run, committed after each: ${
      progress.join(", ")
    }`;
    assert.equal(run.state, "completed", `${run.error} (${why})`);
    assert.equal(run.error, null, why);
    const runs = await jobs.store.ingestRunsList({ pipeline: PIPELINE });
    assert.deepEqual(runs.map((r) => r.id), [run.id], `one run for the one job (${why})`);
    const finished = (await jobs.store.jobGet({ id: job.id }))!;
    assert.equal(finished.state, "completed", why);
    const attempts = await jobs.store.attemptsList({ jobId: job.id });
    assert(attempts.length > KILLS, `${attempts.length} attempts for ${KILLS} kills (${why})`);

    // The counts, against what the test computes from the feed.
    const numbers = Array.from({ length: FEED_RECORDS }, (_, i) => i + 1);
    const kept = numbers.filter((n) => !droppedByStep(n)).map((n) => `${PIPELINE}/${skuOf(n)}`);
    const malformed = Math.floor(FEED_RECORDS / MALFORMED_EVERY);
    const { counts } = run;
    assert.equal(counts.received, feedText.length, `received: every line once (${why})`);
    assert.equal(counts.sunk + dropTotal(run) + counts.failed, counts.received, why);
    assert.deepEqual(
      counts.dropped,
      { "below-threshold": FEED_RECORDS - kept.length },
      `drops by reason (${why})`,
    );
    assert.equal(counts.failed, malformed, `the malformed lines fail once each (${why})`);
    assert.equal(counts.kept, kept.length, why);
    assert.equal(counts.sunk, kept.length, why);

    // No drop recorded twice: one drop row per dropped record.
    const drops = await jobs.store.ingestDropsList({
      pipeline: PIPELINE,
      limit: 10 * FEED_RECORDS,
    });
    const dropKeys = drops.map((d) => d.recordKey);
    assert.equal(dropKeys.length, FEED_RECORDS - kept.length, `drop rows (${why})`);
    assert.equal(new Set(dropKeys).size, dropKeys.length, `no drop row twice (${why})`);

    // The sink: each kept key once, and the run's sunk no more than the keys it wrote.
    const written = await readSink(jobs);
    assert.deepEqual(written.map((w) => w.key), kept, `the sink holds each kept key once (${why})`);
    assert.equal(counts.sunk, written.length, `sunk equals the distinct keys sunk (${why})`);
    const rewritten = written.filter((w) => w.writes > 1);
    const extra = rewritten.reduce((n, w) => n + w.writes - 1, 0);
    console.log(
      `${why}; ${attempts.length} attempts; ${rewritten.length} keys written more than once ` +
        `(${extra} extra writes, batches whose chunk commit a kill lost), none counted twice`,
    );
  } finally {
    await jobs.close();
  }
}

Deno.test({
  name:
    `[sqlite] kill -9 mid-run of an ingest pipeline, ${KILLS} times: the run resumes from its cursor and completes, no key is sunk twice (seed ${SEED})`,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await tempDir();
    try {
      await crashMidRun(`${dir.path}/jobs.db`, dir.path);
    } finally {
      await dir.cleanup();
    }
  },
});

Deno.test({
  name:
    `[postgres] kill -9 mid-run of an ingest pipeline, ${KILLS} times: the run resumes from its cursor and completes, no key is sunk twice (seed ${SEED})`,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await tempDir();
    try {
      await using pg = postgresLocation();
      await crashMidRun(pg.url, dir.path);
    } finally {
      await dir.cleanup();
    }
  },
});
