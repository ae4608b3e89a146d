/**
 * The `/metrics` page in the Prometheus text format 0.0.4: gauges read from
 * the store on each scrape, plus the counters the daemon keeps in memory
 * (a {@linkcode MetricsSnapshot}).
 *
 * Labels carry only names an operator chose (queue, worker, schedule id):
 * never job args, error text or anything else a job or a failure supplies,
 * which could leak secrets and would grow the series without bound.
 *
 * @module
 */

import { JOB_STATES, type JobState } from "../kernel/types.ts";
import type { Store } from "../store/store.ts";

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

/** The counters the daemon keeps since it started; every field is optional. */
export interface MetricsSnapshot {
  /** Attempts that completed: `jobs_completions_total`. */
  completions?: CounterSample[];
  /** Attempts that failed (errored, timed out, orphaned): `jobs_failures_total`. */
  failures?: CounterSample[];
  /** How long attempts ran: `jobs_attempt_duration_seconds`. */
  durations?: HistogramSample[];
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

/**
 * Renders the page: reads job counts, queues, nodes and schedules from the
 * store (reads only), then the optional snapshot. Throws when the store does.
 */
export async function renderMetrics(store: Store, snapshot?: MetricsSnapshot): Promise<string> {
  const [counts, queues, nodes, schedules] = await Promise.all([
    store.jobsCount({}),
    store.queuesList(),
    store.nodesList(),
    store.schedulesList({}),
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
  for (const c of counts) queueOf(c.queue).set(c.state, c.count);
  page.family("jobs_jobs", "gauge", "Jobs in the store by queue and state.");
  for (const [queue, states] of [...byQueue].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
    for (const [state, count] of states) page.sample("jobs_jobs", { queue, state }, count);
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

  if (snapshot?.completions) {
    page.family(
      "jobs_completions_total",
      "counter",
      "Attempts completed since the daemon started.",
    );
    for (const c of snapshot.completions) page.sample("jobs_completions_total", pick(c), c.value);
  }
  if (snapshot?.failures) {
    page.family("jobs_failures_total", "counter", "Attempts failed since the daemon started.");
    for (const c of snapshot.failures) page.sample("jobs_failures_total", pick(c), c.value);
  }
  if (snapshot?.durations) {
    const name = "jobs_attempt_duration_seconds";
    page.family(name, "histogram", "How long attempts ran, in seconds.");
    for (const h of snapshot.durations) {
      const labels = pick(h);
      for (const b of h.buckets) {
        page.sample(`${name}_bucket`, { ...labels, le: formatValue(b.le) }, b.count);
      }
      page.sample(`${name}_bucket`, { ...labels, le: "+Inf" }, h.count);
      page.sample(`${name}_sum`, labels, h.sum);
      page.sample(`${name}_count`, labels, h.count);
    }
  }
  return page.toString();
}

/** Copies only the allowed labels, so a caller's extra fields never reach the page. */
function pick(sample: { labels: CounterLabels }): Record<string, string> {
  return { queue: String(sample.labels.queue), worker: String(sample.labels.worker) };
}
