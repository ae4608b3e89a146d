/** Runs the `jobs` command line in-process, as main.ts would, with captured output. */

import { runCli } from "../../src/cli/program.ts";
import { FakeClock } from "../../src/clock.ts";
import { silentLogger } from "../../src/worker/logger.ts";

/** The exit code and the captured stdout and stderr of one command line. */
export async function runJobs(
  args: string[],
  options: {
    now: number;
    env?: Record<string, string>;
    /** The answer to every confirmation question (default: no). */
    confirm?: boolean;
  },
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const env = options.env ?? {};
  const code = await runCli(args, {
    clock: new FakeClock(options.now),
    logger: silentLogger,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: (name) => env[name],
    color: false,
    program: "jobsctl",
    demo: () => Promise.resolve(),
    onSignal: () => () => {},
    confirm: (question) => {
      out.push(`${question} [y/N]`);
      return Promise.resolve(options.confirm ?? false);
    },
    exit: (code) => {
      throw new Error(`exit ${code}`);
    },
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}
