import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { loadSchedules } from "../../src/config/load.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { planSchedules, syncSchedules } from "../../src/runtime/planner.ts";
import { runJobs } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 2, 7, 12);

/** Runs the command line in-process at NOW. */
function jobs(args: string[], env: Record<string, string> = {}) {
  return runJobs(args, { now: NOW, env });
}

const VALID = `version: 1
schedules:
  - id: nightly
    cron: "30 2 * * *"
    timezone: America/New_York
    local_time: { reason: the office runs on New York time, gap: shift, overlap: first }
    run: { command: ["true"] }
  - id: rebuild
    manual: true
    guard: on-call only
    runs_where: staging
    run: { worker: rebuild, args: {} }
`;

async function withFile(text: string, fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(path, text);
    await fn(path);
  } finally {
    await dir.cleanup();
  }
}

Deno.test("jobs check exits 0 on a valid file and reads JOBS_CONFIG", async () => {
  await withFile(VALID, async (path) => {
    const viaOption = await jobs(["check", "--config", path]);
    assert.equal(viaOption.code, 0, viaOption.err);
    assert.match(viaOption.out, /valid, 2 schedules, 0 queues$/);
    const viaEnv = await jobs(["check", "--json"], { JOBS_CONFIG: path });
    assert.equal(viaEnv.code, 0);
    assert.deepEqual(JSON.parse(viaEnv.out), { ok: true, file: path, schedules: 2, queues: 0 });
  });
});

Deno.test("jobs check exits 1 with every error, each naming its line", async () => {
  const bad = VALID.replace("America/New_York", "America/New_Yrok").replace(
    "    guard: on-call only\n",
    "",
  );
  await withFile(bad, async (path) => {
    const { code, err } = await jobs(["check", "--config", path]);
    assert.equal(code, 1);
    assert.match(err, /schedules\.yaml:5:\d+: schedule "nightly": .*"America\/New_Yrok"/);
    assert.match(err, /schedule "rebuild": .*guard/);
    const json = await jobs(["check", "--config", path, "--json"]);
    assert.equal(json.code, 1);
    const codes = JSON.parse(json.out).errors.map((e: { code: string }) => e.code).sort();
    assert.deepEqual(codes, ["job-guard-missing", "timezone-unknown"]);
  });
});

/** A file whose commands start programs that are missing, not executable, or fine; lines 1-13. */
const PROGRAMS = `version: 1
use_cases:
  hold: { command: ["./bin/app", "hold"] }
  note: { command: ["./bin/notes"] }
  mail: { command: ["no-such-program-7f3a"] }
  fine: { command: ["./bin/ok"] }
  cwd: { command: ["./ok"], cwd: bin }
  item: { command: ["sh", "-c", "./bin/app"] }
schedules:
  - id: each
    every: 1m
    selection: { command: ["./bin/list"] }
    run: { command: ["{item}"] }
`;

/** A folder holding PROGRAMS as schedules.yaml and bin/ with notes (not executable) and ok. */
async function withPrograms(fn: (dir: string, path: string) => Promise<void>): Promise<void> {
  await withFile(PROGRAMS, async (path) => {
    const dir = path.replace(/\/schedules\.yaml$/, "");
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(`${dir}/bin/notes`, "#!/bin/sh\n", { mode: 0o644 });
    await Deno.writeTextFile(`${dir}/bin/ok`, "#!/bin/sh\n", { mode: 0o755 });
    await fn(dir, path);
  });
}

Deno.test("jobs check warns, exit 0, about each command whose program is missing or not executable where a daemon started here runs it", async () => {
  await withPrograms(async (dir, path) => {
    const env = { PATH: "/usr/bin:/bin" };
    const here = await runJobs(["check", "--config", path], { now: NOW, env, cwd: dir });
    assert.equal(here.code, 0, here.err);
    assert.match(here.out, /: valid, 1 schedule, 0 queues, 6 use cases$/);
    const daemon =
      "a command without cwd runs in the daemon's working directory, here the current folder";
    assert.deepEqual(here.err.split("\n"), [
      `jobs check: warning: ${path}:3:21: use case "hold": command[0] "./bin/app" does not exist: ` +
      `no file ${dir}/bin/app (${daemon})`,
      `jobs check: warning: ${path}:4:21: use case "note": command[0] "./bin/notes" is not ` +
      `executable: ${dir}/bin/notes has no execute permission (${daemon})`,
      `jobs check: warning: ${path}:5:21: use case "mail": command[0] "no-such-program-7f3a" is ` +
      `not on PATH`,
      `jobs check: warning: ${path}:12:28: schedule "each": selection.command[0] "./bin/list" does ` +
      `not exist: no file ${dir}/bin/list (${daemon})`,
    ]);

    const json = await runJobs(["check", "--config", path, "--json"], { now: NOW, env, cwd: dir });
    assert.equal(json.code, 0, json.err);
    const { warnings } = JSON.parse(json.out);
    assert.deepEqual(
      warnings.map((w: Record<string, unknown>) => [w.code, w.line, w.field, w.value]),
      [
        ["command-missing", 3, "command[0]", "./bin/app"],
        ["command-not-executable", 4, "command[0]", "./bin/notes"],
        ["command-missing", 5, "command[0]", "no-such-program-7f3a"],
        ["command-missing", 12, "selection.command[0]", "./bin/list"],
      ],
    );
  });
});

Deno.test("jobs check run from another folder says a relative program is beside the file: start the daemon there", async () => {
  await withPrograms(async (dir, path) => {
    const elsewhere = await tempDir();
    try {
      const r = await runJobs(["check", "--config", path], {
        now: NOW,
        env: { PATH: "/usr/bin:/bin" },
        cwd: elsewhere.path,
      });
      assert.equal(r.code, 0, r.err);
      assert.match(
        r.err,
        new RegExp(
          `use case "fine": command\\[0\\] "\\./bin/ok" does not exist: no file ${elsewhere.path}/bin/ok ` +
            `\\(.*\\); ${dir}/bin/ok exists: start the daemon in ${dir}, or give the command a cwd$`,
          "m",
        ),
      );
    } finally {
      await elsewhere.cleanup();
    }
  });
});

/** A pipeline whose step and sink are commands beside the file; the step is on line 8. */
const PIPELINE = `version: 1
pipelines:
  - id: feed
    source: { file: ./feed.ndjson, format: ndjson }
    key: sku
    steps:
      - drop: drop-duplicates
        run: { command: ["./steps/dedupe"] }
    drop_reasons: [duplicate, poison]
    sink: { command: ["./bin/sink"] }
schedules: []
`;

Deno.test("jobs check looks for a pipeline's commands in the schedules file's folder, where they run", async () => {
  await withFile(PIPELINE, async (path) => {
    const dir = path.replace(/\/schedules\.yaml$/, "");
    await Deno.mkdir(`${dir}/steps`);
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(`${dir}/steps/dedupe`, "#!/bin/sh\n", { mode: 0o755 });
    await Deno.writeTextFile(`${dir}/bin/sink`, "#!/bin/sh\n", { mode: 0o755 });
    const elsewhere = await tempDir();
    try {
      // Run from another folder: the pipeline's commands are still the file's.
      const check = () =>
        runJobs(["check", "--config", path], {
          now: NOW,
          env: { PATH: "/usr/bin:/bin" },
          cwd: elsewhere.path,
        });
      const clean = await check();
      assert.equal(clean.code, 0, clean.err);
      assert.equal(clean.err, "");
      await Deno.chmod(`${dir}/steps/dedupe`, 0o644);
      const r = await check();
      assert.equal(r.code, 0, r.err);
      assert.equal(
        r.err,
        `jobs check: warning: ${path}:8:26: pipeline "feed": steps[0].run.command[0] ` +
          `"./steps/dedupe" is not executable: ${dir}/steps/dedupe has no execute permission ` +
          `(relative to the schedules file's folder, where the pipeline runs it)`,
      );
    } finally {
      await elsewhere.cleanup();
    }
  });
});

Deno.test("jobs next shifts 02:30 to 03:30 EDT on 2026-03-08 in America/New_York", async () => {
  await withFile(VALID, async (path) => {
    const { code, out } = await jobs([
      "next",
      "nightly",
      "--config",
      path,
      "--count",
      "3",
      "--json",
    ]);
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(out), [
      {
        at: "2026-03-08T07:30:00.000Z",
        occurrence: "nightly@2026-03-08T07:30:00.000Z",
        local: "2026-03-08T03:30:00-04:00[America/New_York]",
        note: "shifted: 02:30 does not exist on 2026-03-08",
      },
      {
        at: "2026-03-09T06:30:00.000Z",
        occurrence: "nightly@2026-03-09T06:30:00.000Z",
        local: "2026-03-09T02:30:00-04:00[America/New_York]",
        note: null,
      },
      {
        at: "2026-03-10T06:30:00.000Z",
        occurrence: "nightly@2026-03-10T06:30:00.000Z",
        local: "2026-03-10T02:30:00-04:00[America/New_York]",
        note: null,
      },
    ]);
    const text = await jobs([
      "next",
      "nightly",
      "--config",
      path,
      "--from",
      "2026-11-01T00:00:00Z",
    ]);
    assert.match(
      text.out.split("\n")[0]!,
      /^2026-11-01T07:30:00\.000Z {2}2026-11-01T02:30:00-05:00/,
    );
  });
});

Deno.test("jobs next names what is wrong: unknown schedule, bad instant, manual schedule", async () => {
  await withFile(VALID, async (path) => {
    const unknown = await jobs(["next", "nightlly", "--config", path]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no schedule "nightlly" .* "nightly", "rebuild"/);
    const instant = await jobs(["next", "nightly", "--config", path, "--from", "2026-03-08 02:30"]);
    assert.equal(instant.code, 2);
    assert.match(
      instant.err,
      /^jobs next: .*"2026-03-08 02:30" is not an ISO instant with an offset/,
    );
    const manual = await jobs(["next", "rebuild", "--config", path]);
    assert.equal(manual.code, 0);
    assert.match(manual.out, /rebuild is manual/);
  });
});

Deno.test("jobs with no command prints the help on stderr and exits 2", async () => {
  const { code, out, err } = await jobs([]);
  assert.equal(code, 2);
  assert.equal(out, "");
  assert.match(err, /^Usage: jobs/);
});

Deno.test("jobs schedules shows each schedule's stored state and next occurrence", async () => {
  await withFile(VALID, async (path) => {
    const db = path.replace(/schedules\.yaml$/, "jobs.db");
    const before = await jobs(["schedules", "--config", path, "--db", db, "--json"]);
    assert.equal(before.code, 0, before.err);
    assert.equal(await Deno.stat(db).catch(() => null), null, "a read creates no database");
    const listed = JSON.parse(before.out);
    assert.deepEqual(listed.map((s: { id: string }) => s.id), ["nightly", "rebuild"]);
    assert.equal(listed[0].lastPlannedFor, null);
    // 2026-03-07T12:00Z (the fake clock): the next 02:30 New York is shifted on 2026-03-08.
    assert.equal(listed[0].next, "2026-03-08T07:30:00.000Z");
    assert.match(
      listed[0].localTime,
      /^gap shift, overlap first: the office runs on New York time$/,
    );

    const loaded = await loadSchedules(path);
    assert.ok(loaded.ok);
    const store = await openSqliteStore(db);
    await syncSchedules(store, NOW, loaded.config.schedules);
    await planSchedules(store, NOW, loaded.config.schedules);
    await store.scheduleSetEnabled({
      id: "rebuild",
      enabled: false,
      reason: "index migration in progress",
      actor: "ops",
      now: NOW,
    });
    // The last occurrence started at 22:00 New York time the evening before (03:00Z).
    store.db.exec(
      `UPDATE schedules SET last_started_at = ${Date.UTC(2026, 2, 7, 3)}, ` +
        `last_completed_at = ${Date.UTC(2026, 2, 7, 3, 0, 42)} WHERE id = 'nightly'`,
    );
    await store.close();

    const after = await jobs(["schedules", "--config", path, "--db", db]);
    assert.equal(after.code, 0, after.err);
    assert.match(after.out, /^nightly {2}cron "30 2 \* \* \*" {2}America\/New_York \(gap shift/m);
    assert.match(after.out, /^rebuild {2}manual {2}UTC {2}disabled: index migration in progress$/m);
    // Each instant in UTC and in the schedule's own zone, its offset that day (issue 26.12).
    const lines = after.out.split("\n");
    assert.deepEqual(lines.slice(1, 3), [
      "  misfire fire_once, overlap allow; misfires 0; " +
      "next 2026-03-08T07:30:00.000Z (03:30 -04:00 America/New_York)",
      "  last planned 2026-03-07T12:00:00.000Z (07:00 -05:00 America/New_York), " +
      "started 2026-03-07T03:00:00.000Z (2026-03-06 22:00 -05:00 America/New_York), " +
      "completed 2026-03-07T03:00:42.000Z (2026-03-06 22:00:42 -05:00 America/New_York)",
    ]);
    // A schedule in UTC: once is enough.
    assert.deepEqual(lines.slice(4, 6), [
      "  misfire fire_once, overlap allow; misfires 0; next none",
      "  last planned never, started never, completed never",
    ]);
    const json = JSON.parse(
      (await jobs(["schedules", "--config", path, "--db", db, "--json"])).out,
    );
    assert.equal(json[0].next, "2026-03-08T07:30:00.000Z", "the JSON keeps its UTC instants");
    assert.equal(json[0].lastStartedAt, "2026-03-07T03:00:00.000Z");
  });
});

Deno.test("jobs schedules reads an older store without migrating it, and says why it shows no state", async () => {
  await withFile(VALID, async (path) => {
    const db = path.replace(/schedules\.yaml$/, "jobs.db");
    const store = await openSqliteStore(db);
    store.db.exec("DELETE FROM schema_migrations WHERE version > 1");
    await store.close();

    const r = await jobs(["schedules", "--config", path, "--db", db]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^nightly {2}cron /m);
    assert.match(
      r.err,
      new RegExp(
        `^jobs schedules: no stored state shown: the store "${db}" is at schema version 1, ` +
          `older than this program's \\(\\d+\\) \\(from --db\\); run: jobsctl migrate --db ${db}$`,
      ),
    );
    const version = new DatabaseSync(db);
    try {
      const row = version.prepare("SELECT max(version) AS v FROM schema_migrations").get();
      assert.equal(row?.v, 1, "jobs schedules migrated the store");
    } finally {
      version.close();
    }
  });
});

Deno.test("jobs schedules lists the definitions the store last synced, with a warning, while the file has a syntax error", async () => {
  await withFile(VALID, async (path) => {
    const db = path.replace(/schedules\.yaml$/, "jobs.db");
    const loaded = await loadSchedules(path);
    assert.ok(loaded.ok);
    const store = await openSqliteStore(db);
    await syncSchedules(store, NOW, loaded.config.schedules);
    await store.close();
    await Deno.writeTextFile(path, VALID.replace('cron: "30 2 * * *"', 'cron: "30 2 * * *'));

    const r = await jobs(["schedules", "--config", path, "--db", db]);
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.err,
      new RegExp(`^jobs schedules: warning: ${path} has errors and is not in force .*: ${path}:4:`),
    );
    assert.match(r.out, /^nightly {2}cron "30 2 \* \* \*" {2}America\/New_York \(gap shift/m);
    assert.match(r.out, /^rebuild {2}manual {2}UTC {2}enabled$/m);
  });
});
