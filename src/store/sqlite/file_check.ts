/**
 * What the SQLite store learns from the file system rather than from
 * SQLite: which file it holds open (device and inode, to notice the path
 * now names another file or none), and, when an open fails, why.
 *
 * SQLite says only "unable to open database file" or "attempt to write a
 * readonly database" whatever the cause. The cause is found by trying what
 * SQLite needs: the folder exists, the file opens for reading and writing,
 * and the folder accepts new files (`-wal` and `-shm` are created beside the
 * database in WAL mode). Trying beats checking permission bits: root
 * ignores them, a read-only mount or an ACL does not show in them, and
 * `access()` is not what Deno offers. A probe never touches the store's own
 * names, so it cannot race a process opening the same store.
 *
 * @module
 */

import { basename, dirname } from "node:path";
import { escapeControl } from "../../text/escape.ts";
import type { FileIdentity } from "../errors.ts";

/** The device and inode of the file at `path` now; null when there is none (or it cannot be seen). */
export function fileIdentity(path: string): FileIdentity | null {
  try {
    const info = Deno.statSync(path);
    return info.ino === null ? null : { dev: info.dev, ino: info.ino };
  } catch {
    return null;
  }
}

/** Whether `path` names no file on disk (`:memory:`, an empty name or a `file:` URI). */
export function notAFile(path: string): boolean {
  return path === ":memory:" || path === "" || path.startsWith("file:");
}

/**
 * Why a SQLite store at `path` cannot be opened (read-write, or read-only
 * with `readOnly`), found by looking at the folder and the file; several
 * reasons are joined by "; ". Null when nothing is wrong that can be seen
 * (the cause is then SQLite's own, e.g. a file that is not a database).
 */
export function openProblem(path: string, options: { readOnly?: boolean } = {}): string | null {
  if (notAFile(path)) return null;
  const readOnly = options.readOnly ?? false;
  const dir = dirname(path);
  const base = basename(path);
  const folder = `"${escapeControl(dir)}"`;
  const folderInfo = statOrError(dir);
  if (folderInfo instanceof Error) {
    return isMissing(folderInfo)
      ? `the folder ${folder} does not exist`
      : `the folder ${folder} cannot be read (${reasonOf(folderInfo)})`;
  }
  if (!folderInfo.isDirectory) return `${folder} is not a folder`;
  const fileInfo = statOrError(path);
  if (!(fileInfo instanceof Error) && fileInfo.isDirectory) {
    return `"${escapeControl(path)}" is a folder, not a SQLite file`;
  }
  const problems: string[] = [];
  if (fileInfo instanceof Error) {
    if (!isMissing(fileInfo)) return `the file cannot be read (${reasonOf(fileInfo)})`;
    if (readOnly) return `there is no file "${escapeControl(path)}"`;
    const refused = probeFolder(dir, base);
    if (refused) {
      problems.push(
        `the folder ${folder} ${folderRefusal(refused)}; ` +
          `SQLite needs to create ${base}, ${base}-wal and ${base}-shm in it`,
      );
    }
    return problems.length > 0 ? problems.join("; ") : null;
  }
  const fileRefused = tryOpen(path, readOnly ? { read: true } : { read: true, write: true });
  if (fileRefused) {
    problems.push(
      isReadOnlyFs(fileRefused)
        ? "the file is on a read-only file system"
        : `the file is not ${readOnly ? "readable" : "writable"} (${reasonOf(fileRefused)})`,
    );
  }
  if (!readOnly) {
    const refused = probeFolder(dir, base);
    if (refused) {
      problems.push(
        `the folder ${folder} ${folderRefusal(refused)}; ` +
          `SQLite needs to create ${base}-wal and ${base}-shm beside it`,
      );
    }
  }
  return problems.length > 0 ? problems.join("; ") : null;
}

/** `is not writable (permission denied)`, `is on a read-only file system`, ... */
function folderRefusal(error: Error): string {
  if (isReadOnlyFs(error)) return "is on a read-only file system";
  if (isDenied(error)) return "is not writable (permission denied)";
  return `does not accept new files (${reasonOf(error)})`;
}

/**
 * Creates and removes a file of a name nobody else uses in `dir`; the error
 * when the folder refuses it, else null.
 */
function probeFolder(dir: string, base: string): Error | null {
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(4)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  const probe = `${dir}/.${base}.probe-${nonce}`;
  const refused = tryOpen(probe, { write: true, createNew: true });
  if (refused) return refused;
  try {
    Deno.removeSync(probe);
  } catch {
    // The probe is empty and its name is ours alone: leaving it harms nothing.
  }
  return null;
}

function tryOpen(path: string, options: Deno.OpenOptions): Error | null {
  try {
    Deno.openSync(path, options).close();
    return null;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function statOrError(path: string): Deno.FileInfo | Error {
  try {
    return Deno.statSync(path);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function codeOf(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

function isMissing(error: Error): boolean {
  return error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory;
}

function isDenied(error: Error): boolean {
  const code = codeOf(error);
  return error instanceof Deno.errors.PermissionDenied || code === "EACCES" || code === "EPERM";
}

function isReadOnlyFs(error: Error): boolean {
  return codeOf(error) === "EROFS";
}

/** The system's reason, lower case and without Deno's `(os error N): open '...'` tail. */
function reasonOf(error: Error): string {
  if (isReadOnlyFs(error)) return "read-only file system";
  if (isDenied(error)) return "permission denied";
  const text = error.message.split(" (os error")[0]!.trim();
  return escapeControl(text.charAt(0).toLowerCase() + text.slice(1));
}
