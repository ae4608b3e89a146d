/**
 * A benchmark child process, driven by `bench.ts` over stdin/stdout, one
 * command per line. It prints `ready` once the store (a SQLite file or a
 * PostgreSQL URL with its `?schema=`) is open.
 *
 * ```sh
 * deno run -A bench/child.ts worker LOCATION          # "go" starts a runtime, "stop" stops it
 * deno run -A bench/child.ts enqueue LOCATION N GAP   # "ping" answers the clock, "go" enqueues
 * ```
 *
 * `worker` first warms up on a scratch store of its own (see
 * {@linkcode WARMUP_JOBS}), then prints `ready`; it prints `ran N` as its
 * runtime runs jobs (every 5 ms while the count moves, so the parent need
 * not query the store until the end), and
 * answers `stop` with `{"ran": n, "ids": [...], "cpuMs": ms}`: the jobs its
 * runtime ran, so the parent can check that no job ran twice, and its user
 * and system CPU time since "go". `enqueue`
 * enqueues N jobs GAP ms apart and prints `{"stamps": [...]}`, the epoch ms
 * (see {@linkcode epochNow}) just before each enqueue call.
 *
 * @module
 */

import { cpuUsage } from "node:process";
import { defineWorker, type Jobs, openJobs, type Runtime, silentLogger } from "../src/mod.ts";
import { CONCURRENCY, epochNow, NOOP, readLines, WARMUP_JOBS, withWarmupStore } from "./shared.ts";

const [mode, location, ...rest] = Deno.args;
if (!location || (mode !== "worker" && mode !== "enqueue")) {
  console.error(`usage: child.ts worker|enqueue LOCATION [N GAP_MS], got "${Deno.args.join(" ")}"`);
  Deno.exit(2);
}

const ids: number[] = [];
const noop = defineWorker<{ i: number }>({
  name: NOOP,
  perform: (_args, ctx) => {
    ids.push(ctx.job.id);
  },
});
if (mode === "worker") await warmUp();
const jobs = await openJobs(location, { workers: [noop], logger: silentLogger });
console.log("ready");

if (mode === "worker") await runWorker(jobs);
else await runEnqueue(jobs, Number(rest[0] ?? 200), Number(rest[1] ?? 20));
await jobs.close();
Deno.exit(0);

/**
 * Runs WARMUP_JOBS no-op jobs through a runtime on a scratch SQLite file,
 * so the phase times a runtime whose code is compiled, as a daemon's is
 * after its first seconds, not the process's first claims.
 */
async function warmUp(): Promise<void> {
  let ran = 0;
  const warm = defineWorker<{ i: number }>({ name: NOOP, perform: () => void ran++ });
  await withWarmupStore([warm], async (scratch) => {
    const runtime = await scratch.start({ queues: { default: CONCURRENCY } });
    const deadline = performance.now() + 30_000;
    while (ran < WARMUP_JOBS) {
      if (performance.now() > deadline) throw new Error(`warm-up: ${ran}/${WARMUP_JOBS} ran`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await runtime.stop();
  });
}

async function runWorker(jobs: Jobs): Promise<void> {
  let runtime: Runtime | null = null;
  let cpuAtGo = cpuUsage();
  let reported = 0;
  const progress = setInterval(() => {
    if (ids.length === reported) return;
    reported = ids.length;
    console.log(`ran ${reported}`);
  }, 5);
  try {
    for await (const line of readLines(Deno.stdin.readable)) {
      if (line === "go") {
        cpuAtGo = cpuUsage();
        runtime = await jobs.start({ queues: { default: CONCURRENCY } });
      } else if (line === "stop") {
        await runtime?.stop();
        const cpu = cpuUsage(cpuAtGo);
        const cpuMs = (cpu.user + cpu.system) / 1000;
        console.log(JSON.stringify({ ran: ids.length, ids, cpuMs }));
        return;
      }
    }
  } finally {
    clearInterval(progress);
  }
}

async function runEnqueue(jobs: Jobs, n: number, gapMs: number): Promise<void> {
  for await (const line of readLines(Deno.stdin.readable)) {
    if (line === "ping") {
      console.log(`pong ${epochNow()}`);
    } else if (line === "go") {
      const stamps: number[] = [];
      const base = performance.now();
      for (let i = 0; i < n; i++) {
        const wait = base + i * gapMs - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        stamps.push(epochNow());
        await jobs.enqueue(noop, { i });
      }
      console.log(JSON.stringify({ stamps }));
      return;
    }
  }
}
