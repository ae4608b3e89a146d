/**
 * `jobs status`: queues, nodes, schedules and the store's health, in text
 * and JSON; what it says about a store it cannot read, or whose schema is
 * older or newer.
 */

import assert from "node:assert/strict";
import { runJobs } from "../../support/cli.ts";
import {
  insert,
  jobs,
  NOW,
  plainJob,
  runOnce,
  SCHEDULES,
  withFixture,
} from "../../support/operator_fixture.ts";

const MINUTE = 60_000;
const ESC = "\x1b";

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
