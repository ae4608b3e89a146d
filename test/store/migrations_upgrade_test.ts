/**
 * Upgrading a database made by an older program: a file at schema version 1
 * (the kernel only, recorded in schema_migrations as migrate() records it)
 * is brought to the current version by openSqliteStore, its data kept.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { tempDir } from "../support/stores.ts";

/** Every migration after the first. */
const LATER = MIGRATIONS.filter((m) => m.version > 1);

const V1_AT = Date.UTC(2025, 5, 1);
const UPGRADE_AT = Date.UTC(2026, 0, 1);

/** Writes a version-1 database at `path` the way a version-1 program's migrate() did, with one job. */
function createVersion1(path: string): void {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("BEGIN IMMEDIATE");
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const first = MIGRATIONS[0]!;
    assert.equal(first.version, 1);
    db.exec(first.sql);
    db.prepare(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`)
      .run(first.version, first.name, V1_AT);
    db.prepare(
      `INSERT INTO jobs (state, queue, worker, args, max_attempts, inserted_at, scheduled_at,
         occurrence, schedule_id, scheduled_for)
       VALUES ('available', 'default', 'legacy', '{"n":1}', 5, ?, ?, 'old@2025-06-01T00:00:00.000Z',
         'old', ?)`,
    ).run(V1_AT, V1_AT, V1_AT);
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

Deno.test("openSqliteStore() upgrades a version-1 database to the latest, keeping its jobs", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    createVersion1(path);
    const store = await openSqliteStore(path, { now: UPGRADE_AT });
    try {
      const versions = store.db.prepare(
        "SELECT version, name, applied_at FROM schema_migrations ORDER BY version",
      ).all().map((r) => ({ ...r }));
      assert.deepEqual(versions, [
        { version: 1, name: "0001_init.sql", applied_at: V1_AT },
        ...LATER.map((m) => ({ version: m.version, name: m.name, applied_at: UPGRADE_AT })),
      ]);

      const [job] = await store.jobsList({});
      assert.ok(job);
      assert.equal(job.worker, "legacy");
      assert.deepEqual(job.args, { n: 1 });
      assert.equal(job.state, "available");
      assert.equal(job.occurrence, "old@2025-06-01T00:00:00.000Z");
      assert.equal(job.scheduleId, "old");

      // The schedules table and its index exist and work on the upgraded file.
      const index = store.db.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND name = 'jobs_schedule_active'",
      ).get();
      assert.ok(index, "index jobs_schedule_active");
      await store.schedulesSync({ schedules: [{ id: "old", hash: "h", tenant: null }], now: 1 });
      const [row] = await store.schedulesList({ ids: ["old"] });
      assert.equal(row!.enabled, true);
      assert.equal(row!.lastPlannedFor, null);

      // The legacy occurrence counts as waiting for its schedule.
      let waiting = -1;
      await store.schedulePlan({
        id: "old",
        now: UPGRADE_AT,
        plan: (ctx) => {
          waiting = ctx.waiting;
          return { jobs: [], cancelled: [], misfires: 0, lastMisfireFor: null, plannedFor: null };
        },
      });
      assert.equal(waiting, 1);
    } finally {
      await store.close();
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("migrate() on a version-1 database applies only the later versions", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    createVersion1(path);
    const store = await openSqliteStore(path, { migrate: false });
    try {
      const latest = MIGRATIONS.at(-1)!.version;
      assert.deepEqual(await store.migrate({ now: UPGRADE_AT }), {
        applied: LATER.map((m) => m.version),
        version: latest,
      });
      assert.deepEqual(await store.migrate({ now: UPGRADE_AT + 1 }), {
        applied: [],
        version: latest,
      });
      assert.equal((await store.jobsList({})).length, 1);
    } finally {
      await store.close();
    }
  } finally {
    await dir.cleanup();
  }
});
