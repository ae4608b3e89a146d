import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openSqliteStore, SchemaTooNewError } from "../../src/store.ts";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { tempDir } from "../support/stores.ts";

const MIGRATIONS_DIR = new URL("../../migrations/sqlite/", import.meta.url);

interface MigrationRow {
  version: number;
  name: string;
  applied_at: number;
}

function migrationRows(db: DatabaseSync): MigrationRow[] {
  return (db.prepare("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
    .all() as unknown as MigrationRow[]).map((r) => ({ ...r }));
}

Deno.test("a fresh file gets every migration applied and recorded in schema_migrations", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    const store = await openSqliteStore(path, { now: 1_767_225_600_000 });
    try {
      assert.deepEqual(
        migrationRows(store.db),
        MIGRATIONS.map((m) => ({
          version: m.version,
          name: m.name,
          applied_at: 1_767_225_600_000,
        })),
      );
      const tables = (store.db.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
      ).all() as { name: string }[]).map((r) => r.name);
      for (const table of ["attempts", "jobs", "nodes", "queues", "schema_migrations"]) {
        assert.ok(tables.includes(table), `table ${table} in ${tables.join(", ")}`);
      }
      const mode = store.db.prepare("PRAGMA journal_mode").get() as { journal_mode: string };
      assert.equal(mode.journal_mode, "wal");
    } finally {
      await store.close();
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("migrate() on a fresh file reports every version applied, in order", async () => {
  const dir = await tempDir();
  try {
    const store = await openSqliteStore(`${dir.path}/jobs.db`, { migrate: false });
    try {
      const report = await store.migrate({ now: 5 });
      assert.deepEqual(report.applied, MIGRATIONS.map((m) => m.version));
      assert.equal(report.version, MIGRATIONS.at(-1)!.version);
    } finally {
      await store.close();
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("opening an up-to-date file applies nothing and is idempotent", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    await (await openSqliteStore(path, { now: 1 })).close();
    const known = MIGRATIONS.at(-1)!.version;
    for (let i = 0; i < 3; i++) {
      const store = await openSqliteStore(path, { now: 100 + i });
      try {
        const report = await store.migrate({ now: 200 + i });
        assert.deepEqual(report, { applied: [], version: known });
        assert.deepEqual(
          migrationRows(store.db).map((r) => [r.version, r.applied_at]),
          MIGRATIONS.map((m) => [m.version, 1]),
          "applied_at stays that of the first open",
        );
      } finally {
        await store.close();
      }
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a file with a newer schema is refused with SchemaTooNewError and left byte-for-byte unchanged", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    await (await openSqliteStore(path, { now: 1 })).close();
    {
      const db = new DatabaseSync(path);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
        .run(999, "0999_future.sql", 2);
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      db.close();
    }
    const before = await Deno.readFile(path);
    const known = MIGRATIONS.at(-1)!.version;

    await assert.rejects(
      () => openSqliteStore(path, { now: 3 }),
      (error: unknown) => {
        assert.ok(error instanceof SchemaTooNewError, String(error));
        assert.equal(error.found, 999);
        assert.equal(error.known, known);
        assert.equal(error.location, path);
        assert.match(error.message, /schema version 999 is newer than this program knows/);
        assert.match(error.message, /the database was not modified/);
        return true;
      },
    );
    assert.deepEqual(await Deno.readFile(path), before, "the main file is unchanged");

    // migrate() on a store opened without migrating refuses the same way.
    const store = await openSqliteStore(path, { migrate: false });
    try {
      await assert.rejects(() => store.migrate({ now: 4 }), SchemaTooNewError);
    } finally {
      await store.close();
    }
    assert.deepEqual(await Deno.readFile(path), before, "still unchanged after migrate()");

    const db = new DatabaseSync(path);
    try {
      assert.deepEqual(migrationRows(db).map((r) => r.version), [
        ...MIGRATIONS.map((m) => m.version),
        999,
      ]);
    } finally {
      db.close();
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("MIGRATIONS lists every .sql file of migrations/sqlite/, numbered in order", async () => {
  const files: string[] = [];
  for await (const entry of Deno.readDir(MIGRATIONS_DIR)) {
    if (entry.isFile && entry.name.endsWith(".sql")) files.push(entry.name);
  }
  files.sort();
  assert.ok(files.length > 0);
  assert.deepEqual(MIGRATIONS.map((m) => m.name), files, "one entry per file, in file order");
  for (const [i, migration] of MIGRATIONS.entries()) {
    assert.equal(migration.version, i + 1, `${migration.name} is number ${i + 1}`);
    assert.match(migration.name, /^\d{4}_[a-z0-9_]+\.sql$/);
    assert.equal(Number(migration.name.slice(0, 4)), migration.version, migration.name);
    const text = await Deno.readTextFile(new URL(migration.name, MIGRATIONS_DIR));
    assert.equal(migration.sql, text, `${migration.name} is embedded as it is on disk`);
  }
});
