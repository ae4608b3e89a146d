/**
 * The `jobs` command: picks the concrete clock, logger, environment and
 * output, and hands the command line to `src/cli/`. Nothing else lives here.
 *
 * Exit codes: 0 done, 1 the command failed, 2 the command line is wrong.
 *
 * @module
 */

import { runDemo } from "./examples/demo.ts";
import { invocation } from "./src/cli/invocation.ts";
import { flushOnExit, lineSink } from "./src/cli/line_sink.ts";
import { osUserName } from "./src/cli/os_user.ts";
import { runCli } from "./src/cli/program.ts";
import { promptSecret } from "./src/cli/secret_prompt.ts";
import { SystemClock } from "./src/clock.ts";
import { humanLogger, jsonLinesLogger } from "./src/kernel/logger.ts";

/** Runs the command line; returns the exit code. */
export function main(args: string[]): Promise<number> {
  const clock = new SystemClock();
  let user: string | undefined;
  const color = Deno.stdout.isTerminal() && !Deno.noColor;
  // Events go to stderr: readable lines for a person, JSON lines for a collector,
  // written once per turn of the event loop; errors go the same way, in order.
  const stderr = lineSink((bytes) => Deno.stderr.writeSync(bytes));
  flushOnExit(stderr);
  const writeErr = (line: string) => stderr.write(line);
  const { program, name } = invocation(import.meta.url);
  const logger = Deno.stderr.isTerminal()
    ? humanLogger(clock, writeErr)
    : jsonLinesLogger(clock, writeErr);
  return runCli(args, {
    clock,
    logger,
    out: (line) => console.log(line),
    err: writeErr,
    env: (name) => Deno.env.get(name),
    color,
    program,
    name,
    osUser: () => user ??= osUserName(),
    onSignal: (signal, listener) => {
      Deno.addSignalListener(signal, listener);
      return () => Deno.removeSignalListener(signal, listener);
    },
    exit: (code) => Deno.exit(code),
    confirm: (question) => Promise.resolve(Deno.stdin.isTerminal() && confirm(question)),
    readStdin: () => new Response(Deno.stdin.readable).text(),
    readSecret: promptSecret,
    demo: async ({ db }) => {
      await runDemo({ db, clock, logger, write: (line) => console.log(line), color });
    },
  });
}

if (import.meta.main) Deno.exit(await main(Deno.args));
