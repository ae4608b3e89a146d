/**
 * The `memory` phase of the benchmark: the resident memory of a real `jobs
 * daemon` process (`main.ts daemon`) while it drains a backlog of MEM_N
 * (default 1,000,000) available no-op jobs, and of an idle daemon on an
 * empty store.
 *
 * ```sh
 * PHASES=memory RUNS=3 deno task bench
 * PHASES=memory RUNS=1 MEM_N=100000 deno task bench
 * ```
 *
 * Each pass, on fresh stores (SQLite files, or schemas of `BENCH_DB`):
 *
 * 1. Idle: a daemon starts on an empty store; once its node is registered
 *    it is left alone for MEM_IDLE_MS (3 s, the one wait that is not a poll:
 *    it is what is measured), and its RSS is read then.
 * 2. Backlog: MEM_N no-op jobs are enqueued through the library
 *    (`enqueueMany`, MEM_CHUNK to a transaction), the library's handle is
 *    closed, and a daemon starts on that store with a `schedules.yaml`
 *    whose `workers:` module defines the no-op worker on queue `default`
 *    (concurrency 10, as in the other phases). Its VmRSS is sampled from
 *    /proc every MEM_SAMPLE_MS until the store reports all MEM_N jobs
 *    completed (with a deadline, MEM_TIMEOUT_MS).
 *
 * Progress comes from the daemon's log, which this process reads from a
 * pipe (a `job.stop` line per job) and drops but for its last lines, shown
 * when the daemon fails. The store is asked for the completed count every
 * 10 s, and every MEM_POLL_MS once the log shows every job stopped: counting
 * a million rows every few hundred ms would halve the drain it measures.
 *
 * It reports the peak RSS (the kernel's high-water mark, VmHWM, which
 * includes start-up), the RSS at 10 % and at 90 % of the drain (the median
 * of the samples taken while the log went from 5 % to 15 % of the jobs
 * stopped, and from 85 % to 95 %; a flat RSS has these close), the drain
 * rate (MEM_N over the time from the node's registration to the poll that
 * found every job completed), and the idle RSS. MB here are MiB (VmRSS kB /
 * 1024).
 *
 * What a flat RSS looks like (`--v8-flags=--trace-gc` on a daemon draining
 * 300,000 jobs): the live heap after each mark-compact stays at 15-17 MB,
 * while V8 keeps 80-100 MB of heap committed at that allocation rate (a
 * JSON log line per job start and stop, a row per claim and result); about
 * 10 s after the drain its memory reducer hands most of it back and the RSS
 * falls to where the idle daemon's is.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { defineWorker, openJobs, silentLogger } from "../src/mod.ts";
import { openStore, type Store } from "../src/store.ts";
import { CONCURRENCY, NOOP } from "./shared.ts";
import { withFreshStore } from "./stores.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface MemoryConfig {
  /** Available no-op jobs in the backlog. */
  n: number;
  /** Jobs per `enqueueMany` call while the backlog is built. */
  chunk: number;
  /** How long the idle daemon sits before its RSS is read, in ms. */
  idleMs: number;
  /** Interval of the RSS samples, in ms. */
  sampleMs: number;
  /** Interval of the completed-count polls, in ms. */
  pollMs: number;
  /** Give up on the start of a daemon, or on the drain, after this many ms. */
  timeoutMs: number;
}

/** What one pass of the phase measured (RSS in MiB). */
export interface MemoryFigures {
  buildMs: number;
  peakRssMb: number;
  rss10Mb: number;
  rss90Mb: number;
  drainPerS: number;
  idleRssMb: number;
}

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));
const MOD = new URL("../src/mod.ts", import.meta.url).href;
const NODE = "memory-bench";
/** Lines of the daemon's log kept to explain a failure. */
const LOG_TAIL = 20;
/** How a `job.stop` line of the daemon's JSON log reads. */
const STOP = '"event":"job.stop"';
/** How often the drain asks the store for its completed count before the log shows the end. */
const STORE_POLL_MS = 10_000;
/** Half the share of the drain whose samples make "the RSS at 10 %" (and at 90 %). */
const WINDOW = 0.05;

/** Runs the idle daemon, then the backlog's, each on a fresh store of `db` (null: a SQLite file). */
export async function phaseMemory(
  db: string | null,
  cfg: MemoryConfig,
  log: (message: string) => void,
): Promise<MemoryFigures> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-bench-memory-" });
  try {
    const config = await writeConfig(dir);
    const idleRssMb = await withFreshStore(db, (location) => idle(location, config, dir, cfg));
    log(`  idle daemon: ${idleRssMb.toFixed(1)} MB after ${cfg.idleMs} ms`);
    const drained = await withFreshStore(db, async (location) => {
      const started = performance.now();
      await build(location, cfg);
      const buildMs = performance.now() - started;
      log(`  built ${cfg.n.toLocaleString("en-US")} jobs in ${(buildMs / 1000).toFixed(1)} s`);
      return { buildMs, ...await drain(location, config, dir, cfg, log) };
    });
    return { ...drained, idleRssMb };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The daemon's `schedules.yaml` and its workers module (the no-op worker); returns the file's path. */
async function writeConfig(dir: string): Promise<string> {
  const workers = `${dir}/workers.ts`;
  await Deno.writeTextFile(
    workers,
    `import { defineWorker } from ${JSON.stringify(MOD)};\n` +
      `export const noop = defineWorker<{ i: number }>({ name: ${
        JSON.stringify(NOOP)
      }, perform: () => {} });\n`,
  );
  const config = `${dir}/schedules.yaml`;
  await Deno.writeTextFile(
    config,
    `version: 1\nworkers: ${
      JSON.stringify(workers)
    }\nqueues:\n  default: { concurrency: ${CONCURRENCY} }\nschedules: []\n`,
  );
  return config;
}

/** Enqueues `cfg.n` available no-op jobs through the library, `cfg.chunk` a call. */
async function build(location: string, cfg: MemoryConfig): Promise<void> {
  const noop = defineWorker<{ i: number }>({ name: NOOP, perform: () => {} });
  const jobs = await openJobs(location, { workers: [noop], logger: silentLogger });
  try {
    for (let off = 0; off < cfg.n; off += cfg.chunk) {
      const entries = [];
      for (let i = off; i < Math.min(cfg.n, off + cfg.chunk); i++) {
        entries.push({ worker: noop, args: { i } });
      }
      await jobs.enqueueMany(entries);
    }
    const available = count(await jobs.store.jobsCount({ state: "available" }));
    if (available !== cfg.n) {
      throw new Error(`memory: ${available} jobs available after the build, expected ${cfg.n}`);
    }
  } finally {
    await jobs.close();
  }
}

/** The RSS (MiB) of a daemon on the empty store at `location`, `cfg.idleMs` after its node registered. */
async function idle(
  location: string,
  config: string,
  dir: string,
  cfg: MemoryConfig,
): Promise<number> {
  // `create` migrates the empty store as `jobs migrate` would: the daemon's own start does the same.
  await (await openStore(location, { mode: "create" })).store.close();
  const { store } = await openStore(location, { mode: "read" });
  const daemon = new Daemon(location, config, dir);
  try {
    await daemon.registered(store, cfg);
    await sleep(cfg.idleMs);
    const rss = (await daemon.rss()).rssKb / 1024;
    await daemon.stop(cfg);
    return rss;
  } finally {
    await daemon.kill();
    await store.close();
  }
}

/** The daemon's RSS while it drains the backlog at `location`. */
async function drain(
  location: string,
  config: string,
  dir: string,
  cfg: MemoryConfig,
  log: (message: string) => void,
): Promise<Omit<MemoryFigures, "buildMs" | "idleRssMb">> {
  const { store } = await openStore(location, { mode: "read" });
  const daemon = new Daemon(location, config, dir);
  const samples: { at: number; rssKb: number; anonKb: number; fileKb: number }[] = [];
  let hwmKb = 0;
  let sampling: Promise<void> | null = null;
  const sample = () =>
    sampling ??= daemon.rss().then(({ rssKb, hwmKb: hwm, anonKb, fileKb }) => {
      samples.push({ at: performance.now(), rssKb, anonKb, fileKb });
      hwmKb = Math.max(hwmKb, hwm);
    }).catch(() => {
      // Exited between two samples: the poll below says why.
    }).finally(() => sampling = null);
  const sampler = setInterval(sample, cfg.sampleMs);
  try {
    const t0 = await daemon.registered(store, cfg);
    await sample();
    // Progress from the daemon's log (cheap to read here); the store is
    // asked only every STORE_POLL_MS, and then once the log shows every job
    // stopped, until it reports them all completed: counting 1,000,000 rows
    // every few hundred ms would slow the daemon it measures.
    const progress: { at: number; stopped: number }[] = [];
    const deadline = t0 + cfg.timeoutMs;
    let done = 0;
    let doneAt = 0;
    let storePollAt = t0 + STORE_POLL_MS;
    let nextLog = cfg.n / 4;
    while (done < cfg.n) {
      if (performance.now() > deadline) {
        throw new Error(
          `memory: ${done} of ${cfg.n} jobs completed (the log shows ${daemon.stopped} stopped) ` +
            `after ${cfg.timeoutMs} ms\n${daemon.log()}`,
        );
      }
      if (daemon.exited) {
        throw new Error(`memory: the daemon exited during the drain\n${daemon.log()}`);
      }
      await sleep(cfg.pollMs);
      const stopped = daemon.stopped;
      progress.push({ at: performance.now(), stopped });
      if (stopped >= cfg.n || performance.now() >= storePollAt) {
        done = count(await store.jobsCount({ state: "completed" }));
        doneAt = performance.now();
        storePollAt = doneAt + STORE_POLL_MS;
      }
      const last = samples.at(-1);
      if (stopped >= nextLog && stopped < cfg.n && last) {
        const mb = (kb: number) => (kb / 1024).toFixed(1);
        log(
          `  ${stopped.toLocaleString("en-US")} stopped, RSS ${mb(last.rssKb)} MB ` +
            `(anonymous ${mb(last.anonKb)}, file ${mb(last.fileKb)})`,
        );
        nextLog += cfg.n / 4;
      }
    }
    clearInterval(sampler);
    await sampling;
    await sample();
    await daemon.stop(cfg);
    const all = await store.jobsCount({});
    const total = count(all);
    if (total !== cfg.n) {
      throw new Error(
        `memory: ${total} jobs in the store after the drain, expected ${cfg.n}: ${
          JSON.stringify(all)
        }`,
      );
    }
    // The median of the samples while the drain went from fraction - 5 % to
    // fraction + 5 %: one sample lands anywhere on the collector's sawtooth.
    const when = (fraction: number) =>
      progress.find((p) => p.stopped >= fraction * cfg.n)?.at ?? doneAt;
    const rssAt = (fraction: number): number => {
      const from = when(fraction - WINDOW);
      const to = when(fraction + WINDOW);
      const inside = samples.filter((s) => s.at >= from && s.at <= to).map((s) => s.rssKb);
      if (inside.length === 0) {
        const at = when(fraction);
        let nearest = samples[0]!;
        for (const s of samples) if (Math.abs(s.at - at) < Math.abs(nearest.at - at)) nearest = s;
        return nearest.rssKb / 1024;
      }
      inside.sort((a, b) => a - b);
      return inside[inside.length >> 1]! / 1024;
    };
    const peakKb = Math.max(hwmKb, ...samples.map((s) => s.rssKb));
    return {
      peakRssMb: peakKb / 1024,
      rss10Mb: rssAt(0.1),
      rss90Mb: rssAt(0.9),
      drainPerS: cfg.n / ((doneAt - t0) / 1000),
    };
  } finally {
    clearInterval(sampler);
    await sampling;
    await daemon.kill();
    await store.close();
  }
}

/** `jobs daemon` as a real subprocess, its log read and dropped but for the tail. */
class Daemon {
  readonly #process: Deno.ChildProcess;
  readonly #reading: Promise<void>;
  /** The last lines of its log. */
  #tail: string[] = [];
  /** `job.stop` events in its log so far. */
  stopped = 0;
  #status: Deno.CommandStatus | null = null;

  constructor(location: string, config: string, dir: string) {
    this.#process = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        MAIN,
        "daemon",
        "--db",
        location,
        "--config",
        config,
        "--node",
        NODE,
        "--listen",
        "off",
        "--state-dir",
        `${dir}/state`,
        "--shutdown-grace",
        "5000",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    this.#process.status.then((s) => this.#status = s);
    this.#reading = this.#read();
  }

  async #read(): Promise<void> {
    let partial = "";
    for await (const text of this.#process.stderr.pipeThrough(new TextDecoderStream())) {
      const lines = (partial + text).split("\n");
      partial = lines.pop()!;
      for (const line of lines) if (line.includes(STOP)) this.stopped++;
      this.#tail = [...this.#tail, ...lines.slice(-LOG_TAIL)].slice(-LOG_TAIL);
    }
    if (partial) this.#tail = [...this.#tail, partial].slice(-LOG_TAIL);
  }

  get exited(): boolean {
    return this.#status !== null;
  }

  /** The last lines of its log, for an error message. */
  log(): string {
    return `daemon ${this.#process.pid}, the last lines of its log:\n${this.#tail.join("\n")}`;
  }

  /**
   * VmRSS and VmHWM of the process, in kB, from /proc. Through `cat`: Deno
   * lets only `--allow-all` read /proc, and the bench task runs without it.
   */
  async rss(): Promise<{ rssKb: number; hwmKb: number; anonKb: number; fileKb: number }> {
    const path = `/proc/${this.#process.pid}/status`;
    const out = await new Deno.Command("cat", { args: [path], stdout: "piped", stderr: "null" })
      .output();
    if (!out.success) throw new Error(`memory: cannot read ${path} (the daemon exited?)`);
    const status = new TextDecoder().decode(out.stdout);
    const field = (name: string) => {
      const match = new RegExp(`^${name}:\\s+(\\d+) kB$`, "m").exec(status);
      if (!match) throw new Error(`memory: no ${name} in ${path}`);
      return Number(match[1]);
    };
    return {
      rssKb: field("VmRSS"),
      hwmKb: field("VmHWM"),
      anonKb: field("RssAnon"),
      fileKb: field("RssFile"),
    };
  }

  /** Polls `store` until the daemon's node is registered; returns when it saw it. */
  async registered(store: Store, cfg: MemoryConfig): Promise<number> {
    const deadline = performance.now() + cfg.timeoutMs;
    while (true) {
      if (this.exited) throw new Error(`memory: the daemon exited at start\n${this.log()}`);
      if ((await store.nodesList()).some((row) => row.node === NODE)) return performance.now();
      if (performance.now() > deadline) {
        throw new Error(
          `memory: the daemon did not register within ${cfg.timeoutMs} ms\n${this.log()}`,
        );
      }
      await sleep(50);
    }
  }

  /** SIGTERM, then waits (with a deadline) for a clean exit. */
  async stop(cfg: MemoryConfig): Promise<void> {
    this.#process.kill("SIGTERM");
    const deadline = performance.now() + Math.min(cfg.timeoutMs, 60_000);
    while (this.#status === null) {
      if (performance.now() > deadline) {
        throw new Error(`memory: the daemon did not exit after SIGTERM\n${this.log()}`);
      }
      await sleep(50);
    }
    await this.#reading;
    if (!this.#status.success) {
      throw new Error(`memory: the daemon exited with ${this.#status.code}\n${this.log()}`);
    }
  }

  /** SIGKILL if it still runs (after a failure). */
  async kill(): Promise<void> {
    if (this.#status === null) {
      try {
        this.#process.kill("SIGKILL");
      } catch {
        // Exited meanwhile.
      }
    }
    await this.#process.status;
    await this.#reading;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function count(rows: { count: number }[]): number {
  return rows.reduce((sum, row) => sum + row.count, 0);
}
