/**
 * The one way a command opens the store, in one of three modes:
 *
 * - `read`: an existing store at the current schema. Nothing is created
 *   and nothing is migrated; an older schema is reported with the migrate
 *   command to paste, so a newer CLI never changes the schema under an
 *   older daemon.
 * - `write`: the same, for commands that change rows: an existing store
 *   only, so a mistyped `--db` is an error rather than a new empty file.
 * - `create`: the file is created when missing and brought to the current
 *   schema. Only `daemon`, `migrate` and `enqueue` open the store this way.
 *
 * Every problem names the store's location (escaped); a missing directory
 * is called a missing directory and a missing file a missing file.
 *
 * @module
 */

import { dirname } from "node:path";
import { KNOWN_VERSION, pendingMigrations } from "../store/sqlite/migrations.ts";
import { StoreOpenError } from "../store/errors.ts";
import {
  explainOpenFailure,
  openSqliteStore,
  SchemaTooNewError,
  type SqliteStore,
} from "../store/sqlite/sqlite_store.ts";
import { escapeControl } from "../text/escape.ts";
import { type CliDeps, CommandFailed } from "./common.ts";
import { commandLine, firstLine } from "./text.ts";

/** What a command does to the store; see the module's documentation. */
export type StoreMode = "read" | "write" | "create";

/** An open store with the schema it is at. */
export interface OpenedStore {
  store: SqliteStore;
  schema: { version: number; known: number };
  /** The migrations applied on opening (`create` only). */
  applied: number[];
}

/** A store that could not be opened: why (one line, location named and escaped). */
export interface StoreProblem {
  problem: string;
  /** The schema version found, or null when it could not be read. */
  schemaVersion: number | null;
}

/** The store at `db`, opened in `mode`, or why it cannot be. */
export async function tryOpenStore(
  db: string,
  mode: StoreMode,
  deps: Pick<CliDeps, "program" | "clock">,
): Promise<({ ok: true } & OpenedStore) | ({ ok: false } & StoreProblem)> {
  const missing = await locationProblem(db, mode, deps.program);
  if (missing) return { ok: false, problem: missing, schemaVersion: null };
  const where = `"${escapeControl(db)}"`;
  let store: SqliteStore | null = null;
  let version: number | null = null;
  try {
    store = await openSqliteStore(db, { migrate: false });
    version = await store.schemaVersion();
    if (version > KNOWN_VERSION) {
      await store.close();
      return { ok: false, problem: newerProblem(db, version), schemaVersion: version };
    }
    if (version < KNOWN_VERSION && mode !== "create") {
      await store.close();
      return {
        ok: false,
        problem: `the store ${where} is at schema version ${version}, older than this ` +
          `program's (${KNOWN_VERSION}); run: ${
            commandLine(deps.program, ["migrate", "--db", db])
          }`,
        schemaVersion: version,
      };
    }
    // At the current schema this applies nothing and only prepares the
    // statements; in `create` it applies what is pending.
    const report = await store.migrate({ now: deps.clock.now() });
    // A file it may not write opens read-only: say so now, not at the first write.
    if (mode !== "read") await store.checkWritable();
    return {
      ok: true,
      store,
      schema: { version: report.version, known: KNOWN_VERSION },
      applied: report.applied,
    };
  } catch (error) {
    await store?.close();
    return {
      ok: false,
      problem: openFailure(db, explainOpenFailure(db, error)),
      schemaVersion: version,
    };
  }
}

/**
 * Why the store at `db` did not open, as one line naming it: the reason the
 * store found by looking at the folder and the file (a missing folder, a
 * file or folder that is not writable, a read-only file system), a newer
 * schema, or else SQLite's own message.
 */
export function openFailure(db: string, error: unknown): string {
  if (error instanceof StoreOpenError) return error.message;
  if (error instanceof SchemaTooNewError) return newerProblem(db, error.found);
  const message = firstLine(error instanceof Error ? error.message : String(error));
  return `cannot open the store "${escapeControl(db)}": ${escapeControl(message)}`;
}

/** The store at `db` in `mode`, or the command fails with one line naming it. */
export async function openStore(
  command: string,
  db: string,
  mode: StoreMode,
  deps: Pick<CliDeps, "program" | "clock">,
): Promise<OpenedStore> {
  const opened = await tryOpenStore(db, mode, deps);
  if (!opened.ok) throw new CommandFailed(`jobs ${command}: ${opened.problem}`);
  return opened;
}

/** Runs `fn` with the store at `db` in `mode` (see {@linkcode openStore}), then closes it. */
export async function withStore<T>(
  command: string,
  db: string,
  mode: StoreMode,
  deps: Pick<CliDeps, "program" | "clock">,
  fn: (store: SqliteStore) => Promise<T>,
): Promise<T> {
  const { store } = await openStore(command, db, mode, deps);
  try {
    return await fn(store);
  } catch (error) {
    if (error instanceof CommandFailed) throw error;
    // A store call that failed (locked past its timeout, a disk error): name the store.
    const message = firstLine(error instanceof Error ? error.message : String(error));
    throw new CommandFailed(
      `jobs ${command}: the store "${escapeControl(db)}": ${escapeControl(message)}`,
    );
  } finally {
    await store.close();
  }
}

/**
 * Why there can be no store at `db` in `mode` before anything is opened:
 * a missing directory, a directory where the file should be, or (unless
 * `create`) a missing file. Null when there is nothing to say.
 */
export async function locationProblem(
  db: string,
  mode: StoreMode,
  program: string,
): Promise<string | null> {
  if (db === ":memory:") return null;
  const where = `"${escapeControl(db)}"`;
  const file = await statOrNull(db);
  if (file?.isDirectory) return `the store ${where} is a directory, not a SQLite file`;
  if (file) return null;
  const dir = dirname(db);
  const parent = await statOrNull(dir);
  if (!parent) return `no directory "${escapeControl(dir)}" for the store ${where}`;
  if (!parent.isDirectory) {
    return `"${escapeControl(dir)}" is not a directory, so there is no store ${where}`;
  }
  if (mode === "create") return null;
  return `no file ${where} for the store; a daemon creates it when it starts, or run: ` +
    commandLine(program, ["migrate", "--db", db]);
}

/** Why a store at a newer schema than this program's is refused, naming it. */
export function newerProblem(db: string, version: number): string {
  return `the store "${escapeControl(db)}" is at schema version ${version}, newer than this ` +
    `program knows (${KNOWN_VERSION}); upgrade this program, the store was not modified`;
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

/** The pending migrations of the store at `db`, read without writing (`jobs migrate --dry-run`). */
export async function pendingFor(
  db: string,
  deps: Pick<CliDeps, "program">,
): Promise<{ exists: boolean; version: number; migrations: { version: number; name: string }[] }> {
  const list = (version: number) =>
    pendingMigrations(version).map((m) => ({ version: m.version, name: m.name }));
  const missing = await locationProblem(db, "read", deps.program);
  if (missing) {
    // A missing file is fine here (migrate creates it); anything else is not.
    const creatable = await locationProblem(db, "create", deps.program);
    if (creatable) throw new CommandFailed(`jobs migrate: ${creatable}`);
    return { exists: false, version: 0, migrations: list(0) };
  }
  let store: SqliteStore;
  try {
    store = await openSqliteStore(db, { migrate: false, readOnly: true });
  } catch (error) {
    throw new CommandFailed(`jobs migrate: ${openFailure(db, error)}`);
  }
  try {
    const version = await store.schemaVersion();
    if (version > KNOWN_VERSION) {
      throw new CommandFailed(`jobs migrate: ${newerProblem(db, version)}`);
    }
    return { exists: true, version, migrations: list(version) };
  } finally {
    await store.close();
  }
}
