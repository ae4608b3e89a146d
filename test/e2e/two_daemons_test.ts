/**
 * Two daemons on one SQLite file for a minute of per-second occurrences:
 * each occurrence is planned once and run once, by one of them, and none is
 * missing between the first and the last.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { daemonDir, readLines, startDaemon } from "../support/daemon_process.ts";

/** Occurrences the ledger must hold before the daemons are stopped: a minute's worth. */
const OCCURRENCES = 60;

Deno.test({
  name: "two daemons on one file run each per-second occurrence exactly once for a minute",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    // Each daemon's commands inherit its environment: E2E_NODE says who ran it.
    const argv = [
      "sh",
      "-c",
      'echo "$JOBS_OCCURRENCE $JOBS_FENCE $E2E_NODE" >> "$1"',
      "sh",
      ledger,
    ];
    await Deno.writeTextFile(
      config,
      `version: 1
queues:
  default: { concurrency: 4 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ${JSON.stringify(argv)}
`,
    );
    const start = (node: string) => startDaemon({ db, config, node, env: { E2E_NODE: node } });
    const [a, b] = await Promise.allSettled([start("a"), start("b")]);
    const daemons = [a, b].flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    try {
      for (const r of [a, b]) if (r.status === "rejected") throw r.reason;
      await waitUntil(`${OCCURRENCES} occurrences in the ledger`, async () => {
        return (await readLines(ledger)).length >= OCCURRENCES;
      }, { timeoutMs: 100_000, intervalMs: 500 });
      const statuses = await Promise.all(daemons.map((d) => d.stop("SIGTERM")));
      for (const [i, status] of statuses.entries()) {
        assert.equal(status.code, 0, daemons[i]!.log());
      }

      const rows = (await readLines(ledger)).map((row) => row.split(" "));
      for (const row of rows) {
        assert.match(row.join(" "), /^tick@\S+Z 1 [ab]$/, "one attempt each, with the first fence");
      }
      const occurrences = rows.map(([occurrence]) => occurrence!);
      const duplicates = occurrences.filter((o, i) => occurrences.indexOf(o) !== i);
      assert.deepEqual(duplicates, [], "an occurrence ran twice");

      // No gap: consecutive seconds from the first occurrence run to the last.
      const instants = occurrences.map((o) => Date.parse(o.slice("tick@".length))).sort((x, y) =>
        x - y
      );
      const gaps = instants.slice(1).filter((t, i) => t - instants[i]! !== 1000);
      assert.deepEqual(gaps.map((t) => new Date(t).toISOString()), [], "seconds missing");

      const store = await openSqliteStore(db);
      try {
        const jobs = await store.jobsList({ scheduleId: "tick" });
        const completed = jobs.filter((j) => j.state === "completed");
        assert.deepEqual(completed.map((j) => j.occurrence).sort(), occurrences.slice().sort());
        const ranBy = new Map(rows.map(([occurrence, , node]) => [occurrence!, node!]));
        for (const job of completed) {
          const attempts = await store.attemptsList({ jobId: job.id });
          assert.deepEqual(attempts.map((t) => [t.node, t.fence, t.outcome]), [
            [ranBy.get(job.occurrence!), 1, "completed"],
          ]);
        }
        // What was planned and not run when both stopped comes after the last run.
        const last = instants.at(-1)!;
        for (const job of jobs.filter((j) => j.state !== "completed")) {
          assert.equal(job.state, "available", JSON.stringify(job));
          assert.ok(job.scheduledAt > last, `${job.occurrence} was left behind`);
        }
        assert.deepEqual(await store.nodesList(), [], "both nodes deregistered");
      } finally {
        await store.close();
      }
    } finally {
      for (const daemon of daemons) await daemon[Symbol.asyncDispose]();
    }
  },
});
