/**
 * The `console` phase of the benchmark: the web console's server time on a
 * store of 1,000,000 jobs (CONSOLE_N), on SQLite (a temporary file) and on
 * PostgreSQL (a temporary schema of `BENCH_PG`, `BENCH_DB` or the local
 * test database), as ISSUE 29's "Fast on a big store" asks.
 *
 * ```sh
 * PHASES=console RUNS=1 deno task bench
 * PHASES=console CONSOLE_N=100000 CONSOLE_REPS=20 deno task bench
 * ```
 *
 * The store is built through the store API alone, as a daemon leaves it:
 * inserts, claims and results, 10,000 jobs per batch over the two hours
 * before now, in every state, across four queues, five workers, three
 * tenants and the installation, three schedules (one job in 50 an
 * occurrence of one; their rows synced with `schedulesSync`) and 1000 audit rows; failed jobs hold errors, one in
 * 40 of them naming {@linkcode SEARCH}. The console is then built in
 * process (`consoleApp`, the real clock, a silent logger) with a host
 * person signed in, and each GET page of `CONSOLE_ROUTES` (path
 * parameters filled with real ids; `/events` aside) is fetched
 * CONSOLE_WARM times, then timed CONSOLE_REPS times: request to the last
 * byte of the answer. The jobs list filtered by error text
 * (`/jobs?search=`) is timed the same way. Last, the live feed
 * (`LiveFeed`) reads the store for 1 subscriber and then for 10 over
 * CONSOLE_TICKS ticks each (a fake clock drives its interval), counting
 * the store calls per tick through a counting store: ten viewers must cost
 * what one does.
 *
 * Then ({@linkcode phaseConsoleBulk}) the bulk retry: CONSOLE_BULK (100,000)
 * discarded jobs are added in a queue of their own, and the console retries all of them as a person
 * does: the preview page (`GET /jobs/bulk`), the confirmation (`POST
 * /jobs/bulk`, the snapshot of their ids in one transaction), then the run's
 * `jobs.bulk` job walks them (the real worker, through `performJob`) while
 * its progress page (`GET /bulk/:id`) is fetched again and again: each
 * request's time, the walk's, and the jobs it changed.
 *
 * @module
 */

import { bulkWorker } from "../src/admin/bulk_worker.ts";
import { addPerson } from "../src/admin/people.ts";
import { signIn } from "../src/admin/sessions.ts";
import { FakeClock, SystemClock } from "../src/clock.ts";
import { CONSOLE_ROUTES } from "../src/console/access.ts";
import { consoleApp } from "../src/console/app.ts";
import { LiveFeed } from "../src/console/live.ts";
import { SESSION_COOKIE } from "../src/console/security.ts";
import type { JobResult, NewJob } from "../src/kernel/types.ts";
import { silentLogger } from "../src/kernel/logger.ts";
import { JOB_STATES, type JobState, openStore, type Store } from "../src/store.ts";
import { storeTransfer } from "../src/store/transfer.ts";
import { performJob } from "../src/testing.ts";
import { analyzeStore } from "./stores.ts";

/** The phase's settings (see bench.ts for how they come from the environment). */
export interface ConsoleConfig {
  /** Jobs in the store. */
  n: number;
  /** Timed fetches of each page. */
  reps: number;
  /** Untimed fetches of each page before them. */
  warm: number;
  /** Ticks of the live feed for 1 and for 10 subscribers. */
  ticks: number;
}

/** One page's server times. */
export interface PageTimes {
  /** The path fetched (`/jobs/123`). */
  path: string;
  /** The route it stands for (`/jobs/:id`). */
  route: string;
  status: number;
  p50Ms: number;
  p95Ms: number;
}

/** What the phase measured on one store. */
export interface ConsoleTimes {
  buildMs: number;
  pages: PageTimes[];
  /** The slowest page's p95, and which page it is. */
  pageP95MaxMs: number;
  pageP95MaxPath: string;
  search: PageTimes;
  /** Store calls per tick of the live feed, with 1 and with 10 subscribers of one scope. */
  liveReadsPerTick1: number;
  liveReadsPerTick10: number;
  /** The store time of one tick (median over the ticks of both runs). */
  liveTickMs: number;
}

/** The bulk retry's request times and its walk. */
export interface BulkTimes {
  /** Jobs the run took and changed. */
  total: number;
  changed: number;
  /** `GET /jobs/bulk`: the preview's count. */
  previewMs: number;
  /** `POST /jobs/bulk`: the snapshot, the run and its job. */
  startMs: number;
  /** The walk of the run's job, start to end. */
  walkMs: number;
  /** `GET /bulk/:id` while the walk runs: how many, and their slowest. */
  progressFetches: number;
  progressMaxMs: number;
}

const MINUTE = 60_000;
const SPAN_MS = 2 * 60 * MINUTE;
const BATCH = 10_000;
const QUEUES = ["default", "mail", "reports", "billing"];
const WORKERS = ["send-email", "charge-card", "build-report", "sync-crm", "resize-image"];
const TENANTS = [null, "acme", "globex", "initech"];
const SCHEDULES = ["nightly", "hourly", "sync"];
/** The error text the search looks for: in one failed job of 40. */
export const SEARCH = "ledger-shard-7";
const ERRORS = [
  "connect ECONNREFUSED 10.0.0.7:5432\n    at TCPConnectWrap.afterConnect",
  "HTTP 503 from https://api.example.com/v1/charge\n    at charge (billing.ts:88)",
  'invalid address "nobody@"\n    at send (mail.ts:12)',
  "report template missing: q4.html",
];
const SEARCH_ERROR = `write to ${SEARCH} timed out after 30 s\n    at post (ledger.ts:41)`;
const PASSWORD = "bench-password";

/** Builds `n` jobs in a fresh store (a file or a schema), then times the console on it. */
export async function phaseConsole(
  location: string,
  cfg: ConsoleConfig,
  log: (message: string) => void,
  /** A store the phase built before: copied (`storeTransfer`) instead of built again. */
  source?: string,
): Promise<ConsoleTimes> {
  // The store's history ends now, so the pages' "last hour" holds jobs.
  const now = Math.floor(Date.now() / 1000) * 1000 - MINUTE;
  const { store } = await openStore(location, { mode: "create", now: now - SPAN_MS });
  try {
    const started = performance.now();
    if (source === undefined) await build(store, cfg.n, now);
    else {
      await copy(source, store, now);
      await analyzeStore(location);
    }
    const buildMs = performance.now() - started;
    log(
      `  ${source === undefined ? "built" : "copied"} ${cfg.n.toLocaleString("en-US")} jobs in ${
        (buildMs / 1000).toFixed(1)
      } s`,
    );
    const counts = await checkStore(store, cfg.n);
    log(`  ${JOB_STATES.map((s) => `${s} ${counts[s]}`).join(", ")}`);
    return { buildMs, ...await timePages(store, cfg, log), ...await timeLive(store, cfg) };
  } finally {
    await store.close();
  }
}

// -------------------------------------------------------------------- build

/**
 * Inserts `n` jobs in batches of 10,000, each batch at a later instant of the
 * two hours before `end`; claims 90% of what is due per queue and records
 * results: of 100 claimed, 80 complete, 9 are discarded, 4 cancelled, 4
 * fail to retry later, and 3 stay executing. 5% are scheduled for tomorrow.
 * Then the schedules' rows and 1000 audit rows.
 */
async function build(store: Store, n: number, end: number): Promise<void> {
  const batches = Math.ceil(n / BATCH);
  for (let b = 0; b < batches; b++) {
    const now = end - SPAN_MS + Math.floor((b * SPAN_MS) / batches);
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
      const at = now + 30_000;
      const results = claimed.map((job, k) => result(job, k, at)).filter((r) => r !== null);
      await store.jobsRecord({ node: "bench:1", now: at, results });
    }
  }
  await store.schedulesSync({
    schedules: SCHEDULES.map((id, k) => ({ id, hash: `bench-${id}`, tenant: TENANTS[k] ?? null })),
    now: end,
  });
  for (let i = 0; i < 1000; i++) {
    await store.auditRecord({
      at: end - SPAN_MS + i * 1000,
      actor: i % 2 ? "ops" : "alice",
      action: ["job.retry", "job.cancel", "queue.pause", "queue.resume"][i % 4]!,
      target: i % 4 < 2 ? `job:${i * 97 + 1}` : `queue:${QUEUES[i % QUEUES.length]}`,
      reason: i % 3 ? "bench" : null,
    });
  }
}

/**
 * Copies the store at `source` into `store` as `jobs migrate-store` does:
 * the same rows, far faster on PostgreSQL than claims and results one
 * batch at a time. The copy is then analyzed, as autovacuum would have.
 */
async function copy(source: string, store: Store, now: number): Promise<void> {
  const { store: from } = await openStore(source, { mode: "read", now });
  try {
    await storeTransfer(from, store, { now, batchSize: 5000 });
  } finally {
    await from.close();
  }
}

/**
 * Job `i` of a batch written at `now`. One job in 50 is a schedule's
 * occurrence, each its own instant (`scheduled_for`, as the planner writes
 * them) and first in line (priority 0, as a due occurrence is claimed
 * before older work of its queue), so no schedule holds a long run of
 * unfinished occurrences, which the planner would never leave.
 */
function newJob(i: number, now: number): NewJob {
  const schedule = i % 50 === 0 ? SCHEDULES[(i / 50) % SCHEDULES.length]! : null;
  // Due just before the batch is written, a millisecond apart.
  const due = now - BATCH + (i % BATCH);
  return {
    queue: QUEUES[i % QUEUES.length]!,
    worker: schedule ? "command" : WORKERS[i % WORKERS.length]!,
    args: JSON.stringify({
      customer: `cust-${String(i % 5000).padStart(5, "0")}`,
      order: i,
      note: "x".repeat(40),
    }),
    meta: "{}",
    tags: JSON.stringify(i % 2 ? ["eu"] : ["us", "priority"]),
    tenant: TENANTS[i % 7 % TENANTS.length]!,
    priority: schedule ? 0 : i % 3,
    maxAttempts: 5,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: schedule ? `${schedule}@${new Date(due).toISOString()}` : null,
    scheduleId: schedule,
    scheduledFor: schedule ? due : null,
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
  const error = job.id % 40 === 3 ? SEARCH_ERROR : ERRORS[job.id % ERRORS.length]!;
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
  if (total !== n) throw new Error(`console: the store holds ${total} jobs, expected ${n}`);
  const missing = JOB_STATES.filter((s) => counts[s] === 0);
  if (missing.length) throw new Error(`console: no ${missing.join(", ")} jobs in the store`);
  return counts;
}

// -------------------------------------------------------------------- pages

/** Nearest-rank quantile of an ascending array. */
function quantile(sorted: number[], q: number): number {
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx]!;
}

/** Every GET page of the route table with its path parameters filled from the store. */
async function pagePaths(store: Store): Promise<{ route: string; path: string }[]> {
  const [discarded] = await store.jobsList({ state: "discarded", desc: true, limit: 1 });
  if (!discarded) throw new Error("console: no discarded job to open");
  const params: Record<string, string> = {
    "/jobs/:id": String(discarded.id),
    "/schedules/:id": SCHEDULES[0]!,
    // No workflow run or pipeline in the store: the page's answer to an unknown one.
    "/workflows/:id": "bench-none",
    "/pipelines/:name/drops": "orders",
  };
  return CONSOLE_ROUTES
    .filter((r) => r.method === "GET" && r.path !== "/events")
    .map((r) => ({
      route: r.path,
      path: r.path.includes(":") ? r.path.replace(/:\w+/, params[r.path] ?? "x") : r.path,
    }));
}

async function timePages(
  store: Store,
  cfg: ConsoleConfig,
  log: (message: string) => void,
): Promise<Pick<ConsoleTimes, "pages" | "pageP95MaxMs" | "pageP95MaxPath" | "search">> {
  const clock = new SystemClock();
  const live = new LiveFeed(store, clock, silentLogger);
  const app = consoleApp({ store, clock, logger: silentLogger, live });
  try {
    const cookie = await signedIn(store, clock);
    const time = async (route: string, path: string): Promise<PageTimes> => {
      const samples: number[] = [];
      let status = 0;
      for (let i = 0; i < cfg.warm + cfg.reps; i++) {
        const started = performance.now();
        const response = await app.fetch(
          new Request(`http://127.0.0.1${path}`, { headers: { cookie } }),
          { remote: "127.0.0.1" },
        );
        await response.arrayBuffer();
        if (i >= cfg.warm) samples.push(performance.now() - started);
        status = response.status;
      }
      if (status >= 500 || status === 303 || status === 403) {
        throw new Error(`console: GET ${path} answered ${status}`);
      }
      samples.sort((a, b) => a - b);
      const times = {
        path,
        route,
        status,
        p50Ms: quantile(samples, 0.5),
        p95Ms: quantile(samples, 0.95),
      };
      log(
        `  ${path} ${status}: p50 ${times.p50Ms.toFixed(1)} ms, p95 ${times.p95Ms.toFixed(1)} ms`,
      );
      return times;
    };
    const pages: PageTimes[] = [];
    for (const { route, path } of await pagePaths(store)) pages.push(await time(route, path));
    const search = await time("/jobs", `/jobs?${new URLSearchParams({ search: SEARCH })}`);
    const slowest = pages.reduce((a, b) => b.p95Ms > a.p95Ms ? b : a);
    return { pages, pageP95MaxMs: slowest.p95Ms, pageP95MaxPath: slowest.path, search };
  } finally {
    await live.close();
  }
}

/** A new admin of `store` signed in: the cookie of their session. */
async function signedIn(store: Store, clock: SystemClock): Promise<string> {
  // A name of its own per store: a copied store holds the person the first one signed in.
  const person = `bench-${crypto.randomUUID().slice(0, 8)}`;
  const who = { actor: "bench", reason: null, now: clock.now() };
  await addPerson(store, { name: person, roles: ["admin"], password: PASSWORD }, who, "host");
  const session = await signIn(store, person, PASSWORD, { now: clock.now() });
  if (session === null) throw new Error("console: the bench's person could not sign in");
  return `${SESSION_COOKIE}=${session.id}`;
}

// --------------------------------------------------------------------- bulk

/** The queue the bulk retry's jobs are added to, so the filter matches them alone. */
const BULK_BENCH_QUEUE = "bench-bulk";

/**
 * Adds `n` discarded jobs in {@linkcode BULK_BENCH_QUEUE} to the store at
 * `location` (one the phase measured), then retries all of them through the
 * console as a person does (see the module's doc). Apart from
 * {@linkcode phaseConsole}: the PostgreSQL store is a copy of SQLite's, made
 * after SQLite's pages are timed and before its bulk retry.
 */
export async function phaseConsoleBulk(
  location: string,
  n: number,
  log: (message: string) => void,
): Promise<BulkTimes> {
  const now = Date.now();
  const { store } = await openStore(location, { mode: "write", now });
  const system = new SystemClock();
  const live = new LiveFeed(store, system, silentLogger);
  const app = consoleApp({ store, clock: system, logger: silentLogger, live });
  try {
    return await timeBulk(store, app, await signedIn(store, system), n, now, log);
  } finally {
    await live.close();
    await store.close();
  }
}

async function timeBulk(
  store: Store,
  app: ReturnType<typeof consoleApp>,
  cookie: string,
  n: number,
  now: number,
  log: (message: string) => void,
): Promise<BulkTimes> {
  for (let at = 0; at < n; at += BATCH) {
    const jobs = Array.from({ length: Math.min(BATCH, n - at) }, (_, k) => ({
      ...newJob(at + k, now),
      queue: BULK_BENCH_QUEUE,
      scheduledAt: now,
      // Plain jobs: an occurrence of the measured store's would be refused as taken.
      scheduleId: null,
      scheduledFor: null,
      occurrence: null,
      uniqueKey: null,
      uniqueStates: null,
    }));
    const inserted = await store.jobsInsert({ jobs, now });
    await store.jobsDiscard({ ids: inserted.map((r) => r.id), now, reason: "bench" });
  }
  const fetch = async (path: string, init: RequestInit = {}) => {
    const started = performance.now();
    const response = await app.fetch(
      new Request(`http://127.0.0.1${path}`, {
        ...init,
        headers: { cookie, "sec-fetch-site": "same-origin", ...init.headers },
        redirect: "manual",
      }),
      { remote: "127.0.0.1" },
    );
    await response.arrayBuffer();
    return { response, ms: performance.now() - started };
  };
  const filter = new URLSearchParams({ state: "discarded", queue: BULK_BENCH_QUEUE });
  const preview = await fetch(`/jobs/bulk?${filter}&action=retry`);
  if (preview.response.status !== 200) {
    throw new Error(`console: the bulk preview answered ${preview.response.status}`);
  }
  const start = await fetch("/jobs/bulk", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ action: "retry", filter: String(filter), reason: "bench" }),
  });
  const location = start.response.headers.get("location") ?? "";
  const id = Number(/^\/bulk\/(\d+)$/.exec(location)?.[1]);
  if (start.response.status !== 303 || !Number.isSafeInteger(id)) {
    throw new Error(`console: the bulk start answered ${start.response.status} ${location}`);
  }
  const clock = new FakeClock(Date.now());
  const worker = bulkWorker({ store: () => store, clock });
  const started = performance.now();
  let walking = true;
  const walk = performJob(worker, { kind: "bulk", run: id }, { clock, maxAttempts: 1 })
    .finally(() => walking = false);
  const progress: number[] = [];
  while (walking) {
    const page = await fetch(`/bulk/${id}`);
    if (page.response.status !== 200) {
      throw new Error(`console: the bulk page answered ${page.response.status}`);
    }
    progress.push(page.ms);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const result = await walk;
  const walkMs = performance.now() - started;
  const run = await store.bulkRunGet({ id });
  if (result.outcome !== "completed" || run?.state !== "completed") {
    throw new Error(`console: the bulk run ended ${result.outcome}, ${run?.state}`);
  }
  const times: BulkTimes = {
    total: run.total,
    changed: run.changed,
    previewMs: preview.ms,
    startMs: start.ms,
    walkMs,
    progressFetches: progress.length,
    progressMaxMs: Math.max(0, ...progress),
  };
  log(
    `  bulk retry of ${run.total.toLocaleString("en-US")}: preview ${
      preview.ms.toFixed(0)
    } ms, start ${start.ms.toFixed(0)} ms, walk ${(walkMs / 1000).toFixed(1)} s (${
      run.changed.toLocaleString("en-US")
    } changed), progress page max ${times.progressMaxMs.toFixed(0)} ms over ${progress.length}`,
  );
  return times;
}

// --------------------------------------------------------------------- live

/** `store` with each call counted and timed: what the live feed costs the store. */
function countingStore(store: Store): { store: Store; calls: { n: number; ms: number } } {
  const calls = { n: 0, ms: 0 };
  const counted = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.n++;
        const started = performance.now();
        const out = value.apply(target, args);
        if (out instanceof Promise) {
          return out.finally(() => calls.ms += performance.now() - started);
        }
        calls.ms += performance.now() - started;
        return out;
      };
    },
  });
  return { store: counted, calls };
}

/** Waits (yielding to I/O) until `done` holds, for at most a minute. */
async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 60_000;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`console: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Store calls per tick and the store time of each tick, for `viewers` subscribers of one scope. */
async function liveRun(
  store: Store,
  viewers: number,
  ticks: number,
): Promise<{ perTick: number; tickMs: number[] }> {
  const counting = countingStore(store);
  const clock = new FakeClock(Date.now());
  const feed = new LiveFeed(counting.store, clock, silentLogger, 1000);
  const tickMs: number[] = [];
  try {
    const stops = Array.from({ length: viewers }, () => feed.subscribe(null, () => {}));
    // The first read happens at once; the feed then sleeps on the fake clock.
    await until(() => feed.reads === 1 && clock.sleepers === 1, "the first live read");
    const base = { n: counting.calls.n, reads: feed.reads };
    for (let t = 0; t < ticks; t++) {
      const before = { reads: feed.reads, ms: counting.calls.ms };
      clock.advance(1000);
      await until(() => feed.reads === before.reads + 1 && clock.sleepers === 1, "a live tick");
      tickMs.push(counting.calls.ms - before.ms);
    }
    const perTick = (counting.calls.n - base.n) / (feed.reads - base.reads);
    for (const stop of stops) stop();
    return { perTick, tickMs };
  } finally {
    await feed.close();
  }
}

async function timeLive(
  store: Store,
  cfg: ConsoleConfig,
): Promise<Pick<ConsoleTimes, "liveReadsPerTick1" | "liveReadsPerTick10" | "liveTickMs">> {
  const one = await liveRun(store, 1, cfg.ticks);
  const ten = await liveRun(store, 10, cfg.ticks);
  const ticks = [...one.tickMs, ...ten.tickMs].sort((a, b) => a - b);
  return {
    liveReadsPerTick1: one.perTick,
    liveReadsPerTick10: ten.perTick,
    liveTickMs: quantile(ticks, 0.5),
  };
}
