/**
 * What the benchmark parent (`bench.ts`) and its child processes (`child.ts`)
 * share: the no-op worker's name, a clock both processes agree on, and line
 * reading over a byte stream.
 *
 * @module
 */

import { type Jobs, openJobs, silentLogger, type Worker } from "../src/mod.ts";

/** Name of the no-op worker every phase enqueues and runs. */
export const NOOP = "noop";

/** Concurrency of every runtime in the benchmark. */
export const CONCURRENCY = 10;

/**
 * Jobs a benchmark child runs on a scratch store before it says `ready`
 * (the runtime children and the bare loops alike), so a phase across
 * processes measures compiled code rather than each process's cold start.
 */
export const WARMUP_JOBS = 5000;

/**
 * Runs `use` on a scratch SQLite store of its own holding WARMUP_JOBS
 * available no-op jobs (`workers` registered, to run them), then closes and
 * removes it: the warm-up of a benchmark child.
 */
export async function withWarmupStore(
  // deno-lint-ignore no-explicit-any
  workers: Worker<any>[],
  use: (jobs: Jobs, path: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-bench-warmup-" });
  try {
    const path = `${dir}/warmup.db`;
    const jobs = await openJobs(path, { workers, logger: silentLogger });
    try {
      await jobs.enqueueMany(
        Array.from({ length: WARMUP_JOBS }, (_, i) => ({ worker: NOOP, args: { i } })),
      );
      await use(jobs, path);
    } finally {
      await jobs.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Wall-clock epoch ms with sub-ms precision. `performance.now()` alone is
 * relative to each process's own start, so two processes compare instants
 * through `timeOrigin + now()`.
 */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Yields the lines of a byte stream, without their newline. */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
    }
  }
  if (buffer) yield buffer;
}

/** The number of `completed` jobs, from the store's per-queue, per-state counts. */
export function completedOf(counts: { state: string; count: number }[]): number {
  let n = 0;
  for (const c of counts) if (c.state === "completed") n += c.count;
  return n;
}
