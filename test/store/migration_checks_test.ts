/**
 * Migration 0010 rebuilds jobs and attempts to write their CHECK lists as
 * comparisons. On a store at version 9 with data in every shape, the
 * upgrade keeps every row, the id sequence, every index and the replay
 * trigger, and the checks still refuse what they refused.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { tempDir } from "../support/stores.ts";

const AT = Date.UTC(2026, 0, 1);

/** A version-9 file, migrated the way a version-9 program migrated it. */
function createVersion9(path: string): void {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("BEGIN IMMEDIATE");
    db.exec(`CREATE TABLE schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const record = db.prepare(
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
    );
    for (const m of MIGRATIONS.filter((m) => m.version <= 9)) {
      db.exec(m.sql);
      record.run(m.version, m.name, AT);
    }
    // A job row with the columns given, the others at their defaults.
    const job = (values: Record<string, string | number | null>) => {
      const row = { inserted_at: AT, scheduled_at: AT, max_attempts: 3, ...values };
      const names = ["queue", "worker", ...Object.keys(row)];
      db.prepare(
        `INSERT INTO jobs (${names.join(", ")})
         VALUES ('default', 'w', ${Object.keys(row).map(() => "?").join(", ")})`,
      ).run(...Object.values(row));
    };
    job({ state: "available", args: '{"n":1}' });
    job({
      state: "completed",
      args: '{"n":2}',
      attempt: 1,
      fence: 1,
      unique_key: "k2",
      unique_states: "all",
      occurrence: "s@1",
      schedule_id: "s",
      scheduled_for: AT,
      completed_at: AT + 5,
      tenant: "acme",
      priority: 3,
    });
    job({
      state: "discarded",
      args: '{"n":3}',
      attempt: 3,
      fence: 3,
      discarded_at: AT + 9,
      errors: '[{"at":1,"attempt":3,"error":"boom"}]',
      priority: 9,
    });
    job({
      state: "scheduled",
      args: '{"n":4}',
      scheduled_at: AT + 60_000,
      unique_key: "k4",
      unique_states: "incomplete",
    });
    job({ state: "available", args: '{"n":5}' });
    const attempt = db.prepare(
      `INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason, started_at,
         finished_at, outcome, error, output, definition)
       VALUES (?, ?, ?, 'n1', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    attempt.run(2, 1, 1, "run", null, null, AT, AT + 5, "completed", null, "out", "def");
    for (
      const [a, kind, outcome] of [[1, "run", "retryable"], [2, "retry", "retryable"]] as const
    ) {
      attempt.run(3, a, a, kind, null, null, AT, AT + 1, outcome, "boom", null, null);
    }
    attempt.run(3, 3, 3, "replay", "ops", "fixed", AT, AT + 9, "discarded", "boom", null, null);
    db.prepare(
      `INSERT INTO replays (job_id, after, actor, reason, at) VALUES (1, 0, 'ops', 'r', ?)`,
    )
      .run(AT);
    // The newest job pruned: the sequence (5) stands above the highest id left (4).
    db.exec("DELETE FROM jobs WHERE id = 5");
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

/** Every row of `table`, as plain objects, in key order. */
function rows(db: DatabaseSync, table: "jobs" | "attempts"): Record<string, unknown>[] {
  const order = table === "jobs" ? "id" : "job_id, fence";
  return db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all().map((r) => ({ ...r }));
}

/** The SQL of the indexes and triggers on jobs and attempts, by name. */
function schemaOf(db: DatabaseSync): Record<string, string> {
  return Object.fromEntries(
    db.prepare(
      `SELECT name, sql FROM sqlite_schema
       WHERE tbl_name IN ('jobs', 'attempts') AND type IN ('index', 'trigger') AND sql IS NOT NULL
       ORDER BY name`,
    ).all().map((r) => [r.name as string, r.sql as string]),
  );
}

Deno.test("0010 keeps every job, attempt, index, the trigger and the id sequence", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    createVersion9(path);
    const before = new DatabaseSync(path);
    const jobsBefore = rows(before, "jobs");
    const attemptsBefore = rows(before, "attempts");
    const schemaBefore = schemaOf(before);
    before.close();
    assert.equal(jobsBefore.length, 4);

    const store = await openSqliteStore(path, { now: AT });
    try {
      const db = store.db;
      assert.deepEqual(rows(db, "jobs"), jobsBefore);
      assert.deepEqual(rows(db, "attempts"), attemptsBefore);
      // Every index and trigger as it was (later migrations may add more).
      const after = schemaOf(db);
      assert.deepEqual(
        Object.fromEntries(Object.keys(schemaBefore).map((name) => [name, after[name]])),
        schemaBefore,
      );
      const leftovers = db.prepare(
        "SELECT name FROM sqlite_schema WHERE name LIKE '%rebuilt%'",
      ).all();
      assert.deepEqual(leftovers, []);

      // The pruned newest id is not handed out again.
      const [inserted] = await store.jobsInsert({
        jobs: [{
          queue: "default",
          worker: "w",
          args: "{}",
          meta: "{}",
          tags: "[]",
          tenant: null,
          priority: 0,
          maxAttempts: 1,
          scheduledAt: AT,
          uniqueKey: null,
          uniqueStates: null,
          occurrence: null,
          scheduleId: null,
          scheduledFor: null,
        }],
        now: AT,
      });
      assert.equal(inserted!.id, 6);

      // The checks still refuse what they refused.
      assert.throws(
        () => db.exec("UPDATE jobs SET state = 'running' WHERE id = 1"),
        /CHECK constraint failed/,
      );
      assert.throws(
        () => db.exec("UPDATE jobs SET unique_states = 'some' WHERE id = 2"),
        /CHECK constraint failed/,
      );
      assert.throws(
        () =>
          db.exec(`INSERT INTO attempts (job_id, attempt, fence, kind, started_at)
            VALUES (1, 1, 9, 'rerun', 0)`),
        /CHECK constraint failed/,
      );
      assert.throws(
        () =>
          db.exec(`INSERT INTO attempts (job_id, attempt, fence, kind, started_at, outcome)
            VALUES (1, 1, 9, 'run', 0, 'done')`),
        /CHECK constraint failed/,
      );
      // ...and let through every value they allowed.
      for (const state of ["scheduled", "executing", "retryable", "cancelled", "available"]) {
        db.prepare("UPDATE jobs SET state = ? WHERE id = 1").run(state);
      }

      // The replay trigger came back with the table: a replay attempt consumes the waiting row.
      db.exec(`INSERT INTO attempts (job_id, attempt, fence, kind, started_at)
        VALUES (1, 1, 1, 'replay', 0)`);
      assert.deepEqual(db.prepare("SELECT job_id FROM replays").all(), []);
    } finally {
      await store.close();
    }
  } finally {
    await dir.cleanup();
  }
});
