/**
 * Spawned as an OS process by the uniqueness tests: opens the SQLite file
 * given as the first argument and enqueues the same unique jobs as its
 * siblings, then prints what its inserts reported as one JSON line.
 *
 * Each round uses fresh keys (`round * keys + i`), so every round races on
 * keys that no sibling has inserted yet. A start barrier lines the siblings
 * up: the child prints `ready` once its store is open and starts only when
 * it reads `go` on stdin.
 *
 * Usage: deno run --allow-read --allow-write --allow-env --allow-sys
 *   test/support/child_enqueue.ts <db path> <keys per round> <rounds>
 */

import { openJobs, silentLogger } from "../../src/mod.ts";

const [path, keysText = "20", roundsText = "5"] = Deno.args;
if (!path) throw new Error("child_enqueue: the database path is required");
const keys = Number(keysText);
const rounds = Number(roundsText);

const jobs = await openJobs(path, {
  logger: silentLogger,
  sqlite: { busyTimeoutMs: 30_000 },
});
const results: { key: number; id: number; duplicate: boolean }[] = [];
try {
  console.log("ready");
  const reader = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader();
  let input = "";
  while (!input.includes("go")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("child_enqueue: stdin closed before go");
    input += value;
  }
  reader.releaseLock();
  for (let round = 0; round < rounds; round++) {
    const first = round * keys;
    for (let key = first; key < first + keys; key++) {
      const r = await jobs.enqueue("report", { day: key }, { unique: { by: "args" } });
      results.push({ key, id: r.id, duplicate: r.duplicate });
    }
    // The same keys again in one bulk insert, racing the siblings' single inserts.
    const bulk = await jobs.enqueueMany(
      Array.from({ length: keys }, (_, i) => ({
        worker: "report",
        args: { day: first + i },
        options: { unique: { by: "args" as const } },
      })),
    );
    bulk.forEach((r, i) => results.push({ key: first + i, id: r.id, duplicate: r.duplicate }));
  }
} finally {
  await jobs.close();
}
console.log(JSON.stringify(results));
