/**
 * Flow control in the claim, on every backend: `global` across connections
 * (racing claimers never hold more than the limit, the slots come back when
 * jobs end or leases are rescued), `partition` per key with the slots handed
 * round robin, `rate` as a token bucket over the injected clock (global and
 * per key), per-tenant fairness with no limit declared, and limits stored for
 * a queue overriding the file's.
 */

import assert from "node:assert/strict";
import type { FlowLimits } from "../../../src/kernel/flow.ts";
import type { ClaimedJob, NewJob } from "../../../src/kernel/types.ts";
import type { Store } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { completed, insert, LEASE_MS, newJob, T0 } from "./helpers.ts";

/** Claims with `flow` as the node's file declares it. */
async function claimFlow(
  store: Store,
  flow: FlowLimits | null,
  fields: { node?: string; limit?: number; now?: number; queue?: string } = {},
): Promise<ClaimedJob[]> {
  const { jobs } = await store.jobsClaim({
    queue: fields.queue ?? "default",
    node: fields.node ?? "node-a",
    limit: fields.limit ?? 10,
    now: fields.now ?? T0,
    leaseMs: LEASE_MS,
    flow,
  });
  return jobs;
}

/** How many jobs of the default queue are executing, read from the store. */
async function executing(store: Store): Promise<number> {
  return (await store.jobsCount({ queue: "default" }))
    .filter((c) => c.state === "executing").reduce((n, c) => n + c.count, 0);
}

/** `n` jobs of the default queue, each made by `fields(i)`. */
function jobs(n: number, fields: (i: number) => Partial<NewJob> = () => ({})): NewJob[] {
  return Array.from({ length: n }, (_, i) => newJob(fields(i)));
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("global: racing claimers on four connections never hold more than the limit", async ({ store, connect }) => {
    await insert(store, jobs(60));
    const nodes = [store, await connect(), await connect(), await connect()];
    const flow = { global: 5 };
    const held = new Map<number, { job: ClaimedJob; node: string }>();
    let done = 0;
    for (let round = 0; done < 60 && round < 100; round++) {
      const claims = await Promise.all(
        nodes.map(async (s, i) => ({
          node: `node-${i}`,
          jobs: await claimFlow(s, flow, { node: `node-${i}`, limit: 4 }),
        })),
      );
      for (const c of claims) for (const job of c.jobs) held.set(job.id, { job, node: c.node });
      assert.ok(held.size <= 5, `${held.size} executing after round ${round}`);
      assert.equal(await executing(store), held.size);
      // Two of them finish each round, so every claimer keeps racing for slots.
      for (const { job, node } of [...held.values()].slice(0, 2)) {
        const rec = await store.jobsRecord({ node, now: T0, results: [completed(job)] });
        assert.deepEqual(rec.recorded, [job.id]);
        held.delete(job.id);
        done++;
      }
    }
    assert.equal(done, 60);
  });

  test("global: a claim takes only the free slots, and a rescued lease gives its slot back", async ({ store }) => {
    await insert(store, jobs(10));
    const first = await claimFlow(store, { global: 3 }, { node: "dead", limit: 10 });
    assert.equal(first.length, 3);
    assert.deepEqual(await claimFlow(store, { global: 3 }, { node: "live" }), []);
    // The dead node's slots come back with its leases, not before.
    const before = await store.jobsRescue({ now: T0 + LEASE_MS - 1, limit: 10 });
    assert.equal(before.rescued, 0);
    assert.deepEqual(await claimFlow(store, { global: 3 }, { node: "live" }), []);
    const after = await store.jobsRescue({ now: T0 + LEASE_MS + 1, limit: 10 });
    assert.equal(after.rescued, 3);
    const again = await claimFlow(store, { global: 3 }, { node: "live", now: T0 + LEASE_MS + 1 });
    assert.equal(again.length, 3);
  });

  test("partition: at most `limit` per key, and every one of 50 keys of very different sizes starts in the first round", async ({ store }) => {
    // Key k has 1 + k * k jobs (1 to 2402), the biggest inserted first.
    const rows: NewJob[] = [];
    for (let k = 49; k >= 0; k--) {
      for (let i = 0; i < 1 + k * k; i++) {
        rows.push(newJob({ args: JSON.stringify({ account: `a${k}` }) }));
      }
    }
    await insert(store, rows);
    const flow: FlowLimits = { partition: { by: { kind: "args", key: "account" }, limit: 2 } };
    const first = await claimFlow(store, flow, { limit: 50 });
    const keys = first.map((j) => (JSON.parse(j.args) as { account: string }).account);
    assert.equal(new Set(keys).size, 50, "each key's first job in the first round");
    const second = await claimFlow(store, flow, { limit: 500 });
    const all = [...first, ...second].map((j) =>
      (JSON.parse(j.args) as { account: string }).account
    );
    const perKey = new Map<string, number>();
    for (const k of all) perKey.set(k, (perKey.get(k) ?? 0) + 1);
    assert.equal(perKey.get("a0"), 1, "a key with one job runs one");
    for (const [k, n] of perKey) assert.ok(n <= 2, `${k} runs ${n}`);
    assert.equal(all.length, 1 + 49 * 2);
    assert.deepEqual(await claimFlow(store, flow, { limit: 10 }), []);
  });

  test("partition: racing claimers on four connections never run a key past its limit, and share the work", async ({ store, connect }) => {
    // Six tenants of 20 jobs each, at most 2 running per tenant.
    await insert(store, jobs(120, (i) => ({ tenant: `t${i % 6}` })));
    const nodes = [store, await connect(), await connect(), await connect()];
    const flow: FlowLimits = { partition: { by: { kind: "tenant" }, limit: 2 } };
    const held = new Map<number, { job: ClaimedJob; node: string }>();
    const byNode = new Map<string, number>();
    let done = 0;
    for (let round = 0; done < 120 && round < 200; round++) {
      const claims = await Promise.all(
        nodes.map(async (s, i) => ({
          node: `node-${i}`,
          jobs: await claimFlow(s, flow, { node: `node-${i}`, limit: 3 }),
        })),
      );
      for (const c of claims) {
        for (const job of c.jobs) held.set(job.id, { job, node: c.node });
        byNode.set(c.node, (byNode.get(c.node) ?? 0) + c.jobs.length);
      }
      const perKey = new Map<string, number>();
      for (const { job } of held.values()) {
        perKey.set(job.tenant!, (perKey.get(job.tenant!) ?? 0) + 1);
      }
      for (const [key, n] of perKey) assert.ok(n <= 2, `${key} runs ${n} after round ${round}`);
      assert.equal(await executing(store), held.size);
      // Half of them finish each round, so every claimer keeps racing for the keys.
      for (const { job, node } of [...held.values()].slice(0, Math.ceil(held.size / 2))) {
        const rec = await store.jobsRecord({ node, now: T0, results: [completed(job)] });
        assert.deepEqual(rec.recorded, [job.id]);
        held.delete(job.id);
        done++;
      }
    }
    assert.equal(done, 120);
    // No claimer was shut out by the others: each took some.
    for (const [node, n] of byNode) assert.ok(n > 0, `${node} took none`);
  });

  test("partition by meta and by tenant: the key is read where `by` says", async ({ store }) => {
    await insert(store, [
      ...jobs(3, () => ({ meta: JSON.stringify({ region: "eu" }) })),
      ...jobs(3, () => ({ meta: JSON.stringify({ region: "us" }) })),
    ]);
    const byMeta: FlowLimits = { partition: { by: { kind: "meta", key: "region" }, limit: 1 } };
    const taken = await claimFlow(store, byMeta, { limit: 10 });
    assert.deepEqual(taken.map((j) => JSON.parse(j.meta).region).sort(), ["eu", "us"]);

    await insert(store, [
      ...jobs(3, () => ({ queue: "t", tenant: "acme" })),
      ...jobs(3, () => ({ queue: "t", tenant: "globex" })),
    ]);
    const byTenant: FlowLimits = { partition: { by: { kind: "tenant" }, limit: 2 } };
    const tenants = await claimFlow(store, byTenant, { limit: 10, queue: "t" });
    assert.deepEqual(tenants.map((j) => j.tenant).sort(), ["acme", "acme", "globex", "globex"]);
  });

  test("fairness by default: with 10,000 due jobs of one tenant, the other tenant's 10 start in the first round", async ({ store }) => {
    await insert(store, jobs(10_000, () => ({ tenant: "big" })));
    await insert(store, jobs(10, () => ({ tenant: "small" })));
    // No limit declared: the plain claim, fair because tenants' jobs wait.
    const { jobs: first } = await store.jobsClaim({
      queue: "default",
      node: "node-a",
      limit: 20,
      now: T0,
      leaseMs: LEASE_MS,
    });
    assert.equal(first.length, 20);
    assert.equal(first.filter((j) => j.tenant === "small").length, 10);
  });

  test("the round robin goes on where the last claim stopped: 30 tenants are served once each by 6 claims of 5", async ({ store }) => {
    const names = Array.from({ length: 30 }, (_, i) => `t${String(i).padStart(2, "0")}`);
    await insert(store, names.flatMap((tenant) => jobs(3, () => ({ tenant }))));
    const served: string[] = [];
    for (let round = 0; round < 6; round++) {
      const got = await claimFlow(store, null, { limit: 5 });
      assert.equal(got.length, 5);
      served.push(...got.map((j) => j.tenant!));
      // Each claim's jobs end before the next, so only the turn decides.
      await store.jobsRecord({ node: "node-a", now: T0, results: got.map((j) => completed(j)) });
    }
    assert.deepEqual([...served].sort(), names);
    // The next turn starts from the first tenant again.
    const again = await claimFlow(store, null, { limit: 5 });
    assert.deepEqual(again.map((j) => j.tenant), ["t00", "t01", "t02", "t03", "t04"]);
  });

  test("rate: starts per minute stay within limit + burst over five minutes of the clock", async ({ store }) => {
    await insert(store, jobs(2_000));
    const flow: FlowLimits = { rate: { limit: 100, perMs: 60_000, burst: 10 } };
    const perMinute = [0, 0, 0, 0, 0];
    // A claim every 100 ms for five minutes, each asking for 50.
    for (let t = 0; t < 5 * 60_000; t += 100) {
      const got = await claimFlow(store, flow, { now: T0 + t, limit: 50 });
      perMinute[Math.floor(t / 60_000)]! += got.length;
    }
    for (const n of perMinute) assert.ok(n <= 110 && n >= 90, `${n} starts in a minute`);
    const total = perMinute.reduce((a, b) => a + b, 0);
    assert.ok(total <= 5 * 100 + 10, `${total} starts in five minutes`);
  });

  test("rate per partition: each key has its own bucket", async ({ store }) => {
    await insert(store, [
      ...jobs(50, () => ({ args: JSON.stringify({ account: "a" }) })),
      ...jobs(50, () => ({ args: JSON.stringify({ account: "b" }) })),
    ]);
    const flow: FlowLimits = {
      partition: {
        by: { kind: "args", key: "account" },
        rate: { limit: 6, perMs: 60_000, burst: 3 },
      },
    };
    const first = await claimFlow(store, flow, { limit: 50 });
    assert.equal(first.length, 6, "a burst of 3 per key");
    assert.deepEqual(await claimFlow(store, flow, { limit: 50, now: T0 + 1000 }), []);
    // Ten seconds refill one token per key (6 a minute).
    const later = await claimFlow(store, flow, { limit: 50, now: T0 + 10_000 });
    assert.equal(later.length, 2);
  });

  test("stored limits override the file's and apply at the next claim of every connection", async ({ store, connect }) => {
    const other = await connect();
    await insert(store, jobs(20));
    assert.equal((await claimFlow(store, { global: 10 }, { limit: 2 })).length, 2);
    await store.queueLimitsSet({
      name: "default",
      limits: { global: 3, partitionLimit: null, rate: null },
      now: T0,
    });
    // The other node's file declares nothing: the stored limit holds there too.
    assert.equal((await claimFlow(other, null, { node: "node-b", limit: 10 })).length, 1);
    assert.deepEqual(await claimFlow(store, { global: 10 }, { limit: 10 }), []);
    assert.equal(await executing(store), 3);
    assert.deepEqual(
      (await store.queueLimitsList()).map((r) => [r.name, r.global]),
      [["default", 3]],
    );
    await store.queueLimitsSet({
      name: "default",
      limits: { global: null, partitionLimit: null, rate: null },
      now: T0,
    });
    assert.deepEqual(await store.queueLimitsList(), []);
    assert.equal((await claimFlow(other, null, { node: "node-b", limit: 4 })).length, 4);
  });
}
