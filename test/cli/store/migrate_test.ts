/**
 * `jobs migrate`: pending migrations listed (`--dry-run`) or applied, audited.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "../../../src/store/sqlite/migrations.ts";
import { runJobs, withFiles } from "../../support/cli.ts";
import { withStore } from "../../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);

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
  await withFiles("version: 1\nschedules: []\n", async ({ dir }) => {
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
      assert.equal(
        refused.err,
        `jobs migrate: the store "${future}" is at schema version 99, newer than this program ` +
          `knows (${
            MIGRATIONS.at(-1)!.version
          }); upgrade this program, the store was not modified (from --db)`,
      );
    }
  });
});

Deno.test("jobs migrate creates a missing store, but not its directory", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ dir }) => {
    const db = `${dir}/new.db`;
    const created = await runJobs(["migrate", "--db", db, "--json"], { now: NOW });
    assert.equal(created.code, 0, created.err);
    const result = JSON.parse(created.out);
    assert.equal(result.exists, false);
    assert.equal(result.version, MIGRATIONS.at(-1)!.version);
    await withStore(db, async (store) => assert.equal(await store.schemaVersion(), result.version));

    const nowhere = `${dir}/missing/jobs.db`;
    for (const args of [[], ["--dry-run"]]) {
      const r = await runJobs(["migrate", "--db", nowhere, ...args], { now: NOW });
      assert.equal(r.code, 1);
      assert.equal(
        r.err,
        `jobs migrate: no directory "${dir}/missing" for the store "${nowhere}" (from --db)`,
      );
    }
  });
});
