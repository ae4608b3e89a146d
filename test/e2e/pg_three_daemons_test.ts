/**
 * Three `jobs daemon` processes on one PostgreSQL schema for a minute of
 * per-second occurrences: all three plan, each occurrence is planned once
 * and run once, and none is missing between the first and the last. Meanwhile
 * one daemon is killed with SIGKILL while it runs a long job: once the lease
 * it held has expired, another daemon runs that job again, once, with the
 * next fence, and the dead daemon's process-group record is in the state
 * directory of that store on this host.
 *
 * The daemons take the default lease (30 s: there is no setting for it), so
 * the kill happens early, while the ticks go on, at an instant when the
 * victim holds no tick: none is executing on it and the next is not due
 * before the next second, so a tick run twice would be a bug, not the kill.
 */

import assert from "node:assert/strict";
import { storeStateName } from "../../src/cli/state_dir.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { runJobs } from "../support/cli.ts";
import {
  daemonDir,
  type DaemonProcess,
  killGroup,
  readLines,
  startDaemon,
} from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";

/** Occurrences the ledger must hold before the daemons are stopped: a minute's worth. */
const OCCURRENCES = 60;
/** The runtime's lease when nothing sets one (src/runtime/runtime.ts). */
const DEFAULT_LEASE_MS = 30_000;
const NODES = ["a", "b", "c"] as const;

Deno.test({
  name: "three daemons on one PostgreSQL schema run each per-second occurrence once; " +
    "a SIGKILLed one's job runs again once, fenced higher, after its lease",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    await using pg = postgresLocation();
    const { config, ledger } = dir;
    const slowLedger = `${dir.path}/slow`;
    const state = `${dir.path}/state`;
    const tick = [
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
  slow: { concurrency: 1 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ${JSON.stringify(tick)}
`,
    );
    // Each daemon's commands inherit its environment: E2E_NODE says who ran it.
    const start = (node: string) =>
      startDaemon({
        db: pg.url,
        config,
        node,
        env: { E2E_NODE: node, XDG_STATE_HOME: state },
      });
    const started = await Promise.allSettled(NODES.map(start));
    const daemons = new Map<string, DaemonProcess>();
    for (const [i, r] of started.entries()) {
      if (r.status === "fulfilled") daemons.set(NODES[i]!, r.value);
    }
    let store: Store | undefined;
    const pgids: number[] = [];
    try {
      for (const r of started) if (r.status === "rejected") throw r.reason;
      store = (await openStore(pg.url, { mode: "read" })).store;

      // The long job: the first attempt sleeps (and is killed with its daemon), the next ones end.
      const script =
        'echo "$JOBS_FENCE $E2E_NODE $$" >> "$1"; [ "$JOBS_FENCE" -gt 1 ] || sleep 120';
      const enqueued = await runJobs([
        "enqueue",
        "jobs.command",
        "--db",
        pg.url,
        "--config",
        config,
        "--queue",
        "slow",
        "--max-attempts",
        "3",
        "--args",
        JSON.stringify({ kind: "command", argv: ["sh", "-c", script, "sh", slowLedger] }),
      ], { now: Date.now() });
      assert.equal(enqueued.code, 0, enqueued.err);
      const [slow] = await store.jobsList({ queue: "slow" });
      assert.ok(slow, enqueued.out);
      const held = await waitUntil("the long job running", async () => {
        const [job] = await store!.jobsList({ ids: [slow.id] });
        const lines = await readLines(slowLedger);
        if (job && job.state !== "available" && job.state !== "executing") {
          throw new Error(`the long job is ${job.state}: ${JSON.stringify(job.errors)}`);
        }
        return job?.state === "executing" && lines.length === 1 ? job : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100 });
      const victim = held.attemptedBy!;
      assert.ok(daemons.has(victim), `the job's lease owner "${victim}" is one of the daemons`);
      pgids.push(Number((await readLines(slowLedger))[0]!.split(" ")[2]));

      // Its command's group is recorded in the store's state directory on this host.
      const groups = `${state}/jobs/${storeStateName(pg.url)}/groups`;
      const records = await waitUntil("the long job's group recorded", () => {
        try {
          // Not a `.tmp` one: the daemon writes each record beside and renames it.
          const found = [...Deno.readDirSync(groups)].map((entry) => entry.name)
            .filter((name) => !name.endsWith(".tmp"));
          return found.length > 0 ? found : undefined;
        } catch (error) {
          if (error instanceof Deno.errors.NotFound) return undefined;
          throw error;
        }
      }, { timeoutMs: 10_000, intervalMs: 100 });
      const record = JSON.parse(await Deno.readTextFile(`${groups}/${records[0]}`));
      assert.equal(record.job, slow.id);
      assert.equal(record.pgid, pgids[0]);

      // SIGKILL at an instant when the victim holds no tick (see the module comment).
      const lease = await waitUntil(
        "an instant when the victim holds only the long job",
        async () => {
          const ticks = await store!.jobsList({
            scheduleId: "tick",
            state: ["available", "executing"],
          });
          const [job] = await store!.jobsList({ ids: [slow.id] });
          const now = Date.now();
          const busy = ticks.some((t) =>
            (t.state === "executing" && t.attemptedBy === victim) ||
            (t.state === "available" && t.scheduledAt <= now)
          );
          if (busy || now % 1000 > 700 || job?.state !== "executing") return undefined;
          return job.leaseExpiresAt!;
        },
        { timeoutMs: 20_000, intervalMs: 37 },
      );
      const killed = await daemons.get(victim)!.stop("SIGKILL");
      assert.equal(killed.signal, "SIGKILL");
      daemons.delete(victim);

      const rerun = await waitUntil("the long job run again", async () => {
        const lines = await readLines(slowLedger);
        const [job] = await store!.jobsList({ ids: [slow.id] });
        return lines.length >= 2 && job?.state === "completed" ? lines : undefined;
      }, { timeoutMs: DEFAULT_LEASE_MS + 30_000, intervalMs: 250 });
      const [, rescuer] = rerun[1]!.split(" ");
      assert.equal(rerun.length, 2, `run twice, not more:\n${rerun.join("\n")}`);
      assert.match(rerun[1]!, /^2 [abc] \d+$/);
      assert.notEqual(rescuer, victim);
      const attempts = await store.attemptsList({ jobId: slow.id });
      assert.deepEqual(attempts.map((a) => [a.node, a.fence, a.outcome]), [
        [victim, 1, "orphaned"],
        [rescuer, 2, "completed"],
      ]);
      assert.ok(
        attempts[1]!.startedAt >= lease,
        `the second attempt started at ${
          attempts[1]!.startedAt
        }, before the lease ran out at ${lease}`,
      );

      await waitUntil(`${OCCURRENCES} occurrences in the ledger`, async () => {
        return (await readLines(ledger)).length >= OCCURRENCES;
      }, { timeoutMs: 90_000, intervalMs: 500 });
      for (const [node, daemon] of daemons) {
        const status = await daemon.stop("SIGTERM");
        assert.equal(status.code, 0, `${node}:\n${daemon.log()}`);
      }
      daemons.clear();

      const rows = (await readLines(ledger)).map((row) => row.split(" "));
      for (const row of rows) {
        assert.match(
          row.join(" "),
          /^tick@\S+Z 1 [abc]$/,
          "one attempt each, with the first fence",
        );
      }
      const occurrences = rows.map(([occurrence]) => occurrence!);
      const duplicates = occurrences.filter((o, i) => occurrences.indexOf(o) !== i);
      assert.deepEqual(duplicates, [], "an occurrence ran twice");
      // No gap: consecutive seconds from the first occurrence run to the last.
      const instants = occurrences.map((o) => Date.parse(o.slice("tick@".length)))
        .sort((x, y) => x - y);
      const gaps = instants.slice(1).filter((t, i) => t - instants[i]! !== 1000);
      assert.deepEqual(gaps.map((t) => new Date(t).toISOString()), [], "seconds missing");

      const jobs = await store.jobsList({ scheduleId: "tick" });
      const completed = jobs.filter((j) => j.state === "completed");
      assert.deepEqual(completed.map((j) => j.occurrence).sort(), occurrences.slice().sort());
      const ranBy = new Map(rows.map(([occurrence, , node]) => [occurrence!, node!]));
      for (const job of completed) {
        const tries = await store.attemptsList({ jobId: job.id });
        assert.deepEqual(tries.map((t) => [t.node, t.fence, t.outcome]), [
          [ranBy.get(job.occurrence!), 1, "completed"],
        ]);
      }
      // What was planned and not run when they stopped comes after the last run.
      const last = instants.at(-1)!;
      for (const job of jobs.filter((j) => j.state !== "completed")) {
        assert.equal(job.state, "available", JSON.stringify(job));
        assert.ok(job.scheduledAt > last, `${job.occurrence} was left behind`);
      }
      // The stopped daemons deregistered; the killed one's row waits for its expiry.
      assert.deepEqual((await store.nodesList()).map((n) => n.node), [victim]);
    } finally {
      for (const daemon of daemons.values()) await daemon[Symbol.asyncDispose]();
      for (const pgid of pgids) if (pgid > 1) killGroup(pgid);
      await store?.close();
    }
  },
});
