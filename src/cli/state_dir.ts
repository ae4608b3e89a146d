/**
 * Where a daemon keeps what belongs to one host and one store: the records
 * of the process groups its commands run in (`groups/`), which the next
 * daemon on the host reads to kill what a SIGKILLed one left running
 * (`reapOrphans` in src/process/process_group.ts). Every daemon of one store
 * on one host must find the same folder, so it is resolved here only.
 *
 * - `--state-dir DIR` (or `JOBS_STATE_DIR`): `DIR/groups`.
 * - A SQLite file: `<db>.groups`, beside the file, where the records have
 *   always been (an upgraded daemon still finds its predecessor's).
 * - PostgreSQL: `${XDG_STATE_HOME:-$HOME/.local/state}/jobs/<name>/groups`,
 *   `<name>` being the server, port, database and schema made safe for a
 *   file name, plus a short hash (see {@linkcode storeStateName}).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { describeLocation, isPostgresLocation } from "../store/open.ts";
import { escapeControl } from "../text/escape.ts";

/** What {@linkcode groupsDirFor} resolves from. */
export interface StateDirParams {
  /** The store's location: a SQLite path or a `postgres://` URL. */
  db: string;
  /** `--state-dir`, when given. */
  stateDir?: string;
  /** The environment (`JOBS_STATE_DIR`, `XDG_STATE_HOME`, `HOME`). */
  env: (name: string) => string | undefined;
}

/**
 * The folder of the process-group records of the store at `db` on this
 * host: `--state-dir` (else `JOBS_STATE_DIR`) + `/groups`; without either,
 * `<db>.groups` for a SQLite file and
 * `${XDG_STATE_HOME:-$HOME/.local/state}/jobs/<name>/groups` for PostgreSQL.
 * Throws naming `--state-dir` when a PostgreSQL location has neither
 * `XDG_STATE_HOME` nor `HOME` to put it under.
 */
export function groupsDirFor(params: StateDirParams): string {
  const given = nonEmpty(params.stateDir) ?? nonEmpty(params.env("JOBS_STATE_DIR"));
  if (given !== undefined) return `${given.replace(/\/+$/, "")}/groups`;
  if (!isPostgresLocation(params.db)) return `${params.db}.groups`;
  const home = nonEmpty(params.env("HOME"));
  // The XDG specification: a relative XDG_STATE_HOME is invalid and ignored.
  const xdg = nonEmpty(params.env("XDG_STATE_HOME"));
  const base = (xdg?.startsWith("/") ? xdg : undefined) ??
    (home === undefined ? undefined : `${home}/.local/state`);
  const name = storeStateName(params.db);
  if (base === undefined) {
    throw new RangeError(
      `neither XDG_STATE_HOME nor HOME is set, so the store "${name}" has no default state ` +
        "directory: give --state-dir or JOBS_STATE_DIR",
    );
  }
  return `${base}/jobs/${name}/groups`;
}

/**
 * A file name for the PostgreSQL store at `location`, the same for every
 * spelling of it and free of credentials: `<host>_<port>_<database>_<schema>_<hash>`.
 * The user, password and other parameters are left out (they do not change
 * which store it is). Characters a file name should not hold become `-`,
 * which could make two stores' names equal (`a-b` and `a_b`), so the first
 * 8 hex digits of a SHA-256 of the unaltered parts follow.
 */
export function storeStateName(location: string): string {
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw new RangeError(
      `the store "${escapeControl(describeLocation(location))}" is not a valid URL`,
    );
  }
  // A `?host=` (a Unix socket folder, for one) wins over the URL's host, as in postgres.js.
  const host = url.searchParams.get("host") ?? decodeURIComponent(url.hostname);
  const port = url.port || "5432";
  const database = decodeURIComponent(url.pathname.replace(/^\//, "")) || "postgres";
  const schema = url.searchParams.get("schema") ?? "public";
  const parts = [host.toLowerCase(), port, database, schema];
  const hash = createHash("sha256").update(parts.join("\n")).digest("hex").slice(0, 8);
  return [...parts.map(safe), hash].join("_");
}

/** `part` with every character but letters, digits, `.` and `-` replaced by `-`, at most 40 long. */
function safe(part: string): string {
  return part.replace(/[^A-Za-z0-9.-]/g, "-").replace(/^\.+/, "-").slice(0, 40) || "-";
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
