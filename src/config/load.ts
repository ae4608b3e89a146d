/**
 * Reads `schedules.yaml`: YAML limits first (size, anchors and aliases,
 * nesting), then YAML syntax, then one zod schema for shapes and types, then
 * the checks that span fields (one rhythm, one runner, local-time policies,
 * guards, duplicate ids, schedules that never fire). Each error is one line
 * naming the file, line, column, schedule, field and value; any error rejects
 * the whole file. Every error of the schema and the checks is reported; a
 * YAML mistake is reported once, with what to change (the first syntax error
 * only, or one error for keys that indentation put at the wrong level), and
 * the schema does not run on a file with one. Unknown keys, time zones and
 * workers end with the nearest known names: `; did you mean "timeout"?`.
 * A valid file may have warnings, which never reject it: given where
 * commands would run, a command whose program is missing or not executable
 * (`config/programs.ts`).
 *
 * The parts, each its own module beside this one: `yaml.ts` (limits and
 * syntax) with `yaml_hints.ts` (what to change), `misplaced.ts` (keys at the
 * wrong level), `schema.ts` (the zod schema), `checks.ts` (across fields),
 * `report.ts` (the error shape), `build.ts` (the schema's output to a
 * {@linkcode ScheduleConfig}).
 *
 * Defaults, when neither the schedule nor `defaults:` says otherwise (see
 * {@linkcode SCHEDULE_DEFAULTS}): zone `UTC`, misfire `fire_once` with a 60 s
 * grace and a catch-up limit of 100, overlap policy `allow`, queue `default`,
 * priority 0, 20 attempts, enabled. A schedule's own value replaces the
 * default (lists such as `tags` included: they are not merged).
 *
 * `workers: ./workers.ts` at the top names a TypeScript module whose
 * exported workers run the schedules' `worker` runs; the path is read
 * relative to the schedules file and kept as {@linkcode ScheduleConfig.workersModule}.
 * The parser does not import it: {@linkcode loadSchedules} with a `workers`
 * loader (as `jobs check` does) checks every `run.worker` and
 * `selection.worker` against the names the module exports.
 *
 * Fan-out: a schedule with `selection` runs `run` once per item. The
 * selection is a command (`command`, `shell`, `cwd`, `env`, run as a
 * `command` run is: no shell unless `shell: true`, `${NAME}` in `env` filled
 * from the daemon's environment) whose stdout lists the items, one per
 * non-empty line or as one JSON array; or a `worker` (with `args`) of the
 * workers module whose `perform` returns the list. `batch_size` (default
 * {@linkcode DEFAULT_BATCH_SIZE}) item jobs are inserted per transaction.
 * How an item reaches its job:
 *
 * - `command`: always as the environment variable `JOBS_ITEM`, and in place
 *   of each `{item}` in an argv element (a literal argument: no shell sees
 *   it). With `shell: true` the script may not hold `{item}`, since the
 *   item's text would run as shell code: use `"$JOBS_ITEM"`.
 * - `http`: `{item}` in the URL is replaced percent-encoded, in the body as
 *   it is.
 * - `worker`: as `args.item` (`args`, if given, must be a mapping without
 *   `item`).
 *
 * An item that is not a string is passed as its JSON text. A selection is
 * allowed on manual schedules too: a run started by an operator fans out the
 * same way.
 *
 * Workflows: `use_cases:` maps a use-case id to what runs it, one of
 * `command` (with `shell`, `cwd`, `env`), `worker` or `http`, as a `run`
 * takes them, with an optional `queue` and `priority` for the jobs that run
 * it and `max_attempts`, `backoff` and `timeout` (a schedule's shapes) for
 * how they are retried: a saga's record may not say it, so the use case,
 * which is the implementation, does. `workflows:` lists definitions: `id`, `carried_by: workflow` for a
 * saga, `queue`, and `steps`, each with `id`, `depends_on`, `for_each`,
 * `optional`, `use_case` or (a plain workflow only) `run`, `compensation`
 * (`{ mode: use-case, use_case }` or `{ mode: none, reason }`),
 * `max_attempts`, `timeout`, `backoff` (not in a saga), `queue`, `priority`
 * and `tags`. Each is held to `checkWorkflow`'s rules (`config/workflows.ts`):
 * a broken rule is an error with the rule's code (`behavior-unrecorded`,
 * `use-case-shared`, `compensation-missing`, `engine-config-in-record`...)
 * at the node it names, and a valid file's workflows are compiled onto
 * {@linkcode ScheduleConfig.workflows}. A schedule with `run: { workflow:
 * <id>, input: {...} }` starts one run per occurrence: a `jobs.workflow` job
 * carrying the compiled definition (`input` defaults to `{}`; an unknown id
 * is `workflow-unknown`; a selection cannot fan it out).
 *
 * Pure except {@linkcode loadSchedules}, which reads the file. The `yaml`
 * package reads the environment variables `LOG_TOKENS` and `LOG_STREAM`, so
 * a program that parses needs `--allow-env` (or at least those two names).
 *
 * @module
 */

import type { ScheduleConfig } from "./types.ts";
import { build } from "./build.ts";
import { validate, type WorkerNames } from "./checks.ts";
import { misplacedKeys } from "./misplaced.ts";
import type { QueryReader } from "./reports.ts";
import { type ConfigError, type ConfigErrorCode, Positions, Reporter } from "./report.ts";
import { MAX_FILE_BYTES, readYaml, tooLarge } from "./yaml.ts";
import { checkPrograms, type ProgramFiles } from "./programs.ts";

export type { ConfigError, ConfigErrorCode } from "./report.ts";
export { DEFAULT_BATCH_SIZE, DEFAULT_CONCURRENCY, SCHEDULE_DEFAULTS } from "./build.ts";
export { MAX_BATCH_SIZE } from "./schema.ts";
export { MAX_DEPTH, MAX_FILE_BYTES } from "./yaml.ts";
export type { ProgramFiles } from "./programs.ts";

/**
 * The result of {@linkcode parseSchedules} and {@linkcode loadSchedules}:
 * a valid file's configuration with its warnings (problems that do not
 * reject it, in the file's order), or every error.
 */
export type ParseResult =
  | { ok: true; config: ScheduleConfig; warnings: ConfigError[] }
  | { ok: false; errors: ConfigError[] };

/** What {@linkcode parseSchedules} checks beyond the file itself. */
export interface ParseOptions {
  /**
   * The names of the workers the `workers:` module exports, to check each
   * `run.worker` and `selection.worker` against; or why the module could
   * not be loaded. Left out, worker names are not checked.
   */
  workers?: WorkerNames;
  /**
   * Reads a report's query file (resolved against the schedules file's
   * folder), null when it cannot: the checks of its parameters need its
   * text. Left out, those checks are skipped.
   */
  readQuery?: QueryReader;
  /**
   * Where commands would run and what is there: given, each command's
   * program is looked for and a missing or non-executable one is a warning
   * (see `config/programs.ts`). Left out, programs are not looked for.
   */
  programs?: ProgramFiles;
}

/** What {@linkcode loadSchedules} may do beyond reading the file. */
export interface LoadOptions {
  /**
   * Loads the `workers:` module (the path as in
   * {@linkcode ScheduleConfig.workersModule}) and returns the names of its
   * workers; throws when it cannot. Given, worker names are checked (see
   * {@linkcode ParseOptions.workers}); the error's `reason`, else its
   * message, is reported.
   */
  workers?: (module: string) => Promise<readonly string[]>;
  /** Given, the programs of the file's commands are looked for (see {@linkcode ParseOptions.programs}). */
  programs?: ProgramFiles;
}

/**
 * Parses and validates the text of a schedules file.
 *
 * @param text the file's contents
 * @param file the name shown in messages, e.g. `schedules.yaml`; the
 *   `workers:` module is resolved against its folder
 * @param options worker names to check `worker` runs against
 * @returns the config with defaults applied, or every error found
 */
export function parseSchedules(
  text: string,
  file: string,
  options: ParseOptions = {},
): ParseResult {
  const at = new Positions(text);
  const read = readYaml(text, file, at);
  if (!read.ok) return fail(read.errors);
  const report = new Reporter(file, read.doc, at, read.raw);
  // Keys at the wrong level are one mistake that the schema would report many times over.
  misplacedKeys(report);
  if (report.errors.length === 0) validate(report, options.workers, options.readQuery);
  if (report.errors.length === 0) {
    if (options.programs) checkPrograms(report, options.programs);
    const warnings = report.warnings.sort((a, b) => a.line - b.line || a.column - b.column);
    return { ok: true, config: build(read.raw, file), warnings };
  }
  return fail(report.errors.sort((a, b) => a.line - b.line || a.column - b.column));
}

/**
 * Reads and parses a schedules file. A missing or unreadable file is an error
 * with code `file-unreadable`, a file beyond {@linkcode MAX_FILE_BYTES} one
 * with code `yaml-limits` (refused before it is read). With a `workers`
 * loader, a valid file that names a workers module is checked against it:
 * a module that cannot be loaded is an error with code `workers-invalid`, a
 * worker it does not export one with code `worker-unknown`.
 *
 * @example Every error of a file, each naming its line, column and field
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadSchedules } from "@jobs/jobs/schedules";
 *
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/schedules.yaml`,
 *   `version: 1
 * schedules:
 *   - id: hello
 *     every: 15s
 *     timout: 5m
 *     run: { command: ["echo", "hello"] }
 * `,
 * );
 * const loaded = await loadSchedules(`${dir}/schedules.yaml`);
 * assert.equal(loaded.ok, false);
 * if (!loaded.ok) {
 *   assert.match(
 *     loaded.errors[0]!.message,
 *     /schedules\.yaml:5:5: schedule "hello": unknown field "timout"; did you mean "timeout"\?$/,
 *   );
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @param path the file; also the name shown in messages
 */
export async function loadSchedules(
  path: string,
  options: LoadOptions = {},
): Promise<ParseResult> {
  const refuse = (code: ConfigErrorCode, message: string): ParseResult =>
    fail([{ code, file: path, line: 1, column: 1, message: `${path}:1:1: ${message}` }]);
  let bytes: Uint8Array;
  try {
    const info = await Deno.stat(path);
    if (!info.isFile) return refuse("file-unreadable", "cannot read the file: not a regular file");
    if (info.size > MAX_FILE_BYTES) {
      return refuse("yaml-limits", tooLarge(info.size));
    }
    bytes = await Deno.readFile(path);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound
      ? "the file does not exist"
      : `cannot read the file: ${error instanceof Error ? error.message : String(error)}`;
    return refuse("file-unreadable", reason);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return refuse("yaml-invalid", "the file is not UTF-8 text");
  }
  const programs = options.programs;
  const result = parseSchedules(text, path, { readQuery: readTextOrNull, programs });
  const module = result.ok ? result.config.workersModule : undefined;
  if (module === undefined || !options.workers) return result;
  let workers: ParseOptions["workers"];
  try {
    workers = { names: await options.workers(module) };
  } catch (error) {
    workers = { error: reasonOf(error) };
  }
  return parseSchedules(text, path, { workers, readQuery: readTextOrNull, programs });
}

/** A report's query file, or null when it cannot be read. */
function readTextOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** An error's `reason` (a loader's cause, without the file it names), else its message, on one line. */
function reasonOf(error: unknown): string {
  const reason = (error as { reason?: unknown })?.reason;
  const text = typeof reason === "string"
    ? reason
    : error instanceof Error
    ? error.message
    : String(error);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

function fail(errors: ConfigError[]): ParseResult {
  return { ok: false, errors };
}
