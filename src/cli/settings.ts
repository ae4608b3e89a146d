/**
 * The settings commands: `jobs settings` (every known setting: the global
 * ones and each report's limits, with its value, where it came from and,
 * when stored, who set it, when and why), `jobs settings set <key> <value>
 * --reason` (stored, overriding the schedules file and the default;
 * audited) and `jobs settings unset <key> --reason` (back to the file's
 * value or the default; audited). Each is a thin call into
 * `src/admin/settings.ts`; the reports, and so the keys, come from the
 * schedules file found as every command finds it.
 *
 * @module
 */

import type { Command } from "commander";
import {
  setSetting,
  settingChangeJson,
  type SettingChangeResult,
  settingJson,
  SettingRefused,
  settingsView,
  type SettingView,
  unsetSetting,
} from "../admin/settings.ts";
import { GLOBAL_SETTINGS, LIMIT_NAMES } from "../report/limits.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { type CliDeps, CommandFailed, dbPath, globalOptions, quiet, who } from "./common.ts";
import { configIfAny } from "./config.ts";
import { withStore } from "./store/open.ts";
import { cell, commandLine, echo, iso, safeJson, table } from "./text.ts";

const KEYS_HELP = `
Keys:
  ${GLOBAL_SETTINGS.map((s) => s.key).join(", ")}
  report.<id>.<limit>, the limit one of
    ${LIMIT_NAMES.join(", ")}

Values: durations as 30s, 10m, 1h30m, 7d or PT15M, P7D; sizes as 500MB, 1GiB
or 1048576 (bytes); counts as whole numbers above zero.`;

/** Registers `settings`, `settings set` and `settings unset` on the program. */
export function registerSettingsCommands(program: Command, deps: CliDeps): void {
  const group = quiet(
    globalOptions(
      program.command("settings")
        .description(
          "every setting (global ones, each report's limits): value, source and who changed it",
        )
        // `--json` and `--reason` after `set` are the subcommand's.
        .enablePositionalOptions()
        .addHelpText("after", KEYS_HELP),
      {
        db: { mode: "read" },
        config: { for: "for the reports whose limits it lists (read when it exists)" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; config?: string; json?: boolean }) => {
      const loaded = await configIfAny("settings", options.config, deps, { lenient: true });
      await withStore("settings", dbPath(options.db, deps), "read", deps, async (store) => {
        const views = await settingsView(store, loaded.config?.reports ?? []);
        if (options.json) {
          deps.out(safeJson(views.map(settingJson)));
          return;
        }
        for (const line of settingsTable(views)) deps.out(line);
      });
    }),
    deps,
    "settings",
  );
  setCommand(group, deps);
  unsetCommand(group, deps);
}

interface ChangeOptions {
  db?: string;
  config?: string;
  json?: boolean;
  actor?: string;
  reason: string;
}

function setCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("set")
        .description("store a setting's value, overriding the schedules file and the default")
        .argument("<key>", "the setting (jobs settings lists them)")
        .argument("<value>", "the value: 10m, PT15M, 200MB, 1GiB, 500000")
        .addHelpText("after", KEYS_HELP),
      {
        db: { mode: "write" },
        config: { for: "which declares the reports whose limits it sets" },
        json: true,
        audit: { reason: "required" },
      },
    ).action(async (key: string, value: string, options: ChangeOptions) => {
      const config = await configOf("settings set", options, deps);
      await withStore("settings set", dbPath(options.db, deps), "write", deps, async (store) => {
        const result = await setSetting(
          store,
          { key, value, reports: config?.reports ?? [] },
          who(options, deps),
        ).catch((error) => refused("settings set", error, deps));
        printChange(result, options, deps);
      });
    }),
    deps,
    "settings set",
  );
}

function unsetCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("unset")
        .description("remove a stored setting: the schedules file's value or the default applies")
        .argument("<key>", "the setting (jobs settings lists them)"),
      {
        db: { mode: "write" },
        config: { for: "whose value applies again" },
        json: true,
        audit: { reason: "required" },
      },
    ).action(async (key: string, options: ChangeOptions) => {
      const config = await configOf("settings unset", options, deps);
      await withStore("settings unset", dbPath(options.db, deps), "write", deps, async (store) => {
        const result = await unsetSetting(
          store,
          { key, reports: config?.reports ?? [] },
          who(options, deps),
        ).catch((error) => refused("settings unset", error, deps));
        printChange(result, options, deps);
      });
    }),
    deps,
    "settings unset",
  );
}

/** The schedules file of `--config`, else the default one when it is there; a broken one fails. */
async function configOf(
  command: string,
  options: { config?: string },
  deps: CliDeps,
): Promise<ScheduleConfig | null> {
  return (await configIfAny(command, options.config, deps)).config;
}

/** A refusal of the admin layer as the command's failure (exit 2: the command line is wrong). */
function refused(command: string, error: unknown, deps: CliDeps): never {
  if (error instanceof SettingRefused) {
    const hint = error.why === "unknown-key"
      ? ` (${commandLine(deps.program, ["settings"])} lists them)`
      : "";
    throw new CommandFailed(`jobs ${command}: ${echo(error.message, 400)}${hint}`, 2);
  }
  throw error;
}

/** `report.statement.max_rows: 1000000 -> 500 (was default)`, or the JSON of the change. */
function printChange(result: SettingChangeResult, options: ChangeOptions, deps: CliDeps): void {
  if (options.json) {
    deps.out(JSON.stringify(settingChangeJson(result)));
    return;
  }
  const key = cell(result.key);
  if (!result.changed) {
    deps.out(`${key}: not set; ${cell(result.now.display)} (${result.now.source}) applies`);
    return;
  }
  deps.out(
    `${key}: ${cell(result.was.display)} -> ${cell(result.now.display)} ` +
      (result.now.source === "setting"
        ? `(was ${result.was.source})`
        : `(back to ${result.now.source})`),
  );
}

function settingsTable(views: SettingView[]): string[] {
  const header = ["KEY", "VALUE", "SOURCE", "CHANGED BY", "AT", "WHY"];
  const rows = views.map((v) => [
    cell(v.key),
    cell(v.display),
    v.source,
    v.changed ? cell(v.changed.actor) : "-",
    v.changed ? iso(v.changed.at)! : "-",
    v.changed ? cell(v.changed.reason ?? "-") : "-",
  ]);
  return table([header, ...rows]);
}
