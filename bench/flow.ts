/**
 * The `flow` phase of the benchmark: what flow control costs. FLOW_N jobs
 * that each wait FLOW_JOB_MS (a call to another service, the work limits
 * are for), spread over 100 accounts, drained by FLOW_RUNTIMES runtimes in
 * this process (each its own connection, CONCURRENCY slots), each way on a
 * fresh store:
 *
 * - `none`: no limit, no tenants: the plain claim;
 * - `global`: `global` equal to the total concurrency (every runtime's
 *   slots), so the limit binds exactly where the runtimes already stop;
 * - `partition`: the accounts are the jobs' tenants, `partition: { by:
 *   tenant, limit: 1 }`: 100 partitions, each started at most once at a time;
 * - `fair`: the same tenants, no limit: the per-tenant round robin every
 *   queue holding tenants' jobs gets;
 * - `partition_args`: `partition: { by: args.account, limit: 1 }`: a key
 *   read from the args has no index, so each claim reads the queue's
 *   waiting jobs.
 *
 * ```sh
 * PHASES=flow deno task bench
 * BENCH_DB=postgres://postgres@127.0.0.1:5432/test PHASES=flow deno task bench
 * PHASES=flow FLOW_JOB_MS=0 deno task bench        # no-op jobs: the claim's cost alone
 * ```
 *
 * Every way is measured against `none` of the same pass (the order of the
 * drains turns with each pass, so a drift of the machine between them
 * cancels out over the runs): `flow_global_vs_none`,
 * `flow_partition_vs_none` (by tenant), `flow_fair_vs_none` and
 * `flow_partition_args_vs_none`.
 *
 * @module
 */

import type { FlowLimits } from "../src/kernel/flow.ts";
import { defineWorker, type Jobs, openJobs, silentLogger } from "../src/mod.ts";
import { completedOf, CONCURRENCY, NOOP } from "./shared.ts";
import { withFreshStore } from "./stores.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface FlowConfig {
  /** Jobs drained each way. */
  jobs: number;
  /** Runtimes (connections) draining them, CONCURRENCY slots each. */
  runtimes: number;
  /** How long each job takes, in ms (a timer: work that waits, as limited work does). */
  jobMs: number;
  /** Give up on a drain after this many ms. */
  timeoutMs: number;
}

/** What one pass measured: jobs/s each way. */
export type FlowTimes = Record<Way, number>;

const ACCOUNTS = 100;
const ENQUEUE_CHUNK = 1000;
const POLL_MS = 5;
/** The ways the phase drains the same jobs. */
export const WAYS = ["none", "global", "partition", "fair", "partition_args"] as const;
type Way = typeof WAYS[number];

/** One pass: the three drains, in an order that turns with `pass`. */
export async function phaseFlow(
  db: string | null,
  cfg: FlowConfig,
  pass: number,
  log: (message: string) => void,
): Promise<FlowTimes> {
  const order = WAYS.map((_, i) => WAYS[(i + pass) % WAYS.length]!);
  const perS = {} as FlowTimes;
  for (const way of order) {
    perS[way] = await withFreshStore(db, (location) => drain(location, cfg, way));
    log(`  flow ${way}: ${Math.round(perS[way]).toLocaleString("en-US")} jobs/s`);
  }
  return perS;
}

/** The limits of `way`. */
function limitsOf(way: Way, cfg: FlowConfig): Record<string, FlowLimits> {
  switch (way) {
    case "none":
    case "fair":
      return {};
    case "global":
      return { default: { global: CONCURRENCY * cfg.runtimes } };
    case "partition":
      return { default: { partition: { by: { kind: "tenant" }, limit: 1 } } };
    case "partition_args":
      return { default: { partition: { by: { kind: "args", key: "account" }, limit: 1 } } };
  }
}

/** Whether the jobs of `way` belong to tenants (their accounts). */
const tenanted = (way: Way) => way === "partition" || way === "fair";

/** jobs/s of `cfg.jobs` jobs drained `way`, from the runtimes' start until the store reports them done. */
async function drain(location: string, cfg: FlowConfig, way: Way): Promise<number> {
  let handled = 0;
  const noop = defineWorker<{ i: number; account: string }>({
    name: NOOP,
    perform: () =>
      cfg.jobMs > 0
        ? new Promise<void>((resolve) => setTimeout(() => resolve(void handled++), cfg.jobMs))
        : void handled++,
  });
  const all: Jobs[] = [];
  try {
    for (let i = 0; i < cfg.runtimes; i++) {
      all.push(await openJobs(location, { workers: [noop], logger: silentLogger }));
    }
    const jobs = all[0]!;
    for (let off = 0; off < cfg.jobs; off += ENQUEUE_CHUNK) {
      const entries = [];
      for (let i = off; i < Math.min(cfg.jobs, off + ENQUEUE_CHUNK); i++) {
        const account = `a${i % ACCOUNTS}`;
        entries.push({
          worker: NOOP,
          args: { i, account },
          options: tenanted(way) ? { tenant: account } : {},
        });
      }
      await jobs.enqueueMany(entries);
    }
    const flow = limitsOf(way, cfg);
    const t0 = performance.now();
    const runtimes = await Promise.all(
      all.map((j) => j.start({ queues: { default: CONCURRENCY }, flow })),
    );
    const deadline = t0 + cfg.timeoutMs;
    for (;;) {
      if (
        handled >= cfg.jobs &&
        completedOf(await jobs.store.jobsCount({ state: "completed" })) >= cfg.jobs
      ) break;
      if (performance.now() > deadline) {
        throw new Error(`flow ${way}: timeout after ${cfg.timeoutMs} ms (handled ${handled})`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const seconds = (performance.now() - t0) / 1000;
    await Promise.all(runtimes.map((r) => r.stop()));
    return cfg.jobs / seconds;
  } finally {
    for (const j of all) await j.close();
  }
}
