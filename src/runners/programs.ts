/**
 * The host's side of the check that a file's commands can start (see
 * `config/programs.ts`): the working directory and `PATH` a daemon
 * started here would run commands with, and what is at a path, as the
 * command runner would find it (links followed, any execute bit).
 *
 * @module
 */

import type { ProgramFiles } from "../config/load.ts";

/** When `PATH` is unset, the folders `execvp` searches. */
const DEFAULT_PATH = "/usr/bin:/bin";

/**
 * Programs as found on this host by a process running in `cwd` with `path`
 * as its `PATH` (the default search path when unset).
 */
export function hostPrograms(cwd: string, path: string | undefined): ProgramFiles {
  return {
    cwd,
    path: path ?? DEFAULT_PATH,
    stat(file) {
      try {
        const info = Deno.statSync(file);
        return { isFile: info.isFile, executable: ((info.mode ?? 0o755) & 0o111) !== 0 };
      } catch {
        // Missing, or a folder on the way that cannot be read: the runner cannot start it either.
        return null;
      }
    },
  };
}
