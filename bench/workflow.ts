/**
 * The `workflow` phase of the benchmark: what a workflow step costs against
 * a plain job, both run by the library's runtime in this process at the
 * process phase's concurrency.
 *
 * ```sh
 * PHASES=workflow deno task bench
 * PHASES=workflow RUNS=5 WF_JOBS=12000 WF_LINEAR_RUNS=4000 WF_FANOUT_RUNS=120 deno task bench
 * BENCH_DB=postgres://postgres@127.0.0.1:5432/test PHASES=workflow deno task bench
 * ```
 *
 * One pass measures three backlogs, each on a fresh store (so every one
 * starts from empty tables) and each drained from the runtime's start until
 * the store reports it done:
 *
 * - `jobs`: WF_JOBS plain no-op jobs (the process phase's workload);
 * - `linear`: WF_LINEAR_RUNS runs of a 3-step chain `a -> b -> c`;
 * - `fanout`: WF_FANOUT_RUNS runs of `list -> item x WF_FANOUT_ITEMS -> sum`
 *   (`list` returns the items, `item` fans out over them, `sum` is the fan-in
 *   and gets every item's result).
 *
 * The runs are started before the clock starts, as the jobs are enqueued
 * before it (a start writes the run's row and its first step's job, as an
 * enqueue writes a job): what is timed is claiming, running and recording
 * each step, and, in the same transaction as its record, advancing its run
 * (the next steps' jobs, the fan-in's count, the run's state). Steps return
 * nothing but `list` (its 100 numbers). A step's cost relative to a plain
 * job is `jobs/s / steps/s` of the same pass, so a drift of the machine
 * between passes cancels out.
 *
 * @module
 */

import { defineWorker, type Jobs, openJobs, silentLogger } from "../src/mod.ts";
import { completedOf, CONCURRENCY, NOOP } from "./shared.ts";
import { withFreshStore } from "./stores.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface WorkflowConfig {
  /** Plain no-op jobs drained for the baseline. */
  jobs: number;
  /** Runs of the 3-step linear workflow. */
  linearRuns: number;
  /** Runs of the fan-out workflow. */
  fanoutRuns: number;
  /** Items each fan-out run fans out to. */
  fanoutItems: number;
  /** Give up on a drain after this many ms. */
  timeoutMs: number;
}

/** What one pass of the phase measured. */
export interface WorkflowTimes {
  jobsPerS: number;
  /** Runs of the linear workflow started per second, START_CHUNK to a transaction (not in the drain). */
  startsPerS: number;
  linearStepsPerS: number;
  fanoutStepsPerS: number;
  /** Per-step cost over per-job cost: `jobsPerS / linearStepsPerS`. */
  linearVsJob: number;
  fanoutVsJob: number;
}

const LINEAR = "bench-linear";
const FANOUT = "bench-fanout";
/** Runs started per transaction while the backlog is built. */
const START_CHUNK = 500;
const ENQUEUE_CHUNK = 1000;
const POLL_MS = 5;

/** Runs the three drains of one pass, each on a fresh store of `db` (null: a SQLite file). */
export async function phaseWorkflow(
  db: string | null,
  cfg: WorkflowConfig,
  log: (message: string) => void,
): Promise<WorkflowTimes> {
  const jobsPerS = await withFreshStore(db, (location) => drainJobs(location, cfg));
  const linear = await withFreshStore(db, (location) => drainLinear(location, cfg));
  const linearStepsPerS = linear.stepsPerS;
  const fanoutStepsPerS = await withFreshStore(db, (location) => drainFanout(location, cfg));
  const times = {
    jobsPerS,
    startsPerS: linear.startsPerS,
    linearStepsPerS,
    fanoutStepsPerS,
    linearVsJob: jobsPerS / linearStepsPerS,
    fanoutVsJob: jobsPerS / fanoutStepsPerS,
  };
  log(
    `  jobs ${Math.round(jobsPerS)}/s, linear ${Math.round(linearStepsPerS)} steps/s (x${
      times.linearVsJob.toFixed(2)
    }), fan-out ${Math.round(fanoutStepsPerS)} steps/s (x${times.fanoutVsJob.toFixed(2)}), ${
      Math.round(times.startsPerS)
    } starts/s`,
  );
  return times;
}

/** Counts handler calls: the drains ask the store only once the handlers have run them all. */
class Tally {
  n = 0;
  readonly perform = (): void => {
    this.n++;
  };
}

/** jobs/s of a backlog of `cfg.jobs` plain no-op jobs. */
async function drainJobs(location: string, cfg: WorkflowConfig): Promise<number> {
  const tally = new Tally();
  const noop = defineWorker<{ i: number }>({ name: NOOP, perform: tally.perform });
  const jobs = await openJobs(location, { workers: [noop], logger: silentLogger });
  try {
    for (let off = 0; off < cfg.jobs; off += ENQUEUE_CHUNK) {
      const entries = [];
      for (let i = off; i < Math.min(cfg.jobs, off + ENQUEUE_CHUNK); i++) {
        entries.push({ worker: NOOP, args: { i } });
      }
      await jobs.enqueueMany(entries);
    }
    return cfg.jobs /
      await drain(
        jobs,
        cfg,
        "jobs",
        tally,
        cfg.jobs,
        async () => completedOf(await jobs.store.jobsCount({ state: "completed" })) >= cfg.jobs,
      );
  } finally {
    await jobs.close();
  }
}

/** steps/s of `cfg.linearRuns` runs of `a -> b -> c`, and how fast they were started. */
async function drainLinear(
  location: string,
  cfg: WorkflowConfig,
): Promise<{ stepsPerS: number; startsPerS: number }> {
  const tally = new Tally();
  const step = defineWorker({ name: "step", perform: tally.perform });
  const jobs = await openJobs(location, { workers: [step], logger: silentLogger });
  try {
    jobs.registerWorkflow({
      id: LINEAR,
      steps: [
        { id: "a", worker: step },
        { id: "b", worker: step, dependsOn: ["a"] },
        { id: "c", worker: step, dependsOn: ["b"] },
      ],
    });
    const started = performance.now();
    await startRuns(jobs, LINEAR, cfg.linearRuns);
    const startsPerS = cfg.linearRuns / ((performance.now() - started) / 1000);
    const steps = 3 * cfg.linearRuns;
    const done = () => runsCompleted(jobs, LINEAR, cfg.linearRuns);
    const seconds = await drain(jobs, cfg, "linear", tally, steps, done);
    return { stepsPerS: steps / seconds, startsPerS };
  } finally {
    await jobs.close();
  }
}

/** steps/s of `cfg.fanoutRuns` runs of `list -> item x fanoutItems -> sum`. */
async function drainFanout(location: string, cfg: WorkflowConfig): Promise<number> {
  const tally = new Tally();
  const items = Array.from({ length: cfg.fanoutItems }, (_, i) => i);
  const list = defineWorker({
    name: "list",
    perform: () => {
      tally.n++;
      return { result: items };
    },
  });
  const item = defineWorker({ name: "item", perform: tally.perform });
  const sum = defineWorker({
    name: "sum",
    perform: (_args, ctx) => {
      tally.n++;
      const got = ctx.workflow?.results.item;
      if (!Array.isArray(got) || got.length !== cfg.fanoutItems) {
        throw new Error(`fan-in got ${Array.isArray(got) ? got.length : typeof got} results`);
      }
    },
  });
  const jobs = await openJobs(location, { workers: [list, item, sum], logger: silentLogger });
  try {
    jobs.registerWorkflow({
      id: FANOUT,
      steps: [
        { id: "list", worker: list },
        { id: "item", worker: item, forEach: "list" },
        { id: "sum", worker: sum, dependsOn: ["item"] },
      ],
    });
    await startRuns(jobs, FANOUT, cfg.fanoutRuns);
    const steps = (cfg.fanoutItems + 2) * cfg.fanoutRuns;
    return steps /
      await drain(
        jobs,
        cfg,
        "fan-out",
        tally,
        steps,
        () => runsCompleted(jobs, FANOUT, cfg.fanoutRuns),
      );
  } finally {
    await jobs.close();
  }
}

/** Starts `n` runs of `workflow`, START_CHUNK to a transaction. */
async function startRuns(jobs: Jobs, workflow: string, n: number): Promise<void> {
  for (let off = 0; off < n; off += START_CHUNK) {
    await jobs.transaction(async (tx) => {
      for (let i = off; i < Math.min(n, off + START_CHUNK); i++) {
        await jobs.startWorkflow(workflow, { i }, { tx });
      }
    });
  }
}

/** Whether the store has `n` completed runs of `workflow` (and none that ended otherwise). */
async function runsCompleted(jobs: Jobs, workflow: string, n: number): Promise<boolean> {
  const counts = (await jobs.store.workflowsCount()).filter((c) => c.workflow === workflow);
  const done = counts.find((c) => c.state === "completed")?.count ?? 0;
  const ended = counts.filter((c) => c.state !== "running" && c.state !== "completed");
  if (ended.length > 0) {
    throw new Error(
      `${workflow}: runs ended ${ended.map((c) => `${c.state} x${c.count}`).join(", ")}`,
    );
  }
  return done >= n;
}

/**
 * Starts a runtime and returns the seconds until the handlers have run
 * `expected` times and `done()` says the store agrees; then checks that no
 * handler ran twice.
 */
async function drain(
  jobs: Jobs,
  cfg: WorkflowConfig,
  what: string,
  tally: Tally,
  expected: number,
  done: () => Promise<boolean>,
): Promise<number> {
  const t0 = performance.now();
  const runtime = await jobs.start({ queues: { default: CONCURRENCY } });
  try {
    const deadline = t0 + cfg.timeoutMs;
    // Polling the store from the runtime's own thread would slow the drain
    // it measures: ask it only once every handler has run.
    while (tally.n < expected || !(await done())) {
      if (performance.now() > deadline) {
        throw new Error(
          `${what}: timeout after ${cfg.timeoutMs} ms (handlers ran ${tally.n} of ${expected})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const seconds = (performance.now() - t0) / 1000;
    if (tally.n !== expected) {
      throw new Error(`${what}: handlers ran ${tally.n}, expected ${expected}`);
    }
    return seconds;
  } finally {
    await runtime.stop();
  }
}
