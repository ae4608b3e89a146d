/**
 * The `jobs` command line: one commander program assembled from the
 * command groups of `src/cli/` (each a thin call into the rest of the
 * code), plus what belongs to the program as a whole: `--version`, `jobs
 * help [command]`, and one line per usage error with the nearest command or
 * option. Exit codes: 0 done, 1 the command failed (an invalid file, a
 * failed run), 2 the command line itself is wrong.
 *
 * The commands are cut by the noun an operator names, one file (or folder)
 * each: `jobs/` (`ls`, `show`, `replay`, `retry`, `cancel`, `discard`,
 * `enqueue`), `queues.ts` (`pause`, `resume`), `schedules.ts` (`next`,
 * `schedules`, `run`, `disable`, `enable`), `workflows.ts`, `pipelines.ts`
 * (`ingest`, `pipelines`, `drops`), `reports.ts`, `settings.ts`, `store/`
 * (`status`, `prune`, `migrate`, `migrate-store`, and how every command
 * opens the store), `users.ts` and `tokens.ts` (people and tokens, sharing
 * `principals.ts`) and `config.ts` (`check`, and how every command reads the
 * schedules file); the rest have a file of their own (`daemon.ts`,
 * `tui.ts`, `runbook.ts`, `demo.ts`, `version.ts`).
 *
 * Every usage line and hint names the program as the person types it
 * (`CliDeps.program`, such as `jobsctl`), and every error and warning starts
 * with the same program's name (`CliDeps.name`: `jobsctl ls: ...`). The
 * commands write `jobs <command>: ...`; {@linkcode runCli} names them once,
 * for all of them.
 *
 * @module
 */

import { Command, CommanderError } from "commander";
import { didYouMean, nearest } from "../text/suggest.ts";
import { type CliDeps, CommandFailed, quiet } from "./common.ts";
import { registerCheckCommand } from "./config.ts";
import { registerConsoleCommand } from "./console.ts";
import { registerDaemonCommand } from "./daemon.ts";
import { registerDemoCommand } from "./demo.ts";
import { PROGRAM_NAME } from "./invocation.ts";
import { registerJobActionCommands } from "./jobs/actions.ts";
import { registerEnqueueCommand } from "./jobs/enqueue.ts";
import { registerLsCommand } from "./jobs/ls.ts";
import { registerShowCommand } from "./jobs/show.ts";
import { registerPipelineCommands } from "./pipelines.ts";
import { registerQueueCommands } from "./queues.ts";
import { registerReportCommands } from "./reports.ts";
import { registerRunbookCommand } from "./runbook.ts";
import { registerScheduleActionCommands, registerScheduleViewCommands } from "./schedules.ts";
import { registerSessionCommands } from "./sessions.ts";
import { registerSettingsCommands } from "./settings.ts";
import { registerMigrateCommand } from "./store/migrate.ts";
import { registerMigrateStoreCommand } from "./store/migrate_store.ts";
import { registerPruneCommand } from "./store/prune.ts";
import { registerStatusCommand } from "./store/status.ts";
import { commandLine, echo, ECHO_MAX } from "./text.ts";
import { registerTokenCommands } from "./tokens.ts";
import { registerTuiCommand } from "./tui.ts";
import { registerUserCommands } from "./users.ts";
import { registerVersionCommand, versionLine } from "./version.ts";
import { registerWorkflowCommands } from "./workflows.ts";
import { registerWorkCommands } from "./work.ts";
import { registerWorkBulkCommands } from "./work_bulk.ts";

export { type CliDeps, CommandFailed } from "./common.ts";

/** Runs the command line `args` (without the program name); returns the exit code. */
export async function runCli(args: string[], given: CliDeps): Promise<number> {
  const deps = namedErrors(given);
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
      deps.err(usageLine(program, error, deps.program));
      return 2;
    }
    if (error instanceof CommandFailed) {
      // Each command escapes what it quotes; escaping again changes nothing
      // there and keeps an overlooked value from acting on the terminal.
      if (error.message) deps.err(escapeLine(error.message));
      return error.exitCode;
    }
    deps.err(`jobs: ${echo(error instanceof Error ? error.message : String(error), MESSAGE_MAX)}`);
    return 1;
  }
}

/** `jobs <command>: ` at the start of an error or warning, as the commands write it. */
const ERROR_PREFIX = /^jobs(?=(?: [a-z][a-z-]*)*: )/;

/**
 * `deps` whose `err` starts each `jobs <command>: ...` line with
 * `deps.name` instead (`jobsctl retry: ...`), so an error names the program
 * its hint tells a person to run.
 */
function namedErrors(deps: CliDeps): CliDeps {
  const name = deps.name ?? PROGRAM_NAME;
  if (name === PROGRAM_NAME) return deps;
  return { ...deps, err: (line) => deps.err(line.replace(ERROR_PREFIX, () => name)) };
}

/** The program with every command, writing through `deps`. */
export function buildProgram(deps: CliDeps): Command {
  const program = new Command(deps.program)
    .description(
      "a durable job scheduler and queue on an embedded SQLite file or a shared PostgreSQL " +
        "database (--db postgres://...)",
    )
    .version(versionLine(), "-V, --version", "print the version")
    .helpCommand(false)
    .showSuggestionAfterError(false)
    // A group's options stop at its subcommand: `drops --reason` filters,
    // `drops replay --reason` is the audit's why.
    .enablePositionalOptions();
  quiet(program, deps, undefined);

  registerVersionCommand(program, deps);
  quiet(
    program.command("help")
      .description("print the help of a command, or of the program")
      .argument("[command]", "the command")
      .argument("[subcommand]", "one of its commands (jobs help workflow show)")
      .action((name: string | undefined, sub: string | undefined) => {
        if (name === undefined) return program.outputHelp();
        const command = program.commands.find((c) => c.name() === name);
        if (!command) {
          const names = program.commands.map((c) => c.name());
          throw new CommandFailed(
            `jobs help: unknown command "${echo(name)}" ` +
              `(${commandLine(deps.program, ["help"])} lists them)` +
              echo(didYouMean(name, names)),
            2,
          );
        }
        if (sub === undefined) return command.outputHelp();
        const inner = command.commands.find((c) => c.name() === sub);
        if (!inner) {
          const names = command.commands.map((c) => c.name());
          throw new CommandFailed(
            `jobs help: "${echo(name)}" has no command "${echo(sub)}" ` +
              `(${commandLine(deps.program, ["help", name])} lists ${
                names.length > 0 ? "them" : "its options"
              })` + echo(didYouMean(sub, names)),
            2,
          );
        }
        inner.outputHelp();
      }),
    deps,
    "help",
  );

  // In the order `jobs help` lists the commands.
  registerDemoCommand(program, deps);
  registerCheckCommand(program, deps);
  registerScheduleViewCommands(program, deps);
  registerDaemonCommand(program, deps);
  registerStatusCommand(program, deps);
  registerLsCommand(program, deps);
  registerShowCommand(program, deps);
  registerRunbookCommand(program, deps);
  registerJobActionCommands(program, deps);
  registerScheduleActionCommands(program, deps);
  registerQueueCommands(program, deps);
  registerEnqueueCommand(program, deps);
  registerPruneCommand(program, deps);
  registerMigrateCommand(program, deps);
  registerMigrateStoreCommand(program, deps);
  registerTuiCommand(program, deps);
  registerConsoleCommand(program, deps);
  registerWorkflowCommands(program, deps);
  registerPipelineCommands(program, deps);
  registerWorkCommands(program, deps);
  registerWorkBulkCommands(program, deps);
  registerSettingsCommands(program, deps);
  registerReportCommands(program, deps);
  registerUserCommands(program, deps);
  registerTokenCommands(program, deps);
  registerSessionCommands(program, deps);
  return program;
}

/**
 * `error: unknown option '--stat'` from `ls` -> `jobs ls: unknown option
 * "--stat"; did you mean "--state"? (run "jobsctl help ls" for the options)`.
 */
function usageLine(
  program: Command,
  error: CommanderError & { command?: string },
  invocation: string,
): string {
  // A subcommand's name is its path (`workflow show`): its help is `help workflow show`.
  const path = error.command ? error.command.split(" ") : [];
  const command = path.reduce<Command | undefined>(
    (parent, name) => parent?.commands.find((c) => c.name() === name),
    program,
  ) ?? program;
  const where = error.command ? `jobs ${error.command}` : "jobs";
  const help = commandLine(invocation, ["help", ...path]);
  return `${where}: ${usageText(error)}${echo(suggestion(command, error))} ` +
    `(run "${help}" for the ${error.command ? "options" : "commands"})`;
}

/** How many characters of a whole message (holding echoed values) an error shows. */
const MESSAGE_MAX = 400;

/**
 * Commander's message with every value it quotes from the command line
 * echoed (escaped and cut, see {@linkcode echo}). The values are found by
 * the shape of each message, not by their quotes, which a value may hold
 * (`--args "{'a':1}"`); what no shape matches is escaped and cut whole.
 */
function usageText(error: CommanderError): string {
  const message = error.message.replace(/^error: /, "");
  const quote = (value: string) => `"${echo(value)}"`;
  // `option '<flags>' argument '<value>' is invalid. <why>`. The value ends
  // at the first `' is invalid.`: one holding those words is cut short, never
  // shown raw.
  const option = error.code === "commander.invalidArgument"
    ? /^option '([^']*)' argument '([\s\S]*?)' is invalid\. ([\s\S]*)$/.exec(message)
    : null;
  if (option) {
    const [, flags, value, why] = option as unknown as [string, string, string, string];
    // Our parsers' reasons start by quoting what they refuse (`"5x" is not a
    // duration`, or the one bad state of several): say it once.
    return why.startsWith('"')
      ? `option "${flags}": ${echo(why, MESSAGE_MAX)}`
      : `option "${flags}" value ${quote(value)} is invalid: ${echo(why, MESSAGE_MAX - ECHO_MAX)}`;
  }
  const named = /^(unknown option|unknown command) '([\s\S]*)'$/.exec(message);
  if (named) return `${named[1]} ${quote(named[2]!)}`;
  const excess = /^(too many arguments[^.:]*\. Expected \d+ arguments? but got \d+): ([\s\S]*)\.$/
    .exec(message);
  if (excess) return `${excess[1]!.replace(/'([^']*)'/g, '"$1"')}: ${echo(excess[2]!)}`;
  return echo(message.replace(/'([^']*)'/g, '"$1"'), MESSAGE_MAX);
}

/** A command's message, escaped whole (what it escaped already stays as it is), one line at a time. */
function escapeLine(message: string): string {
  return message.split("\n").map((line) => echo(line, Infinity)).join("\n");
}

/** The nearest command or option to the unknown one `error` names, as `; did you mean ...?`. */
function suggestion(command: Command, error: CommanderError): string {
  const named = /'([\s\S]*)'/.exec(error.message)?.[1];
  if (named === undefined) return "";
  if (error.code === "commander.unknownCommand") {
    return didYouMean(named, command.commands.map((c) => c.name()));
  }
  if (error.code === "commander.unknownOption") {
    const flag = named.split("=")[0]!;
    const flags = [...command.options.flatMap((o) => [o.long, o.short]), "--help"]
      .filter((f): f is string => f !== undefined);
    // Compared without their dashes, which every flag shares: "--stat" is near
    // "--state", not "--tag".
    const bare = (f: string) => f.replace(/^-+/, "");
    const near = new Set(nearest(bare(flag), flags.map(bare)));
    return didYouMean(flag, flags.filter((f) => near.has(bare(f))));
  }
  return "";
}
