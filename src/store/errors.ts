/**
 * Store errors every backend may raise and every caller may recognise
 * without importing an adapter: the store could not be opened (and why), or
 * the store a process holds open is no longer the one at its location.
 *
 * @module
 */

import { escapeControl } from "../text/escape.ts";

/**
 * Raised when a store cannot be opened, naming its location and the reason
 * found by looking at the location itself (the folder, the file), not
 * guessed from the database's own message, which is kept as `cause`.
 */
export class StoreOpenError extends Error {
  /**
   * @param location Where the store was to be opened.
   * @param reason Why it cannot be, one clause or several joined by "; ".
   */
  constructor(readonly location: string, readonly reason: string, options?: ErrorOptions) {
    super(`cannot open the store "${escapeControl(location)}": ${reason}`, options);
    this.name = "StoreOpenError";
  }
}

/** A file's identity on its machine: the device it lives on and its inode there. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

/**
 * Raised by every call of a store whose file was deleted or replaced while
 * it was open. The connection still works, on a file nobody else can reach
 * any more: whatever it wrote since is lost with it, and anything it would
 * write now would be too, so the store refuses every call. It never
 * recovers; a new open reaches the file at the location now, if any.
 */
export class StoreLostError extends Error {
  /** What changed at the path, e.g. `inode 123 -> missing` or `inode 123 -> 456`. */
  readonly change: string;

  /**
   * @param location The path the store was opened at.
   * @param was The identity of the file opened.
   * @param now The identity of the file at the path now; null when there is none.
   */
  constructor(
    readonly location: string,
    readonly was: FileIdentity,
    readonly now: FileIdentity | null,
  ) {
    const change = identityChange(was, now);
    super(
      `the database file "${escapeControl(location)}" was deleted or replaced while open ` +
        `(${change})`,
    );
    this.name = "StoreLostError";
    this.change = change;
  }

  /** Whether another file is at the path now (renamed over it), rather than none. */
  get replaced(): boolean {
    return this.now !== null;
  }
}

/** `inode 123 -> missing`, `inode 123 -> 456`, or with the devices when those differ. */
function identityChange(was: FileIdentity, now: FileIdentity | null): string {
  if (now === null) return `inode ${was.ino} -> missing`;
  if (now.dev === was.dev) return `inode ${was.ino} -> ${now.ino}`;
  return `device ${was.dev} inode ${was.ino} -> device ${now.dev} inode ${now.ino}`;
}

/** Why there is no store at a SQLite location, found before anything was opened. */
export type StoreMissingReason = "no-directory" | "not-a-directory" | "is-a-directory" | "no-file";

/**
 * Raised when there is no store at a location and the mode may not create
 * one (or cannot: its folder is missing). Nothing was opened or created.
 */
export class StoreMissingError extends Error {
  /**
   * @param location Where the store was to be (credentials removed).
   * @param reason Which of the cases it is.
   * @param dir The folder the store was to be in.
   */
  constructor(
    readonly location: string,
    readonly reason: StoreMissingReason,
    readonly dir: string,
  ) {
    const where = `"${escapeControl(location)}"`;
    const folder = `"${escapeControl(dir)}"`;
    super(
      reason === "is-a-directory"
        ? `the store ${where} is a directory, not a SQLite file`
        : reason === "no-directory"
        ? `no directory ${folder} for the store ${where}`
        : reason === "not-a-directory"
        ? `${folder} is not a directory, so there is no store ${where}`
        : `no file ${where} for the store`,
    );
    this.name = "StoreMissingError";
  }
}

/**
 * Raised when a store opened to read or write is at an older schema than
 * this program's: it was not migrated (a newer program never changes the
 * schema under an older daemon); `jobs migrate` brings it up to date.
 */
export class SchemaTooOldError extends Error {
  constructor(readonly location: string, readonly found: number, readonly known: number) {
    super(
      `the store "${escapeControl(location)}" is at schema version ${found}, older than this ` +
        `program's (${known})`,
    );
    this.name = "SchemaTooOldError";
  }
}

/** Raised when the database holds a schema newer than this program knows. */
export class SchemaTooNewError extends Error {
  constructor(readonly location: string, readonly found: number, readonly known: number) {
    super(
      `${location}: schema version ${found} is newer than this program knows (${known}); ` +
        `upgrade jobs, the database was not modified`,
    );
    this.name = "SchemaTooNewError";
  }
}

/**
 * Raised by a store call that waited for a lock another session holds
 * longer than the store's bound (PostgreSQL's `lock_timeout`, set from the
 * same busy timeout as SQLite's): the store is locked, as SQLite's "database
 * is locked" says of a file. Nothing of the call was written; the runtime
 * rides it out like any store outage (backs off, keeps its results, reports
 * the node degraded) and it passes once the lock is released.
 */
export class StoreLockedError extends Error {
  /**
   * @param location The store, credentials removed (not in the message).
   * @param waitedMs The bound the call waited out, in ms.
   * @param detail Where the lock was met, when the database said (e.g.
   *   `while locking tuple (0,1) in relation "jobs"`), else "".
   */
  constructor(
    readonly location: string,
    readonly waitedMs: number,
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    // Without the location, which whoever reports it names already (the CLI, the daemon's log).
    super(
      `the store is locked: a statement waited ${waitedMs} ms for a lock another session ` +
        `holds${detail === "" ? "" : ` (${escapeControl(detail)})`}`,
      options,
    );
    this.name = "StoreLockedError";
  }
}

/**
 * The error codes that mean the database could not be reached or dropped
 * the session, not that it refused the statement: postgres.js's own
 * connection codes, the operating system's socket codes, and PostgreSQL's
 * SQLSTATEs for a server shutting down, restarting or full, a terminated
 * session (`pg_terminate_backend`: 57P01) and a statement timeout (57014).
 * Class 08 (connection exception) is matched by its prefix.
 */
const UNREACHABLE_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "57P01", // admin_shutdown: pg_terminate_backend, or a fast shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: the server is starting up or shutting down
  "57014", // query_canceled: statement_timeout
  "53300", // too_many_connections
]);

/**
 * Whether `error` (or one of its causes) says the store could not be
 * reached, or lost the session or the statement to a restart, a terminated
 * backend or a timeout: an outage to ride out (back off, keep results,
 * retry), not a refusal to report. A missing role, a wrong password, a
 * schema of another version, or a SQL error is not one: waiting would not
 * change it. SQLite's busy and I/O errors are ridden out by the runtime
 * without asking this; it covers what a network database adds.
 */
export function isStoreUnreachable(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && e !== undefined && depth < 8; depth++) {
    if (typeof e !== "object") return false;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) {
      return true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The setting a successful `jobs migrate-store` writes in its source: a {@linkcode StoreMove}. */
export const MOVED_SETTING = "store.moved";

/**
 * Where a store moved (`jobs migrate-store`): the `store.moved` setting a
 * successful copy writes in its source. `to` is the target's location with
 * its credentials removed; it is never stored with them.
 */
export interface StoreMove {
  /** The target's location, credentials removed. */
  to: string;
  /** When the copy ended (UTC ms). */
  at: number;
  /** Who copied it (the audit trail's actor). */
  actor: string;
}

/**
 * Raised when a store that moved (`jobs migrate-store` copied it elsewhere
 * and retired it) is opened for writing without leave: a daemon or a write
 * on it would run what the new store's daemons run too, with ids that
 * collide with the new store's. Reading it is still allowed.
 */
export class StoreMovedError extends Error {
  /**
   * @param location The retired store's location (credentials removed).
   * @param move Where it moved, when and by whom.
   */
  constructor(readonly location: string, readonly move: StoreMove) {
    super(
      `the store "${escapeControl(location)}" moved to "${escapeControl(move.to)}" on ${
        new Date(move.at).toISOString()
      } (migrate-store by ${escapeControl(move.actor)}): it is retired, writes to it are refused`,
    );
    this.name = "StoreMovedError";
  }
}
