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
