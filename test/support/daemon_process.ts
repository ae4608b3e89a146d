/**
 * Test support for the tests that run `jobs` as real subprocesses (`deno run
 * --allow-all main.ts ...`): `jobs daemon` and the other commands, the
 * daemon's JSON log lines on stderr, and the processes its jobs leave behind.
 *
 * Everything waits by polling with a deadline (`waitUntil`); nothing sleeps
 * to synchronise. Deadlines are generous: these tests share two cores with
 * hundreds of others in CI.
 */

import { fileURLToPath } from "node:url";
import { isPostgresLocation, type OpenedStore, openStore } from "../../src/store/open.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { lines } from "./processes.ts";
import { tempDir } from "./stores.ts";

/** The `jobs` entry point. */
export const MAIN = fileURLToPath(new URL("../../main.ts", import.meta.url));

/** How long a daemon gets to start (module loading on a loaded machine is slow). */
const START_TIMEOUT_MS = 60_000;

/** Poll interval for files and the store: often enough, cheap enough. */
export const POLL = { intervalMs: 100 } as const;

/** One JSON log line of the daemon (or `{ event: "text", line }` for anything else). */
export type LogEvent = Record<string, unknown> & { event: string };

/** A running `jobs daemon` subprocess and what it has logged so far. */
export interface DaemonProcess {
  /** Every line of stderr so far, parsed. */
  readonly events: LogEvent[];
  /** How the daemon exited, or null while it runs. */
  readonly exited: Deno.CommandStatus | null;
  /** Resolves with the first event named `event` (and matching `match`), waiting up to `timeoutMs`. */
  waitFor(
    event: string,
    match?: (e: LogEvent) => boolean,
    timeoutMs?: number,
  ): Promise<LogEvent>;
  /** Sends `signal` and waits for the exit and the end of stderr. */
  stop(signal?: Deno.Signal, timeoutMs?: number): Promise<Deno.CommandStatus>;
  /** The log so far, for assertion messages. */
  log(): string;
  /** Kills the daemon with SIGKILL if it is still running (for `finally`). */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Options of {@linkcode spawnDaemon}. */
export interface SpawnOptions {
  /** Who the daemon is in wait messages. @default "daemon" */
  name?: string;
  /** More environment for the daemon, which its commands inherit. */
  env?: Record<string, string>;
  /** Kills the daemon when it aborts, e.g. `AbortSignal.timeout(60_000)`. */
  signal?: AbortSignal;
}

/**
 * Spawns `jobs daemon <args>` and collects its stderr as log events; returns
 * at once, without waiting for it to start.
 */
export function spawnDaemon(args: string[], options: SpawnOptions = {}): DaemonProcess {
  const name = options.name ?? "daemon";
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, "daemon", ...args],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1", ...options.env },
    signal: options.signal,
  }).spawn();
  const events: LogEvent[] = [];
  const reading = (async () => {
    for await (const line of lines(child.stderr)) {
      try {
        const parsed = JSON.parse(line);
        events.push(typeof parsed?.event === "string" ? parsed : { event: "text", line });
      } catch {
        events.push({ event: "text", line });
      }
    }
  })();
  let exited: Deno.CommandStatus | null = null;
  const status = child.status.then((s) => (exited = s));
  const log = () => events.map((e) => JSON.stringify(e)).join("\n");

  return {
    events,
    get exited() {
      return exited;
    },
    log,
    waitFor: (event, match = () => true, timeoutMs = 30_000) =>
      waitUntil(`${name}: log event ${event}`, () => {
        const found = events.find((e) => e.event === event && match(e));
        if (found) return found;
        if (exited) {
          throw new Error(`${name} exited (${exited.code}) before ${event}:\n${log()}`);
        }
        return undefined;
      }, { timeoutMs, ...POLL }),
    async stop(signal = "SIGTERM", timeoutMs = 60_000) {
      if (!exited) {
        try {
          child.kill(signal);
        } catch {
          // Exited meanwhile: the status below says how.
        }
      }
      const result = await waitUntil(`${name} to exit after ${signal}`, () => exited, {
        timeoutMs,
        ...POLL,
      });
      await reading;
      return result;
    },
    async [Symbol.asyncDispose]() {
      if (!exited) {
        try {
          child.kill("SIGKILL");
        } catch {
          // Exited meanwhile.
        }
      }
      await status;
      await reading;
    },
  };
}

/** Options of {@linkcode startDaemon}. */
export interface StartOptions {
  db: string;
  config: string;
  node: string;
  /** More `jobs daemon` options, e.g. `["--shutdown-grace", "1000"]`. */
  args?: string[];
  /** More environment for the daemon, which its commands inherit. */
  env?: Record<string, string>;
}

/**
 * Starts `jobs daemon` with `--listen off` and waits until its node is
 * registered in the store (a store fact, not the wording of a log line).
 */
export async function startDaemon(options: StartOptions): Promise<DaemonProcess> {
  const { db, config, node } = options;
  const daemon = spawnDaemon(
    ["--db", db, "--config", config, "--node", node, "--listen", "off", ...(options.args ?? [])],
    { name: node, env: options.env },
  );
  try {
    await waitUntil(`${node} to register in the store`, async () => {
      const exited = daemon.exited;
      if (exited) throw new Error(`${node} exited (${exited.code}) at start:\n${daemon.log()}`);
      return await registered(db, node);
    }, { timeoutMs: START_TIMEOUT_MS, intervalMs: 250 });
  } catch (error) {
    await daemon[Symbol.asyncDispose]();
    throw error;
  }
  return daemon;
}

/** A temp dir with where a daemon test keeps its store, config and ledger; removed on dispose. */
export async function daemonDir(): Promise<
  {
    path: string;
    db: string;
    config: string;
    ledger: string;
    [Symbol.asyncDispose](): Promise<void>;
  }
> {
  const dir = await tempDir();
  return {
    path: dir.path,
    db: `${dir.path}/jobs.db`,
    config: `${dir.path}/schedules.yaml`,
    ledger: `${dir.path}/ledger`,
    [Symbol.asyncDispose]: dir.cleanup,
  };
}

/**
 * Whether `node` has a row in `nodes` of the store at `db` (false while there
 * is no file yet, or for PostgreSQL no schema at the current version).
 */
async function registered(db: string, node: string): Promise<boolean> {
  if (isPostgresLocation(db)) {
    let opened: OpenedStore;
    try {
      opened = await openStore(db, { mode: "read" });
    } catch {
      return false;
    }
    try {
      return (await opened.store.nodesList()).some((row) => row.node === node);
    } finally {
      await opened.store.close();
    }
  }
  try {
    await Deno.stat(db);
  } catch {
    return false;
  }
  const store = await openSqliteStore(db);
  try {
    return (await store.nodesList()).some((row) => row.node === node);
  } finally {
    await store.close();
  }
}

/** Runs one `jobs` command line as a subprocess; its exit code and output. */
export async function jobsCommand(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", USER: "e2e-operator" },
    signal: AbortSignal.timeout(60_000),
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** The non-empty lines of a file, or none while it does not exist. */
export async function readLines(path: string): Promise<string[]> {
  try {
    return (await Deno.readTextFile(path)).split("\n").filter((line) => line !== "");
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/**
 * Whether process `pid` is alive, from /proc. A zombie counts as gone: the
 * sandbox's PID 1 does not reap orphans, so an exited child can stay in
 * state Z for good.
 */
export function processAlive(pid: number): boolean {
  let stat: string;
  try {
    stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return false;
  }
  const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  return state !== "Z" && state !== "X";
}

/** SIGKILL to process group `pgid`, ignoring a group that is already gone (for `finally`). */
export function killGroup(pgid: number): void {
  // kill(-1) would signal every process we may signal, and kill(-0) our own group.
  if (!Number.isInteger(pgid) || pgid <= 1) throw new RangeError(`not a process group: ${pgid}`);
  try {
    Deno.kill(-pgid, "SIGKILL");
  } catch {
    // ESRCH: nothing left.
  }
}

/** The pids written into `path` (whitespace separated), for cleanup; none when missing. */
export async function pidsIn(path: string): Promise<number[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split(/\s+/).filter((w) => /^\d+$/.test(w)).map(Number);
}
