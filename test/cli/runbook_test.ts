import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import type { NewJob } from "../../src/kernel/types.ts";
import { loadSchedules } from "../../src/schedule/config.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { newJob } from "../support/backends.ts";
import { runJobs } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };
const OCCURRENCE = "nightly@2026-06-01T03:00:00.000Z";
const SCHEDULES = `version: 1
schedules:
  - id: nightly
    cron: "0 3 * * *"
    queue: reports
    max_attempts: 3
    tags: [reports]
    run: { command: ["true"] }
  - id: reindex
    manual: true
    guard: on-call only, outside business hours
    runs_where: staging
    run: { command: ["echo", "reindex"] }
`;

interface Files {
  db: string;
  config: string;
  dir: string;
}

async function withFiles(fn: (files: Files) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  try {
    const config = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(config, SCHEDULES);
    await fn({ db: `${dir.path}/jobs.db`, config, dir: dir.path });
  } finally {
    await dir.cleanup();
  }
}

async function withStore<T>(db: string, fn: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = await openSqliteStore(db, { now: NOW });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Inserts jobs, claims the first `claim` of them on node-a and completes the first `complete`. */
async function seed(
  db: string,
  jobs: Partial<NewJob>[],
  steps: { claim?: number; complete?: number } = {},
): Promise<number[]> {
  return await withStore(db, async (store) => {
    const ids = (await store.jobsInsert({
      jobs: jobs.map((fields) => newJob({ scheduledAt: NOW - 60_000, ...fields })),
      now: NOW - 60_000,
    })).map((r) => r.id);
    const claimed = [];
    for (const queue of new Set(jobs.map((j) => j.queue ?? "default"))) {
      const { jobs: got } = await store.jobsClaim({
        queue,
        node: "node-a",
        limit: steps.claim ?? 0,
        now: NOW - 50_000,
        leaseMs: 3_600_000,
      });
      claimed.push(...got);
    }
    await store.jobsRecord({
      node: "node-a",
      now: NOW - 40_000,
      results: claimed.slice(0, steps.complete ?? 0).map((job) => ({
        id: job.id,
        fence: job.fence,
        attempt: job.attempt,
        startedAt: job.attemptedAt,
        outcome: "completed" as const,
      })),
    });
    return ids;
  });
}

Deno.test("jobs replay adds a replay attempt to the same occurrence, audited", async () => {
  await withFiles(async ({ db }) => {
    const [id] = await seed(db, [{ occurrence: OCCURRENCE, scheduleId: "nightly" }], {
      claim: 1,
      complete: 1,
    });
    const noReason = await runJobs(["replay", OCCURRENCE, "--db", db], { now: NOW, env: ENV });
    assert.equal(noReason.code, 2);
    assert.match(noReason.err, /"--reason/);

    const replayed = await runJobs(
      ["replay", OCCURRENCE, "--db", db, "--reason", "report was empty"],
      { now: NOW, env: ENV },
    );
    assert.equal(replayed.code, 0, replayed.err);
    assert.equal(
      replayed.out,
      `replayed job ${id} (${OCCURRENCE}): it was completed; now available, ` +
        `its next attempt recorded as a replay by ada`,
    );

    await withStore(db, async (store) => {
      const jobs = await store.jobsList({ occurrence: OCCURRENCE });
      assert.deepEqual(jobs.map((j) => [j.id, j.state]), [[id, "available"]]);
      const { jobs: [again] } = await store.jobsClaim({
        queue: "default",
        node: "node-b",
        limit: 1,
        now: NOW + 1,
        leaseMs: 30_000,
      });
      assert.equal(again?.id, id);
      await store.jobsRecord({
        node: "node-b",
        now: NOW + 2,
        results: [{
          id: id!,
          fence: again!.fence,
          attempt: again!.attempt,
          startedAt: again!.attemptedAt,
          outcome: "completed",
        }],
      });
      const attempts = await store.attemptsList({ jobId: id! });
      assert.deepEqual(attempts.map((a) => [a.kind, a.actor, a.reason, a.node, a.outcome]), [
        ["run", null, null, "node-a", "completed"],
        ["replay", "ada", "report was empty", "node-b", "completed"],
      ]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details]), [
        ["job.replay", "ada", "report was empty", {
          occurrence: OCCURRENCE,
          was: "completed",
          force: false,
        }],
      ]);
    });

    // By id too; an unknown one is an error naming it.
    const byId = await runJobs(["replay", String(id), "--db", db, "--reason", "again", "--json"], {
      now: NOW + 10,
      env: ENV,
    });
    assert.equal(byId.code, 0, byId.err);
    assert.deepEqual(JSON.parse(byId.out), {
      id,
      occurrence: OCCURRENCE,
      was: "completed",
      state: "available",
      forced: false,
    });
    const unknown = await runJobs(["replay", "nightly@1999", "--db", db, "--reason", "x"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(unknown.code, 1);
    assert.equal(unknown.err, `jobs replay: no job or occurrence "nightly@1999"`);
  });
});

Deno.test("jobs replay refuses an executing job unless --force, which breaks its lease", async () => {
  await withFiles(async ({ db }) => {
    const [id] = await seed(db, [{ occurrence: OCCURRENCE, scheduleId: "nightly" }], { claim: 1 });
    const refused = await runJobs(["replay", OCCURRENCE, "--db", db, "--reason", "stuck"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(refused.code, 1);
    assert.match(refused.err, /is executing on node-a; nothing changed \(--force breaks its lease/);
    await withStore(db, async (store) => {
      assert.equal((await store.jobGet({ id: id! }))?.state, "executing");
      assert.deepEqual(await store.auditList({ target: `job:${id}` }), []);
    });

    const forced = await runJobs(
      ["replay", OCCURRENCE, "--db", db, "--reason", "stuck", "--force"],
      { now: NOW, env: ENV },
    );
    assert.equal(forced.code, 0, forced.err);
    assert.match(forced.out, /it was executing; the running attempt on node-a lost its lease/);
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id: id! });
      assert.equal(job?.state, "available");
      assert.equal(job?.occurrence, OCCURRENCE);
      const lease = { id: id!, fence: 1 };
      assert.deepEqual(await store.jobsLeasesLost({ node: "node-a", leases: [lease] }), [lease]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => a.details.force), [true]);
    });
  });
});

Deno.test("jobs retry with filters previews, changes nothing unless confirmed, acts with --yes", async () => {
  await withFiles(async ({ db }) => {
    const ids = await seed(db, [
      { queue: "mail", worker: "send" },
      { queue: "mail", worker: "send" },
      { queue: "mail", worker: "send\x1b[31m" },
      { queue: "other", worker: "send" },
    ]);
    await withStore(
      db,
      (store) =>
        store.jobsDiscard({ ids: [ids[0]!, ids[2]!, ids[3]!], now: NOW, reason: "poison" }),
    );
    const args = ["retry", "--queue", "mail", "--state", "discarded,available", "--db", db];

    const declined = await runJobs(args, { now: NOW, env: ENV, confirm: false });
    assert.equal(declined.code, 1);
    assert.equal(
      declined.err,
      "jobs retry: not confirmed; nothing changed (--yes acts without asking)",
    );
    const lines = declined.out.split("\n");
    assert.equal(lines[0], "would retry 2 jobs:");
    assert.match(lines[1]!, new RegExp(`^  #${ids[0]} +discarded +mail +send +-$`));
    // Stored text is escaped: the worker's escape sequence cannot reach the terminal.
    assert.match(lines[2]!, new RegExp(`^  #${ids[2]} +discarded +mail +send\\\\x1b\\[31m +-$`));
    assert.match(lines[3]!, new RegExp(`skipped #${ids[1]} +available .*: is already available$`));
    assert.equal(lines[4], "retry 2 jobs? [y/N]");
    assert.ok(!declined.out.includes("\x1b"));
    await withStore(db, async (store) => {
      const states = (await store.jobsList({ ids })).map((j) => j.state);
      assert.deepEqual(states, ["discarded", "available", "discarded", "discarded"]);
      assert.deepEqual(await store.auditList({ target: `job:${ids[0]}` }), []);
    });

    const yes = await runJobs([...args, "--yes", "--reason", "fixed the template"], {
      now: NOW + 1,
      env: ENV,
    });
    assert.equal(yes.code, 0, yes.err);
    assert.ok(!yes.out.includes("[y/N]"), "--yes asks nothing");
    assert.match(yes.out, /retried 2 jobs, skipped 1$/);
    await withStore(db, async (store) => {
      const states = (await store.jobsList({ ids })).map((j) => j.state);
      assert.deepEqual(states, ["available", "available", "available", "discarded"]);
      for (const id of [ids[0], ids[2]]) {
        const audit = await store.auditList({ target: `job:${id}` });
        assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details.was]), [
          ["job.retry", "ada", "fixed the template", "discarded"],
        ]);
      }
    });

    const confirmed = await runJobs(["retry", "--queue", "other", "--db", db], {
      now: NOW + 2,
      env: ENV,
      confirm: true,
    });
    assert.equal(confirmed.code, 0, confirmed.err);
    assert.match(confirmed.out, /retry 1 job\? \[y\/N\]\nretried #\d+ +\(was discarded\)/);

    const none = await runJobs(["retry", "--db", db], { now: NOW, env: ENV });
    assert.equal(none.code, 2);
    assert.match(none.err, /give job ids, or at least one filter/);
    const badState = await runJobs(["retry", "--state", "dead", "--db", db], {
      now: NOW,
      env: ENV,
    });
    assert.equal(badState.code, 2);
    assert.match(badState.err, /"dead" is not a job state/);
  });
});

Deno.test("jobs cancel and discard by id act at once, skip final jobs and audit each", async () => {
  await withFiles(async ({ db }) => {
    // All three claimed in id order; the first completed.
    const [finished, first, second] = await seed(db, [{}, {}, {}], { claim: 3, complete: 1 });
    const cancelled = await runJobs(
      [
        "cancel",
        String(finished),
        String(first),
        "--db",
        db,
        "--reason",
        "bad input password=hunter2",
      ],
      { now: NOW, env: ENV },
    );
    assert.equal(cancelled.code, 0, cancelled.err);
    assert.match(cancelled.out, /^skipped #\d+ .*: is already completed$/m);
    assert.match(cancelled.out, /cancelled 1 job, skipped 1$/);
    const discarded = await runJobs(["discard", String(second), "999", "--db", db, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(discarded.code, 1);
    assert.deepEqual(JSON.parse(discarded.out), {
      action: "discard",
      changed: [{ id: second, was: "executing" }],
      skipped: [],
      missing: [999],
    });
    assert.equal(discarded.err, "jobs discard: no job 999");
    await withStore(db, async (store) => {
      const jobs = await store.jobsList({ ids: [finished!, first!, second!] });
      assert.deepEqual(jobs.map((j) => j.state), ["completed", "cancelled", "discarded"]);
      // The reason is stored redacted, in the job's errors and in the audit trail.
      assert.equal(jobs[1]?.errors.at(-1)?.error, "bad input password=[REDACTED]");
      const cancelAudit = await store.auditList({ target: `job:${first}` });
      assert.deepEqual(cancelAudit.map((a) => [a.action, a.reason]), [
        ["job.cancel", "bad input password=[REDACTED]"],
      ]);
      const audit = await store.auditList({ target: `job:${second}` });
      assert.deepEqual(audit.map((a) => [a.action, a.details.was]), [["job.discard", "executing"]]);
    });
  });
});

Deno.test("jobs run refuses a manual schedule outside its runs_where and needs a reason", async () => {
  await withFiles(async ({ db, config }) => {
    const base = ["run", "reindex", "--db", db, "--config", config];
    const noReason = await runJobs([...base, "--environment", "staging"], { now: NOW, env: ENV });
    assert.equal(noReason.code, 2);
    assert.equal(noReason.out, "guard: on-call only, outside business hours");
    assert.match(noReason.err, /manual: --reason is required/);

    const elsewhere = await runJobs([...base, "--reason", "after deploy"], {
      now: NOW,
      env: { ...ENV, JOBS_ENVIRONMENT: "production" },
    });
    assert.equal(elsewhere.code, 1);
    assert.equal(elsewhere.out, "guard: on-call only, outside business hours");
    assert.equal(
      elsewhere.err,
      `jobs run: refused: schedule "reindex" runs only where the environment is "staging", ` +
        `and this is "production"`,
    );
    const unset = await runJobs([...base, "--reason", "after deploy"], { now: NOW, env: ENV });
    assert.equal(unset.code, 1);
    assert.match(unset.err, /and this is not set$/);
    await withStore(db, async (store) => assert.deepEqual(await store.jobsList({}), []));

    const ran = await runJobs([...base, "--reason", "after deploy", "--environment", "staging"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(ran.code, 0, ran.err);
    const occurrence = `reindex@${new Date(NOW).toISOString()}`;
    assert.match(ran.out, new RegExp(`ran reindex now: job \\d+, occurrence ${occurrence}`));
    await withStore(db, async (store) => {
      const [job] = await store.jobsList({ scheduleId: "reindex" });
      assert.equal(job?.occurrence, occurrence);
      assert.equal(job?.state, "available");
      assert.equal(job?.meta.manual, true);
      const audit = await store.auditList({ target: "schedule:reindex" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details]), [
        ["schedule.run", "ada", "after deploy", {
          job: job?.id,
          occurrence,
          trigger: "manual-schedule",
          environment: "staging",
        }],
      ]);
    });
  });
});

Deno.test("jobs run builds the occurrence exactly as the planner does, marked manual", async () => {
  await withFiles(async ({ db, config }) => {
    const ran = await runJobs(["run", "nightly", "--db", db, "--config", config, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(ran.code, 0, ran.err);
    const result = JSON.parse(ran.out);
    const loaded = await loadSchedules(config);
    assert.ok(loaded.ok);
    const schedule = loaded.config.schedules.find((s) => s.id === "nightly")!;
    const occurrence = `nightly@${new Date(NOW).toISOString()}`;
    const planned = occurrenceJob(schedule, { at: NOW, occurrence, local: "", note: null });
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id: result.id });
      assert.equal(result.occurrence, occurrence);
      assert.deepEqual(
        [job?.queue, job?.worker, job?.args, job?.tags, job?.maxAttempts, job?.scheduleId],
        [
          planned.queue,
          planned.worker,
          JSON.parse(planned.args),
          JSON.parse(planned.tags),
          planned.maxAttempts,
          "nightly",
        ],
      );
      assert.deepEqual(job?.meta, { ...JSON.parse(planned.meta), manual: true });
      assert.equal(job?.scheduledFor, NOW);
    });
    // The same instant again is the same identity: refused, not a second row.
    const twice = await runJobs(["run", "nightly", "--db", db, "--config", config], {
      now: NOW,
      env: ENV,
    });
    assert.equal(twice.code, 1);
    assert.match(twice.err, new RegExp(`occurrence "${occurrence}" already exists as job \\d+`));
  });
});

Deno.test("jobs enqueue prints the id, a duplicate's id, and names bad options", async () => {
  await withFiles(async ({ db }) => {
    const run = (args: string[]) =>
      runJobs(["enqueue", ...args, "--db", db], { now: NOW, env: ENV });
    const ok = await run([
      "send",
      "--args",
      '{"to":"a@example.com"}',
      "--queue",
      "mail",
      "--tag",
      "x",
      "--tag",
      "y",
      "--in",
      "15m",
    ]);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /^enqueued job (\d+): send on queue mail, scheduled$/);
    const id = Number(ok.out.match(/job (\d+)/)![1]);
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id });
      assert.deepEqual([job?.args, job?.tags, job?.scheduledAt], [
        { to: "a@example.com" },
        ["x", "y"],
        NOW + 15 * 60_000,
      ]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.details]), [
        ["job.enqueue", "ada", { worker: "send", queue: "mail", duplicate: false }],
      ]);
    });

    const first = await run(["dedupe", "--args", '{"n":1}', "--unique"]);
    const dup = await run(["dedupe", "--args", '{"n":1}', "--unique"]);
    const firstId = first.out.match(/job (\d+)/)![1];
    assert.match(dup.out, new RegExp(`^duplicate of ${firstId}: job ${firstId} \\(available`));

    const cases: [string[], RegExp][] = [
      [
        ["send", "--args", '{"to":'],
        /--args <json>" argument "\{"to":" is invalid\. .* is not JSON/,
      ],
      [["send", "--priority", "12"], /"12" is not a whole number from 0 to 9/],
      [["send", "--max-attempts", "0"], /"0" is not a whole number from 1 to 1000000/],
      [["send", "--in", "5x"], /"--in <duration>" argument "5x" is invalid/],
      [["send", "--at", "tomorrow"], /"--at <instant>" argument "tomorrow" is invalid/],
      [["send", "--in", "1m", "--at", "2026-06-01T10:00:00Z"], /give "in" or "at", not both/],
      [["send", "--queue", "no spaces"], /queue must be .*, got "no spaces"/],
      [["send", "--meta", "[1]"], /--meta must be a JSON object/],
      [
        ["send", "--unique-by", "nothing"],
        /--unique-by "nothing" must be args, worker or keys:a,b/,
      ],
    ];
    for (const [args, message] of cases) {
      const bad = await run(args);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.err}`);
      assert.match(bad.err, message);
      assert.match(bad.err, /^jobs enqueue: /);
    }
    await withStore(db, async (store) => assert.equal((await store.jobsList({})).length, 2));
  });
});

Deno.test("jobs prune --dry-run counts and deletes nothing; prune deletes old final jobs", async () => {
  await withFiles(async ({ db, dir }) => {
    const ids = await seed(db, [{}, {}, {}], { claim: 3, complete: 2 });
    const config = `${dir}/none.yaml`;
    const dry = await runJobs(["prune", "--db", db, "--completed", "1s", "--dry-run"], {
      now: NOW,
      env: { JOBS_CONFIG: config },
    });
    // JOBS_CONFIG names a missing file: an explicit file must load.
    assert.equal(dry.code, 1);
    assert.match(dry.err, /none\.yaml: 1 error/);

    const counted = await runJobs(["prune", "--db", db, "--completed", "1s", "--dry-run"], {
      now: NOW,
    });
    assert.equal(counted.code, 0, counted.err);
    assert.match(
      counted.out,
      /^would delete 2 jobs \(completed older than 1s, cancelled older than/,
    );
    await withStore(db, async (store) => assert.equal((await store.jobsList({ ids })).length, 3));

    const pruned = await runJobs(["prune", "--db", db, "--completed", "1s", "--reason", "disk"], {
      now: NOW,
      env: ENV,
    });
    assert.match(pruned.out, /^deleted 2 jobs/);
    await withStore(db, async (store) => {
      assert.deepEqual((await store.jobsList({ ids })).map((j) => j.state), ["executing"]);
      // Only the real prune is audited, not the dry runs.
      const audit = await store.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details.deleted]), [
        ["store.prune", "ada", "disk", 2],
      ]);
    });
  });
});

/** A database at schema version 1, as a version-1 program left it. */
function createVersion1(path: string, extraVersion?: number): void {
  const db = new DatabaseSync(path);
  try {
    db.exec(`CREATE TABLE schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    db.exec(MIGRATIONS[0]!.sql);
    const record = db.prepare(`INSERT INTO schema_migrations VALUES (?, ?, ?)`);
    record.run(1, MIGRATIONS[0]!.name, 0);
    if (extraVersion) record.run(extraVersion, "from the future", 0);
  } finally {
    db.close();
  }
}

Deno.test("jobs migrate --dry-run lists pending migrations and writes nothing", async () => {
  await withFiles(async ({ dir }) => {
    const missing = `${dir}/missing.db`;
    const none = await runJobs(["migrate", "--db", missing, "--dry-run"], { now: NOW });
    assert.equal(none.code, 0, none.err);
    assert.match(none.out, /at version 0 \(no file yet\); pending: 1 \(0001_init\.sql\), 2/);
    await assert.rejects(Deno.stat(missing), Deno.errors.NotFound);

    const db = `${dir}/v1.db`;
    createVersion1(db);
    const before = await Deno.readFile(db);
    const dry = await runJobs(["migrate", "--db", db, "--dry-run", "--json"], { now: NOW });
    assert.equal(dry.code, 0, dry.err);
    const later = MIGRATIONS.slice(1).map((m) => ({ version: m.version, name: m.name }));
    assert.deepEqual(JSON.parse(dry.out), {
      db,
      dryRun: true,
      exists: true,
      version: 1,
      migrations: later,
    });
    assert.deepEqual(await Deno.readFile(db), before);

    const applied = await runJobs(["migrate", "--db", db, "--actor", "ops"], { now: NOW });
    assert.equal(applied.code, 0, applied.err);
    await withStore(db, async (store) => {
      const audit = await store.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.details.applied]), [
        ["store.migrate", "ops", later.map((m) => m.version)],
      ]);
    });
    assert.equal(
      applied.out,
      `applied ${later.map((m) => `${m.version} (${m.name})`).join(", ")}; ` +
        `${db} is now at version ${MIGRATIONS.at(-1)!.version}`,
    );
    const again = await runJobs(["migrate", "--db", db, "--dry-run"], { now: NOW });
    assert.match(again.out, /the latest; nothing pending$/);

    const future = `${dir}/future.db`;
    createVersion1(future, 99);
    for (const args of [["--dry-run"], []]) {
      const refused = await runJobs(["migrate", "--db", future, ...args], { now: NOW });
      assert.equal(refused.code, 1);
      assert.match(refused.err, /schema version 99 is newer than this program knows/);
    }
  });
});
