/**
 * The commands on the schedules file: `jobs check` and `jobs next` read
 * `schedules.yaml` alone; `jobs schedules` joins each schedule with its
 * stored state, reading the store (never creating or migrating it) when
 * there is one at the current schema.
 *
 * @module
 */

import type { Command } from "commander";
import { formatDuration } from "../text/durations.ts";
import { next } from "../schedule/occurrences.ts";
import { misfireText, rhythmText } from "../schedule/describe.ts";
import type { Schedule } from "../schedule/types.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { storedConfig } from "../admin/views.ts";
import type { ScheduleRow } from "../store/store.ts";
import { didYouMean } from "../text/suggest.ts";
import { type PrunerSettings, prunerSettings } from "../runtime/pruner.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  parseCount,
  parseInstant,
  plural,
  quiet,
} from "./common.ts";
import { hostPrograms } from "../runners/programs.ts";
import { escapeControl } from "../text/escape.ts";
import { configOrFail, loadConfig, requireConfig } from "./config.ts";
import { notInForce } from "./inspect.ts";
import { tryOpenStore } from "./store/open.ts";
import { cell, echo, isoIn } from "./text.ts";

const FILE_ONLY = "it reads the schedules file alone, not the store";
const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `check`, `next` and `schedules` on the program. */
export function registerSchedulesCommands(program: Command, deps: CliDeps): void {
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

  quiet(
    globalOptions(
      program.command("next")
        .description("the next occurrences of a schedule")
        .argument("<schedule-id>", "the schedule's id")
        .option("--from <instant>", "start after this ISO instant (default: now)", parseInstant)
        .option("--count <n>", "how many occurrences", parseCount, 5),
      {
        db: { not: FILE_ONLY },
        config: { for: "which declares the schedule" },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(
      async (
        id: string,
        options: { config?: string; from?: number; count: number; json?: boolean },
      ) => {
        await nextCommand({
          id,
          config: configPath(options.config, deps),
          from: options.from ?? deps.clock.now(),
          count: options.count,
          json: !!options.json,
        }, deps);
      },
    ),
    deps,
    "next",
  );

  quiet(
    globalOptions(
      program.command("schedules")
        .description("every schedule with its policies, stored state and next occurrence"),
      {
        db: { mode: "read" },
        config: { for: "whose schedules it lists" },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (options: { config?: string; db?: string; json?: boolean }) => {
      await schedulesCommand({
        config: configPath(options.config, deps),
        db: dbPath(options.db, deps),
        json: !!options.json,
        now: deps.clock.now(),
      }, deps);
    }),
    deps,
    "schedules",
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
    sink: p.sink.kind === "worker" ? p.sink.worker : p.sink.argv.join(" "),
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

/** `jobs next <id>`: the next occurrences of one schedule after `from`. */
export async function nextCommand(
  options: { id: string; config: string; from: number; count: number; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const { config } = await requireConfig("next", options.config, deps, { json: options.json });
  const schedule = config.schedules.find((s) => s.id === options.id);
  if (!schedule) {
    const ids = config.schedules.map((s) => s.id);
    const known = ids.map((id) => `"${echo(id)}"`).join(", ");
    throw new CommandFailed(
      `jobs next: no schedule "${echo(options.id)}" in ${echo(options.config)}` +
        `${echo(didYouMean(options.id, ids))} (it has ${known || "none"})`,
    );
  }
  const occurrences = next(schedule, options.from, options.count);
  if (options.json) {
    deps.out(JSON.stringify(
      occurrences.map((o) => ({
        at: new Date(o.at).toISOString(),
        occurrence: o.occurrence,
        local: o.local,
        note: o.note,
      })),
      null,
      2,
    ));
    return;
  }
  if (schedule.rhythm.kind === "manual") {
    deps.out(`${cell(schedule.id)} is manual: it runs only when someone runs it`);
    return;
  }
  if (occurrences.length === 0) {
    deps.out(
      `${cell(schedule.id)} has no occurrence after ${new Date(options.from).toISOString()}`,
    );
    return;
  }
  for (const o of occurrences) {
    deps.out(`${new Date(o.at).toISOString()}  ${o.local}${o.note ? `  (${o.note})` : ""}`);
  }
}

/** One schedule as `jobs schedules` shows it. */
interface ScheduleView {
  id: string;
  rhythm: string;
  timezone: string;
  localTime: string | null;
  misfire: string;
  overlapPolicy: string;
  enabled: boolean;
  disabledReason: string | null;
  lastPlannedFor: string | null;
  lastStartedAt: string | null;
  lastCompletedAt: string | null;
  misfires: number;
  next: string | null;
}

/**
 * `jobs schedules`: every schedule of the file with its stored state and
 * next occurrence. Without a readable store (none yet, or an older schema)
 * the file alone is shown, and why on stderr.
 */
export async function schedulesCommand(
  options: { config: string; db: string; json: boolean; now: number },
  deps: CliDeps,
): Promise<void> {
  const config = await fileOrStored(options, deps);
  const rows = await storedRows(options.db, config.schedules.map((s) => s.id), deps);
  const views = config.schedules.map((s) => view(s, rows.get(s.id), options.now));
  if (options.json) {
    deps.out(JSON.stringify(views, null, 2));
    return;
  }
  if (views.length === 0) {
    deps.out(`${cell(options.config)} declares no schedule`);
    return;
  }
  for (const v of views) {
    const state = v.enabled ? "enabled" : `disabled: ${v.disabledReason ?? "no reason given"}`;
    // Each instant in UTC and, for a schedule in another zone, in its own.
    const at = (instant: string | null) =>
      isoIn(instant === null ? null : Date.parse(instant), v.timezone);
    deps.out(
      `${v.id}  ${v.rhythm}  ${v.timezone}${v.localTime ? ` (${v.localTime})` : ""}  ${state}`,
    );
    deps.out(
      `  misfire ${v.misfire}, overlap ${v.overlapPolicy}; misfires ${v.misfires}; next ${
        v.next === null ? "none" : at(v.next)
      }`,
    );
    deps.out(
      `  last planned ${at(v.lastPlannedFor)}, started ${at(v.lastStartedAt)}, ` +
        `completed ${at(v.lastCompletedAt)}`,
    );
  }
}

/**
 * The file's schedules; or, while the file has errors, those the store last
 * synced (what a daemon runs), with a warning on stderr that the file is
 * not in force. Without stored definitions the command fails on the file's
 * errors as before.
 */
async function fileOrStored(
  options: { config: string; db: string; json: boolean },
  deps: CliDeps,
): Promise<ScheduleConfig> {
  const loaded = await loadConfig(options.config);
  if (loaded.config !== null) return loaded.config;
  const opened = await tryOpenStore(options.db, "read", deps);
  let stored: ScheduleConfig | null = null;
  if (opened.ok) {
    try {
      stored = await storedConfig(opened.store);
    } finally {
      await opened.store.close();
    }
  }
  if (stored === null || stored.schedules.length === 0) {
    configOrFail("schedules", loaded, deps, options.json);
  }
  deps.err(`jobs schedules: warning: ${echo(notInForce(loaded, stored), 1000)}`);
  return stored!;
}

/** The stored rows, read in `read` mode; none (and why, on stderr) without a readable store. */
async function storedRows(
  db: string,
  ids: string[],
  deps: CliDeps,
): Promise<Map<string, ScheduleRow>> {
  const opened = await tryOpenStore(db, "read", deps);
  if (!opened.ok) {
    deps.err(`jobs schedules: no stored state shown: ${opened.problem}`);
    return new Map();
  }
  try {
    return new Map((await opened.store.schedulesList({ ids })).map((r) => [r.id, r]));
  } finally {
    await opened.store.close();
  }
}

function view(schedule: Schedule, row: ScheduleRow | undefined, now: number): ScheduleView {
  const iso = (ms: number | null | undefined) => ms == null ? null : new Date(ms).toISOString();
  const [following] = next(schedule, now, 1);
  const lt = schedule.localTime;
  return {
    id: cell(schedule.id),
    rhythm: cell(rhythmText(schedule)),
    timezone: schedule.timezone,
    localTime: lt ? `gap ${lt.gap}, overlap ${lt.overlap}: ${cell(lt.reason)}` : null,
    misfire: misfireText(schedule),
    overlapPolicy: schedule.overlapPolicy,
    enabled: schedule.enabled && (row?.enabled ?? true),
    disabledReason: !schedule.enabled
      ? "disabled in the file"
      : row && !row.enabled
      ? cell(row.disabledReason ?? "no reason given")
      : null,
    lastPlannedFor: iso(row?.lastPlannedFor),
    lastStartedAt: iso(row?.lastStartedAt),
    lastCompletedAt: iso(row?.lastCompletedAt),
    misfires: row?.misfires ?? 0,
    next: following ? iso(following.at) : null,
  };
}
