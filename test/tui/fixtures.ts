/**
 * Fixtures of the dashboard's component tests: jobs and views built in
 * memory, a {@linkcode DashboardData} over them that filters and pages as
 * the store does (and can be told to fail as an unreachable store does),
 * and a {@linkcode DashboardActions} that records every call.
 */

import type { JobAction } from "../../src/admin/actions.ts";
import { planJobAction } from "../../src/admin/actions.ts";
import type { JobDetail, ScheduleStatus, StoreCheck } from "../../src/admin/views.ts";
import { type Attempt, type Job, JOB_STATES, type JobState } from "../../src/kernel/types.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { AuditRow } from "../../src/store/store.ts";
import type { DashboardActions } from "../../src/tui/actions.ts";
import type {
  DashboardData,
  DeadLetterGroup,
  JobsFilter,
  JobsQuery,
  Overview,
  QueueOverview,
  ScheduleInfo,
} from "../../src/tui/data.ts";
import { scheduleOf } from "../support/schedules.ts";

/** 2026-03-08T12:00:00Z, the fixtures' now. */
export const NOW = Date.UTC(2026, 2, 8, 12);

/** A job row with every field; `overrides` win. */
export function fixtureJob(overrides: Partial<Job> & { id: number }): Job {
  return {
    tenant: null,
    state: "available",
    queue: "default",
    worker: "send-mail",
    args: { to: "ops@example.com" },
    meta: {},
    tags: [],
    errors: [],
    scheduleId: null,
    scheduledFor: null,
    occurrence: null,
    uniqueKey: null,
    uniqueStates: null,
    attempt: 0,
    maxAttempts: 3,
    priority: 0,
    attemptedBy: null,
    fence: 0,
    leaseExpiresAt: null,
    insertedAt: NOW - 60_000,
    scheduledAt: NOW - 60_000,
    attemptedAt: null,
    completedAt: null,
    cancelledAt: null,
    discardedAt: null,
    ...overrides,
  };
}

/** `count` jobs with ids 1..count cycling through the states and two queues. */
export function manyJobs(count: number): Job[] {
  return Array.from({ length: count }, (_, i) => {
    const state = JOB_STATES[i % JOB_STATES.length]!;
    return fixtureJob({
      id: i + 1,
      state,
      queue: i % 2 === 0 ? "default" : "mail",
      worker: i % 2 === 0 ? "send-mail" : "build-report",
      attempt: state === "discarded" ? 3 : 1,
      errors: state === "discarded"
        ? [{ at: NOW - 1000, attempt: 3, error: "connection refused\nat send()" }]
        : [],
      discardedAt: state === "discarded" ? NOW - 1000 : null,
      completedAt: state === "completed" ? NOW - 2000 : null,
    });
  });
}

function counts(jobs: Job[], queue: string): Record<JobState, number> {
  const byState = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  for (const job of jobs) if (job.queue === queue) byState[job.state]++;
  return byState;
}

/** A queue of the overview with its counts from `jobs`. */
export function queueOf(jobs: Job[], name: string, extra: Partial<QueueOverview> = {}) {
  const completed = new Array(60).fill(0);
  const failed = new Array(60).fill(0);
  completed[59] = 4;
  completed[30] = 2;
  failed[58] = 1;
  return {
    name,
    counts: counts(jobs, name),
    paused: false,
    pausedInFile: false,
    pause: null,
    declaredConcurrency: 4,
    nodes: { "host-a:100": 4 },
    completed,
    failed,
    ...extra,
  } satisfies QueueOverview;
}

/** A schedule's status, enabled, declared, nothing stored. */
export function statusOf(id: string, extra: Partial<ScheduleStatus> = {}): ScheduleStatus {
  return {
    id,
    declared: true,
    manual: false,
    enabled: true,
    disabledIn: null,
    disabledReason: null,
    disabledBy: null,
    disabledAt: null,
    next: NOW + 60_000,
    nextOccurrence: `${id}@${new Date(NOW + 60_000).toISOString()}`,
    lastPlannedFor: null,
    lastStartedAt: null,
    lastCompletedAt: null,
    misfires: 0,
    lastMisfireFor: null,
    ...extra,
  };
}

/** The store check of a reachable store. */
export const HEALTHY: StoreCheck = {
  kind: "sqlite",
  location: "./jobs.db",
  reachable: true,
  schemaVersion: 5,
  knownVersion: 5,
  readMs: 1,
  error: null,
};

/** What a fixture data source holds; tests change it between refreshes. */
export interface FixtureState {
  jobs: Job[];
  overview: Omit<Overview, "now">;
  schedules: ScheduleInfo[];
  deadLetters: DeadLetterGroup[];
  attempts: Record<number, Attempt[]>;
  audit: Record<number, AuditRow[]>;
  /** When set, every read rejects with this message (a locked or missing store). */
  failWith: string | null;
}

/** The default fixture: 30 jobs, two queues, one node, a nightly schedule. */
export function fixtureState(jobs: Job[] = manyJobs(30)): FixtureState {
  const nightly: Schedule = scheduleOf({
    id: "nightly",
    cron: "30 2 * * *",
    timezone: "America/New_York",
    local_time: { reason: "runs after the New York close", gap: "shift", overlap: "first" },
    queue: "default",
  });
  return {
    jobs,
    overview: {
      store: HEALTHY,
      queues: [queueOf(jobs, "default"), queueOf(jobs, "mail", { paused: true })],
      nodes: [{
        node: "host-a:100",
        queues: { default: 4, mail: 2 },
        startedAt: NOW - 3_600_000,
        heartbeatAt: NOW - 2000,
        environment: null,
        heartbeatAgeMs: 2000,
        stale: false,
      }],
      attention: [statusOf("hourly", {
        enabled: false,
        disabledIn: "store",
        disabledBy: "alice",
        disabledAt: NOW - 600_000,
        disabledReason: "vendor outage",
      })],
      configProblems: [],
    },
    schedules: [{
      status: statusOf("nightly", { next: Date.UTC(2026, 2, 9, 6, 30) }),
      schedule: nightly,
      upcoming: [
        {
          at: Date.UTC(2026, 2, 8, 7, 30),
          occurrence: "nightly@2026-03-08T07:30:00.000Z",
          local: "2026-03-08T03:30:00-04:00[America/New_York]",
          note: "shifted: 02:30 does not exist on 2026-03-08",
        },
      ],
    }, {
      status: statusOf("hourly", {
        enabled: false,
        disabledIn: "store",
        disabledBy: "alice",
        disabledAt: NOW - 600_000,
        disabledReason: "vendor outage",
        next: null,
      }),
      schedule: scheduleOf({ id: "hourly", cron: "0 * * * *" }),
      upcoming: [],
    }],
    deadLetters: [{
      worker: "send-mail",
      scheduleId: null,
      error: "connection refused",
      count: 3,
      latestId: 28,
      latestAt: NOW - 1000,
    }],
    attempts: {},
    audit: {},
    failWith: null,
  };
}

/** A data source over `state`, recording the job queries and counts it answers. */
export function fixtureData(state: FixtureState) {
  const queries: JobsQuery[] = [];
  const counts: JobsFilter[] = [];
  const check = () => {
    if (state.failWith !== null) throw new Error(state.failWith);
  };
  const data: DashboardData = {
    location: "./jobs.db",
    overview(now) {
      check();
      return Promise.resolve({ now, ...state.overview });
    },
    jobs(query) {
      check();
      queries.push(query);
      return Promise.resolve(page(state.jobs, query));
    },
    jobsCount(filter) {
      check();
      counts.push(filter);
      return Promise.resolve(page(state.jobs, { filter, desc: false, limit: Infinity }).length);
    },
    queues() {
      check();
      return Promise.resolve(state.overview.queues.map((q) => q.name).sort());
    },
    job(id) {
      check();
      const job = state.jobs.find((j) => j.id === id);
      const detail: JobDetail | null = job
        ? { job, attempts: state.attempts[id] ?? [], audit: state.audit[id] ?? [] }
        : null;
      return Promise.resolve(detail);
    },
    schedules() {
      check();
      return Promise.resolve(state.schedules);
    },
    deadLetters() {
      check();
      return Promise.resolve(state.deadLetters);
    },
  };
  return { data, queries, counts };
}

/** Filters and pages as the store's jobsList does (search: worker, args, tags, errors). */
function page(jobs: Job[], query: JobsQuery): Job[] {
  const f = query.filter;
  const needle = f.search?.toLowerCase();
  const sorted = [...jobs].sort((a, b) => query.desc ? b.id - a.id : a.id - b.id);
  return sorted.filter((j) =>
    (f.states === undefined || f.states.length === 0 || f.states.includes(j.state)) &&
    (f.queue === undefined || j.queue === f.queue) &&
    (f.scheduleId === undefined || j.scheduleId === f.scheduleId) &&
    (f.worker === undefined || j.worker === f.worker) &&
    (f.tag === undefined || j.tags.includes(f.tag)) &&
    (needle === undefined ||
      [j.worker, JSON.stringify(j.args), ...j.tags, ...j.errors.map((e) => e.error)]
        .some((t) => t.toLowerCase().includes(needle))) &&
    (query.after === undefined || (query.desc ? j.id < query.after : j.id > query.after))
  ).slice(0, query.limit);
}

/** One recorded action call. */
export type ActionCall =
  | { kind: "jobs"; action: JobAction; ids: number[] }
  | { kind: "replay"; id: number; reason: string }
  | { kind: "run"; id: string; reason: string | null }
  | { kind: "schedule"; id: string; enabled: boolean; reason: string }
  | { kind: "queue"; queue: string; paused: boolean };

/** Actions that record each call and answer as the admin functions would, changing nothing. */
export function recordingActions() {
  const calls: ActionCall[] = [];
  const actions: DashboardActions = {
    jobs(action, jobs) {
      calls.push({ kind: "jobs", action, ids: jobs.map((j) => j.id) });
      const { act, skip } = planJobAction(action, jobs);
      return Promise.resolve({ changed: act, skipped: skip });
    },
    replay(job, reason) {
      calls.push({ kind: "replay", id: job.id, reason });
      return Promise.resolve({
        job,
        replayed: true,
        was: job.state,
        definition: { runs: "as-planned", why: null, planned: null, hash: null, differences: [] },
      });
    },
    runSchedule(id, reason) {
      calls.push({ kind: "run", id, reason });
      return Promise.resolve({
        id: 99,
        duplicate: false,
        queue: "default",
        state: "available",
        occurrence: `${id}@${new Date(NOW).toISOString()}`,
      });
    },
    setScheduleEnabled(id, enabled, reason) {
      calls.push({ kind: "schedule", id, enabled, reason });
      return Promise.resolve({ id, enabled, was: !enabled });
    },
    setQueuePaused(queue, paused) {
      calls.push({ kind: "queue", queue, paused });
      return Promise.resolve({ queue, paused, was: !paused });
    },
  };
  return { actions, calls };
}
