/**
 * What every command of the command line shares: the dependencies main.ts
 * chooses ({@linkcode CliDeps}), the failure a command raises
 * ({@linkcode CommandFailed}), where the store and the schedules file are,
 * who acts, the parsers of option values, the job filter of `ls` and the
 * bulk actions, and the global options (`--db`, `--config`, `--json`,
 * `--actor`, `--reason`) declared the same way on every command.
 *
 * Commands import this module, never `program.ts`, which only assembles
 * them: so there is no import cycle in `src/cli`.
 *
 * @module
 */

import { type Command, InvalidArgumentError } from "commander";
import type { Actor } from "../admin/audit.ts";
import { placeholderMessage, placeholderReason } from "../admin/audit.ts";
import type { Clock } from "../clock.ts";
import { JOB_STATES, type JobState } from "../kernel/types.ts";
import { tryParseDuration } from "../text/durations.ts";
import type { JobFilter } from "../store/store.ts";
import { didYouMean } from "../text/suggest.ts";
import type { Logger } from "../kernel/logger.ts";
import { ProjectFileError, resolveConfig, resolveDb } from "./project_file.ts";
import { echo } from "./text.ts";

/** What the commands may touch, chosen by main.ts. */
export interface CliDeps {
  clock: Clock;
  logger: Logger;
  /** Writes one line of output (stdout). */
  out: (line: string) => void;
  /** Writes one line of diagnostics (stderr). */
  err: (line: string) => void;
  env: (name: string) => string | undefined;
  /** Colour and terminal niceties for stdout. */
  color: boolean;
  /**
   * The command a person types to reach this program (`jobsctl`, or the
   * full `deno run` line when it is not installed), printed in every line
   * meant to be pasted: runbook commands, hints, errors. `jobs` itself is a
   * shell builtin in bash, zsh, dash and fish, so it is never printed there.
   */
  program: string;
  /**
   * The one word each error and warning starts with (`jobsctl retry: ...`),
   * the same program the hints name: `jobsctl` when a launcher ran, else
   * `jobs`. Commands write `jobs <command>: ...`; `runCli` puts this name
   * in place of `jobs`.
   * @default "jobs"
   */
  name?: string;
  /**
   * The name of the operating-system user running the program, for the
   * audit trail when `--actor` is not given; main.ts looks it up by uid, so
   * it is right even where `$USER` and `$LOGNAME` are unset.
   */
  osUser: () => string;
  /** Runs the demo; injected so main.ts, not src/, picks the example. */
  demo: (options: { db: string }) => Promise<void>;
  /** Calls `listener` on each delivery of `signal`; returns the unsubscribe. */
  onSignal: (signal: "SIGHUP" | "SIGTERM" | "SIGINT", listener: () => void) => () => void;
  /** Ends the process at once. */
  exit: (code: number) => never;
  /**
   * Asks the person at the terminal a yes/no question (bulk changes);
   * false when nobody can answer (stdin is not a terminal).
   */
  confirm: (question: string) => Promise<boolean>;
  /**
   * Reads standard input to its end, as text (`jobs enqueue --args -`):
   * args too large for one argv argument, which Linux caps at 128 KiB.
   */
  readStdin: () => Promise<string>;
  /**
   * Asks the person at the terminal for a secret (a password), showing
   * `prompt` and not echoing what is typed; null when nobody can answer
   * (stdin is not a terminal), so the secret is read from stdin instead.
   * @default nobody at a terminal: always null
   */
  readSecret?: (prompt: string) => Promise<string | null>;
  /**
   * The current folder, where the project file (`.jobs.yaml`) is looked
   * for, then in each folder above it.
   * @default Deno.cwd()
   */
  cwd?: () => string;
}

/** Raised by a command that ran and failed: its message is printed, exit code 1 (2: usage). */
export class CommandFailed extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = "CommandFailed";
  }
}

// ---------------------------------------------------------------- locations

/**
 * `--db`, else `JOBS_DB`, else the project file's `db:` (`.jobs.yaml` here
 * or above), else `./jobs.db`; see `project_file.ts`, which remembers why,
 * for the errors about the store.
 */
export function dbPath(option: string | undefined, deps: CliDeps): string {
  return projectFileOrFail(() => resolveDb(option, deps)).value;
}

/** `--config`, else `JOBS_CONFIG`, else the project file's `config:`, else `./schedules.yaml`. */
export function configPath(option: string | undefined, deps: CliDeps): string {
  return projectFileOrFail(() => resolveConfig(option, deps)).value;
}

/**
 * Whether the schedules file was named (`--config`, `JOBS_CONFIG` or the
 * project file) rather than defaulted.
 */
export function configNamed(option: string | undefined, deps: CliDeps): boolean {
  return projectFileOrFail(() => resolveConfig(option, deps)).named;
}

/** `fn`'s result; a project file that cannot be used fails the command naming it. */
function projectFileOrFail<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ProjectFileError) throw new CommandFailed(`jobs: ${error.message}`);
    throw error;
  }
}

// ---------------------------------------------------------------------- who

/**
 * Who acts: `--actor`, else the OS user (looked up by uid in main.ts, so
 * never "unknown"); with `--reason` and the clock's now.
 */
export function who(options: { actor?: string; reason?: string }, deps: CliDeps): Actor {
  return {
    actor: options.actor ?? deps.osUser(),
    reason: options.reason ?? null,
    now: deps.clock.now(),
  };
}

// ------------------------------------------------------------------ parsers

/** An ISO instant with its offset (`Z` or `+01:00`): a bare local time would depend on the machine's zone. */
export function parseInstant(value: string): number {
  try {
    return Temporal.Instant.from(value).epochMilliseconds;
  } catch {
    throw new InvalidArgumentError(
      `"${echo(value)}" is not an ISO instant with an offset, such as 2026-03-08T00:00:00Z`,
    );
  }
}

/**
 * A `--reason` for the audit trail: refused when it is a placeholder
 * (`...`, `<why you are disabling it>` pasted from the runbook, `TODO`: see
 * `src/admin/audit.ts`), asking for the why.
 */
export function parseReason(value: string): string {
  const why = placeholderReason(value);
  if (why !== null) throw new InvalidArgumentError(echo(placeholderMessage(value, why), 300));
  return value;
}

/** A count from 1 to 10000 (`--count`, `--limit`). */
export function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) {
    throw new InvalidArgumentError(`"${echo(value)}" is not a whole number from 1 to 10000`);
  }
  return n;
}

/** A commander parser of an id (a run, a drop): a whole number >= 1, `what` naming it. */
export function positiveId(what: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
      throw new InvalidArgumentError(`"${echo(value)}" is not a ${what} (a whole number >= 1)`);
    }
    return n;
  };
}

/**
 * The entry `id` of a section of the schedules file (`pipeline`, `report`),
 * or the command fails (exit 2) naming the file, the nearest id and what the
 * section has.
 */
export function declaredIn<T extends { id: string }>(
  command: string,
  kind: string,
  entries: readonly T[],
  file: string,
  id: string,
): T {
  const found = entries.find((e) => e.id === id);
  if (found) return found;
  const ids = entries.map((e) => e.id);
  const known = ids.map((e) => `"${echo(e)}"`).join(", ");
  throw new CommandFailed(
    `jobs ${command}: no ${kind} "${echo(id)}" in ${echo(file)}${echo(didYouMean(id, ids))} ` +
      `(it has ${known || "none"})`,
    2,
  );
}

/** A commander parser for a whole number from `min` to `max`, naming the option's value. */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\s*-?\d+\s*$/.test(value) || n < min || n > max) {
      throw new InvalidArgumentError(
        `"${echo(value)}" is not a whole number from ${min} to ${max}`,
      );
    }
    return n;
  };
}

/** A commander parser for a duration such as `7d` or `1h30m`, in ms. */
export function parseDuration(value: string): number {
  const parsed = tryParseDuration(value);
  if (!parsed.ok) throw new InvalidArgumentError(`"${echo(value)}" ${parsed.reason}`);
  return parsed.ms;
}

/** A commander parser for a JSON value. */
export function parseJson(value: string): unknown {
  const parsed = tryParseJson(value);
  if (!parsed.ok) throw new InvalidArgumentError(`"${echo(value)}" ${parsed.reason}`);
  return parsed.value;
}

/**
 * `text` as JSON, or why it is not JSON (`is not JSON: Unexpected token ...`,
 * the parser's words escaped and cut: V8 quotes a piece of the input).
 */
export function tryParseJson(
  text: string,
): { ok: true; value: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, reason: `is not JSON: ${echo((error as Error).message, 120)}` };
  }
}

/** A commander collector for a repeatable option (`--tag a --tag b`). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** A job id given as an argument: a whole number >= 1; exit 2 naming it otherwise. */
export function parseJobId(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new CommandFailed(`job id "${echo(value)}" is not a whole number >= 1`, 2);
  }
  return n;
}

/** `--state executing,retryable` -> the states; throws naming the value otherwise. */
export function parseStates(value: string): JobState[] {
  const states = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const s of states) {
    if (!(JOB_STATES as readonly string[]).includes(s)) {
      throw new InvalidArgumentError(
        `"${echo(s)}" is not a state (${JOB_STATES.join(", ")})${didYouMean(s, JOB_STATES)}`,
      );
    }
  }
  if (states.length === 0) throw new InvalidArgumentError(`"${echo(value)}" names no state`);
  return states as JobState[];
}

// --------------------------------------------------------------- job filter

/** The job filters of `jobs ls` and of the bulk actions, as commander parses them. */
export interface JobFilterOptions {
  state?: JobState[];
  queue?: string;
  schedule?: string;
  worker?: string;
  tag?: string;
  search?: string;
}

/** The store's filter for the filters given (and only those), at most `limit` jobs. */
export function jobFilter(options: JobFilterOptions, limit: number): JobFilter {
  const filter: JobFilter = { limit };
  if (options.state) filter.state = options.state;
  if (options.queue !== undefined) filter.queue = options.queue;
  if (options.schedule !== undefined) filter.scheduleId = options.schedule;
  if (options.worker !== undefined) filter.worker = options.worker;
  if (options.tag !== undefined) filter.tag = options.tag;
  if (options.search !== undefined) filter.search = options.search;
  return filter;
}

/** The filter options of `ls` and the bulk actions, each described with `lead` ("only", "filter:"). */
export function filterOptions(command: Command, lead: string): Command {
  return command
    .option("--state <states>", `${lead} these states, comma-separated`, parseStates)
    .option("--queue <name>", `${lead} this queue`)
    .option("--schedule <id>", `${lead} occurrences of this schedule`)
    .option("--worker <name>", `${lead} this worker`)
    .option("--tag <tag>", `${lead} jobs with this tag`)
    .option(
      "--search <text>",
      `${lead} jobs with this text in worker, args, tags, occurrence or last error`,
    );
}

// ----------------------------------------------------------- global options

/** What a global option is on one command: taken, or why it is not. */
type Taken = true | { not: string };

/**
 * The global options of one command. Each is declared (`true`) or not, with
 * the reason, which the command's help prints under "Not taken here", so a
 * person who reaches for `--json` learns why it is missing.
 */
export interface GlobalOptions {
  /**
   * `--db <path>` [env JOBS_DB], with what the command does to the store;
   * or `--db <location>` with a meaning of the command's own (`only`, no
   * JOBS_DB); or not taken, with why.
   */
  db: { mode: "read" | "write" | "create" } | { only: string } | { not: string };
  /** `--config <file>` [env JOBS_CONFIG], with what the command reads it for. */
  config: { for: string } | { not: string };
  json: Taken;
  /**
   * `--actor` and `--reason`, for the audit trail of a write; or `--actor`
   * alone, with why there is no `--reason` (`noReason`); or neither, with
   * why (`not`; `reasonFilters` when the command's own `--reason` filters).
   */
  audit:
    | { reason: "optional" | "required" }
    | { noReason: string }
    | { not: string; reasonFilters?: true };
}

const DB_TEXT = {
  read: "the store, a SQLite file or postgres://...?schema=, read only: never created or " +
    "upgraded [env JOBS_DB]",
  write: "the store, a SQLite file or postgres://...?schema=; it must exist (a daemon or " +
    "migrate creates it) [env JOBS_DB]",
  create: "the store, a SQLite file or postgres://...?schema=, created and migrated when " +
    "missing [env JOBS_DB]",
};

/** Commands whose `--force` is {@linkcode globalOptions}' alias of `--force-moved`. */
const forceMeansMoved = new WeakSet<Command>();

/** Declares the global options of `command` as `spec` says (see {@linkcode GlobalOptions}). */
export function globalOptions(command: Command, spec: GlobalOptions): Command {
  const not: [string, string][] = [];
  if ("mode" in spec.db) command.option("--db <path>", DB_TEXT[spec.db.mode]);
  else if ("only" in spec.db) command.option("--db <location>", spec.db.only);
  else not.push(["--db", spec.db.not]);
  if ("mode" in spec.db && spec.db.mode !== "read") {
    command.option(
      "--force-moved",
      "write to a store migrate-store retired anyway (audited); migrate-store --reopen takes it back",
    );
    // `--force`, as the issue that asked for this names it, where a command
    // does not give `--force` a meaning of its own (enqueue and replay do).
    if (!command.options.some((option) => option.long === "--force")) {
      command.option("--force", "the same as --force-moved");
      forceMeansMoved.add(command);
    }
  }
  if ("for" in spec.config) {
    command.option("--config <file>", `the schedules file, ${spec.config.for} [env JOBS_CONFIG]`);
  } else not.push(["--config", spec.config.not]);
  if (spec.json === true) command.option("--json", "print the result as JSON");
  else not.push(["--json", spec.json.not]);
  if ("reason" in spec.audit) {
    command.option("--actor <name>", "who, for the audit trail (default: the OS user)");
    if (spec.audit.reason === "required") {
      command.requiredOption("--reason <text>", "why, for the audit trail (required)", parseReason);
    } else command.option("--reason <text>", "why, for the audit trail", parseReason);
  } else if ("noReason" in spec.audit) {
    command.option("--actor <name>", "who, for the audit trail (default: the OS user)");
    not.push(["--reason", spec.audit.noReason]);
  } else if (spec.audit.reasonFilters) {
    // The command's own `--reason` selects by a reason (drops); only `--actor` is not taken.
    not.push(["--actor", spec.audit.not]);
  } else not.push(["--actor, --reason", spec.audit.not]);
  if (not.length > 0) {
    const width = Math.max(...not.map(([flag]) => flag.length));
    command.addHelpText(
      "after",
      `\nNot taken here:\n${
        not.map(([flag, why]) => `  ${flag.padEnd(width)}  ${why}`).join("\n")
      }`,
    );
  }
  return command;
}

/**
 * `--force-moved` of the command running with these deps, with its
 * `--actor` and `--reason`, or null: set before each action (see
 * {@linkcode quiet}), so the deps of one run say what its command asked.
 */
const writeIntents = new WeakMap<object, { actor?: string; reason?: string } | null>();

/**
 * Leave to write to a store `jobs migrate-store` retired, when the running
 * command was given `--force-moved`: who (`--actor`, else the OS user) and
 * why, for the audit row opening the store writes. Null without the flag.
 */
export function writeMoved(
  deps: Pick<CliDeps, "osUser">,
): { actor: string; reason: string | null } | null {
  const intent = writeIntents.get(deps);
  if (!intent) return null;
  return { actor: intent.actor ?? deps.osUser(), reason: intent.reason ?? null };
}

// ------------------------------------------------------------------- output

/**
 * Errors are thrown (and printed by runCli as one line), never printed by
 * commander itself; `name` is the command's, for the error's prefix.
 */
export function quiet(command: Command, deps: CliDeps, name: string | undefined): Command {
  return command
    .hook("preAction", (_, action) => {
      const { forceMoved, force, actor, reason } = action.opts();
      const moved = forceMoved === true || (force === true && forceMeansMoved.has(action));
      // Read by openStore (store/open.ts), which every command opens its store through.
      writeIntents.set(deps, moved ? { actor, reason } : null);
    })
    .exitOverride((error) => {
      throw Object.assign(error, { command: name });
    })
    .configureOutput({
      writeOut: (text) => deps.out(text.replace(/\n$/, "")),
      writeErr: () => {},
      outputError: () => {},
    });
}

/**
 * How much of a job or occurrence reference a "no job" error quotes, and
 * of the hint after it (the nearest occurrences): the line stays within a
 * terminal's few hundred characters whatever was typed.
 */
export const REF_CUT = 80;
/** See {@linkcode REF_CUT}. */
export const HINT_CUT = 260;

/** `1 job`, `2 jobs`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
