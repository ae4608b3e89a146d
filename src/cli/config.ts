/**
 * The one way the command line reads `schedules.yaml`: {@linkcode loadConfig}
 * returns the configuration or every error, and {@linkcode configOrFail}
 * prints those errors (one per line on stderr, or as JSON) and fails the
 * command naming the file. Commands differ only in the options they pass:
 * whether the `workers:` module is imported and checked, and whether a
 * missing file (one nobody named) means "no file" rather than an error.
 *
 * @module
 */

import { type ZoneOf, zonesOf } from "../admin/views.ts";
import { type ConfigError, loadSchedules, type ProgramFiles } from "../config/load.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { workerNames } from "../runners/workers_module.ts";
import { escapeControl } from "../text/escape.ts";
import { exists } from "../text/files.ts";
import { type CliDeps, CommandFailed, configNamed, configPath, plural } from "./common.ts";

/** How to read the file. */
export interface LoadConfigOptions {
  /**
   * Import the `workers:` module the file names, check every worker a
   * schedule names against it, and return its workers' names.
   * @default false
   */
  workers?: boolean;
  /**
   * A missing file is no configuration (`config: null`, no error): for a
   * command that reads the default file only when it is there. A file
   * someone named (`--config`, `JOBS_CONFIG`) should not be optional.
   * @default false
   */
  optional?: boolean;
  /**
   * Look for the program of every command of a valid file: a missing or
   * non-executable one is a warning (see `config/programs.ts`).
   * @default undefined (not looked for)
   */
  programs?: ProgramFiles;
}

/** What {@linkcode loadConfig} found. */
export interface LoadedConfig {
  file: string;
  /** Null when the file has errors, or is optional and missing. */
  config: ScheduleConfig | null;
  /** The workers of the `workers:` module (with `workers: true`), else none. */
  workers: readonly string[];
  /** Every error, in the file's order; none when it loaded (or is optional and missing). */
  errors: ConfigError[];
  /** The warnings of a file that loaded, in the file's order (with `programs`, else none). */
  warnings: ConfigError[];
  /** The first error (and how many more), on one line, or null. */
  problem: string | null;
}

/**
 * The zones of the schedules the file declares (`--config`, else
 * `JOBS_CONFIG`, else `./schedules.yaml` when present), to read an
 * occurrence typed as a local time without offset. A missing or invalid
 * file lends none: the command then asks for an offset.
 */
export async function fileZones(option: string | undefined, deps: CliDeps): Promise<ZoneOf> {
  const file = configPath(option, deps);
  const loaded = await loadConfig(file, { optional: !configNamed(option, deps) });
  return zonesOf(loaded.config?.schedules);
}

/** Reads the schedules file at `file` (see {@linkcode LoadConfigOptions}). */
export async function loadConfig(
  file: string,
  options: LoadConfigOptions = {},
): Promise<LoadedConfig> {
  if (options.optional && !(await exists(file))) {
    return { file, config: null, workers: [], errors: [], warnings: [], problem: null };
  }
  let workers: readonly string[] = [];
  const result = await loadSchedules(file, {
    workers: options.workers ? async (module) => workers = await workerNames(module) : undefined,
    programs: options.programs,
  });
  if (result.ok) {
    return {
      file,
      config: result.config,
      workers,
      errors: [],
      warnings: result.warnings,
      problem: null,
    };
  }
  const [first] = result.errors;
  const more = result.errors.length > 1 ? ` (and ${result.errors.length - 1} more)` : "";
  return {
    file,
    config: null,
    workers: [],
    errors: result.errors,
    warnings: [],
    problem: `${first?.message ?? `${file}: invalid`}${more}`,
  };
}

/**
 * The configuration, or the command fails: every error is printed (one per
 * line on stderr; with `json`, `{ ok: false, file, errors }` on stdout) and
 * the command's one line names the file and how many errors it has.
 */
export function configOrFail(
  command: string,
  loaded: LoadedConfig,
  deps: CliDeps,
  json = false,
): ScheduleConfig | null {
  if (loaded.errors.length === 0) return loaded.config;
  if (json) {
    deps.out(JSON.stringify({ ok: false, file: loaded.file, errors: loaded.errors }, null, 2));
  } else for (const error of loaded.errors) deps.err(escapeControl(error.message));
  throw new CommandFailed(
    json
      ? ""
      : `jobs ${command}: ${escapeControl(loaded.file)}: ${plural(loaded.errors.length, "error")}`,
  );
}

/** The configuration at `file`, which must exist and load; else the command fails as {@linkcode configOrFail}. */
export async function requireConfig(
  command: string,
  file: string,
  deps: CliDeps,
  options: { workers?: boolean; json?: boolean; programs?: ProgramFiles } = {},
): Promise<{ config: ScheduleConfig; workers: readonly string[]; warnings: ConfigError[] }> {
  const loaded = await loadConfig(file, { workers: options.workers, programs: options.programs });
  const config = configOrFail(command, loaded, deps, options.json);
  // Not optional, so a missing file is an error above: there is always a config here.
  return { config: config!, workers: loaded.workers, warnings: loaded.warnings };
}

/**
 * The schedules file of `--config` (or `JOBS_CONFIG`), which must load, else
 * the default file when it is there: for commands that use a configuration
 * when there is one. An invalid default file fails the command too, unless
 * `lenient`, where it is a warning on stderr and no configuration.
 */
export async function configIfAny(
  command: string,
  option: string | undefined,
  deps: CliDeps,
  options: { workers?: boolean; lenient?: boolean } = {},
): Promise<LoadedConfig> {
  const named = configNamed(option, deps);
  const loaded = await loadConfig(configPath(option, deps), {
    workers: options.workers,
    optional: !named,
  });
  if (loaded.errors.length > 0 && !named && options.lenient) {
    deps.err(`jobs ${command}: warning: ${escapeControl(loaded.problem ?? "")}`);
    return loaded;
  }
  configOrFail(command, loaded, deps);
  return loaded;
}
