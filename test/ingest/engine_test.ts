/**
 * The ingest engine end to end: pipelines run as `jobs.ingest` jobs of a
 * real Jobs runtime (claims, fences and leases real) on SQLite, with TS
 * and command steps and sinks, and the store's counts read back.
 */

import assert from "node:assert/strict";
import { SystemClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import type { Job } from "../../src/kernel/types.ts";
import type { Worker } from "../../src/kernel/worker.ts";
import type { RecordBuffer } from "../../src/ingest/buffer.ts";
import { defineSink, defineStep } from "../../src/ingest/processors.ts";
import type { CompiledPipeline, IngestRun } from "../../src/ingest/types.ts";
import { ingestJob, ingestWorker } from "../../src/runners/ingest.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import type { Logger } from "../../src/kernel/logger.ts";
import { tempDir } from "../support/stores.ts";

function pipelineOf(
  over: Partial<CompiledPipeline> & { id: string; path: string },
): CompiledPipeline {
  const { path, ...rest } = over;
  return {
    hash: "h",
    source: { kind: "file", path, format: "ndjson", encoding: "utf-8" },
    key: ["sku"],
    steps: [],
    dropReasons: ["duplicate", "below-threshold", "poison", "overflow"],
    buffer: { capacity: 10_000, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "sink" },
    sinkBatch: 500,
    freshness: null,
    sources: {},
    queue: "ingest",
    maxAttempts: 1,
    dropsRetentionMs: 86_400_000,
    ...rest,
  };
}

interface Harness {
  dir: string;
  store: Store;
  events: { event: string; fields: Record<string, unknown> }[];
  buffers: RecordBuffer[];
  /** Runs `pipeline` once to its job's end; returns the run and the job. */
  run(
    pipeline: CompiledPipeline,
    workers: Worker<unknown>[],
  ): Promise<{ run: IngestRun; job: Job }>;
  close(): Promise<void>;
}

async function harness(): Promise<Harness> {
  const dir = await tempDir();
  const store = await openSqliteStore(`${dir.path}/jobs.db`);
  const events: Harness["events"] = [];
  const buffers: RecordBuffer[] = [];
  const logger: Logger = (event, fields) => events.push({ event, fields });
  return {
    dir: dir.path,
    store,
    events,
    buffers,
    async run(pipeline, workers) {
      const clock = new SystemClock();
      const jobs = new Jobs({ store, clock, logger: () => {}, workers });
      const registry = new Map(workers.map((w) => [w.name, w]));
      jobs.register(ingestWorker({
        store: () => store,
        clock,
        env: (name) => Deno.env.get(name),
        logger,
        workers: () => registry,
        killGraceMs: 500,
        onBuffer: (b) => buffers.push(b),
      }));
      const [inserted] = await store.jobsInsert({
        jobs: [ingestJob(pipeline, { now: clock.now() })],
        now: clock.now(),
      });
      const runtime = await jobs.start({ queues: { [pipeline.queue]: 1 }, pollMs: 20 });
      try {
        const job = await waitUntil("ingest job ended", async () => {
          const job = await store.jobGet({ id: inserted!.id });
          return job && ["completed", "discarded", "cancelled", "retryable"].includes(job.state)
            ? job
            : null;
        }, { timeoutMs: 60_000 });
        const run = await store.ingestRunByJob({ jobId: job.id });
        assert(run, "the job has a run");
        return { run: run!, job };
      } finally {
        await runtime.stop({ grace: 0 });
      }
    },
    async close() {
      await store.close();
      await dir.cleanup();
    },
  };
}

function sum(dropped: Record<string, number>): number {
  return Object.values(dropped).reduce((a, b) => a + b, 0);
}

async function writeLines(path: string, lines: string[]): Promise<void> {
  await Deno.writeTextFile(path, lines.join("\n") + "\n");
}

function collectingSink(seen: Map<string, number>) {
  return defineSink({
    name: "sink",
    write(batch) {
      for (const { key } of batch) seen.set(key, (seen.get(key) ?? 0) + 1);
    },
  });
}

Deno.test("a 100,000-record feed through drop, enrich, drop counts each reason as the test does, adds up, and sinks each kept key once", async () => {
  const h = await harness();
  try {
    const N = 100_000;
    const lines: string[] = [];
    const expect = { duplicate: 0, below: 0, malformed: 0, kept: new Set<string>() };
    const seenSku = new Set<string>();
    for (let i = 0; i < N; i++) {
      if (i % 997 === 0) {
        lines.push(`{"sku": "broken-${i}",`);
        expect.malformed++;
        continue;
      }
      const sku = i % 10 === 3 ? `s${i - 1}` : `s${i}`; // every tenth repeats its neighbour
      const qty = i % 7;
      lines.push(JSON.stringify({ sku, qty }));
      if (seenSku.has(sku)) {
        expect.duplicate++;
        continue;
      }
      seenSku.add(sku);
      if (qty < 2) expect.below++;
      else expect.kept.add(`feed/${sku}`);
    }
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, lines);
    await Deno.writeTextFile(`${h.dir}/prices.json`, JSON.stringify({ default: 9.5 }));
    const seen = new Set<string>();
    const sunk = new Map<string, number>();
    const workers = [
      defineStep({
        name: "dedupe",
        run: (r) => {
          const sku = r.sku as string;
          if (seen.has(sku)) return { drop: "duplicate" };
          seen.add(sku);
          return { keep: true };
        },
      }),
      defineStep({
        name: "enrich",
        run: async (r, ctx) => {
          const prices = await ctx.sources["vendor-prices"]!.json<{ default: number }>();
          return { keep: { ...r, price: prices.default } };
        },
      }),
      defineStep({
        name: "threshold",
        run: (r) => (r.qty as number) < 2 ? { drop: "below-threshold" } : { keep: true },
      }),
      defineSink({
        name: "sink",
        write(batch) {
          for (const { key, record } of batch) {
            assert.deepEqual(record.price, 9.5);
            sunk.set(key, (sunk.get(key) ?? 0) + 1);
          }
        },
      }),
    ];
    const pipeline = pipelineOf({
      id: "feed",
      path,
      sources: { "vendor-prices": { kind: "file", path: `${h.dir}/prices.json` } },
      steps: [
        {
          name: "drop-duplicates",
          mark: "drop",
          sources: [],
          run: { kind: "worker", worker: "dedupe" },
        },
        {
          name: "enrich-prices",
          mark: "enrich",
          sources: ["vendor-prices"],
          run: { kind: "worker", worker: "enrich" },
        },
        {
          name: "drop-below-threshold",
          mark: "drop",
          sources: [],
          run: { kind: "worker", worker: "threshold" },
        },
      ],
    });
    const { run, job } = await h.run(pipeline, workers);
    assert.deepEqual(job.state, "completed");
    assert.deepEqual(run.state, "completed");
    const c = run.counts;
    assert.deepEqual(c.received, N);
    assert.deepEqual(c.dropped.duplicate, expect.duplicate);
    assert.deepEqual(c.dropped["below-threshold"], expect.below);
    assert.deepEqual(c.failed, expect.malformed);
    assert.deepEqual(c.sunk, expect.kept.size);
    assert.deepEqual(c.received, c.sunk + sum(c.dropped) + c.failed + c.pending);
    assert.deepEqual(sunk.size, expect.kept.size);
    for (const key of expect.kept) assert.deepEqual(sunk.get(key), 1, key);
    assert(h.events.some((e) => e.event === "ingest.finished"));
  } finally {
    await h.close();
  }
});

Deno.test("a malformed row is failed on runs 1 and 2 and dropped as poison on run 3", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, [`{"sku":"a"}`, `{"sku": oops`, `{"sku":"b"}`]);
    const pipeline = pipelineOf({ id: "poisoned", path });
    const sunk = new Map<string, number>();
    for (const round of [1, 2]) {
      const { run } = await h.run(pipeline, [collectingSink(sunk)]);
      assert.deepEqual(run.counts.failed, 1, `run ${round}`);
      assert.deepEqual(run.counts.dropped.poison ?? 0, 0, `run ${round}`);
    }
    const { run } = await h.run(pipeline, [collectingSink(sunk)]);
    assert.deepEqual(run.counts.failed, 0);
    assert.deepEqual(run.counts.dropped.poison, 1);
    const drops = await h.store.ingestDropsList({ pipeline: "poisoned" });
    assert.deepEqual(drops.length, 1);
    assert.deepEqual(drops[0]!.step, "source");
    assert.deepEqual(drops[0]!.reason, "poison");
  } finally {
    await h.close();
  }
});

Deno.test("a drop with an undeclared reason and a step reading an undeclared source fail the record with errors naming them", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, [`{"sku":"a"}`, `{"sku":"b"}`]);
    const pipeline = pipelineOf({
      id: "wrong",
      path,
      sources: { prices: { kind: "file", path: `${h.dir}/x.json` } },
      steps: [
        { name: "odd-drop", mark: "drop", sources: [], run: { kind: "worker", worker: "odd" } },
        { name: "nosy", mark: "enrich", sources: [], run: { kind: "worker", worker: "nosy" } },
      ],
    });
    const workers = [
      defineStep({
        name: "odd",
        run: (r) => r.sku === "a" ? { drop: "vanished" } : { keep: true },
      }),
      defineStep({
        name: "nosy",
        run: async (_r, ctx) => ({
          keep: await ctx.sources.prices!.json() as Record<string, unknown>,
        }),
      }),
      collectingSink(new Map()),
    ];
    const { run } = await h.run(pipeline, workers);
    assert.deepEqual(run.counts.failed, 2);
    assert.deepEqual(sum(run.counts.dropped), 0);
    const rows = await listFailures(h.store);
    const errors = rows.join("\n");
    assert.match(
      errors,
      /step "odd-drop" dropped with reason "vanished", which is not in the set \(duplicate, below-threshold, poison, overflow\)/,
    );
    assert.match(errors, /step "nosy".*source "prices".*declared: none/);
  } finally {
    await h.close();
  }
});

/** The stored errors of failing records (read through the drop-free failure rows). */
function listFailures(store: Store): string[] {
  // deno-lint-ignore no-explicit-any
  const db = (store as any).db;
  return db.prepare("SELECT error FROM ingest_failures").all().map((r: { error: string }) =>
    r.error
  );
}

function feedLines(n: number): string[] {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ sku: `k${i}`, n: i }));
}

Deno.test("buffer block: a feed 10x the capacity drops nothing and never holds more than the capacity", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, feedLines(1000));
    const sunk = new Map<string, number>();
    const slow = defineSink({
      name: "sink",
      async write(batch) {
        await new Promise((r) => setTimeout(r, 1));
        for (const { key } of batch) sunk.set(key, 1);
      },
    });
    const pipeline = pipelineOf({
      id: "blocked",
      path,
      buffer: { capacity: 100, overflow: "block" },
      sinkBatch: 10,
    });
    const { run } = await h.run(pipeline, [slow]);
    assert.deepEqual(run.counts.sunk, 1000);
    assert.deepEqual(sum(run.counts.dropped), 0);
    const buffer = h.buffers.at(-1)!;
    assert(buffer.highWater <= 100, `high water ${buffer.highWater}`);
    assert(buffer.highWater > 0);
  } finally {
    await h.close();
  }
});

Deno.test("buffer drop_oldest: the overflow count equals what the sink never saw", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, feedLines(1000));
    const sunk = new Map<string, number>();
    const slow = defineSink({
      name: "sink",
      async write(batch) {
        await new Promise((r) => setTimeout(r, 5));
        for (const { key } of batch) sunk.set(key, 1);
      },
    });
    const pipeline = pipelineOf({
      id: "lossy",
      path,
      buffer: { capacity: 100, overflow: "drop_oldest" },
      sinkBatch: 10,
    });
    const { run } = await h.run(pipeline, [slow]);
    const overflow = run.counts.dropped.overflow ?? 0;
    assert(overflow > 0, "the slow sink made the buffer overflow");
    assert.deepEqual(overflow, 1000 - sunk.size);
    assert.deepEqual(run.counts.sunk, sunk.size);
    assert.deepEqual(run.counts.received, 1000);
    assert(h.buffers.at(-1)!.highWater <= 100);
  } finally {
    await h.close();
  }
});

Deno.test("buffer page: a full buffer ends the run paged and runs the notify command", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, feedLines(1000));
    const slow = defineSink({
      name: "sink",
      async write() {
        await new Promise((r) => setTimeout(r, 5));
      },
    });
    const marker = `${h.dir}/paged.txt`;
    const pipeline = pipelineOf({
      id: "pager",
      path,
      buffer: { capacity: 50, overflow: "page" },
      notify: {
        kind: "command",
        argv: [`echo "$JOBS_PIPELINE $JOBS_RUN" > ${marker}`],
        shell: true,
      },
    });
    const { run } = await h.run(pipeline, [slow]);
    assert.deepEqual(run.state, "paged");
    assert(run.counts.received < 1000);
    const said = await Deno.readTextFile(marker);
    assert.deepEqual(said.trim(), `pager ${run.id}`);
    assert(h.events.some((e) => e.event === "ingest.paged"));
  } finally {
    await h.close();
  }
});

Deno.test("command steps and a command sink over a CSV source answer one line per record, in order", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.csv`;
    const rows = ["sku,qty", ...Array.from({ length: 3000 }, (_, i) => `c${i},${i % 5}`)];
    await Deno.writeTextFile(path, "\ufeff" + rows.join("\r\n") + "\r\n");
    const sinkLog = `${h.dir}/sunk.ndjson`;
    // A drop step in awk-free shell: python is not assumed; deno is.
    const deno = Deno.execPath();
    const stepCode =
      `const d=new TextDecoder();let c="";for await(const b of Deno.stdin.readable){c+=d.decode(b);let i;while((i=c.indexOf("\\n"))>=0){const r=JSON.parse(c.slice(0,i));c=c.slice(i+1);console.log(JSON.stringify(Number(r.qty)<2?{drop:"below-threshold"}:{keep:{...r,step:Deno.env.get("JOBS_STEP")}}));}}`;
    const sinkCode = `const d=new TextDecoder();let c="";const f=Deno.openSync(${
      JSON.stringify(sinkLog)
    },{append:true,create:true});for await(const b of Deno.stdin.readable){c+=d.decode(b);let i;while((i=c.indexOf("\\n"))>=0){const l=c.slice(0,i);c=c.slice(i+1);f.writeSync(new TextEncoder().encode(l+"\\n"));console.log('{"ok":true}');}}`;
    const pipeline = pipelineOf({
      id: "csvcmd",
      path,
      source: { kind: "file", path, format: "csv", encoding: "utf-8" },
      steps: [
        {
          name: "threshold",
          mark: "drop",
          sources: [],
          run: { kind: "command", argv: [deno, "eval", stepCode], shell: false },
        },
      ],
      sink: { kind: "command", argv: [deno, "eval", sinkCode], shell: false },
    });
    const { run } = await h.run(pipeline, []);
    assert.deepEqual(run.state, "completed", run.error ?? "");
    assert.deepEqual(run.counts.received, 3000);
    assert.deepEqual(run.counts.dropped["below-threshold"], 1200);
    assert.deepEqual(run.counts.sunk, 1800);
    const sunk = (await Deno.readTextFile(sinkLog)).trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(sunk.length, 1800);
    assert.deepEqual(sunk[0].key, "csvcmd/c2");
    assert.deepEqual(sunk[0].record, { sku: "c2", qty: "2", step: "threshold" });
  } finally {
    await h.close();
  }
});

Deno.test("an attempt that dies mid-run resumes from the committed cursor without sinking a committed key again", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.ndjson`;
    await writeLines(path, feedLines(5000));
    const sunk = new Map<string, number>();
    let calls = 0;
    const flaky = defineSink({
      name: "sink",
      write(batch) {
        calls++;
        if (calls === 7) throw new Error("sink connection reset");
        for (const { key } of batch) sunk.set(key, (sunk.get(key) ?? 0) + 1);
      },
    });
    const pipeline = pipelineOf({
      id: "resume",
      path,
      maxAttempts: 2,
      buffer: { capacity: 1000, overflow: "block" },
    });
    const first = await h.run(pipeline, [flaky]);
    assert.deepEqual(first.job.state, "retryable");
    const committed = first.run.counts.received;
    assert(committed > 0 && committed < 5000, `committed ${committed}`);
    // The retry: run the same job again right now.
    await h.store.jobsRetry({ ids: [first.job.id], now: Date.now() });
    const clock = new SystemClock();
    const registry = new Map([["sink", flaky as Worker<unknown>]]);
    const jobs = new Jobs({ store: h.store, clock, logger: () => {}, workers: [flaky] });
    jobs.register(
      ingestWorker({
        store: () => h.store,
        clock,
        env: () => undefined,
        logger: () => {},
        workers: () => registry,
      }),
    );
    const runtime = await jobs.start({ queues: { ingest: 1 }, pollMs: 20, stageMs: 20 });
    try {
      const done = await waitUntil("retry completed", async () => {
        const job = await h.store.jobGet({ id: first.job.id });
        return job?.state === "completed" ? job : null;
      }, { timeoutMs: 60_000 });
      assert(done);
    } finally {
      await runtime.stop({ grace: 0 });
    }
    const run = await h.store.ingestRunByJob({ jobId: first.job.id });
    assert.deepEqual(run!.state, "completed");
    assert.deepEqual(run!.counts.received, 5000);
    assert.deepEqual(run!.counts.sunk, 5000);
    assert.deepEqual(sunk.size, 5000);
    const twice = [...sunk.values()].filter((n) => n > 1).length;
    assert.deepEqual(twice, 0, "no key was sunk twice");
  } finally {
    await h.close();
  }
});
