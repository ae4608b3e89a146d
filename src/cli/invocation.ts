/**
 * The name a person types to reach this program, printed at the start of
 * every line meant to be pasted (`CliDeps.program`), and the launcher script
 * that makes that name real.
 *
 * `jobs` is the job-control builtin of bash, zsh, dash and fish: typed at a
 * prompt it never reaches this program, not even as `command jobs`. So the
 * launchers `tools/install.ts` writes are installed as both `jobs` (for
 * systemd units, scripts and `env jobs`) and `jobsctl` (for people), and they
 * export `JOBS_PROGRAM=jobsctl`. Without a launcher (`deno run -A main.ts`,
 * `deno task`, `npx deno ...`) the program still has to print something that
 * works when pasted: `jobsctl` when the `jobsctl` a shell would find on PATH
 * is a launcher of this same checkout, else the full `deno run` line, where
 * a Deno that `npx` fetched is named as `npx --yes deno@<version>`, never by
 * its path in npm's cache (which npm may empty or move at any time).
 *
 * The same place picks the one word that starts each error and warning
 * (`jobsctl retry: ...`), so the errors name the program the hints do.
 *
 * The launcher's text and the test that recognizes it live together here, so
 * the installer and the recognizer cannot drift apart.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { shellQuote } from "../text/shell.ts";

/** The name the launchers are installed under besides `jobs`: reserved by no common shell. */
export const INSTALLED_NAME = "jobsctl";

/** The first line after the shebang of every launcher: how one is told from another program. */
const LAUNCHER_MARK = "# jobs launcher, written by `deno task install`";

/** Launchers and other small scripts are read to recognize them; a larger file is not one. */
const MAX_LAUNCHER_BYTES = 64 * 1024;

/** The program's own name: the one error prefixes carry when no launcher or binary names it. */
export const PROGRAM_NAME = "jobs";

/** What {@linkcode invocation} reads of the running process. */
export interface InvocationHost {
  /** An environment variable: `JOBS_PROGRAM`, `PATH`. */
  env(name: string): string | undefined;
  /** The running executable: Deno, or the binary `deno compile` built. */
  execPath(): string;
  /** Whether this program is a `deno compile` binary (its main.ts is embedded, not on disk). */
  standalone: boolean;
  /** The running Deno's version (`2.9.6`), for the `npx --yes deno@<version>` line. */
  denoVersion: string;
}

/** The running Deno process, as {@linkcode invocation} reads it. */
export function denoHost(): InvocationHost {
  return {
    env: (name) => Deno.env.get(name),
    execPath: () => Deno.execPath(),
    standalone: Deno.build.standalone,
    denoVersion: Deno.version.deno,
  };
}

/** How the program names itself: `CliDeps.program` and `CliDeps.name`. */
export interface Invocation {
  /** The command a person types, at the start of every line meant to be pasted. */
  program: string;
  /** One word at the start of each error and warning: `jobsctl` in `jobsctl retry: ...`. */
  name: string;
}

/**
 * The command a person types to reach this program, for the lines it prints
 * to be pasted, and the name its errors start with:
 *
 * 1. `JOBS_PROGRAM` when set (the launchers set it to `jobsctl`), named by
 *    its last path segment when it is one word (`/srv/bin/jobsctl`), else `jobs`;
 * 2. the binary's own shell-quoted path for a `deno compile` binary, named
 *    by its file name;
 * 3. `jobsctl` when the first `jobsctl` on PATH is a launcher of the
 *    `main.ts` at `mainUrl`;
 * 4. otherwise the full line: the Deno that runs it, `run -A`, and the
 *    shell-quoted absolute path of `main.ts`, named `jobs`. The Deno is
 *    `npx --yes deno@<version>` when `npx` fetched it (its path is in npm's
 *    cache), else the shell-quoted `Deno.execPath()`.
 *
 * Never throws: when the process may not read its environment or files
 * (a narrow `--allow-*`), it answers `jobsctl`, the documented name.
 */
export function invocation(mainUrl: string | URL, host: InvocationHost = denoHost()): Invocation {
  try {
    const chosen = host.env("JOBS_PROGRAM");
    if (chosen) {
      return { program: chosen, name: /\s/.test(chosen) ? PROGRAM_NAME : lastSegment(chosen) };
    }
    if (host.standalone) {
      return { program: shellQuote(host.execPath()), name: lastSegment(host.execPath()) };
    }
    const main = fileURLToPath(mainUrl);
    const found = findOnPath(INSTALLED_NAME, host.env("PATH") ?? "");
    if (found !== null && isLauncherOf(found, main)) {
      return { program: INSTALLED_NAME, name: INSTALLED_NAME };
    }
    const deno = inNpxCache(host.execPath())
      ? `npx --yes deno@${shellQuote(host.denoVersion)}`
      : shellQuote(host.execPath());
    return { program: `${deno} run -A ${shellQuote(main)}`, name: PROGRAM_NAME };
  } catch {
    return { program: INSTALLED_NAME, name: INSTALLED_NAME };
  }
}

/**
 * Whether `path` lies in what `npx` fetched: npm keeps it in
 * `<npm cache>/_npx/<hash>/node_modules/`, a folder named by a hash of the
 * request that npm may empty or replace at any time.
 */
export function inNpxCache(path: string): boolean {
  return path.split("/").includes("_npx");
}

/** `/srv/bin/jobsctl` -> `jobsctl`: a path's last segment, or the whole text when that is empty. */
function lastSegment(path: string): string {
  return path.replace(/\/+$/, "").split("/").pop() || path;
}

/**
 * The file a POSIX shell runs for command `name` with this `path` (the
 * value of PATH): the first executable regular file among its folders, an
 * empty entry meaning the current folder. Null when there is none.
 */
export function findOnPath(name: string, path: string): string | null {
  for (const folder of path.split(":")) {
    const candidate = `${folder === "" ? "." : folder.replace(/\/+$/, "")}/${name}`;
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0o755) & 0o111) !== 0) return candidate;
    } catch {
      // Missing or unreadable: the shell skips it too.
    }
  }
  return null;
}

/** Whether the file at `file` is a launcher that runs the `main.ts` at `main`. */
export function isLauncherOf(file: string, main: string): boolean {
  try {
    if (Deno.statSync(file).size > MAX_LAUNCHER_BYTES) return false;
    return launcherRuns(Deno.readTextFileSync(file), main);
  } catch {
    return false;
  }
}

/** Whether the script `text` is a launcher (of any checkout): the installer replaces only those. */
export function isLauncherText(text: string): boolean {
  return text.split("\n").includes(LAUNCHER_MARK);
}

/** Whether the script `text` is a launcher that runs the `main.ts` at `main` (or its real path). */
export function launcherRuns(text: string, main: string): boolean {
  if (!isLauncherText(text)) return false;
  const mains = [main];
  try {
    mains.push(Deno.realPathSync(main));
  } catch {
    // A checkout that is gone runs nothing: only the literal path can match.
  }
  return mains.some((m) => text.includes(` ${posixQuote(m)} "$@"`));
}

/** Where a launcher points: the kept Deno, the checkout's deno.json and its main.ts, all absolute. */
export interface LauncherTargets {
  deno: string;
  config: string;
  main: string;
}

/**
 * The POSIX sh launcher installed as both `jobs` and `jobsctl`: it exports
 * `JOBS_PROGRAM=jobsctl` (a person cannot type `jobs`, whichever name ran)
 * and execs the kept Deno on the checkout, every path single-quoted so
 * spaces, quotes and `$` in them are plain text.
 */
export function launcherScript(targets: LauncherTargets): string {
  return [
    "#!/bin/sh",
    LAUNCHER_MARK,
    "# It runs one checkout of jobs with the Deno kept for it; running the install again",
    "# replaces it. Lines printed for pasting say jobsctl: `jobs` is a shell builtin.",
    `JOBS_PROGRAM=${INSTALLED_NAME}`,
    "export JOBS_PROGRAM",
    `exec ${posixQuote(targets.deno)} run --allow-all --config ${posixQuote(targets.config)} ` +
    `${posixQuote(targets.main)} "$@"`,
    "",
  ].join("\n");
}

/**
 * `word` as one POSIX sh word: always single-quoted, a `'` written `'\''`.
 * Unlike {@linkcode shellQuote} (bash's `$'...'` for control characters, so
 * what a terminal shows is safe), this is for files sh reads, dash included.
 */
export function posixQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
