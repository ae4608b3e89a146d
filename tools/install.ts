/**
 * `deno task install`: puts `jobs` and `jobsctl` on a machine that has only
 * Node.js and npm (`npx --yes deno@2.9.6 task install`).
 *
 * It keeps a copy of the Deno that runs it (the npx cache is not a place to
 * depend on), caches the dependencies with that copy so the first run
 * downloads nothing, writes the two launchers (see `src/cli/invocation.ts`)
 * into the bin folder, runs one of them to check it, and says what to add to
 * PATH when the folder is not on it. Running it again replaces what it wrote.
 *
 * It lives in `tools/`, not in the `jobs` command: it installs a checkout, so
 * it runs from one (before anything is installed), and a compiled binary or
 * an installed launcher would have nothing to install.
 *
 * Exit codes: 0 installed, 1 a step failed, 2 the command line is wrong.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import {
  findOnPath,
  INSTALLED_NAME,
  isLauncherText,
  launcherRuns,
  launcherScript,
  posixQuote,
} from "../src/cli/invocation.ts";
import { versionLine } from "../src/cli/version.ts";
import { escapeControl } from "../src/text/escape.ts";

/** The names the launchers are written under: the program's own, and the one a shell lets through. */
export const LAUNCHER_NAMES = ["jobs", INSTALLED_NAME] as const;

const USAGE = `usage: deno task install [--bin DIR] [--force]

Keeps this Deno in \${XDG_DATA_HOME:-~/.local/share}/jobs/deno-<version>/deno, caches the
dependencies, and writes the launchers jobs and jobsctl into the bin folder.

  --bin DIR   the bin folder (default: \${XDG_BIN_HOME:-~/.local/bin})
  --force     replace a jobs or jobsctl there that is not a jobs launcher
  --help      print this`;

/** What the command line asks for. */
export interface InstallArgs {
  /** The bin folder as given (relative to where the task was started), or undefined for the default. */
  bin?: string;
  /**
   * Replace a file named `jobs` or `jobsctl` in the bin folder that is not a launcher.
   * @default false
   */
  force: boolean;
  help: boolean;
}

/** Raised for a wrong command line (exit 2) or a failed step (exit 1); the message is one sentence. */
export class InstallError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = "InstallError";
  }
}

/** Parses the installer's arguments. */
export function parseInstallArgs(argv: string[]): InstallArgs {
  const args: InstallArgs = { force: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") args.help = true;
    else if (arg === "--force") args.force = true;
    else if (arg === "--bin" || arg.startsWith("--bin=")) {
      const value = arg === "--bin" ? argv[++i] : arg.slice("--bin=".length);
      if (value === undefined || value === "") {
        throw new InstallError(`option "--bin" needs a folder`, 2);
      }
      args.bin = value;
    } else {
      throw new InstallError(`unknown argument "${escapeControl(arg)}"; run with --help`, 2);
    }
  }
  return args;
}

/** Where the installer writes: the kept Deno and the launchers' folder, all absolute. */
export interface InstallPaths {
  /** `<data>/jobs/deno-<version>/deno`. */
  deno: string;
  /** The folder the launchers go into. */
  bin: string;
}

/**
 * The installer's folders from the environment: `XDG_DATA_HOME` (default
 * `~/.local/share`) and `XDG_BIN_HOME` (default `~/.local/bin`), each used
 * only when absolute, as the XDG spec says; `bin` (from `--bin`) wins,
 * resolved against `cwd`.
 */
export function installPaths(
  env: (name: string) => string | undefined,
  options: { bin?: string; cwd: string; denoVersion: string },
): InstallPaths {
  const home = env("HOME");
  const absolute = (value: string | undefined) => value?.startsWith("/") ? value : undefined;
  const fromHome = (rest: string) => {
    if (!home) throw new InstallError(`HOME is not set; set it, or XDG_DATA_HOME and --bin`);
    return `${home.replace(/\/+$/, "")}/${rest}`;
  };
  const data = absolute(env("XDG_DATA_HOME")) ?? fromHome(".local/share");
  const bin = options.bin !== undefined
    ? resolve(options.cwd, options.bin)
    : absolute(env("XDG_BIN_HOME")) ?? fromHome(".local/bin");
  return { deno: `${trimSlash(data)}/jobs/deno-${options.denoVersion}/deno`, bin: trimSlash(bin) };
}

function resolve(cwd: string, path: string): string {
  return path.startsWith("/") ? path : `${trimSlash(cwd)}/${path}`;
}

function trimSlash(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, "") : path;
}

/** Whether `folder` is one of the entries of `path` (the value of PATH), or the same folder. */
export function onPath(folder: string, path: string): boolean {
  const real = (p: string) => {
    try {
      return Deno.realPathSync(p);
    } catch {
      return trimSlash(p);
    }
  };
  const wanted = real(folder);
  return path.split(":").some((entry) => entry !== "" && real(entry) === wanted);
}

/**
 * The lines that tell a person how to put `bin` on PATH: one for
 * ~/.bashrc or ~/.zshrc, one to run once in fish.
 */
export function pathAdvice(bin: string): string[] {
  // Inside double quotes only $ ` \ " and bash's history ! are special.
  const sh = /^[^$`\\"!]*$/.test(bin)
    ? `export PATH="${bin}:$PATH"`
    : `export PATH=${posixQuote(bin)}:"$PATH"`;
  const fish = `fish_add_path '${bin.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
  return [
    `${
      escapeControl(bin)
    } is not on PATH. For bash or zsh, add this line to ~/.bashrc or ~/.zshrc:`,
    `  ${sh}`,
    "For fish, run once:",
    `  ${fish}`,
    `Then open a new shell and run: ${INSTALLED_NAME} --help`,
  ];
}

/** The checkout this installer belongs to: its deno.json and main.ts, by real path. */
function checkout(): { config: string; main: string; root: string } {
  const root = Deno.realPathSync(fileURLToPath(new URL("..", import.meta.url)));
  return { root, config: `${root}/deno.json`, main: `${root}/main.ts` };
}

/**
 * Writes `to` through a temporary file beside it and a rename, executable: a
 * process running the old file keeps it, and nothing is ever half-written.
 */
async function replaceFile(to: string, write: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = `${to}.tmp-${Deno.pid}`;
  try {
    await write(tmp);
    await Deno.chmod(tmp, 0o755);
    await Deno.rename(tmp, to);
  } catch (error) {
    await Deno.remove(tmp).catch(() => {});
    throw error;
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  try {
    return (await Deno.realPath(a)) === (await Deno.realPath(b));
  } catch {
    return false;
  }
}

async function readIfExists(path: string): Promise<string | null> {
  try {
    const info = await Deno.lstat(path);
    if (info.isDirectory) {
      throw new InstallError(`"${escapeControl(path)}" is a folder, not a launcher`);
    }
    return new TextDecoder().decode(await Deno.readFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** Runs `cmd args` with inherited stderr; its stdout, or an InstallError naming `what`. */
async function run(what: string, cmd: string, args: string[], cwd: string): Promise<string> {
  const output = await new Deno.Command(cmd, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (output.code !== 0) throw new InstallError(`${what} failed with exit code ${output.code}`);
  return new TextDecoder().decode(output.stdout);
}

/** Installs; writes what it did with `out`. */
export async function install(args: InstallArgs, out: (line: string) => void): Promise<void> {
  const { root, config, main } = checkout();
  const paths = installPaths((name) => Deno.env.get(name), {
    bin: args.bin,
    cwd: Deno.env.get("INIT_CWD") ?? Deno.cwd(), // deno task runs in the checkout; INIT_CWD is where it was started
    denoVersion: Deno.version.deno,
  });
  for (const path of [paths.bin, paths.deno, root]) {
    // deno-lint-ignore no-control-regex -- refusing control characters is the point
    if (/[\x00-\x1f\x7f]/.test(path)) {
      throw new InstallError(
        `the path "${escapeControl(path)}" has a control character, which a pasted line cannot ` +
          "carry safely; choose another folder",
      );
    }
  }
  if (paths.bin.includes(":")) {
    throw new InstallError(
      `the bin folder "${paths.bin}" has a ":" in its path, which PATH cannot hold; ` +
        "choose another with --bin",
    );
  }
  const show = (path: string) => escapeControl(path);

  // 0. Refuse before writing anything when a stranger's jobs or jobsctl is in the way.
  const existing = new Map<string, boolean>();
  for (const name of LAUNCHER_NAMES) {
    const target = `${paths.bin}/${name}`;
    const before = await readIfExists(target);
    existing.set(name, before !== null);
    if (before !== null && !args.force && !isLauncherText(before)) {
      throw new InstallError(
        `"${show(target)}" exists and is not a jobs launcher; remove it, or pass --force to ` +
          "replace it",
      );
    }
  }

  // 1. Keep this Deno where the launchers can rely on it.
  const deno = paths.deno;
  if (await sameFile(Deno.execPath(), deno)) {
    out(`kept Deno ${Deno.version.deno}: ${show(deno)} (already in place)`);
  } else {
    await Deno.mkdir(deno.slice(0, deno.lastIndexOf("/")), { recursive: true });
    await replaceFile(deno, (tmp) => Deno.copyFile(Deno.execPath(), tmp));
    out(`kept Deno ${Deno.version.deno}: ${show(deno)}`);
  }

  // 2. Cache every dependency with it, so the first `jobsctl` downloads nothing.
  // `--reload=npm:` fetches each package's registry entry as well as its
  // files: a cache filled from the lockfile alone (as `deno task install`
  // itself fills it, before this step) lacks the entries of the packages the
  // library names in full (`npm:zod@4.6.7`), and Deno then fetches them
  // again at every start, so every command would need the network.
  await run(
    `caching the dependencies with "${show(deno)} cache --reload=npm:"`,
    deno,
    ["cache", "--reload=npm:", "--config", config, main],
    root,
  );
  out(`cached the dependencies of ${show(main)}`);

  // 3. The launchers, replaced through a rename.
  await Deno.mkdir(paths.bin, { recursive: true });
  const script = new TextEncoder().encode(launcherScript({ deno, config, main }));
  for (const name of LAUNCHER_NAMES) {
    const target = `${paths.bin}/${name}`;
    await replaceFile(target, (tmp) => Deno.writeFile(tmp, script));
    out(`${existing.get(name) ? "replaced" : "wrote"} ${show(target)}`);
  }

  // 4. Run one: the proof that the launcher, the kept Deno and the cache fit together.
  const launcher = `${paths.bin}/${INSTALLED_NAME}`;
  const version = (await run(`checking "${show(launcher)} version"`, launcher, ["version"], "/"))
    .trim();
  if (version !== versionLine()) {
    throw new InstallError(
      `"${show(launcher)} version" printed "${escapeControl(version)}", not "${versionLine()}"`,
    );
  }
  out(`checked: ${show(launcher)} version -> ${version}`);

  // 5. PATH.
  const path = Deno.env.get("PATH") ?? "";
  out("");
  if (!onPath(paths.bin, path)) {
    for (const line of pathAdvice(paths.bin)) out(line);
  } else {
    const first = findOnPath(INSTALLED_NAME, path);
    const firstText = first === null ? null : await readIfExists(first).catch(() => null);
    if (first !== null && !(firstText !== null && launcherRuns(firstText, main))) {
      out(
        `${show(paths.bin)} is on PATH, but ${show(first)} comes first; put ${
          show(paths.bin)
        } before it, or call ${show(launcher)}`,
      );
    } else {
      out(`${show(paths.bin)} is on PATH: run ${INSTALLED_NAME} --help`);
    }
  }
  out(
    `(${INSTALLED_NAME} and jobs are the same program; type ${INSTALLED_NAME} at a prompt, ` +
      "where jobs is the shell's job-control builtin)",
  );
}

if (import.meta.main) {
  try {
    const args = parseInstallArgs(Deno.args);
    if (args.help) {
      console.log(USAGE);
    } else {
      await install(args, (line) => console.log(line));
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`jobs install: ${message}`);
    Deno.exit(error instanceof InstallError ? error.exitCode : 1);
  }
}
