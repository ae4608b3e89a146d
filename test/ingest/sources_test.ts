/**
 * The ingest engine's sources end to end: a glob of files, a command's
 * stdout, an HTTP GET and a non-UTF-8 CSV file, each run as a `jobs.ingest`
 * job drained through the real claim -> perform -> record path on SQLite
 * with a FakeClock. An attempt is interrupted by a sink that throws on a
 * chosen key; the retry (due when the clock reaches its backoff) must resume
 * from the committed cursor and sink no committed key again.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { parseCursor } from "../../src/ingest/source.ts";
import { defineSink } from "../../src/ingest/processors.ts";
import type { CompiledPipeline, IngestRun, SourceSpec } from "../../src/ingest/types.ts";
import { Jobs } from "../../src/jobs.ts";
import type { Job } from "../../src/kernel/types.ts";
import { ingestJob, ingestWorker } from "../../src/runners/ingest.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { drainJobs, waitUntil } from "../../src/testing.ts";
import { tempDir } from "../support/stores.ts";

function pipelineOf(
  id: string,
  source: SourceSpec,
  over: Partial<CompiledPipeline> = {},
): CompiledPipeline {
  return {
    id,
    hash: "h",
    source,
    key: ["sku"],
    steps: [],
    dropReasons: ["poison"],
    buffer: { capacity: 10_000, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "sink" },
    sinkBatch: 500,
    freshness: null,
    sources: {},
    queue: "ingest",
    maxAttempts: 1,
    dropsRetentionMs: 86_400_000,
    ...over,
  };
}

interface Sunk {
  key: string;
  record: Record<string, unknown>;
  /** The attempt (1, 2, ...) that sank it. */
  attempt: number;
}

interface Harness {
  dir: string;
  store: Store;
  clock: FakeClock;
  /** Every record the sink took, in order. */
  sunk: Sunk[];
  /** Told each batch's keys before the sink takes it; throwing fails the attempt. */
  interrupt: (keys: string[], attempt: number) => void;
  /** Enqueues a run of `pipeline` and runs its first attempt; returns its job. */
  start(pipeline: CompiledPipeline): Promise<{ run: IngestRun; job: Job }>;
  /** Moves the clock to the job's retry and runs that attempt. */
  retry(job: Job): Promise<{ run: IngestRun; job: Job }>;
  close(): Promise<void>;
}

async function harness(): Promise<Harness> {
  const dir = await tempDir();
  const store = await openSqliteStore(`${dir.path}/jobs.db`);
  const clock = new FakeClock();
  let attempt = 0;
  const h: Harness = {
    dir: dir.path,
    store,
    clock,
    sunk: [],
    interrupt: () => {},
    start: async (pipeline) => {
      const [inserted] = await store.jobsInsert({
        jobs: [ingestJob(pipeline, { now: clock.now() })],
        now: clock.now(),
      });
      return await attemptOf(inserted!.id);
    },
    retry: async (job) => {
      assert.deepEqual(job.state, "retryable", "the job waits for its retry");
      clock.set(Math.max(clock.now(), job.scheduledAt));
      return await attemptOf(job.id);
    },
    async close() {
      await store.close();
      await dir.cleanup();
    },
  };
  const sink = defineSink({
    name: "sink",
    write(batch) {
      h.interrupt(batch.map((b) => b.key), attempt);
      for (const { key, record } of batch) h.sunk.push({ key, record, attempt });
    },
  });
  const jobs = new Jobs({ store, clock, logger: () => {}, workers: [sink] });
  jobs.register(ingestWorker({
    store: () => store,
    clock,
    env: (name) => Deno.env.get(name),
    logger: () => {},
    workers: () => jobs.registry,
    killGraceMs: 500,
  }));
  async function attemptOf(id: number): Promise<{ run: IngestRun; job: Job }> {
    attempt++;
    const ran = await drainJobs(jobs, { queue: "ingest" });
    const outcomes = ran.completed + ran.retryable + ran.discarded;
    assert.deepEqual(outcomes, 1, `attempt ${attempt} ran once: ${JSON.stringify(ran)}`);
    const job = await store.jobGet({ id });
    const run = await store.ingestRunByJob({ jobId: id });
    assert(job && run, "the job has a run");
    return { run, job };
  }
  return h;
}

function keysOf(sunk: Sunk[], attempt?: number): string[] {
  return sunk.filter((s) => attempt === undefined || s.attempt === attempt).map((s) => s.key);
}

/** Asserts every key was sunk exactly once. */
function assertOnce(sunk: Sunk[]): void {
  const counts = new Map<string, number>();
  for (const { key } of sunk) counts.set(key, (counts.get(key) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([key]) => key);
  assert.deepEqual(twice, [], "no key was sunk twice");
}

function assertAddsUp(run: IngestRun): void {
  const c = run.counts;
  const dropped = Object.values(c.dropped).reduce((a, b) => a + b, 0);
  assert.deepEqual(c.received, c.sunk + dropped + c.failed + c.pending, JSON.stringify(c));
}

function lines(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ sku: `${prefix}${i}`, n: i }));
}

const encoder = new TextEncoder();

// ---------------------------------------------------------------------------
// Glob

Deno.test("glob source reads a-1, a-10, a-2 in name order and resumes at a file boundary and inside a file", async () => {
  const h = await harness();
  try {
    await Deno.mkdir(`${h.dir}/feeds`);
    const write = (name: string, rows: string[]) =>
      Deno.writeTextFile(`${h.dir}/feeds/${name}`, rows.join("\n") + "\n");
    await write("a-1.ndjson", ['{"sku":"a1-1"}', '{"sku":"a1-2"}', '{"sku":"a1-3"}']);
    await write("a-2.ndjson", ['{"sku":"a2-1"}', '{"sku": broken', '{"sku":"a2-2"}']);
    await write("a-10.ndjson", ['{"sku":"a10-1"}', '{"sku":"a10-2"}', '{"sku":"a10-3"}']);
    // Not matches: another prefix, another extension.
    await write("b-1.ndjson", ['{"sku":"b1-1"}']);
    await write("a-3.csv", ["sku", "nope"]);
    const pipeline = pipelineOf("globbed", {
      kind: "glob",
      pattern: `${h.dir}/feeds/a-*.ndjson`,
      format: "ndjson",
      encoding: "utf-8",
    }, {
      maxAttempts: 3,
      // One record a chunk: each commit is one record, so where a failure lands is exact.
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("globbed/a10-1")) throw new Error("sink went away");
      if (attempt === 2 && keys.includes("globbed/a10-3")) throw new Error("sink went away");
    };

    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    assert.deepEqual(first.run.counts.received, 3);
    const atFirst = parseCursor(first.run.cursor)!;
    assert.deepEqual(atFirst.file, `${h.dir}/feeds/a-1.ndjson`);
    assert.deepEqual(atFirst.n, 3);
    assert.deepEqual(keysOf(h.sunk, 1), ["globbed/a1-1", "globbed/a1-2", "globbed/a1-3"]);

    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "retryable");
    // The second file in name order is a-10, not a-2.
    assert.deepEqual(keysOf(h.sunk, 2), ["globbed/a10-1", "globbed/a10-2"]);
    const atSecond = parseCursor(second.run.cursor)!;
    assert.deepEqual(atSecond.file, `${h.dir}/feeds/a-10.ndjson`);
    assert.deepEqual(atSecond.n, 2);
    assert.deepEqual(atSecond.offset, encoder.encode('{"sku":"a10-1"}\n{"sku":"a10-2"}\n').length);

    const third = await h.retry(second.job);
    assert.deepEqual(third.job.state, "completed", third.run.error ?? "");
    assert.deepEqual(third.run.state, "completed");
    assert.deepEqual(keysOf(h.sunk, 3), ["globbed/a10-3", "globbed/a2-1", "globbed/a2-2"]);
    assert.deepEqual(keysOf(h.sunk), [
      "globbed/a1-1",
      "globbed/a1-2",
      "globbed/a1-3",
      "globbed/a10-1",
      "globbed/a10-2",
      "globbed/a10-3",
      "globbed/a2-1",
      "globbed/a2-2",
    ]);
    assertOnce(h.sunk);
    assert.deepEqual(third.run.counts.received, 9);
    assert.deepEqual(third.run.counts.sunk, 8);
    assert.deepEqual(third.run.counts.failed, 1);
    assertAddsUp(third.run);
  } finally {
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// Command

function denoEval(code: string): Extract<SourceSpec, { kind: "command" }> {
  return {
    kind: "command",
    argv: [Deno.execPath(), "eval", code],
    shell: false,
    format: "ndjson",
    encoding: "utf-8",
  };
}

Deno.test("command source sinks its stdout's NDJSON records and counts them", async () => {
  const h = await harness();
  try {
    const code = `for (let i = 0; i < 50; i++) console.log(JSON.stringify({ sku: "c" + i }));` +
      `console.log("not json");`;
    const { run, job } = await h.start(pipelineOf("cmd", denoEval(code)));
    assert.deepEqual(job.state, "completed", run.error ?? "");
    assert.deepEqual(run.counts.received, 51);
    assert.deepEqual(run.counts.sunk, 50);
    assert.deepEqual(run.counts.failed, 1);
    assertAddsUp(run);
    assert.deepEqual(keysOf(h.sunk), Array.from({ length: 50 }, (_, i) => `cmd/c${i}`));
  } finally {
    await h.close();
  }
});

Deno.test("command source that exits non-zero fails the run with the code and its stderr's tail", async () => {
  const h = await harness();
  try {
    const code = `console.log('{"sku":"c0"}');` +
      `for (let i = 0; i < 400; i++) console.error("noise line " + i);` +
      `console.error("fatal: disk on fire"); Deno.exit(3);`;
    const { run, job } = await h.start(pipelineOf("cmdfail", denoEval(code)));
    assert.deepEqual(job.state, "discarded");
    assert.deepEqual(run.state, "failed");
    const error = job.errors.at(-1)?.error ?? "";
    assert.match(error, /source command ".*" exited with code 3/);
    assert.match(error, /fatal: disk on fire/);
    // A tail: the last lines, not the first.
    assert.doesNotMatch(error, /noise line 0\n/);
    assert.match(run.error ?? "", /exited with code 3/);
  } finally {
    await h.close();
  }
});

Deno.test("command source resumed after an interruption runs the command again and skips the committed records", async () => {
  const h = await harness();
  try {
    const starts = `${h.dir}/starts.txt`;
    const code =
      `Deno.writeTextFileSync(${JSON.stringify(starts)}, "start\\n", { append: true });` +
      `for (let i = 0; i < 6; i++) console.log(JSON.stringify({ sku: "k" + i }));`;
    const pipeline = pipelineOf("cmdresume", denoEval(code), {
      maxAttempts: 2,
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("cmdresume/k3")) throw new Error("sink went away");
    };
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    assert.deepEqual(first.run.counts.received, 3);
    assert.deepEqual(parseCursor(first.run.cursor)!.n, 3);

    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.run.error ?? "");
    assert.deepEqual((await Deno.readTextFile(starts)).trim().split("\n").length, 2);
    assert.deepEqual(keysOf(h.sunk, 2), ["cmdresume/k3", "cmdresume/k4", "cmdresume/k5"]);
    assert.deepEqual(keysOf(h.sunk), Array.from({ length: 6 }, (_, i) => `cmdresume/k${i}`));
    assertOnce(h.sunk);
    assert.deepEqual(second.run.counts.received, 6);
    assert.deepEqual(second.run.counts.sunk, 6);
    assertAddsUp(second.run);
  } finally {
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// HTTP

interface FeedServer {
  url: string;
  /** The body served and its ETag; a test changes them between attempts. */
  body: Uint8Array<ArrayBuffer>;
  etag: string;
  /**
   * `ignore`: a server without ranges, answering 200 with the whole body to every GET;
   * `ignore-if-range`: one honouring Range whatever the If-Range.
   */
  ranges: "honour" | "ignore" | "ignore-if-range";
  /** Whether a 206 carries the ETag (RFC 9110 says it must; not every server does). */
  etagOn206: boolean;
  /** Answer every request with this status instead. */
  failWith: number | null;
  /** Set: the next body is sent whole, then ends short of its length once this resolves. */
  breakAfter: (() => Promise<void>) | null;
  /** What each request asked and how it was answered. */
  seen: { headers: Headers; status: number; url: string }[];
  close(): Promise<void>;
}

/** An NDJSON feed honouring `Range: bytes=<n>-` when `If-Range` is absent or the current ETag. */
function serveFeed(body: string, etag: string): FeedServer {
  const feed: FeedServer = {
    url: "",
    body: encoder.encode(body),
    etag,
    ranges: "honour",
    etagOn206: true,
    failWith: null,
    breakAfter: null,
    seen: [],
    close: () => server.shutdown(),
  };
  const send = (
    bytes: Uint8Array<ArrayBuffer>,
    status: number,
    headers: Record<string, string>,
  ) => {
    const breakAfter = feed.breakAfter;
    if (breakAfter === null) return new Response(bytes, { status, headers });
    feed.breakAfter = null;
    // One byte more promised than sent: the client reads every record, then a broken body.
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(bytes);
        await breakAfter();
        controller.close();
      },
    });
    const length = String(bytes.length + 1);
    return new Response(body, { status, headers: { ...headers, "Content-Length": length } });
  };
  const answer = (req: Request): Response => {
    if (feed.failWith !== null) return new Response("upstream down\n", { status: feed.failWith });
    const headers = { "Content-Type": "application/x-ndjson", ETag: feed.etag };
    const range = /^bytes=(\d+)-$/.exec(req.headers.get("Range") ?? "");
    const ifRange = req.headers.get("If-Range");
    const total = feed.body.length;
    const current = ifRange === null || ifRange === feed.etag || feed.ranges === "ignore-if-range";
    if (feed.ranges !== "ignore" && range && current) {
      const from = Number(range[1]);
      if (from >= total) {
        return new Response(null, {
          status: 416,
          headers: { ...headers, "Content-Range": `bytes */${total}` },
        });
      }
      const partial: Record<string, string> = {
        ...headers,
        "Content-Range": `bytes ${from}-${total - 1}/${total}`,
      };
      if (!feed.etagOn206) delete partial.ETag;
      return send(feed.body.slice(from), 206, partial);
    }
    return send(feed.body.slice(), 200, {
      ...headers,
      ...(feed.ranges !== "ignore" ? { "Accept-Ranges": "bytes" } : {}),
    });
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const response = answer(req);
    feed.seen.push({ headers: new Headers(req.headers), status: response.status, url: req.url });
    return response;
  });
  feed.url = `http://127.0.0.1:${server.addr.port}/feed.ndjson`;
  return feed;
}

function httpSource(
  url: string,
  headers?: Record<string, string>,
): Extract<SourceSpec, { kind: "http" }> {
  return {
    kind: "http",
    url,
    format: "ndjson",
    encoding: "utf-8",
    ...(headers ? { headers } : {}),
  };
}

Deno.test("http source reads the whole body in one plain GET carrying the declared headers", async () => {
  const h = await harness();
  const feed = serveFeed(lines("k", 5).join("\n") + "\n", '"v1"');
  try {
    const pipeline = pipelineOf(
      "web",
      httpSource(feed.url, { "X-Feed-Key": "k-123", Accept: "application/x-ndjson" }),
    );
    const { run, job } = await h.start(pipeline);
    assert.deepEqual(job.state, "completed", run.error ?? "");
    assert.deepEqual(run.counts.received, 5);
    assert.deepEqual(run.counts.sunk, 5);
    assertAddsUp(run);
    assert.deepEqual(keysOf(h.sunk), ["web/k0", "web/k1", "web/k2", "web/k3", "web/k4"]);
    assert.deepEqual(feed.seen.length, 1);
    const asked = feed.seen[0]!.headers;
    assert.deepEqual(asked.get("X-Feed-Key"), "k-123");
    assert.deepEqual(asked.get("Accept"), "application/x-ndjson");
    assert.deepEqual(asked.get("Range"), null);
    assert.deepEqual(asked.get("If-Range"), null);
    assert.deepEqual(parseCursor(run.cursor)!.etag, '"v1"');
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source replaces ${NAME} in its URL and header values from the environment, and names an unset one", async () => {
  const h = await harness();
  const feed = serveFeed(lines("k", 2).join("\n") + "\n", '"v1"');
  Deno.env.set("JOBS_TEST_FEED_TOKEN", "s3cret-token");
  try {
    const { run, job } = await h.start(pipelineOf(
      "web",
      httpSource(`${feed.url}?tenant=$${"{"}JOBS_TEST_FEED_TOKEN}`, {
        Authorization: "Bearer ${JOBS_TEST_FEED_TOKEN}",
      }),
    ));
    assert.deepEqual(job.state, "completed", run.error ?? "");
    assert.deepEqual(feed.seen[0]!.headers.get("Authorization"), "Bearer s3cret-token");
    assert.deepEqual(new URL(feed.seen[0]!.url).searchParams.get("tenant"), "s3cret-token");
    assert.deepEqual(run.counts.sunk, 2);

    const unset = await h.start(pipelineOf(
      "web2",
      httpSource(feed.url, { Authorization: "Bearer ${JOBS_TEST_NOT_SET}" }),
    ));
    assert.notEqual(unset.job.state, "completed");
    const error = unset.job.errors.at(-1)?.error ?? "";
    assert.match(error, /header "Authorization".*"JOBS_TEST_NOT_SET" is not set/);
  } finally {
    Deno.env.delete("JOBS_TEST_FEED_TOKEN");
    await feed.close();
    await h.close();
  }
});

Deno.test("http source resumed asks for Range: bytes=<offset>- with If-Range: <etag> and sinks only the rest", async () => {
  const h = await harness();
  const rows = lines("k", 6);
  const feed = serveFeed(rows.join("\n") + "\n", '"v1"');
  try {
    const pipeline = pipelineOf("ranged", httpSource(feed.url, { "X-Feed-Key": "k-123" }), {
      maxAttempts: 2,
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("ranged/k2")) throw new Error("sink went away");
    };
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    assert.deepEqual(first.run.counts.received, 2);
    const offset = encoder.encode(rows.slice(0, 2).join("\n") + "\n").length;
    assert.deepEqual(parseCursor(first.run.cursor)!.offset, offset);

    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.run.error ?? "");
    assert.deepEqual(feed.seen.length, 2);
    const retry = feed.seen[1]!;
    assert.deepEqual(retry.headers.get("Range"), `bytes=${offset}-`);
    assert.deepEqual(retry.headers.get("If-Range"), '"v1"');
    assert.deepEqual(retry.headers.get("X-Feed-Key"), "k-123");
    assert.deepEqual(retry.status, 206);
    assert.deepEqual(keysOf(h.sunk, 2), ["ranged/k2", "ranged/k3", "ranged/k4", "ranged/k5"]);
    assertOnce(h.sunk);
    assert.deepEqual(second.run.counts.received, 6);
    assert.deepEqual(second.run.counts.sunk, 6);
    assertAddsUp(second.run);
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source whose ETag changed between attempts gets the whole body and skips the committed records", async () => {
  const h = await harness();
  const rows = lines("k", 6);
  const feed = serveFeed(rows.join("\n") + "\n", '"v1"');
  try {
    const pipeline = pipelineOf("changed", httpSource(feed.url), {
      maxAttempts: 2,
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("changed/k2")) {
        // The feed is republished (one record more) while the attempt dies.
        feed.body = encoder.encode([...rows, ...lines("new", 1)].join("\n") + "\n");
        feed.etag = '"v2"';
        throw new Error("sink went away");
      }
    };
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    assert.deepEqual(first.run.counts.received, 2);

    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.run.error ?? "");
    const retry = feed.seen[1]!;
    assert.deepEqual(retry.headers.get("If-Range"), '"v1"');
    assert.deepEqual(retry.status, 200);
    assert.deepEqual(keysOf(h.sunk, 2), [
      "changed/k2",
      "changed/k3",
      "changed/k4",
      "changed/k5",
      "changed/new0",
    ]);
    assertOnce(h.sunk);
    assert.deepEqual(second.run.counts.received, 7);
    assert.deepEqual(second.run.counts.sunk, 7);
    assertAddsUp(second.run);
    assert.deepEqual(parseCursor(second.run.cursor)!.etag, '"v2"');
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source whose server ignores Range gets the whole body again and skips the committed records", async () => {
  const h = await harness();
  const feed = serveFeed(lines("k", 6).join("\n") + "\n", '"v1"');
  feed.ranges = "ignore";
  try {
    const pipeline = pipelineOf("norange", httpSource(feed.url), {
      maxAttempts: 2,
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("norange/k2")) throw new Error("sink went away");
    };
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.run.error ?? "");
    assert.deepEqual(feed.seen[1]!.headers.get("If-Range"), '"v1"');
    assert.deepEqual(feed.seen[1]!.status, 200);
    assert.deepEqual(keysOf(h.sunk, 2), ["norange/k2", "norange/k3", "norange/k4", "norange/k5"]);
    assertOnce(h.sunk);
    assert.deepEqual(second.run.counts.received, 6);
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source answered 206 without an ETag resumes at the offset and loses no record", async () => {
  const h = await harness();
  const feed = serveFeed(lines("k", 6).join("\n") + "\n", '"v1"');
  feed.etagOn206 = false;
  try {
    const pipeline = pipelineOf("bare206", httpSource(feed.url), {
      maxAttempts: 2,
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("bare206/k2")) throw new Error("sink went away");
    };
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.run.error ?? "");
    assert.deepEqual(feed.seen[1]!.status, 206);
    // The 206 is the rest of the body: skipping two more of it would lose k2 and k3.
    assert.deepEqual(keysOf(h.sunk, 2), ["bare206/k2", "bare206/k3", "bare206/k4", "bare206/k5"]);
    assertOnce(h.sunk);
    assert.deepEqual(second.run.counts.received, 6);
    assertAddsUp(second.run);
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source answered 206 of another ETag (If-Range ignored) asks for the whole body and skips the committed records", async () => {
  const h = await harness();
  const rows = lines("k", 6);
  const feed = serveFeed(rows.join("\n") + "\n", '"v1"');
  feed.ranges = "ignore-if-range";
  try {
    const pipeline = pipelineOf("other206", httpSource(feed.url), {
      maxAttempts: 2,
      buffer: { capacity: 1, overflow: "block" },
    });
    h.interrupt = (keys, attempt) => {
      if (attempt === 1 && keys.includes("other206/k2")) {
        // Republished with a record in front: the old offset now falls inside another body.
        feed.body = encoder.encode([...lines("new", 1), ...rows].join("\n") + "\n");
        feed.etag = '"v2"';
        throw new Error("sink went away");
      }
    };
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.job.errors.at(-1)?.error ?? "");
    assert.deepEqual(feed.seen.map((s) => s.status), [200, 206, 200]);
    assert.deepEqual(feed.seen[2]!.headers.get("Range"), null);
    // Two records skipped of the new body (new0, k0), the rest sunk, none twice.
    assert.deepEqual(keysOf(h.sunk, 2), [
      "other206/k1",
      "other206/k2",
      "other206/k3",
      "other206/k4",
      "other206/k5",
    ]);
    assert.deepEqual(second.run.counts.received, 7);
    assertAddsUp(second.run);
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source resumed at the end of its body (416 to the range) completes without sinking anything again", async () => {
  const h = await harness();
  const rows = lines("k", 4);
  const feed = serveFeed(rows.join("\n") + "\n", '"v1"');
  try {
    const pipeline = pipelineOf("atend", httpSource(feed.url), { maxAttempts: 2 });
    // The first attempt commits every record, then its connection breaks before the body ends.
    feed.breakAfter = () =>
      waitUntil("every record committed", async () => {
        const [run] = await h.store.ingestRunsList({ pipeline: "atend" });
        return run?.counts.received === rows.length;
      }).then(() => {});
    const first = await h.start(pipeline);
    assert.deepEqual(first.job.state, "retryable");
    assert.match(first.job.errors.at(-1)?.error ?? "", /error reading a body/);
    assert.deepEqual(first.run.counts.received, 4);
    const offset = feed.body.length;
    assert.deepEqual(parseCursor(first.run.cursor)!.offset, offset);

    const second = await h.retry(first.job);
    assert.deepEqual(second.job.state, "completed", second.job.errors.at(-1)?.error ?? "");
    assert.deepEqual(feed.seen[1]!.headers.get("Range"), `bytes=${offset}-`);
    assert.deepEqual(feed.seen[1]!.status, 416);
    assert.deepEqual(feed.seen[2]!.headers.get("Range"), null, "asked again for the whole body");
    assert.deepEqual(feed.seen[2]!.status, 200);
    assert.deepEqual(keysOf(h.sunk, 2), []);
    assertOnce(h.sunk);
    assert.deepEqual(second.run.counts.received, 4);
    assert.deepEqual(second.run.counts.sunk, 4);
    assertAddsUp(second.run);
  } finally {
    await feed.close();
    await h.close();
  }
});

Deno.test("http source answered 500 fails the run with an error naming the URL and the status", async () => {
  const h = await harness();
  const feed = serveFeed(lines("k", 3).join("\n") + "\n", '"v1"');
  feed.failWith = 500;
  try {
    const { run, job } = await h.start(pipelineOf("down", httpSource(feed.url)));
    assert.deepEqual(job.state, "discarded");
    assert.deepEqual(run.state, "failed");
    assert.deepEqual(job.errors.at(-1)?.error, `source GET ${feed.url} answered 500`);
    assert.match(run.error ?? "", new RegExp(`source GET ${feed.url} answered 500`));
    assert.deepEqual(h.sunk, []);
  } finally {
    await feed.close();
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// CSV encodings

/** Bytes of `text`, one byte a character (each below U+0100): a single-byte encoding's bytes. */
function singleBytes(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => {
    const code = c.charCodeAt(0);
    if (code > 0xff) throw new RangeError(`${JSON.stringify(c)} is not one byte`);
    return code;
  });
}

Deno.test("csv source in iso-8859-1 decodes Café and a quoted field holding a comma and a newline", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.csv`;
    await Deno.writeFile(
      path,
      singleBytes(
        "sku,name,note\r\n" +
          "c1,Caf\xe9,plain\r\n" +
          'c2,"Cr\xe8me, br\xfbl\xe9e","two\nlines"\r\n' +
          "c3,na\xefve,\xbfqu\xe9?\r\n",
      ),
    );
    const pipeline = pipelineOf("latin", {
      kind: "file",
      path,
      format: "csv",
      encoding: "iso-8859-1",
    });
    const { run, job } = await h.start(pipeline);
    assert.deepEqual(job.state, "completed", run.error ?? "");
    assert.deepEqual(run.counts.received, 3);
    assert.deepEqual(run.counts.sunk, 3);
    assert.deepEqual(h.sunk.map((s) => s.record), [
      { sku: "c1", name: "Café", note: "plain" },
      { sku: "c2", name: "Crème, brûlée", note: "two\nlines" },
      { sku: "c3", name: "naïve", note: "¿qué?" },
    ]);
  } finally {
    await h.close();
  }
});

Deno.test("csv source in windows-1252 decodes € and curly quotes as TextDecoder does", async () => {
  const h = await harness();
  try {
    const path = `${h.dir}/feed.csv`;
    // 0x80 is € and 0x93/0x94 are “ ” in windows-1252 (and in the WHATWG "latin1").
    await Deno.writeFile(
      path,
      singleBytes('sku,prix \x80,label\r\nc1,5 \x80,"\x93Caf\xe9\x94, cr\xe8me"\r\n'),
    );
    const expected = new TextDecoder("windows-1252").decode(Uint8Array.of(0x80));
    assert.deepEqual(expected, "€");
    const pipeline = pipelineOf("cp1252", {
      kind: "file",
      path,
      format: "csv",
      encoding: "windows-1252",
    });
    const { run, job } = await h.start(pipeline);
    assert.deepEqual(job.state, "completed", run.error ?? "");
    assert.deepEqual(h.sunk.map((s) => s.record), [
      { sku: "c1", "prix €": "5 €", label: "“Café”, crème" },
    ]);
  } finally {
    await h.close();
  }
});
