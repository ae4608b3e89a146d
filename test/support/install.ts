/**
 * Test support for the installer's end-to-end tests: a clean HOME, an
 * environment with no Deno on PATH, `deno task install` run into it, and
 * command lines run the way a person pastes them into bash.
 *
 * The environment keeps the parent's (certificate settings and the like)
 * but drops every `JOBS_*` and `XDG_*`, `INIT_CWD` and `DENO_INSTALL_ROOT`, and points `DENO_DIR` at
 * a copy of the test process's cache, so the kept Deno finds the npm packages
 * there instead of downloading them all into the fresh HOME. A copy, never
 * the cache itself: the installer runs `deno cache --reload=npm:`, which
 * rewrites the packages' files while the other tests' daemons load them
 * (CI saw a daemon read a half-written zod module and fail at start).
 */

import { fileURLToPath } from "node:url";
import { tempDir } from "./stores.ts";

/** The checkout under test (ends without a slash). */
export const CHECKOUT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");

/** A PATH with the system's tools and no Deno. */
export const BARE_PATH = "/usr/bin:/bin";

/** What a subprocess printed and how it ended. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

let cachedDenoDir: Promise<string> | undefined;

/** The DENO_DIR this test process uses (`DENO_DIR`, else what `deno info` reports). */
export function denoDir(): Promise<string> {
  cachedDenoDir ??= (async () => {
    const set = Deno.env.get("DENO_DIR");
    if (set) return set;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json"],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    return (JSON.parse(new TextDecoder().decode(out.stdout)) as { denoDir: string }).denoDir;
  })();
  return cachedDenoDir;
}

/** A temporary folder holding a HOME with no dotfiles, and the environment to use it with. */
export interface CleanHome {
  /** The temporary folder around everything (its name has a space). */
  root: string;
  home: string;
  /** `$HOME/.local/bin`, where the installer puts the launchers by default. */
  bin: string;
  /** The environment with this HOME and `path` as PATH (default: no Deno on it). */
  env(path?: string): Record<string, string>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Variables of the parent that would point the child at the parent's folders. */
const DROPPED = new Set(["INIT_CWD", "DENO_DIR", "DENO_INSTALL_ROOT"]);

/**
 * Makes a clean HOME whose path has a space, so every quote of the installer
 * is exercised. DENO_DIR is a copy of this process's cache in it; with
 * `freshCache`, an empty folder (the packages come from the npm registry), as
 * on a machine that never ran Deno.
 */
export async function cleanHome(options: { freshCache?: boolean } = {}): Promise<CleanHome> {
  const dir = await tempDir();
  const root = `${dir.path}/with space`;
  const home = `${root}/home dir`;
  await Deno.mkdir(home, { recursive: true });
  const cache = `${root}/deno cache`;
  if (!options.freshCache) await copyFolder(await denoDir(), cache);
  const inherited = Object.entries(Deno.env.toObject())
    .filter(([name]) => !/^(JOBS_|XDG_)/.test(name) && !DROPPED.has(name));
  return {
    root,
    home,
    bin: `${home}/.local/bin`,
    env: (path = BARE_PATH) => ({
      ...Object.fromEntries(inherited),
      HOME: home,
      PATH: path,
      DENO_DIR: cache,
      NO_COLOR: "1",
      USER: "install-e2e",
    }),
    [Symbol.asyncDispose]: dir.cleanup,
  };
}

/**
 * Copies the folder `from` to `to` (which must not exist) with `cp -a`. A
 * file that went away while it was copied is not a failure: other tests'
 * Deno processes keep writing the cache, whose V8 code cache has a WAL that
 * comes and goes (`cannot stat '.../v8_code_cache_v2-wal'` on a busy machine).
 */
async function copyFolder(from: string, to: string): Promise<void> {
  const out = await new Deno.Command("cp", { args: ["-a", from, to], stderr: "piped" }).output();
  if (out.success) return;
  const errors = new TextDecoder().decode(out.stderr).split("\n").filter((line) => line !== "");
  const vanished = /cannot stat '.*': No such file or directory$/;
  if (errors.length > 0 && errors.every((line) => vanished.test(line))) return;
  throw new Error(`cp -a "${from}" "${to}" failed: ${errors.join("\n")}`);
}

/** Runs `cmd args` in `cwd` with exactly `env`, stdin closed; gives up after `timeoutMs` (60 s). */
export async function runIn(
  cwd: string,
  env: Record<string, string>,
  cmd: string,
  args: string[],
  timeoutMs = 60_000,
): Promise<Ran> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/**
 * `deno task install ...args` in `checkout`, with this test's Deno (PATH need
 * not hold one). Into an empty Deno cache it downloads every npm package of
 * `deno.json` (the task itself installs them before the script caches its
 * graph), which on a busy machine takes well over a minute: it gets three.
 */
export function runInstall(
  checkout: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<Ran> {
  return runIn(checkout, env, Deno.execPath(), ["task", "install", ...args], 180_000);
}

/** Top-level entries of the checkout that the program does not need to run. */
const NOT_NEEDED = new Set([".git", ".tools", ".ci", "node_modules", "dist", "bench", "test"]);

/** Copies what the program needs of this checkout (sources, deno.json, deno.lock) to `to`. */
export async function copyCheckout(to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(CHECKOUT)) {
    if (NOT_NEEDED.has(entry.name) || /\.db($|-wal$|-shm$|\.groups$)/.test(entry.name)) continue;
    const copied = await new Deno.Command("cp", {
      args: ["-R", `${CHECKOUT}/${entry.name}`, `${to}/${entry.name}`],
      stderr: "piped",
    }).output();
    if (copied.code !== 0) {
      throw new Error(`cp ${entry.name} failed: ${new TextDecoder().decode(copied.stderr)}`);
    }
  }
}
