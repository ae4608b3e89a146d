/**
 * Moving from SQLite, as an operator does it: a daemon on a SQLite file runs
 * a per-second schedule for 30 s and is stopped; `jobs migrate-store` (a
 * subprocess) copies the file into a fresh PostgreSQL schema and prints
 * equal counts and checksums; a daemon on PostgreSQL then carries on: the
 * next occurrences are each planned and run once, with no gap after the
 * last one the SQLite daemon planned and no misfire counted for the move;
 * and a daemon started on the old file meanwhile is refused at once.
 */

import assert from "node:assert/strict";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { storeChecksums } from "../../src/store/transfer.ts";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, jobsCommand, POLL, readLines, startDaemon } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";

/** Occurrences the SQLite daemon runs before it is stopped: 30 s of them. */
const ON_SQLITE = 30;
/** Occurrences the PostgreSQL daemon must run after the move. */
const ON_POSTGRES = 4;

/** The instant of an occurrence identity `tick@<ISO>`. */
function instant(occurrence: string): number {
  return Date.parse(occurrence.slice(occurrence.indexOf("@") + 1));
}

/** Asserts `occurrences` are distinct and one second apart from the first to the last. */
function assertOnceEach(occurrences: string[], what: string): void {
  assert.equal(new Set(occurrences).size, occurrences.length, `${what}: duplicates`);
  const instants = occurrences.map(instant).sort((a, b) => a - b);
  const gaps = instants.slice(1).filter((t, i) => t - instants[i]! !== 1000);
  assert.deepEqual(gaps, [], `${what}: gaps after\n${occurrences.sort().join("\n")}`);
}

async function withOpened<T>(location: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const { store } = await openStore(location, { mode: "read" });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

Deno.test({
  name: "a store moved from SQLite by jobs migrate-store: equal counts and checksums, " +
    "and a daemon on PostgreSQL plans the next occurrences once, without gap or misfire",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    await using pg = postgresLocation();
    const { db, config, ledger } = dir;
    const tick = ["sh", "-c", 'echo "$JOBS_OCCURRENCE $JOBS_FENCE" >> "$1"', "sh", ledger];
    await Deno.writeTextFile(
      config,
      `version: 1
queues:
  default: { concurrency: 2 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ${JSON.stringify(tick)}
`,
    );

    await using lite = await startDaemon({ db, config, node: "lite" });
    await waitUntil(`${ON_SQLITE} occurrences on SQLite`, async () => {
      return (await readLines(ledger)).length >= ON_SQLITE;
    }, { timeoutMs: 60_000, ...POLL });
    assert.equal((await lite.stop("SIGTERM")).code, 0, lite.log());
    const before = await withOpened(db, async (store) => ({
      schedule: (await store.schedulesList({ ids: ["tick"] }))[0]!,
      jobs: await store.jobsList({ scheduleId: "tick" }),
      checksums: await storeChecksums(store),
    }));
    const onSqlite = (await readLines(ledger)).length;

    const moved = await jobsCommand(["migrate-store", "--from", db, "--to", pg.url, "--json"]);
    assert.equal(moved.code, 0, moved.stderr);
    const report = JSON.parse(moved.stdout);
    assert.equal(report.dryRun, false);
    assert.equal(report.retired, true);
    for (const t of report.tables) {
      assert.equal(t.targetRows, t.rows, `${t.table} count`);
      assert.equal(t.targetChecksum, t.checksum, `${t.table} checksum`);
    }
    const jobsRow = report.tables.find((t: { table: string }) => t.table === "jobs");
    assert.equal(jobsRow.rows, before.jobs.length);
    assert.deepEqual(await withOpened(pg.url, storeChecksums), before.checksums);

    // The old file is retired: a daemon left pointing at it (`deno task daemon`,
    // a shell without JOBS_DB) exits at once, naming the new store, and runs
    // nothing there.
    const stale = await jobsCommand(["daemon", "--db", db, "--config", config, "--listen", "off"]);
    assert.notEqual(stale.code, 0, stale.stderr);
    assert.match(stale.stderr, /jobs daemon: the store ".*" moved to "postgres:\/\//);
    assert.ok(stale.stderr.includes(`"${pg.url}"`), stale.stderr);
    assert.match(stale.stderr, /migrate-store --reopen --db /);
    await withOpened(db, async (store) => {
      assert.deepEqual(await store.jobsList({ scheduleId: "tick" }), before.jobs);
      assert.deepEqual((await store.schedulesList({ ids: ["tick"] }))[0], before.schedule);
    });

    await using onPg = await startDaemon({
      db: pg.url,
      config,
      node: "pg",
      env: { XDG_STATE_HOME: `${dir.path}/state` },
    });
    await waitUntil(`${ON_POSTGRES} more occurrences on PostgreSQL`, async () => {
      return (await readLines(ledger)).length >= onSqlite + ON_POSTGRES;
    }, { timeoutMs: 30_000, ...POLL });
    assert.equal((await onPg.stop("SIGTERM")).code, 0, onPg.log());

    const rows = await readLines(ledger);
    for (const row of rows) assert.match(row, /^tick@\S+ 1$/, rows.join("\n"));
    const ran = rows.map((row) => row.split(" ")[0]!);
    assertOnceEach(ran, "the ledger");

    await withOpened(pg.url, async (store) => {
      const jobs = await store.jobsList({ scheduleId: "tick" });
      const planned = jobs.map((j) => j.occurrence!);
      assertOnceEach(planned, "the store's occurrences");
      // Every occurrence the ledger holds is in the store, and the first one
      // planned on PostgreSQL follows the SQLite daemon's recovery point.
      for (const occurrence of ran) assert.ok(planned.includes(occurrence), occurrence);
      const fresh = jobs.filter((j) => !before.jobs.some((b) => b.id === j.id));
      assert.ok(fresh.length >= 1, "the PostgreSQL daemon planned occurrences");
      const firstFresh = Math.min(...fresh.map((j) => instant(j.occurrence!)));
      assert.equal(
        firstFresh,
        before.schedule.lastPlannedFor! - (before.schedule.lastPlannedFor! % 1000) + 1000,
      );
      const maxOld = Math.max(...before.jobs.map((j) => j.id));
      assert.ok(fresh.every((j) => j.id > maxOld), "new ids above the copied ones");
      const [schedule] = await store.schedulesList({ ids: ["tick"] });
      assert.equal(schedule!.misfires, before.schedule.misfires, "no misfire for the move");
      assert.ok(schedule!.lastPlannedFor! > before.schedule.lastPlannedFor!);
    });
  },
});
