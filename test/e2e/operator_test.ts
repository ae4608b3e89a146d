/**
 * Operator commands from another process act on a running daemon: `jobs
 * pause` stops fetching (nothing new starts; planning goes on) until `jobs
 * resume`; `jobs disable` stops planning a schedule, and that holds across a
 * daemon restart and a reload of an edited schedules.yaml until `jobs
 * enable`.
 */

import assert from "node:assert/strict";
import type { Job } from "../../src/kernel/types.ts";
import { waitUntil } from "../../src/testing.ts";
import type { JobFilter } from "../../src/store/store.ts";
import { withStore } from "../support/stores.ts";
import { daemonDir, jobsCommand, readLines, startDaemon } from "../support/daemon_process.ts";

/**
 * `tick` (queue `default`) appends its occurrence to the ledger; `tock`, on
 * a queue of its own, is the witness that time passes and the daemon plans.
 */
function schedules(ledger: string, tickExtra = ""): string {
  const argv = ["sh", "-c", 'echo "$JOBS_OCCURRENCE" >> "$1"', "sh", ledger];
  return `version: 1
queues:
  default: { concurrency: 2 }
  clock: { concurrency: 1 }
schedules:
  - id: tick
    every: 1s
${tickExtra}    run:
      command: ${JSON.stringify(argv)}
  - id: tock
    every: 1s
    queue: clock
    run:
      command: ["true"]
`;
}

function list(db: string, filter: JobFilter): Promise<Job[]> {
  return withStore(db, (store) => store.jobsList(filter));
}

/** Waits until `tock` has `more` occurrence rows beyond what it has now: that much time passed. */
async function tockAdvances(db: string, more: number, what: string): Promise<void> {
  const from = (await list(db, { scheduleId: "tock" })).length;
  await waitUntil(`${more} more tock occurrences (${what})`, async () => {
    return (await list(db, { scheduleId: "tock" })).length >= from + more;
  }, { timeoutMs: 60_000, intervalMs: 250 });
}

async function jobs(args: string[]): Promise<string> {
  const result = await jobsCommand(args);
  assert.equal(result.code, 0, `jobs ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

Deno.test({
  name: "jobs pause/resume and disable/enable from another process steer a running daemon",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    await Deno.writeTextFile(config, schedules(ledger));
    await using first = await startDaemon({ db, config, node: "d1" });
    await waitUntil("tick runs", async () => (await readLines(ledger)).length >= 2, {
      timeoutMs: 60_000,
      intervalMs: 250,
    });

    // Pause: the planner goes on, the producer claims nothing.
    assert.match(
      await jobs(["pause", "default", "--db", db, "--reason", "e2e: hold the default queue"]),
      /queue default paused/,
    );
    const claimed = (await list(db, { scheduleId: "tick" }))
      .filter((j) => j.state !== "available").map((j) => j.occurrence);
    const piled = await waitUntil(
      "four tick occurrences waiting in the paused queue",
      async () => {
        const waiting = await list(db, { scheduleId: "tick", state: "available" });
        return waiting.length >= 4 ? waiting : null;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    await tockAdvances(db, 2, "while paused");
    const stillClaimed = (await list(db, { scheduleId: "tick" }))
      .filter((j) => j.state !== "available").map((j) => j.occurrence);
    assert.deepEqual(stillClaimed, claimed, "a tick job was claimed while its queue was paused");
    const ranWhilePaused = (await readLines(ledger)).filter((o) => !claimed.includes(o));
    assert.deepEqual(ranWhilePaused, [], "a tick job started while its queue was paused");

    // Resume: what piled up runs.
    assert.match(
      await jobs(["resume", "default", "--db", db, "--reason", "e2e: go on"]),
      /queue default resumed/,
    );
    await waitUntil("the piled-up occurrences run after resume", async () => {
      const ran = await readLines(ledger);
      return piled.every((j) => ran.includes(j.occurrence!));
    }, { timeoutMs: 60_000, intervalMs: 250 });

    // Disable: nothing new is planned for tick; tock goes on.
    assert.match(
      await jobs(["disable", "tick", "--db", db, "--config", config, "--reason", "e2e: off"]),
      /schedule tick disabled/,
    );
    const planned = (await list(db, { scheduleId: "tick" })).length;
    const tickRows = () => list(db, { scheduleId: "tick" }).then((rows) => rows.length);
    await tockAdvances(db, 3, "while tick is disabled");
    assert.equal(await tickRows(), planned, "tick was planned while disabled");

    // A restart keeps it disabled.
    assert.equal((await first.stop("SIGTERM")).code, 0, first.log());
    await using second = await startDaemon({ db, config, node: "d2" });
    await tockAdvances(db, 3, "after the restart");
    assert.equal(await tickRows(), planned, "tick was planned after the restart");

    // So does a reload of the file, even with tick's definition edited.
    await Deno.writeTextFile(config, schedules(ledger, "    priority: 1\n"));
    await second.waitFor("config.reloaded", undefined, 60_000);
    await tockAdvances(db, 3, "after the reload");
    assert.equal(await tickRows(), planned, "tick was planned after the reload");
    const [row] = await withStore(db, (store) => store.schedulesList({ ids: ["tick"] }));
    assert.deepEqual([row?.enabled, row?.disabledReason], [false, "e2e: off"]);

    // Enable: planning resumes (so the checks above could have failed).
    assert.match(
      await jobs(["enable", "tick", "--db", db, "--config", config, "--reason", "e2e: on"]),
      /schedule tick enabled/,
    );
    await waitUntil("tick planned again", async () => (await tickRows()) > planned, {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    assert.equal((await second.stop("SIGTERM")).code, 0, second.log());

    await withStore(db, async (store) => {
      const actions = async (target: string) =>
        (await store.auditList({ target })).map((a) => [a.action, a.actor, a.reason]);
      assert.deepEqual(await actions("queue:default"), [
        ["queue.pause", "e2e-operator", "e2e: hold the default queue"],
        ["queue.resume", "e2e-operator", "e2e: go on"],
      ]);
      assert.deepEqual(await actions("schedule:tick"), [
        ["schedule.disable", "e2e-operator", "e2e: off"],
        ["schedule.enable", "e2e-operator", "e2e: on"],
      ]);
    });
  },
});
