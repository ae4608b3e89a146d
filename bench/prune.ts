/**
 * The `prune` phase of the benchmark: how fast the pruner clears a backlog
 * of 1,000,000 final jobs (PRUNE_N), and what the claims beside it see.
 *
 * ```sh
 * PHASES=prune RUNS=1 deno task bench
 * PHASES=prune PRUNE_N=200000 PRUNE_BATCH=5000 deno task bench
 * ```
 *
 * The backlog is built through the store API alone (inserts, claims and
 * results, 1000 jobs per transaction each), as a daemon leaves it: 90 %
 * completed, 5 % discarded and 5 % cancelled, each with its attempt row,
 * all older than their retention. One pass of `pruneJobs` with the daemon's
 * defaults then deletes them all while a worker beside it inserts, claims
 * and completes one job at a time on another queue; the phase reports the
 * rows deleted per second, the claims per second beside the prune, and the
 * longest wait between two claims.
 *
 * @module
 */

import type { JobResult, NewJob } from "../src/kernel/types.ts";
import { openStore, type Store } from "../src/store.ts";
import { pruneJobs } from "../src/runtime/pruner.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface PruneConfig {
  /** Final jobs in the backlog. */
  n: number;
  /** Rows per transaction of the pruner. */
  batch: number;
}

/** What the phase measured. */
export interface PruneTimes {
  buildMs: number;
  rowsPerS: number;
  /** Claims per second of the worker beside the prune. */
  claimsPerS: number;
  /** The longest time between two claims of that worker (or the start or end of the prune). */
  claimWaitMaxMs: number;
}

const DAY = 24 * 60 * 60 * 1000;
/** The store's "now": the backlog became final 40 days before it, past every default retention. */
const NOW = Date.UTC(2026, 0, 1, 12);
const BUILT_AT = NOW - 40 * DAY;
const BATCH = 1000;
const NODE = "bench:1";

/** Builds the backlog in a fresh store (a file or a schema), then times one prune of it. */
export async function phasePrune(
  location: string,
  cfg: PruneConfig,
  log: (message: string) => void,
): Promise<PruneTimes> {
  const { store } = await openStore(location, { mode: "create", now: BUILT_AT });
  try {
    const started = performance.now();
    await build(store, cfg.n);
    const buildMs = performance.now() - started;
    log(`  built ${cfg.n.toLocaleString("en-US")} final jobs in ${(buildMs / 1000).toFixed(1)} s`);
    return { buildMs, ...await timePrune(store, cfg) };
  } finally {
    await store.close();
  }
}

/** Inserts, claims and finishes `n` jobs in batches of 1000, one instant per batch. */
async function build(store: Store, n: number): Promise<void> {
  for (let b = 0; b * BATCH < n; b++) {
    const now = BUILT_AT + b;
    const jobs: NewJob[] = [];
    for (let i = b * BATCH; i < Math.min(n, (b + 1) * BATCH); i++) jobs.push(newJob(i, now));
    await store.jobsInsert({ jobs, now });
    const { jobs: claimed } = await store.jobsClaim({
      queue: "backlog",
      node: NODE,
      limit: jobs.length,
      now,
      leaseMs: 60_000,
    });
    const results = claimed.map((job, k): JobResult => {
      const base = { id: job.id, fence: job.fence, attempt: job.attempt, startedAt: now };
      const slot = k % 20;
      if (slot === 0) return { ...base, outcome: "discarded", error: "HTTP 503 from upstream" };
      if (slot === 1) return { ...base, outcome: "cancelled", error: "cancelled by the bench" };
      return { ...base, outcome: "completed" };
    });
    const { recorded } = await store.jobsRecord({ node: NODE, now, results });
    if (recorded.length !== jobs.length) {
      throw new Error(`prune: batch ${b} recorded ${recorded.length} of ${jobs.length} jobs`);
    }
  }
}

function newJob(i: number, now: number): NewJob {
  return {
    queue: "backlog",
    worker: "noop",
    args: JSON.stringify({ i, note: "x".repeat(40) }),
    meta: "{}",
    tags: "[]",
    tenant: null,
    priority: 0,
    maxAttempts: 1,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: null,
    scheduleId: null,
    scheduledFor: null,
    scheduledAt: now,
  };
}

/** One pass of the pruner over the whole backlog, with a worker claiming beside it. */
async function timePrune(store: Store, cfg: PruneConfig): Promise<Omit<PruneTimes, "buildMs">> {
  const started = performance.now();
  const pass = pruneJobs(store, NOW, { batch: cfg.batch });
  const claimedAt = await claimBeside(store, pass);
  const { deleted } = await pass;
  const ended = performance.now();
  if (deleted !== cfg.n) throw new Error(`prune: deleted ${deleted} jobs, expected ${cfg.n}`);
  const left = (await store.jobsCount({ queue: "backlog" })).reduce((s, c) => s + c.count, 0);
  if (left !== 0) throw new Error(`prune: ${left} backlog jobs left after the pass`);
  const seconds = (ended - started) / 1000;
  let claimWaitMaxMs = 0;
  let last = started;
  for (const at of [...claimedAt, ended]) {
    claimWaitMaxMs = Math.max(claimWaitMaxMs, at - last);
    last = at;
  }
  return { rowsPerS: deleted / seconds, claimsPerS: claimedAt.length / seconds, claimWaitMaxMs };
}

/**
 * Inserts, claims and completes one job at a time on queue `live` until
 * `until` settles, giving up the thread while each job "runs"; returns when
 * each claim returned.
 */
async function claimBeside(store: Store, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  until.finally(() => done = true).catch(() => {});
  const claimedAt: number[] = [];
  for (let i = 0; !done; i++) {
    const now = NOW + i;
    await store.jobsInsert({ jobs: [{ ...newJob(i, now), queue: "live" }], now });
    const { jobs } = await store.jobsClaim({
      queue: "live",
      node: NODE,
      limit: 1,
      now,
      leaseMs: 60_000,
    });
    const job = jobs[0];
    if (!job) throw new Error("prune: the live job was not claimed");
    claimedAt.push(performance.now());
    await new Promise((resolve) => setTimeout(resolve, 0));
    await store.jobsRecord({
      node: NODE,
      now,
      results: [{
        id: job.id,
        fence: job.fence,
        attempt: job.attempt,
        startedAt: now,
        outcome: "completed",
      }],
    });
  }
  return claimedAt;
}
