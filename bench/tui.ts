/**
 * The `tui` phase of the benchmark: the reads behind `jobs tui` on a store
 * of 100,000 jobs (TUI_N) in every state, across four queues and three
 * schedules, with attempts (and failures) spread over the two hours before
 * the store's "now"; then `jobs status` and `jobs ls` as whole commands
 * (a process each, as an operator runs them) on the same store.
 *
 * ```sh
 * PHASES=tui deno task bench
 * PHASES=tui TUI_N=1000000 RUNS=1 deno task bench
 * ```
 *
 * The store is built through the store API alone (inserts, claims and
 * results, each batch one transaction), as a daemon would have left it. Each
 * read then runs TUI_REPS times on the warm store; a phase reports the
 * median of those, and the harness the median over RUNS fresh stores. The
 * store-level reads (`jobsList`, `jobsCountMatching`) show what each costs
 * unbounded; the `tui*` ones are what the dashboard reads per refresh
 * (`src/tui/data.ts`: a search bounded to the newest ids, its count capped).
 *
 * @module
 */

import { FakeClock } from "../src/clock.ts";
import type { JobResult, NewJob } from "../src/kernel/types.ts";
import { JOB_STATES, type JobState, openStore, type Store } from "../src/store.ts";
import { fixedStore, storeData } from "../src/tui/data.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface TuiConfig {
  /** Jobs in the store. */
  n: number;
  /** Times each read is repeated on one store. */
  reps: number;
}

/** Milliseconds of each read (medians over `reps`), and of building the store. */
export interface TuiTimes {
  buildMs: number;
  firstPageMs: number;
  /** The first page and 19 more, each after the last id of the one before. */
  twentyPagesMs: number;
  /** One page starting halfway down the table. */
  deepPageMs: number;
  discardedPageMs: number;
  discardedDeepPageMs: number;
  searchPageMs: number;
  countMs: number;
  /** The jobs view's total (jobsCountMatching): every job, one state of its own index, a search. */
  matchAllMs: number;
  matchDiscardedMs: number;
  matchSearchMs: number;
  throughputMs: number;
  deadLettersMs: number;
  /** The overview screen as the dashboard reads it: the counts, nodes, schedules, throughput. */
  tuiOverviewMs: number;
  /** The jobs screen searching: its first page and its count, as the dashboard reads them. */
  tuiSearchPageMs: number;
  tuiSearchCountMs: number;
  /** The same for a text no job holds: the most a search's page and count read. */
  tuiSearchNonePageMs: number;
  tuiSearchNoneCountMs: number;
  /** `jobs status` and `jobs ls` (50 newest), each a whole process from start to exit. */
  statusCmdMs: number;
  lsCmdMs: number;
}

const PAGE = 50;
const MINUTE = 60_000;
/** The store's "now": every instant written is before it. */
export const NOW = Date.UTC(2026, 0, 1, 12);
/** Jobs are written over the two hours before NOW. */
export const SPAN_MS = 2 * 60 * MINUTE;
const BATCH = 1000;
const QUEUES = ["default", "mail", "reports", "billing"];
const SCHEDULES = ["nightly", "hourly", "sync"];
const ERRORS = [
  "connect ECONNREFUSED 10.0.0.7:5432\n    at TCPConnectWrap.afterConnect",
  "HTTP 503 from https://api.example.com/v1/charge\n    at charge (billing.ts:88)",
  'invalid address "nobody@"\n    at send (mail.ts:12)',
  "report template missing: q4.html",
];
/** The search string: one customer, 20 scattered jobs of 100,000. */
const SEARCH = "cust-04242";
/** A search text no job holds. */
const NOWHERE = "no-such-customer";

/** Builds `n` jobs in a fresh store (a file or a schema), then times the dashboard's reads. */
export async function phaseTui(
  location: string,
  cfg: TuiConfig,
  log: (message: string) => void,
): Promise<TuiTimes> {
  const { store } = await openStore(location, { mode: "create", now: NOW - SPAN_MS });
  try {
    const started = performance.now();
    await build(store, cfg.n);
    const buildMs = performance.now() - started;
    log(`  built ${cfg.n.toLocaleString("en-US")} jobs in ${(buildMs / 1000).toFixed(1)} s`);
    const counts = await checkStore(store, cfg.n);
    log(`  ${JOB_STATES.map((s) => `${s} ${counts[s]}`).join(", ")}`);
    return {
      buildMs,
      ...await timeReads(store, cfg.reps),
      ...await timeCommands(location, cfg.reps, counts),
    };
  } finally {
    await store.close();
  }
}

// -------------------------------------------------------------------- build

/**
 * Inserts `n` jobs in batches of 1000, each batch at a later instant of the
 * span; then claims 90% of what is due per queue and records results: of
 * 100 claimed, 80 complete, 9 are discarded, 4 cancelled, 4 fail to retry
 * later, and 3 stay executing. 5% of each batch is scheduled for tomorrow.
 */
export async function build(store: Store, n: number): Promise<void> {
  const batches = Math.ceil(n / BATCH);
  for (let b = 0; b < batches; b++) {
    const now = NOW - SPAN_MS + Math.floor((b * SPAN_MS) / batches);
    const jobs: NewJob[] = [];
    for (let i = b * BATCH; i < Math.min(n, (b + 1) * BATCH); i++) jobs.push(newJob(i, now));
    await store.jobsInsert({ jobs, now });
    for (const queue of QUEUES) {
      const due = jobs.filter((j) => j.queue === queue && j.scheduledAt <= now).length;
      const { jobs: claimed } = await store.jobsClaim({
        queue,
        node: "bench:1",
        limit: Math.floor(due * 0.9),
        now,
        leaseMs: 24 * 60 * MINUTE,
      });
      // Results land over the next minute, so failures spread over buckets.
      const at = now + 30_000;
      const results = claimed.map((job, k) => result(job, k, at)).filter((r) => r !== null);
      await store.jobsRecord({ node: "bench:1", now: at, results });
    }
  }
}

function newJob(i: number, now: number): NewJob {
  const schedule = i % 5 === 0 ? SCHEDULES[(i / 5) % SCHEDULES.length]! : null;
  return {
    queue: QUEUES[i % QUEUES.length]!,
    worker: schedule ? "command" : ["send-email", "charge-card", "build-report"][i % 3]!,
    args: JSON.stringify({
      customer: `cust-${String(i % 5000).padStart(5, "0")}`,
      order: i,
      note: "x".repeat(40),
    }),
    meta: "{}",
    tags: JSON.stringify(i % 2 ? ["eu"] : ["us", "priority"]),
    tenant: null,
    priority: i % 3,
    maxAttempts: 5,
    uniqueKey: null,
    uniqueStates: null,
    // One occurrence per job of a schedule: unique, as the planner's are.
    occurrence: schedule ? `${schedule}@${new Date(now + i).toISOString()}` : null,
    scheduleId: schedule,
    scheduledFor: schedule ? now : null,
    scheduledAt: i % 20 === 7 ? now + 24 * 60 * MINUTE : now,
  };
}

function result(
  job: { id: number; fence: number; attempt: number; attemptedAt: number },
  k: number,
  at: number,
): JobResult | null {
  const base = { id: job.id, fence: job.fence, attempt: job.attempt, startedAt: job.attemptedAt };
  const slot = k % 100;
  const error = ERRORS[job.id % ERRORS.length]!;
  if (slot < 80) return { ...base, outcome: "completed" };
  if (slot < 89) return { ...base, outcome: "discarded", error };
  if (slot < 93) return { ...base, outcome: "cancelled", error: "cancelled by the bench" };
  if (slot < 97) return { ...base, outcome: "retryable", error, at: at + 60 * MINUTE };
  return null; // stays executing
}

/** The store holds `n` jobs with every state present; returns the counts per state. */
async function checkStore(store: Store, n: number): Promise<Record<JobState, number>> {
  const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  for (const c of await store.jobsCount({})) counts[c.state] += c.count;
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  if (total !== n) throw new Error(`tui: the store holds ${total} jobs, expected ${n}`);
  const missing = JOB_STATES.filter((s) => counts[s] === 0);
  if (missing.length) throw new Error(`tui: no ${missing.join(", ")} jobs in the store`);
  return counts;
}

// -------------------------------------------------------------------- reads

async function timeReads(
  store: Store,
  reps: number,
): Promise<Omit<TuiTimes, "buildMs" | "statusCmdMs" | "lsCmdMs">> {
  const [first] = await store.jobsList({ desc: true, limit: 1 });
  const middle = Math.floor(first!.id / 2);

  const twentyPages = async () => {
    const seen: number[] = [];
    let after: number | undefined;
    for (let page = 0; page < 20; page++) {
      const rows = await store.jobsList({ desc: true, limit: PAGE, after });
      seen.push(...rows.map((j) => j.id));
      after = rows.at(-1)?.id;
    }
    return seen;
  };
  const pages = await twentyPages();
  expect(
    pages.length === 20 * PAGE && pages.every((id, i) => i === 0 || id < pages[i - 1]!),
    "20 pages hold 1,000 distinct jobs, newest first",
  );
  const discarded = await store.jobsList({
    state: "discarded",
    desc: true,
    limit: PAGE,
    after: middle,
  });
  expect(
    discarded.length === PAGE && discarded.every((j) => j.state === "discarded" && j.id < middle),
    "a deep page of discarded jobs holds only discarded jobs past its start",
  );
  const found = await store.jobsList({ search: SEARCH, desc: true, limit: PAGE });
  expect(
    found.length > 0 && found.every((j) => JSON.stringify(j.args).includes(SEARCH)),
    `the search for "${SEARCH}" finds its jobs`,
  );
  const total = (await store.jobsCount({})).reduce((sum, c) => sum + c.count, 0);
  expect(await store.jobsCountMatching({}) === total, "the total of every job is the count's");
  expect(
    await store.jobsCountMatching({ state: "discarded" }) ===
      (await store.jobsCount({ state: "discarded" })).reduce((sum, c) => sum + c.count, 0),
    "the discarded total is the count's",
  );
  expect(
    await store.jobsCountMatching({ search: SEARCH }) ===
      (await store.jobsList({ search: SEARCH })).length,
    "the search's total is its listing's length",
  );
  const hour = { since: NOW - 60 * MINUTE, until: NOW, bucketMs: MINUTE };
  const buckets = await store.jobsThroughput(hour);
  expect(
    buckets.some((b) => b.completed > 0) && buckets.some((b) => b.failed > 0),
    "the last hour has completions and failures",
  );
  const groups = await store.jobsDeadLetters({ limit: 20 });
  expect(groups.length > 0, "dead letters are grouped");
  const clock = new FakeClock(NOW);
  const config = () => Promise.resolve({ config: null, problems: [] });
  const tui = storeData({ source: fixedStore(store), config, clock });
  const searching = (search: string) => ({ filter: { search }, desc: true, limit: PAGE });
  const seen = await tui.jobs(searching(SEARCH));
  expect(
    seen.length > 0 && seen.every((j) => JSON.stringify(j.args).includes(SEARCH)),
    `the dashboard's search for "${SEARCH}" finds its jobs`,
  );
  const bounded = await tui.jobsCount({ search: SEARCH });
  const every = await store.jobsCountMatching({ search: SEARCH });
  expect(
    bounded.count >= seen.length && bounded.count <= every,
    "the dashboard's search count holds its first page and no more than every match",
  );
  expect(
    (await tui.overview(NOW)).queues.length === QUEUES.length,
    "the overview lists the queues",
  );

  return {
    firstPageMs: await median(reps, () => store.jobsList({ desc: true, limit: PAGE })),
    twentyPagesMs: await median(reps, twentyPages),
    deepPageMs: await median(
      reps,
      () => store.jobsList({ desc: true, limit: PAGE, after: middle }),
    ),
    discardedPageMs: await median(
      reps,
      () => store.jobsList({ state: "discarded", desc: true, limit: PAGE }),
    ),
    discardedDeepPageMs: await median(
      reps,
      () => store.jobsList({ state: "discarded", desc: true, limit: PAGE, after: middle }),
    ),
    searchPageMs: await median(
      reps,
      () => store.jobsList({ search: SEARCH, desc: true, limit: PAGE }),
    ),
    countMs: await median(reps, () => store.jobsCount({})),
    matchAllMs: await median(reps, () => store.jobsCountMatching({})),
    matchDiscardedMs: await median(reps, () => store.jobsCountMatching({ state: "discarded" })),
    matchSearchMs: await median(reps, () => store.jobsCountMatching({ search: SEARCH })),
    throughputMs: await median(reps, () => store.jobsThroughput(hour)),
    deadLettersMs: await median(reps, () => store.jobsDeadLetters({ limit: 20 })),
    tuiOverviewMs: await median(reps, () => tui.overview(NOW)),
    tuiSearchPageMs: await median(reps, () => tui.jobs(searching(SEARCH))),
    tuiSearchCountMs: await median(reps, () => tui.jobsCount({ search: SEARCH })),
    tuiSearchNonePageMs: await median(reps, () => tui.jobs(searching(NOWHERE))),
    tuiSearchNoneCountMs: await median(reps, () => tui.jobsCount({ search: NOWHERE })),
  };
}

// ----------------------------------------------------------------- commands

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/**
 * `jobs status` and `jobs ls` on `location`, each run `reps` times as a
 * process of its own (after one untimed run, which fills Deno's caches):
 * the wall time from spawn to exit, median. Each run's output is checked.
 */
async function timeCommands(
  location: string,
  reps: number,
  counts: Record<JobState, number>,
): Promise<{ statusCmdMs: number; lsCmdMs: number }> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-bench-tui-" });
  try {
    // No schedules file: status shows the store's queues and says the file is missing.
    const config = `${dir}/schedules.yaml`;
    const status = () => command(["status", "--db", location, "--config", config]);
    const ls = () => command(["ls", "--db", location]);
    const completed = String(counts.completed / QUEUES.length);
    const checkStatus = (out: string) =>
      expect(
        QUEUES.every((q) => out.includes(q)) && out.includes("completed"),
        `jobs status lists every queue with its counts (completed about ${completed} each)`,
      );
    const checkLs = (out: string) =>
      expect(out.trim().split("\n").length === PAGE + 1, `jobs ls prints ${PAGE} jobs`);
    checkStatus(await status());
    checkLs(await ls());
    return {
      statusCmdMs: await median(reps, async () => checkStatus(await status())),
      lsCmdMs: await median(reps, async () => checkLs(await ls())),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs `jobs <args>` (this checkout's main.ts) to its exit; its standard output, or why it failed. */
async function command(args: string[]): Promise<string> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (code !== 0) {
    throw new Error(`tui: jobs ${args[0]} exited ${code}: ${text.decode(stderr).trim()}`);
  }
  return text.decode(stdout);
}

/** The median wall time of `reps` calls of `fn`, in ms. */
async function median(reps: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < Math.max(1, reps); i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  return times.length % 2 ? times[mid]! : (times[mid - 1]! + times[mid]!) / 2;
}

function expect(ok: boolean, what: string): void {
  if (!ok) throw new Error(`tui: expected ${what}`);
}
