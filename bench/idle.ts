/**
 * The `idle` phase of the benchmark: what an idle daemon and an idle
 * dashboard cost while nothing happens. `jobs daemon --listen off` runs on a
 * fresh store with no schedules, and then `jobs tui` (in a tmux pane: it
 * needs a terminal) on the same store with nothing else running; once each
 * has started and settled, its CPU time (all threads) is read from
 * /proc over IDLE_S seconds (20), the dashboard's over IDLE_TUI_S (60: it
 * reads and draws once a minute while nothing changes). A daemon that wakes every
 * 2 ms to look for other processes' commits used 34-50 ms of CPU a second;
 * a dashboard that read and drew its screen every second, 20-40.
 *
 * ```sh
 * PHASES=idle deno task bench
 * PHASES=idle IDLE_S=60 RUNS=1 deno task bench
 * ```
 *
 * Linux only (/proc); the dashboard's figure needs tmux and is null without it.
 *
 * @module
 */

import { readLines } from "./shared.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface IdleConfig {
  /** Seconds the daemon is measured, once settled. */
  seconds: number;
  /** Seconds the dashboard is measured: a minute takes in its read while nothing changes. */
  tuiSeconds: number;
  /** Seconds after start-up before the measurement begins. */
  settleS: number;
}

/** CPU ms per second of wall time: the daemon's, and the dashboard's (null without tmux). */
export interface IdleCpu {
  daemonMsPerS: number;
  tuiMsPerS: number | null;
}

const MAIN = new URL("../main.ts", import.meta.url).pathname;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * CPU time of `pid` so far (user and system, every thread's, those ended
 * too), in ms: /proc's clock ticks, 10 ms each, so a window of 20 s reads
 * to 0.5 ms/s. (The threads' `schedstat` is in ns but forgets a thread
 * that ends: Deno's blocking pool ends idle threads.) Read by `cat`: Deno
 * lets only --allow-all read /proc.
 */
async function cpuMs(pid: number): Promise<number> {
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/stat`], stderr: "null" })
    .output();
  // The fields after the command's name, which is in parentheses and may hold spaces.
  const text = new TextDecoder().decode(out.stdout);
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) * 1000 / CLOCK_TICKS;
}

/** The kernel's USER_HZ, which /proc reports times in (100 on every Linux port). */
const CLOCK_TICKS = 100;

/** CPU ms per second that `pid` uses over `seconds` of wall time. */
async function cpuRate(pid: number, seconds: number): Promise<number> {
  const before = await cpuMs(pid);
  const start = performance.now();
  await sleep(seconds * 1000);
  const used = (await cpuMs(pid)) - before;
  return used / ((performance.now() - start) / 1000);
}

/** Runs the phase on the store at `location` (created by the daemon). */
export async function phaseIdle(location: string, cfg: IdleConfig): Promise<IdleCpu> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-bench-idle-" });
  const config = `${dir}/schedules.yaml`;
  await Deno.writeTextFile(config, "version: 1\nqueues:\n  default: { concurrency: 4 }\n");
  try {
    const daemonMsPerS = await idleDaemon(location, config, cfg);
    const tuiMsPerS = await idleTui(location, config, cfg);
    return { daemonMsPerS, tuiMsPerS };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function idleDaemon(location: string, config: string, cfg: IdleConfig): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, "daemon", "--db", location, "--config", config],
    env: { JOBS_LISTEN: "off" },
    stdin: "null",
    stdout: "null",
    // Its log: JSON lines on stderr.
    stderr: "piped",
  }).spawn();
  const lines = readLines(child.stderr);
  try {
    for (;;) {
      const { value, done } = await lines.next();
      if (done) throw new Error("idle: the daemon ended before it started");
      if (value.includes('"daemon.started"')) break;
    }
    // Its log must be read on, or a full pipe would stall it.
    (async () => {
      for await (const _ of lines);
    })();
    await sleep(cfg.settleS * 1000);
    return await cpuRate(child.pid, cfg.seconds);
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

async function idleTui(location: string, config: string, cfg: IdleConfig): Promise<number | null> {
  const tmux = async (...args: string[]) => {
    const out = await new Deno.Command("tmux", { args: ["-L", socket, ...args] }).output();
    if (!out.success) throw new Error(`tmux ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
    return new TextDecoder().decode(out.stdout);
  };
  const socket = `jobs-bench-idle-${Deno.pid}`;
  try {
    await new Deno.Command("tmux", { args: ["-V"], stdout: "null", stderr: "null" }).output();
  } catch {
    return null; // no tmux here
  }
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const command = [
    Deno.execPath(),
    "run",
    "--allow-all",
    MAIN,
    "tui",
    "--db",
    location,
    "--config",
    config,
  ]
    .map(quote).join(" ");
  await tmux("new-session", "-d", "-x", "120", "-y", "40", `exec ${command}`);
  try {
    const pid = Number((await tmux("list-panes", "-F", "#{pane_pid}")).trim());
    const deadline = performance.now() + 30_000;
    while (!(await tmux("capture-pane", "-p")).includes("QUEUE")) {
      if (performance.now() > deadline) {
        throw new Error("idle: the dashboard never drew its overview");
      }
      await sleep(100);
    }
    await sleep(cfg.settleS * 1000);
    return await cpuRate(pid, cfg.tuiSeconds);
  } finally {
    await tmux("kill-server").catch(() => {});
  }
}
