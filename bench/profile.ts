/**
 * Where a job's time goes while a runtime drains a backlog: the process
 * phase once (N no-op jobs, concurrency 10, this process), with every store
 * call timed at the seam and the CPU of this process set against the
 * machine's.
 *
 * ```sh
 * BENCH_DB=postgres://postgres@127.0.0.1:5432/test deno run -A bench/profile.ts
 * deno run -A bench/profile.ts                      # the same on a SQLite file
 * deno run -A --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile.ts   # and where the JS goes
 * ```
 *
 * It prints, per store method, the calls, the total and mean time awaited
 * and (for `jobsClaim`) the jobs claimed and results written per call;
 * then the wall time, this process's CPU (user + system) and the rest of
 * the machine's busy CPU in the same interval (on a machine with a local
 * PostgreSQL and nothing else running: the server's share). The producer
 * awaits one `jobsClaim` at a time, so its time awaited over the wall time
 * is the share of the drain spent waiting for the store.
 *
 * @module
 */

import process from "node:process";
import { defineWorker, Jobs, openJobs, silentLogger } from "../src/mod.ts";
import type { Store } from "../src/store.ts";
import { completedOf, CONCURRENCY, NOOP } from "./shared.ts";
import { benchDb, storeKind, withFreshStore } from "./stores.ts";

const N = Number(Deno.env.get("N") ?? 20_000);
const CHUNK = 1000;
const DB = benchDb();

interface Tally {
  calls: number;
  ms: number;
  asked: number;
  claimed: number;
  results: number;
}

const tallies = new Map<string, Tally>();

/** `store` with every method's time (until its promise settles) added to `tallies`. */
function timed(store: Store): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function" || typeof key !== "string") return value;
      return (...args: unknown[]) => {
        const began = performance.now();
        const out = value.apply(target, args);
        if (!(out instanceof Promise)) return out;
        let tally = tallies.get(key);
        if (!tally) tallies.set(key, tally = { calls: 0, ms: 0, asked: 0, claimed: 0, results: 0 });
        const t = tally;
        return out.then((result) => {
          t.calls++;
          t.ms += performance.now() - began;
          if (key === "jobsClaim") {
            const params = args[0] as { limit: number; results?: unknown[] };
            t.asked += params.limit;
            t.results += params.results?.length ?? 0;
            t.claimed += (result as { jobs: unknown[] }).jobs.length;
          }
          return result;
        });
      };
    },
  });
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
async function machineJiffies(): Promise<{ busy: number; total: number }> {
  const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0]!;
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3]! + (fields[4] ?? 0);
  const total = fields.reduce((s, v) => s + v, 0);
  return { busy: total - idle, total };
}

await withFreshStore(DB, async (location) => {
  let handled = 0;
  const noop = defineWorker<{ i: number }>({ name: NOOP, perform: () => void handled++ });
  const opened = await openJobs(location, { workers: [noop], logger: silentLogger });
  try {
    for (let off = 0; off < N; off += CHUNK) {
      const entries = [];
      for (let i = off; i < Math.min(N, off + CHUNK); i++) {
        entries.push({ worker: NOOP, args: { i } });
      }
      await opened.enqueueMany(entries);
    }
    // The same store behind a timing proxy: the runtime's calls are what is tallied.
    const jobs = new Jobs({
      store: timed(opened.store),
      clock: opened.clock,
      logger: silentLogger,
      workers: [noop],
    });
    const cpu0 = process.cpuUsage();
    const machine0 = await machineJiffies();
    const t0 = performance.now();
    const runtime = await jobs.start({ queues: { default: CONCURRENCY } });
    while (handled < N) await new Promise((resolve) => setTimeout(resolve, 5));
    const drainedMs = performance.now() - t0;
    await runtime.stop();
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const machine1 = await machineJiffies();
    const done = completedOf(await opened.store.jobsCount({ state: "completed" }));
    if (done !== N) throw new Error(`profile: ${done} completed, expected ${N}`);

    const hz = 100;
    const ownMs = (cpu.user + cpu.system) / 1000;
    const busyMs = ((machine1.busy - machine0.busy) / hz) * 1000;
    console.log(`store ${storeKind(DB)}, ${N} jobs, concurrency ${CONCURRENCY}`);
    console.log(
      `drained in ${drainedMs.toFixed(0)} ms (${
        Math.round(N / drainedMs * 1000)
      } jobs/s), stopped at ${wallMs.toFixed(0)} ms`,
    );
    console.log(
      `cpu: this process ${ownMs.toFixed(0)} ms (user ${(cpu.user / 1000).toFixed(0)}, ` +
        `sys ${(cpu.system / 1000).toFixed(0)}), rest of the machine ${
          (busyMs - ownMs).toFixed(0)
        } ms`,
    );
    console.log(
      `per job: ${(wallMs / N * 1000).toFixed(1)} us wall, ${
        (ownMs / N * 1000).toFixed(1)
      } us here, ${((busyMs - ownMs) / N * 1000).toFixed(1)} us elsewhere`,
    );
    console.log(
      "method               calls   total ms  mean ms  share of wall  asked/call  claimed/call  results/call",
    );
    for (const [name, t] of [...tallies].sort((a, b) => b[1].ms - a[1].ms)) {
      console.log(
        [
          name.padEnd(18),
          String(t.calls).padStart(7),
          t.ms.toFixed(0).padStart(10),
          (t.ms / t.calls).toFixed(2).padStart(8),
          `${(t.ms / wallMs * 100).toFixed(0)}%`.padStart(14),
          (name === "jobsClaim" ? (t.asked / t.calls).toFixed(0) : "").padStart(11),
          (name === "jobsClaim" ? (t.claimed / t.calls).toFixed(0) : "").padStart(13),
          (name === "jobsClaim" ? (t.results / t.calls).toFixed(0) : "").padStart(13),
        ].join(" "),
      );
    }
  } finally {
    await opened.close();
  }
});
