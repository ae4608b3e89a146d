/**
 * The commands on one schedule, each audited: `jobs run <schedule-id>` (one
 * occurrence now, as the planner builds it) and `jobs disable | enable
 * <schedule-id>` (stored, so it survives restarts and reloads).
 *
 * A manual schedule guarded by `runs_where` runs only where the environment
 * matches, and `jobs run` says which environments the live daemons serving
 * its queue run in, warning when none is the one it needs: a daemon of
 * another environment that claims the job discards it.
 *
 * @module
 */

import type { Command } from "commander";
import { GuardRefused, runScheduleNow, setScheduleEnabled } from "../admin/actions.ts";
import { nodesView, type NodeView } from "../admin/views.ts";
import type { Schedule } from "../schedule/types.ts";
import type { Store } from "../store/store.ts";
import { didYouMean } from "../text/suggest.ts";
import { definitionHash } from "../runtime/planner.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  quiet,
  who,
} from "./common.ts";
import { configIfAny, requireConfig } from "./config.ts";
import { describeLocation } from "../store/open.ts";
import { withStore } from "./store/open.ts";
import { cell, echo } from "./text.ts";

/** Registers `run`, `disable` and `enable` on the program. */
export function registerScheduleCommands(program: Command, deps: CliDeps): void {
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
