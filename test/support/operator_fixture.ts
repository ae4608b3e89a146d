/**
 * The fixture of the operator views' tests (`jobs ls`, `jobs show`,
 * `jobs runbook`, ...): a schedules file with a nightly schedule and a
 * guarded manual one on a paused queue, a migrated store on a temp file
 * synced to it an hour before {@linkcode NOW}, and helpers that add jobs to
 * it and run the `jobs` command at NOW as the user ada.
 */

import assert from "node:assert/strict";
import type { NewJob } from "../../src/kernel/types.ts";
import { loadSchedules } from "../../src/config/load.ts";
import { occurrenceId } from "../../src/schedule/occurrences.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { newJob } from "./backends.ts";
import { runJobs } from "./cli.ts";
import { tempDir } from "./stores.ts";

/** The instant the fixture's tests run at. */
export const NOW = Date.UTC(2026, 5, 1, 9);
const MINUTE = 60_000;

/** The schedules file: `nightly` (cron) and `reindex-search` (manual, guarded, staging only). */
export const SCHEDULES = `version: 1
queues:
  default: { concurrency: 4 }
  mail: { concurrency: 2, paused: true }
schedules:
  - id: nightly
    cron: "0 3 * * *"
    misfire: catch_up
    overlap_policy: skip
    run: { command: ["true"] }
  - id: reindex-search
    manual: true
    guard: on-call engineer, outside business hours
    runs_where: staging
    queue: mail
    run: { command: ["echo", "reindex"] }
`;

/** The fixture {@linkcode withFixture} hands its body. */
export interface Fixture {
  db: string;
  config: string;
  store: SqliteStore;
  schedules: Schedule[];
}

/** A temp schedules file and a migrated store on a temp file, closed and removed after `fn`. */
export async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  const config = `${dir.path}/schedules.yaml`;
  const db = `${dir.path}/jobs.db`;
  await Deno.writeTextFile(config, SCHEDULES);
  const loaded = await loadSchedules(config);
  if (!loaded.ok) throw new Error(loaded.errors.map((e) => e.message).join("\n"));
  const store = await openSqliteStore(db, { now: NOW - 60 * MINUTE });
  try {
    await syncSchedules(store, NOW - 60 * MINUTE, loaded.config.schedules);
    await fn({ db, config, store, schedules: loaded.config.schedules });
  } finally {
    await store.close();
    await dir.cleanup();
  }
}

/** The nightly occurrence at `instant`, as the planner would insert it. */
export function nightlyJob(
  f: Fixture,
  instant: number,
  occurrence = occurrenceId("nightly", instant),
) {
  const nightly = f.schedules.find((s) => s.id === "nightly")!;
  return occurrenceJob(nightly, { at: instant, occurrence, local: "", note: null });
}

/** Inserts `job` at `now` (half an hour before NOW); its id. */
export async function insert(
  store: SqliteStore,
  job: NewJob,
  now = NOW - 30 * MINUTE,
): Promise<number> {
  const [result] = await store.jobsInsert({ jobs: [job], now });
  return result!.id;
}

/** Runs `jobs <args>` at NOW as the user ada. */
export function jobs(args: string[]) {
  return runJobs(args, { now: NOW, env: { USER: "ada" } });
}

/** A job of worker `mailer` with 3 attempts, due half an hour before NOW; `fields` override. */
export function plainJob(fields: Partial<NewJob> = {}): NewJob {
  return newJob({ worker: "mailer", maxAttempts: 3, scheduledAt: NOW - 30 * MINUTE, ...fields });
}

/**
 * Claims the one available job of `queue` on node `n1` and ends its attempt:
 * with `error` it becomes retryable, else it completes with `output`.
 */
export async function runOnce(
  store: SqliteStore,
  queue: string,
  at: number,
  end: { error?: string; output?: string },
): Promise<number> {
  const { jobs } = await store.jobsClaim({ queue, node: "n1", limit: 1, now: at, leaseMs: MINUTE });
  const job = jobs[0];
  assert.ok(job, `a job to claim in ${queue}`);
  const base = {
    id: job.id,
    fence: job.fence,
    attempt: job.attempt,
    startedAt: at,
    occurrence: job.occurrence,
    ...(end.output === undefined ? {} : { output: end.output }),
  };
  const report = await store.jobsRecord({
    node: "n1",
    now: at + 1500,
    results: [
      end.error === undefined
        ? { ...base, outcome: "completed" }
        : { ...base, outcome: "retryable", error: end.error, at: NOW + 10 * MINUTE },
    ],
  });
  assert.deepEqual(report.recorded, [job.id]);
  return job.id;
}
