import assert from "node:assert/strict";
import type { NewJob } from "../../src/kernel/types.ts";
import { occurrenceId } from "../../src/schedule/occurrences.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { BACKENDS, newJob } from "../support/backends.ts";
import { runJobs } from "../support/cli.ts";
import {
  insert,
  jobs,
  nightlyJob,
  NOW,
  SCHEDULES,
  withFixture,
} from "../support/operator_fixture.ts";

const MINUTE = 60_000;
const ESC = "\x1b";
const RLO = "\u202e";

function plainJob(fields: Partial<NewJob> = {}): NewJob {
  return newJob({ worker: "mailer", maxAttempts: 3, scheduledAt: NOW - 30 * MINUTE, ...fields });
}

/**
 * Claims the one available job of `queue` on node `n1` and ends its attempt:
 * with `error` it becomes retryable, else it completes with `output`.
 */
async function runOnce(
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

Deno.test("jobs ls prints one line per job, newest first, with stored control characters escaped", async () => {
  await withFixture(async (f) => {
    const hostile = `boom ${ESC}[31mred${ESC}[0m ${RLO}txet desrever\nsecond line`;
    await insert(f.store, plainJob({ queue: "default", worker: "mailer" }));
    const failed = await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: hostile });
    const later = await insert(
      f.store,
      plainJob({ queue: "mail", worker: "digest", scheduledAt: NOW + 3 * MINUTE }),
      NOW - MINUTE,
    );

    const { code, out, err } = await jobs(["ls", "--db", f.db]);
    assert.equal(code, 0, err);
    assert.ok(!out.includes(ESC) && !out.includes(RLO), "no raw escape or bidi override");
    const lines = out.split("\n");
    assert.match(
      lines[0]!,
      /^ID\s+STATE\s+QUEUE\s+WORKER\s+TRY\s+NODE\s+OCCURRENCE\s+WHEN\s+LAST ERROR$/,
    );
    assert.equal(lines.length, 3);
    assert.match(
      lines[1]!,
      new RegExp(
        `^${later}\\s+scheduled\\s+mail\\s+digest\\s+0/3\\s+-\\s+-\\s+scheduled ` +
          `2026-06-01T09:03:00\\.000Z \\(in 3m\\)$`,
      ),
    );
    assert.match(
      lines[2]!,
      new RegExp(`^${failed}\\s+retryable\\s+default\\s+mailer\\s+1/3\\s+n1\\s+-`),
    );
    assert.ok(lines[2]!.endsWith("boom \\x1b[31mred\\x1b[0m \\u202etxet desrever"), lines[2]);
    assert.ok(!lines[2]!.includes("second line"), "only the first line of the error");

    const limited = await jobs(["ls", "--db", f.db, "--limit", "1"]);
    assert.equal(limited.out.split("\n").length, 2);
  });
});

Deno.test("jobs ls --json prints every field with ISO instants, escaping bidi overrides losslessly", async () => {
  await withFixture(async (f) => {
    await insert(
      f.store,
      plainJob({
        args: JSON.stringify({ to: "ops@example.com", password: "hunter2" }),
        tags: JSON.stringify(["billing"]),
      }),
    );
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: `bad ${RLO}gnirts` });

    const { code, out, err } = await jobs(["ls", "--db", f.db, "--json"]);
    assert.equal(code, 0, err);
    assert.ok(!out.includes(RLO), "the override is a \\u escape in the JSON text");
    const [job] = JSON.parse(out);
    assert.deepEqual(Object.keys(job).sort(), [
      "args",
      "attempt",
      "attemptedAt",
      "attemptedBy",
      "cancelledAt",
      "completedAt",
      "discardedAt",
      "errors",
      "fence",
      "id",
      "insertedAt",
      "leaseExpiresAt",
      "maxAttempts",
      "meta",
      "occurrence",
      "priority",
      "queue",
      "scheduleId",
      "scheduledAt",
      "scheduledFor",
      "state",
      "tags",
      "tenant",
      "uniqueKey",
      "uniqueStates",
      "worker",
    ]);
    assert.equal(job.state, "retryable");
    assert.equal(job.attemptedAt, "2026-06-01T08:40:00.000Z");
    assert.equal(job.completedAt, null);
    assert.deepEqual(job.tags, ["billing"]);
    assert.deepEqual(job.args, { to: "ops@example.com", password: "[REDACTED]" });
    assert.deepEqual(job.errors, [{
      at: "2026-06-01T08:40:01.500Z",
      attempt: 1,
      error: `bad ${RLO}gnirts`,
    }]);
  });
});

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] jobs ls --search finds the shown password= key, not the secret behind it`, async () => {
    const harness = await backend.open(NOW - 60 * MINUTE);
    try {
      const [secret] = (await harness.store.jobsInsert({
        now: NOW - 30 * MINUTE,
        jobs: [plainJob({ args: JSON.stringify({ argv: ["password=PASS-222"] }) })],
      })).map((r) => r.id);
      const ls = async (search: string) => {
        const r = await jobs(["ls", "--db", harness.location, "--json", "--search", search]);
        assert.equal(r.code, 0, r.err);
        assert.ok(!r.out.includes("PASS-222"), r.out);
        return JSON.parse(r.out).map((j: { id: number }) => j.id);
      };
      assert.deepEqual(await ls("PASS-2"), []);
      assert.deepEqual(await ls("password"), [secret]);
      assert.deepEqual(await ls("password=[REDACTED]"), [secret]);
      const text = await jobs(["ls", "--db", harness.location, "--search", "PASS-2"]);
      assert.equal(text.out, "no jobs match");
    } finally {
      await harness.close();
    }
  });
}

Deno.test("jobs ls filters by state, queue, schedule, worker, tag and search", async () => {
  await withFixture(async (f) => {
    const failed = await insert(f.store, plainJob({ worker: "mailer", tags: '["billing"]' }));
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: "SMTP 421 try later" });
    const nightly = await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    const digest = await insert(f.store, plainJob({ queue: "mail", worker: "digest" }));

    const ids = async (...args: string[]) => {
      const r = await jobs(["ls", "--db", f.db, "--json", ...args]);
      assert.equal(r.code, 0, r.err);
      return JSON.parse(r.out).map((j: { id: number }) => j.id);
    };
    assert.deepEqual(await ids(), [digest, nightly, failed]);
    assert.deepEqual(await ids("--state", "retryable"), [failed]);
    assert.deepEqual(await ids("--state", "retryable,available"), [digest, nightly, failed]);
    assert.deepEqual(await ids("--queue", "mail"), [digest]);
    assert.deepEqual(await ids("--schedule", "nightly"), [nightly]);
    assert.deepEqual(await ids("--worker", "mailer"), [failed]);
    assert.deepEqual(await ids("--tag", "billing"), [failed]);
    assert.deepEqual(await ids("--search", "smtp 421"), [failed]);
    assert.deepEqual(await ids("--search", "nightly@2026-06-01"), [nightly]);
    assert.deepEqual(await ids("--queue", "default", "--state", "available"), [nightly]);

    const none = await jobs(["ls", "--db", f.db, "--worker", "nobody"]);
    assert.equal(none.out, "no jobs match");

    const bad = await jobs(["ls", "--db", f.db, "--state", "retryable,runing"]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^jobs ls: .*"runing" is not a state \(scheduled, available/);
    const badLimit = await jobs(["ls", "--db", f.db, "--limit", "0"]);
    assert.equal(badLimit.code, 2);
    assert.match(badLimit.err, /"0" is not a whole number/);
  });
});

Deno.test("jobs show finds an occurrence and prints its fields, attempts, replay, output tail and audit", async () => {
  await withFixture(async (f) => {
    const occurrence = occurrenceId("nightly", Date.UTC(2026, 5, 1, 3));
    const id = await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    await runOnce(f.store, "default", NOW - 20 * MINUTE, {
      error: `vendor said ${ESC}]0;pwned${ESC}\\ no\nat line 2`,
    });
    const replay = await f.store.jobReplay({
      id,
      now: NOW - 10 * MINUTE,
      actor: "ada",
      reason: "vendor key rotated",
      force: false,
    });
    assert.deepEqual(replay, { replayed: true, was: "retryable" });
    await f.store.auditRecord({
      at: NOW - 10 * MINUTE,
      actor: "ada",
      action: "job.replay",
      target: `job:${id}`,
      reason: "vendor key rotated",
    });
    const output = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    await runOnce(f.store, "default", NOW - 5 * MINUTE, { output });

    const shown = await jobs(["show", occurrence, "--db", f.db]);
    assert.equal(shown.code, 0, shown.err);
    const out = shown.out;
    assert.ok(!out.includes(ESC), "no raw escape");
    assert.match(out, new RegExp(`^job ${id}$`, "m"));
    assert.match(out, /^ {2}state +completed$/m);
    assert.match(out, new RegExp(`^ {2}occurrence +${occurrence.replaceAll(".", "\\.")}$`, "m"));
    assert.match(out, /^ {2}schedule +nightly$/m);
    assert.match(out, /^ {2}attempt +2 of 20$/m);
    assert.match(out, /^ {2}completed at +2026-06-01T08:55:01\.500Z \(4m58s ago\)$/m);
    assert.match(out, /^ {2}args +\{"kind":"command","argv":\["true"\]/m);
    // Each error once, under its attempt (the job's errors list holds the same text).
    assert.match(
      out,
      /^ {2}#1 run on n1, fence 1: retryable\n.*\n {4}error:\n {6}vendor said \\x1b\]0;pwned\\x1b\\ no\n {6}at line 2\n {2}#2 /m,
    );
    assert.equal(out.split("vendor said").length, 2, "the error is printed once");
    assert.match(out, /^ {2}#1 run on n1, fence 1: retryable$/m);
    assert.match(out, /^ {2}#2 replay on n1, fence 2: completed$/m);
    assert.match(out, /^ {4}by ada: vendor key rotated$/m);
    assert.match(out, /^ {4}output \(last 20 of 25 lines\):$/m);
    assert.match(out, /^ {6}\| line 6$/m);
    assert.match(out, /^ {6}\| line 25$/m);
    assert.doesNotMatch(out, /\| line 5$/m);
    assert.match(
      out,
      /^audit \(1\):\n {2}2026-06-01T08:50:00\.000Z \(10m ago\) {2}ada {2}job\.replay: vendor key rotated$/m,
    );

    const byId = await jobs(["show", String(id), "--db", f.db, "--json"]);
    assert.equal(byId.code, 0, byId.err);
    const detail = JSON.parse(byId.out);
    assert.deepEqual(Object.keys(detail), ["job", "attempts", "audit"]);
    assert.equal(detail.job.occurrence, occurrence);
    assert.equal(detail.job.scheduledFor, "2026-06-01T03:00:00.000Z");
    assert.deepEqual(
      detail.attempts.map((a: Record<string, unknown>) => [a.attempt, a.kind, a.outcome, a.actor]),
      [[1, "run", "retryable", null], [2, "replay", "completed", "ada"]],
    );
    assert.equal(detail.attempts[1].output, output);
    assert.equal(detail.attempts[0].startedAt, "2026-06-01T08:40:00.000Z");
    assert.deepEqual(
      detail.audit.map((a: Record<string, unknown>) => [a.at, a.action, a.target]),
      [["2026-06-01T08:50:00.000Z", "job.replay", `job:${id}`]],
    );
  });
});

Deno.test("jobs show puts an operator's cancel reason among the other errors, not under the failed attempt of the same number", async () => {
  await withFixture(async (f) => {
    const id = await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: "vendor timed out" });
    // Retryable, so not executing: the cancel's error carries attempt 1 and no attempt row.
    await f.store.jobsCancel({ ids: [id], now: NOW - 5 * MINUTE, reason: "vendor gone for good" });

    const shown = await jobs(["show", String(id), "--db", f.db]);
    assert.equal(shown.code, 0, shown.err);
    assert.match(
      shown.out,
      /^ {2}#1 run on n1, fence 1: retryable\n.*\n {4}error:\n {6}vendor timed out\n\n/m,
    );
    assert.match(
      shown.out,
      /^other errors \(1, oldest first\):\n {2}attempt 1 at .*:\n {4}vendor gone for good$/m,
    );
    assert.equal(shown.out.split("vendor gone for good").length, 2, "printed once");
  });
});

Deno.test("jobs show exits 1 for an unknown id or occurrence and never creates a database", async () => {
  await withFixture(async (f) => {
    await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    const unknownId = await jobs(["show", "999", "--db", f.db]);
    assert.equal(unknownId.code, 1);
    assert.equal(unknownId.err, `jobs show: no job "999" in the store "${f.db}"`);
    const unknownOccurrence = await jobs([
      "show",
      "nightly@2026-05-31T03:00:00.000Z",
      "--db",
      f.db,
    ]);
    assert.equal(unknownOccurrence.code, 1);
    assert.match(
      unknownOccurrence.err,
      /^jobs show: no job with occurrence "nightly@2026-05-31T03:00:00\.000Z"/,
    );
    const hostile = await jobs(["show", `x${ESC}[2J`, "--db", f.db]);
    assert.equal(hostile.code, 1);
    assert.ok(hostile.err.includes("x\\x1b[2J"), hostile.err);

    const missing = `${f.db}.missing`;
    const noDb = await jobs(["show", "1", "--db", missing]);
    assert.equal(noDb.code, 1);
    assert.equal(
      noDb.err,
      `jobs show: no file "${missing}" for the store (from --db); did you mean "${f.db}"? ` +
        `(for a new store there: a daemon creates it when it starts, ` +
        `or run: jobsctl migrate --db ${missing})`,
    );
    await assert.rejects(Deno.stat(missing), Deno.errors.NotFound);
  });
});

Deno.test("jobs status shows queues, nodes with stale ones flagged, schedules and the store's health", async () => {
  await withFixture(async (f) => {
    await insert(f.store, plainJob());
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: "nope" });
    await insert(f.store, plainJob());
    await insert(f.store, plainJob({ queue: "mail" }));
    await f.store.queuePause({ name: "mail", paused: true, now: NOW - MINUTE });
    await f.store.nodeBeat({ node: "web-1:42", queues: { default: 4, mail: 2 }, now: NOW - 500 });
    await f.store.nodeBeat({ node: `old${ESC}[1m:7`, queues: { default: 1 }, now: NOW - 45_000 });
    await f.store.scheduleSetEnabled({
      id: "nightly",
      enabled: false,
      reason: "vendor API down",
      actor: "grace",
      now: NOW - 2 * 3_600_000,
    });

    const text = await jobs(["status", "--db", f.db, "--config", f.config]);
    assert.equal(text.code, 0, text.err);
    const out = text.out;
    assert.ok(!out.includes(ESC), "no raw escape");
    assert.match(out, /^status at 2026-06-01T09:00:00\.000Z$/m);
    assert.match(
      out,
      new RegExp(
        `^store: sqlite ${f.db}: reachable, schema v\\d+ \\(current\\), a read took \\d+ ms$`,
        "m",
      ),
    );
    assert.match(
      out,
      /^ {2}default +running +available 1, retryable 1 +concurrency 4 in the file +on web-1:42:4$/m,
    );
    assert.match(out, /^ {2}mail +PAUSED +available 1 +concurrency 2 in the file +on web-1:42:2$/m);
    assert.match(
      out,
      /^ {2}web-1:42 +default:4,mail:2 +heartbeat 2026-06-01T08:59:59\.500Z \(now\)/m,
    );
    assert.match(
      out,
      /^ {2}old\\x1b\[1m:7 +default:1 +heartbeat 2026-06-01T08:59:15\.000Z \(45s ago\) .* STALE$/m,
    );
    assert.match(
      out,
      /^ {2}nightly {2}disabled by grace 2026-06-01T07:00:00\.000Z \(2h ago\): vendor API down$/m,
    );
    assert.match(out, /^ {4}next none; misfires 0\n {4}last started -, completed -$/m);
    assert.match(out, /^ {2}reindex-search {2}enabled\n {4}next manual/m);

    const json = await jobs(["status", "--db", f.db, "--config", f.config, "--json"]);
    assert.equal(json.code, 0, json.err);
    const status = JSON.parse(json.out);
    assert.deepEqual(Object.keys(status), [
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
    assert.equal(status.moved, null, "a live store (migrate-store retires the ones it copied)");
    assert.deepEqual(status.pipelines, []);
    assert.equal(status.store.reachable, true);
    assert.equal(status.store.schemaVersion, status.store.knownVersion);
    assert.deepEqual(status.queues.find((q: { name: string }) => q.name === "default"), {
      name: "default",
      counts: {
        scheduled: 0,
        available: 1,
        executing: 0,
        retryable: 1,
        completed: 0,
        cancelled: 0,
        discarded: 0,
      },
      paused: false,
      pausedInFile: false,
      declaredConcurrency: 4,
      nodes: { "web-1:42": 4 },
      pause: null,
    });
    assert.deepEqual(
      status.nodes.map((n: Record<string, unknown>) => [n.node, n.heartbeatAgeMs, n.stale]),
      [["old\x1b[1m:7", 45_000, true], ["web-1:42", 500, false]],
    );
    const nightly = status.schedules.find((s: { id: string }) => s.id === "nightly");
    assert.equal(nightly.enabled, false);
    assert.equal(nightly.disabledIn, "store");
    assert.equal(nightly.disabledBy, "grace");
    assert.equal(nightly.disabledAt, "2026-06-01T07:00:00.000Z");

    await f.store.scheduleSetEnabled({
      id: "nightly",
      enabled: true,
      reason: null,
      actor: "grace",
      now: NOW,
    });
    const enabled = await jobs(["status", "--db", f.db, "--config", f.config, "--json"]);
    const next = JSON.parse(enabled.out).schedules.find((s: { id: string }) => s.id === "nightly");
    assert.equal(next.next, "2026-06-02T03:00:00.000Z");
    assert.equal(next.nextOccurrence, "nightly@2026-06-02T03:00:00.000Z");
  });
});

Deno.test("jobs status shows a schedule's instants in its own zone beside UTC, with the offset of each day (issue 26.12)", async () => {
  await withFixture(async (f) => {
    await Deno.writeTextFile(
      f.config,
      SCHEDULES.replace(
        '    cron: "0 3 * * *"\n',
        '    cron: "0 3 * * *"\n    timezone: Europe/Berlin\n' +
          "    local_time: { reason: the warehouse closes at 02:00 Berlin time, gap: shift, " +
          "overlap: first }\n",
      ),
    );
    // The last occurrence: 03:00 Berlin in winter (+01:00), that is the day before in UTC.
    f.store.db.exec(
      `UPDATE schedules SET last_started_at = ${Date.UTC(2026, 0, 14, 2)}, ` +
        `last_completed_at = ${Date.UTC(2026, 0, 14, 2, 0, 42)}, misfires = 1, ` +
        `last_misfire_for = ${Date.UTC(2025, 11, 31, 23, 30)} WHERE id = 'nightly'`,
    );
    const r = await jobs(["status", "--db", f.db, "--config", f.config]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n");
    const at = lines.indexOf("  nightly  enabled");
    assert.deepEqual(lines.slice(at + 1, at + 3), [
      "    next 2026-06-02T01:00:00.000Z (03:00 +02:00 Europe/Berlin, in 16h); misfires 1 " +
      "(last 2025-12-31T23:30:00.000Z (2026-01-01 00:30 +01:00 Europe/Berlin, 151d9h ago))",
      "    last started 2026-01-14T02:00:00.000Z (03:00 +01:00 Europe/Berlin, 138d7h ago), " +
      "completed 2026-01-14T02:00:42.000Z (03:00:42 +01:00 Europe/Berlin, 138d6h ago)",
    ]);
    // A manual schedule in UTC: its instants once.
    assert.match(
      r.out,
      /^ {2}reindex-search {2}enabled\n {4}next manual [^\n]*misfires 0\n {4}last started -, completed -$/m,
    );
    const json = JSON.parse(
      (await jobs(["status", "--db", f.db, "--config", f.config, "--json"])).out,
    );
    const nightly = json.schedules.find((s: { id: string }) => s.id === "nightly");
    assert.equal(nightly.next, "2026-06-02T01:00:00.000Z", "the JSON keeps its UTC instants");
    assert.equal(nightly.timezone, "Europe/Berlin", "and says the zone they are planned in");
  });
});

Deno.test("jobs status exits 1 and says so when there is no database, creating none and listing nothing", async () => {
  await withFixture(async (f) => {
    const missing = `${f.db.replace(/jobs\.db$/, "")}other/none.db`;
    const r = await jobs(["status", "--db", missing, "--config", f.config]);
    assert.equal(r.code, 1);
    assert.match(r.out, /^store: sqlite .*: NOT READABLE: no directory ".*" for the store /m);
    assert.doesNotMatch(r.out, /nightly|queues:|nodes:|schedules:/);
    assert.match(r.out, /^\(no queues, nodes or schedules shown: the store cannot be read\)$/m);
    assert.equal(
      r.err,
      `jobs status: the store is not readable: no directory "${
        missing.replace(/\/none\.db$/, "")
      }" for the store "${missing}" (from --db)`,
    );
    await assert.rejects(Deno.stat(missing), Deno.errors.NotFound);
  });
});

Deno.test("jobs status --db ./job.db beside ./jobs.db suggests ./jobs.db, lists no schedule and exits 1", async () => {
  await withFixture(async (f) => {
    const before = Deno.cwd();
    Deno.chdir(f.db.replace(/\/jobs\.db$/, ""));
    try {
      const r = await jobs(["status", "--db", "./job.db", "--config", f.config]);
      assert.equal(r.code, 1);
      assert.equal(
        r.err,
        `jobs status: the store is not readable: no file "./job.db" for the store (from --db); ` +
          `did you mean "./jobs.db"? (for a new store there: a daemon creates it when it ` +
          `starts, or run: jobsctl migrate --db ./job.db)`,
      );
      assert.doesNotMatch(r.out, /nightly|reindex-search|schedules:|queues:/);
      await assert.rejects(Deno.stat("./job.db"), Deno.errors.NotFound);
      // Without "./", the same store is suggested once; --json lists nothing either.
      const bare = await jobs(["status", "--db", "job.db", "--config", f.config, "--json"]);
      assert.equal(bare.code, 1);
      assert.match(bare.err, /; did you mean "jobs\.db"\? \(for a new store/);
      const json = JSON.parse(bare.out);
      assert.equal(json.store.reachable, false);
      assert.deepEqual([json.queues, json.nodes, json.schedules], [[], [], []]);
      // Named by JOBS_DB, the error says so.
      const env = await runJobs(["status", "--config", f.config], {
        now: NOW,
        env: { JOBS_DB: "./job.db" },
      });
      assert.equal(env.code, 1);
      assert.match(env.err, /no file "\.\/job\.db" for the store \(from JOBS_DB\); did you mean/);
    } finally {
      Deno.chdir(before);
    }
  });
});

Deno.test("jobs status reads the schema version without upgrading or touching an old or newer one", async () => {
  await withFixture(async (f) => {
    const version = () =>
      Number(f.store.db.prepare("SELECT max(version) AS v FROM schema_migrations").get()!.v);
    const known = version();
    f.store.db.exec(`DELETE FROM schema_migrations WHERE version > 1`);
    const old = await jobs(["status", "--db", f.db, "--config", f.config]);
    assert.equal(old.code, 1);
    assert.match(
      old.out,
      new RegExp(
        `NOT READABLE: the store "${f.db}" is at schema version 1, older than this ` +
          `program's \\(${known}\\) \\(from --db\\); run: jobsctl migrate --db ${f.db}$`,
        "m",
      ),
    );
    assert.equal(version(), 1, "status did not migrate");
    const ls = await jobs(["ls", "--db", f.db]);
    assert.equal(ls.code, 1);
    assert.match(ls.err, /^jobs ls: the store ".*" is at schema version 1, older/);
    assert.equal(version(), 1, "ls did not migrate");

    f.store.db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future.sql', 0)",
    ).run();
    const newer = await jobs(["status", "--db", f.db, "--config", f.config, "--json"]);
    assert.equal(newer.code, 1);
    const store = JSON.parse(newer.out).store;
    assert.equal(store.reachable, false);
    assert.equal(store.schemaVersion, 99);
    assert.equal(store.knownVersion, known);
    assert.match(store.error, /newer than this program knows/);
  });
});

Deno.test("jobs status shows who paused a queue, when and why, and each node's environment", async () => {
  await withFixture(async (f) => {
    await insert(f.store, plainJob({ queue: "mail" }));
    await f.store.nodeBeat({
      node: "web-1:42",
      queues: { mail: 2 },
      environment: "staging",
      now: NOW - 500,
    });
    const paused = await runJobs(
      ["pause", "mail", "--db", f.db, "--config", f.config, "--reason", "provider outage"],
      { now: NOW - 3 * MINUTE, env: { USER: "ada" } },
    );
    assert.equal(paused.code, 0, paused.err);

    const text = await jobs(["status", "--db", f.db, "--config", f.config]);
    assert.equal(text.code, 0, text.err);
    assert.match(
      text.out,
      /^ {2}mail +PAUSED .*\n {4}paused by ada 2026-06-01T08:57:00\.000Z \(3m ago\): provider outage$/m,
    );
    assert.match(text.out, /^ {2}web-1:42 +mail:2 +heartbeat .* environment staging$/m);
    const json = JSON.parse((await jobs(["status", "--db", f.db, "--json"])).out);
    const mail = json.queues.find((q: { name: string }) => q.name === "mail");
    assert.deepEqual(mail.pause, {
      at: "2026-06-01T08:57:00.000Z",
      actor: "ada",
      reason: "provider outage",
    });
    assert.equal(json.nodes[0].environment, "staging");

    // Resumed, then paused by something that leaves no audit row: nobody is named.
    await f.store.queuePause({ name: "mail", paused: false, now: NOW - 2 * MINUTE });
    await f.store.auditRecord({
      at: NOW - 2 * MINUTE,
      actor: "grace",
      action: "queue.resume",
      target: "queue:mail",
      reason: null,
    });
    await f.store.queuePause({ name: "mail", paused: true, now: NOW - MINUTE });
    const after = await jobs(["status", "--db", f.db, "--config", f.config]);
    assert.match(
      after.out,
      /^ {4}paused 2026-06-01T08:59:00\.000Z \(1m ago\), by no operator on record /m,
    );
  });
});

Deno.test("jobs status shows the schedules the store last synced, with their hashes, while the file has a syntax error", async () => {
  await withFixture(async (f) => {
    const [row] = await f.store.schedulesList({ ids: ["nightly"] });
    // A daemon keeps running these; the file on disk now has an error on line 6.
    await Deno.writeTextFile(f.config, SCHEDULES.replace('cron: "0 3 * * *"', 'cron: "0 3 * * *'));
    const r = await jobs(["status", "--db", f.db, "--config", f.config]);
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.out,
      new RegExp(
        `^schedules file: ${f.config} has errors and is not in force \\(a daemon keeps running ` +
          `the last good definitions, shown below as the store has them\\): ${f.config}:\\d+`,
        "m",
      ),
    );
    assert.match(
      r.out,
      new RegExp(
        `^ {2}nightly {2}enabled {2}\\(as stored: cron "0 3 \\* \\* \\*" in UTC, definition ` +
          `${row!.definitionHash!.slice(0, 12)}\\)$`,
        "m",
      ),
    );
    assert.match(r.out, /^ {4}next 2026-06-02T03:00:00\.000Z/m);
    assert.match(r.out, /^ {2}reindex-search {2}enabled {2}\(as stored: manual in UTC, /m);
    assert.doesNotMatch(r.out, /not in the schedules file|disabled in the file/);

    const json = await jobs(["status", "--db", f.db, "--config", f.config, "--json"]);
    const parsed = JSON.parse(json.out);
    assert.equal(parsed.config.schedulesFrom, "store");
    assert.equal(parsed.schedules[0].definitionHash, row!.definitionHash);
    assert.equal(parsed.schedules[0].enabled, true);
  });
});
