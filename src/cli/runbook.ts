/**
 * The runbook's write commands: `jobs replay`, `jobs retry | cancel |
 * discard` (one job, a few, or a filtered bulk with a preview and a
 * confirmation), `jobs run` (a schedule now), `jobs enqueue`, `jobs prune`
 * and `jobs migrate`. Each is a thin call into `src/admin`; the audited ones
 * record who and why, and every one says what it changed.
 *
 * @module
 */

import { type Command, InvalidArgumentError } from "commander";
import {
  type Actor,
  applyJobAction,
  audit,
  enqueueJob,
  GuardRefused,
  type JobAction,
  planJobAction,
  pruneNow,
  replayJob,
  type Retention,
  runScheduleNow,
  type Skipped,
} from "../admin/actions.ts";
import { EnqueueError, type EnqueueOptions } from "../kernel/enqueue.ts";
import { type Job, JOB_STATES, type JobState } from "../kernel/types.ts";
import type { UniqueOptions } from "../kernel/unique.ts";
import { loadSchedules } from "../schedule/config.ts";
import { formatDuration, tryParseDuration } from "../schedule/durations.ts";
import type { ScheduleConfig } from "../schedule/types.ts";
import { KNOWN_VERSION, pendingMigrations } from "../store/sqlite/migrations.ts";
import {
  openSqliteStore,
  SchemaTooNewError,
  type SqliteStore,
} from "../store/sqlite/sqlite_store.ts";
import type { JobFilter } from "../store/store.ts";
import { DEFAULT_RETENTION } from "../worker/pruner.ts";
import { jobFilter, type JobFilterOptions } from "./inspect.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  parseCount,
  parseInstant,
  quiet,
  who,
} from "./program.ts";
import { escapeControl } from "../text/escape.ts";

/** Jobs a bulk command looks at when `--limit` is not given. */
const DEFAULT_BULK_LIMIT = 1000;

const PAST: Record<JobAction, string> = {
  retry: "retried",
  cancel: "cancelled",
  discard: "discarded",
};

/** Adds the runbook's write commands to `program`. */
export function registerRunbookCommands(program: Command, deps: CliDeps): void {
  replayCommand(program, deps);
  for (const action of ["retry", "cancel", "discard"] as const) {
    jobActionCommand(program, deps, action);
  }
  runCommand(program, deps);
  enqueueCommand(program, deps);
  pruneCommand(program, deps);
  migrateCommand(program, deps);
}

// ------------------------------------------------------------------ helpers

interface StoreOptions {
  db?: string;
}

/**
 * Opens the store of `--db` for command `name` and runs `fn` with it. Unless
 * `create`, a missing file is refused rather than created empty. A database
 * newer than this program is refused untouched.
 */
async function withStore<T>(
  name: string,
  options: StoreOptions,
  deps: CliDeps,
  create: boolean,
  fn: (store: SqliteStore, db: string) => Promise<T>,
): Promise<T> {
  const db = dbPath(options.db, deps);
  if (!create && !(await exists(db))) {
    throw new CommandFailed(`jobs ${name}: no database at "${escapeControl(db)}"`);
  }
  let store: SqliteStore;
  try {
    store = await openSqliteStore(db, { now: deps.clock.now() });
  } catch (error) {
    throw new CommandFailed(`jobs ${name}: ${escapeControl((error as Error).message)}`);
  }
  try {
    return await fn(store, db);
  } finally {
    await store.close();
  }
}

async function exists(path: string): Promise<boolean> {
  if (path === ":memory:") return true;
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
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
    escapeControl(job.queue).padEnd(12),
    escapeControl(job.worker).padEnd(16),
    escapeControl(job.occurrence ?? "-"),
  ].join(" ");
}

function skippedLine(s: Skipped): string {
  return `skipped ${jobLine(s.job)}: ${s.why}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** A commander parser for a whole number from `min` to `max`, naming the option's value. */
function wholeNumber(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\s*-?\d+\s*$/.test(value) || n < min || n > max) {
      throw new InvalidArgumentError(`"${value}" is not a whole number from ${min} to ${max}`);
    }
    return n;
  };
}

/** A commander parser for a duration such as `7d` or `1h30m`. */
function duration(value: string): number {
  const parsed = tryParseDuration(value);
  if (!parsed.ok) throw new InvalidArgumentError(`"${value}" ${parsed.reason}`);
  return parsed.ms;
}

/** A commander parser for a JSON value. */
function json(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new InvalidArgumentError(`"${value}" is not JSON: ${(error as Error).message}`);
  }
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function jobId(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new CommandFailed(`job id "${escapeControl(value)}" is not a whole number >= 1`, 2);
  }
  return n;
}

function states(value: string): JobState[] {
  const list = value.split(",").map((s) => s.trim());
  for (const state of list) {
    if (!(JOB_STATES as readonly string[]).includes(state)) {
      throw new InvalidArgumentError(
        `"${state}" is not a job state (${JOB_STATES.join(", ")})`,
      );
    }
  }
  return list as JobState[];
}

/** Loads the schedules file or fails with its errors, one per line on stderr. */
async function loadConfig(
  name: string,
  path: string,
  deps: CliDeps,
): Promise<ScheduleConfig> {
  const loaded = await loadSchedules(path);
  if (loaded.ok) return loaded.config;
  for (const error of loaded.errors) deps.err(escapeControl(error.message));
  throw new CommandFailed(
    `jobs ${name}: ${escapeControl(path)}: ${plural(loaded.errors.length, "error")}`,
  );
}

// ------------------------------------------------------------------- replay

function replayCommand(program: Command, deps: CliDeps): void {
  quiet(
    program.command("replay")
      .description(
        "run a job or occurrence again: a new attempt of the same occurrence, whatever its " +
          "state (audited)",
      )
      .argument("<occurrence|job-id>", "an occurrence identity (nightly@2026-...) or a job id")
      .requiredOption("--reason <text>", "why, for the attempt and the audit trail")
      .option("--force", "replay an executing job too, breaking its running attempt's lease")
      .option("--actor <name>", "who, for the audit trail (default: the OS user)")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the result as JSON")
      .action(async (ref: string, options: {
        reason: string;
        force?: boolean;
        actor?: string;
        db?: string;
        json?: boolean;
      }) => {
        await withStore("replay", options, deps, false, async (store) => {
          const actor = { ...who(options, deps), reason: options.reason };
          const result = await replayJob(store, ref, actor, !!options.force).catch((error) => {
            throw new CommandFailed(`jobs replay: ${escapeControl(error.message)}`);
          });
          const { job } = result;
          const name = job.occurrence
            ? `job ${job.id} (${escapeControl(job.occurrence)})`
            : `job ${job.id}`;
          if (!result.replayed) {
            throw new CommandFailed(
              `jobs replay: ${name} is executing on ${escapeControl(job.attemptedBy ?? "?")}; ` +
                `nothing changed (--force breaks its lease and replays it)`,
            );
          }
          if (options.json) {
            deps.out(JSON.stringify({
              id: job.id,
              occurrence: job.occurrence,
              was: result.was,
              state: "available",
              forced: result.was === "executing",
            }));
            return;
          }
          const broke = result.was === "executing"
            ? `; the running attempt on ${escapeControl(job.attemptedBy ?? "?")} lost its lease`
            : "";
          deps.out(
            `replayed ${name}: it was ${result.was}${broke}; now available, its next attempt ` +
              `recorded as a replay by ${escapeControl(actor.actor)}`,
          );
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
  quiet(
    program.command(action)
      .description(`${what} (audited)`)
      .argument("[ids...]", "job ids; without them, the filters choose (with a preview)")
      .option("--state <states>", "filter: state or comma-separated states", states)
      .option("--queue <name>", "filter: queue")
      .option("--schedule <id>", "filter: occurrences of this schedule")
      .option("--worker <name>", "filter: worker")
      .option("--tag <tag>", "filter: tag")
      .option("--search <text>", "filter: text in worker, args, tags, occurrence or errors")
      .option(
        "--limit <n>",
        `look at the oldest n matching jobs (default ${DEFAULT_BULK_LIMIT})`,
        parseCount,
      )
      .option("--yes", "act without asking (bulk)")
      .option("--reason <text>", "why, for the audit trail")
      .option("--actor <name>", "who, for the audit trail (default: the OS user)")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the result as JSON (bulk needs --yes)")
      .action(async (ids: string[], options: JobActionOptions) => {
        await runJobAction(action, ids.map(jobId), options, deps);
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
  await withStore(action, options, deps, false, async (store) => {
    const jobs = await store.jobsList(filter ?? { ids });
    const missing = ids.filter((id) => !jobs.some((job) => job.id === id));
    if (filter && !(await confirmBulk(action, jobs, filter, options, deps))) return;
    const { changed, skipped } = await applyJobAction(store, action, jobs, who(options, deps));
    report(action, { changed, skipped, missing }, options, deps);
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
): Promise<boolean> {
  const { act, skip } = planJobAction(action, jobs);
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
  for (const job of act) deps.out(`  ${jobLine(job)}`);
  for (const s of skip) deps.out(`  ${skippedLine(s)}`);
  if (await deps.confirm(`${action} ${plural(act.length, "job")}?`)) return true;
  throw new CommandFailed(
    `jobs ${action}: not confirmed; nothing changed (--yes acts without asking)`,
  );
}

function report(
  action: JobAction,
  result: { changed: Job[]; skipped: Skipped[]; missing: number[] },
  options: JobActionOptions,
  deps: CliDeps,
): void {
  if (options.json) {
    deps.out(JSON.stringify({
      action,
      changed: result.changed.map((job) => ({ id: job.id, was: job.state })),
      skipped: result.skipped.map((s) => ({ id: s.job.id, state: s.job.state, why: s.why })),
      missing: result.missing,
    }));
    return;
  }
  for (const job of result.changed) {
    deps.out(`${PAST[action]} ${jobLine(job, `(was ${job.state})`)}`);
  }
  for (const s of result.skipped) deps.out(skippedLine(s));
  deps.out(
    `${PAST[action]} ${plural(result.changed.length, "job")}` +
      (result.skipped.length > 0 ? `, skipped ${result.skipped.length}` : ""),
  );
}

// ---------------------------------------------------------------------- run

function runCommand(program: Command, deps: CliDeps): void {
  quiet(
    program.command("run")
      .description("run a schedule now: one manual occurrence, as the planner builds it (audited)")
      .argument("<schedule-id>", "the schedule")
      .option(
        "--environment <name>",
        "where this runs; a manual schedule's runs_where must match [env JOBS_ENVIRONMENT]",
      )
      .option("--reason <text>", "why, for the audit trail (required for a manual schedule)")
      .option("--actor <name>", "who, for the audit trail (default: the OS user)")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the result as JSON")
      .action(async (id: string, options: {
        environment?: string;
        reason?: string;
        actor?: string;
        config?: string;
        db?: string;
        json?: boolean;
      }) => {
        const config = await loadConfig("run", configPath(options.config, deps), deps);
        const schedule = config.schedules.find((s) => s.id === id);
        if (!schedule) {
          throw new CommandFailed(
            `jobs run: no schedule "${escapeControl(id)}" in ${
              escapeControl(configPath(options.config, deps))
            }`,
          );
        }
        const manual = schedule.rhythm.kind === "manual";
        if (manual) {
          // On stderr under --json, so that stdout stays one JSON value.
          (options.json ? deps.err : deps.out)(
            `guard: ${escapeControl(schedule.guard ?? "(none)")}`,
          );
          if (!options.reason) {
            throw new CommandFailed(
              `jobs run: schedule "${escapeControl(id)}" is manual: --reason is required`,
              2,
            );
          }
        }
        const environment = options.environment ?? deps.env("JOBS_ENVIRONMENT") ?? null;
        await withStore("run", options, deps, true, async (store, db) => {
          const result = await runScheduleNow(store, schedule, who(options, deps), environment)
            .catch((error) => {
              const refused = error instanceof GuardRefused ? "refused: " : "";
              throw new CommandFailed(`jobs run: ${refused}${escapeControl(error.message)}`);
            });
          if (options.json) {
            deps.out(JSON.stringify({ schedule: id, ...result, manual: true }));
            return;
          }
          deps.out(
            `ran ${escapeControl(id)} now: job ${result.id}, occurrence ` +
              `${escapeControl(result.occurrence)}, ${result.state} on queue ` +
              `${escapeControl(result.queue)}; a daemon on ${escapeControl(db)} runs it`,
          );
          if (!schedule.enabled) {
            deps.out(`note: ${escapeControl(id)} is disabled in the file; this run goes ahead`);
          }
        });
      }),
    deps,
    "run",
  );
}

// ------------------------------------------------------------------ enqueue

interface EnqueueCliOptions {
  args: unknown;
  meta?: unknown;
  queue?: string;
  priority?: number;
  in?: number;
  at?: number;
  maxAttempts?: number;
  tag?: string[];
  tenant?: string;
  unique?: boolean;
  uniqueBy?: string;
  uniquePeriod?: number;
  uniqueStates?: string;
  reason?: string;
  actor?: string;
  db?: string;
  json?: boolean;
}

function enqueueCommand(program: Command, deps: CliDeps): void {
  quiet(
    program.command("enqueue")
      .description("enqueue one job of a worker; a daemon that defines the worker runs it")
      .argument("<worker>", "the worker's name")
      .option("--args <json>", "the job's args as JSON", json, {})
      .option("--queue <name>", "the queue (default: default)")
      .option("--priority <n>", "0 (first) to 9 (last)", wholeNumber(0, 9))
      .option(
        "--in <duration>",
        "run no earlier than this long from now (90s, 15m, 1h30m)",
        duration,
      )
      .option(
        "--at <instant>",
        "run no earlier than this ISO instant, with its offset",
        parseInstant,
      )
      .option(
        "--max-attempts <n>",
        "attempts before it is discarded (default 20)",
        wholeNumber(1, 1_000_000),
      )
      .option("--tag <tag>", "a tag (repeatable)", collect)
      .option("--meta <json>", "data kept with the job, as a JSON object", json)
      .option("--tenant <name>", "the tenant the job belongs to")
      .option("--unique", "refuse a duplicate (same worker and args) while the first is not final")
      .option(
        "--unique-by <what>",
        "what makes a duplicate: args, worker, or keys:a,b (implies --unique)",
      )
      .option(
        "--unique-period <duration>",
        "duplicates only within this period (implies --unique)",
        duration,
      )
      .option("--unique-states <which>", "incomplete or all (implies --unique)")
      .option("--reason <text>", "why, for the audit trail")
      .option("--actor <name>", "who, for the audit trail (default: the OS user)")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the result as JSON")
      .action(async (worker: string, options: EnqueueCliOptions) => {
        const enqueue = enqueueOptions(options);
        await withStore("enqueue", options, deps, true, async (store) => {
          const result = await enqueueJob(store, worker, options.args, enqueue, who(options, deps))
            .catch((error) => {
              if (error instanceof EnqueueError) {
                throw new CommandFailed(`jobs enqueue: ${escapeControl(error.message)}`, 2);
              }
              throw error;
            });
          if (options.json) {
            deps.out(JSON.stringify(result));
          } else if (result.duplicate) {
            deps.out(
              `duplicate of ${result.id}: job ${result.id} (${result.state} on ` +
                `${escapeControl(result.queue)}) holds the same unique key; nothing enqueued`,
            );
          } else {
            deps.out(
              `enqueued job ${result.id}: ${escapeControl(worker)} on queue ` +
                `${escapeControl(result.queue)}, ${result.state}`,
            );
          }
        });
      }),
    deps,
    "enqueue",
  );
}

/** The CLI's options as the kernel's enqueue options; bad unique settings exit 2. */
function enqueueOptions(options: EnqueueCliOptions): EnqueueOptions {
  if (options.meta !== undefined && !isObject(options.meta)) {
    throw new CommandFailed(`jobs enqueue: --meta must be a JSON object`, 2);
  }
  const wantsUnique = options.unique || options.uniqueBy !== undefined ||
    options.uniquePeriod !== undefined || options.uniqueStates !== undefined;
  return {
    queue: options.queue,
    priority: options.priority,
    in: options.in,
    at: options.at,
    maxAttempts: options.maxAttempts,
    tags: options.tag,
    meta: options.meta as Record<string, unknown> | undefined,
    tenant: options.tenant,
    unique: wantsUnique ? uniqueOptions(options) : undefined,
  };
}

function uniqueOptions(options: EnqueueCliOptions): UniqueOptions {
  const by = options.uniqueBy;
  let parsedBy: UniqueOptions["by"];
  if (by === undefined || by === "args" || by === "worker") parsedBy = by;
  else if (by.startsWith("keys:") && by.length > 5) {
    parsedBy = { keys: by.slice(5).split(",").map((k) => k.trim()) };
  } else {
    throw new CommandFailed(
      `jobs enqueue: --unique-by "${escapeControl(by)}" must be args, worker or keys:a,b`,
      2,
    );
  }
  const statesGiven = options.uniqueStates;
  if (statesGiven !== undefined && statesGiven !== "incomplete" && statesGiven !== "all") {
    throw new CommandFailed(
      `jobs enqueue: --unique-states "${escapeControl(statesGiven)}" must be incomplete or all`,
      2,
    );
  }
  return { by: parsedBy, period: options.uniquePeriod, states: statesGiven };
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// -------------------------------------------------------------------- prune

function pruneCommand(program: Command, deps: CliDeps): void {
  quiet(
    program.command("prune")
      .description("delete old final jobs and their attempts now, as the daemon's pruner does")
      .option(
        "--completed <duration>",
        `keep completed jobs this long (default ${formatDuration(DEFAULT_RETENTION.completed)})`,
        duration,
      )
      .option(
        "--cancelled <duration>",
        `keep cancelled jobs this long (default ${formatDuration(DEFAULT_RETENTION.cancelled)})`,
        duration,
      )
      .option(
        "--discarded <duration>",
        `keep discarded jobs this long (default ${formatDuration(DEFAULT_RETENTION.discarded)})`,
        duration,
      )
      .option("--dry-run", "count what would be deleted; delete nothing")
      .option("--reason <text>", "why, for the audit trail")
      .option("--actor <name>", "who, for the audit trail (default: the OS user)")
      .option("--config <file>", "schedules with a retention of their own [env JOBS_CONFIG]")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the result as JSON")
      .action(async (options: {
        completed?: number;
        cancelled?: number;
        discarded?: number;
        dryRun?: boolean;
        reason?: string;
        actor?: string;
        config?: string;
        db?: string;
        json?: boolean;
      }) => {
        const retention: Retention = {};
        if (options.completed !== undefined) retention.completed = options.completed;
        if (options.cancelled !== undefined) retention.cancelled = options.cancelled;
        if (options.discarded !== undefined) retention.discarded = options.discarded;
        const schedules = await ownRetention(options.config, deps);
        await withStore("prune", options, deps, false, async (store) => {
          const result = await pruneNow(store, who(options, deps), {
            retention,
            schedules,
            dryRun: !!options.dryRun,
          });
          const kept = { ...DEFAULT_RETENTION, ...retention };
          if (options.json) {
            deps.out(JSON.stringify({ ...result, retentionMs: kept, schedules }));
            return;
          }
          const rules =
            `completed older than ${formatDuration(kept.completed)}, cancelled older than ` +
            `${formatDuration(kept.cancelled)}, discarded older than ${
              formatDuration(kept.discarded)
            }`;
          const own = schedules.length > 0
            ? `; ${plural(schedules.length, "schedule")} kept to their own retention`
            : "";
          deps.out(
            `${result.dryRun ? "would delete" : "deleted"} ${plural(result.deleted, "job")} ` +
              `(${rules}${own})`,
          );
        });
      }),
    deps,
    "prune",
  );
}

/**
 * The schedules with a retention of their own, from the schedules file: the
 * file named by `--config` must load; the default one is used when present.
 */
async function ownRetention(
  option: string | undefined,
  deps: CliDeps,
): Promise<{ id: string; retentionMs: number }[]> {
  const path = configPath(option, deps);
  const explicit = option !== undefined || deps.env("JOBS_CONFIG") !== undefined;
  if (!explicit && !(await exists(path))) return [];
  const config = await loadConfig("prune", path, deps);
  return config.schedules
    .filter((s) => s.retentionMs !== undefined)
    .map((s) => ({ id: s.id, retentionMs: s.retentionMs! }));
}

// ------------------------------------------------------------------ migrate

function migrateCommand(program: Command, deps: CliDeps): void {
  quiet(
    program.command("migrate")
      .description("apply pending schema migrations to the database")
      .option("--dry-run", "list the pending migrations; write nothing")
      .option("--reason <text>", "why, for the audit trail")
      .option("--actor <name>", "who, for the audit trail (default: the OS user)")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the result as JSON")
      .action(async (options: MigrateCliOptions) => {
        const db = dbPath(options.db, deps);
        const result = options.dryRun
          ? await pendingFor(db)
          : await migrate(db, who(options, deps));
        if (options.json) {
          deps.out(JSON.stringify({ db, dryRun: !!options.dryRun, ...result }));
          return;
        }
        const names = result.migrations.map((m) => `${m.version} (${m.name})`).join(", ");
        const at = `version ${result.version}`;
        deps.out(
          options.dryRun
            ? result.migrations.length === 0
              ? `${escapeControl(db)} is at ${at}, the latest; nothing pending`
              : `${escapeControl(db)} is at ${at}${result.exists ? "" : " (no file yet)"}; ` +
                `pending: ${names}; nothing written`
            : result.migrations.length === 0
            ? `${escapeControl(db)} is at ${at}, the latest; nothing to apply`
            : `applied ${names}; ${escapeControl(db)} is now at ${at}`,
        );
      }),
    deps,
    "migrate",
  );
}

interface MigrateCliOptions {
  dryRun?: boolean;
  reason?: string;
  actor?: string;
  db?: string;
  json?: boolean;
}

interface MigrateResult {
  exists: boolean;
  /** Before a dry run, after a migration. */
  version: number;
  /** Pending (dry run) or applied. */
  migrations: { version: number; name: string }[];
}

/** The pending migrations of `db`, read through a read-only connection. */
async function pendingFor(db: string): Promise<MigrateResult> {
  const list = (version: number) =>
    pendingMigrations(version).map((m) => ({ version: m.version, name: m.name }));
  if (!(await exists(db))) return { exists: false, version: 0, migrations: list(0) };
  let store: SqliteStore;
  try {
    store = await openSqliteStore(db, { migrate: false, readOnly: true });
  } catch (error) {
    throw new CommandFailed(`jobs migrate: ${escapeControl((error as Error).message)}`);
  }
  try {
    const version = await store.schemaVersion();
    if (version > KNOWN_VERSION) {
      throw new CommandFailed(
        `jobs migrate: ${escapeControl(new SchemaTooNewError(db, version, KNOWN_VERSION).message)}`,
      );
    }
    return { exists: true, version, migrations: list(version) };
  } finally {
    await store.close();
  }
}

/** Applies the pending migrations; audited (`store.migrate`) when any was applied. */
async function migrate(db: string, actor: Actor): Promise<MigrateResult> {
  const existed = await exists(db);
  let store: SqliteStore | undefined;
  try {
    store = await openSqliteStore(db, { migrate: false });
    const report = await store.migrate({ now: actor.now });
    if (report.applied.length > 0) {
      await audit(store, actor, "store.migrate", "store", {
        applied: report.applied,
        version: report.version,
      });
    }
    const names = new Map(pendingMigrations(0).map((m) => [m.version, m.name]));
    return {
      exists: existed,
      version: report.version,
      migrations: report.applied.map((version) => ({ version, name: names.get(version) ?? "" })),
    };
  } catch (error) {
    throw new CommandFailed(`jobs migrate: ${escapeControl((error as Error).message)}`);
  } finally {
    await store?.close();
  }
}
