/**
 * The one way to open a store at any location, used by the library
 * (`openJobs`), the daemon, every CLI command and the TUI. Nothing outside
 * `src/store/` imports an adapter: the location picks it (see
 * {@linkcode parseLocation}), and PostgreSQL's is loaded only when a
 * location names it, so SQLite users never load postgres.js.
 *
 * Modes:
 *
 * - `read`: an existing store at the current schema. Nothing is created and
 *   nothing is migrated; an older schema is a {@linkcode SchemaTooOldError}
 *   (the caller names the migrate command), so a newer program never changes
 *   the schema under an older daemon.
 * - `write`: the same, for callers that change rows, and the store must be
 *   writable: a mistyped location is an error, never a new empty store.
 * - `create`: created when missing and brought to the current schema.
 *
 * @module
 */

import { dirname } from "node:path";
import {
  MOVED_SETTING,
  SchemaTooOldError,
  StoreMissingError,
  type StoreMove,
  StoreMovedError,
} from "./errors.ts";
import { describeLocation, isPostgresLocation, parseLocation } from "./location.ts";
import type { MigrationInfo, Store, StoreTx } from "./store.ts";
import type { PostgresOptions, PostgresTx } from "./postgres/postgres_store.ts";
import {
  explainOpenFailure,
  openSqliteStore,
  SchemaTooNewError,
  type SqliteOptions,
  SqliteStore,
  type SqliteTx,
} from "./sqlite/sqlite_store.ts";

export { describeLocation, isPostgresLocation, parseLocation } from "./location.ts";
export { MOVED_SETTING, type StoreMove, StoreMovedError } from "./errors.ts";
export type { StoreLocation } from "./location.ts";
export { openSqliteStore, SchemaTooNewError, type SqliteOptions, SqliteStore, type SqliteTx };
/** The PostgreSQL store's transaction (`tx.sql`); a type only, so SQLite users load no postgres.js. */
export type { PostgresOptions, PostgresTx } from "./postgres/postgres_store.ts";

/** What the caller does to the store; see the module's documentation. */
export type StoreMode = "read" | "write" | "create";

/** PostgreSQL settings of {@linkcode openStore}. */
export interface PostgresSettings {
  /** Connections in the pool. @default 10 */
  max?: number;
  /** How long opening a connection may take, in seconds. @default 10 */
  connectTimeoutS?: number;
  /** The `application_name` of every session. @default "jobs" */
  applicationName?: string;
  /**
   * How long a statement waits for another session's lock before the call
   * fails as "the store is locked", in ms (SQLite's busy timeout). @default 5000
   */
  lockTimeoutMs?: number;
}

/** Options for {@linkcode openStore}. */
export interface OpenStoreOptions {
  /** What the caller does to the store. */
  mode: StoreMode;
  /** The instant recorded for migrations applied in `create` mode. @default 0 */
  now?: number;
  /** SQLite settings (busy timeout, synchronous, polls); ignored for PostgreSQL. */
  sqlite?: Omit<SqliteOptions, "migrate" | "now" | "readOnly">;
  /** PostgreSQL settings (pool, timeouts); ignored for SQLite. */
  postgres?: PostgresSettings;
  /**
   * Leave to write to a store that moved (`jobs migrate-store` retired it),
   * recorded in its audit trail as `store.write_moved` by this actor.
   * Without it, `write` and `create` on a moved store fail with a
   * {@linkcode StoreMovedError}; `read` always opens.
   */
  writeMoved?: { actor: string; reason?: string | null };
}

/** An open store with the schema it is at. */
export interface OpenedStore {
  store: Store;
  schema: { version: number; known: number };
  /** The migrations applied on opening (`create` only), in order. */
  applied: MigrationInfo[];
  /** Where the store moved (`jobs migrate-store`), or null while it is live. */
  moved: StoreMove | null;
}

/** Where the store moved (its {@linkcode MOVED_SETTING}), or null while it is live. */
export async function storeMove(store: Store): Promise<StoreMove | null> {
  const value = await store.settingGet({ key: MOVED_SETTING }) as Partial<StoreMove> | null;
  if (value === null || typeof value !== "object" || typeof value.to !== "string") return null;
  return {
    to: value.to,
    at: typeof value.at === "number" ? value.at : 0,
    actor: typeof value.actor === "string" ? value.actor : "unknown",
  };
}

/**
 * Opens the store at `location` in `options.mode`. Fails with a
 * {@linkcode StoreMissingError} (no store there and the mode may not create
 * one), a {@linkcode SchemaTooOldError} or {@linkcode SchemaTooNewError}
 * (the schema is not this program's; nothing was changed), or a
 * `StoreOpenError` naming the location without its credentials, or (in
 * `write` and `create` without `writeMoved`) a {@linkcode StoreMovedError}
 * when `jobs migrate-store` moved the store elsewhere.
 *
 * @example A store is created only when asked to
 * ```ts
 * import assert from "node:assert/strict";
 * import { openStore, StoreMissingError } from "@jobs/jobs/store";
 *
 * const dir = await Deno.makeTempDir();
 * const location = `${dir}/jobs.db`; // or "postgres://user@host:5432/db?schema=jobs"
 * // A mistyped location is an error, never a new empty store.
 * await assert.rejects(openStore(location, { mode: "read" }), StoreMissingError);
 *
 * const created = await openStore(location, { mode: "create" });
 * assert.ok(created.applied.length > 0); // the migrations it applied
 * await created.store.close();
 *
 * const { store, schema } = await openStore(location, { mode: "read" });
 * assert.equal(schema.version, schema.known);
 * assert.deepEqual(await store.jobsList({}), []);
 * await store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function openStore(
  location: string,
  options: OpenStoreOptions,
): Promise<OpenedStore> {
  const parsed = parseLocation(location);
  if (parsed.kind === "sqlite") await checkSqliteLocation(parsed.path, options.mode);
  const store = parsed.kind === "sqlite"
    ? await openSqlite(parsed.path, options)
    : await openPostgres(parsed.url, parsed.schema, options);
  try {
    const version = await store.schemaVersion();
    const pending = await store.pendingMigrations();
    const known = pending.at(-1)?.version ?? version;
    if (pending.length > 0 && options.mode !== "create") {
      throw new SchemaTooOldError(store.location, version, known);
    }
    // `create` applies what is pending; the other modes only ready a store
    // already at the current schema, writing nothing.
    const report = options.mode === "create"
      ? await store.migrate({ now: options.now ?? 0 })
      : (await store.prepare(), { applied: [], version });
    // A file it may not write opens read-only: say so now, not at the first write.
    if (options.mode !== "read" && store instanceof SqliteStore) await store.checkWritable();
    // A retired store written to would run twice what the new one runs.
    const moved = await storeMove(store);
    if (moved && options.mode !== "read") {
      if (!options.writeMoved) throw new StoreMovedError(store.location, moved);
      await store.auditRecord({
        at: options.now ?? 0,
        actor: options.writeMoved.actor,
        action: "store.write_moved",
        target: "store",
        reason: options.writeMoved.reason ?? null,
        details: { movedTo: moved.to, mode: options.mode },
      });
    }
    const names = new Map(pending.map((m) => [m.version, m.name]));
    return {
      store,
      schema: { version: report.version, known },
      applied: report.applied.map((version) => ({ version, name: names.get(version) ?? "" })),
      moved,
    };
  } catch (error) {
    await store.close();
    throw store instanceof SqliteStore && !(error instanceof StoreMovedError)
      ? explainOpenFailure(store.location, error)
      : error;
  }
}

/**
 * Opens (and by default migrates) the PostgreSQL store at `url`
 * (`postgres://user@host:5432/db?schema=name`): the adapter's own open,
 * loaded on the first call, so a program that never opens PostgreSQL never
 * loads postgres.js. A database that cannot be reached is a
 * `StoreOpenError` naming the location without its password.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresOptions = {},
): Promise<Store<PostgresTx>> {
  const adapter = await import("./postgres/postgres_store.ts");
  return await adapter.openPostgresStore(url, options);
}

/** {@linkcode openStore} on SQLite, typed with its transaction (the library's `tx.db`). */
export async function openSqliteLocation(
  path: string,
  options: OpenStoreOptions,
): Promise<Store<SqliteTx>> {
  if (parseLocation(path).kind !== "sqlite") {
    throw new RangeError(`"${describeLocation(path)}" is not a SQLite location`);
  }
  return (await openStore(path, options)).store as SqliteStore;
}

/**
 * The schema of the store at `location` and the migrations it lacks, read
 * without writing anything (`jobs migrate --dry-run`): `exists` is false
 * when there is no SQLite file yet (its folder must exist).
 */
export async function storeSchema(
  location: string,
): Promise<{ exists: boolean; version: number; pending: MigrationInfo[] }> {
  const parsed = parseLocation(location);
  let store: Store;
  if (parsed.kind === "sqlite") {
    try {
      await checkSqliteLocation(parsed.path, "read");
    } catch (error) {
      if (!(error instanceof StoreMissingError) || error.reason !== "no-file") throw error;
      const { pendingMigrations } = await import("./sqlite/migrations.ts");
      const pending = pendingMigrations(0).map(({ version, name }) => ({ version, name }));
      return { exists: false, version: 0, pending };
    }
    store = await openSqliteStore(parsed.path, { migrate: false, readOnly: true });
  } else {
    store = await openPostgresStore(parsed.url, {
      migrate: false,
      readOnly: true,
      schema: parsed.schema,
    });
  }
  try {
    const version = await store.schemaVersion();
    return { exists: true, version, pending: await store.pendingMigrations() };
  } finally {
    await store.close();
  }
}

/** The latest schema version this program knows for the store kind `location` names. */
export async function knownSchemaVersion(location: string): Promise<number> {
  if (!isPostgresLocation(location)) {
    return (await import("./sqlite/migrations.ts")).KNOWN_VERSION;
  }
  return (await import("./postgres/migrations.ts")).KNOWN_VERSION;
}

/**
 * Why there can be no SQLite store at `path` in `mode`, before anything is
 * opened: a missing folder, a folder where the file should be, or (unless
 * `create`) a missing file.
 */
export async function checkSqliteLocation(path: string, mode: StoreMode): Promise<void> {
  if (path === ":memory:") return;
  const file = await statOrNull(path);
  if (file?.isDirectory) throw new StoreMissingError(path, "is-a-directory", dirname(path));
  if (file) return;
  const dir = dirname(path);
  const parent = await statOrNull(dir);
  if (!parent) throw new StoreMissingError(path, "no-directory", dir);
  if (!parent.isDirectory) throw new StoreMissingError(path, "not-a-directory", dir);
  if (mode !== "create") throw new StoreMissingError(path, "no-file", dir);
}

async function openSqlite(path: string, options: OpenStoreOptions): Promise<SqliteStore> {
  return await openSqliteStore(path, { ...options.sqlite, migrate: false });
}

async function openPostgres(
  url: string,
  schema: string,
  options: OpenStoreOptions,
): Promise<Store<StoreTx>> {
  // Created (with its schema) only in `create`; the other modes find it or fail.
  return await openPostgresStore(url, { ...options.postgres, migrate: false, schema });
}

async function statOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return null;
    }
    throw error;
  }
}
