/**
 * The `jobs` command: parses the command line, picks the concrete clock,
 * logger and output, and calls into `src/cli/`. Nothing else lives here.
 *
 * Exit codes: 0 done, 1 the command failed, 2 the command line is wrong.
 *
 * @module
 */

import { SystemClock } from "./src/clock.ts";
import { runDemo } from "./examples/demo.ts";
import { DEMO_USAGE, MAIN_USAGE } from "./src/cli/usage.ts";
import { versionLine } from "./src/cli/version.ts";
import { jsonLogger } from "./src/worker/logger.ts";

/** A command line that cannot be run: its message is the one line printed, exit code 2. */
class UsageError extends Error {}

/** What the command line asks for. */
type Command =
  | { name: "help"; text: string }
  | { name: "version" }
  | { name: "demo"; db: string };

/** Parses `args` (without the program name); throws {@linkcode UsageError}. */
export function parseCommandLine(args: string[]): Command {
  const [command, ...rest] = args;
  switch (command) {
    case undefined:
      throw new UsageError(`jobs: missing command; run "jobs --help" for the commands`);
    case "-h":
    case "--help":
    case "help":
      return { name: "help", text: MAIN_USAGE };
    case "version":
    case "--version":
    case "-V":
      noMore("version", rest);
      return { name: "version" };
    case "demo":
      return parseDemo(rest);
    default:
      if (command.startsWith("-")) {
        throw new UsageError(
          `jobs: unknown option "${command}"; run "jobs --help" for the commands`,
        );
      }
      throw new UsageError(
        `jobs: unknown command "${command}"; run "jobs --help" for the commands`,
      );
  }
}

function parseDemo(args: string[]): Command {
  let db = "./jobs.db";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-h" || arg === "--help") return { name: "help", text: DEMO_USAGE };
    if (arg === "--db" || arg.startsWith("--db=")) {
      const value = arg === "--db" ? args[++i] : arg.slice("--db=".length);
      if (value === undefined || value === "") {
        throw new UsageError(`jobs demo: option "--db" needs a file path`);
      }
      db = value;
      continue;
    }
    if (arg.startsWith("-")) throw new UsageError(`jobs demo: unknown option "${arg}"`);
    throw new UsageError(`jobs demo: unexpected argument "${arg}"`);
  }
  return { name: "demo", db };
}

function noMore(command: string, rest: string[]): void {
  const extra = rest[0];
  if (extra === undefined) return;
  const kind = extra.startsWith("-") ? "unknown option" : "unexpected argument";
  throw new UsageError(`jobs ${command}: ${kind} "${extra}"`);
}

/** Runs the command line; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let command: Command;
  try {
    command = parseCommandLine(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(error.message);
    return 2;
  }
  try {
    switch (command.name) {
      case "help":
        console.log(command.text);
        return 0;
      case "version":
        console.log(versionLine());
        return 0;
      case "demo":
        await runDemo({
          db: command.db,
          clock: new SystemClock(),
          logger: jsonLogger,
          write: (line) => console.log(line),
          color: Deno.stdout.isTerminal() && !Deno.noColor,
        });
        return 0;
    }
  } catch (error) {
    console.error(`jobs ${command.name}: ${error instanceof Error ? error.message : error}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
