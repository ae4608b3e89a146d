/**
 * Flow control across processes, on each store: three `jobs daemon`
 * processes serve a queue with `concurrency: 5` each and `global: 5`, and
 * run 2,000 jobs. The number executing, sampled from the store every 10 ms
 * by this process, never exceeds 5 (and reaches it), and the run completes.
 * Mid-run one daemon is killed with SIGKILL while it holds jobs: its slots
 * stay taken until its leases expire (the samples right after the kill
 * still count them) and its jobs run again only after that. Later the limit
 * is lowered with `jobs queues set work --global 3` while jobs run: from a
 * second after, no sample counts more than 3.
 */

import assert from "node:assert/strict";
import { buildJob } from "../../src/kernel/enqueue.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { runJobs } from "../support/cli.ts";
import { daemonDir, type DaemonProcess, startDaemon } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;
const JOBS = 2_000;
const GLOBAL = 5;
const LEASE_MS = 3_000;
const NODES = ["a", "b", "c"] as const;

const WORKERS = `import { defineWorker } from "${MOD}";
export const step = defineWorker<{ i: number }>({
  name: "step",
  queue: "work",
  perform: () => new Promise((resolve) => setTimeout(resolve, 10)),
});
`;

const SCHEDULES = `version: 1
workers: ./workers.ts
queues:
  work: { concurrency: 5, global: ${GLOBAL} }
`;

/** One sample: the jobs executing at one instant, with who holds each. */
interface Sample {
  at: number;
  holders: string[];
}

/** Samples the queue's executing jobs every 10 ms until `stop()`; the samples so far. */
function sampler(store: Store): { samples: Sample[]; stop(): Promise<void> } {
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const executing = await store.jobsList({ queue: "work", state: "executing" });
      samples.push({ at: Date.now(), holders: executing.map((j) => j.attemptedBy ?? "?") });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

async function completed(store: Store): Promise<number> {
  return (await store.jobsCount({ queue: "work", state: "completed" }))
    .reduce((n, c) => n + c.count, 0);
}

async function runFlow(db: string, dir: { path: string; config: string }): Promise<void> {
  await Deno.writeTextFile(`${dir.path}/workers.ts`, WORKERS);
  await Deno.writeTextFile(dir.config, SCHEDULES);
  const daemons = new Map<string, DaemonProcess>();
  let store: Store | undefined;
  let sampling: ReturnType<typeof sampler> | undefined;
  try {
    for (const node of NODES) {
      daemons.set(
        node,
        await startDaemon({
          db,
          config: dir.config,
          node,
          args: ["--lease", String(LEASE_MS)],
        }),
      );
    }
    store = (await openStore(db, { mode: "write" })).store;
    sampling = sampler(store);
    const now = Date.now();
    for (let from = 0; from < JOBS; from += 500) {
      const jobs = Array.from(
        { length: 500 },
        (_, i) => buildJob("step", { i: from + i }, { queue: "work" }, now),
      );
      await store.jobsInsert({ jobs, now });
    }

    // Mid-run, SIGKILL a daemon while it holds jobs.
    const held = await waitUntil("a daemon holding jobs mid-run", async () => {
      if (await completed(store!) < JOBS / 4) return undefined;
      const executing = await store!.jobsList({ queue: "work", state: "executing" });
      const node = executing.find((j) => j.attemptedBy !== null)?.attemptedBy;
      return node ? { node, executing } : undefined;
    }, { timeoutMs: 60_000, intervalMs: 5 });
    const victim = held.node;
    await daemons.get(victim)!.stop("SIGKILL");
    daemons.delete(victim);
    const killedAt = Date.now();
    const orphans = (await store.jobsList({ queue: "work", state: "executing" }))
      .filter((j) => j.attemptedBy === victim);
    assert.ok(orphans.length > 0, "the killed daemon held jobs");

    // Lowered while jobs run: every node applies it from its next claim.
    await waitUntil("half the jobs completed", async () => {
      return await completed(store!) >= JOBS / 2 ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 20 });
    const lowered = await runJobs(
      ["queues", "set", "work", "--global", "3", "--db", db, "--config", dir.config],
      { now: Date.now() },
    );
    assert.equal(lowered.code, 0, lowered.err);
    const loweredAt = Date.now();

    await waitUntil(`${JOBS} jobs completed`, async () => {
      return await completed(store!) === JOBS ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    await sampling.stop();
    const samples = sampling.samples;

    const most = Math.max(...samples.map((s) => s.holders.length));
    assert.ok(samples.length >= 100, `${samples.length} samples`);
    assert.ok(most <= GLOBAL, `${most} executing at once, above global ${GLOBAL}`);
    assert.equal(most, GLOBAL, "the limit was reached: it is what held the run back");
    const serving = new Set(samples.flatMap((s) => s.holders));
    assert.ok(serving.size >= 2, `jobs ran on ${[...serving].join(", ")}`);

    const afterLowered = samples.filter((s) => s.at >= loweredAt + 1000);
    assert.ok(afterLowered.length > 0, "samples a second after the limit was lowered");
    const mostLowered = Math.max(...afterLowered.map((s) => s.holders.length));
    assert.ok(mostLowered <= 3, `${mostLowered} executing a second after global 3 was stored`);
    // The dead node's slots stayed taken after the kill, until its leases ran out.
    const lease = Math.min(...orphans.map((j) => j.leaseExpiresAt!));
    const after = samples.filter((s) => s.at > killedAt && s.at < lease - 500);
    assert.ok(after.length > 0, "samples between the kill and the lease's end");
    for (const s of after) {
      assert.ok(s.holders.includes(victim), `at ${s.at} the dead node's slots were free`);
    }
    // And its jobs ran again only after their leases.
    for (const orphan of orphans) {
      const attempts = await store.attemptsList({ jobId: orphan.id });
      const rerun = attempts.find((a) => a.node !== victim && a.outcome === "completed");
      assert.ok(rerun, `job ${orphan.id} ran again`);
      assert.ok(
        rerun.startedAt >= orphan.leaseExpiresAt!,
        `job ${orphan.id} ran again at ${rerun.startedAt}, before its lease ended at ${orphan.leaseExpiresAt}`,
      );
    }
    for (const [node, daemon] of daemons) {
      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, `${node}:\n${daemon.log()}`);
    }
    daemons.clear();
  } finally {
    await sampling?.stop();
    for (const daemon of daemons.values()) await daemon[Symbol.asyncDispose]();
    await store?.close();
  }
}

Deno.test({
  name: "sqlite: three daemons with global: 5 never run more than 5 of 2,000 jobs at once; " +
    "a SIGKILLed one's slots come back with its leases",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    await runFlow(dir.db, dir);
  },
});

Deno.test({
  name: "postgres: three daemons with global: 5 never run more than 5 of 2,000 jobs at once; " +
    "a SIGKILLed one's slots come back with its leases",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    await using pg = postgresLocation();
    await runFlow(pg.url, dir);
  },
});
