/**
 * Query sources an enrich step reads: a SQLite file and a PostgreSQL
 * database, each a query with named parameters (`:sku`) bound by the
 * driver, never spliced: a record whose key carries SQL finds nothing. The
 * PostgreSQL URL takes `${NAME}` from the environment, so credentials stay
 * out of the definition.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import postgres from "../../src/store/postgres/driver.ts";
import { openJobs, silentLogger } from "../../src/mod.ts";
import {
  type CompiledPipeline,
  defineSink,
  defineStep,
  type IngestRun,
  type NamedSource,
} from "../../src/ingest.ts";
import { waitUntil } from "../../src/testing.ts";
import { POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

const FEED = [
  { sku: "a" },
  { sku: "b" },
  { sku: "a' OR '1'='1" },
  { sku: "zzz" },
].map((r) => JSON.stringify(r)).join("\n") + "\n";

/** Runs the feed through an enrich step reading `prices` by `:sku`; the sink's records by key. */
async function enrichFrom(
  prices: NamedSource,
): Promise<{ run: IngestRun; sunk: Map<string, unknown> }> {
  const dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/feed.ndjson`, FEED);
  const sunk = new Map<string, unknown>();
  const price = defineStep({
    name: "price",
    run: async (record, ctx) => {
      const rows = await ctx.sources.prices!.query<{ price: number }>({ sku: record.sku });
      return { keep: { ...record, prices: rows.map((r) => Number(r.price)) } };
    },
  });
  const collect = defineSink({
    name: "collect",
    write: (batch) => {
      for (const { key, record } of batch) sunk.set(key, record.prices);
    },
  });
  const pipeline: CompiledPipeline = {
    id: "catalog",
    hash: "h",
    source: { kind: "file", path: `${dir.path}/feed.ndjson`, format: "ndjson", encoding: "utf-8" },
    key: ["sku"],
    steps: [{
      name: "price",
      mark: "enrich",
      sources: ["prices"],
      run: { kind: "worker", worker: "price" },
    }],
    dropReasons: ["poison"],
    buffer: { capacity: 100, overflow: "block" },
    poisonAfter: 3,
    sink: { kind: "worker", worker: "collect" },
    sinkBatch: 10,
    freshness: null,
    sources: { prices },
    queue: "ingest",
    maxAttempts: 1,
    dropsRetentionMs: 86_400_000,
  };
  const jobs = await openJobs(`${dir.path}/jobs.db`, {
    logger: silentLogger,
    workers: [price, collect],
  });
  try {
    const job = await jobs.ingest(pipeline);
    const runtime = await jobs.start({ queues: { ingest: 1 } });
    const run = await waitUntil("the run ended", async () => {
      const run = await jobs.store.ingestRunByJob({ jobId: job.id });
      return run && run.state !== "running" ? run : null;
    });
    await runtime.stop({ grace: 0 });
    return { run, sunk };
  } finally {
    await jobs.close({ grace: 0 });
    await dir.cleanup();
  }
}

function assertBound(run: IngestRun, sunk: Map<string, unknown>): void {
  assert.equal(run.state, "completed", run.error ?? "");
  assert.deepEqual(Object.fromEntries(sunk), {
    "catalog/a": [12.5],
    "catalog/b": [3],
    // Bound as a value: the quote and the OR are part of a sku no row has.
    "catalog/a' OR '1'='1": [],
    "catalog/zzz": [],
  });
}

Deno.test("a sqlite query source binds :sku; a key carrying SQL finds no row", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/prices.db`;
    const db = new DatabaseSync(path);
    db.exec("CREATE TABLE prices (sku TEXT PRIMARY KEY, price REAL)");
    db.exec("INSERT INTO prices VALUES ('a', 12.5), ('b', 3)");
    db.close();
    const { run, sunk } = await enrichFrom({
      kind: "sqlite",
      path,
      query: "SELECT price FROM prices WHERE sku = :sku",
    });
    assertBound(run, sunk);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a postgres query source takes ${NAME} in its URL and binds :sku", async () => {
  const schema = testSchema();
  const sql = postgres(POSTGRES_TEST_URL, { max: 1, onnotice: () => {} });
  Deno.env.set("JOBS_TEST_PRICES_URL", POSTGRES_TEST_URL);
  try {
    await sql`CREATE SCHEMA ${sql(schema)}`;
    await sql`CREATE TABLE ${sql(schema)}.prices (sku TEXT PRIMARY KEY, price NUMERIC)`;
    await sql`INSERT INTO ${sql(schema)}.prices VALUES ('a', 12.5), ('b', 3)`;
    const { run, sunk } = await enrichFrom({
      kind: "postgres",
      url: "${JOBS_TEST_PRICES_URL}",
      query: `SELECT price FROM ${schema}.prices WHERE sku = :sku`,
    });
    assertBound(run, sunk);
  } finally {
    Deno.env.delete("JOBS_TEST_PRICES_URL");
    await sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`;
    await sql.end();
  }
});
