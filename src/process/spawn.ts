/**
 * Starting a command's argv (or its script under /bin/sh) as the leader of
 * a new process group, with its output piped.
 *
 * @module
 */

import { JobFailure } from "../kernel/error_text.ts";
import type { CommandRun } from "../kernel/runs.ts";

/**
 * Spawns `run` (see {@linkcode spawnCommand}); a program that cannot start
 * is an expected failure naming it and why.
 */
export function startCommand(
  run: CommandRun,
  env: Record<string, string>,
  label: string,
): Deno.ChildProcess {
  try {
    return spawnCommand(run, env);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new JobFailure(`${label} cannot start: ${why}`, { cause: error });
  }
}

/**
 * Starts `run`'s argv (or its script under /bin/sh) as the leader of a new
 * process group. Its stdin is empty unless `options.stdin` is `piped` (the
 * caller writes to it and closes it).
 */
export function spawnCommand(
  run: CommandRun,
  env: Record<string, string>,
  options: { stdin?: "null" | "piped" } = {},
): Deno.ChildProcess {
  const [program, ...args] = run.shell ? ["/bin/sh", "-c", run.argv[0]!] : run.argv;
  return new Deno.Command(program!, {
    args,
    cwd: run.cwd,
    env,
    stdin: options.stdin ?? "null",
    stdout: "piped",
    stderr: "piped",
    // A new session, hence a new process group led by the child (pgid = pid).
    detached: true,
  }).spawn();
}
