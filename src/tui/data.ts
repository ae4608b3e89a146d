/**
 * What the dashboard reads, as one interface ({@linkcode DashboardData})
 * with a store-backed implementation: the views of `src/admin/` (`jobs.ts`,
 * `queues.ts`, `schedules.ts`, `nodes.ts`, `store.ts`) assembled for each screen, a page of jobs at a time (keyset paging, so a
 * page costs the same at any depth of a large table), workflow runs through
 * `src/admin/workflows.ts` (a page of runs with their step counts, one run
 * as its view), pipelines through `src/admin/pipelines.ts` (the schedules
 * file's and those the store has runs of, with their last run, drops and
 * freshness; one with its newest runs), work queues through
 * `src/admin/work.ts` (the file's queues, one watched: its stats, lead time
 * and first open items with their claims), and the schedules file reloaded
 * when it changes.
 *
 * The store is opened lazily and never created: a missing file is an
 * error the dashboard shows, and the next refresh tries again.
 *
 * @module
 */

import { pipelineNeedsAttention } from "../admin/attention.ts";
import { pipelinesView, type PipelineView } from "../admin/pipelines.ts";
import { type JobDetail, jobDetail, jobsMatching, redactJob } from "../admin/jobs.ts";
import type { NodeView } from "../admin/nodes.ts";
import { queuesView, type QueueView } from "../admin/queues.ts";
import { type ScheduleStatus, schedulesView, storedConfig } from "../admin/schedules.ts";
import { emptyThroughput, throughputByQueue } from "../admin/throughput.ts";
import { watchWorkQueue, type WorkQueueWatch } from "../admin/work.ts";
import { statusView, type StoreCheck, storeCheck } from "../admin/store.ts";
import {
  listWorkflowRuns,
  type WorkflowRunSummary,
  type WorkflowRunView,
  workflowRunView,
} from "../admin/workflows.ts";
import type { Clock } from "../clock.ts";
import type { Job } from "../kernel/types.ts";
import { loadSchedules } from "../config/load.ts";
import { next } from "../schedule/occurrences.ts";
import type { Occurrence, Schedule } from "../schedule/types.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { describeLocation, isPostgresLocation, openStore, type StoreMode } from "../store/open.ts";
import type { JobFilter, JobMatch, Store } from "../store/store.ts";
import { exists } from "../text/files.ts";
import { RUN_STATES, type RunState } from "../workflow/types.ts";
import { type JobsFilter, type JobsTotal, SEARCH_COUNT_CAP, SEARCH_WINDOW } from "./search.ts";

/** How many upcoming occurrences the schedules view shows. */
export const UPCOMING = 5;
/** How many of its newest runs an open pipeline shows. */
export const PIPELINE_RUNS = 20;

/** One queue of the overview: its counts and pause, and its throughput by minute. */
export interface QueueOverview extends QueueView {
  /** Jobs completed per minute over the last hour, oldest first. */
  completed: number[];
  /** Attempts failed (retryable or discarded) per minute over the last hour, oldest first. */
  failed: number[];
}

/** Everything the overview shows. */
export interface Overview {
  now: number;
  store: StoreCheck;
  queues: QueueOverview[];
  nodes: NodeView[];
  /** Schedules that misfired or are disabled. */
  attention: ScheduleStatus[];
  /** Pipelines stale or whose last run paged or failed ({@linkcode needsAttention}). */
  pipelineAttention: PipelineView[];
  /** Why the schedules file could not be used: each error, none when it was read. */
  configProblems: string[];
}

/** One page of the jobs list. */
export interface JobsQuery {
  filter: JobsFilter;
  /** Newest first. */
  desc: boolean;
  /** Keyset paging: the last id of the previous page. */
  after?: number;
  limit: number;
}

/** One schedule of the schedules view. */
export interface ScheduleInfo {
  status: ScheduleStatus;
  /** Its declaration in the schedules file, or null when only the store remembers it. */
  schedule: Schedule | null;
  /** The next occurrences with their DST notes. */
  upcoming: Occurrence[];
  /**
   * Set while the schedules file has errors and so is not in force: its
   * first error. `schedule` is then the definition the store last synced
   * (what a daemon runs), not the file's.
   */
  notInForce?: string;
}

/** One group of dead letters: discarded jobs of one worker and schedule with one error. */
export interface DeadLetterGroup {
  worker: string;
  scheduleId: string | null;
  error: string;
  count: number;
  latestId: number;
  latestAt: number;
}

/** One page of the workflow runs list, newest first. */
export interface RunsQuery {
  /** Runs in this state only; null for any. */
  state: RunState | null;
  /** Keyset paging: the last id of the previous page. */
  after?: number;
  limit: number;
}

/** A page of workflow runs, with how many runs the store holds in each state. */
export interface RunsPage {
  runs: WorkflowRunSummary[];
  /** Every run counted by state (all definitions), each state present. */
  counts: Record<RunState, number>;
}

/** The work screen: every work queue of the file, and the one watched. */
export interface WorkScreen {
  /** Every work queue's id, in the file's order. */
  queues: string[];
  /** The queue watched (the one asked for, else the first); null when the file declares none. */
  watch: WorkQueueWatch | null;
  /** Why the schedules file (and so its queues) could not be used: each error. */
  configProblems: string[];
}

/** What the dashboard reads. Every method may reject: the dashboard shows why and keeps the last data. */
export interface DashboardData {
  /** Where the data comes from, for the title bar. */
  readonly location: string;
  /** Said after the location (a retired store: where it moved). @default "" */
  readonly note?: string;
  overview(now: number): Promise<Overview>;
  /** One page of jobs, args and meta redacted; a search reads the newest jobs only (see JobsTotal). */
  jobs(query: JobsQuery): Promise<Job[]>;
  /** How many jobs match `filter`: every page together (a search's count is bounded). */
  jobsCount(filter: JobsFilter): Promise<JobsTotal>;
  /** The names of every queue anyone knows of (jobs, a pause, the file, a node), sorted. */
  queues(): Promise<string[]>;
  /** One job with its attempts and audit trail, or null. */
  job(id: number): Promise<JobDetail | null>;
  schedules(now: number): Promise<ScheduleInfo[]>;
  deadLetters(limit: number): Promise<DeadLetterGroup[]>;
  /** One page of workflow runs with their step counts, and the runs counted by state. */
  workflowRuns(query: RunsQuery): Promise<RunsPage>;
  /** One run with its steps (in definition order) and compensation trail, or null. */
  workflowRun(id: number): Promise<WorkflowRunView | null>;
  /** Every pipeline (the file's in file order, then the store's others) with its last run. */
  pipelines(now: number): Promise<PipelineView[]>;
  /** One pipeline with its newest {@linkcode PIPELINE_RUNS} runs; null when none is `id`. */
  pipeline(id: string, now: number): Promise<PipelineView | null>;
  /**
   * The work queues of the schedules file, `queue` (else the first)
   * watched at `now` with its first `limit` open items.
   */
  work(queue: string | null, limit: number, now: number): Promise<WorkScreen>;
  /**
   * Whether the store may have changed since this was last asked (it says
   * so once). A SQLite file the dashboard opened itself tells (see
   * change_watch.ts); where the store cannot tell (PostgreSQL notifies new
   * jobs only; a store shared with a runtime commits on its own connection),
   * always true.
   * Absent: always true.
   */
  changed?(): boolean;
}

/** One read of a screen, as the reducer asks for it. */
export type ReadRequest =
  | { view: "overview" }
  | { view: "jobs"; query: JobsQuery }
  | { view: "detail"; id: number }
  | { view: "schedules" }
  | { view: "dead"; limit: number }
  | { view: "workflows"; query: RunsQuery }
  | { view: "workflow"; id: number }
  | { view: "pipelines" }
  | { view: "pipeline"; id: string }
  | { view: "work"; queue: string | null; limit: number };

/** The answer to a {@linkcode ReadRequest}. */
export type ReadResult =
  | { view: "overview"; overview: Overview }
  | { view: "jobs"; jobs: Job[]; total: JobsTotal }
  | { view: "detail"; id: number; detail: JobDetail | null }
  | { view: "schedules"; schedules: ScheduleInfo[] }
  | { view: "dead"; groups: DeadLetterGroup[] }
  | { view: "workflows"; page: RunsPage }
  | { view: "workflow"; id: number; run: WorkflowRunView | null }
  | { view: "pipelines"; pipelines: PipelineView[] }
  | { view: "pipeline"; id: string; pipeline: PipelineView | null }
  | { view: "work"; work: WorkScreen };

/** Makes the read `request` asks for, as of `now`. */
export async function readView(
  data: DashboardData,
  request: ReadRequest,
  now: number,
): Promise<ReadResult> {
  switch (request.view) {
    case "overview":
      return { view: "overview", overview: await data.overview(now) };
    case "jobs": {
      const [jobs, total] = await Promise.all([
        data.jobs(request.query),
        data.jobsCount(request.query.filter),
      ]);
      return { view: "jobs", jobs, total };
    }
    case "detail":
      return { view: "detail", id: request.id, detail: await data.job(request.id) };
    case "schedules":
      return { view: "schedules", schedules: await data.schedules(now) };
    case "dead":
      return { view: "dead", groups: await data.deadLetters(request.limit) };
    case "workflows":
      return { view: "workflows", page: await data.workflowRuns(request.query) };
    case "workflow":
      return { view: "workflow", id: request.id, run: await data.workflowRun(request.id) };
    case "pipelines":
      return { view: "pipelines", pipelines: await data.pipelines(now) };
    case "pipeline":
      return {
        view: "pipeline",
        id: request.id,
        pipeline: await data.pipeline(request.id, now),
      };
    case "work":
      return { view: "work", work: await data.work(request.queue, request.limit, now) };
  }
}

// ------------------------------------------------------------- the sources

/** Hands out the store, opening it when needed; rejects while it cannot be read. */
export interface StoreSource {
  /** Where the store is, as every screen shows it: credentials removed. */
  readonly location: string;
  /** Said after the location (a retired store: where it moved). @default "" */
  readonly note?: string;
  get(): Promise<Store>;
  close(): Promise<void>;
  /**
   * Whether the store is this source's alone: nothing else commits on its
   * connection, so its change watch (which hears only other connections)
   * says when the data may have changed. Not so for a store handed in.
   * @default false
   */
  readonly alone?: boolean;
}

/** A source that always hands out `store` (an already open store). */
export function fixedStore(store: Store): StoreSource {
  return {
    location: store.location,
    get: () => Promise.resolve(store),
    close: () => store.close(),
  };
}

/**
 * The store at `location` (a SQLite file or a PostgreSQL URL), opened on
 * first use in `mode` without creating or upgrading it. When a SQLite file
 * goes away the connection is dropped and each later call rejects until it
 * is back. Every rejection is one line naming the store, with the command
 * to paste where one helps (see `explain`).
 */
export function storeAt(
  location: string,
  options: {
    now: () => number;
    /** `read` for a read-only dashboard. @default "write" */
    mode?: Exclude<StoreMode, "create">;
    /** Leave to write to a store `jobs migrate-store` retired (`--force-moved`), audited. */
    writeMoved?: { actor: string; reason?: string | null };
    /** Said after the location at the top (a retired store: where it moved). */
    note?: string;
    /**
     * How long an action waits for another process's write lock (SQLite).
     * @default 1000
     */
    busyTimeoutMs?: number;
    /**
     * Why the store did not open, as one line: the CLI's wording, with the
     * commands to paste under the program's own name.
     */
    explain: (error: unknown) => string;
  },
): StoreSource {
  let store: Store | null = null;
  const drop = async () => {
    const held = store;
    store = null;
    await held?.close().catch(() => {});
  };
  const file = !isPostgresLocation(location) && location !== ":memory:";
  return {
    location: describeLocation(location),
    note: options.note ?? "",
    async get() {
      if (store && file && !(await exists(location))) await drop();
      if (store) return store;
      try {
        store = (await openStore(location, {
          mode: options.mode ?? "write",
          now: options.now(),
          writeMoved: options.writeMoved,
          // The dashboard reads once a second at most: it needs to hear of a
          // change, not to hear of it within 2 ms (see change_watch.ts).
          sqlite: {
            busyTimeoutMs: options.busyTimeoutMs ?? 1000,
            changePollMs: 250,
            changeWatch: { busyMs: 0 },
          },
        })).store;
      } catch (error) {
        throw new Error(options.explain(error), { cause: error });
      }
      return store;
    },
    close: drop,
    alone: true,
  };
}

/** The schedules file, or why it cannot be used. */
export interface LoadedConfig {
  config: ScheduleConfig | null;
  /** Every reason it cannot be used (each error of the file), none when it was read. */
  problems: string[];
  /** There is no file at all (as opposed to a file with errors). */
  missing?: boolean;
}

/** Reads the schedules file, again only when its modification time changed. */
export function configFile(path: string): () => Promise<LoadedConfig> {
  let last: { mtime: number | null; loaded: LoadedConfig } | null = null;
  return async () => {
    let mtime: number | null = null;
    try {
      mtime = (await Deno.stat(path)).mtime?.getTime() ?? null;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      return { config: null, problems: [`no schedules file at "${path}"`], missing: true };
    }
    if (last && mtime !== null && last.mtime === mtime) return last.loaded;
    const result = await loadSchedules(path);
    const loaded: LoadedConfig = result.ok ? { config: result.config, problems: [] } : {
      config: null,
      problems: result.errors.length > 0
        ? result.errors.map((e) => e.message)
        : [`${path}: invalid`],
    };
    last = { mtime, loaded };
    return loaded;
  };
}

// --------------------------------------------------- the store-backed data

/** The dashboard's data read from a store and a schedules file. */
export function storeData(params: {
  source: StoreSource;
  config: () => Promise<LoadedConfig>;
  clock: Clock;
  /** @default HEARTBEAT_MS */
  heartbeatMs?: number;
  /** How many of the newest ids a search reads. @default SEARCH_WINDOW */
  searchWindow?: number;
  /** Where a search's count stops. @default SEARCH_COUNT_CAP */
  searchCountCap?: number;
}): DashboardData {
  const { source, clock } = params;
  // The store last handed out, and whether it told of a change since the
  // last `changed()`. A store opened again starts unchanged: the read that
  // opened it comes after it listens.
  let watched: Store | null = null;
  let dirty = false;
  let unwatch = () => {};
  const get = async (): Promise<Store> => {
    const store = await source.get();
    if (store !== watched && source.alone) {
      unwatch();
      watched = store;
      dirty = false;
      unwatch = store.kind === "sqlite" ? store.onExternalChange(() => dirty = true) : () => {};
    }
    return store;
  };
  const window = params.searchWindow ?? SEARCH_WINDOW;
  const cap = params.searchCountCap ?? SEARCH_COUNT_CAP;
  return {
    location: source.location,
    note: source.note ?? "",
    changed() {
      if (!source.alone || watched?.kind !== "sqlite") return true;
      const was = dirty;
      dirty = false;
      return was;
    },
    async overview(now) {
      const store = await get();
      // A source hands out stores at the current schema only (see storeAt).
      const version = await store.schemaVersion();
      const check = await storeCheck(store, { clock, schema: { version, known: version } });
      if (!check.reachable) throw new Error(check.error ?? "the store is not reachable");
      const loaded = await params.config();
      const { queues, nodes, schedules } = await statusView({
        store,
        config: loaded.config,
        now,
        heartbeatMs: params.heartbeatMs,
      });
      const throughput = await throughputByQueue(store, now);
      const pipelines = await pipelinesOf(store, loaded, now);
      return {
        now,
        store: check,
        queues: queues.map((q) => ({
          ...q,
          ...(throughput.get(q.name) ?? emptyThroughput()),
        })),
        nodes,
        attention: schedules.filter((s) => s.misfires > 0 || (s.declared && !s.enabled)),
        pipelineAttention: pipelines.filter(needsAttention),
        configProblems: loaded.problems,
      };
    },
    async jobs(query) {
      const store = await get();
      const filter: JobFilter = {
        ...storeFilter(query.filter),
        desc: query.desc,
        limit: query.limit,
      };
      if (query.after !== undefined) filter.after = query.after;
      const newest = await searchWindowOf(store, query.filter, window);
      if (newest !== null) filter.above = newest.above;
      return (await store.jobsList(filter)).map(redactJob);
    },
    async jobsCount(filter) {
      const store = await get();
      const match = storeFilter(filter);
      if (filter.search === undefined) {
        return { count: await jobsMatching(store, match), atLeast: false, newest: null };
      }
      const newest = await searchWindowOf(store, filter, window);
      const bounded = newest === null ? match : { ...match, above: newest.above };
      const count = await jobsMatching(store, bounded, { atMost: cap + 1 });
      return { count: Math.min(count, cap), atLeast: count > cap, newest };
    },
    async queues() {
      const store = await get();
      const loaded = await params.config();
      return (await queuesView(store, loaded.config, [])).map((q) => q.name);
    },
    async job(id) {
      return await jobDetail(await get(), String(id));
    },
    async schedules(now) {
      const store = await get();
      const loaded = await params.config();
      // A file with errors is not in force: a daemon runs the definitions the store keeps.
      const broken = loaded.config === null && !loaded.missing && loaded.problems.length > 0;
      const config = broken ? await storedConfig(store) : loaded.config;
      const notInForce = broken ? { notInForce: loaded.problems[0]! } : {};
      const declared = new Map((config?.schedules ?? []).map((s) => [s.id, s]));
      return (await schedulesView(store, config, now)).map((status) => {
        const schedule = declared.get(status.id) ?? null;
        return {
          status,
          schedule,
          upcoming: schedule && status.enabled ? next(schedule, now, UPCOMING) : [],
          ...notInForce,
        };
      });
    },
    async deadLetters(limit) {
      return await (await get()).jobsDeadLetters({ limit });
    },
    async workflowRuns(query) {
      const store = await get();
      const runs = await listWorkflowRuns(store, {
        ...(query.state === null ? {} : { state: query.state }),
        ...(query.after === undefined ? {} : { after: query.after }),
        limit: query.limit,
      });
      return { runs, counts: runCounts(await store.workflowsCount()) };
    },
    async workflowRun(id) {
      return await workflowRunView(await get(), id);
    },
    async pipelines(now) {
      return await pipelinesOf(await get(), await params.config(), now);
    },
    async pipeline(id, now) {
      const store = await get();
      const view = (await pipelinesOf(store, await params.config(), now)).find((v) => v.id === id);
      if (!view || view.runs === 0) return view ?? null;
      return {
        ...view,
        recent: await store.ingestRunsList({ pipeline: id, limit: PIPELINE_RUNS }),
      };
    },
    async work(queue, limit, now) {
      const store = await get();
      const loaded = await params.config();
      const queues = loaded.config?.workQueues ?? [];
      const watched = queues.find((q) => q.id === queue) ?? queues[0];
      return {
        queues: queues.map((q) => q.id),
        // The operator watches every tenant's items.
        watch: watched
          ? await watchWorkQueue(store, watched, { tenant: null, now }, { limit })
          : null,
        configProblems: loaded.problems,
      };
    },
  };
}

/**
 * Every pipeline with its last run only: a list and the overview need no
 * more, and an open pipeline reads its newest runs itself. A schedules
 * file with errors leaves only the pipelines the store has runs of.
 */
async function pipelinesOf(
  store: Store,
  loaded: LoadedConfig,
  now: number,
): Promise<PipelineView[]> {
  return await pipelinesView({ store, pipelines: loaded.config?.pipelines ?? [], now, recent: 1 });
}

/** A pipeline the overview names: stale, or its last run paged or failed. */
export const needsAttention: (view: PipelineView) => boolean = pipelineNeedsAttention;

/** Runs by state over every definition, from the store's counts by definition and state. */
export function runCounts(
  rows: readonly { state: RunState; count: number }[],
): Record<RunState, number> {
  const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Record<RunState, number>;
  for (const row of rows) counts[row.state] = (counts[row.state] ?? 0) + row.count;
  return counts;
}

/**
 * The ids a search of `filter` reads: the newest `window`, those above the
 * newest id less `window`; null when there is no search or those hold
 * every job. Two reads of one row each, at the ends of the primary key.
 */
async function searchWindowOf(
  store: Store,
  filter: JobsFilter,
  window: number,
): Promise<JobsTotal["newest"]> {
  if (filter.search === undefined) return null;
  const [newest] = await store.jobsList({ desc: true, limit: 1 });
  const [oldest] = await store.jobsList({ limit: 1 });
  if (!newest || !oldest) return null;
  const above = newest.id - window;
  return oldest.id > above ? null : { window, above };
}

/** The store's filter for the jobs list's: no states given is any state. */
function storeFilter(filter: JobsFilter): JobMatch {
  const { states, ...rest } = filter;
  return states === undefined || states.length === 0 ? rest : { ...rest, state: states };
}
