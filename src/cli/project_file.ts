/**
 * Where the store and the schedules file are, named once: `--db` /
 * `--config`, else `JOBS_DB` / `JOBS_CONFIG`, else the project file
 * {@linkcode PROJECT_FILE} found in the current folder or the nearest folder
 * above it, else `./jobs.db` / `./schedules.yaml`. Without the project file
 * every command depended on the folder it ran from; with it, an operator
 * names them once for a tree of folders, as a kubectl context does.
 *
 * Each resolution remembers why (its origin: `from --db`, `from JOBS_DB`,
 * `from /srv/app/.jobs.yaml`, or the default), so an error about the store
 * can say which one was used and why ({@linkcode storeOrigin}).
 *
 * @module
 */

import { parseDocument } from "npm:yaml@2.9.1";
import { escapeControl } from "../text/escape.ts";
import { didYouMean } from "../text/suggest.ts";

/** The project file's name, looked for in the current folder and each one above it. */
export const PROJECT_FILE = ".jobs.yaml";

/** The keys a project file may hold. */
const PROJECT_KEYS = ["db", "config"] as const;

/** A path (or URL) and why it is the one used. */
export interface Resolved {
  value: string;
  /**
   * Why: `from --db`, `from JOBS_DB`, `from /path/.jobs.yaml`, or
   * `the default, as no --db, JOBS_DB or .jobs.yaml names one`.
   */
  origin: string;
  /** Whether someone named it (a flag, the environment or a project file) rather than the default. */
  named: boolean;
}

/** What the resolution reads: the environment and the current folder. */
export interface ResolveDeps {
  env: (name: string) => string | undefined;
  /** The current folder. @default Deno.cwd() */
  cwd?: () => string;
}

/** A project file found and read: its path and the values it sets, resolved from its folder. */
interface Project {
  file: string;
  db?: string;
  config?: string;
}

/** Raised for a project file that cannot be read or holds what it should not; its message names the file. */
export class ProjectFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProjectFileError";
  }
}

/** The project file found per deps object (one command line), and each store location's origin. */
const PROJECTS = new WeakMap<object, Project | null>();
const ORIGINS = new WeakMap<object, Map<string, string>>();

/** The store: `--db`, else `JOBS_DB`, else the project file's `db:`, else `./jobs.db`. */
export function resolveDb(option: string | undefined, deps: ResolveDeps): Resolved {
  const resolved = resolve(option, "--db", "JOBS_DB", "db", "./jobs.db", deps);
  let origins = ORIGINS.get(deps);
  if (!origins) ORIGINS.set(deps, origins = new Map());
  origins.set(resolved.value, resolved.origin);
  return resolved;
}

/** The schedules file: `--config`, else `JOBS_CONFIG`, else the project file's `config:`, else `./schedules.yaml`. */
export function resolveConfig(option: string | undefined, deps: ResolveDeps): Resolved {
  return resolve(option, "--config", "JOBS_CONFIG", "config", "./schedules.yaml", deps);
}

/**
 * Why the store at `db` is the one used (`from --db`, ...), as resolved for
 * `deps` by {@linkcode resolveDb}; null when it was not resolved there.
 */
export function storeOrigin(db: string, deps: object): string | null {
  return ORIGINS.get(deps)?.get(db) ?? null;
}

function resolve(
  option: string | undefined,
  flag: string,
  variable: string,
  key: (typeof PROJECT_KEYS)[number],
  fallback: string,
  deps: ResolveDeps,
): Resolved {
  if (option !== undefined) return { value: option, origin: `from ${flag}`, named: true };
  const env = deps.env(variable);
  if (env !== undefined) return { value: env, origin: `from ${variable}`, named: true };
  const project = projectOf(deps);
  const value = project?.[key];
  if (project && value !== undefined) {
    return { value, origin: `from ${escapeControl(project.file)}`, named: true };
  }
  return {
    value: fallback,
    origin: `the default, as no ${flag}, ${variable} or ${PROJECT_FILE} names one`,
    named: false,
  };
}

/** The project file for `deps`, read once (null when there is none). */
function projectOf(deps: ResolveDeps): Project | null {
  if (PROJECTS.has(deps)) return PROJECTS.get(deps)!;
  const file = findProjectFile(deps.cwd?.() ?? Deno.cwd());
  const project = file === null ? null : readProjectFile(file);
  PROJECTS.set(deps, project);
  return project;
}

/** The nearest {@linkcode PROJECT_FILE} at or above `folder`, or null. */
export function findProjectFile(folder: string): string | null {
  let dir = folder.replace(/\/+$/, "") || "/";
  for (;;) {
    const candidate = `${dir === "/" ? "" : dir}/${PROJECT_FILE}`;
    try {
      if (Deno.statSync(candidate).isFile) return candidate;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory)) {
        throw new ProjectFileError(
          `cannot read the project file "${escapeControl(candidate)}": ${
            escapeControl((error as Error).message)
          }`,
        );
      }
    }
    if (dir === "/") return null;
    dir = dir.slice(0, dir.lastIndexOf("/")) || "/";
  }
}

/**
 * The project file at `file`: `db:` and `config:`, each a string; a relative
 * path is resolved from the file's folder (a `postgres://` URL is kept as
 * is). Anything else is a {@linkcode ProjectFileError} naming the file, the
 * line and the key.
 */
export function readProjectFile(file: string): Project {
  let text: string;
  try {
    text = Deno.readTextFileSync(file);
  } catch (error) {
    throw new ProjectFileError(
      `cannot read the project file "${escapeControl(file)}": ${
        escapeControl((error as Error).message)
      }`,
    );
  }
  const doc = parseDocument(text);
  const [first] = doc.errors;
  if (first) {
    const line = first.linePos?.[0]?.line;
    throw new ProjectFileError(
      `${escapeControl(file)}${line ? `:${line}` : ""}: the project file is not valid YAML: ${
        escapeControl(first.message.split("\n")[0] ?? "")
      }`,
    );
  }
  const data = doc.toJS() as unknown;
  if (data === null || data === undefined) return { file };
  if (typeof data !== "object" || Array.isArray(data)) {
    throw new ProjectFileError(
      `${escapeControl(file)}: the project file must be a mapping with db: and config:`,
    );
  }
  const folder = file.slice(0, file.lastIndexOf("/")) || "/";
  const project: Project = { file };
  for (const [key, value] of Object.entries(data)) {
    if (!(PROJECT_KEYS as readonly string[]).includes(key)) {
      throw new ProjectFileError(
        `${escapeControl(file)}: unknown key "${escapeControl(key)}"${
          escapeControl(didYouMean(key, PROJECT_KEYS))
        } (a project file holds db: and config:)`,
      );
    }
    if (typeof value !== "string" || value === "") {
      throw new ProjectFileError(
        `${escapeControl(file)}: ${key} must be a path, got ${
          escapeControl(JSON.stringify(value) ?? String(value))
        }`,
      );
    }
    project[key as "db" | "config"] = value.startsWith("/") || /^[a-z]+:\/\//i.test(value) ||
        value === ":memory:"
      ? value
      : `${folder}/${value.replace(/^\.\//, "")}`;
  }
  return project;
}
