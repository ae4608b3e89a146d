/**
 * The operator's commands on a PostgreSQL store (`--db postgres://...?schema=`):
 * `jobs status`, `ls`, `show`, `replay`, `pause` and `resume` print what
 * they print on SQLite (the shapes of test/cli/store/status_test.ts,
 * jobs/ls_test.ts, jobs/show_test.ts, jobs/actions_test.ts and
 * queues_test.ts), change the store as asked, audit it, and never show
 * the password of the location. The store is filled as a daemon would fill
 * it (planner sync, claims, results), at fixed instants, so each line can
 * be compared; one command also runs as a subprocess, as an operator types
 * it.
 */

import assert from "node:assert/strict";
import { loadSchedules } from "../../src/config/load.ts";
import { occurrenceId } from "../../src/schedule/occurrences.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { newJob } from "../support/backends.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { jobsCommand } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const MINUTE = 60_000;
/** PostgreSQL here trusts local connections: the password is accepted and ignored, never shown. */
const PASSWORD = "hunter2-s3cret";
const OCCURRENCE = occurrenceId("nightly", Date.UTC(2026, 5, 1, 3));

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 4 }
  mail: { concurrency: 2 }
schedules:
  - id: nightly
    cron: "0 3 * * *"
    misfire: catch_up
    run: { command: ["true"] }
  - id: reindex
    manual: true
    guard: anyone, any time
    runs_where: test
    run: { command: ["true"] }
`;

interface Fixture {
  /** The location with its password, as the operator types it. */
  db: string;
  /** The location as every output must show it. */
  shown: string;
  config: string;
  store: Store;
  nightly: Schedule;
}

/** A schedules file and a fresh PostgreSQL schema, migrated and synced an hour before NOW. */
async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  await using pg = postgresLocation();
  const url = new URL(pg.url);
  url.password = PASSWORD;
  const db = url.toString();
  await withFiles(SCHEDULES, async ({ config }) => {
    const loaded = await loadSchedules(config);
    if (!loaded.ok) throw new Error(loaded.errors.map((e) => e.message).join("\n"));
    const { store } = await openStore(db, { mode: "create", now: NOW - 60 * MINUTE });
    try {
      await syncSchedules(store, NOW - 60 * MINUTE, loaded.config.schedules);
      const nightly = loaded.config.schedules.find((s) => s.id === "nightly")!;
      await fn({ db, shown: pg.url, config, store, nightly });
    } finally {
      await store.close();
    }
  });
}

/**
 * Claims the one available job of `queue` on node `n1` and ends its attempt:
 * with `error` it becomes retryable, else it completes.
 */
async function runOnce(store: Store, queue: string, at: number, error?: string): Promise<number> {
  const { jobs } = await store.jobsClaim({ queue, node: "n1", limit: 1, now: at, leaseMs: MINUTE });
  const job = jobs[0];
  assert.ok(job, `a job to claim in ${queue}`);
  const base = { id: job.id, fence: job.fence, attempt: job.attempt, startedAt: at };
  const report = await store.jobsRecord({
    node: "n1",
    now: at + 1500,
    results: [
      error === undefined
        ? { ...base, outcome: "completed" }
        : { ...base, outcome: "retryable", error, at: NOW + 10 * MINUTE },
    ],
  });
  assert.deepEqual(report.recorded, [job.id]);
  return job.id;
}

function jobs(f: Fixture, args: string[], now = NOW) {
  return runJobs([...args, "--db", f.db], { now, env: { USER: "ada" } });
}

/** Every output of a command on the fixture: none may hold the password. */
function noSecret(...outputs: string[]): void {
  for (const out of outputs) assert.ok(!out.includes(PASSWORD), `the password shown:\n${out}`);
}

Deno.test("jobs status, ls and show on PostgreSQL print what they print on SQLite, without the password", async () => {
  await withFixture(async (f) => {
    const [nightly] = await f.store.jobsInsert({
      jobs: [occurrenceJob(f.nightly, {
        at: Date.UTC(2026, 5, 1, 3),
        occurrence: OCCURRENCE,
        local: "",
        note: null,
      })],
      now: NOW - 30 * MINUTE,
    });
    await runOnce(f.store, "default", NOW - 20 * MINUTE, "vendor said no");
    const [mail] = await f.store.jobsInsert({
      jobs: [
        newJob({ queue: "mail", worker: "digest", maxAttempts: 3, scheduledAt: NOW + 3 * MINUTE }),
      ],
      now: NOW - MINUTE,
    });
    await f.store.nodeBeat({ node: "web-1:42", queues: { default: 4, mail: 2 }, now: NOW - 500 });

    const status = await jobs(f, ["status", "--config", f.config]);
    assert.equal(status.code, 0, status.err);
    noSecret(status.out, status.err);
    assert.match(status.out, /^status at 2026-06-01T09:00:00\.000Z$/m);
    const where = f.shown.replaceAll(/[.?]/g, "\\$&");
    assert.match(
      status.out,
      new RegExp(
        `^store: postgres ${where}: reachable, schema v\\d+ \\(current\\), a read took \\d+ ms$`,
        "m",
      ),
    );
    assert.match(
      status.out,
      /^ {2}default +running +retryable 1 +concurrency 4 in the file +on web-1:42:4$/m,
    );
    assert.match(
      status.out,
      /^ {2}mail +running +scheduled 1 +concurrency 2 in the file +on web-1:42:2$/m,
    );
    assert.match(
      status.out,
      /^ {2}web-1:42 +default:4,mail:2 +heartbeat 2026-06-01T08:59:59\.500Z \(now\)/m,
    );
    assert.match(status.out, /^ {2}nightly {2}enabled\n {4}next 2026-06-02T03:00:00\.000Z/m);
    const json = JSON.parse((await jobs(f, ["status", "--config", f.config, "--json"])).out);
    assert.deepEqual(Object.keys(json), [
      "now",
      "store",
      "moved",
      "config",
      "queues",
      "nodes",
      "schedules",
      "pipelines",
      "leader",
    ]);
    assert.equal(json.store.reachable, true);
    assert.equal(json.store.schemaVersion, json.store.knownVersion);
    noSecret(JSON.stringify(json));

    const ls = await jobs(f, ["ls"]);
    assert.equal(ls.code, 0, ls.err);
    const lines = ls.out.split("\n");
    assert.match(
      lines[0]!,
      /^ID\s+STATE\s+QUEUE\s+WORKER\s+TRY\s+NODE\s+OCCURRENCE\s+WHEN\s+LAST ERROR$/,
    );
    assert.equal(lines.length, 3, ls.out);
    assert.match(
      lines[1]!,
      new RegExp(
        `^${mail!.id}\\s+scheduled\\s+mail\\s+digest\\s+0/3\\s+-\\s+-\\s+scheduled ` +
          `2026-06-01T09:03:00\\.000Z \\(in 3m\\)$`,
      ),
    );
    assert.match(
      lines[2]!,
      new RegExp(
        `^${nightly!.id}\\s+retryable\\s+default\\s+jobs\\.command\\s+1/20\\s+n1\\s+` +
          `${OCCURRENCE.replaceAll(".", "\\.")}\\s+.*vendor said no$`,
      ),
    );
    const filtered = await jobs(f, ["ls", "--state", "retryable", "--queue", "default", "--json"]);
    assert.deepEqual(JSON.parse(filtered.out).map((j: { id: number }) => j.id), [nightly!.id]);

    const shown = await jobs(f, ["show", OCCURRENCE]);
    assert.equal(shown.code, 0, shown.err);
    noSecret(shown.out, shown.err);
    assert.match(shown.out, new RegExp(`^job ${nightly!.id}$`, "m"));
    assert.match(shown.out, /^ {2}state +retryable$/m);
    assert.match(shown.out, /^ {2}schedule +nightly$/m);
    assert.match(shown.out, /^ {2}attempt +1 of 20$/m);
    assert.match(shown.out, /^ {2}args +\{"kind":"command","argv":\["true"\]/m);
    assert.match(shown.out, /^ {2}#1 run on n1, fence 1: retryable$/m);
    assert.match(shown.out, /^ {6}vendor said no$/m);
    const byId = JSON.parse((await jobs(f, ["show", String(nightly!.id), "--json"])).out);
    assert.deepEqual(Object.keys(byId), ["job", "attempts", "audit"]);
    assert.equal(byId.job.occurrence, OCCURRENCE);
    assert.equal(byId.job.scheduledFor, "2026-06-01T03:00:00.000Z");
    assert.equal(byId.attempts[0].startedAt, "2026-06-01T08:40:00.000Z");

    const unknown = await jobs(f, ["show", "nightly@1999"]);
    assert.equal(unknown.code, 1);
    assert.ok(
      unknown.err.startsWith(
        `jobs show: no job with occurrence "nightly@1999" in the store "${f.shown}": `,
      ),
      unknown.err,
    );
    assert.match(unknown.err, /did you mean "nightly@2026-06-01T03:00:00\.000Z"\?/);
  });
});

Deno.test("jobs replay, pause and resume on PostgreSQL change the store as asked and audit it", async () => {
  await withFixture(async (f) => {
    const [inserted] = await f.store.jobsInsert({
      jobs: [occurrenceJob(f.nightly, {
        at: Date.UTC(2026, 5, 1, 3),
        occurrence: OCCURRENCE,
        local: "",
        note: null,
      })],
      now: NOW - 30 * MINUTE,
    });
    const id = inserted!.id;
    await runOnce(f.store, "default", NOW - 20 * MINUTE);

    const replayed = await jobs(f, [
      "replay",
      OCCURRENCE,
      "--config",
      f.config,
      "--reason",
      "report was empty",
      "--as-planned",
    ]);
    assert.equal(replayed.code, 0, replayed.err);
    noSecret(replayed.out, replayed.err);
    // With --config the schedule's stored definition is named too, as on SQLite.
    assert.match(
      replayed.out,
      new RegExp(
        `^replayed job ${id} \\(${OCCURRENCE.replaceAll(".", "\\.")}\\): it was completed; ` +
          `now available, its next attempt recorded as a replay by ada\n` +
          `  runs as planned \\(definition \\S+\\): --as-planned$`,
      ),
    );
    const [job] = await f.store.jobsList({ occurrence: OCCURRENCE });
    assert.deepEqual([job?.id, job?.state], [id, "available"]);
    await runOnce(f.store, "default", NOW + 1_000);
    const attempts = await f.store.attemptsList({ jobId: id });
    assert.deepEqual(attempts.map((a) => [a.kind, a.actor, a.reason, a.fence, a.outcome]), [
      ["run", null, null, 1, "completed"],
      ["replay", "ada", "report was empty", 2, "completed"],
    ]);
    const audit = await f.store.auditList({ target: `job:${id}` });
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.reason, a.details.occurrence, a.details.was]),
      [["job.replay", "ada", "report was empty", OCCURRENCE, "completed"]],
    );

    const paused = await jobs(f, ["pause", "mail", "--config", f.config, "--reason", "outage"]);
    assert.equal(paused.code, 0, paused.err);
    assert.match(paused.out, /^queue mail paused for every process/);
    noSecret(paused.out, paused.err);
    assert.deepEqual(
      (await f.store.queuesList()).filter((q) => q.name === "mail").map((q) => q.paused),
      [true],
    );
    // A paused queue claims nothing, for any node.
    await f.store.jobsInsert({
      jobs: [newJob({ queue: "mail", scheduledAt: NOW - MINUTE })],
      now: NOW - MINUTE,
    });
    const none = await f.store.jobsClaim({
      queue: "mail",
      node: "n2",
      limit: 1,
      now: NOW + 2_000,
      leaseMs: MINUTE,
    });
    assert.deepEqual(none.jobs, []);
    const status = await jobs(f, ["status", "--config", f.config], NOW + 3 * MINUTE);
    assert.match(
      status.out,
      /^ {2}mail +PAUSED .*\n {4}paused by ada 2026-06-01T09:00:00\.000Z \(3m ago\): outage$/m,
    );

    const resumed = await jobs(f, [
      "resume",
      "mail",
      "--config",
      f.config,
      "--actor",
      "grace",
      "--json",
    ]);
    assert.equal(resumed.code, 0, resumed.err);
    assert.deepEqual(JSON.parse(resumed.out), {
      queue: "mail",
      paused: false,
      was: true,
      db: f.shown,
    });
    const queueAudit = await f.store.auditList({ target: "queue:mail" });
    assert.deepEqual(queueAudit.map((a) => [a.action, a.actor, a.reason]), [
      ["queue.pause", "ada", "outage"],
      ["queue.resume", "grace", null],
    ]);
    const claimed = await f.store.jobsClaim({
      queue: "mail",
      node: "n2",
      limit: 1,
      now: NOW + 4_000,
      leaseMs: MINUTE,
    });
    assert.equal(claimed.jobs.length, 1);
  });
});

Deno.test("migrate, runbook and run on PostgreSQL name the store without its password", async () => {
  await withFixture(async (f) => {
    const migrated = await jobs(f, ["migrate", "--json"]);
    assert.equal(migrated.code, 0, migrated.err);
    assert.equal(JSON.parse(migrated.out).db, f.shown);
    const dry = await jobs(f, ["migrate", "--dry-run"]);
    assert.equal(dry.code, 0, dry.err);
    assert.match(dry.out, new RegExp(`^${f.shown.replaceAll(/[.?]/g, "\\$&")} is at version \\d+`));
    const runbook = await jobs(f, ["runbook", "--config", f.config]);
    assert.equal(runbook.code, 0, runbook.err);
    assert.match(runbook.out, /^runbook: .*, store postgres:\/\/postgres@127\.0\.0\.1/);
    const ran = await jobs(f, [
      "run",
      "reindex",
      "--config",
      f.config,
      "--reason",
      "e2e",
      "--environment",
      "test",
    ]);
    assert.equal(ran.code, 0, ran.err);
    assert.match(
      ran.out,
      /a daemon on postgres:\/\/postgres@127\.0\.0\.1:5432\/test\?schema=\w+ runs it$/m,
    );
    assert.deepEqual((await f.store.jobsList({ scheduleId: "reindex" })).map((j) => j.state), [
      "available",
    ]);
    noSecret(migrated.out, migrated.err, dry.out, runbook.out, runbook.err, ran.out, ran.err);
  });
});

Deno.test("jobs ls as a subprocess reads a PostgreSQL store and never shows its password", async () => {
  await withFixture(async (f) => {
    await f.store.jobsInsert({
      jobs: [newJob({ worker: "mailer", scheduledAt: NOW })],
      now: NOW,
    });
    const listed = await jobsCommand(["ls", "--db", f.db, "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    noSecret(listed.stdout, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout).map((j: { worker: string }) => j.worker), [
      "mailer",
    ]);
    // A schema that does not exist is an error naming the location, credentials removed.
    const missing = f.db.replace(/schema=\w+/, "schema=jobs_test_nothing_here");
    const refused = await jobsCommand(["ls", "--db", missing]);
    assert.equal(refused.code, 1, refused.stdout);
    noSecret(refused.stdout, refused.stderr);
    assert.match(refused.stderr, /jobs_test_nothing_here/);
  });
});
