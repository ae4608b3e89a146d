/**
 * The `ingest` phase of the benchmark: records per second through a
 * pipeline run, and the process's peak RSS while it runs, at two feed
 * lengths (memory must not grow with the feed).
 *
 * ```sh
 * PHASES=ingest deno task bench
 * PHASES=ingest INGEST_N=1000000 RUNS=3 deno task bench
 * BENCH_DB=postgres://postgres@127.0.0.1:5432/test PHASES=ingest deno task bench
 * ```
 *
 * The feed is INGEST_N NDJSON records `{sku, qty, n}` in a file (written
 * before the clock starts). Two pipelines read it, each run as a
 * `jobs.ingest` job by the library's runtime in this process, on a fresh
 * store:
 *
 * - `ts`: three TypeScript steps (drop every 10th record as `duplicate`,
 *   enrich with a price from a declared file source, drop `qty < 2` as
 *   `below-threshold`) and a batched TypeScript sink that counts;
 * - `command`: one command step (a Node script that answers `{"keep":true}`
 *   per line) and the same sink.
 *
 * What is timed is the run's job, from the enqueue to its end (claim, the
 * reads, the steps, the sink, every chunk's fenced commit with its drop
 * rows). The counts are checked against the feed: a run that lost or
 * doubled a record fails the phase. Each run has a process of its own (this
 * module run as a script), so its RSS, sampled every 50 ms, is its own: the
 * `ts` run at INGEST_N / 4 records and at INGEST_N records.
 *
 * @module
 */

import { type Jobs, openJobs, silentLogger } from "../src/mod.ts";
import { type CompiledPipeline, defineSink, defineStep, type IngestRun } from "../src/ingest.ts";
import { withFreshStore } from "./stores.ts";

/** The phase's settings. */
export interface IngestConfig {
  /** Records in the long feed; the short one has a quarter of them. */
  n: number;
  timeoutMs: number;
}

/** What one pass measured. */
export interface IngestTimes {
  tsPerS: number;
  commandPerS: number;
  /** Peak RSS during the `ts` run of the short and the long feed, MB. */
  peakShortMb: number;
  peakLongMb: number;
  /** The heap the `ts` run kept alive (after a full collection at its end), MB. */
  liveShortMb: number;
  liveLongMb: number;
  /** The long `ts` run with V8's old space capped at {@linkcode CAPPED_OLD_SPACE_MB}. */
  cappedPerS: number;
  peakCappedMb: number;
}

/** The old-space cap of the capped run, MB: less than the uncapped run's heap grows to. */
export const CAPPED_OLD_SPACE_MB = 32;

const POLL_MS = 5;
const NODE_STEP = `const rl = require("node:readline").createInterface({ input: process.stdin });
const out = [];
let pending = 0;
rl.on("line", () => { out.push('{"keep":true}'); if (++pending >= 256) flush(); });
rl.on("close", () => flush());
setInterval(flush, 1).unref();
function flush() { if (out.length) { process.stdout.write(out.join("\\n") + "\\n"); out.length = 0; pending = 0; } }`;

/** Runs the phase once on fresh stores of `db` (null: SQLite files). */
export async function phaseIngest(
  db: string | null,
  cfg: IngestConfig,
  log: (message: string) => void,
): Promise<IngestTimes> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-bench-ingest-" });
  try {
    const long = `${dir}/feed.ndjson`;
    const short = `${dir}/short.ndjson`;
    await writeFeed(long, cfg.n);
    await writeFeed(short, Math.floor(cfg.n / 4));
    await Deno.writeTextFile(`${dir}/prices.json`, JSON.stringify({ price: 12.5 }));
    await Deno.writeTextFile(`${dir}/step.cjs`, NODE_STEP);
    // Each run in a process of its own: a peak is the run's, not what an
    // earlier, longer run left in the heap.
    const shortRun = await withFreshStore(
      db,
      (location) => inChild("ts", location, dir, short, Math.floor(cfg.n / 4), cfg),
    );
    log(
      `ingest ts ${Math.floor(cfg.n / 4)}: peak ${shortRun.peakMb.toFixed(1)} MB ` +
        `(${shortRun.baseMb.toFixed(1)} MB before the run), ${
          shortRun.liveMb.toFixed(1)
        } MB live after`,
    );
    const tsRun = await withFreshStore(
      db,
      (location) => inChild("ts", location, dir, long, cfg.n, cfg),
    );
    log(
      `ingest ts ${cfg.n}: peak ${tsRun.peakMb.toFixed(1)} MB ` +
        `(${tsRun.baseMb.toFixed(1)} MB before the run), ${tsRun.liveMb.toFixed(1)} MB live after`,
    );
    // The long feed again with V8's old space capped: what the run needs
    // is bounded when it completes within the cap (RSS above grows with
    // garbage V8 has not collected, not with what the run holds).
    const cappedRun = await withFreshStore(
      db,
      (location) => inChild("ts", location, dir, long, cfg.n, cfg, CAPPED_OLD_SPACE_MB),
    );
    log(
      `ingest ts ${cfg.n}, old space capped at ${CAPPED_OLD_SPACE_MB} MB: ` +
        `${Math.round(cappedRun.perS)} rec/s, peak ${cappedRun.peakMb.toFixed(1)} MB`,
    );
    const commandRun = await withFreshStore(
      db,
      (location) => inChild("command", location, dir, long, cfg.n, cfg),
    );
    return {
      tsPerS: tsRun.perS,
      commandPerS: commandRun.perS,
      peakShortMb: shortRun.peakMb,
      peakLongMb: tsRun.peakMb,
      liveShortMb: shortRun.liveMb,
      liveLongMb: tsRun.liveMb,
      cappedPerS: cappedRun.perS,
      peakCappedMb: cappedRun.peakMb,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function writeFeed(path: string, n: number): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  try {
    for (let off = 0; off < n; off += 10_000) {
      const lines: string[] = [];
      for (let i = off; i < Math.min(n, off + 10_000); i++) {
        lines.push(JSON.stringify({ sku: `sku-${i}`, qty: i % 7, n: i }));
      }
      const bytes = encoder.encode(lines.join("\n") + "\n");
      for (let w = 0; w < bytes.length;) w += await file.write(bytes.subarray(w));
    }
  } finally {
    file.close();
  }
}

function base(id: string, path: string): Omit<CompiledPipeline, "steps"> {
  return {
    id,
    hash: id,
    source: { kind: "file", path, format: "ndjson", encoding: "utf-8" },
    key: ["sku"],
    dropReasons: ["duplicate", "below-threshold", "poison"],
    buffer: { capacity: 10_000, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "bench-sink" },
    sinkBatch: 500,
    freshness: null,
    sources: {},
    queue: "ingest",
    maxAttempts: 1,
    dropsRetentionMs: 86_400_000,
  };
}

function tsPipeline(dir: string, path: string): CompiledPipeline {
  return {
    ...base("bench-ts", path),
    sources: { prices: { kind: "file", path: `${dir}/prices.json` } },
    steps: [
      { name: "every-tenth", mark: "drop", sources: [], run: { kind: "worker", worker: "tenth" } },
      {
        name: "price",
        mark: "enrich",
        sources: ["prices"],
        run: { kind: "worker", worker: "price" },
      },
      { name: "qty", mark: "drop", sources: [], run: { kind: "worker", worker: "qty" } },
    ],
  };
}

function commandPipeline(dir: string, path: string): CompiledPipeline {
  return {
    ...base("bench-command", path),
    steps: [{
      name: "echo",
      mark: "drop",
      sources: [],
      run: { kind: "command", argv: ["node", `${dir}/step.cjs`], shell: false },
    }],
  };
}

/** The steps and sink both pipelines name; `sunk` counts what the sink got. */
function processors(counter: { sunk: number }) {
  let price: number | null = null;
  return [
    defineStep({
      name: "tenth",
      run: (r) => (r.n as number) % 10 === 0 ? { drop: "duplicate" } : { keep: true },
    }),
    defineStep({
      name: "price",
      run: (r, ctx) => {
        // Read once (the source caches it per run); every later record is synchronous.
        if (price === null) {
          return ctx.sources.prices!.json<{ price: number }>().then((p) => {
            price = p.price;
            return { keep: { ...r, price } };
          });
        }
        return { keep: { ...r, price } };
      },
    }),
    defineStep({
      name: "qty",
      run: (r) => (r.qty as number) < 2 ? { drop: "below-threshold" } : { keep: true },
    }),
    defineSink({
      name: "bench-sink",
      write(batch) {
        counter.sunk += batch.length;
      },
    }),
  ];
}

/** What one run measured in its process. */
interface RunFigures {
  perS: number;
  /** Peak RSS from the enqueue to the run's end, MB. */
  peakMb: number;
  /** RSS once the store was open and the runtime started, before the run, MB. */
  baseMb: number;
  /**
   * The heap in use after a full collection once the run ended, MB: what
   * the run kept alive (RSS also holds garbage V8 has not collected yet,
   * and more of it on a longer run).
   */
  liveMb: number;
}

/** Runs one pipeline run in a child process (this module, as a script) and reads its figures. */
async function inChild(
  kind: "ts" | "command",
  location: string,
  dir: string,
  feed: string,
  n: number,
  cfg: IngestConfig,
  oldSpaceMb?: number,
): Promise<RunFigures> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys",
      "--allow-net",
      "--allow-run",
      // A full collection at the run's end measures what the run kept alive.
      `--v8-flags=--expose-gc${oldSpaceMb ? `,--max-old-space-size=${oldSpaceMb}` : ""}`,
      new URL(import.meta.url).pathname,
      kind,
      location,
      dir,
      feed,
      String(n),
      String(cfg.timeoutMs),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(output.stdout).trim();
  if (!output.success) throw new Error(`ingest: the ${kind} run's process failed: ${text}`);
  return JSON.parse(text.split("\n").at(-1)!) as RunFigures;
}

if (import.meta.main) {
  const [kind, location, dir, feed, n, timeoutMs] = Deno.args as [
    "ts" | "command",
    string,
    string,
    string,
    string,
    string,
  ];
  const pipeline = kind === "ts" ? tsPipeline(dir, feed) : commandPipeline(dir, feed);
  const figures = await timedRun(location, pipeline, Number(n), {
    n: Number(n),
    timeoutMs: Number(timeoutMs),
  });
  console.log(JSON.stringify(figures));
}

async function timedRun(
  location: string,
  pipeline: CompiledPipeline,
  n: number,
  cfg: IngestConfig,
): Promise<RunFigures> {
  const counter = { sunk: 0 };
  const jobs: Jobs = await openJobs(location, {
    workers: processors(counter),
    logger: silentLogger,
  });
  try {
    const runtime = await jobs.start({ queues: { ingest: 1 } });
    const base = Deno.memoryUsage().rss;
    let peak = 0;
    const sample = () => {
      peak = Math.max(peak, Deno.memoryUsage().rss);
    };
    const sampler = setInterval(sample, 50);
    const t0 = performance.now();
    const job = await jobs.ingest(pipeline);
    const run = await ended(jobs, job.id, cfg.timeoutMs);
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    sample();
    await runtime.stop({ grace: 0 });
    check(run, n, counter.sunk);
    (globalThis as unknown as { gc?: () => void }).gc?.();
    const live = Deno.memoryUsage().heapUsed;
    const mb = (bytes: number) => bytes / 1024 / 1024;
    return { perS: n / seconds, peakMb: mb(peak), baseMb: mb(base), liveMb: mb(live) };
  } finally {
    await jobs.close({ grace: 0 });
  }
}

async function ended(jobs: Jobs, jobId: number, timeoutMs: number): Promise<IngestRun> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const job = await jobs.store.jobGet({ id: jobId });
    if (job && ["completed", "discarded", "cancelled", "retryable"].includes(job.state)) {
      const run = await jobs.store.ingestRunByJob({ jobId });
      if (!run) throw new Error(`ingest: job ${jobId} ended ${job.state} without a run`);
      return run;
    }
    if (performance.now() > deadline) throw new Error(`ingest: run of job ${jobId} timed out`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function check(run: IngestRun, n: number, sunk: number): void {
  const c = run.counts;
  const dropped = Object.values(c.dropped).reduce((a, b) => a + b, 0);
  if (run.state !== "completed" || c.received !== n || c.sunk !== sunk) {
    throw new Error(
      `ingest: run ${run.id} ${run.state} (${run.error ?? "no error"}): received ${c.received} ` +
        `of ${n}, sunk ${c.sunk}, the sink saw ${sunk}`,
    );
  }
  if (c.sunk + dropped + c.failed + c.pending !== c.received) {
    throw new Error(`ingest: run ${run.id} does not add up: ${JSON.stringify(c)}`);
  }
}
