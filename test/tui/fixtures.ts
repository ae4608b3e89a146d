/**
 * Fixtures of the dashboard's component tests: jobs and views built in
 * memory, a {@linkcode DashboardData} over them that filters and pages as
 * the store does (and can be told to fail as an unreachable store does),
 * and a {@linkcode DashboardActions} that records every call.
 */

import type { JobAction } from "../../src/admin/jobs.ts";
import { planJobAction } from "../../src/admin/jobs.ts";
import { freshnessOf, type PipelineView } from "../../src/admin/pipelines.ts";
import type { JobDetail } from "../../src/admin/jobs.ts";
import type { ScheduleStatus } from "../../src/admin/schedules.ts";
import type { StoreCheck } from "../../src/admin/store.ts";
import type {
  StepCounts,
  WorkflowActionDone,
  WorkflowRunSummary,
  WorkflowRunView,
  WorkflowStepView,
} from "../../src/admin/workflows.ts";
import type { IngestRun } from "../../src/ingest/types.ts";
import { type Attempt, type Job, JOB_STATES, type JobState } from "../../src/kernel/types.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { AuditRow } from "../../src/store/store.ts";
import type { DashboardActions, RunAction } from "../../src/tui/actions.ts";
import {
  type DashboardData,
  DeadLetterGroup,
  JobsQuery,
  Overview,
  QueueOverview,
  runCounts,
  type RunsQuery,
  ScheduleInfo,
} from "../../src/tui/data.ts";
import type { JobsFilter } from "../../src/tui/search.ts";
import { FINAL_RUN_STATES, type RunState } from "../../src/workflow/types.ts";
import { scheduleOf } from "../support/schedules.ts";
import type { WorkQueueWatch, WorkWatchItem } from "../../src/admin/work.ts";
import type { WorkItemRow } from "../../src/store/store.ts";
import { itemView } from "../../src/workqueue/items.ts";
import { compileWorkQueue, scoreItem } from "../../src/workqueue/definition.ts";
import type { WorkQueueDefinition } from "../../src/workqueue/types.ts";

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
    lastOutcome: null,
    lastOutcomeAt: null,
    failures: 0,
    definitionHash: null,
    timezone: "UTC",
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

/** A step of a run's view: completed after one attempt of three unless `overrides` say. */
export function fixtureStep(
  overrides: Partial<WorkflowStepView> & { id: string },
): WorkflowStepView {
  return {
    state: "completed",
    jobId: null,
    attempts: 1,
    maxAttempts: 3,
    nextAttemptAt: null,
    resultBytes: 12,
    error: null,
    items: null,
    dependsOn: [],
    forEach: null,
    optional: false,
    useCase: null,
    worker: "jobs.command",
    compensation: null,
    createdAt: NOW - 120_000,
    finishedAt: NOW - 100_000,
    ...overrides,
  };
}

/** A run as `workflowRunView` shows it: `overrides` win, `steps` default to none. */
export function fixtureRun(
  run: { id: number; workflow: string; state: RunState } & Partial<WorkflowRunView["run"]>,
  view: Partial<Omit<WorkflowRunView, "run">> = {},
): WorkflowRunView {
  return {
    run: {
      hash: "5f2c0a9e41b7d3c8",
      input: { copy: 42 },
      tenant: null,
      key: null,
      error: null,
      cancelReason: null,
      startedAt: NOW - 150_000,
      finishedAt: FINAL_RUN_STATES.includes(run.state) ? NOW - 60_000 : null,
      updatedAt: NOW - 60_000,
      ...run,
    },
    saga: false,
    hash: "5f2c0a9e41b7d3c8",
    steps: [],
    compensations: [],
    ...view,
  };
}

/** The listing's line of `view`: its steps counted by state. */
export function summaryOf(view: WorkflowRunView): WorkflowRunSummary {
  const steps: StepCounts = {
    total: view.steps.length,
    completed: 0,
    running: 0,
    failed: 0,
    cancelled: 0,
    waiting: 0,
  };
  for (const s of view.steps) {
    if (s.state === "discarded") steps.failed++;
    else steps[s.state]++;
  }
  const { run } = view;
  return {
    id: run.id,
    workflow: run.workflow,
    state: run.state,
    tenant: run.tenant,
    key: run.key,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    error: run.error,
    steps,
  };
}

/**
 * Three runs, newest first: a saga whose charge failed and was compensated,
 * an import whose fan-out failed (its fan-in cancelled), and a completed
 * saga.
 */
export function fixtureRuns(): WorkflowRunView[] {
  const lend = (id: number) => [
    fixtureStep({
      id: "place-hold",
      jobId: id * 10 + 1,
      useCase: "use-case/lending.place-hold",
      compensation: { mode: "use-case", useCase: "use-case/lending.cancel-hold" },
    }),
    fixtureStep({
      id: "charge-fee",
      jobId: id * 10 + 2,
      dependsOn: ["place-hold"],
      useCase: "use-case/billing.charge-fee",
      compensation: { mode: "use-case", useCase: "use-case/billing.refund-fee" },
    }),
    fixtureStep({
      id: "notify",
      jobId: id * 10 + 3,
      dependsOn: ["charge-fee"],
      resultBytes: 2048,
      useCase: "use-case/lending.notify",
      compensation: { mode: "none", reason: "a sent notice cannot be recalled" },
    }),
  ];
  const compensatedSteps = lend(3);
  compensatedSteps[2] = {
    ...compensatedSteps[2]!,
    state: "discarded",
    attempts: 3,
    resultBytes: null,
    error: "notify.internal answered 503",
  };
  return [
    fixtureRun({
      id: 3,
      workflow: "lend-copy",
      state: "compensated",
      error: 'step "notify" discarded: notify.internal answered 503',
    }, {
      saga: true,
      steps: compensatedSteps,
      compensations: [
        {
          step: "charge-fee",
          useCase: "use-case/billing.refund-fee",
          state: "completed",
          jobId: 34,
          attempts: 1,
          maxAttempts: 3,
          nextAttemptAt: null,
          error: null,
          createdAt: NOW - 70_000,
          finishedAt: NOW - 65_000,
        },
        {
          step: "place-hold",
          useCase: "use-case/lending.cancel-hold",
          state: "completed",
          jobId: 35,
          attempts: 2,
          maxAttempts: 3,
          nextAttemptAt: null,
          error: null,
          createdAt: NOW - 65_000,
          finishedAt: NOW - 60_000,
        },
      ],
    }),
    fixtureRun({
      id: 2,
      workflow: "import-file",
      state: "failed",
      startedAt: NOW - 3_600_000,
      error: 'step "load" discarded: row 600: bad date',
    }, {
      steps: [
        fixtureStep({ id: "fetch", jobId: 21, resultBytes: 300 }),
        fixtureStep({ id: "split", jobId: 22, dependsOn: ["fetch"], resultBytes: 1200 }),
        fixtureStep({
          id: "load",
          state: "discarded",
          dependsOn: ["split"],
          forEach: "split",
          items: { done: 200, total: 200 },
          attempts: 3,
          resultBytes: null,
          error: "row 600: bad date",
        }),
        fixtureStep({
          id: "reconcile",
          state: "cancelled",
          dependsOn: ["load", "fetch"],
          attempts: 0,
          maxAttempts: null,
          resultBytes: null,
          error: "upstream failed",
        }),
        fixtureStep({
          id: "report",
          state: "waiting",
          dependsOn: ["fetch"],
          optional: true,
          attempts: 0,
          maxAttempts: null,
          resultBytes: null,
          createdAt: null,
          finishedAt: null,
        }),
      ],
    }),
    fixtureRun({ id: 1, workflow: "lend-copy", state: "completed", key: "lend@2026-03-08" }, {
      saga: true,
      steps: lend(1),
    }),
  ];
}

/** A pipeline run with every field; `overrides` win (a completed run of catalog by default). */
export function fixtureIngestRun(overrides: Partial<IngestRun> & { id: number }): IngestRun {
  return {
    pipeline: "catalog",
    hash: "c0ffee".repeat(10),
    state: "completed",
    jobId: 100 + overrides.id,
    trigger: "schedule",
    tenant: null,
    counts: { received: 0, kept: 0, sunk: 0, dropped: {}, failed: 0, pending: 0 },
    cursor: null,
    error: null,
    startedAt: NOW - 60_000,
    updatedAt: NOW - 30_000,
    finishedAt: NOW - 30_000,
    ...overrides,
  };
}

/** A pipeline's view with every field; `overrides` win (declared, no runs, no freshness). */
export function fixturePipeline(overrides: Partial<PipelineView> & { id: string }): PipelineView {
  return {
    declared: true,
    hash: "c0ffee".repeat(10),
    runs: 0,
    recent: [],
    droppedLastHour: {},
    droppedLastDay: {},
    freshness: null,
    ...overrides,
  };
}

/**
 * Four pipelines: `catalog` stale (its last complete run 2h ago, promised
 * within 15m) with drops of two reasons, `bank` advisory with its last run
 * failed, `prices` fresh with its last run paged, `feed` never run.
 */
export function fixturePipelines(): PipelineView[] {
  const catalog = [
    fixtureIngestRun({
      id: 41,
      startedAt: NOW - 2 * 3_600_000 - 90_000,
      updatedAt: NOW - 2 * 3_600_000,
      finishedAt: NOW - 2 * 3_600_000,
      counts: {
        received: 1215,
        kept: 1200,
        sunk: 1200,
        dropped: { "below-threshold": 3, duplicate: 12 },
        failed: 0,
        pending: 0,
      },
    }),
    fixtureIngestRun({
      id: 40,
      trigger: "manual",
      startedAt: NOW - 5 * 3_600_000,
      updatedAt: NOW - 5 * 3_600_000 + 60_000,
      finishedAt: NOW - 5 * 3_600_000 + 60_000,
      counts: { received: 900, kept: 900, sunk: 900, dropped: {}, failed: 0, pending: 0 },
    }),
  ];
  return [
    fixturePipeline({
      id: "catalog",
      runs: 41,
      recent: catalog,
      droppedLastDay: { "below-threshold": 3, duplicate: 12 },
      freshness: freshnessOf({ mode: "bounded", withinMs: 15 * 60_000 }, NOW - 2 * 3_600_000, NOW),
    }),
    fixturePipeline({
      id: "bank",
      runs: 7,
      recent: [fixtureIngestRun({
        id: 7,
        pipeline: "bank",
        state: "failed",
        startedAt: NOW - 6 * 60_000,
        updatedAt: NOW - 5 * 60_000,
        finishedAt: NOW - 5 * 60_000,
        error: "sink answered 503\nretry later",
        counts: {
          received: 50,
          kept: 48,
          sunk: 40,
          dropped: { duplicate: 2 },
          failed: 8,
          pending: 0,
        },
      })],
      droppedLastHour: { duplicate: 2 },
      droppedLastDay: { duplicate: 5, poison: 1 },
      freshness: freshnessOf({ mode: "advisory", authority: "erp" }, NOW - 3_600_000, NOW),
    }),
    fixturePipeline({
      id: "prices",
      runs: 3,
      recent: [fixtureIngestRun({
        id: 3,
        pipeline: "prices",
        state: "paged",
        startedAt: NOW - 120_000,
        updatedAt: NOW - 60_000,
        finishedAt: NOW - 60_000,
        error: "buffer full (10000 records): paged",
        counts: { received: 10000, kept: 10000, sunk: 0, dropped: {}, failed: 0, pending: 10000 },
      })],
      freshness: freshnessOf({ mode: "bounded", withinMs: 3_600_000 }, NOW - 20 * 60_000, NOW),
    }),
    fixturePipeline({ id: "feed" }),
  ];
}

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** The disputes queue of the issue: claim required, a one-hour lease, scored. */
export const DISPUTES: WorkQueueDefinition = compileWorkQueue({
  id: "disputes",
  useCase: "use-case/payments.review-dispute",
  claim: "required",
  leaseMs: HOUR,
  score: {
    rule: "rule/dispute.urgency-score",
    inputs: ["amount", "age", "evidence_missing"],
    weights: { amount: 0.01, age: "2/day", evidence_missing: 30 },
  },
  actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
});

/** An unscored queue, claims optional: oldest first. */
export const REVIEWS: WorkQueueDefinition = compileWorkQueue({
  id: "reviews",
  claim: "optional",
  leaseMs: 30 * 60_000,
  actions: [{ id: "approve", run: { kind: "worker", worker: "approve_review" } }],
});

/** An open item of `queue` as a watcher sees it, requested `ageMs` before NOW. */
export function fixtureWorkItem(
  queue: WorkQueueDefinition,
  key: string,
  ageMs: number,
  fields: {
    data?: Record<string, unknown>;
    claim?: { owner: string; expiresAt: number };
    expiredClaim?: { owner: string; expiredAt: number };
  } = {},
): WorkWatchItem {
  const data = fields.data ?? {};
  const score = queue.score === null ? null : scoreItem(queue.score, data);
  const row: WorkItemRow = {
    id: 1,
    queue: queue.id,
    key,
    tenant: null,
    data,
    score: score?.score ?? null,
    scoreRate: score?.rate ?? null,
    inputs: score?.inputs ?? null,
    ruleVersion: score?.version ?? null,
    requestedAt: NOW - ageMs,
    updatedAt: NOW - ageMs,
    state: "open",
    claimOwner: fields.claim?.owner ?? null,
    claimExpiresAt: fields.claim?.expiresAt ?? null,
    claimFence: fields.claim || fields.expiredClaim ? 1 : 0,
    skippedBy: null,
    skippedUntil: null,
    outcome: null,
    actionJobId: null,
    actionState: null,
    doneBy: null,
    doneAt: null,
    doneReason: null,
  };
  return { ...itemView(queue, row, NOW), expiredClaim: fields.expiredClaim ?? null };
}

/** Two watched queues: disputes (one claimed, one whose claim expired, one free) and reviews. */
export function fixtureWork(): WorkQueueWatch[] {
  return [{
    queue: DISPUTES,
    stats: {
      open: 3,
      claimed: 1,
      expired: 1,
      oldestRequestedAt: NOW - 6 * DAY,
      done: 5,
      leadMedianMs: 4 * HOUR,
    },
    oldestAgeMs: 6 * DAY,
    items: [
      fixtureWorkItem(DISPUTES, "dsp-17", 6 * DAY, {
        data: { amount: 1900, currency: "EUR", evidence_missing: true },
        claim: { owner: "bo", expiresAt: NOW + 50 * 60_000 },
      }),
      fixtureWorkItem(DISPUTES, "dsp-9", 2 * DAY, {
        data: { amount: 2500, currency: "EUR", evidence_missing: false },
        expiredClaim: { owner: "ada", expiredAt: NOW - HOUR },
      }),
      fixtureWorkItem(DISPUTES, "dsp-21", 3 * HOUR, {
        data: { amount: 40, currency: "EUR", evidence_missing: false },
      }),
    ],
  }, {
    queue: REVIEWS,
    stats: {
      open: 1,
      claimed: 0,
      expired: 0,
      oldestRequestedAt: NOW - 2 * HOUR,
      done: 0,
      leadMedianMs: null,
    },
    oldestAgeMs: 2 * HOUR,
    items: [fixtureWorkItem(REVIEWS, "rev-1", 2 * HOUR)],
  }];
}

/** What a fixture data source holds; tests change it between refreshes. */
export interface FixtureState {
  jobs: Job[];
  overview: Omit<Overview, "now">;
  schedules: ScheduleInfo[];
  deadLetters: DeadLetterGroup[];
  attempts: Record<number, Attempt[]>;
  audit: Record<number, AuditRow[]>;
  /** Workflow runs as their views, newest first. */
  runs: WorkflowRunView[];
  /** Pipelines as their views, in list order. */
  pipelines: PipelineView[];
  /** Work queues as watched, in the file's order. */
  work: WorkQueueWatch[];
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
      pipelineAttention: [],
      configProblems: [],
    },
    schedules: [{
      status: statusOf("nightly", {
        next: Date.UTC(2026, 2, 9, 6, 30),
        timezone: "America/New_York",
      }),
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
    runs: fixtureRuns(),
    pipelines: fixturePipelines(),
    work: fixtureWork(),
    failWith: null,
  };
}

/** A data source over `state`, recording the job queries and counts it answers. */
export function fixtureData(state: FixtureState) {
  const queries: JobsQuery[] = [];
  const runQueries: RunsQuery[] = [];
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
      const count = page(state.jobs, { filter, desc: false, limit: Infinity }).length;
      return Promise.resolve({ count, atLeast: false, newest: null });
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
    workflowRuns(query) {
      check();
      runQueries.push(query);
      const runs = state.runs
        .filter((v) => query.state === null || v.run.state === query.state)
        .filter((v) => query.after === undefined || v.run.id < query.after)
        .slice(0, query.limit)
        .map(summaryOf);
      const byState = new Map<RunState, number>();
      for (const v of state.runs) byState.set(v.run.state, (byState.get(v.run.state) ?? 0) + 1);
      return Promise.resolve({
        runs,
        counts: runCounts([...byState].map(([s, count]) => ({ state: s, count }))),
      });
    },
    workflowRun(id) {
      check();
      return Promise.resolve(state.runs.find((v) => v.run.id === id) ?? null);
    },
    pipelines() {
      check();
      return Promise.resolve(state.pipelines);
    },
    pipeline(id) {
      check();
      return Promise.resolve(state.pipelines.find((p) => p.id === id) ?? null);
    },
    work(queue, limit) {
      check();
      const watch = state.work.find((w) => w.queue.id === queue) ?? state.work[0];
      return Promise.resolve({
        queues: state.work.map((w) => w.queue.id),
        watch: watch ? { ...watch, items: watch.items.slice(0, limit) } : null,
        configProblems: [],
      });
    },
  };
  return { data, queries, counts, runQueries };
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
  | { kind: "queue"; queue: string; paused: boolean }
  | { kind: "workflow"; action: RunAction; id: number; reason: string };

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
    workflowRun(action, id, reason) {
      calls.push({ kind: "workflow", action, id, reason });
      const done: WorkflowActionDone = {
        id,
        workflow: "import-file",
        was: action === "retry" ? "failed" : "running",
        state: action === "retry" ? "running" : "cancelled",
        jobs: [201],
      };
      return Promise.resolve(done);
    },
  };
  return { actions, calls };
}
