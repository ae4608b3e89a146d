/**
 * The commands on schedules: `jobs next <schedule-id>` (its next
 * occurrences, from the schedules file alone) and `jobs schedules` (each
 * schedule of the file joined with its stored state, reading the store,
 * never creating or migrating it, when there is one at the current schema);
 * and, each audited, `jobs run <schedule-id>` (one occurrence now, as the
 * planner builds it) and `jobs disable | enable <schedule-id>` (stored, so
 * it survives restarts and reloads). The actions are thin calls into
 * `src/admin/schedules.ts`.
 *
 * A manual schedule guarded by `runs_where` runs only where the environment
 * matches, and `jobs run` says which environments the live daemons serving
 * its queue run in, warning when none is the one it needs: a daemon of
 * another environment that claims the job discards it.
 *
 * @module
 */

import type { Command } from "commander";
import { next } from "../schedule/occurrences.ts";
import { misfireText, rhythmText } from "../schedule/describe.ts";
import type { Schedule } from "../schedule/types.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { nodesView, type NodeView } from "../admin/nodes.ts";
import {
  GuardRefused,
  runScheduleNow,
  setScheduleEnabled,
  storedConfig,
} from "../admin/schedules.ts";
import type { ScheduleRow, Store } from "../store/store.ts";
import { describeLocation } from "../store/open.ts";
import { didYouMean } from "../text/suggest.ts";
import { definitionHash } from "../runtime/planner.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  parseCount,
  parseInstant,
  quiet,
  who,
} from "./common.ts";
import { configIfAny, configOrFail, loadConfig, notInForce, requireConfig } from "./config.ts";
import { tryOpenStore, withStore } from "./store/open.ts";
import { cell, echo, isoIn } from "./text.ts";

const FILE_ONLY = "it reads the schedules file alone, not the store";

const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `next` and `schedules` on the program. */
export function registerScheduleViewCommands(program: Command, deps: CliDeps): void {
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

/** A schedule's status as `--json` prints it (shared with `GET /api/v1/schedules`). */
export { scheduleJson } from "../admin/schedules.ts";

/** Registers `run`, `disable` and `enable` on the program. */
export function registerScheduleActionCommands(program: Command, deps: CliDeps): void {
  runCommand(program, deps);
  for (const enabled of [false, true]) toggleCommand(program, deps, enabled);
}

// ---------------------------------------------------------------------- run

interface RunOptions {
  environment?: string;
  reason?: string;
  actor?: string;
  config?: string;
  db?: string;
  json?: boolean;
}

function runCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("run")
        .description(
          "run a schedule now: one manual occurrence, as the planner builds it (audited)",
        )
        .argument("<schedule-id>", "the schedule")
        .option(
          "--environment <name>",
          "where this runs; a manual schedule's runs_where must match [env JOBS_ENVIRONMENT]",
        ),
      {
        db: { mode: "write" },
        config: { for: "which declares the schedule" },
        json: true,
        // Required for a manual schedule, checked once the schedule is known.
        audit: { reason: "optional" },
      },
    ).action(async (id: string, options: RunOptions) => {
      await runNow(id, options, deps);
    }),
    deps,
    "run",
  );
}

async function runNow(id: string, options: RunOptions, deps: CliDeps): Promise<void> {
  const file = configPath(options.config, deps);
  const { config } = await requireConfig("run", file, deps);
  const schedule = config.schedules.find((s) => s.id === id);
  if (!schedule) {
    const ids = config.schedules.map((s) => s.id);
    throw new CommandFailed(
      `jobs run: no schedule "${echo(id)}" in ${echo(file)}${echo(didYouMean(id, ids))}`,
    );
  }
  const manual = schedule.rhythm.kind === "manual";
  // Notes go to stderr under --json, so that stdout stays one JSON value.
  const note = options.json ? deps.err : deps.out;
  if (manual) {
    note(`guard: ${cell(schedule.guard ?? "(none)")}`);
    if (!options.reason) {
      throw new CommandFailed(
        `jobs run: schedule "${echo(id)}" is manual: --reason is required`,
        2,
      );
    }
  }
  const environment = options.environment ?? deps.env("JOBS_ENVIRONMENT") ?? null;
  const db = dbPath(options.db, deps);
  await withStore("run", db, "write", deps, async (store) => {
    const serving = manual && schedule.runsWhere !== undefined
      ? await servingNodes(store, schedule, deps.clock.now())
      : null;
    if (serving !== null) {
      for (const line of environmentLines(schedule, serving)) note(line);
    }
    const result = await runScheduleNow(store, schedule, who(options, deps), environment)
      .catch((error) => {
        const refused = error instanceof GuardRefused ? "refused: " : "";
        throw new CommandFailed(`jobs run: ${refused}${echo(error.message, 400)}`);
      });
    if (options.json) {
      deps.out(JSON.stringify({
        schedule: id,
        ...result,
        manual: true,
        ...(serving === null ? {} : {
          runsWhere: schedule.runsWhere,
          daemons: serving.map((n) => ({ node: n.node, environment: n.environment })),
        }),
      }));
    } else {
      const where = cell(describeLocation(db));
      deps.out(
        `ran ${cell(id)} now: job ${result.id}, occurrence ${cell(result.occurrence)}, ` +
          `${result.state} on queue ${cell(result.queue)}; a daemon on ${where} runs it`,
      );
      if (!schedule.enabled) {
        deps.out(`note: ${cell(id)} is disabled in the file; this run goes ahead`);
      }
    }
  });
}

/** The live (not stale) nodes that claim from the schedule's queue. */
async function servingNodes(store: Store, schedule: Schedule, now: number): Promise<NodeView[]> {
  return (await nodesView(store, now))
    .filter((n) => !n.stale && n.queues[schedule.queue] !== undefined);
}

/** Which environments serve the schedule's queue, and a warning when none is its `runs_where`. */
function environmentLines(schedule: Schedule, serving: NodeView[]): string[] {
  const wanted = schedule.runsWhere!;
  const queue = `"${cell(schedule.queue)}"`;
  const lines = [
    serving.length === 0
      ? `daemons serving queue ${queue}: none live`
      : `daemons serving queue ${queue}: ${
        serving.map((n) =>
          `${cell(n.node)} (${
            n.environment === null ? "no environment" : `environment "${cell(n.environment)}"`
          })`
        ).join(", ")
      }`,
  ];
  if (!serving.some((n) => n.environment === wanted)) {
    lines.push(
      `warning: no live daemon serving queue ${queue} runs with --environment ` +
        `"${cell(wanted)}": the job waits for one` +
        (serving.length > 0
          ? `, and a daemon of another environment that claims it discards it`
          : ""),
    );
  }
  return lines;
}

// ----------------------------------------------------------- disable, enable

interface ToggleOptions {
  db?: string;
  config?: string;
  reason?: string;
  actor?: string;
  json?: boolean;
}

function toggleCommand(program: Command, deps: CliDeps, enabled: boolean): void {
  const name = enabled ? "enable" : "disable";
  quiet(
    globalOptions(
      program.command(name)
        .description(`${name} a schedule; stored, it survives restarts and reloads (audited)`)
        .argument("<schedule-id>", "the schedule"),
      {
        db: { mode: "write" },
        config: { for: "which declares the schedule (read when it exists)" },
        json: true,
        audit: { reason: "required" },
      },
    ).action(async (id: string, options: ToggleOptions) => {
      await toggle(name, id, enabled, options, deps);
    }),
    deps,
    name,
  );
}

async function toggle(
  name: string,
  id: string,
  enabled: boolean,
  options: ToggleOptions,
  deps: CliDeps,
): Promise<void> {
  const loaded = await configIfAny(name, options.config, deps, { lenient: true });
  const schedule = loaded.config?.schedules.find((s) => s.id === id);
  await withStore(name, dbPath(options.db, deps), "write", deps, async (store) => {
    const r = await setScheduleEnabled(
      store,
      id,
      enabled,
      who(options, deps),
      schedule ? { hash: definitionHash(schedule), tenant: schedule.tenant ?? null } : null,
    ).catch(async (error) => {
      const known = [
        ...(loaded.config?.schedules ?? []).map((s) => s.id),
        ...(await store.schedulesList({})).map((s) => s.id),
      ];
      throw new CommandFailed(
        `jobs ${name}: ${echo(error.message, 400)}${echo(didYouMean(id, known))}`,
      );
    });
    if (options.json) {
      deps.out(JSON.stringify({ schedule: r.id, enabled: r.enabled, was: r.was }));
      return;
    }
    const text = cell(r.id);
    deps.out(
      r.was === r.enabled
        ? `schedule ${text} was already ${r.enabled ? "enabled" : "disabled"}; recorded`
        : r.enabled
        ? `schedule ${text} enabled: the planner resumes it, applying its misfire policy to the gap`
        : `schedule ${text} disabled: nothing new is planned; an occurrence already claimed finishes`,
    );
  });
}
