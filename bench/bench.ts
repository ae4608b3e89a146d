/**
 * The benchmark: enqueue throughput, processing throughput in this process,
 * in one child process and in three sharing the store, and enqueue-to-start
 * latency in the same process and across processes. The workload matches
 * the peers' harness (`/work/shared/bench-peers/lib/harness.mjs`), so the
 * numbers compare.
 *
 * ```sh
 * deno task bench                              # every phase, RUNS=3
 * PHASES=process,latency RUNS=1 deno task bench
 * PHASES=process1,process3 deno task bench     # 3 processes on one store against 1
 * PHASES=tui deno task bench                   # the dashboard's reads at 100,000 jobs
 * PHASES=prune RUNS=1 deno task bench          # the pruner on 1,000,000 final jobs
 * PHASES=workflow deno task bench              # a workflow step against a plain job
 * PHASES=report deno task bench                # a report's CSV export, SQLite and PostgreSQL sources
 * PHASES=limit,process,process3,bulk,single deno task bench   # each against what SQLite allows
 * PHASES=idle deno task bench                  # CPU of an idle daemon and an idle dashboard
 * PHASES=console RUNS=1 deno task bench        # the web console at 1,000,000 jobs, SQLite and PostgreSQL
 * PHASES=work RUNS=3 deno task bench           # a work queue of 100,000 open items, SQLite and PostgreSQL
 * PHASES=flow deno task bench                  # global and partition limits against none
 * BENCH_DB=postgres://postgres@127.0.0.1:5432/test deno task bench   # the same on PostgreSQL
 * ```
 *
 * Each phase runs RUNS times on a fresh store: a temporary SQLite file, or
 * with `BENCH_DB` a new schema of that PostgreSQL database, dropped after
 * the phase (see `stores.ts`). The table shows median, min and max over the
 * runs (latency percentiles within a run are nearest-rank, as in the
 * harness), and the last line of stdout is one JSON object with the
 * medians and the store (`"store": "sqlite" | "postgres"`). Progress goes
 * to stderr.
 *
 * @module
 */

import { defineWorker, type JobContext, type Jobs, openJobs, silentLogger } from "../src/mod.ts";
import { completedOf, CONCURRENCY, epochNow, NOOP } from "./shared.ts";
import { phasePrune } from "./prune.ts";
import { benchDb, storeKind, withFreshStore } from "./stores.ts";
import { phaseTui } from "./tui.ts";
import { phaseWorkflow } from "./workflow.ts";
import { phaseLimit } from "./limit.ts";
import { Child } from "./child_process.ts";
import { phaseMemory } from "./memory.ts";
import { phaseIdle } from "./idle.ts";
import { CAPPED_OLD_SPACE_MB, phaseIngest } from "./ingest.ts";
import { phaseReport } from "./report.ts";
import { type BulkTimes, type ConsoleTimes, phaseConsole, phaseConsoleBulk } from "./console.ts";
import { phaseWork, type WorkTimes } from "./work.ts";
import { phaseFlow } from "./flow.ts";

const ALL_PHASES = [
  "bulk",
  "single",
  "process",
  "process1",
  "process3",
  "connections3",
  "latency",
  "cross",
  "tui",
  "prune",
  "workflow",
  "limit",
  "memory",
  "ingest",
  "report",
  "idle",
  "flow",
  // Opt-in (PHASES=console): two stores of 1,000,000 jobs take minutes to build.
  "console",
  // Opt-in (PHASES=work): two stores of 100,000 work items take a minute or more to build.
  "work",
] as const;
/** The phases a run without PHASES runs. */
const DEFAULT_PHASES = ALL_PHASES.filter((p) => p !== "console" && p !== "work");
type Phase = typeof ALL_PHASES[number];

const env = (name: string, fallback: number): number => {
  const raw = Deno.env.get(name);
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative number, got "${raw}"`);
  }
  return value;
};

const CFG = {
  runs: env("RUNS", 3),
  /** Jobs in the bulk and process phases. */
  n: env("N", 20_000),
  chunk: env("BULK_CHUNK", 1000),
  singleN: env("SINGLE_N", 2000),
  latN: env("LAT_N", 200),
  latGapMs: env("LAT_GAP_MS", 20),
  /** How long the worker sits idle before the latency jobs come. */
  idleMs: env("IDLE_MS", 1000),
  processes: env("PROCESSES", 3),
  /** Jobs in the store the tui phase reads. */
  tuiN: env("TUI_N", 100_000),
  /** Times the tui phase repeats each read (it reports the median). */
  tuiReps: env("TUI_REPS", 9),
  /** Final jobs in the backlog the prune phase deletes. */
  pruneN: env("PRUNE_N", 1_000_000),
  /** Rows per transaction of the pruner in the prune phase (the daemon's default). */
  pruneBatch: env("PRUNE_BATCH", 1000),
  /** Plain no-op jobs the workflow phase sets its steps against. */
  wfJobs: env("WF_JOBS", 10_000),
  /** Runs of the 3-step linear workflow in the workflow phase. */
  wfLinearRuns: env("WF_LINEAR_RUNS", 2000),
  /** Runs of the fan-out workflow (list -> WF_FANOUT_ITEMS items -> fan-in). */
  wfFanoutRuns: env("WF_FANOUT_RUNS", 60),
  wfFanoutItems: env("WF_FANOUT_ITEMS", 100),
  /** Jobs the flow phase drains each way (none, global, partition). */
  flowN: env("FLOW_N", 10_000),
  /** Runtimes (connections) in the flow phase, CONCURRENCY slots each. */
  flowRuntimes: env("FLOW_RUNTIMES", 3),
  /** How long each flow job takes, ms (0: no-op jobs). */
  flowJobMs: env("FLOW_JOB_MS", 10),
  pollMs: 5,
  timeoutMs: env("TIMEOUT_MS", 60_000),
};

const PHASES: Phase[] = (Deno.env.get("PHASES") ?? DEFAULT_PHASES.join(","))
  .split(",")
  .map((p) => p.trim())
  .filter((p) => p !== "")
  .map((p) => {
    if (!(ALL_PHASES as readonly string[]).includes(p)) {
      throw new RangeError(`PHASES: unknown phase "${p}", expected one of ${ALL_PHASES.join(",")}`);
    }
    return p as Phase;
  });

const CHILD = new URL("./child.ts", import.meta.url).pathname;

/** `BENCH_DB` (PostgreSQL), or null for SQLite files. */
const DB = benchDb();
const STORE = storeKind(DB);

// ------------------------------------------------------------------ helpers

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function log(message: string): void {
  console.error(`[${new Date().toISOString().slice(11, 23)}] ${message}`);
}

/** Nearest-rank quantile of an ascending array, as the peers' harness computes it. */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx]!;
}

async function waitFor(
  what: () => string,
  pred: () => boolean | Promise<boolean>,
  intervalMs: number,
): Promise<void> {
  const deadline = performance.now() + CFG.timeoutMs;
  while (!(await pred())) {
    if (performance.now() > deadline) {
      throw new Error(`timeout after ${CFG.timeoutMs} ms waiting for ${what()}`);
    }
    await sleep(intervalMs);
  }
}

/** Runs `fn` on a fresh store (file or schema, see `stores.ts`), then removes it. */
function withFresh<T>(fn: (location: string) => Promise<T>): Promise<T> {
  return withFreshStore(DB, fn);
}

type Perform = (args: { i: number }, ctx: JobContext) => void;

function open(location: string, perform: Perform = () => {}): Promise<Jobs> {
  const noop = defineWorker<{ i: number }>({ name: NOOP, perform });
  return openJobs(location, { workers: [noop], logger: silentLogger });
}

/**
 * Completed jobs, as the store reports them. The phases ask only once the
 * handlers have run N times (as the peers' harness does): counting costs
 * 10-20 ms at 20,000 rows, and polling it every 5 ms from the runtime's own
 * thread would measure the benchmark instead of the queue.
 */
async function completed(jobs: Jobs): Promise<number> {
  return completedOf(await jobs.store.jobsCount({ state: "completed" }));
}

async function prefill(jobs: Jobs, n: number): Promise<void> {
  for (let off = 0; off < n; off += CFG.chunk) {
    const entries = [];
    for (let i = off; i < Math.min(n, off + CFG.chunk); i++) {
      entries.push({ worker: NOOP, args: { i } });
    }
    await jobs.enqueueMany(entries);
  }
}

// ------------------------------------------------------------------- phases

/** jobs/s of `enqueueMany` in chunks of BULK_CHUNK. */
function phaseBulk(): Promise<number> {
  return withFresh(async (location) => {
    const jobs = await open(location);
    try {
      const t0 = performance.now();
      await prefill(jobs, CFG.n);
      const seconds = (performance.now() - t0) / 1000;
      const rows = await jobs.store.jobsCount({});
      const available = rows.filter((r) => r.state === "available").reduce(
        (s, r) => s + r.count,
        0,
      );
      if (available !== CFG.n) throw new Error(`bulk: ${available} available, expected ${CFG.n}`);
      return CFG.n / seconds;
    } finally {
      await jobs.close();
    }
  });
}

/** jobs/s of `enqueue`, one awaited call each. */
function phaseSingle(): Promise<number> {
  return withFresh(async (location) => {
    const jobs = await open(location);
    try {
      const t0 = performance.now();
      for (let i = 0; i < CFG.singleN; i++) await jobs.enqueue(NOOP, { i });
      const seconds = (performance.now() - t0) / 1000;
      const rows = await jobs.store.jobsCount({});
      const total = rows.reduce((s, r) => s + r.count, 0);
      if (total !== CFG.singleN) throw new Error(`single: ${total} jobs, expected ${CFG.singleN}`);
      return CFG.singleN / seconds;
    } finally {
      await jobs.close();
    }
  });
}

/**
 * jobs/s from `start` until the store reports N completed: `connections`
 * runtimes in this one process, each on a connection (a Jobs) of its own to
 * the same file. One is the `process` phase; against it, three show what
 * sharing the file between connections costs (SQLite drops a connection's
 * page cache whenever another one committed) without what sharing it
 * between processes costs.
 */
function phaseConnections(connections: number): Promise<number> {
  return withFresh(async (location) => {
    let handled = 0;
    const all: Jobs[] = [];
    try {
      for (let i = 0; i < connections; i++) all.push(await open(location, () => void handled++));
      await prefill(all[0]!, CFG.n);
      let done = 0;
      const t0 = performance.now();
      const runtimes = await Promise.all(
        all.map((jobs) => jobs.start({ queues: { default: CONCURRENCY } })),
      );
      await waitFor(
        () => `${CFG.n} completed (store ${done}, handlers ran ${handled})`,
        async () => handled >= CFG.n && (done = await completed(all[0]!)) >= CFG.n,
        CFG.pollMs,
      );
      const seconds = (performance.now() - t0) / 1000;
      await Promise.all(runtimes.map((runtime) => runtime.stop()));
      const final = await completed(all[0]!);
      if (final !== CFG.n || handled !== CFG.n) {
        const phase = connections === 1 ? "process" : `connections x${connections}`;
        throw new Error(`${phase}: ${final} completed, handlers ran ${handled}, expected ${CFG.n}`);
      }
      return CFG.n / seconds;
    } finally {
      for (const jobs of all) await jobs.close();
    }
  });
}

/** A `process1`/`process3` figure: the rate, and the children's CPU time per job. */
interface ProcessesRun {
  perS: number;
  /** User and system CPU of all the children from "go" to "stop", per job, in µs. */
  cpuUsPerJob: number;
}

/**
 * jobs/s from "go" until the store reports N completed, `processes` child
 * processes on one store, each a runtime of the same concurrency.
 */
function phaseProcesses(processes: number): Promise<ProcessesRun> {
  return withFresh(async (location) => {
    const jobs = await open(location);
    const children: Child[] = [];
    try {
      await prefill(jobs, CFG.n);
      for (let i = 0; i < processes; i++) children.push(new Child(CHILD, ["worker", location]));
      await Promise.all(children.map((c) => c.expect("ready")));
      let done = 0;
      const t0 = performance.now();
      await Promise.all(children.map((c) => c.send("go")));
      const ran = () => children.reduce((s, c) => s + c.ran, 0);
      await waitFor(
        () => `${CFG.n} completed (store ${done}, children ran ${ran()})`,
        async () => ran() >= CFG.n && (done = await completed(jobs)) >= CFG.n,
        CFG.pollMs,
      );
      const seconds = (performance.now() - t0) / 1000;
      const reports = await Promise.all(children.map(async (c) => {
        await c.send("stop");
        const report = JSON.parse(await c.next()) as { ran: number; ids: number[]; cpuMs: number };
        await c.wait();
        return report;
      }));
      const total = reports.reduce((s, r) => s + r.ran, 0);
      const distinct = new Set(reports.flatMap((r) => r.ids)).size;
      const final = await completed(jobs);
      if (final !== CFG.n || total !== CFG.n || distinct !== CFG.n) {
        throw new Error(
          `processes x${processes}: ${final} completed, children ran ${total} (${distinct} distinct; ` +
            `${reports.map((r) => r.ran).join(" + ")}), expected ${CFG.n}`,
        );
      }
      const cpuMs = reports.reduce((s, r) => s + r.cpuMs, 0);
      const cpuUsPerJob = cpuMs * 1000 / CFG.n;
      log(
        `  per process: ${reports.map((r) => r.ran).join(" + ")}, CPU ${
          cpuUsPerJob.toFixed(1)
        } µs/job`,
      );
      return { perS: CFG.n / seconds, cpuUsPerJob };
    } finally {
      await Promise.all(children.map((c) => c.kill()));
      await jobs.close();
    }
  });
}

interface Latency {
  p50: number;
  p95: number;
  max: number;
}

function latencies(enqueued: number[], started: number[]): Latency {
  const lat = enqueued.map((e, i) => started[i]! - e).sort((a, b) => a - b);
  if (lat.some((x) => !Number.isFinite(x))) throw new Error("latency: a job has no start time");
  return { p50: quantile(lat, 0.5), p95: quantile(lat, 0.95), max: lat[lat.length - 1]! };
}

/** Enqueue-to-start latency with an idle worker in the same process. */
function phaseLatency(): Promise<Latency> {
  return withFresh(async (location) => {
    const started = new Array<number>(CFG.latN).fill(NaN);
    let done = 0;
    const jobs = await open(location, (args) => {
      started[args.i] = performance.now();
      done++;
    });
    try {
      const runtime = await jobs.start({ queues: { default: CONCURRENCY } });
      await sleep(CFG.idleMs);
      const enqueued = new Array<number>(CFG.latN).fill(NaN);
      const base = performance.now();
      for (let i = 0; i < CFG.latN; i++) {
        const wait = base + i * CFG.latGapMs - performance.now();
        if (wait > 0) await sleep(wait);
        enqueued[i] = performance.now();
        await jobs.enqueue(NOOP, { i });
      }
      await waitFor(() => `latency jobs (${done}/${CFG.latN})`, () => done >= CFG.latN, 5);
      await runtime.stop();
      return latencies(enqueued, started);
    } finally {
      await jobs.close();
    }
  });
}

interface CrossLatency extends Latency {
  /** The child's clock minus the parent's, estimated from the fastest ping. */
  offsetMs: number;
}

/** Enqueue-to-start latency with an idle worker here and the enqueuer in a child process. */
function phaseCross(): Promise<CrossLatency> {
  return withFresh(async (location) => {
    const started = new Array<number>(CFG.latN).fill(NaN);
    let done = 0;
    const jobs = await open(location, (args) => {
      started[args.i] = epochNow();
      done++;
    });
    let child: Child | null = null;
    try {
      const runtime = await jobs.start({ queues: { default: CONCURRENCY } });
      child = new Child(CHILD, ["enqueue", location, String(CFG.latN), String(CFG.latGapMs)]);
      await child.expect("ready");
      const offsetMs = await clockOffset(child);
      await sleep(CFG.idleMs);
      await child.send("go");
      const { stamps } = JSON.parse(await child.next()) as { stamps: number[] };
      await child.wait();
      await waitFor(() => `cross latency jobs (${done}/${CFG.latN})`, () => done >= CFG.latN, 5);
      await runtime.stop();
      return { ...latencies(stamps, started), offsetMs };
    } finally {
      await child?.kill();
      await jobs.close();
    }
  });
}

/**
 * The child's `epochNow()` minus ours, NTP-style: the child's answer is taken
 * to be read halfway through the fastest of 20 round trips.
 */
async function clockOffset(child: Child): Promise<number> {
  let best = { rtt: Infinity, offset: NaN };
  for (let i = 0; i < 20; i++) {
    const sent = epochNow();
    await child.send("ping");
    const line = await child.next();
    const received = epochNow();
    const theirs = Number(line.replace(/^pong /, ""));
    if (received - sent < best.rtt) {
      best = { rtt: received - sent, offset: theirs - (sent + received) / 2 };
    }
  }
  return best.offset;
}

// --------------------------------------------------------------------- main

interface Row {
  key: string;
  label: string;
  unit: "jobs/s" | "rows/s" | "steps/s" | "runs/s" | "rec/s" | "ms" | "µs" | "s" | "x" | "MB";
  values: number[];
}

const rows = new Map<string, Row>();
const errors: string[] = [];

function record(key: string, label: string, unit: Row["unit"], value: number): void {
  let row = rows.get(key);
  if (!row) rows.set(key, row = { key, label, unit, values: [] });
  row.values.push(value);
}

const perSecond = (unit: Row["unit"]) =>
  unit === "jobs/s" || unit === "rows/s" || unit === "steps/s" || unit === "runs/s" ||
  unit === "rec/s";

const fmt = (unit: Row["unit"], v: number) =>
  perSecond(unit)
    ? Math.round(v).toLocaleString("en-US")
    : unit === "s"
    ? v.toFixed(1)
    : v.toFixed(2);

/** Rounds a median for the JSON line: whole numbers per second, else 3 decimals. */
const rounded = (unit: Row["unit"], v: number) =>
  perSecond(unit) ? Math.round(v) : Math.round(v * 1000) / 1000;

async function runPhase(phase: Phase, run: number): Promise<void> {
  const started = performance.now();
  switch (phase) {
    case "bulk": {
      const v = await phaseBulk();
      record("enqueue_bulk_per_s", "enqueue bulk (enqueueMany x1000)", "jobs/s", v);
      log(`run ${run} bulk: ${fmt("jobs/s", v)} jobs/s`);
      break;
    }
    case "single": {
      const v = await phaseSingle();
      record("enqueue_single_per_s", "enqueue single (awaited)", "jobs/s", v);
      log(`run ${run} single: ${fmt("jobs/s", v)} jobs/s`);
      break;
    }
    case "process": {
      const v = await phaseConnections(1);
      record("process_per_s", "process, 1 process x 10", "jobs/s", v);
      log(`run ${run} process: ${fmt("jobs/s", v)} jobs/s`);
      break;
    }
    case "process1":
    case "process3": {
      const processes = phase === "process1" ? 1 : CFG.processes;
      const v = await phaseProcesses(processes);
      const what = processes === 1 ? "1 child process" : `${processes} processes`;
      record(`${phase}_per_s`, `process, ${what} x 10`, "jobs/s", v.perS);
      record(`${phase}_cpu_us`, `process, ${what}: CPU per job`, "µs", v.cpuUsPerJob);
      log(`run ${run} ${phase}: ${fmt("jobs/s", v.perS)} jobs/s`);
      break;
    }
    case "connections3": {
      const v = await phaseConnections(CFG.processes);
      record(
        "connections3_per_s",
        `process, ${CFG.processes} connections in 1 process x 10`,
        "jobs/s",
        v,
      );
      log(`run ${run} connections3: ${fmt("jobs/s", v)} jobs/s`);
      break;
    }
    case "latency": {
      const v = await phaseLatency();
      record("latency_p50_ms", "latency p50, same process", "ms", v.p50);
      record("latency_p95_ms", "latency p95, same process", "ms", v.p95);
      record("latency_max_ms", "latency max, same process", "ms", v.max);
      log(
        `run ${run} latency: p50 ${v.p50.toFixed(2)} ms, p95 ${v.p95.toFixed(2)} ms, max ${
          v.max.toFixed(2)
        } ms`,
      );
      break;
    }
    case "cross": {
      const v = await phaseCross();
      record("latency_cross_p50_ms", "latency p50, other process", "ms", v.p50);
      record("latency_cross_p95_ms", "latency p95, other process", "ms", v.p95);
      record("latency_cross_max_ms", "latency max, other process", "ms", v.max);
      record("cross_clock_offset_ms", "clock offset child-parent", "ms", v.offsetMs);
      log(
        `run ${run} cross: p50 ${v.p50.toFixed(2)} ms, p95 ${v.p95.toFixed(2)} ms, max ${
          v.max.toFixed(2)
        } ms (clock offset ${v.offsetMs.toFixed(3)} ms)`,
      );
      break;
    }
    case "tui": {
      const v = await withFresh((location) =>
        phaseTui(location, { n: CFG.tuiN, reps: CFG.tuiReps }, log)
      );
      const n = CFG.tuiN.toLocaleString("en-US");
      record("tui_build_s", `tui: build ${n} jobs`, "s", v.buildMs / 1000);
      record("tui_first_page_ms", "tui: first page (50, newest)", "ms", v.firstPageMs);
      record("tui_20_pages_ms", "tui: 20 pages with after (total)", "ms", v.twentyPagesMs);
      record("tui_deep_page_ms", "tui: page halfway down", "ms", v.deepPageMs);
      record("tui_discarded_page_ms", "tui: discarded, first page", "ms", v.discardedPageMs);
      record("tui_discarded_deep_ms", "tui: discarded, page halfway", "ms", v.discardedDeepPageMs);
      record("tui_search_page_ms", "tui: search string, first page", "ms", v.searchPageMs);
      record("tui_count_ms", "tui: jobsCount (overview)", "ms", v.countMs);
      record("tui_match_all_ms", "tui: jobsCountMatching, all (jobs total)", "ms", v.matchAllMs);
      record("tui_match_discarded_ms", "tui: jobsCountMatching, dead", "ms", v.matchDiscardedMs);
      record("tui_match_search_ms", "tui: jobsCountMatching, search", "ms", v.matchSearchMs);
      record("tui_throughput_ms", "tui: jobsThroughput 1 h by minute", "ms", v.throughputMs);
      record("tui_dead_letters_ms", "tui: jobsDeadLetters (20 groups)", "ms", v.deadLettersMs);
      record("tui_overview_ms", "tui: the overview screen's reads", "ms", v.tuiOverviewMs);
      record("tui_search_first_ms", "tui: jobs screen search, first page", "ms", v.tuiSearchPageMs);
      record("tui_search_count_ms", "tui: jobs screen search, its count", "ms", v.tuiSearchCountMs);
      record("tui_search_none_first_ms", "tui: no match, page", "ms", v.tuiSearchNonePageMs);
      record("tui_search_none_count_ms", "tui: no match, count", "ms", v.tuiSearchNoneCountMs);
      record("tui_status_cmd_ms", "tui: jobs status, whole command", "ms", v.statusCmdMs);
      record("tui_ls_cmd_ms", "tui: jobs ls, whole command", "ms", v.lsCmdMs);
      log(
        `run ${run} tui: first page ${v.firstPageMs.toFixed(2)} ms, 20 pages ${
          v.twentyPagesMs.toFixed(2)
        } ms, count ${v.countMs.toFixed(2)} ms`,
      );
      break;
    }
    case "prune": {
      const v = await withFresh((location) =>
        phasePrune(location, { n: CFG.pruneN, batch: CFG.pruneBatch }, log)
      );
      const n = CFG.pruneN.toLocaleString("en-US");
      record("prune_build_s", `prune: build ${n} final jobs`, "s", v.buildMs / 1000);
      record("prune_rows_per_s", `prune: ${n} jobs, batch ${CFG.pruneBatch}`, "rows/s", v.rowsPerS);
      record(
        "prune_claims_per_s",
        "prune: claims beside it, one at a time",
        "jobs/s",
        v.claimsPerS,
      );
      record(
        "prune_claim_wait_max_ms",
        "prune: longest wait between claims",
        "ms",
        v.claimWaitMaxMs,
      );
      log(
        `run ${run} prune: ${fmt("rows/s", v.rowsPerS)} rows/s, ${
          fmt("jobs/s", v.claimsPerS)
        } claims/s beside it, longest wait ${v.claimWaitMaxMs.toFixed(1)} ms`,
      );
      break;
    }
    case "flow": {
      const v = await phaseFlow(
        DB,
        {
          jobs: CFG.flowN,
          runtimes: CFG.flowRuntimes,
          jobMs: CFG.flowJobMs,
          timeoutMs: CFG.timeoutMs,
        },
        run,
        log,
      );
      const each = `${CFG.flowRuntimes} x ${CONCURRENCY} slots, ${CFG.flowJobMs} ms jobs`;
      record("flow_none_per_s", `flow: no limit (${each})`, "jobs/s", v.none);
      record(
        "flow_global_per_s",
        `flow: global ${CFG.flowRuntimes * CONCURRENCY}`,
        "jobs/s",
        v.global,
      );
      record("flow_partition_per_s", "flow: 100 tenants, partition limit 1", "jobs/s", v.partition);
      record("flow_fair_per_s", "flow: 100 tenants, no limit (fair)", "jobs/s", v.fair);
      record(
        "flow_partition_args_per_s",
        "flow: 100 args.account, partition limit 1",
        "jobs/s",
        v.partition_args,
      );
      for (const way of ["global", "partition", "fair", "partition_args"] as const) {
        record(`flow_${way}_vs_none`, `flow: ${way} / none`, "x", v[way] / v.none);
      }
      log(
        `run ${run} flow: global ${(v.global / v.none).toFixed(2)}x, partition ${
          (v.partition / v.none).toFixed(2)
        }x, fair ${(v.fair / v.none).toFixed(2)}x, partition by args ${
          (v.partition_args / v.none).toFixed(2)
        }x of none`,
      );
      break;
    }
    case "limit": {
      if (DB !== null) {
        log(`run ${run} limit: SQLite only, skipped with BENCH_DB`);
        break;
      }
      const v = await phaseLimit(
        { n: CFG.n, processes: CFG.processes, chunk: CFG.chunk, singleN: CFG.singleN },
        log,
      );
      record("limit_per_s", "limit: bare loop, 1 process", "jobs/s", v.limitPerS);
      record(
        "limit3_per_s",
        `limit: bare loop, ${CFG.processes} processes`,
        "jobs/s",
        v.limit3PerS,
      );
      record(
        "limit_insert_loop_per_s",
        "limit: insert loop, 1 transaction",
        "rows/s",
        v.insertLoopPerS,
      );
      record(
        "limit_insert_tx_per_s",
        "limit: one-row insert transactions",
        "rows/s",
        v.insertTxPerS,
      );
      log(
        `run ${run} limit: ${fmt("jobs/s", v.limitPerS)} jobs/s, x${CFG.processes} ${
          fmt("jobs/s", v.limit3PerS)
        } jobs/s, inserts ${fmt("rows/s", v.insertLoopPerS)} rows/s in one transaction, ${
          fmt("rows/s", v.insertTxPerS)
        } transactions/s`,
      );
      break;
    }
    case "console": {
      const cfg = {
        n: env("CONSOLE_N", 1_000_000),
        reps: env("CONSOLE_REPS", 40),
        warm: env("CONSOLE_WARM", 5),
        ticks: env("CONSOLE_TICKS", 20),
      };
      const bulk = env("CONSOLE_BULK", 100_000);
      const pg = Deno.env.get("BENCH_PG") ?? DB ?? "postgres://postgres@127.0.0.1:5432/test";
      // PostgreSQL's store is a copy of SQLite's (storeTransfer): building it
      // through claims and results would take many minutes more.
      await withFreshStore(null, async (sqlite) => {
        log(`run ${run} console: sqlite`);
        const v = await phaseConsole(sqlite, cfg, log);
        recordConsole("sqlite", cfg.n, v);
        logConsole(run, "sqlite", v);
        log(`run ${run} console: postgres`);
        const w = await withFreshStore(pg, async (location) => {
          const times = await phaseConsole(location, cfg, log, sqlite);
          if (bulk > 0) {
            log(`run ${run} console: bulk retry, postgres`);
            recordBulk("postgres", await phaseConsoleBulk(location, bulk, log));
          }
          return times;
        });
        recordConsole("postgres", cfg.n, w);
        logConsole(run, "postgres", w);
        if (bulk > 0) {
          log(`run ${run} console: bulk retry, sqlite`);
          recordBulk("sqlite", await phaseConsoleBulk(sqlite, bulk, log));
        }
      });
      break;
    }
    case "work": {
      const cfg = {
        n: env("WORK_N", 100_000),
        page: env("WORK_PAGE", 50),
        reps: env("WORK_REPS", 21),
        people: env("WORK_PEOPLE", 20),
        nexts: env("WORK_NEXTS", 25),
      };
      const pg = Deno.env.get("BENCH_PG") ?? DB ?? "postgres://postgres@127.0.0.1:5432/test";
      for (const kind of ["sqlite", "postgres"] as const) {
        log(`run ${run} work: ${kind}`);
        const v = await withFreshStore(
          kind === "sqlite" ? null : pg,
          (location) => phaseWork(location, cfg, log),
        );
        recordWork(kind, cfg, v);
        log(
          `run ${run} work ${kind}: first page ${v.listMs.toFixed(1)} ms, watch ${
            v.watchMs.toFixed(1)
          } ms, next p50 ${v.next.p50Ms.toFixed(1)} p95 ${v.next.p95Ms.toFixed(1)} max ${
            v.next.maxMs.toFixed(1)
          } ms; claims piling up: p50 ${v.nextHeld.p50Ms.toFixed(1)} p95 ${
            v.nextHeld.p95Ms.toFixed(1)
          } ms`,
        );
      }
      break;
    }
    case "idle": {
      const v = await withFresh((location) =>
        phaseIdle(location, {
          seconds: env("IDLE_S", 20),
          tuiSeconds: env("IDLE_TUI_S", 60),
          settleS: env("IDLE_SETTLE_S", 3),
        })
      );
      record("idle_cpu_ms_per_s", "idle daemon: CPU per second", "ms", v.daemonMsPerS);
      if (v.tuiMsPerS !== null) {
        record("idle_tui_cpu_ms_per_s", "idle dashboard: CPU per second", "ms", v.tuiMsPerS);
      }
      log(
        `run ${run} idle: daemon ${v.daemonMsPerS.toFixed(2)} ms/s, dashboard ${
          v.tuiMsPerS === null ? "- (no tmux)" : `${v.tuiMsPerS.toFixed(2)} ms/s`
        }`,
      );
      break;
    }
    case "memory": {
      const v = await phaseMemory(DB, {
        n: env("MEM_N", 1_000_000),
        chunk: env("MEM_CHUNK", 10_000),
        idleMs: env("MEM_IDLE_MS", 3000),
        sampleMs: env("MEM_SAMPLE_MS", 100),
        pollMs: env("MEM_POLL_MS", 250),
        timeoutMs: env("MEM_TIMEOUT_MS", 1_800_000),
      }, log);
      const n = env("MEM_N", 1_000_000).toLocaleString("en-US");
      record("memory_build_s", `memory: build ${n} jobs`, "s", v.buildMs / 1000);
      record("memory_peak_rss_mb", `memory: daemon peak RSS, ${n} jobs`, "MB", v.peakRssMb);
      record("memory_rss_10_mb", "memory: daemon RSS at 10% drained", "MB", v.rss10Mb);
      record("memory_rss_90_mb", "memory: daemon RSS at 90% drained", "MB", v.rss90Mb);
      record("memory_drain_per_s", "memory: daemon drain", "jobs/s", v.drainPerS);
      record("memory_idle_rss_mb", "memory: idle daemon RSS, empty store", "MB", v.idleRssMb);
      log(
        `run ${run} memory: peak ${v.peakRssMb.toFixed(1)} MB, 10% ${v.rss10Mb.toFixed(1)} MB, ` +
          `90% ${v.rss90Mb.toFixed(1)} MB, ${fmt("jobs/s", v.drainPerS)} jobs/s, idle ${
            v.idleRssMb.toFixed(1)
          } MB`,
      );
      break;
    }
    case "ingest": {
      const n = env("INGEST_N", 1_000_000);
      const v = await phaseIngest(DB, { n, timeoutMs: CFG.timeoutMs }, log);
      const shown = n.toLocaleString("en-US");
      record("ingest_ts_per_s", `ingest: ${shown} records, 3 TS steps + sink`, "rec/s", v.tsPerS);
      record(
        "ingest_command_per_s",
        `ingest: ${shown} records, 1 command step`,
        "rec/s",
        v.commandPerS,
      );
      record(
        "ingest_peak_short_mb",
        `ingest: peak RSS, ${(n / 4).toLocaleString("en-US")} records`,
        "MB",
        v.peakShortMb,
      );
      record("ingest_peak_long_mb", `ingest: peak RSS, ${shown} records`, "MB", v.peakLongMb);
      record(
        "ingest_live_short_mb",
        `ingest: live heap after, ${(n / 4).toLocaleString("en-US")} records`,
        "MB",
        v.liveShortMb,
      );
      record(
        "ingest_live_long_mb",
        `ingest: live heap after, ${shown} records`,
        "MB",
        v.liveLongMb,
      );
      record(
        "ingest_capped_per_s",
        `ingest: ${shown} records, old space capped at ${CAPPED_OLD_SPACE_MB} MB`,
        "rec/s",
        v.cappedPerS,
      );
      record(
        "ingest_peak_capped_mb",
        `ingest: peak RSS, ${shown} records, old space capped`,
        "MB",
        v.peakCappedMb,
      );
      log(
        `run ${run} ingest: ${fmt("rec/s", v.tsPerS)} rec/s TS, ${fmt("rec/s", v.commandPerS)} ` +
          `rec/s command, peak ${v.peakShortMb.toFixed(1)} / ${v.peakLongMb.toFixed(1)} MB`,
      );
      break;
    }
    case "report": {
      const n = env("REPORT_N", 1_000_000);
      const pg = Deno.env.get("BENCH_PG") ?? DB ?? "postgres://postgres@127.0.0.1:5432/test";
      const v = await phaseReport({ n, pg, timeoutMs: CFG.timeoutMs }, log);
      const shown = n.toLocaleString("en-US");
      record(
        "report_sqlite_per_s",
        `report: ${shown} rows x 6 to CSV, SQLite source`,
        "rows/s",
        v.sqlitePerS,
      );
      record(
        "report_sqlite_stringify_per_s",
        `report: the same pages through csv-stringify, SQLite`,
        "rows/s",
        v.sqliteStringifyPerS,
      );
      record(
        "report_postgres_per_s",
        `report: ${shown} rows x 6 to CSV, PostgreSQL source`,
        "rows/s",
        v.postgresPerS,
      );
      record(
        "report_postgres_stringify_per_s",
        `report: the same pages through csv-stringify, PostgreSQL`,
        "rows/s",
        v.postgresStringifyPerS,
      );
      record(
        "report_vs_stringify",
        "report: ours / csv-stringify, SQLite source",
        "x",
        v.sqlitePerS / v.sqliteStringifyPerS,
      );
      record(
        "report_peak_short_mb",
        `report: peak RSS, ${(n / 4).toLocaleString("en-US")} rows, SQLite`,
        "MB",
        v.peakShortMb,
      );
      record("report_peak_long_mb", `report: peak RSS, ${shown} rows, SQLite`, "MB", v.peakLongMb);
      record(
        "report_live_short_mb",
        `report: live heap after, ${(n / 4).toLocaleString("en-US")} rows, SQLite`,
        "MB",
        v.liveShortMb,
      );
      record(
        "report_live_long_mb",
        `report: live heap after, ${shown} rows, SQLite`,
        "MB",
        v.liveLongMb,
      );
      record(
        "report_postgres_peak_mb",
        `report: peak RSS, ${shown} rows, PostgreSQL`,
        "MB",
        v.postgresPeakMb,
      );
      log(
        `run ${run} report: ${fmt("rows/s", v.sqlitePerS)} rows/s SQLite, ${
          fmt("rows/s", v.postgresPerS)
        } rows/s PostgreSQL`,
      );
      break;
    }
    case "workflow": {
      const v = await phaseWorkflow(DB, {
        jobs: CFG.wfJobs,
        linearRuns: CFG.wfLinearRuns,
        fanoutRuns: CFG.wfFanoutRuns,
        fanoutItems: CFG.wfFanoutItems,
        timeoutMs: CFG.timeoutMs,
      }, log);
      const items = CFG.wfFanoutItems;
      record("workflow_jobs_per_s", "workflow: plain no-op jobs", "jobs/s", v.jobsPerS);
      record(
        "workflow_linear_steps_per_s",
        "workflow: 3-step linear",
        "steps/s",
        v.linearStepsPerS,
      );
      record(
        "workflow_fanout_steps_per_s",
        `workflow: fan-out ${items} + fan-in`,
        "steps/s",
        v.fanoutStepsPerS,
      );
      record(
        "workflow_starts_per_s",
        "workflow: starts, 500 a transaction",
        "runs/s",
        v.startsPerS,
      );
      record("workflow_linear_step_vs_job", "workflow: linear step / job cost", "x", v.linearVsJob);
      record(
        "workflow_fanout_step_vs_job",
        "workflow: fan-out step / job cost",
        "x",
        v.fanoutVsJob,
      );
      log(
        `run ${run} workflow: linear ${fmt("steps/s", v.linearStepsPerS)} steps/s, fan-out ${
          fmt("steps/s", v.fanoutStepsPerS)
        } steps/s, jobs ${fmt("jobs/s", v.jobsPerS)} jobs/s`,
      );
      break;
    }
  }
  log(`  (${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

function logConsole(run: number, kind: string, v: ConsoleTimes): void {
  log(
    `run ${run} console ${kind}: slowest page ${v.pageP95MaxPath} p95 ${
      v.pageP95MaxMs.toFixed(1)
    } ms, search p95 ${
      v.search.p95Ms.toFixed(1)
    } ms, live ${v.liveReadsPerTick1} / ${v.liveReadsPerTick10} store calls per tick (1 / 10 viewers)`,
  );
}

/** The console phase's figures of one store: `_pg` keys for PostgreSQL. */
function recordConsole(kind: "sqlite" | "postgres", n: number, v: ConsoleTimes): void {
  const pg = kind === "postgres" ? "_pg" : "";
  const on = kind === "postgres" ? "PostgreSQL" : "SQLite";
  const shown = n.toLocaleString("en-US");
  const built = kind === "postgres" ? "copy SQLite's" : "build";
  record(`console_build_s${pg}`, `console: ${built} ${shown} jobs, ${on}`, "s", v.buildMs / 1000);
  for (const page of v.pages) {
    record(`console_p95 ${page.route}${pg}`, `console: ${page.route} p95, ${on}`, "ms", page.p95Ms);
  }
  record(`console_page_p95_ms_max${pg}`, `console: slowest page p95, ${on}`, "ms", v.pageP95MaxMs);
  record(
    `console_search_p50_ms${pg}`,
    `console: jobs by error text p50, ${on}`,
    "ms",
    v.search.p50Ms,
  );
  record(
    `console_search_p95_ms${pg}`,
    `console: jobs by error text p95, ${on}`,
    "ms",
    v.search.p95Ms,
  );
  record(`console_live_tick_ms${pg}`, `console: one live tick's reads, ${on}`, "ms", v.liveTickMs);
  record(
    `console_live_reads_per_tick_1${pg}`,
    `console: store calls per live tick, 1 viewer, ${on}`,
    "x",
    v.liveReadsPerTick1,
  );
  record(
    `console_live_reads_per_tick_10${pg}`,
    `console: store calls per live tick, 10 viewers, ${on}`,
    "x",
    v.liveReadsPerTick10,
  );
}

/** The work phase's figures of one store: `_pg` keys for PostgreSQL. */
function recordWork(
  kind: "sqlite" | "postgres",
  cfg: { n: number; page: number; people: number; nexts: number },
  v: WorkTimes,
): void {
  const pg = kind === "postgres" ? "_pg" : "";
  const on = `${cfg.n.toLocaleString("en-US")} open items, ${
    kind === "postgres" ? "PostgreSQL" : "SQLite"
  }`;
  record(`work_build_s${pg}`, `work: build, ${on}`, "s", v.buildMs / 1000);
  record(`work_list_ms${pg}`, `work: first page of ${cfg.page}, ${on}`, "ms", v.listMs);
  record(`work_watch_ms${pg}`, `work: the TUI's Work tab read, ${on}`, "ms", v.watchMs);
  for (const [held, times] of [["", v.next], ["_held", v.nextHeld]] as const) {
    const people = `${cfg.people} at once x ${cfg.nexts}${held ? ", claims piling up" : ""}`;
    const key = `work_next${held}`;
    record(`${key}_p50_ms${pg}`, `work: next p50, ${people}, ${on}`, "ms", times.p50Ms);
    record(`${key}_p95_ms${pg}`, `work: next p95, ${people}, ${on}`, "ms", times.p95Ms);
    record(`${key}_max_ms${pg}`, `work: next max, ${people}, ${on}`, "ms", times.maxMs);
    record(`${key}_per_s${pg}`, `work: nexts per second, ${people}, ${on}`, "runs/s", times.perS);
  }
}

/** The console's bulk retry on one store: `_pg` keys for PostgreSQL. */
function recordBulk(kind: "sqlite" | "postgres", v: BulkTimes): void {
  const pg = kind === "postgres" ? "_pg" : "";
  const on = kind === "postgres" ? "PostgreSQL" : "SQLite";
  const of = `bulk retry of ${v.total.toLocaleString("en-US")}`;
  record(
    `console_bulk_preview_ms${pg}`,
    `console: ${of}, preview request, ${on}`,
    "ms",
    v.previewMs,
  );
  record(`console_bulk_start_ms${pg}`, `console: ${of}, confirm request, ${on}`, "ms", v.startMs);
  record(
    `console_bulk_walk_s${pg}`,
    `console: ${of}, the run to its end, ${on}`,
    "s",
    v.walkMs / 1000,
  );
  record(
    `console_bulk_progress_max_ms${pg}`,
    `console: ${of}, slowest progress page, ${on}`,
    "ms",
    v.progressMaxMs,
  );
}

const t0 = performance.now();
log(`phases ${PHASES.join(",")}, ${CFG.runs} runs, ${STORE}, deno ${Deno.version.deno}`);
for (let run = 1; run <= CFG.runs; run++) {
  for (const phase of PHASES) {
    try {
      await runPhase(phase, run);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      errors.push(`run ${run} ${phase}: ${message}`);
      log(`run ${run} ${phase} FAILED: ${error instanceof Error ? error.stack : message}`);
    }
  }
}
log(`done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

/** The middle run (the mean of the two middle runs when RUNS is even). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const table = [["phase", "median", "min", "max", "runs"]];
for (const row of rows.values()) {
  const sorted = [...row.values].sort((a, b) => a - b);
  table.push([
    `${row.label} (${row.unit})`,
    fmt(row.unit, median(row.values)),
    fmt(row.unit, sorted[0]!),
    fmt(row.unit, sorted[sorted.length - 1]!),
    row.values.map((v) => fmt(row.unit, v)).join(" "),
  ]);
}
const widths = table[0]!.map((_, c) => Math.max(...table.map((r) => r[c]!.length)));
for (const [i, r] of table.entries()) {
  console.log(
    r.map((cell, c) => c === 0 || c === 4 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))
      .join("  ").trimEnd(),
  );
  if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
}
for (const e of errors) console.log(`FAILED ${e}`);

const result: Record<string, unknown> = {};
const KEYS = [
  "enqueue_bulk_per_s",
  "enqueue_single_per_s",
  "process_per_s",
  "process1_per_s",
  "process3_per_s",
  "process1_cpu_us",
  "process3_cpu_us",
  "connections3_per_s",
  "latency_p50_ms",
  "latency_p95_ms",
  "latency_cross_p95_ms",
  "latency_cross_p50_ms",
  "latency_max_ms",
  "latency_cross_max_ms",
  "cross_clock_offset_ms",
  "tui_build_s",
  "tui_first_page_ms",
  "tui_20_pages_ms",
  "tui_deep_page_ms",
  "tui_discarded_page_ms",
  "tui_discarded_deep_ms",
  "tui_search_page_ms",
  "tui_count_ms",
  "tui_throughput_ms",
  "tui_dead_letters_ms",
  "tui_match_all_ms",
  "tui_match_search_ms",
  "tui_overview_ms",
  "tui_search_first_ms",
  "tui_search_count_ms",
  "tui_search_none_first_ms",
  "tui_search_none_count_ms",
  "tui_status_cmd_ms",
  "tui_ls_cmd_ms",
  "prune_build_s",
  "prune_rows_per_s",
  "prune_claims_per_s",
  "prune_claim_wait_max_ms",
  "workflow_jobs_per_s",
  "workflow_linear_steps_per_s",
  "workflow_fanout_steps_per_s",
  "workflow_starts_per_s",
  "workflow_linear_step_vs_job",
  "workflow_fanout_step_vs_job",
  "limit_per_s",
  "limit3_per_s",
  "limit_insert_loop_per_s",
  "limit_insert_tx_per_s",
  "memory_peak_rss_mb",
  "memory_rss_10_mb",
  "memory_rss_90_mb",
  "memory_drain_per_s",
  "memory_idle_rss_mb",
  "ingest_ts_per_s",
  "ingest_command_per_s",
  "ingest_peak_short_mb",
  "ingest_peak_long_mb",
  "ingest_live_short_mb",
  "ingest_live_long_mb",
  "ingest_capped_per_s",
  "ingest_peak_capped_mb",
  "report_sqlite_per_s",
  "report_sqlite_stringify_per_s",
  "report_postgres_per_s",
  "report_postgres_stringify_per_s",
  "report_vs_stringify",
  "report_peak_short_mb",
  "report_peak_long_mb",
  "report_live_short_mb",
  "report_live_long_mb",
  "report_postgres_peak_mb",
  "idle_cpu_ms_per_s",
  "idle_tui_cpu_ms_per_s",
  "flow_none_per_s",
  "flow_global_per_s",
  "flow_partition_per_s",
  "flow_fair_per_s",
  "flow_partition_args_per_s",
  "console_build_s",
  "console_page_p95_ms_max",
  "console_search_p95_ms",
  "console_live_tick_ms",
  "console_live_reads_per_tick_1",
  "console_live_reads_per_tick_10",
  "console_build_s_pg",
  "console_page_p95_ms_max_pg",
  "console_search_p95_ms_pg",
  "console_live_tick_ms_pg",
  "console_live_reads_per_tick_1_pg",
  "console_live_reads_per_tick_10_pg",
  "console_bulk_start_ms",
  "console_bulk_walk_s",
  "console_bulk_progress_max_ms",
  "console_bulk_start_ms_pg",
  "console_bulk_walk_s_pg",
  "console_bulk_progress_max_ms_pg",
  "work_build_s",
  "work_list_ms",
  "work_watch_ms",
  "work_next_p50_ms",
  "work_next_p95_ms",
  "work_next_max_ms",
  "work_next_per_s",
  "work_next_held_p50_ms",
  "work_next_held_p95_ms",
  "work_next_held_max_ms",
  "work_next_held_per_s",
  "work_build_s_pg",
  "work_list_ms_pg",
  "work_watch_ms_pg",
  "work_next_p50_ms_pg",
  "work_next_p95_ms_pg",
  "work_next_max_ms_pg",
  "work_next_per_s_pg",
  "work_next_held_p50_ms_pg",
  "work_next_held_p95_ms_pg",
  "work_next_held_max_ms_pg",
  "work_next_held_per_s_pg",
];
for (const key of KEYS) {
  const row = rows.get(key);
  if (!row) {
    result[key] = null;
    continue;
  }
  result[key] = rounded(row.unit, median(row.values));
}
const process1 = rows.get("process1_per_s");
const process3 = rows.get("process3_per_s");
// Per run, so a drift of the machine between runs cancels out.
result.process3_vs_1 = process1 && process3
  ? Math.round(
    median(process3.values.map((v, i) => v / (process1.values[i] ?? NaN))) * 100,
  ) / 100
  : null;
// Each phase against its limit, per run (the same run's machine), then the median.
const ratio = (of: string, to: string): number | null => {
  const a = rows.get(of);
  const b = rows.get(to);
  if (!a || !b) return null;
  return Math.round(median(a.values.map((v, i) => v / (b.values[i] ?? NaN))) * 100) / 100;
};
result.process_vs_limit = ratio("process_per_s", "limit_per_s");
result.process3_vs_limit3 = ratio("process3_per_s", "limit3_per_s");
// What the bare loop itself gains from three processes, and what three
// connections in one process cost: process3_vs_1 beside what SQLite allows.
result.limit3_vs_1 = ratio("limit3_per_s", "limit_per_s");
result.connections3_vs_process = ratio("connections3_per_s", "process_per_s");
result.process3_cpu_vs_1 = ratio("process3_cpu_us", "process1_cpu_us");
result.bulk_vs_loop = ratio("enqueue_bulk_per_s", "limit_insert_loop_per_s");
result.single_vs_tx = ratio("enqueue_single_per_s", "limit_insert_tx_per_s");
// The worse of the two shapes, each the median of its per-run ratios (the aim is <= 2).
const stepVsJob = ["workflow_linear_step_vs_job", "workflow_fanout_step_vs_job"]
  .map((key) => rows.get(key))
  .filter((row) => row !== undefined)
  .map((row) => median(row.values));
// Ten viewers of the live stream against one, on either store (the aim is 1).
const liveRatios = ["", "_pg"].map((pg) =>
  ratio(`console_live_reads_per_tick_10${pg}`, `console_live_reads_per_tick_1${pg}`)
).filter((r) => r !== null);
result.console_live_reads_10_vs_1 = liveRatios.length > 0 ? Math.max(...liveRatios) : null;
// Each limited drain against the unlimited one of the same pass, then the median (the aim is >= 0.8).
result.flow_global_vs_none = ratio("flow_global_per_s", "flow_none_per_s");
result.flow_partition_vs_none = ratio("flow_partition_per_s", "flow_none_per_s");
result.flow_fair_vs_none = ratio("flow_fair_per_s", "flow_none_per_s");
result.flow_partition_args_vs_none = ratio("flow_partition_args_per_s", "flow_none_per_s");
result.step_vs_job = stepVsJob.length > 0 ? rounded("x", Math.max(...stepVsJob)) : null;
Object.assign(result, {
  store: STORE,
  runs: CFG.runs,
  phases: PHASES.join(","),
  deno: Deno.version.deno,
  cpus: navigator.hardwareConcurrency,
});
if (errors.length) result.errors = errors;
console.log(JSON.stringify(result));
Deno.exit(errors.length ? 1 : 0);
