/**
 * Records that cannot be handled, on both stores (issue 25, items 6 and 7):
 * a record nested 10,000 deep, a step answering something that is not JSON,
 * and records holding U+0000 (escaped in JSON text, raw bytes in a line or a
 * CSV row). Each is that record's failure or drop, never the run's: the run
 * completes, its good records are sunk once, the bad one is counted
 * `failed` and dropped as `poison` on its `poison_after`-th run, and what is
 * stored reads back the same on SQLite and PostgreSQL.
 */

import assert from "node:assert/strict";
import { defineSink, defineStep } from "../../src/ingest/processors.ts";
import { nestedDeeper } from "../../src/text/nesting.ts";
import type { CompiledPipeline, IngestRun } from "../../src/ingest/types.ts";
import type { Worker } from "../../src/kernel/worker.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { drainJobs } from "../../src/testing.ts";
import { type Backend, type BackendJobs, backendJobs, BACKENDS } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

function pipelineOf(id: string, path: string, over: Partial<CompiledPipeline> = {}) {
  const pipeline: CompiledPipeline = {
    id,
    hash: "h",
    source: { kind: "file", path, format: "ndjson", encoding: "utf-8" },
    key: ["sku"],
    steps: [{
      name: "screen",
      mark: "drop",
      sources: [],
      run: { kind: "worker", worker: "screen" },
    }],
    dropReasons: ["junk", "poison"],
    buffer: { capacity: 100, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "sink" },
    sinkBatch: 10,
    freshness: null,
    sources: {},
    queue: "ingest",
    // A run that throws is retried: today's faults showed as the chunk sunk on every attempt.
    maxAttempts: 3,
    dropsRetentionMs: 86_400_000,
    ...over,
  };
  return pipeline;
}

/** A sink that counts what it was handed, by key. */
function countingSink(sunk: Map<string, number>) {
  return defineSink({
    name: "sink",
    write(batch) {
      for (const { key } of batch) sunk.set(key, (sunk.get(key) ?? 0) + 1);
    },
  });
}

/**
 * Runs `fn` with a Jobs on a fresh database of `backend` and a temporary
 * folder, then closes both; a failure to close after a failed body is
 * printed, so it never hides the body's own error.
 */
async function withJobs(
  backend: Backend,
  workers: Worker<unknown>[],
  fn: (jobs: BackendJobs, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await tempDir();
  const jobs = await backendJobs(backend, workers);
  let failure: { error: unknown } | null = null;
  try {
    await fn(jobs, dir.path);
  } catch (error) {
    failure = { error };
  }
  let closing: { error: unknown } | null = null;
  try {
    await jobs[Symbol.asyncDispose]();
    await dir.cleanup();
  } catch (error) {
    closing = { error };
  }
  if (failure !== null) {
    if (closing !== null) console.error("closing after this failure also failed:", closing.error);
    throw failure.error;
  }
  if (closing !== null) throw closing.error;
}

interface Ran {
  run: IngestRun;
  jobState: string;
  jobErrors: string[];
}

/** Enqueues one run of `pipeline` and drains it (retries included) to its job's end. */
async function runOnce(bj: BackendJobs, pipeline: CompiledPipeline): Promise<Ran> {
  const { jobs } = bj;
  const job = await jobs.ingest(pipeline);
  await drainJobs(jobs, { queue: "ingest", withScheduled: true });
  const ended = await jobs.store.jobGet({ id: job.id });
  const run = await jobs.store.ingestRunByJob({ jobId: job.id });
  assert.ok(run, "the job has a run");
  return {
    run,
    jobState: ended!.state,
    jobErrors: (ended!.errors ?? []).map((e) => e.error),
  };
}

interface FailureRow {
  record: string;
  failures: number;
  error: string;
  excerpt: string;
}

/** The stored failure rows of `pipeline`, by record, read with each backend's own SQL. */
async function failureRows(store: Store, pipeline: string): Promise<FailureRow[]> {
  let rows: Record<string, unknown>[];
  if ("db" in store) {
    rows = (store as unknown as SqliteStore).db.prepare(
      "SELECT record, failures, error, excerpt FROM ingest_failures WHERE pipeline = ? ORDER BY record",
    ).all(pipeline) as Record<string, unknown>[];
  } else {
    rows = await store.transaction((tx) =>
      // deno-lint-ignore no-explicit-any
      (tx as any).sql`SELECT record, failures, error, excerpt FROM ingest_failures
        WHERE pipeline = ${pipeline} ORDER BY record COLLATE "C"`
    );
  }
  return rows.map((r) => ({
    record: r.record as string,
    failures: Number(r.failures),
    error: r.error as string,
    excerpt: r.excerpt as string,
  }));
}

/** Drops of `pipeline` with their stored record text, oldest first. */
async function dropsOf(store: Store, pipeline: string) {
  const listed = (await store.ingestDropsList({ pipeline })).reverse();
  const out = [];
  for (const d of listed) {
    const full = await store.ingestDropGet({ id: d.id });
    out.push({
      recordKey: d.recordKey,
      reason: d.reason,
      step: d.step,
      excerpt: d.excerpt,
      record: full!.record,
    });
  }
  return out;
}

/** No stack frame, no source path, one line. */
function assertPlain(text: string, what: string): void {
  assert.doesNotMatch(text, /\n|\bat \S+ \(|file:\/\/|\/work\/|\.ts:\d+/, `${what}: ${text}`);
}

const DEPTH = 10_000;
/** Nested objects with integer keys: JSON.stringify leaves its fast path on these, and recurses. */
const deepObject = `{"sku":"deep-object","d":${'{"1":'.repeat(DEPTH)}1${"}".repeat(DEPTH)}}`;
const deepArray = `{"sku":"deep-array","d":${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}}`;

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a record nested 10,000 deep fails alone: the run completes, the good records are sunk once, and it is dropped as poison on the third run`, async () => {
    const sunk = new Map<string, number>();
    const screened: string[] = [];
    const screen = defineStep({
      name: "screen",
      run: (r) => {
        screened.push(r.sku as string);
        return String(r.sku).startsWith("deep") ? { drop: "junk" } : { keep: true };
      },
    });
    await withJobs(backend, [screen, countingSink(sunk)], async (jobs, dir) => {
      const path = `${dir}/feed.ndjson`;
      await Deno.writeTextFile(
        path,
        [`{"sku":"a"}`, deepObject, `{"sku":"b"}`, deepArray, `{"sku":"c"}`].join("\n") + "\n",
      );
      const pipeline = pipelineOf("deep", path);
      for (const round of [1, 2]) {
        sunk.clear();
        const { run, jobState, jobErrors } = await runOnce(jobs, pipeline);
        assert.deepEqual(jobErrors, [], `run ${round}: the job stored no error`);
        assert.equal(jobState, "completed", `run ${round}`);
        assert.equal(run.state, "completed", `run ${round}: ${run.error}`);
        assert.deepEqual(
          { received: run.counts.received, sunk: run.counts.sunk, failed: run.counts.failed },
          { received: 5, sunk: 3, failed: 2 },
          `run ${round}`,
        );
        assert.deepEqual(run.counts.dropped, {}, `run ${round}`);
        assert.deepEqual(
          Object.fromEntries(sunk),
          { "deep/a": 1, "deep/b": 1, "deep/c": 1 },
          `run ${round}: each good record sunk once`,
        );
        const rows = await failureRows(jobs.store, "deep");
        assert.deepEqual(rows.map((r) => [r.record, r.failures]), [
          ["deep-array", round],
          ["deep-object", round],
        ]);
        for (const row of rows) {
          assert.equal(row.error, "record nested deeper than 1000 levels");
          assertPlain(row.error, row.record);
        }
      }
      // The deep records never reached the step.
      assert.ok(!screened.some((s) => s.startsWith("deep")), screened.join(","));
      sunk.clear();
      const { run } = await runOnce(jobs, pipeline);
      assert.equal(run.state, "completed", run.error ?? "");
      assert.equal(run.counts.failed, 0);
      assert.deepEqual(run.counts.dropped, { poison: 2 });
      assert.equal(run.counts.sunk, 3);
      assert.deepEqual([...sunk.values()], [1, 1, 1]);
      const drops = await dropsOf(jobs.store, "deep");
      assert.deepEqual(drops.map((d) => [d.recordKey, d.reason, d.step]), [
        ["deep-object", "poison", "source"],
        ["deep-array", "poison", "source"],
      ]);
      assert.deepEqual(await failureRows(jobs.store, "deep"), []);
    });
  });

  Deno.test(`${backend.name}: a step answer or a record the engine cannot write as JSON fails that record with a one-line reason, not the run`, async () => {
    const screen = defineStep({
      name: "screen",
      run: (r) => {
        if (r.sku === "odd") return { verdict: 1n } as never;
        if (r.sku === "big") return { keep: { ...r, n: 1n } };
        return { keep: true };
      },
    });
    // A command sink: the engine writes each record to it as a JSON line.
    const sinkCode =
      `const d=new TextDecoder();let c="";for await(const b of Deno.stdin.readable){c+=d.decode(b);let i;while((i=c.indexOf("\\n"))>=0){c=c.slice(i+1);console.log('{"ok":true}');}}`;
    await withJobs(backend, [screen as Worker<unknown>], async (jobs, dir) => {
      const path = `${dir}/feed.ndjson`;
      await Deno.writeTextFile(
        path,
        [`{"sku":"a"}`, `{"sku":"odd"}`, `{"sku":"big"}`, `{"sku":"b"}`].join("\n") + "\n",
      );
      const pipeline = pipelineOf("unwritable", path, {
        sink: { kind: "command", argv: [Deno.execPath(), "eval", sinkCode], shell: false },
      });
      const { run, jobState, jobErrors } = await runOnce(jobs, pipeline);
      assert.deepEqual(jobErrors, []);
      assert.equal(jobState, "completed");
      assert.equal(run.state, "completed", run.error ?? "");
      assert.deepEqual(
        { received: run.counts.received, sunk: run.counts.sunk, failed: run.counts.failed },
        { received: 4, sunk: 2, failed: 2 },
      );
      const rows = await failureRows(jobs.store, "unwritable");
      assert.deepEqual(rows.map((r) => r.record), ["big", "odd"]);
      assert.match(rows[0]!.error, /^pipeline "unwritable" sink: cannot process record: .*BigInt/);
      assert.match(
        rows[1]!.error,
        /^pipeline "unwritable" step "screen" answered a value that is not JSON \(.*BigInt.*\), not keep or drop$/,
      );
      for (const row of rows) assertPlain(row.error, row.record);
    });
  });

  Deno.test(`${backend.name}: records holding U+0000 are dropped and failed like any other, kept escaped, and read back the same on both stores`, async () => {
    const sunk = new Map<string, number>();
    const screen = defineStep({
      name: "screen",
      run: (r) => {
        if (String(r.sku).startsWith("bad")) throw new Error(`refused ${r.sku}`);
        return String(r.note ?? "").includes("\0") ? { drop: "junk" } : { keep: true };
      },
    });
    await withJobs(backend, [screen, countingSink(sunk)], async (jobs, dir) => {
      const ndjson = `${dir}/feed.ndjson`;
      await Deno.writeTextFile(
        ndjson,
        [
          `{"sku":"a"}`,
          // Escaped in the JSON text: the key and the note hold U+0000.
          `{"sku":"nul\\u0000key","note":"x\\u0000y"}`,
          // A raw NUL byte inside a string: not JSON, failed at the source.
          `{"sku":"raw\0"}`,
          // A step fails it, its error and key holding U+0000.
          `{"sku":"bad\\u0000sku"}`,
          `{"sku":"b"}`,
        ].join("\n") + "\n",
      );
      const csv = `${dir}/feed.csv`;
      await Deno.writeTextFile(csv, "sku,note\nc,fine\nd,x\0y\n");
      const lines = pipelineOf("nul-lines", ndjson);
      const rows = pipelineOf("nul-csv", csv, {
        source: { kind: "file", path: csv, format: "csv", encoding: "utf-8" },
      });

      // Run 1 of each: completes, the kept records sunk once.
      const first = await runOnce(jobs, lines);
      assert.deepEqual(first.jobErrors, []);
      assert.equal(first.run.state, "completed", first.run.error ?? "");
      assert.deepEqual(
        [first.run.counts.sunk, first.run.counts.failed, first.run.counts.dropped],
        [2, 2, { junk: 1 }],
      );
      const firstCsv = await runOnce(jobs, rows);
      assert.equal(firstCsv.run.state, "completed", firstCsv.run.error ?? "");
      assert.deepEqual(
        [firstCsv.run.counts.sunk, firstCsv.run.counts.failed, firstCsv.run.counts.dropped],
        [1, 0, { junk: 1 }],
      );
      assert.deepEqual(Object.fromEntries(sunk), {
        "nul-lines/a": 1,
        "nul-lines/b": 1,
        "nul-csv/c": 1,
      });

      // What both stores keep: U+0000 written as the six characters \u0000.
      const failures = await failureRows(jobs.store, "nul-lines");
      const rawId = failures.find((f) => f.record.startsWith("raw:"))!.record;
      assert.deepEqual(failures.map((f) => ({ ...f, error: f.error.slice(0, 60) })), [
        {
          record: "bad\\u0000sku",
          failures: 1,
          error: `pipeline "nul-lines" step "screen": refused bad\\u0000sku`,
          excerpt: `{"sku":"bad\\u0000sku"}`,
        },
        {
          record: rawId,
          failures: 1,
          error: failures.find((f) => f.record === rawId)!.error.slice(0, 60),
          excerpt: `{"sku":"raw\\u0000"}`,
        },
      ]);
      assert.match(failures[1]!.error, /^line 3 is not JSON: /);
      assert.ok(!failures.some((f) => Object.values(f).join("").includes("\0")));
      assert.deepEqual(await dropsOf(jobs.store, "nul-lines"), [{
        recordKey: "nul\\u0000key",
        reason: "junk",
        step: "screen",
        excerpt: `{"sku":"nul\\u0000key","note":"x\\u0000y"}`,
        record: `{"sku":"nul\\u0000key","note":"x\\u0000y"}`,
      }]);
      assert.deepEqual(await dropsOf(jobs.store, "nul-csv"), [{
        recordKey: "d",
        reason: "junk",
        step: "screen",
        excerpt: "d,x\\u0000y",
        record: `{"sku":"d","note":"x\\u0000y"}`,
      }]);
      // The failing records are found again by their own keys.
      const counted = await jobs.store.ingestFailuresGet({
        pipeline: "nul-lines",
        records: ["bad\0sku", rawId],
      });
      assert.deepEqual([...counted.entries()].sort(), [["bad\0sku", 1], [rawId, 1]]);

      // Runs 2 and 3: the failing ones are counted again, then dropped as poison.
      await runOnce(jobs, lines);
      const third = await runOnce(jobs, lines);
      assert.equal(third.run.state, "completed", third.run.error ?? "");
      assert.deepEqual(third.run.counts.dropped, { junk: 1, poison: 2 });
      assert.equal(third.run.counts.failed, 0);
      const poison = (await dropsOf(jobs.store, "nul-lines")).filter((d) => d.reason === "poison");
      assert.deepEqual(poison, [
        {
          recordKey: null,
          reason: "poison",
          step: "source",
          excerpt: `{"sku":"raw\\u0000"}`,
          record: `{"sku":"raw\\u0000"}`,
        },
        {
          recordKey: "bad\\u0000sku",
          reason: "poison",
          step: "screen",
          excerpt: `{"sku":"bad\\u0000sku"}`,
          record: `{"sku":"bad\\u0000sku"}`,
        },
      ]);
      assert.deepEqual(await failureRows(jobs.store, "nul-lines"), []);
      assert.deepEqual(sunk.get("nul-lines/a"), 3, "once per run");
    });
  });
}

Deno.test("nestedDeeper() counts the record as level 1 and walks a million levels without recursing", () => {
  const nested = (n: number) => JSON.parse(`{"d":${"[".repeat(n)}${"]".repeat(n)}}`);
  assert.equal(nestedDeeper({ sku: "a", n: 1 }, 1), false);
  assert.equal(nestedDeeper({ sku: "a", dims: { w: 1 } }, 1), true);
  assert.equal(nestedDeeper({ a: [1, [2]] }, 3), false);
  assert.equal(nestedDeeper(nested(999), 1000), false);
  assert.equal(nestedDeeper(nested(1000), 1000), true);
  assert.equal(nestedDeeper(nested(1_000_000), 1000), true);
});
