/**
 * `jobs daemon` as a subprocess, as an operator runs it: a per-second
 * schedule runs each occurrence once and the store agrees with what the
 * commands did; SIGTERM in the middle of a job ends the job's whole process
 * group and the daemon exits 0.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import {
  daemonDir,
  killGroup,
  pidsIn,
  POLL,
  processAlive,
  readLines,
  startDaemon,
} from "../support/daemon_process.ts";

/** A schedules.yaml with one schedule whose command is `argv` (written as JSON, which is YAML). */
function scheduleFile(id: string, argv: string[], extra = ""): string {
  return `version: 1
queues:
  default: { concurrency: 2 }
schedules:
  - id: ${id}
    every: 1s
${extra}    run:
      command: ${JSON.stringify(argv)}
`;
}

Deno.test({
  name: "jobs daemon runs each per-second occurrence once and the ledger matches the store",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    await Deno.writeTextFile(
      config,
      scheduleFile("tick", [
        "sh",
        "-c",
        'echo "$JOBS_OCCURRENCE $JOBS_FENCE $JOBS_ATTEMPT" >> "$1"',
        "sh",
        ledger,
      ]),
    );
    await using daemon = await startDaemon({ db, config, node: "d1" });
    await waitUntil("five occurrences in the ledger", async () => {
      return (await readLines(ledger)).length >= 5;
    }, { timeoutMs: 60_000, ...POLL });
    const status = await daemon.stop("SIGTERM");
    assert.equal(status.code, 0, daemon.log());
    assert.equal(daemon.events.at(-1)?.event, "daemon.stopped", daemon.log());

    const rows = await readLines(ledger);
    for (const row of rows) {
      assert.match(row, /^tick@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z 1 1$/, rows.join("\n"));
    }
    const occurrences = rows.map((row) => row.split(" ")[0]!);
    assert.equal(
      new Set(occurrences).size,
      occurrences.length,
      `duplicates:\n${rows.join("\n")}`,
    );

    const store = await openSqliteStore(db);
    try {
      const jobs = await store.jobsList({ scheduleId: "tick" });
      const completed = jobs.filter((j) => j.state === "completed").map((j) => j.occurrence);
      assert.deepEqual(completed.sort(), occurrences.slice().sort());
      // Shutdown waited for what was running: nothing is left executing.
      assert.deepEqual(jobs.filter((j) => j.state === "executing"), []);
      for (const job of jobs.filter((j) => j.state === "completed")) {
        const attempts = await store.attemptsList({ jobId: job.id });
        assert.deepEqual(attempts.map((a) => [a.node, a.fence, a.outcome]), [
          ["d1", 1, "completed"],
        ]);
      }
      assert.deepEqual(await store.nodesList(), [], "the node deregistered");
    } finally {
      await store.close();
    }
  },
});

/**
 * The job's command: the first occurrence takes a lock, starts a grandchild
 * `sleep 300` in its own process group, records both pids, and waits (with
 * `trap '' TERM` it also ignores SIGTERM, as does the grandchild it starts);
 * every later occurrence finds the lock and exits.
 */
function holdArgv(dir: string, ignoreTerm: boolean): string[] {
  const trap = ignoreTerm ? "trap '' TERM; " : "";
  return [
    "sh",
    "-c",
    `mkdir "$1/lock" 2>/dev/null || exit 0; ${trap}sleep 300 & ` +
    `echo "$$ $!" > "$1/pids.tmp"; mv "$1/pids.tmp" "$1/pids"; wait`,
    "sh",
    dir,
  ];
}

for (const ignoreTerm of [false, true]) {
  Deno.test({
    name: ignoreTerm
      ? "SIGTERM mid-job past the grace: a job group that ignores SIGTERM is killed before the daemon exits 0"
      : "SIGTERM mid-job past the grace: the job's child and grandchild end and the daemon exits 0",
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      await using dir = await daemonDir();
      const { db, config } = dir;
      await Deno.writeTextFile(
        config,
        scheduleFile("hold", holdArgv(dir.path, ignoreTerm), "    overlap_policy: skip\n"),
      );
      let pids: number[] = [];
      await using daemon = await startDaemon({
        db,
        config,
        node: "d1",
        args: ["--shutdown-grace", "1000"],
      });
      try {
        pids = await waitUntil("the job recorded its pids", async () => {
          const found = await pidsIn(`${dir.path}/pids`);
          return found.length === 2 ? found : null;
        }, { timeoutMs: 60_000, ...POLL });
        const [shell, grandchild] = pids as [number, number];
        assert.ok(processAlive(shell) && processAlive(grandchild), "both run before the signal");

        const status = await daemon.stop("SIGTERM");
        assert.equal(status.code, 0, daemon.log());
        const names = daemon.events.map((e) => e.event);
        assert.ok(names.includes("node.shutdown_abort"), daemon.log());
        assert.equal(names.at(-1), "daemon.stopped", daemon.log());
        const stopping = daemon.events.find((e) => e.event === "daemon.stopping");
        assert.equal(stopping?.running, 1, daemon.log());

        await waitUntil(
          `the job's shell ${shell} and grandchild ${grandchild} to end`,
          () => !processAlive(shell) && !processAlive(grandchild),
          { timeoutMs: 30_000, ...POLL },
        );

        // The aborted attempt records nothing: the lease runs out and the lifeline rescues it.
        const store = await openSqliteStore(db);
        try {
          const held = (await store.jobsList({ scheduleId: "hold" }))
            .filter((j) => j.state !== "completed" && j.state !== "cancelled");
          assert.deepEqual(held.map((j) => [j.state, j.attemptedBy, j.fence]), [
            ["executing", "d1", 1],
          ]);
        } finally {
          await store.close();
        }
      } finally {
        // The daemon first, so that it starts nothing more; the temp dir goes last.
        await daemon[Symbol.asyncDispose]();
        for (const pid of pids) killGroup(pid);
      }
    },
  });
}

Deno.test({
  name: "a daemon's writes stay visible to other processes that open and close its SQLite file",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // schedules.yaml beside jobs.db, as in the README's first command (and
    // docs/operating.md's daemon): the daemon watches the
    // config file while SQLite holds process-wide POSIX locks on the db.
    await using dir = await daemonDir();
    const { db, config } = dir;
    await Deno.writeTextFile(config, scheduleFile("tick", ["true"]));
    await using daemon = await startDaemon({ db, config, node: "d1" });
    const completed = async () => {
      // A new connection each time, closed at once: what `jobs pause` or the TUI does.
      const store = await openSqliteStore(db);
      try {
        return (await store.jobsList({ scheduleId: "tick", state: "completed" })).length;
      } finally {
        await store.close();
      }
    };
    const first = await waitUntil("a first completed occurrence", completed, {
      timeoutMs: 60_000,
      ...POLL,
    });
    await waitUntil("five more completed occurrences, seen from outside", async () => {
      return (await completed()) >= first + 5;
    }, { timeoutMs: 60_000, ...POLL });
    const status = await daemon.stop("SIGTERM");
    assert.equal(status.code, 0, daemon.log());
  },
});
