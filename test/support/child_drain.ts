/**
 * A separate OS process for the multi-process claim tests: opens the SQLite
 * file given on the command line, waits until every sibling is ready (so
 * they really race), then runs the `record` jobs through claim -> perform ->
 * record and prints one JSON line on stdout: `{ "node", "ids" }`, the id of
 * every job this process performed.
 *
 * Usage: child_drain.ts <dbpath> <drain|runtime> <siblings> <node> [total]
 *
 * - `drain`: `drainQueue` (batch 5) until no job is left to claim.
 * - `runtime`: a real runtime (`jobs.start`) until the store counts `total`
 *   completed jobs, then a clean stop.
 */

import { defineWorker } from "../../src/kernel/worker.ts";
import { openJobs } from "../../src/jobs.ts";
import { drainQueue, waitUntil } from "../../src/testing.ts";
import { silentLogger } from "../../src/kernel/logger.ts";

const [path, mode, siblingsText, node, totalText] = Deno.args;
if (!path || (mode !== "drain" && mode !== "runtime") || !siblingsText || !node) {
  console.error("usage: child_drain.ts <dbpath> <drain|runtime> <siblings> <node> [total]");
  Deno.exit(2);
}
const siblings = Number(siblingsText);

const ids: number[] = [];
const record = defineWorker({
  name: "record",
  perform: async (_args, ctx) => {
    ids.push(ctx.job.id);
    // Yield, so claims of this process interleave with its own jobs.
    await Promise.resolve();
  },
});

const jobs = await openJobs(path, {
  workers: [record],
  logger: silentLogger,
  // Three processes contend for one write lock on a loaded machine.
  sqlite: { busyTimeoutMs: 30_000 },
});

// Barrier: each process registers a marker row and waits for its siblings'.
await jobs.store.nodeBeat({ node: `ready:${node}`, queues: {}, now: jobs.clock.now() });
await waitUntil(
  `${siblings} processes ready`,
  async () =>
    (await jobs.store.nodesList()).filter((n) => n.node.startsWith("ready:")).length >= siblings,
  { timeoutMs: 30_000 },
);

if (mode === "drain") {
  await drainQueue(jobs, "default", { batch: 5, node });
} else {
  const total = Number(totalText);
  const runtime = await jobs.start({
    queues: { default: 4 },
    node,
    pollMs: 50,
    heartbeatMs: 500,
  });
  await waitUntil(
    `${total} jobs completed`,
    async () => {
      const counts = await jobs.store.jobsCount({ queue: "default" });
      return counts.find((c) => c.state === "completed")?.count === total;
    },
    { timeoutMs: 60_000, intervalMs: 20 },
  );
  await runtime.stop({ grace: 10_000 });
}

await jobs.close({ grace: 0 });
console.log(JSON.stringify({ node, ids }));
