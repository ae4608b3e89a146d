/**
 * The limited claim makes the same decisions on every backend. SQLite runs
 * the shared lifecycle's generator (claimFlow, decideFlow); PostgreSQL runs
 * most limited claims as one function (`jobs_flow_claim`) that writes the
 * same decision in SQL. Seeded random queues (tenants, args keys,
 * priorities, due times, some not due) are claimed by the same sequence of
 * claims on both, each carrying the completions of some jobs it holds, under
 * every kind of limit and none, with limits an operator stores halfway; the
 * jobs each claim hands out, in their
 * order, and whether a limit held jobs back must be the same.
 */

import assert from "node:assert/strict";
import type { FlowLimits, StoredLimits } from "../../src/kernel/flow.ts";
import type { ClaimedJob, NewJob } from "../../src/kernel/types.ts";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS, type Harness } from "../support/backends.ts";
import { seeded } from "../support/seeded.ts";
import { completed, insert, LEASE_MS, newJob, T0 } from "./conformance/helpers.ts";

const FLOWS: (FlowLimits | null)[] = [
  null,
  { global: 4 },
  { partition: { by: { kind: "tenant" }, limit: 1 } },
  { global: 5, partition: { by: { kind: "tenant" }, limit: 2 } },
  { partition: { by: { kind: "args", key: "account" }, limit: 1 } },
  { partition: { by: { kind: "meta", key: "region" }, limit: 2 } },
];

const STORED: (StoredLimits | null)[] = [
  null,
  { global: 3, partitionLimit: 1, rate: null },
  { global: null, partitionLimit: null, rate: { limit: 4, perMs: 60_000, burst: 2 } },
];

/** One queue of `seed`: every job's `args.i` is its index, to match jobs across backends. */
export function scenario(seed: number): { jobs: NewJob[]; flow: FlowLimits | null } {
  const random = seeded(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
  const tenants = [null, "t1", "t2", "t3", "t4", "t5", "t6", "t7"];
  const n = 40 + Math.floor(random() * 80);
  const jobs = Array.from({ length: n }, (_, i) => {
    // A skewed spread: the first tenants hold most of the jobs.
    const tenant = tenants[Math.floor(random() * random() * tenants.length)]!;
    return newJob({
      tenant,
      priority: Math.floor(random() * 3),
      scheduledAt: random() < 0.1 ? T0 + 60_000 : T0 - Math.floor(random() * 1000),
      args: JSON.stringify({ i, account: pick(["a", "b", "c", "d", "e"]) }),
      meta: JSON.stringify({ region: pick(["eu", "us", "ap"]) }),
    });
  });
  return { jobs, flow: FLOWS[seed % FLOWS.length]! };
}

/** Each claim's jobs (their `args.i`, in the order handed out) and `held`, for `seed` on `store`. */
async function run(store: Store, seed: number): Promise<string[]> {
  const { jobs, flow } = scenario(seed);
  await insert(store, jobs);
  const random = seeded(seed * 7 + 1);
  const held: ClaimedJob[] = [];
  const seen: string[] = [];
  const index = (j: ClaimedJob) => (JSON.parse(j.args) as { i: number }).i;
  for (let step = 0; step < 25; step++) {
    // Halfway, an operator stores a limit over the file's (a stored rate
    // takes PostgreSQL's whole limited claim, buckets and all).
    const stored = STORED[Math.floor(seed / FLOWS.length) % STORED.length] ?? null;
    if (step === 12 && stored !== null) {
      await store.queueLimitsSet({ name: "default", limits: stored, now: T0 + step });
    }
    // Some of the jobs held end, their completions carried by the claim.
    const ending = held.filter(() => random() < 0.5);
    const results = ending.map((j) => completed(j));
    for (const j of ending) held.splice(held.indexOf(j), 1);
    const limit = 1 + Math.floor(random() * 6);
    const claim = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit,
      now: T0 + step,
      leaseMs: LEASE_MS,
      results,
      flow,
    });
    assert.deepEqual(claim.report.recorded.sort(), results.map((r) => r.id).sort());
    held.push(...claim.jobs);
    seen.push(`${limit}: ${claim.jobs.map(index).join(" ")}${claim.held ? " (held)" : ""}`);
  }
  return seen;
}

Deno.test("flow: a limited claim decides alike on every backend, over seeded random queues", async () => {
  const [sqlite, postgres] = BACKENDS;
  assert.equal(sqlite!.name, "sqlite");
  assert.equal(postgres!.name, "postgres");
  for (let seed = 1; seed <= 36; seed++) {
    const runs: string[][] = [];
    for (const backend of [sqlite!, postgres!]) {
      const h: Harness = await backend.open(T0);
      try {
        runs.push(await run(h.store, seed));
      } finally {
        await h.close();
      }
    }
    const flow = JSON.stringify(scenario(seed).flow);
    assert.deepEqual(runs[1], runs[0], `seed ${seed}, flow ${flow}: postgres differs from sqlite`);
  }
});
