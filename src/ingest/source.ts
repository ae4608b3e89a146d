/**
 * The sources a pipeline reads: a file, a glob of files, a command's
 * stdout, or an HTTP GET. Each is a stream of bytes turned into records by
 * `formats.ts`, and each says where it stands as a cursor (JSON text) that a
 * retried attempt resumes from:
 *
 * - file: the byte offset (a seek, nothing re-read);
 * - glob: the file (matches read in name order) and the offset in it;
 * - command: the records read so far: a fresh run of the command skips them
 *   (a command cannot seek);
 * - http: the byte offset with the ETag seen; a retry asks for
 *   `Range: bytes=<offset>-` with `If-Range: <etag>`, and when the server
 *   answers with the whole body (206 refused, or the ETag changed) it skips
 *   the records already read instead. A 416 (nothing past the offset: the
 *   attempt died after its last commit) or a 206 of another ETag is asked
 *   again without a range, and skipped the same way.
 *
 * Nothing is read whole: memory stays at one chunk of bytes plus what the
 * buffer above holds.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { JobFailure } from "../kernel/error_text.ts";
import { redact } from "../kernel/redact.ts";
import { startCommand } from "../process/spawn.ts";
import { ERROR_STDERR_BYTES, OutputTail, withStderr } from "../process/output.ts";
import { expandHttp, expandVariables } from "../process/env.ts";
import { killOnExit, pump, releaseOnExit, signalGroup, within } from "../process/process_group.ts";
import { type Position, readRecords, type ReadStart, type SourceRecord } from "./formats.ts";
import type { SourceSpec } from "./types.ts";

/** What a cursor holds (JSON text of this). */
export interface SourceCursor extends Position {
  /** CSV: the header's field names. */
  columns?: string[];
  /** HTTP: the ETag of the body the offset is in. */
  etag?: string | null;
}

/** An open source: batches of records, and the cursor after any of them. */
export interface Feed {
  batches: AsyncGenerator<SourceRecord[]>;
  /** The cursor just after the record at `position`. */
  cursorOf(position: Position): string;
  /** Stops reading and lets go of files, processes and connections. */
  close(): Promise<void>;
}

/** What opening a source needs besides its spec. */
export interface FeedDeps {
  clock: Clock;
  signal: AbortSignal;
  /** Reads the daemon's environment, for `${NAME}` in a command's `env`. */
  env: (name: string) => string | undefined;
  /** Extra environment of a source command (JOBS_PIPELINE, JOBS_RUN). */
  runEnv: Record<string, string>;
  /** @default 5000 */
  killGraceMs?: number;
}

/** Parses a stored cursor; null (the start) for none. */
export function parseCursor(text: string | null): SourceCursor | null {
  if (text === null || text === "") return null;
  const value = JSON.parse(text) as SourceCursor;
  if (typeof value?.offset !== "number" || typeof value.n !== "number") {
    throw new TypeError(`ingest cursor is not a source position: ${JSON.stringify(text)}`);
  }
  return value;
}

/** Opens `spec` at `cursor` (null: from the start). */
export async function openFeed(
  spec: SourceSpec,
  cursor: string | null,
  deps: FeedDeps,
): Promise<Feed> {
  const at = parseCursor(cursor);
  const state: { columns?: string[]; etag?: string | null } = {
    columns: at?.columns,
    etag: at?.etag,
  };
  const onColumns = (columns: string[]) => state.columns = columns;
  const cursorOf = (position: Position) =>
    JSON.stringify(
      {
        offset: position.offset,
        line: position.line,
        n: position.n,
        ...(position.file !== undefined ? { file: position.file } : {}),
        ...(state.columns !== undefined ? { columns: state.columns } : {}),
        ...(state.etag !== undefined ? { etag: state.etag } : {}),
      } satisfies SourceCursor,
    );
  const read = { format: spec.format, encoding: spec.encoding, onColumns };
  const start = (c: SourceCursor | null): ReadStart =>
    c === null
      ? { offset: 0, line: 0, n: 0 }
      : { offset: c.offset, line: c.line, n: c.n, columns: c.columns };

  switch (spec.kind) {
    case "file": {
      const file = await openAt(spec.path, at?.offset ?? 0);
      return {
        batches: readRecords(chunks(file, deps.signal), { ...read, start: start(at) }),
        cursorOf,
        close: () => Promise.resolve(closeQuietly(file)),
      };
    }
    case "glob": {
      let current: Deno.FsFile | null = null;
      const files = await expandGlob(spec.pattern);
      const all = async function* (): AsyncGenerator<SourceRecord[]> {
        for (const path of files) {
          if (at?.file !== undefined && path < at.file) continue;
          const resume = at?.file === path ? at : null;
          current = await openAt(path, resume?.offset ?? 0);
          try {
            // Each file has its own header and its own lines.
            state.columns = resume?.columns;
            const records = readRecords(chunks(current, deps.signal), {
              ...read,
              start: start(resume),
            });
            for await (const batch of records) {
              for (const record of batch) record.position.file = path;
              yield batch;
            }
          } finally {
            closeQuietly(current);
            current = null;
          }
        }
      };
      return {
        batches: all(),
        cursorOf,
        close: () => {
          const open = current as Deno.FsFile | null;
          if (open !== null) closeQuietly(open);
          return Promise.resolve();
        },
      };
    }
    case "command":
      return commandFeed(spec, at, read, deps, cursorOf);
    case "http":
      return await httpFeed(spec, at, read, deps, state, cursorOf);
  }
}

async function openAt(path: string, offset: number): Promise<Deno.FsFile> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    throw new JobFailure(`source file "${path}" cannot be read: ${(error as Error).message}`);
  }
  if (offset > 0) await file.seek(offset, Deno.SeekMode.Start);
  return file;
}

function closeQuietly(file: Deno.FsFile): void {
  try {
    file.close();
  } catch {
    // Already closed.
  }
}

const CHUNK_BYTES = 64 * 1024;

async function* chunks(file: Deno.FsFile, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  for (;;) {
    if (signal.aborted) throw signal.reason;
    const buffer = new Uint8Array(CHUNK_BYTES);
    const read = await file.read(buffer);
    if (read === null) return;
    yield buffer.subarray(0, read);
  }
}

/** Skips the first `skip` records of `batches` (a fresh run of a feed that cannot seek). */
async function* skipping(
  batches: AsyncGenerator<SourceRecord[]>,
  skip: number,
): AsyncGenerator<SourceRecord[]> {
  for await (const batch of batches) {
    if (skip <= 0) {
      yield batch;
      continue;
    }
    const last = batch[batch.length - 1]!;
    if (last.position.n <= skip) continue;
    yield batch.filter((r) => r.position.n > skip);
    skip = 0;
  }
}

// ---------------------------------------------------------------------------
// Glob

/** The files matching `pattern` (`*`, `?`, `**`), in name order. */
export async function expandGlob(pattern: string): Promise<string[]> {
  const parts = pattern.split("/");
  const fixed: string[] = [];
  for (const part of parts) {
    if (/[*?[]/.test(part)) break;
    fixed.push(part);
  }
  const root = fixed.join("/") || (pattern.startsWith("/") ? "/" : ".");
  const regex = globRegExp(pattern);
  const found: string[] = [];
  async function walk(dir: string): Promise<void> {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(dir));
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = dir === "." ? entry.name : `${dir.replace(/\/$/, "")}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (regex.test(path)) found.push(path);
    }
  }
  if (fixed.length === parts.length) return [pattern];
  await walk(root);
  return found.sort();
}

function globRegExp(pattern: string): RegExp {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*" && pattern[i + 1] === "*") {
      out += ".*";
      i++;
      if (pattern[i + 1] === "/") i++;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

// ---------------------------------------------------------------------------
// Command

function commandFeed(
  spec: Extract<SourceSpec, { kind: "command" }>,
  at: SourceCursor | null,
  read: Parameters<typeof readRecords>[1],
  deps: FeedDeps,
  cursorOf: (position: Position) => string,
): Feed {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    env[name] = expandVariables(value, deps.env, `source command env "${name}"`);
  }
  Object.assign(env, deps.runEnv);
  const label = `source command "${spec.argv.join(" ").slice(0, 60)}"`;
  const child = startCommand(spec, env, label);
  killOnExit(child.pid);
  const stderr = new OutputTail(ERROR_STDERR_BYTES);
  const stderrDone = pump(child.stderr.getReader(), (c) => stderr.push(c));
  const reader = child.stdout.getReader();
  let closed = false;
  async function* bytes(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield value;
    }
    const status = await child.status;
    if (!closed && (status.code !== 0 || status.signal !== null)) {
      await stderrDone;
      const how = status.signal !== null
        ? `was killed by ${status.signal}`
        : `exited with code ${status.code}`;
      throw new JobFailure(redact(withStderr(`${label} ${how}`, stderr, [])));
    }
  }
  const batches = skipping(readRecords(bytes(), { ...read, start: undefined }), at?.n ?? 0);
  return {
    batches,
    cursorOf,
    async close() {
      closed = true;
      signalGroup(child.pid, "SIGTERM");
      reader.cancel().catch(() => {});
      if (!(await within(child.status, deps.killGraceMs ?? 5_000, deps.clock))) {
        signalGroup(child.pid, "SIGKILL");
        await child.status;
      }
      releaseOnExit(child.pid);
    },
  };
}

// ---------------------------------------------------------------------------
// HTTP

async function httpFeed(
  spec: Extract<SourceSpec, { kind: "http" }>,
  at: SourceCursor | null,
  read: Parameters<typeof readRecords>[1],
  deps: FeedDeps,
  state: { etag?: string | null },
  cursorOf: (position: Position) => string,
): Promise<Feed> {
  const ranged = at !== null && at.offset > 0 && typeof at.etag === "string";
  const controller = new AbortController();
  const signal = AbortSignal.any([controller.signal, deps.signal]);
  const target = expandHttp(spec, deps.env, "source");
  let response = await get(spec, target, ranged ? at : null, signal);
  // A 206 is the rest of the body at the offset: the server's If-Range found the ETag (a 206
  // without one says so too). A 206 of another ETag (a server honouring Range but not If-Range)
  // is part of another body, and a 416 says nothing is left past the offset: ask for the whole.
  const partOfOther = response.status === 206 && !sameEtag(response, at?.etag);
  if (ranged && (response.status === 416 || partOfOther)) {
    await response.body?.cancel();
    response = await get(spec, target, null, signal);
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw new JobFailure(redact(`source GET ${spec.url} answered ${response.status}`));
  }
  const resumed = ranged && response.status === 206;
  state.etag = resumed ? response.headers.get("ETag") ?? at.etag : response.headers.get("ETag");
  const body = response.body;
  const records = resumed
    ? readRecords(body, { ...read, start: { ...at, columns: at.columns } })
    : skipping(readRecords(body, { ...read, start: undefined }), at?.n ?? 0);
  return {
    batches: records,
    cursorOf,
    close() {
      controller.abort();
      return Promise.resolve();
    },
  };
}

/**
 * GETs the source (`target`: its URL and headers with their variables
 * replaced), from `from.offset` if the body still has `from.etag`. Errors
 * name the URL as written.
 */
async function get(
  spec: Extract<SourceSpec, { kind: "http" }>,
  target: { url: string; headers: Record<string, string> },
  from: SourceCursor | null,
  signal: AbortSignal,
): Promise<Response> {
  const headers = new Headers(target.headers);
  if (from !== null) {
    headers.set("Range", `bytes=${from.offset}-`);
    headers.set("If-Range", from.etag as string);
  }
  try {
    return await fetch(target.url, { headers, signal });
  } catch (error) {
    throw new JobFailure(
      redact(`source GET ${spec.url} failed: ${(error as Error).message}`),
    );
  }
}

function sameEtag(response: Response, etag: string | null | undefined): boolean {
  const said = response.headers.get("ETag");
  return said === null || said === etag;
}
