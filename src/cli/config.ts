/**
 * The schedules file on the command line. The one way a command reads
 * `schedules.yaml`: {@linkcode loadConfig} returns the configuration or
 * every error, and {@linkcode configOrFail} prints those errors (one per
 * line on stderr, or as JSON) and fails the command naming the file.
 * Commands differ only in the options they pass: whether the `workers:`
 * module is imported and checked, and whether a missing file (one nobody
 * named) means "no file" rather than an error.
 *
 * And `jobs check`, which validates the whole file (its schedules, queues,
 * workflows, pipelines, reports and pruner, with its `workers:` module)
 * without reading the store; and the line that says a file with errors is
 * not in force ({@linkcode notInForce}).
 *
 * @module
 */

import type { Command } from "commander";
import { type ZoneOf, zonesOf } from "../admin/jobs.ts";
import { type ConfigError, loadSchedules, type ProgramFiles } from "../config/load.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { hostPrograms } from "../runners/programs.ts";
import { workerNames } from "../runners/workers_module.ts";
import { type PrunerSettings, prunerSettings } from "../runtime/pruner.ts";
import { formatDuration } from "../text/durations.ts";
import { escapeControl } from "../text/escape.ts";
import { exists } from "../text/files.ts";
import {
  type CliDeps,
  CommandFailed,
  configNamed,
  configPath,
  globalOptions,
  plural,
  quiet,
} from "./common.ts";
import { cell } from "./text.ts";

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

/**
 * The line that says the schedules file has errors and is not in force,
 * with its first error (file:line), and where the schedules shown come from.
 */
export function notInForce(
  loaded: Pick<LoadedConfig, "file" | "errors" | "problem">,
  stored: ScheduleConfig | null,
): string {
  const shown = stored === null
    ? "the store cannot be read, so what a daemon runs is unknown"
    : stored.schedules.length > 0
    ? "a daemon keeps running the last good definitions, shown below as the store has them"
    : "the store has no definitions synced by a daemon to show";
  const what = loaded.errors.some((e) => e.code === "file-unreadable")
    ? "cannot be read"
    : "has errors";
  return `${loaded.file} ${what} and is not in force (${shown}): ${loaded.problem}`;
}

const FILE_ONLY = "it reads the schedules file alone, not the store";

const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `check` on the program. */
export function registerCheckCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("check").description("validate schedules.yaml; exit 1 with every error"),
      {
        db: { not: FILE_ONLY },
        config: { for: "to validate, with its workers: module" },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (options: { config?: string; json?: boolean }) => {
      await checkCommand({ config: configPath(options.config, deps), json: !!options.json }, deps);
    }),
    deps,
    "check",
  );
}

/**
 * `jobs check`: exit 0 when the file is valid, 1 with every error. A valid
 * file's warnings (a command's program missing or not executable where a
 * daemon started here would run it) are printed and leave the exit 0.
 */
export async function checkCommand(
  options: { config: string; json: boolean },
  deps: CliDeps,
): Promise<void> {
  // Imports the `workers:` module, if any, to check each worker a schedule names.
  const { config, warnings } = await requireConfig("check", options.config, deps, {
    workers: true,
    json: options.json,
    programs: hostPrograms(deps.cwd?.() ?? Deno.cwd(), deps.env("PATH")),
  });
  const queues = Object.keys(config.queues).length;
  // A `pruner:` section is shown as the pruner runs it, defaults filled in.
  const pruner = config.pruner && prunerSettings(config.pruner);
  // Workflows and use cases are counted only in a file that has them, so older output stays as it was.
  const useCases = Object.keys(config.useCases).length;
  const workflows = config.workflows.length;
  const sagas = config.workflows.filter((w) => w.saga).length;
  // Each pipeline with its steps in run order: the order decides what each step sees.
  const pipelines = config.pipelines.map((p) => ({
    id: p.id,
    steps: p.steps.map((step) => ({ name: step.name, mark: step.mark, sources: step.sources })),
    sink: p.sink.kind === "worker"
      ? p.sink.worker
      : p.sink.kind === "work_queue"
      ? `work queue ${p.sink.queue}`
      : p.sink.argv.join(" "),
    dropReasons: p.dropReasons,
  }));
  // Each report with the bounds it is held to.
  const reports = config.reports.map((r) => ({
    id: r.id,
    format: r.format?.type ?? null,
    columns: r.format?.columns ?? [],
    paging: r.paging ?? null,
    params: Object.fromEntries(Object.entries(r.params ?? {}).map(([k, v]) => [k, v.type])),
    tenancy: r.tenancy.mode,
    audit: r.audit?.target ?? null,
  }));
  if (options.json) {
    deps.out(JSON.stringify(
      {
        ok: true,
        file: options.config,
        schedules: config.schedules.length,
        queues,
        ...(workflows > 0 ? { workflows, sagas } : {}),
        ...(useCases > 0 ? { useCases } : {}),
        ...(pipelines.length > 0 ? { pipelines } : {}),
        ...(reports.length > 0 ? { reports } : {}),
        ...(pruner ? { pruner } : {}),
        ...(warnings.length > 0 ? { warnings } : {}),
      },
      null,
      2,
    ));
    return;
  }
  const flows = [
    workflows > 0 ? `, ${plural(workflows, "workflow")} (${plural(sagas, "saga")})` : "",
    useCases > 0 ? `, ${plural(useCases, "use case")}` : "",
    pipelines.length > 0 ? `, ${plural(pipelines.length, "pipeline")}` : "",
    reports.length > 0 ? `, ${plural(reports.length, "report")}` : "",
  ].join("");
  deps.out(
    `${cell(options.config)}: valid, ${plural(config.schedules.length, "schedule")}, ` +
      plural(queues, "queue") + flows + (pruner ? `; ${prunerText(pruner)}` : ""),
  );
  for (const r of reports) {
    const paging = r.paging?.mode === "pages"
      ? `pages of ${r.paging.size} by ${cell(r.paging.key)}`
      : `no paging (${cell(r.paging?.reason ?? "")})`;
    const params = Object.entries(r.params).map(([k, t]) => `${cell(k)}: ${t}`).join(", ");
    deps.out(
      `report ${cell(r.id)}: ${r.format} [${r.columns.map(cell).join(", ")}], ${paging}, ` +
        `params ${params || "none"}, tenant ${r.tenancy}, audit to ${cell(r.audit ?? "")}`,
    );
  }
  for (const p of pipelines) {
    const steps = p.steps.map((step, i) =>
      `${i + 1}. ${step.mark} ${cell(step.name)}` +
      (step.sources.length > 0 ? ` (reads ${step.sources.map(cell).join(", ")})` : "")
    );
    deps.out(
      `pipeline ${cell(p.id)}: ${[...steps, `sink ${cell(p.sink)}`].join(" -> ")}; ` +
        `drop reasons ${p.dropReasons.map(cell).join(", ")}`,
    );
  }
  for (const warning of warnings) {
    deps.err(`jobs check: warning: ${escapeControl(warning.message)}`);
  }
}

/** `pruner every 1m, batch 1000, retention completed 7d, cancelled 30d, discarded 30d`. */
function prunerText({ everyMs, batch, retention }: PrunerSettings): string {
  const kept = (["completed", "cancelled", "discarded"] as const)
    .map((state) => `${state} ${formatDuration(retention[state])}`);
  return `pruner every ${formatDuration(everyMs)}, batch ${batch}, retention ${kept.join(", ")}`;
}
