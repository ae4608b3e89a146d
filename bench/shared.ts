/**
 * What the benchmark parent (`bench.ts`) and its child processes (`child.ts`)
 * share: the no-op worker's name, a clock both processes agree on, and line
 * reading over a byte stream.
 *
 * @module
 */

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
