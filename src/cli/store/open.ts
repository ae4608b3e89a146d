/**
 * How a command opens the store: `src/store/open.ts` in one of its three
 * modes (`read`, `write`, `create`; only `daemon`, `migrate` and `enqueue`
 * create), with the command's wording on top: `CommandFailed`, and the
 * pasteable `<program> migrate` hint for a missing file or an older schema.
 *
 * Every problem names the store's location (escaped, credentials removed);
 * a missing directory is called a missing directory and a missing file a
 * missing file.
 *
 * @module
 */

import {
  checkSqliteLocation,
  describeLocation,
  isPostgresLocation,
  type OpenedStore,
  openStore as openAt,
  SchemaTooNewError,
  type StoreMode,
  type StoreMove,
  StoreMovedError,
  storeSchema,
} from "../../store/open.ts";
import { SchemaTooOldError, StoreMissingError, StoreOpenError } from "../../store/errors.ts";
import type { Store } from "../../store/store.ts";
import { escapeControl } from "../../text/escape.ts";
import { nearest } from "../../text/suggest.ts";
import { type CliDeps, CommandFailed, writeMoved } from "../common.ts";
import { storeOrigin } from "../project_file.ts";
import { commandLine, firstLine } from "../text.ts";

export type { OpenedStore, StoreMode };

/** A store that could not be opened: why (one line, location named and escaped). */
export interface StoreProblem {
  problem: string;
  /** The schema version found, or null when it could not be read. */
  schemaVersion: number | null;
  /** The latest schema version this program knows, when the store said. */
  knownVersion: number | null;
}

/** What a command's open needs of its deps: the clock, the program's name, who runs it. */
export type OpenDeps = Pick<CliDeps, "program" | "clock" | "osUser">;

/**
 * The store at `db`, opened in `mode`, or why it cannot be. A store
 * `jobs migrate-store` retired opens for writing only with `--force-moved`
 * (audited); `opened.moved` says where it went.
 */
export async function tryOpenStore(
  db: string,
  mode: StoreMode,
  deps: OpenDeps,
): Promise<({ ok: true } & OpenedStore) | ({ ok: false } & StoreProblem)> {
  try {
    const leave = writeMoved(deps);
    return {
      ok: true,
      ...(await openAt(db, { mode, now: deps.clock.now(), writeMoved: leave ?? undefined })),
    };
  } catch (error) {
    const schema = error instanceof SchemaTooOldError || error instanceof SchemaTooNewError
      ? { schemaVersion: error.found, knownVersion: error.known }
      : { schemaVersion: null, knownVersion: null };
    return {
      ok: false,
      problem: openFailure(db, error, deps.program, storeOrigin(db, deps)),
      ...schema,
    };
  }
}

/**
 * Why the store at `db` did not open, as one line naming it (credentials
 * removed) and, given its `origin`, which store it is and why (`from --db`,
 * `from JOBS_DB`, `from /srv/.jobs.yaml`, the default): no store there (with
 * the store files of near names beside it as a did-you-mean, and the
 * command that creates one), a schema older (with the migrate command) or
 * newer than this program's, the reason the store found by looking at the
 * folder and the file, or else the database's own message.
 */
export function openFailure(
  db: string,
  error: unknown,
  program = "jobs",
  origin: string | null = null,
): string {
  const migrate = () => commandLine(program, ["migrate", "--db", describeLocation(db)]);
  const why = origin === null ? "" : ` (${origin})`;
  if (error instanceof StoreMissingError) {
    if (error.reason !== "no-file") return `${error.message}${why}`;
    const near = nearStores(db);
    return near.length === 0
      ? `${error.message}${why}; a daemon creates it when it starts, or run: ${migrate()}`
      : `${error.message}${why}; did you mean ${orList(near)}? ` +
        `(for a new store there: a daemon creates it when it starts, or run: ${migrate()})`;
  }
  if (error instanceof SchemaTooOldError) return `${error.message}${why}; run: ${migrate()}`;
  if (error instanceof StoreMovedError) {
    const reopen = commandLine(program, [
      "migrate-store",
      "--reopen",
      "--db",
      describeLocation(db),
    ]);
    return `${error.message}${why}; use the new one (--db or JOBS_DB), take this one back with ` +
      `${reopen}, or write anyway (audited) with --force-moved`;
  }
  if (error instanceof StoreOpenError) return `${error.message}${why}`;
  if (error instanceof SchemaTooNewError) return newerProblem(db, error.found, error.known) + why;
  const message = firstLine(error instanceof Error ? error.message : String(error));
  return `cannot open the store "${escapeControl(describeLocation(db))}"${why}: ${
    escapeControl(message)
  }`;
}

/** The first bytes of every SQLite database file. */
const SQLITE_HEADER = "SQLite format 3\0";

/**
 * SQLite store files whose names are near the missing `db`'s (a typo of
 * one), in its folder and spelled as `db` spells the folder; and
 * `./jobs.db`, the default, when it is there. Nearest first.
 */
export function nearStores(db: string): string[] {
  if (isPostgresLocation(db) || db === ":memory:") return [];
  const slash = db.lastIndexOf("/");
  const prefix = slash < 0 ? "" : db.slice(0, slash + 1);
  const names: string[] = [];
  try {
    for (const entry of Deno.readDirSync(prefix === "" ? "." : prefix)) {
      if (entry.isFile && !/-(wal|shm|journal)$/.test(entry.name)) names.push(entry.name);
    }
  } catch {
    return []; // A folder that cannot be listed: nothing to suggest.
  }
  const near = nearest(db.slice(slash + 1), names, 6)
    .map((name) => `${prefix}${name}`)
    .filter(isSqliteFile)
    .slice(0, 3);
  const plain = (path: string) => path.replace(/^(\.\/)+/, "");
  const listed = [db, ...near].some((path) => plain(path) === "jobs.db");
  if (!listed && isSqliteFile("./jobs.db")) near.push("./jobs.db");
  return near;
}

/** `"a"`, `"a" or "b"`, `"a", "b" or "c"`: each quoted with JSON rules, so nothing hides. */
function orList(names: string[]): string {
  const quoted = names.map((name) => JSON.stringify(name));
  const last = quoted.pop()!;
  return quoted.length > 0 ? `${quoted.join(", ")} or ${last}` : last;
}

/** Whether `path` is a file that begins as a SQLite database does. */
function isSqliteFile(path: string): boolean {
  try {
    using file = Deno.openSync(path, { read: true });
    const head = new Uint8Array(SQLITE_HEADER.length);
    const n = file.readSync(head) ?? 0;
    return n === head.length && new TextDecoder().decode(head) === SQLITE_HEADER;
  } catch {
    return false;
  }
}

/**
 * The store at `db` in `mode`, or the command fails with one line naming
 * it. A store `jobs migrate-store` retired opened for reading says so first,
 * on stderr, where a script reading the output does not trip on it.
 */
export async function openStore(
  command: string,
  db: string,
  mode: StoreMode,
  deps: OpenDeps & Pick<CliDeps, "err">,
): Promise<OpenedStore> {
  const opened = await tryOpenStore(db, mode, deps);
  if (!opened.ok) throw new CommandFailed(`jobs ${command}: ${opened.problem}`);
  if (opened.moved && mode === "read") {
    deps.err(`jobs ${command}: ${movedNotice(db, opened.moved)}`);
  }
  return opened;
}

/** One line saying that the store at `db` moved, where, when and by whom; reading it still works. */
export function movedNotice(db: string, move: StoreMove): string {
  return `the store "${escapeControl(describeLocation(db))}" moved to "${
    escapeControl(move.to)
  }" on ${new Date(move.at).toISOString()} (migrate-store by ${
    escapeControl(move.actor)
  }): this is its retired copy, read only; use the new store (--db or JOBS_DB)`;
}

/** Runs `fn` with the store at `db` in `mode` (see {@linkcode openStore}), then closes it. */
export async function withStore<T>(
  command: string,
  db: string,
  mode: StoreMode,
  deps: OpenDeps & Pick<CliDeps, "err">,
  fn: (store: Store) => Promise<T>,
): Promise<T> {
  const { store } = await openStore(command, db, mode, deps);
  try {
    return await fn(store);
  } catch (error) {
    if (error instanceof CommandFailed) throw error;
    // A store call that failed (locked past its timeout, a disk error): name the store.
    const message = firstLine(error instanceof Error ? error.message : String(error));
    const origin = storeOrigin(db, deps);
    throw new CommandFailed(
      `jobs ${command}: the store "${escapeControl(describeLocation(db))}"${
        origin === null ? "" : ` (${origin})`
      }: ${escapeControl(message)}`,
    );
  } finally {
    await store.close();
  }
}

/**
 * Why there can be no store at `db` in `mode` before anything is opened:
 * a missing directory, a directory where the file should be, or (unless
 * `create`) a missing file. Null when there is nothing to say (and always
 * for PostgreSQL, which is only known by connecting).
 */
export async function locationProblem(
  db: string,
  mode: StoreMode,
  program: string,
  origin: string | null = null,
): Promise<string | null> {
  if (/^postgres(ql)?:\/\//i.test(db)) return null;
  try {
    await checkSqliteLocation(db, mode);
    return null;
  } catch (error) {
    return openFailure(db, error, program, origin);
  }
}

/** Why a store at a newer schema than this program's is refused, naming it. */
export function newerProblem(db: string, version: number, known: number): string {
  return `the store "${escapeControl(describeLocation(db))}" is at schema version ${version}, ` +
    `newer than this program knows (${known}); upgrade this program, the store was not modified`;
}

/** The pending migrations of the store at `db`, read without writing (`jobs migrate --dry-run`). */
export async function pendingFor(
  db: string,
  deps: Pick<CliDeps, "program">,
): Promise<{ exists: boolean; version: number; migrations: { version: number; name: string }[] }> {
  try {
    const { exists, version, pending } = await storeSchema(db);
    return { exists, version, migrations: pending };
  } catch (error) {
    throw new CommandFailed(
      `jobs migrate: ${openFailure(db, error, deps.program, storeOrigin(db, deps))}`,
    );
  }
}
