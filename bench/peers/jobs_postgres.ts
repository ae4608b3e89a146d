/**
 * `jobs` on PostgreSQL in the peers' harness (`bench-peers/lib/harness.mjs`),
 * beside pg-boss and graphile-worker on the same server and database
 * (`PG_URL`, the harness's `postgres://bench:bench@127.0.0.1:5432/bench`).
 * The harness's own `systems/jobs.ts` opens a SQLite file only; this adapter
 * is the same calls (`openJobs`, `enqueue`, `enqueueMany`, `start`,
 * `store.jobsCount`) on a fresh schema per reset, dropped afterwards.
 *
 * Run it from a copy of the peers (whose harness it imports):
 *
 * ```sh
 * cp -r /path/to/bench-peers /tmp/bench-peers && chmod -R u+w /tmp/bench-peers
 * cd /tmp/bench-peers && OUT=results/jobs-postgres.json \
 *   deno run -A --config CHECKOUT/deno.json CHECKOUT/bench/peers/jobs_postgres.ts
 * ```
 *
 * or `bench/peers/run.sh`, which runs the peers and this in one go.
 * `BENCH_PEERS` names the copy when the working directory is not it.
 *
 * @module
 */

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { defineWorker, type Jobs, openJobs, type Runtime, silentLogger } from "../../src/mod.ts";
import { completedOf } from "../shared.ts";
import { type FreshStore, freshStore, postgresVersion } from "../stores.ts";

const peers = Deno.env.get("BENCH_PEERS") ?? Deno.cwd();
const harness = pathToFileURL(join(peers, "lib", "harness.mjs")).href;
const { runBenchmark, PG_URL } = await import(harness).catch((error) => {
  throw new Error(
    `no peers' harness at "${harness}": run from a copy of bench-peers or set BENCH_PEERS`,
    { cause: error },
  );
}) as {
  runBenchmark(adapter: Record<string, unknown>): void;
  PG_URL: string;
};

let handler: (payload: unknown) => unknown = () => {};
const noop = defineWorker<unknown>({
  name: "noop",
  // The harness's handler returns a promise of nothing: a plain completion.
  perform: async (args) => {
    await handler(args);
  },
});
let fresh: FreshStore | null = null;
let jobs: Jobs | null = null;
let runtime: Runtime | null = null;

async function open(): Promise<void> {
  fresh = await freshStore(PG_URL);
  jobs = await openJobs(fresh.location, { workers: [noop], logger: silentLogger });
}

async function close(): Promise<void> {
  await runtime?.stop();
  runtime = null;
  await jobs?.close();
  jobs = null;
  await fresh?.remove();
  fresh = null;
}

function opened(): Jobs {
  if (!jobs) throw new Error("jobs (PostgreSQL): the store is not open");
  return jobs;
}

const adapter = {
  name: "jobs (PostgreSQL)",
  backend: "PostgreSQL",
  version: "jobs (checkout), postgres.js 3.4.9",
  config: { queues: "default x concurrency", schema: "fresh per reset" },
  async setup() {
    adapter.backend = `PostgreSQL ${await postgresVersion(PG_URL)}`;
    await open();
  },
  async reset() {
    await close();
    await open();
  },
  async enqueueOne(payload: unknown) {
    await opened().enqueue(noop, payload);
  },
  async enqueueBulk(payloads: unknown[]) {
    await opened().enqueueMany(payloads.map((args) => ({ worker: noop, args })));
  },
  async startWorker(h: (payload: unknown) => unknown, { concurrency }: { concurrency: number }) {
    handler = h;
    runtime = await opened().start({ queues: { default: concurrency } });
  },
  async stopWorker() {
    await runtime?.stop();
    runtime = null;
  },
  async countCompleted() {
    return completedOf(await opened().store.jobsCount({ state: "completed" }));
  },
  async teardown() {
    await close();
  },
};

runBenchmark(adapter);
