/**
 * What an operator reads in the second hour (issue 26.8 and 26.9), on every
 * backend: a failing schedule looks failing in `jobs status` and the TUI's
 * schedules view (its last outcome and its failures in a row, reset by a
 * completion), `jobs status` names the node that leads the maintenance,
 * and `jobs ls` names the node running each executing job and shows no
 * last error beside a completed one.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import type { ClaimedJob } from "../../src/kernel/types.ts";
import { loadSchedules } from "../../src/config/load.ts";
import { occurrenceId } from "../../src/schedule/occurrences.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { Store } from "../../src/store/store.ts";
import { configFile, fixedStore, storeData } from "../../src/tui/data.ts";
import { schedulesLines } from "../../src/tui/schedules/view.tsx";
import { clip, plain } from "../../src/tui/seg.ts";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { BACKENDS, type Harness, newJob } from "../support/backends.ts";
import { runJobs } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 10, 9);
const DAY = 86_400_000;
const MINUTE = 60_000;

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 4 }
schedules:
  - id: hello
    cron: "0 3 * * *"
    run: { command: ["true"] }
`;

interface Fixture {
  h: Harness;
  config: string;
  hello: Schedule;
}

/** A store of `backend` with the schedules file synced, and the file on disk; removed after. */
async function withFixture(
  backend: (typeof BACKENDS)[number],
  fn: (f: Fixture) => Promise<void>,
): Promise<void> {
  const dir = await tempDir();
  const config = `${dir.path}/schedules.yaml`;
  await Deno.writeTextFile(config, SCHEDULES);
  const loaded = await loadSchedules(config);
  if (!loaded.ok) throw new Error(loaded.errors.map((e) => e.message).join("\n"));
  const h = await backend.open(NOW - 10 * DAY);
  try {
    await syncSchedules(h.store, NOW - 10 * DAY, loaded.config.schedules);
    await fn({ h, config, hello: loaded.config.schedules[0]! });
  } finally {
    await h.close();
    await dir.cleanup();
  }
}

/** Plans `hello`'s 03:00 occurrence `daysAgo` days before NOW, runs it on n1 and ends it so. */
async function occurrence(
  f: Fixture,
  daysAgo: number,
  outcome: "completed" | "discarded",
): Promise<number> {
  const at = Date.UTC(2026, 5, 10 - daysAgo, 3);
  const job = occurrenceJob(f.hello, {
    at,
    occurrence: occurrenceId("hello", at),
    local: "",
    note: null,
  });
  await f.h.store.jobsInsert({ jobs: [job], now: at });
  const claimed = await claimOne(f.h.store, "default", at);
  const base = {
    id: claimed.id,
    fence: claimed.fence,
    attempt: claimed.attempt,
    startedAt: at,
    occurrence: claimed.occurrence,
  };
  await f.h.store.jobsRecord({
    node: "n1",
    now: at + 46_000,
    results: [
      outcome === "completed" ? { ...base, outcome } : { ...base, outcome, error: "exit status 1" },
    ],
  });
  return claimed.id;
}

async function claimOne(store: Store, queue: string, now: number, node = "n1") {
  const { jobs } = await store.jobsClaim({ queue, node, limit: 1, now, leaseMs: 10 * MINUTE });
  assert.equal(jobs.length, 1, `a job to claim in ${queue}`);
  return jobs[0] as ClaimedJob;
}

function jobs(args: string[]) {
  return runJobs(args, { now: NOW, env: { USER: "ada" } });
}

/** The TUI's schedules screen, read through the dashboard's data, as plain text. */
async function schedulesScreen(f: Fixture): Promise<string> {
  const data = storeData({
    source: fixedStore(f.h.store),
    config: configFile(f.config),
    clock: new FakeClock(NOW),
  });
  const width = 120;
  return schedulesLines({
    schedules: await data.schedules(NOW),
    cursor: 0,
    width,
    height: 30,
    now: NOW,
  }).map((l) => plain(clip(l, width))).join("\n");
}

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] jobs status and the TUI show a schedule's last outcome and its failures in a row, reset by a completion`, async () => {
    await withFixture(backend, async (f) => {
      await occurrence(f, 7, "completed");
      for (let day = 6; day >= 2; day--) await occurrence(f, day, "discarded");
      const lastFailure = "2026-06-08T03:00:46.000Z";

      const text = await jobs(["status", "--db", f.h.location, "--config", f.config]);
      assert.equal(text.code, 0, text.err);
      assert.match(
        text.out,
        new RegExp(`^ {4}last: discarded ${lastFailure} \\(2d5h ago\\), 5 failures in a row$`, "m"),
        text.out,
      );
      const json = await jobs(["status", "--db", f.h.location, "--config", f.config, "--json"]);
      const hello = JSON.parse(json.out).schedules.find((s: { id: string }) => s.id === "hello");
      assert.deepEqual([hello.lastOutcome, hello.lastOutcomeAt, hello.failures], [
        "discarded",
        lastFailure,
        5,
      ]);
      const screen = await schedulesScreen(f);
      assert.match(screen, /^> hello .* 5 failures in a row$/m, screen);
      assert.match(screen, /^outcome {2}last: discarded 2d5h ago, 5 failures in a row$/m, screen);

      await occurrence(f, 1, "completed");
      const after = await jobs(["status", "--db", f.h.location, "--config", f.config]);
      assert.match(
        after.out,
        /^ {4}last: completed 2026-06-09T03:00:46\.000Z \(1d5h ago\)$/m,
        after.out,
      );
      assert.ok(!after.out.includes("in a row"), after.out);
      const reset = await schedulesScreen(f);
      assert.match(reset, /^outcome {2}last: completed 1d5h ago$/m, reset);
      assert.ok(!reset.includes("in a row"), reset);
    });
  });

  Deno.test(`[${backend.name}] jobs status names the node that leads the maintenance`, async () => {
    await withFixture(backend, async (f) => {
      const none = await jobs(["status", "--db", f.h.location, "--config", f.config]);
      assert.match(none.out, /^ {2}leader: none recorded /m, none.out);
      const held = await f.h.store.leaderTake({
        name: "maintenance",
        node: "pg-2:77",
        now: NOW - 5 * MINUTE,
        ttlMs: 10 * MINUTE,
      });
      const text = await jobs(["status", "--db", f.h.location, "--config", f.config]);
      assert.match(
        text.out,
        /^nodes:\n(?: {2}.*\n)* {2}leader: pg-2:77 \(maintenance, since 2026-06-10T08:55:00\.000Z \(5m ago\)\)$/m,
        text.out,
      );
      const json = JSON.parse(
        (await jobs(["status", "--db", f.h.location, "--config", f.config, "--json"])).out,
      );
      assert.equal(json.leader.node, "pg-2:77");
      assert.equal(json.leader.expired, false);
      assert.equal(json.leader.expiresAt, "2026-06-10T09:05:00.000Z");

      await f.h.store.leaderRelease({ name: "maintenance", node: "pg-2:77", fence: held.fence });
      const released = await jobs(["status", "--db", f.h.location, "--config", f.config]);
      assert.match(released.out, /^ {2}leader: none \(released on a clean stop; /m, released.out);
    });
  });

  Deno.test(`[${backend.name}] jobs ls --state executing names the node running each job; a completed job shows no last error`, async () => {
    await withFixture(backend, async (f) => {
      const at = NOW - 30 * MINUTE;
      await f.h.store.jobsInsert({
        now: at,
        jobs: [
          newJob({ queue: "a", worker: "w", scheduledAt: at, maxAttempts: 3 }),
          newJob({ queue: "b", worker: "w", scheduledAt: at }),
        ],
      });
      const first = await claimOne(f.h.store, "a", at, "web-1:42");
      // Its first attempt fails; the second, on another node, completes.
      await f.h.store.jobsRecord({
        node: "web-1:42",
        now: at + 1000,
        results: [{
          id: first.id,
          fence: first.fence,
          attempt: first.attempt,
          startedAt: at,
          outcome: "retryable",
          error: "flaky upstream",
          at: at + 1000,
        }],
      });
      await f.h.store.jobsStage({ now: at + 2000, limit: 10 });
      const second = await claimOne(f.h.store, "a", at + 2000, "web-2:7");
      await f.h.store.jobsRecord({
        node: "web-2:7",
        now: at + 3000,
        results: [{
          id: second.id,
          fence: second.fence,
          attempt: second.attempt,
          startedAt: at + 2000,
          outcome: "completed",
        }],
      });
      const running = await claimOne(f.h.store, "b", at + 4000, "web-3:9");

      const executing = await jobs(["ls", "--db", f.h.location, "--state", "executing"]);
      assert.equal(executing.code, 0, executing.err);
      const lines = executing.out.split("\n");
      assert.match(lines[0]!, /^ID\s+STATE\s+QUEUE\s+WORKER\s+TRY\s+NODE\s+OCCURRENCE\s+WHEN/);
      assert.match(
        lines[1]!,
        new RegExp(`^${running.id}\\s+executing\\s+b\\s+w\\s+1/20\\s+web-3:9\\s`),
      );

      const done = await jobs(["ls", "--db", f.h.location, "--state", "completed"]);
      assert.match(
        done.out,
        new RegExp(`^${second.id}\\s+completed\\s+a\\s+w\\s+2/3\\s+web-2:7\\s`, "m"),
      );
      assert.ok(!done.out.includes("flaky upstream"), done.out);
    });
  });
}
