/**
 * The commands on jobs, each audited: `jobs replay` (a new attempt of the
 * same occurrence, whatever its state) and `jobs retry | cancel | discard`
 * (one job, a few, or a filtered bulk with a preview and a confirmation).
 * Each is a thin call into `src/admin/jobs.ts` and says what it changed.
 *
 * @module
 */

import type { Command } from "commander";
import {
  applyJobAction,
  AS_PLANNED,
  type DefinitionSource,
  type JobAction,
  planJobAction,
  replayJob,
  type Skipped,
} from "../../admin/jobs.ts";
import { type DefinitionChoice, definitionText } from "../../admin/definitions.ts";
import { JobNotFound, zonesOf } from "../../admin/jobs.ts";
import { escapeControl } from "../../text/escape.ts";
import type { Job } from "../../kernel/types.ts";
import { describeLocation } from "../../store/open.ts";
import type { JobFilter } from "../../store/store.ts";
import {
  type CliDeps,
  CommandFailed,
  configNamed,
  configPath,
  dbPath,
  filterOptions,
  globalOptions,
  HINT_CUT,
  jobFilter,
  type JobFilterOptions,
  parseCount,
  parseJobId,
  plural,
  quiet,
  REF_CUT,
  who,
} from "../common.ts";
import { loadConfig } from "../config.ts";
import { withStore } from "../store/open.ts";
import { cell, commandLine, echo } from "../text.ts";

/** Jobs a bulk command looks at when `--limit` is not given. */
export const DEFAULT_BULK_LIMIT = 1000;

const PAST: Record<JobAction, string> = {
  retry: "retried",
  cancel: "cancelled",
  discard: "discarded",
};

const NO_CONFIG = "it acts on jobs in the store; the file plays no part";

const LIVE_CONFIG = {
  for: "whose live definitions a schedule's jobs run (default ./schedules.yaml when present)",
};

const AS_PLANNED_HELP =
  "run a schedule's job with the definition it was planned with, not the file's";

/**
 * Where a retry or replay takes a schedule's definition: the live file
 * (`--config`, `JOBS_CONFIG`, else `./schedules.yaml` when it is there), or
 * the job's own with `--as-planned`. A file with errors fails the command:
 * the operator is fixing it, and running the old definition silently would
 * be the surprise this exists to prevent.
 */
async function definitionSource(
  command: string,
  options: { config?: string; asPlanned?: boolean },
  deps: CliDeps,
): Promise<DefinitionSource> {
  const file = configPath(options.config, deps);
  const loaded = await loadConfig(file, { optional: !configNamed(options.config, deps) });
  if (options.asPlanned) {
    // The file's definitions play no part, but its zones still read an
    // occurrence typed as a local time; a file with errors just lends none.
    return { ...AS_PLANNED, zoneOf: zonesOf(loaded.config?.schedules) };
  }
  if (loaded.errors.length > 0) {
    for (const error of loaded.errors) deps.err(escapeControl(error.message));
    throw new CommandFailed(
      `jobs ${command}: ${echo(file)} has ${plural(loaded.errors.length, "error")}, so the ` +
        `live definitions cannot be read; nothing changed. Fix it, or add --as-planned to run ` +
        `the definitions the jobs were planned with`,
    );
  }
  return { live: { file, schedules: loaded.config?.schedules ?? null }, asPlanned: false };
}

/** Which definition a job runs, as `--json` prints it. */
function definitionJson(choice: DefinitionChoice | undefined): DefinitionChoice | null {
  return choice ?? null;
}

/** The line under a job that says which definition it runs; stored text escaped. */
function definitionLine(choice: DefinitionChoice | undefined, indent: string): string[] {
  return choice === undefined ? [] : [`${indent}${cell(definitionText(choice))}`];
}

/** Registers `replay`, `retry`, `cancel` and `discard` on the program. */
export function registerJobActionCommands(program: Command, deps: CliDeps): void {
  replayCommand(program, deps);
  for (const action of ["retry", "cancel", "discard"] as const) {
    jobActionCommand(program, deps, action);
  }
}

/**
 * One job on one line: id, state (or `state` instead, such as `was
 * discarded`), queue, worker, occurrence; stored text escaped.
 */
function jobLine(job: Job, state: string = job.state): string {
  return [
    `#${job.id}`.padEnd(7),
    state.padEnd(10),
    cell(job.queue).padEnd(12),
    cell(job.worker).padEnd(16),
    cell(job.occurrence ?? "-"),
  ].join(" ");
}

function skippedLine(s: Skipped): string {
  return `skipped ${jobLine(s.job)}: ${s.why}`;
}

// ------------------------------------------------------------------- replay

function replayCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("replay")
        .description(
          "run a job or occurrence again: a new attempt of the same occurrence, whatever its " +
            "state (audited)",
        )
        .argument("<occurrence|job-id>", "an occurrence identity (nightly@2026-...) or a job id")
        .option("--force", "replay an executing job too, breaking its running attempt's lease")
        .option("--as-planned", AS_PLANNED_HELP),
      {
        db: { mode: "write" },
        config: LIVE_CONFIG,
        json: true,
        audit: { reason: "required" },
      },
    ).action(async (ref: string, options: {
      reason: string;
      force?: boolean;
      asPlanned?: boolean;
      actor?: string;
      db?: string;
      config?: string;
      json?: boolean;
    }) => {
      const source = await definitionSource("replay", options, deps);
      await withStore("replay", dbPath(options.db, deps), "write", deps, async (store) => {
        const actor = { ...who(options, deps), reason: options.reason };
        const result = await replayJob(store, ref, actor, !!options.force, source).catch(
          (error) => {
            if (error instanceof JobNotFound) {
              throw new CommandFailed(
                `jobs replay: no job or occurrence "${echo(error.ref, REF_CUT)}"` +
                  echo(error.hint, HINT_CUT),
              );
            }
            throw new CommandFailed(`jobs replay: ${echo(error.message, 400)}`);
          },
        );
        const { job } = result;
        const name = job.occurrence ? `job ${job.id} (${cell(job.occurrence)})` : `job ${job.id}`;
        if (!result.replayed) {
          const again = ["replay", ref, "--force", "--reason", options.reason];
          if (options.actor !== undefined) again.push("--actor", options.actor);
          if (options.db !== undefined) again.push("--db", describeLocation(options.db));
          if (options.config !== undefined) again.push("--config", options.config);
          if (options.asPlanned) again.push("--as-planned");
          throw new CommandFailed(
            `jobs replay: ${name} is executing on ${echo(job.attemptedBy ?? "?")}; ` +
              `nothing changed. To break its lease and replay it, run: ` +
              commandLine(deps.program, again),
          );
        }
        if (options.json) {
          deps.out(JSON.stringify({
            id: job.id,
            occurrence: job.occurrence,
            was: result.was,
            state: "available",
            forced: result.was === "executing",
            definition: definitionJson(result.definition),
          }));
          return;
        }
        const broke = result.was === "executing"
          ? `; the running attempt on ${cell(job.attemptedBy ?? "?")} lost its lease`
          : "";
        deps.out(
          `replayed ${name}: it was ${result.was}${broke}; now available, its next attempt ` +
            `recorded as a replay by ${cell(actor.actor)}`,
        );
        for (const line of definitionLine(result.definition, "  ")) deps.out(line);
      });
    }),
    deps,
    "replay",
  );
}

// ------------------------------------------------------ retry, cancel, discard

interface JobActionOptions extends JobFilterOptions {
  limit?: number;
  yes?: boolean;
  asPlanned?: boolean;
  config?: string;
  reason?: string;
  actor?: string;
  db?: string;
  json?: boolean;
}

function jobActionCommand(program: Command, deps: CliDeps, action: JobAction): void {
  const what = {
    retry: "run jobs again now (waiting or final ones; one more attempt if used up)",
    cancel: "cancel jobs that are not final; an executing one loses its lease",
    discard: "discard (dead-letter) jobs that are not final; an executing one loses its lease",
  }[action];
  const command = globalOptions(
    filterOptions(
      program.command(action)
        .description(`${what} (audited)`)
        .argument("[ids...]", "job ids; without them, the filters choose (with a preview)"),
      "filter:",
    )
      .option(
        "--limit <n>",
        `look at the oldest n matching jobs (default ${DEFAULT_BULK_LIMIT})`,
        parseCount,
      )
      .option("--yes", "act without asking (bulk)"),
    {
      db: { mode: "write" },
      config: action === "retry" ? LIVE_CONFIG : { not: NO_CONFIG },
      json: true,
      audit: { reason: "optional" },
    },
  );
  if (action === "retry") command.option("--as-planned", AS_PLANNED_HELP);
  quiet(
    command.action(async (ids: string[], options: JobActionOptions) => {
      await runJobAction(action, ids.map(parseJobId), options, deps);
    }),
    deps,
    action,
  );
}

/** The filter of a bulk action, or null when no filter was given (only `limit` is set). */
function bulkFilter(options: JobActionOptions): JobFilter | null {
  const filter = jobFilter(options, options.limit ?? DEFAULT_BULK_LIMIT);
  return Object.keys(filter).length > 1 ? filter : null;
}

async function runJobAction(
  action: JobAction,
  ids: number[],
  options: JobActionOptions,
  deps: CliDeps,
): Promise<void> {
  const filter = bulkFilter(options);
  if (ids.length > 0 && filter) {
    throw new CommandFailed(`jobs ${action}: give job ids or filters, not both`, 2);
  }
  if (ids.length === 0 && !filter) {
    throw new CommandFailed(
      `jobs ${action}: give job ids, or at least one filter ` +
        `(--state, --queue, --schedule, --worker, --tag, --search)`,
      2,
    );
  }
  if (filter && options.json && !options.yes) {
    throw new CommandFailed(`jobs ${action}: --json with filters needs --yes`, 2);
  }
  const source: DefinitionSource = action === "retry"
    ? await definitionSource(action, options, deps)
    : AS_PLANNED;
  await withStore(action, dbPath(options.db, deps), "write", deps, async (store) => {
    const jobs = await store.jobsList(filter ?? { ids });
    const missing = ids.filter((id) => !jobs.some((job) => job.id === id));
    if (filter && !(await confirmBulk(action, jobs, filter, options, deps, source))) return;
    const { changed, skipped, definitions } = await applyJobAction(
      store,
      action,
      jobs,
      who(options, deps),
      source,
    );
    report(action, { changed, skipped, missing, definitions }, options, deps);
    if (missing.length > 0) {
      throw new CommandFailed(`jobs ${action}: no job ${missing.join(", ")}`);
    }
  });
}

/** Prints the preview of a bulk action and asks; true to go ahead. */
async function confirmBulk(
  action: JobAction,
  jobs: Job[],
  filter: JobFilter,
  options: JobActionOptions,
  deps: CliDeps,
  source: DefinitionSource,
): Promise<boolean> {
  const { act, skip, definitions } = planJobAction(action, jobs, source);
  const limited = jobs.length === filter.limit
    ? ` (the oldest ${filter.limit} matching; --limit to look at more)`
    : "";
  if (act.length === 0) {
    if (!options.json) {
      for (const s of skip) deps.out(skippedLine(s));
      deps.out(`nothing to ${action}: ${plural(jobs.length, "job")} matched${limited}`);
    }
    return options.json === true;
  }
  if (options.yes) return true;
  deps.out(`would ${action} ${plural(act.length, "job")}${limited}:`);
  for (const job of act) {
    deps.out(`  ${jobLine(job)}`);
    for (const line of definitionLine(definitions.get(job.id), "      ")) deps.out(line);
  }
  for (const s of skip) deps.out(`  ${skippedLine(s)}`);
  if (await deps.confirm(`${action} ${plural(act.length, "job")}?`)) return true;
  throw new CommandFailed(
    `jobs ${action}: not confirmed; nothing changed. To act without asking, run: ` +
      commandLine(deps.program, bulkWords(action, options)),
  );
}

/**
 * The bulk command as given, with `--yes`: the filters, limit, who and
 * why, and `--db` when it was given (the environment carries `JOBS_DB`).
 */
function bulkWords(action: JobAction, options: JobActionOptions): string[] {
  const words: string[] = [action];
  const add = (flag: string, value: string | undefined) => {
    if (value !== undefined) words.push(flag, value);
  };
  add("--state", options.state?.join(","));
  add("--queue", options.queue);
  add("--schedule", options.schedule);
  add("--worker", options.worker);
  add("--tag", options.tag);
  add("--search", options.search);
  add("--limit", options.limit === undefined ? undefined : String(options.limit));
  add("--reason", options.reason);
  add("--actor", options.actor);
  add("--db", options.db === undefined ? undefined : describeLocation(options.db));
  add("--config", options.config);
  if (options.asPlanned) words.push("--as-planned");
  words.push("--yes");
  return words;
}

function report(
  action: JobAction,
  result: {
    changed: Job[];
    skipped: Skipped[];
    missing: number[];
    definitions: Map<number, DefinitionChoice>;
  },
  options: JobActionOptions,
  deps: CliDeps,
): void {
  if (options.json) {
    deps.out(JSON.stringify({
      action,
      changed: result.changed.map((job) => ({
        id: job.id,
        was: job.state,
        ...(action === "retry"
          ? { definition: definitionJson(result.definitions.get(job.id)) }
          : {}),
      })),
      skipped: result.skipped.map((s) => ({ id: s.job.id, state: s.job.state, why: s.why })),
      missing: result.missing,
    }));
    return;
  }
  for (const job of result.changed) {
    deps.out(`${PAST[action]} ${jobLine(job, `(was ${job.state})`)}`);
    for (const line of definitionLine(result.definitions.get(job.id), "  ")) deps.out(line);
  }
  for (const s of result.skipped) deps.out(skippedLine(s));
  deps.out(
    `${PAST[action]} ${plural(result.changed.length, "job")}` +
      (result.skipped.length > 0 ? `, skipped ${result.skipped.length}` : ""),
  );
}
