/**
 * When a limited producer claims ahead of its free slots, on every backend.
 * Prefetch hides the claim's round trip; under a limit it also holds a share
 * of the limit while the job waits in the buffer. A partition limit with
 * keys to spare loses nothing by it, so a producer whose last claim held
 * nothing back prefetches; under `global` (declared by the file, or only
 * stored by an operator, which the claim reports) it asks for its free
 * slots only, so no node holds global slots another node could run.
 */

import assert from "node:assert/strict";
import type { FlowLimits } from "../../src/kernel/flow.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { backendJobs, BACKENDS } from "../support/backends.ts";

/** Records the `limit` of every claim that asks for jobs. */
function recordAsks(store: Store): number[] {
  const asks: number[] = [];
  const claim = store.jobsClaim.bind(store);
  store.jobsClaim = (params) => {
    if (params.limit > 0) asks.push(params.limit);
    return claim(params);
  };
  return asks;
}

/**
 * Runs 30 quick jobs on one slot (so the producer learns they take no
 * time), then one that holds the slot while 20 more quick ones wait, then
 * lets it go; every job has a tenant of its own. With `ahead`, waits until
 * a quick job is claimed while the slot is held. Returns the limits asked.
 */
async function run(
  backend: typeof BACKENDS[number],
  flow: FlowLimits,
  options: { ahead?: boolean; stored?: { global: number } } = {},
): Promise<number[]> {
  const { ahead = false, stored } = options;
  let release = () => {};
  let holding = false;
  const quick = defineWorker({ name: "quick", perform: () => {} });
  const hold = defineWorker({
    name: "hold",
    perform: () =>
      new Promise<void>((resolve) => {
        holding = true;
        release = resolve;
      }),
  });
  await using t = await backendJobs(backend, [quick, hold]);
  if (stored) {
    await t.store.queueLimitsSet({
      name: "default",
      limits: { global: stored.global, partitionLimit: null, rate: null },
      now: t.clock.now(),
    });
  }
  const asks = recordAsks(t.store);
  const runtime = await t.jobs.start({
    queues: { default: 1 },
    node: "n1",
    flow: { default: flow },
  });
  const completed = async () =>
    (await t.store.jobsCount({ state: "completed" })).reduce((n, c) => n + c.count, 0);
  await t.jobs.enqueueMany(
    Array.from(
      { length: 30 },
      (_, i) => ({ worker: quick, args: {}, options: { tenant: `a${i}` } }),
    ),
  );
  await waitUntil("the quick jobs completed", async () => (await completed()) === 30);
  await t.jobs.enqueue(hold, {}, { tenant: "h" });
  await waitUntil("the holding job started", () => holding);
  const rest = await t.jobs.enqueueMany(
    Array.from(
      { length: 20 },
      (_, i) => ({ worker: quick, args: {}, options: { tenant: `b${i}` } }),
    ),
  );
  if (ahead) {
    // The slot is held: a quick job executing now was claimed ahead of it.
    const ids = rest.map((r) => r.id);
    await waitUntil(
      "a quick job claimed while the slot is held",
      async () => (await t.store.jobsList({ ids })).some((j) => j.state === "executing"),
    );
  }
  release();
  await waitUntil("every job completed", async () => (await completed()) === 51);
  await runtime.stop({ grace: 1000 });
  return asks;
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: under a partition limit with keys to spare, a producer claims ahead of its free slots`, async () => {
    const asks = await run(backend, { partition: { by: { kind: "tenant" }, limit: 1 } }, {
      ahead: true,
    });
    assert.ok(Math.max(...asks) > 1, `asked ${asks.join(",")}`);
  });

  Deno.test(`${backend.name}: under global, declared or only stored, a producer asks for its free slots only`, async () => {
    const declared = await run(backend, { global: 5 });
    assert.deepEqual([...new Set(declared)], [1], `asked ${declared.join(",")}`);
    const stored = await run(backend, { partition: { by: { kind: "tenant" }, limit: 1 } }, {
      stored: { global: 5 },
    });
    assert.deepEqual([...new Set(stored)], [1], `asked ${stored.join(",")}`);
  });
}
