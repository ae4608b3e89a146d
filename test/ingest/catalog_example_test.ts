/**
 * The catalog example (`examples/catalog/`): its schedules file loads with
 * its one pipeline compiled, its three Node scripts speak the line protocol
 * of command steps and sinks, and the whole pipeline, run by the engine on
 * SQLite against a copy of the folder, counts what this test counts from
 * the feed and the price list by itself.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { enrich_prices } from "../../examples/catalog/workers.ts";
import { SystemClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import type { Worker } from "../../src/kernel/worker.ts";
import {
  type CompiledPipeline,
  type IngestCounts,
  type IngestJobArgs,
} from "../../src/ingest/types.ts";
import { INGEST_WORKER } from "../../src/kernel/runs.ts";
import { ingestJob, ingestWorker } from "../../src/runners/ingest.ts";
import { workerNames } from "../../src/runners/workers_module.ts";
import { loadSchedules } from "../../src/config/load.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { tempDir } from "../support/stores.ts";

const EXAMPLE = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));
const MINIMUM_PRICE = 10;

Deno.test("the catalog example loads, its workers checked, with the pipeline compiled against its folder", async () => {
  const result = await loadSchedules(join(EXAMPLE, "schedules.yaml"), { workers: workerNames });
  assert(result.ok, result.ok ? "" : result.errors.map((e) => e.message).join("\n"));
  const { config } = result;
  assert.deepEqual(config.pipelines.length, 1);
  const pipeline = config.pipelines[0]!;
  const folder = EXAMPLE.replace(/\/$/, "");
  assert.deepEqual(pipeline.id, "catalog");
  assert.deepEqual(pipeline.key, ["sku"]);
  assert.deepEqual(pipeline.source, {
    kind: "file",
    path: join(folder, "feed.ndjson"),
    format: "ndjson",
    encoding: "utf-8",
  });
  assert.deepEqual(
    pipeline.steps.map((s) => [s.mark, s.name, s.sources]),
    [
      ["drop", "drop-duplicates", []],
      ["enrich", "enrich-prices", ["vendor-prices"]],
      ["drop", "drop-below-threshold", []],
    ],
  );
  assert.deepEqual(pipeline.steps[0]!.run, {
    kind: "command",
    argv: ["./steps/dedupe"],
    shell: false,
    cwd: folder,
  });
  assert.deepEqual(pipeline.steps[1]!.run, { kind: "worker", worker: "enrich_prices" });
  assert.deepEqual(pipeline.sink, {
    kind: "command",
    argv: ["./bin/upsert-product"],
    shell: false,
    cwd: folder,
  });
  assert.deepEqual(pipeline.sources, {
    "vendor-prices": { kind: "file", path: join(folder, "prices.json") },
  });
  assert.deepEqual(pipeline.dropReasons, ["duplicate", "below-threshold", "poison"]);
  assert.deepEqual(pipeline.buffer, { capacity: 10_000, overflow: "block" });
  assert.deepEqual(pipeline.poisonAfter, 3);
  assert.deepEqual(pipeline.freshness, { mode: "bounded", withinMs: 15 * 60_000 });
  assert.deepEqual(config.workersModule, join(folder, "workers.ts"));

  assert.deepEqual(config.schedules.map((s) => s.id), ["catalog-sync"]);
  const schedule = config.schedules[0]!;
  assert.deepEqual(schedule.queue, "ingest");
  assert(schedule.run.kind === "worker" && schedule.run.worker === INGEST_WORKER);
  assert.deepEqual((schedule.run.args as IngestJobArgs).pipeline, pipeline);
});

/** One of the example's scripts, run by Node, asked one line (or a few) at a time. */
class Script {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<string>;
  #carry = "";

  constructor(path: string, args: string[] = [], env: Record<string, string> = {}) {
    this.#child = new Deno.Command("node", {
      args: [join(EXAMPLE, path), ...args],
      cwd: EXAMPLE,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#reader = this.#child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  }

  /**
   * Writes `lines` and returns as many answer lines, parsed, without closing
   * stdin: a script that held its answers back until the end of its input
   * would stall the engine, and fails here by the deadline instead.
   */
  async ask(...lines: unknown[]): Promise<unknown[]> {
    const text = lines.map((l) => typeof l === "string" ? l : JSON.stringify(l)).join("\n");
    await this.#writer.write(new TextEncoder().encode(text + "\n"));
    const answers: unknown[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to ${text} within 10 s`)), 10_000);
    });
    try {
      while (answers.length < lines.length) {
        const at = this.#carry.indexOf("\n");
        if (at >= 0) {
          answers.push(JSON.parse(this.#carry.slice(0, at)));
          this.#carry = this.#carry.slice(at + 1);
          continue;
        }
        const { value, done } = await Promise.race([this.#reader.read(), deadline]);
        if (done) throw new Error(`the script ended after ${answers.length} answers to ${text}`);
        this.#carry += value;
      }
    } finally {
      clearTimeout(timer);
    }
    return answers;
  }

  /** Closes stdin and returns how the script exited, with what it wrote to stderr. */
  async end(): Promise<{ code: number; stderr: string }> {
    await this.#writer.close().catch(() => {});
    await this.#reader.cancel().catch(() => {});
    const stderr = await new Response(this.#child.stderr).text();
    const { code } = await this.#child.status;
    return { code, stderr };
  }
}

Deno.test("steps/dedupe keeps the first line of each sku and drops the later ones as duplicate, one answer per line", async () => {
  const dedupe = new Script("steps/dedupe");
  assert.deepEqual(await dedupe.ask({ sku: "A-1", stock: 3 }), [{ keep: true }]);
  assert.deepEqual(await dedupe.ask({ sku: "B-2" }), [{ keep: true }]);
  assert.deepEqual(await dedupe.ask({ sku: "A-1", stock: 0 }), [{ drop: "duplicate" }]);
  assert.deepEqual(
    await dedupe.ask({ sku: "C-3" }, { sku: "B-2" }, { sku: "C-3" }, { sku: "D-4" }),
    [{ keep: true }, { drop: "duplicate" }, { drop: "duplicate" }, { keep: true }],
  );
  assert.deepEqual(await dedupe.end(), { code: 0, stderr: "" });
});

Deno.test("steps/threshold drops a price below argv[2] as below-threshold, keeps one at or above it, and fails one without a price", async () => {
  const threshold = new Script("steps/threshold", [String(MINIMUM_PRICE)]);
  assert.deepEqual(await threshold.ask({ sku: "A", price: 9.99 }), [{ drop: "below-threshold" }]);
  assert.deepEqual(await threshold.ask({ sku: "B", price: 10 }), [{ keep: true }]);
  assert.deepEqual(
    await threshold.ask({ sku: "C", price: 0 }, { sku: "D", price: 250 }),
    [{ drop: "below-threshold" }, { keep: true }],
  );
  const [unpriced] = await threshold.ask({ sku: "E" }) as { error?: string }[];
  assert.match(unpriced!.error ?? "", /no number price.*enrich-prices run before/);
  assert.deepEqual(await threshold.end(), { code: 0, stderr: "" });

  const misconfigured = await new Script("steps/threshold", ["ten"]).end();
  assert.deepEqual(misconfigured.code, 2);
  assert.match(misconfigured.stderr, /the minimum price must be a number, got "ten"/);
});

Deno.test("bin/upsert-product answers ok once each product is in CATALOG_OUT, upserts by sku, and refuses one without a price", async () => {
  const dir = await tempDir();
  try {
    const out = join(dir.path, "nested", "products.json");
    const sink = new Script("bin/upsert-product", [], { CATALOG_OUT: out });
    const entry = (sku: string, record: Record<string, unknown>) => ({
      key: `catalog/${sku}`,
      record: { sku, ...record },
    });
    assert.deepEqual(await sink.ask(entry("A", { name: "Lamp", price: 12 })), [{ ok: true }]);
    // "ok" means written: the file holds the product before the next line is sent.
    assert.deepEqual(JSON.parse(await Deno.readTextFile(out)), {
      A: { sku: "A", name: "Lamp", price: 12 },
    });
    const answers = await sink.ask(
      entry("B", { name: "Mug", price: 15 }),
      entry("A", { name: "Lamp", price: 13 }),
      entry("C", { name: "Unpriced" }),
    ) as { ok?: true; error?: string }[];
    assert.deepEqual(answers.slice(0, 2), [{ ok: true }, { ok: true }]);
    assert.match(answers[2]!.error ?? "", /product "catalog\/C" has no price/);
    assert.deepEqual(await sink.end(), { code: 0, stderr: "" });
    assert.deepEqual(JSON.parse(await Deno.readTextFile(out)), {
      A: { sku: "A", name: "Lamp", price: 13 },
      B: { sku: "B", name: "Mug", price: 15 },
    });
  } finally {
    await dir.cleanup();
  }
});

/** What the catalog pipeline should do with the example's feed, worked out without the engine. */
async function expectedOf(folder: string) {
  const prices = JSON.parse(await Deno.readTextFile(join(folder, "prices.json")));
  const text = await Deno.readTextFile(join(folder, "feed.ndjson"));
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  const seen = new Set<string>();
  const kept = new Map<string, Record<string, unknown>>();
  let duplicate = 0, below = 0, malformed = 0;
  for (const line of lines) {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line);
    } catch {
      malformed++;
      continue;
    }
    const sku = record.sku as string;
    if (seen.has(sku)) {
      duplicate++;
      continue;
    }
    seen.add(sku);
    const price = typeof prices[sku] === "number" ? prices[sku] : 0;
    if (price < MINIMUM_PRICE) below++;
    else kept.set(sku, { ...record, price });
  }
  return { received: lines.length, duplicate, below, malformed, kept };
}

/** Runs `pipeline` once as a `jobs.ingest` job of a real runtime, to its end; returns its counts. */
async function runCatalog(store: SqliteStore, pipeline: CompiledPipeline): Promise<IngestCounts> {
  const clock = new SystemClock();
  const workers = [enrich_prices] as Worker<unknown>[];
  const jobs = new Jobs({ store, clock, logger: () => {}, workers });
  const registry = new Map(workers.map((w) => [w.name, w]));
  jobs.register(ingestWorker({
    store: () => store,
    clock,
    env: (name) => Deno.env.get(name),
    logger: () => {},
    workers: () => registry,
    killGraceMs: 500,
  }));
  const [inserted] = await store.jobsInsert({
    jobs: [ingestJob(pipeline, { now: clock.now() })],
    now: clock.now(),
  });
  const runtime = await jobs.start({ queues: { [pipeline.queue]: 1 }, pollMs: 20 });
  let job;
  try {
    job = await waitUntil("the catalog run's job ended", async () => {
      const job = await store.jobGet({ id: inserted!.id });
      return job && ["completed", "discarded", "cancelled", "retryable"].includes(job.state)
        ? job
        : null;
    }, { timeoutMs: 60_000 });
  } finally {
    await runtime.stop({ grace: 0 });
  }
  const run = await store.ingestRunByJob({ jobId: job.id });
  assert.deepEqual([job.state, run?.state], ["completed", "completed"], run?.error ?? "");
  assert.deepEqual(run!.counts.pending, 0);
  return run!.counts;
}

/** Copies the example's files (not its out/) to `to`, modes included: the scripts stay executable. */
async function copyExample(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.name === "out") continue;
    const [source, target] = [join(from, entry.name), join(to, entry.name)];
    if (entry.isDirectory) await copyExample(source, target);
    else await Deno.copyFile(source, target);
  }
}

Deno.test("the catalog pipeline on its example feed drops duplicates and cheap products as counted from the files, fails the 2 malformed lines until run 3 drops them as poison, and upserts each kept sku once", async () => {
  const dir = await tempDir();
  const store = await openSqliteStore(join(dir.path, "jobs.db"));
  const outBefore = Deno.env.get("CATALOG_OUT");
  const out = join(dir.path, "products.json");
  Deno.env.set("CATALOG_OUT", out);
  try {
    const folder = join(dir.path, "catalog");
    await copyExample(EXAMPLE, folder);
    const loaded = await loadSchedules(join(folder, "schedules.yaml"));
    assert(loaded.ok, loaded.ok ? "" : loaded.errors.map((e) => e.message).join("\n"));
    const pipeline = loaded.config.pipelines[0]!;
    const expected = await expectedOf(folder);
    // The feed is meant to show every outcome; a test against an empty kind proves nothing.
    assert.deepEqual(expected.malformed, 2);
    assert(expected.duplicate > 0 && expected.below > 0 && expected.kept.size > 0);

    const c = await runCatalog(store, pipeline);
    assert.deepEqual(c.received, expected.received);
    assert.deepEqual(c.failed, expected.malformed, "the malformed lines fail on run 1");
    // No poison: with poison_after: 3, they are retried on runs 2 and 3 first.
    assert.deepEqual(c.dropped, {
      duplicate: expected.duplicate,
      "below-threshold": expected.below,
    });
    assert.deepEqual(c.sunk, expected.kept.size);

    const products = JSON.parse(await Deno.readTextFile(out)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(products).sort(), [...expected.kept.keys()].sort());
    for (const [sku, product] of expected.kept) assert.deepEqual(products[sku], product, sku);
    const written = await Array.fromAsync(Deno.readDir(folder));
    assert(!written.some((e) => e.name === "out"), "CATALOG_OUT moved the output");

    // Each run dedupes afresh and upserts the same products; the malformed lines
    // fail once more on run 2 and are dropped as poison on run 3.
    const again = { duplicate: expected.duplicate, "below-threshold": expected.below };
    const second = await runCatalog(store, pipeline);
    assert.deepEqual([second.failed, second.dropped], [expected.malformed, again]);
    const third = await runCatalog(store, pipeline);
    assert.deepEqual([third.failed, third.dropped], [0, { ...again, poison: expected.malformed }]);
    assert.deepEqual(third.sunk, expected.kept.size);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(out)), products);
  } finally {
    if (outBefore === undefined) Deno.env.delete("CATALOG_OUT");
    else Deno.env.set("CATALOG_OUT", outBefore);
    await store.close();
    await dir.cleanup();
  }
});
