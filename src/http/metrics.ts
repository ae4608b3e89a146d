/**
 * The `/metrics` page in the Prometheus text format 0.0.4: gauges read from
 * the store on each scrape, plus the counters the daemon keeps in memory
 * (a {@linkcode MetricsSnapshot}, fed by a {@linkcode MetricsRegistry} that
 * counts the runtime's events).
 *
 * Workflows add the runs by definition and state and the compensations by
 * definition and state (gauges read from the store), and how long each step
 * ran (a histogram by definition and step, fed by the `job.stop` events of
 * step jobs, which name them).
 *
 * Ingest pipelines add their records by outcome, their drops by reason and
 * their finished runs by state (counters fed by the engine's `ingest.chunk`
 * and `ingest.finished` events), and, when the server is given the
 * schedules file's pipelines, their freshness read from the store on each
 * scrape: whether a bounded pipeline is stale, what it promises and when its
 * newest run completed.
 *
 * Human work queues add, read through their door (`workQueueMetrics`) in
 * one store read on each scrape when the server is given the file's
 * queues: the open items and the age of the oldest per queue, the claims
 * that expired per queue, and the items done per queue and outcome (the
 * action taken). The last two are counters kept in the store (items'
 * histories and done rows), so they survive a restart of the daemon.
 *
 * Labels carry only names an operator chose (queue, worker, schedule id,
 * workflow and step id, pipeline id and drop reason from its closed set):
 * never job args, record text, error text or anything else a job or a
 * failure supplies, which could leak secrets and would grow the series
 * without bound.
 *
 * @module
 */

import { freshnessOf, totalDropped } from "../admin/pipelines.ts";
import { workQueueMetrics } from "../admin/work.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";
import type { CompiledPipeline } from "../ingest/types.ts";
import { JOB_STATES, type JobState } from "../kernel/types.ts";
import type { Store } from "../store/store.ts";
import { RUN_STATES } from "../workflow/types.ts";
import type { Logger } from "../kernel/logger.ts";

/** The labels a daemon counter may carry: names, never args or error text. */
export interface CounterLabels {
  queue: string;
  worker: string;
}

/** One series of a counter. */
export interface CounterSample {
  labels: CounterLabels;
  value: number;
}

/** One series of a histogram; `buckets` are cumulative, `+Inf` is added from `count`. */
export interface HistogramSample {
  labels: CounterLabels;
  /** Upper bounds in seconds, ascending, with the number of observations at or below each. */
  buckets: { le: number; count: number }[];
  /** Sum of the observations, in seconds. */
  sum: number;
  /** Number of observations. */
  count: number;
}

/** One series of the step duration histogram, as {@linkcode HistogramSample} by workflow and step. */
export interface StepHistogramSample extends Omit<HistogramSample, "labels"> {
  labels: StepLabels;
}

/** The labels of a workflow step's series: the definition's id and the step's. */
export interface StepLabels {
  workflow: string;
  step: string;
}

/** One series of a counter by queue and how attempts ended. */
export interface OutcomeSample {
  labels: { queue: string; outcome: string };
  value: number;
}

/** One series of an ingest counter: by pipeline and one more name `K` (outcome, reason, state). */
export interface PipelineSample<K extends string> {
  labels: { pipeline: string } & { [key in K]: string };
  value: number;
}

/** What a chunk's records came to: `jobs_ingest_records_total{outcome}`. */
export const INGEST_OUTCOMES = ["received", "kept", "sunk", "dropped", "failed"] as const;

/** The counters the daemon keeps since it started; every field is optional. */
export interface MetricsSnapshot {
  /** Attempts that completed: `jobs_completions_total`. */
  completions?: CounterSample[];
  /** Attempts that failed (errored or timed out): `jobs_failures_total`. */
  failures?: CounterSample[];
  /** How long attempts ran: `jobs_attempt_duration_seconds`. */
  durations?: HistogramSample[];
  /** How long the attempts of workflow steps ran: `jobs_workflow_step_duration_seconds`. */
  stepDurations?: StepHistogramSample[];
  /** Attempts finished on this node, by queue and outcome: `jobs_attempts_total`. */
  attempts?: OutcomeSample[];
  /**
   * Leases this node lost (operator cancel, rescued elsewhere, or run out
   * while it could not renew them): `jobs_leases_lost_total`.
   */
  leasesLost?: { queue: string; value: number }[];
  /**
   * Records of committed ingest chunks by pipeline and outcome (one of
   * {@linkcode INGEST_OUTCOMES}; `dropped` sums every reason): `jobs_ingest_records_total`.
   */
  ingestRecords?: PipelineSample<"outcome">[];
  /** Records of committed chunks dropped, by pipeline and reason: `jobs_ingest_dropped_total`. */
  ingestDropped?: PipelineSample<"reason">[];
  /** Ingest runs finished, by pipeline and state (`paged` included): `jobs_ingest_runs_total`. */
  ingestRuns?: PipelineSample<"state">[];
  /** Failed store calls by step (`heartbeat`, `producer:<queue>`): `jobs_store_errors_total`. */
  storeErrors?: { source: string; value: number }[];
  /** Whether the node is degraded (a step's last store call failed): `jobs_store_degraded`. */
  storeDegraded?: boolean;
  /** Finished jobs whose result waits for the store: `jobs_results_unrecorded`. */
  unrecorded?: number;
  /** How far the planner is behind, in seconds: `jobs_planner_lag_seconds`. */
  plannerLagSeconds?: number;
  /**
   * Whether this node runs the maintenance passes now (holds the
   * maintenance role, or every node runs them): `jobs_leader{node}`.
   */
  leader?: { node: string; leader: boolean };
}

/** Upper bounds of the attempt duration histogram, in seconds. */
export const DURATION_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  300,
  900,
  3600,
];

/** Outcomes that count as a failure: the attempt threw or timed out. */
const FAILED = new Set(["retryable", "discarded"]);

/** The states a compensation row may be in, each shown for every workflow that has any. */
const COMPENSATION_STATES: readonly string[] = ["running", "completed", "discarded", "cancelled"];

/** Observations in cumulative buckets of {@linkcode DURATION_BUCKETS}; the last slot is +Inf. */
class Histogram<L> {
  readonly counts: number[] = new Array(DURATION_BUCKETS.length + 1).fill(0);
  sum = 0;
  constructor(readonly labels: L) {}

  observe(seconds: number): void {
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) this.counts[i]!++;
    }
    this.counts[DURATION_BUCKETS.length]!++;
    this.sum += seconds;
  }

  sample(): { labels: L; buckets: { le: number; count: number }[]; sum: number; count: number } {
    return {
      labels: { ...this.labels },
      buckets: DURATION_BUCKETS.map((le, i) => ({ le, count: this.counts[i]! })),
      sum: this.sum,
      count: this.counts.at(-1)!,
    };
  }
}

/**
 * Counters and the duration histograms the daemon keeps in memory, fed by
 * the runtime's events (`job.stop`, `job.lease_lost`): put {@linkcode tap}
 * between the runtime and its logger. Only names become labels (queue,
 * worker, outcome, workflow and step), never args or error text.
 *
 * A `job.stop` of a workflow step names its definition (`workflow`, a
 * string) and its step (`step`); a compensation's also says
 * `stepKind: "compensation"` and is not counted as a step's duration.
 *
 * An `ingest.chunk` adds its counts to the pipeline's series of every
 * outcome, zeros included, so a series exists (and rate() works) from the
 * first chunk on. Runs are counted from `ingest.finished` alone: an
 * `ingest.paged` is followed by the run's `ingest.finished` with state
 * `paged` (or `failed`, when `ingest.unbalanced` said its counts do not add
 * up), so counting those too would count the run twice.
 */
export class MetricsRegistry {
  #completions = new Map<string, CounterSample>();
  #failures = new Map<string, CounterSample>();
  #durations = new Map<string, Histogram<CounterLabels>>();
  #stepDurations = new Map<string, Histogram<StepLabels>>();
  #attempts = new Map<string, OutcomeSample>();
  #leasesLost = new Map<string, number>();
  #ingestRecords = new Map<string, PipelineSample<"outcome">>();
  #ingestDropped = new Map<string, PipelineSample<"reason">>();
  #ingestRuns = new Map<string, PipelineSample<"state">>();

  /** A logger that counts each event here, then hands it on to `logger`. */
  tap(logger: Logger): Logger {
    return (event, fields) => {
      this.record(event, fields);
      logger(event, fields);
    };
  }

  /** Counts one runtime event; events it does not know are ignored. */
  record(event: string, fields: Record<string, unknown>): void {
    if (event === "job.stop") this.#jobStopped(fields);
    else if (event === "job.lease_lost" || event === "job.lease_expired") {
      const queue = String(fields.queue);
      this.#leasesLost.set(queue, (this.#leasesLost.get(queue) ?? 0) + 1);
    } else if (event === "ingest.chunk") this.#chunkCommitted(fields);
    else if (event === "ingest.finished") {
      const labels = { pipeline: String(fields.pipeline), state: String(fields.state) };
      bump(this.#ingestRuns, `${labels.pipeline}\0${labels.state}`, labels);
    }
  }

  /** The counters as they are now (copies). */
  snapshot(): MetricsSnapshot {
    const copy = <T extends { labels: object }>(m: Map<string, T>) =>
      [...m.values()].map((s) => ({ ...s, labels: { ...s.labels } }));
    return {
      completions: copy(this.#completions),
      failures: copy(this.#failures),
      attempts: copy(this.#attempts),
      durations: [...this.#durations.values()].map((h) => h.sample()),
      stepDurations: [...this.#stepDurations.values()].map((h) => h.sample()),
      leasesLost: [...this.#leasesLost].map(([queue, value]) => ({ queue, value })),
      ingestRecords: copy(this.#ingestRecords),
      ingestDropped: copy(this.#ingestDropped),
      ingestRuns: copy(this.#ingestRuns),
    };
  }

  #chunkCommitted(fields: Record<string, unknown>): void {
    const pipeline = String(fields.pipeline);
    const dropped: Record<string, number> = {};
    // Read defensively: a counter only ever grows, by a finite count.
    if (typeof fields.dropped === "object" && fields.dropped !== null) {
      for (const [reason, n] of Object.entries(fields.dropped)) dropped[reason] = countOf(n);
    }
    const counts: Record<(typeof INGEST_OUTCOMES)[number], number> = {
      received: countOf(fields.received),
      kept: countOf(fields.kept),
      sunk: countOf(fields.sunk),
      dropped: totalDropped(dropped),
      failed: countOf(fields.failed),
    };
    for (const outcome of INGEST_OUTCOMES) {
      add(this.#ingestRecords, `${pipeline}\0${outcome}`, { pipeline, outcome }, counts[outcome]);
    }
    for (const [reason, n] of Object.entries(dropped)) {
      add(this.#ingestDropped, `${pipeline}\0${reason}`, { pipeline, reason }, n);
    }
  }

  #jobStopped(fields: Record<string, unknown>): void {
    const labels = { queue: String(fields.queue), worker: String(fields.worker) };
    const key = `${labels.queue}\0${labels.worker}`;
    const outcome = String(fields.outcome);
    if (outcome === "completed") bump(this.#completions, key, labels);
    if (FAILED.has(outcome)) bump(this.#failures, key, labels);
    bump(this.#attempts, `${labels.queue}\0${outcome}`, { queue: labels.queue, outcome });

    const ms = Number(fields.durationMs);
    if (!Number.isFinite(ms) || outcome === "abandoned") return;
    const seconds = ms / 1000;
    observe(this.#durations, key, labels, seconds);
    const { workflow, step, stepKind } = fields;
    // Read defensively: only a step job's event names both, as strings.
    if (typeof workflow === "string" && typeof step === "string" && stepKind !== "compensation") {
      observe(this.#stepDurations, `${workflow}\0${step}`, { workflow, step }, seconds);
    }
  }
}

/** Adds `seconds` to the histogram `key` of `map`, which starts with `labels` the first time. */
function observe<L>(map: Map<string, Histogram<L>>, key: string, labels: L, seconds: number): void {
  let h = map.get(key);
  if (!h) map.set(key, h = new Histogram(labels));
  h.observe(seconds);
}

/** Adds one to the series `key` of `map`, which starts with `labels` the first time. */
function bump<L>(map: Map<string, { labels: L; value: number }>, key: string, labels: L): void {
  add(map, key, labels, 1);
}

/** Adds `n` to the series `key` of `map`, which starts with `labels`; 0 still makes the series. */
function add<L>(
  map: Map<string, { labels: L; value: number }>,
  key: string,
  labels: L,
  n: number,
): void {
  const sample = map.get(key);
  if (sample) sample.value += n;
  else map.set(key, { labels, value: n });
}

/** A count from an event's field: a finite number of at least 0, else 0. */
function countOf(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}

/** The `Content-Type` of the page. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Escapes a label value: backslash, double quote and line feed, as the format requires. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

function formatLabels(labels: Record<string, string>): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

/** Collects families in order; each gets its HELP and TYPE lines once, even when empty. */
class Page {
  #lines: string[] = [];

  family(name: string, type: "gauge" | "counter" | "histogram", help: string): this {
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Record<string, string>, value: number): this {
    this.#lines.push(`${name}${formatLabels(labels)} ${formatValue(value)}`);
    return this;
  }

  toString(): string {
    return this.#lines.join("\n") + "\n";
  }
}

/** What {@linkcode renderMetrics} needs to show the freshness of ingest pipelines. */
export interface IngestFreshnessParams {
  /** The schedules file's pipelines; those with a bounded freshness get `jobs_ingest_stale`. */
  pipelines: readonly CompiledPipeline[];
  /** The scrape's instant, UTC epoch ms, from the caller's clock. */
  now: number;
}

/** What {@linkcode renderMetrics} needs for the queues' latency and the declared queues. */
export interface QueueMetricsParams {
  /** The scrape's instant, UTC epoch ms, from the caller's clock: the latency's reference. */
  now: number;
  /**
   * Queues the schedules file declares (or the daemon runs): each gets its
   * `jobs_jobs` and `jobs_queue_oldest_available_seconds` series even while
   * the store holds no job of it, so an alert on them has a series to read.
   */
  declared?: readonly string[];
}

/** What {@linkcode renderMetrics} needs for the work queues' series. */
export interface WorkQueueMetricsParams {
  /** The schedules file's work queues: each gets its series even while it holds no item. */
  queues: readonly WorkQueueDefinition[];
  /** The scrape's instant, UTC epoch ms, from the caller's clock: the oldest item's age. */
  now: number;
}

/**
 * Renders the page: reads job counts, queues, nodes and schedules from the
 * store (reads only), then the optional snapshot, then (when `ingest` is
 * given) the pipelines' freshness from the store's ingest summaries. With
 * `queueParams`, the declared queues get their series too, and each queue
 * how long its oldest available job has waited. With `work`, the work
 * queues' series.
 * Throws when the store does.
 */
export async function renderMetrics(
  store: Store,
  snapshot?: MetricsSnapshot,
  ingest?: IngestFreshnessParams,
  queueParams?: QueueMetricsParams,
  work?: WorkQueueMetricsParams,
): Promise<string> {
  const [counts, queues, nodes, schedules, outcomes, runs, compensations] = await Promise.all([
    store.jobsCount({}),
    store.queuesList(),
    store.nodesList(),
    store.schedulesList({}),
    store.schedulesOutcomes({}),
    store.workflowsCount(),
    store.workflowCompensationsCount(),
  ]);
  const page = new Page();

  // Every known queue gets every state, zeros included, so a series does not
  // vanish (and rate() break) when a state empties.
  const byQueue = new Map<string, Map<JobState, number>>();
  const queueOf = (name: string) => {
    let states = byQueue.get(name);
    if (!states) byQueue.set(name, states = new Map(JOB_STATES.map((s) => [s, 0])));
    return states;
  };
  for (const q of queues) queueOf(q.name);
  for (const name of queueParams?.declared ?? []) queueOf(name);
  for (const c of counts) queueOf(c.queue).set(c.state, c.count);
  const sorted = [...byQueue].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  page.family("jobs_jobs", "gauge", "Jobs in the store by queue and state.");
  for (const [queue, states] of sorted) {
    for (const [state, count] of states) page.sample("jobs_jobs", { queue, state }, count);
  }

  if (queueParams) {
    // Only queues with an available job are read (ten index seeks each);
    // the others wait 0 s, which keeps their series.
    const waiting = sorted.filter(([, states]) => (states.get("available") ?? 0) > 0)
      .map(([queue]) => queue);
    const oldest = new Map(
      (waiting.length > 0 ? await store.queuesOldestAvailable({ queues: waiting }) : [])
        .map((o) => [o.queue, o.scheduledAt]),
    );
    page.family(
      "jobs_queue_oldest_available_seconds",
      "gauge",
      "How long the oldest available job of the queue has waited to be claimed, in seconds " +
        "(0 when none is available).",
    );
    for (const [queue] of sorted) {
      const at = oldest.get(queue);
      const waited = at === undefined ? 0 : Math.max(0, queueParams.now - at) / 1000;
      page.sample("jobs_queue_oldest_available_seconds", { queue }, waited);
    }
  }

  page.family("jobs_queue_paused", "gauge", "1 when the queue is paused for every process.");
  for (const q of queues) page.sample("jobs_queue_paused", { queue: q.name }, q.paused ? 1 : 0);

  page.family("jobs_nodes", "gauge", "Nodes registered in the store.");
  page.sample("jobs_nodes", {}, nodes.length);

  page.family(
    "jobs_schedule_misfires_total",
    "counter",
    "Occurrences of a schedule that were missed.",
  );
  for (const s of schedules) {
    page.sample("jobs_schedule_misfires_total", { schedule: s.id }, s.misfires);
  }
  page.family(
    "jobs_schedule_last_planned_seconds",
    "gauge",
    "The schedule's recovery point: every occurrence at or before it is planned (Unix seconds).",
  );
  for (const s of schedules) {
    if (s.lastPlannedFor === null) continue;
    page.sample("jobs_schedule_last_planned_seconds", { schedule: s.id }, s.lastPlannedFor / 1000);
  }
  page.family(
    "jobs_schedule_last_success_timestamp_seconds",
    "gauge",
    "When an occurrence of the schedule last completed (Unix seconds); absent before the first.",
  );
  for (const s of schedules) {
    if (s.lastCompletedAt === null) continue;
    page.sample(
      "jobs_schedule_last_success_timestamp_seconds",
      { schedule: s.id },
      s.lastCompletedAt / 1000,
    );
  }
  page.family(
    "jobs_schedule_consecutive_failures",
    "gauge",
    "Discarded occurrences of the schedule since its last completed one: its current run of " +
      "failures, 0 once one completes.",
  );
  const failures = new Map(outcomes.map((o) => [o.scheduleId, o.failures]));
  for (const s of schedules) {
    page.sample("jobs_schedule_consecutive_failures", { schedule: s.id }, failures.get(s.id) ?? 0);
  }

  byWorkflowAndState(
    page,
    "jobs_workflow_runs",
    "Workflow runs in the store by definition and state.",
    RUN_STATES,
    runs,
  );
  byWorkflowAndState(
    page,
    "jobs_workflow_compensations",
    "Compensations of saga steps in the store by definition and state.",
    COMPENSATION_STATES,
    compensations,
  );

  counter(page, "jobs_completions_total", "Attempts completed since the daemon started.", {
    samples: snapshot?.completions,
    labels: pick,
  });
  counter(page, "jobs_failures_total", "Attempts failed since the daemon started.", {
    samples: snapshot?.failures,
    labels: pick,
  });
  histogram(page, "jobs_attempt_duration_seconds", "How long attempts ran, in seconds.", {
    samples: snapshot?.durations,
    labels: pick,
  });
  histogram(
    page,
    "jobs_workflow_step_duration_seconds",
    "How long the attempts of workflow steps ran, in seconds, by definition and step.",
    {
      samples: snapshot?.stepDurations,
      labels: (h) => ({ workflow: String(h.labels.workflow), step: String(h.labels.step) }),
    },
  );
  renderRuntime(page, snapshot ?? {});
  renderIngestCounters(page, snapshot ?? {});
  // Read only when asked: a caller without pipelines may hand a store
  // that has no ingest tables to read.
  if (ingest) renderFreshness(page, ingest, await store.ingestSummaries({ since: ingest.now }));
  if (work) renderWorkQueues(page, await workQueueMetrics(store, work.queues, work.now));
  return page.toString();
}

/** The work queues' series, one sample per queue (per queue and outcome for actions). */
function renderWorkQueues(
  page: Page,
  queues: readonly Awaited<ReturnType<typeof workQueueMetrics>>[number][],
): void {
  page.family("jobs_work_items_open", "gauge", "Open items of the work queue.");
  for (const q of queues) page.sample("jobs_work_items_open", { queue: q.queue }, q.open);
  page.family(
    "jobs_work_oldest_open_age_seconds",
    "gauge",
    "How long the oldest open item of the work queue has waited since it was first added, in " +
      "seconds (0 when none is open).",
  );
  for (const q of queues) {
    page.sample("jobs_work_oldest_open_age_seconds", { queue: q.queue }, q.oldestOpenAgeSeconds);
  }
  page.family(
    "jobs_work_claims_expired_total",
    "counter",
    "Claims on the work queue's items that ran out and returned the item, as the items' " +
      "histories record them (the store's count, kept across restarts).",
  );
  for (const q of queues) {
    page.sample("jobs_work_claims_expired_total", { queue: q.queue }, q.claimsExpired);
  }
  page.family(
    "jobs_work_actions_total",
    "counter",
    "Items of the work queue acted on, by the action taken (outcome), as the store keeps them.",
  );
  for (const q of queues) {
    for (const [outcome, n] of Object.entries(q.done)) {
      page.sample("jobs_work_actions_total", { queue: q.queue, outcome }, n);
    }
  }
}

/** The ingest engine's counters: records by outcome, drops by reason, runs by state. */
function renderIngestCounters(page: Page, snapshot: MetricsSnapshot): void {
  counter(
    page,
    "jobs_ingest_records_total",
    "Records of committed ingest chunks since the daemon started, by pipeline and outcome " +
      "(received, kept, sunk, dropped, failed).",
    {
      samples: snapshot.ingestRecords,
      labels: (s) => ({ pipeline: String(s.labels.pipeline), outcome: String(s.labels.outcome) }),
    },
  );
  counter(
    page,
    "jobs_ingest_dropped_total",
    "Records of committed ingest chunks dropped since the daemon started, by pipeline and reason.",
    {
      samples: snapshot.ingestDropped,
      labels: (s) => ({ pipeline: String(s.labels.pipeline), reason: String(s.labels.reason) }),
    },
  );
  counter(
    page,
    "jobs_ingest_runs_total",
    "Ingest runs finished since the daemon started, by pipeline and state.",
    {
      samples: snapshot.ingestRuns,
      labels: (s) => ({ pipeline: String(s.labels.pipeline), state: String(s.labels.state) }),
    },
  );
}

/**
 * The pipelines' freshness at `now`: stale and the promise for the declared
 * pipelines with a bounded freshness, in file order; the newest completed
 * run for every pipeline that has one, declared first, then the store's
 * others by name (as `jobs pipelines` lists them).
 */
function renderFreshness(
  page: Page,
  ingest: IngestFreshnessParams,
  summaries: readonly { pipeline: string; lastCompletedAt: number | null }[],
): void {
  const completedAt = new Map(summaries.map((s) => [s.pipeline, s.lastCompletedAt]));
  const bounded = ingest.pipelines.flatMap((p) => {
    const view = freshnessOf(p.freshness, completedAt.get(p.id) ?? null, ingest.now);
    return view?.mode === "bounded" ? [{ pipeline: p.id, view }] : [];
  });
  page.family(
    "jobs_ingest_stale",
    "gauge",
    "1 when a bounded pipeline's newest completed run is older than its freshness promises, " +
      "or none completed.",
  );
  for (const b of bounded) {
    page.sample("jobs_ingest_stale", { pipeline: b.pipeline }, b.view.stale ? 1 : 0);
  }
  page.family(
    "jobs_ingest_freshness_seconds",
    "gauge",
    "How fresh a bounded pipeline promises its data to be (its freshness within), in seconds.",
  );
  for (const b of bounded) {
    page.sample("jobs_ingest_freshness_seconds", { pipeline: b.pipeline }, b.view.withinMs! / 1000);
  }
  const declared = new Set(ingest.pipelines.map((p) => p.id));
  const ids = [
    ...declared,
    ...summaries.map((s) => s.pipeline).filter((id) => !declared.has(id)).sort(),
  ];
  page.family(
    "jobs_ingest_last_completed_timestamp_seconds",
    "gauge",
    "When the pipeline's newest completed run finished (Unix seconds).",
  );
  for (const pipeline of ids) {
    const at = completedAt.get(pipeline);
    if (at === undefined || at === null) continue;
    page.sample("jobs_ingest_last_completed_timestamp_seconds", { pipeline }, at / 1000);
  }
}

/**
 * A gauge by workflow and state: every workflow the store counts gets every
 * one of `states`, zeros included, so a series does not vanish when a state
 * empties (as `jobs_jobs` does by queue).
 */
function byWorkflowAndState(
  page: Page,
  name: string,
  help: string,
  states: readonly string[],
  counts: readonly { workflow: string; state: string; count: number }[],
): void {
  const byWorkflow = new Map<string, Map<string, number>>();
  for (const c of counts) {
    let row = byWorkflow.get(c.workflow);
    if (!row) byWorkflow.set(c.workflow, row = new Map(states.map((s) => [s, 0])));
    row.set(c.state, (row.get(c.state) ?? 0) + c.count);
  }
  page.family(name, "gauge", help);
  for (const [workflow, row] of [...byWorkflow].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
    for (const [state, count] of row) page.sample(name, { workflow, state }, count);
  }
}

/** A histogram family; nothing when the snapshot has no such field. */
function histogram<T extends Omit<HistogramSample, "labels">>(
  page: Page,
  name: string,
  help: string,
  series: { samples: readonly T[] | undefined; labels: (sample: T) => Record<string, string> },
): void {
  if (!series.samples) return;
  page.family(name, "histogram", help);
  for (const h of series.samples) {
    const labels = series.labels(h);
    for (const b of h.buckets) {
      page.sample(`${name}_bucket`, { ...labels, le: formatValue(b.le) }, b.count);
    }
    page.sample(`${name}_bucket`, { ...labels, le: "+Inf" }, h.count);
    page.sample(`${name}_sum`, labels, h.sum);
    page.sample(`${name}_count`, labels, h.count);
  }
}

/** The runtime's own series: outcomes, lost leases, store health, planner lag, leadership. */
function renderRuntime(page: Page, snapshot: MetricsSnapshot): void {
  counter(
    page,
    "jobs_attempts_total",
    "Attempts finished on this node since it started, by queue and outcome.",
    {
      samples: snapshot.attempts,
      labels: (a) => ({ queue: String(a.labels.queue), outcome: String(a.labels.outcome) }),
    },
  );
  counter(
    page,
    "jobs_leases_lost_total",
    "Leases this node lost (cancelled by an operator, rescued elsewhere, or run out unrenewed).",
    { samples: snapshot.leasesLost, labels: (l) => ({ queue: String(l.queue) }) },
  );
  counter(page, "jobs_store_errors_total", "Store calls that failed, by step.", {
    samples: snapshot.storeErrors,
    labels: (e) => ({ source: String(e.source) }),
  });
  gauge(
    page,
    "jobs_store_degraded",
    "1 while a step of this node cannot use the store (locked, read-only or gone).",
    snapshot.storeDegraded === undefined ? undefined : snapshot.storeDegraded ? 1 : 0,
  );
  gauge(
    page,
    "jobs_results_unrecorded",
    "Finished jobs whose result waits for the store to be written.",
    snapshot.unrecorded,
  );
  gauge(
    page,
    "jobs_planner_lag_seconds",
    "How long the oldest due occurrence has waited to be planned.",
    snapshot.plannerLagSeconds,
  );
  if (snapshot.leader) {
    page.family(
      "jobs_leader",
      "gauge",
      "1 while this node runs the maintenance passes (stager, lifeline, pruner, planner): " +
        "it holds the maintenance role, or every node runs them.",
    );
    page.sample("jobs_leader", { node: snapshot.leader.node }, snapshot.leader.leader ? 1 : 0);
  }
}

/** A counter family with one sample per series; nothing when the snapshot has no such field. */
function counter<T extends { value: number }>(
  page: Page,
  name: string,
  help: string,
  series: { samples: readonly T[] | undefined; labels: (sample: T) => Record<string, string> },
): void {
  if (!series.samples) return;
  page.family(name, "counter", help);
  for (const s of series.samples) page.sample(name, series.labels(s), s.value);
}

/** A gauge without labels; nothing when the snapshot has no such field. */
function gauge(page: Page, name: string, help: string, value: number | undefined): void {
  if (value === undefined) return;
  page.family(name, "gauge", help);
  page.sample(name, {}, value);
}

/** Copies only the allowed labels, so a caller's extra fields never reach the page. */
function pick(sample: { labels: CounterLabels }): Record<string, string> {
  return { queue: String(sample.labels.queue), worker: String(sample.labels.worker) };
}
