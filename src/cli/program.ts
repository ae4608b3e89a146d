/**
 * The `jobs` command line: one commander program whose commands are thin
 * calls into the rest of the code. Exit codes: 0 done, 1 the command failed
 * (an invalid file, a failed run), 2 the command line itself is wrong.
 *
 * @module
 */

import { Command, CommanderError, InvalidArgumentError } from "commander";
import type { Clock } from "../clock.ts";
import type { Logger } from "../worker/logger.ts";
import { queueCommand, scheduleCommand } from "./actions.ts";
import { type DaemonDeps, parseQueues, runDaemon } from "./daemon.ts";
import { checkCommand, nextCommand, schedulesCommand } from "./schedules.ts";
import { versionLine } from "./version.ts";
import { registerInspectCommands } from "./inspect.ts";
import { registerRunbookCommands } from "./runbook.ts";
import { registerTuiCommand } from "./tui.ts";

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
  /** Runs the demo; injected so main.ts, not src/, picks the example. */
  demo: (options: { db: string }) => Promise<void>;
  /** Calls `listener` on each delivery of `signal`; returns the unsubscribe. */
  onSignal: DaemonDeps["onSignal"];
  /** Ends the process at once. */
  exit: (code: number) => never;
  /**
   * Asks the person at the terminal a yes/no question (bulk changes);
   * false when nobody can answer (stdin is not a terminal).
   */
  confirm: (question: string) => Promise<boolean>;
}

/** Raised by a command that ran and failed: its message is printed, exit code 1. */
export class CommandFailed extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = "CommandFailed";
  }
}

/** Runs the command line `args` (without the program name); returns the exit code. */
export async function runCli(args: string[], deps: CliDeps): Promise<number> {
  const program = buildProgram(deps);
  if (args.length === 0) {
    deps.err(program.helpInformation().trimEnd());
    return 2;
  }
  try {
    await program.parseAsync(args, { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0; // --help, --version
      deps.err(usageLine(error));
      return 2;
    }
    if (error instanceof CommandFailed) {
      if (error.message) deps.err(error.message);
      return error.exitCode;
    }
    deps.err(`jobs: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

/** `error: unknown option '--dbb'` from the `demo` command -> `jobs demo: unknown option "--dbb"`. */
function usageLine(error: CommanderError & { command?: string }): string {
  const text = error.message.replace(/^error: /, "").replace(/'([^']*)'/g, '"$1"');
  const where = error.command ? `jobs ${error.command}` : "jobs";
  const hint = error.command ? `run "jobs ${error.command} --help"` : `run "jobs --help"`;
  return `${where}: ${text}; ${hint} for the options`.replace(/ \(Did you mean [^)]*\)\?/, "");
}

function buildProgram(deps: CliDeps): Command {
  const program = new Command("jobs")
    .description("a durable job scheduler and queue on an embedded SQLite file")
    .helpCommand(false)
    .showSuggestionAfterError(false);
  quiet(program, deps, undefined);

  quiet(
    program.command("demo")
      .description("enqueue and work example jobs on a SQLite file, then print what happened")
      .option("--db <path>", "the SQLite file (created when missing)", "./jobs.db")
      .action(async (options: { db: string }) => {
        await deps.demo({ db: options.db });
      }),
    deps,
    "demo",
  );

  quiet(
    program.command("version")
      .description("print the version")
      .action(() => deps.out(versionLine())),
    deps,
    "version",
  );

  quiet(
    program.command("check")
      .description("validate schedules.yaml; exit 1 with every error")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--json", "print the result as JSON")
      .action(async (options: { config?: string; json?: boolean }) => {
        await checkCommand(
          { config: configPath(options.config, deps), json: !!options.json },
          deps,
        );
      }),
    deps,
    "check",
  );

  quiet(
    program.command("next")
      .description("the next occurrences of a schedule")
      .argument("<schedule-id>", "the schedule's id")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--from <instant>", "start after this ISO instant (default: now)", parseInstant)
      .option("--count <n>", "how many occurrences", parseCount, 5)
      .option("--json", "print an array of { at, occurrence, local, note }")
      .action(
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
    program.command("schedules")
      .description("every schedule with its policies, stored state and next occurrence")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print the schedules as JSON")
      .action(async (options: { config?: string; db?: string; json?: boolean }) => {
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

  quiet(
    program.command("daemon")
      .description("run the schedules of schedules.yaml and the queued work until stopped")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--queues <list>", "name:concurrency,... [env JOBS_QUEUES] (default: the file's)")
      .option("--node <name>", "this node's name [env JOBS_NODE] (default: host:pid:nonce)")
      .option("--environment <name>", "where this daemon runs [env JOBS_ENVIRONMENT]")
      .option(
        "--shutdown-grace <ms>",
        "how long running jobs get on stop [env JOBS_SHUTDOWN_GRACE]",
      )
      .option(
        "--listen <addr>",
        "host:port of /healthz, /readyz, /metrics, or off [env JOBS_LISTEN]",
      )
      .option("--token <token>", "required beyond loopback [env JOBS_TOKEN]")
      .action(async (options: {
        db?: string;
        config?: string;
        queues?: string;
        node?: string;
        environment?: string;
        shutdownGrace?: string;
        listen?: string;
        token?: string;
      }) => {
        const queues = options.queues ?? deps.env("JOBS_QUEUES");
        const grace = Number(options.shutdownGrace ?? deps.env("JOBS_SHUTDOWN_GRACE") ?? 25_000);
        if (!Number.isFinite(grace) || grace < 0) {
          throw new CommandFailed(
            `jobs daemon: --shutdown-grace "${grace}" is not a number of ms`,
            2,
          );
        }
        let parsedQueues: Record<string, number> | undefined;
        try {
          parsedQueues = queues ? parseQueues(queues) : undefined;
        } catch (error) {
          throw new CommandFailed(`jobs daemon: --queues ${(error as Error).message}`, 2);
        }
        await runDaemon({
          db: dbPath(options.db, deps),
          config: configPath(options.config, deps),
          queues: parsedQueues,
          node: options.node ?? deps.env("JOBS_NODE"),
          environment: options.environment ?? deps.env("JOBS_ENVIRONMENT"),
          shutdownGraceMs: grace,
          listen: options.listen ?? deps.env("JOBS_LISTEN") ?? "127.0.0.1:9464",
          token: options.token ?? deps.env("JOBS_TOKEN"),
        }, deps);
      }),
    deps,
    "daemon",
  );

  for (const paused of [true, false]) {
    const name = paused ? "pause" : "resume";
    quiet(
      program.command(name)
        .description(`${name} a queue for every process on the store (audited)`)
        .argument("<queue>", "the queue")
        .option("--db <path>", "the SQLite file [env JOBS_DB]")
        .option("--reason <text>", "why, for the audit trail")
        .option("--actor <name>", "who, for the audit trail (default: the OS user)")
        .action(
          async (queue: string, options: { db?: string; reason?: string; actor?: string }) => {
            await queueCommand({
              db: dbPath(options.db, deps),
              queue,
              paused,
              who: who(options, deps),
            }, deps);
          },
        ),
      deps,
      name,
    );
  }

  for (const enabled of [false, true]) {
    const name = enabled ? "enable" : "disable";
    quiet(
      program.command(name)
        .description(`${name} a schedule; stored, it survives restarts and reloads (audited)`)
        .argument("<schedule-id>", "the schedule")
        .requiredOption("--reason <text>", "why, for the audit trail and every view")
        .option("--db <path>", "the SQLite file [env JOBS_DB]")
        .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
        .option("--actor <name>", "who, for the audit trail (default: the OS user)")
        .action(
          async (
            id: string,
            options: { db?: string; config?: string; reason?: string; actor?: string },
          ) => {
            await scheduleCommand({
              db: dbPath(options.db, deps),
              config: configPath(options.config, deps),
              id,
              enabled,
              who: who(options, deps),
            }, deps);
          },
        ),
      deps,
      name,
    );
  }

  registerInspectCommands(program, deps);
  registerRunbookCommands(program, deps);
  registerTuiCommand(program, deps);
  return program;
}

/** `--db`, else `JOBS_DB`, else `./jobs.db`. */
export function dbPath(option: string | undefined, deps: CliDeps): string {
  return option ?? deps.env("JOBS_DB") ?? "./jobs.db";
}

/** Who acts: `--actor`, else the OS user; with `--reason` and the clock's now. */
export function who(options: { actor?: string; reason?: string }, deps: CliDeps) {
  return {
    actor: options.actor ?? deps.env("USER") ?? deps.env("LOGNAME") ?? "unknown",
    reason: options.reason ?? null,
    now: deps.clock.now(),
  };
}

/** Errors are thrown (and printed by runCli as one line), never printed by commander itself. */
export function quiet(command: Command, deps: CliDeps, name: string | undefined): Command {
  return command
    .exitOverride((error) => {
      throw Object.assign(error, { command: name });
    })
    .configureOutput({
      writeOut: (text) => deps.out(text.replace(/\n$/, "")),
      writeErr: () => {},
      outputError: () => {},
    });
}

/** `--config`, else `JOBS_CONFIG`, else `./schedules.yaml`. */
export function configPath(option: string | undefined, deps: CliDeps): string {
  return option ?? deps.env("JOBS_CONFIG") ?? "./schedules.yaml";
}

/** An ISO instant with its offset (`Z` or `+01:00`): a bare local time would depend on the machine's zone. */
export function parseInstant(value: string): number {
  try {
    return Temporal.Instant.from(value).epochMilliseconds;
  } catch {
    throw new InvalidArgumentError(
      `"${value}" is not an ISO instant with an offset, such as 2026-03-08T00:00:00Z`,
    );
  }
}

export function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) {
    throw new InvalidArgumentError(`"${value}" is not a whole number from 1 to 10000`);
  }
  return n;
}
