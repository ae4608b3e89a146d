/**
 * The `limit` phase: what the SQLite file allows for the `process`,
 * `process3`, `bulk` and `single` workloads, measured by the bare loops of
 * `limit_loop.ts` on a store the library created, migrated and filled the
 * same way, so each of those phases can be read as a ratio of its limit in
 * the same run. SQLite only: with `BENCH_DB` it measures nothing.
 *
 * @module
 */

import { openJobs, silentLogger } from "../src/mod.ts";
import { drainLimit, insertLoop, insertTransactions, openLimit } from "./limit_loop.ts";
import { NOOP } from "./shared.ts";
import { Child } from "./child_process.ts";
import { withFreshStore } from "./stores.ts";

const LOOP = new URL("./limit_loop.ts", import.meta.url).pathname;

/** What {@linkcode phaseLimit} measured. */
export interface LimitResult {
  /** Jobs/s of one bare loop over N jobs. */
  limitPerS: number;
  /** Jobs/s of `processes` bare loops in child processes on one file, in total. */
  limit3PerS: number;
  /** Rows/s of a prepared insert loop in one transaction. */
  insertLoopPerS: number;
  /** Transactions/s of one-row insert transactions. */
  insertTxPerS: number;
}

/** Options of {@linkcode phaseLimit}: the sizes of the phases it is the limit of. */
export interface LimitOptions {
  n: number;
  processes: number;
  chunk: number;
  singleN: number;
}

/** A store as the `process` phase has it: created by the library, N jobs enqueued. */
async function filled(location: string, n: number, chunk: number): Promise<void> {
  const jobs = await openJobs(location, { logger: silentLogger });
  try {
    for (let off = 0; off < n; off += chunk) {
      const entries = [];
      for (let i = off; i < Math.min(n, off + chunk); i++) {
        entries.push({ worker: NOOP, args: { i } });
      }
      await jobs.enqueueMany(entries);
    }
  } finally {
    await jobs.close();
  }
}

/** Measures the limits; see the module doc. */
export async function phaseLimit(
  options: LimitOptions,
  log: (message: string) => void,
): Promise<LimitResult> {
  const limitPerS = await withFreshStore(null, async (location) => {
    await filled(location, options.n, options.chunk);
    const db = openLimit(location);
    try {
      const t0 = performance.now();
      const done = drainLimit(db, "limit-1");
      if (done !== options.n) throw new Error(`limit: drained ${done}, expected ${options.n}`);
      return done / ((performance.now() - t0) / 1000);
    } finally {
      db.close();
    }
  });
  const limit3PerS = await withFreshStore(null, async (location) => {
    await filled(location, options.n, options.chunk);
    const children = Array.from(
      { length: options.processes },
      (_, i) => new Child(LOOP, [location, `limit-${i}`]),
    );
    try {
      await Promise.all(children.map((c) => c.expect("ready")));
      const t0 = performance.now();
      await Promise.all(children.map((c) => c.send("go")));
      const counts = await Promise.all(children.map(async (c, i) => {
        const line = await c.next();
        if (!line.startsWith("done ")) throw new Error(`limit child ${i}: got "${line}"`);
        return Number(line.slice(5));
      }));
      const seconds = (performance.now() - t0) / 1000;
      await Promise.all(children.map((c) => c.wait()));
      const total = counts.reduce((a, b) => a + b, 0);
      if (total !== options.n) {
        throw new Error(
          `limit x${options.processes}: drained ${counts.join(" + ")}, expected ${options.n}`,
        );
      }
      log(`  limit per process: ${counts.join(" + ")}`);
      return total / seconds;
    } finally {
      await Promise.all(children.map((c) => c.kill()));
    }
  });
  const inserts = await withFreshStore(null, async (location) => {
    await filled(location, 0, options.chunk);
    const db = openLimit(location);
    try {
      return {
        insertLoopPerS: insertLoop(db, options.n),
        insertTxPerS: insertTransactions(db, options.singleN),
      };
    } finally {
      db.close();
    }
  });
  return { limitPerS, limit3PerS, ...inserts };
}
