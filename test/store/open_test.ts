/**
 * `openStore`: the location picks the store, the mode says what may happen
 * to it, and no error or location ever shows a password.
 */

import assert from "node:assert/strict";
import { describeLocation, openStore, parseLocation, storeSchema } from "../../src/store/open.ts";
import { SchemaTooOldError, StoreMissingError } from "../../src/store/errors.ts";
import { KNOWN_VERSION } from "../../src/store/sqlite/migrations.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { PostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { newJob, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 2, 8, 12);

Deno.test("parseLocation() selects PostgreSQL for postgres:// and postgresql:// and SQLite otherwise", () => {
  assert.deepEqual(parseLocation("./jobs.db"), { kind: "sqlite", path: "./jobs.db" });
  assert.deepEqual(parseLocation("postgres://u@h:5432/db"), {
    kind: "postgres",
    url: "postgres://u@h:5432/db",
    schema: "public",
  });
  assert.equal(parseLocation("POSTGRESQL://u@h/db?schema=team_a").kind, "postgres");
  assert.equal(
    (parseLocation("postgresql://u@h/db?schema=team_a") as { schema: string }).schema,
    "team_a",
  );
  assert.equal(parseLocation("/var/lib/postgres.db").kind, "sqlite");
});

Deno.test("parseLocation() refuses a schema name that is not an identifier, without the password", () => {
  assert.throws(
    () => parseLocation("postgres://u:hunter2@h/db?schema=Robert;DROP"),
    (error: Error) => {
      assert.match(error.message, /schema must be lowercase letters.*"Robert;DROP"/);
      assert.ok(!error.message.includes("hunter2"), error.message);
      return true;
    },
  );
});

Deno.test("describeLocation() removes the password and secret parameters, keeping the rest", () => {
  assert.equal(describeLocation("./jobs.db"), "./jobs.db");
  assert.equal(describeLocation("postgres://u@h:5432/db"), "postgres://u@h:5432/db");
  const described = describeLocation(
    "postgres://u:hunter2@h:5432/db?schema=s&sslpassword=hunter3&application_name=x",
  );
  assert.equal(described, "postgres://u@h:5432/db?schema=s&application_name=x");
  // Not a valid URL: the password still goes.
  assert.ok(!describeLocation("postgres://u:hun ter2@h:bad/db").includes("hun ter2"));
});

Deno.test("read and write modes never create a SQLite file; create does and migrates it", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/jobs.db`;
    for (const mode of ["read", "write"] as const) {
      await assert.rejects(openStore(path, { mode }), (error: Error) => {
        assert.ok(error instanceof StoreMissingError && error.reason === "no-file");
        assert.equal(error.message, `no file "${path}" for the store`);
        return true;
      });
      await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    }
    const created = await openStore(path, { mode: "create", now: NOW });
    assert.equal(created.schema.version, KNOWN_VERSION);
    assert.equal(created.applied.length, KNOWN_VERSION);
    assert.equal(created.applied[0]?.name, "0001_init.sql");
    await created.store.close();
    const again = await openStore(path, { mode: "write" });
    assert.deepEqual(again.applied, []);
    assert.deepEqual(again.schema, { version: KNOWN_VERSION, known: KNOWN_VERSION });
    await again.store.close();
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a missing folder is a StoreMissingError even in create mode", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/nope/jobs.db`;
    await assert.rejects(openStore(path, { mode: "create" }), (error: Error) => {
      assert.ok(error instanceof StoreMissingError && error.reason === "no-directory");
      assert.equal(error.message, `no directory "${dir.path}/nope" for the store "${path}"`);
      return true;
    });
  } finally {
    await dir.cleanup();
  }
});

Deno.test("read and write modes refuse an older schema untouched; storeSchema() lists what it lacks", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/old.db`;
    const old = await openSqliteStore(path, { now: NOW });
    old.db.exec("DELETE FROM schema_migrations WHERE version > 1");
    await old.close();
    for (const mode of ["read", "write"] as const) {
      await assert.rejects(openStore(path, { mode }), (error: Error) => {
        assert.ok(error instanceof SchemaTooOldError);
        assert.equal(error.found, 1);
        assert.equal(error.known, KNOWN_VERSION);
        return true;
      });
    }
    const schema = await storeSchema(path);
    assert.equal(schema.version, 1);
    assert.deepEqual(
      schema.pending.map((m) => m.version),
      Array.from({ length: KNOWN_VERSION - 1 }, (_, i) => i + 2),
    );
  } finally {
    await dir.cleanup();
  }
});

Deno.test("storeSchema() of a missing file lists every migration and creates nothing", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/later.db`;
    const schema = await storeSchema(path);
    assert.equal(schema.exists, false);
    assert.equal(schema.pending.length, KNOWN_VERSION);
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a postgres location that cannot be reached fails without showing its password", async () => {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  const url = "postgres://jobs:hunter2@127.0.0.1:1/jobs?schema=open_test&password=hunter3";
  for (const mode of ["read", "write", "create"] as const) {
    await assert.rejects(
      openStore(url, { mode, postgres: { connectTimeoutS: 2 } }),
      (error: Error) => {
        const text = `${error.message} ${String(error.cause ?? "")}`;
        assert.ok(!error.message.includes("hunter2"), error.message);
        assert.ok(!error.message.includes("hunter3"), error.message);
        assert.match(text, /127\.0\.0\.1/);
        return true;
      },
    );
  }
});

Deno.test("read mode opens a SQLite store while another connection holds the write lock: it writes nothing", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/busy.db`;
    const writer = await openSqliteStore(path, { now: NOW });
    await writer.jobsInsert({ jobs: [newJob({ scheduledAt: NOW })], now: NOW });
    writer.db.exec("BEGIN IMMEDIATE");
    try {
      // Migrating (even with nothing pending) takes the write lock and would
      // wait out the busy timeout, then fail.
      const { store } = await openStore(path, { mode: "read", sqlite: { busyTimeoutMs: 50 } });
      try {
        assert.equal((await store.jobsList({})).length, 1);
      } finally {
        await store.close();
      }
    } finally {
      writer.db.exec("ROLLBACK");
      await writer.close();
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("read mode opens a PostgreSQL schema as a role that may only read it", async () => {
  const schema = testSchema();
  const role = `${schema}_reader`;
  const { store: owner } = await openStore(`${POSTGRES_TEST_URL}?schema=${schema}`, {
    mode: "create",
    now: NOW,
  });
  const admin = owner as PostgresStore;
  try {
    await owner.jobsInsert({ jobs: [newJob({ scheduledAt: NOW })], now: NOW });
    await admin.transaction(async ({ sql }) => {
      await sql`CREATE ROLE ${sql(role)} LOGIN`;
      await sql`GRANT USAGE ON SCHEMA ${sql(schema)} TO ${sql(role)}`;
      await sql`GRANT SELECT ON ALL TABLES IN SCHEMA ${sql(schema)} TO ${sql(role)}`;
    });
    const url = new URL(POSTGRES_TEST_URL);
    url.username = role;
    url.searchParams.set("schema", schema);
    const { store } = await openStore(url.toString(), { mode: "read" });
    try {
      assert.equal((await store.jobsList({})).length, 1);
    } finally {
      await store.close();
    }
  } finally {
    await admin.transaction(async ({ sql }) => {
      await sql`DROP SCHEMA ${sql(schema)} CASCADE`;
      await sql`DROP ROLE IF EXISTS ${sql(role)}`;
    });
    await owner.close();
  }
});
