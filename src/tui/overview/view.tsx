/**
 * The overview: the store's health, each queue with its counts by state,
 * pause and concurrency and a throughput sparkline, the nodes with their
 * heartbeat age, and what needs attention: the schedules that misfired or
 * are disabled, the pipelines that are stale or whose last run paged or failed.
 *
 * @module
 */

import type { ReactNode } from "react";
import type { NodeView } from "../../admin/nodes.ts";
import type { ScheduleStatus } from "../../admin/schedules.ts";
import type { StoreCheck } from "../../admin/store.ts";
import { JOB_STATES, type JobState } from "../../kernel/types.ts";
import { ago } from "../../text/durations.ts";
import type { Overview, QueueOverview } from "../data.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { windowOf } from "../seg.ts";
import { pipelineAttentionLines } from "../pipelines/view.tsx";
import { compact, firstLine, fit, plural, sparkline, STATE_COLOR, STATE_SHORT } from "../text.ts";

/** Props of {@linkcode OverviewView}. */
export interface OverviewProps {
  overview: Overview | null;
  /** The selected queue's index. */
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** The overview screen. */
export function OverviewView(props: OverviewProps): ReactNode {
  return <Lines lines={overviewLines(props)} width={props.width} height={props.height} />;
}

/** State labels of the count columns on a narrow terminal (4 characters and a space). */
const STATE_TINY: Record<JobState, string> = {
  scheduled: "schd",
  available: "avbl",
  executing: "exec",
  retryable: "rtry",
  completed: "done",
  cancelled: "cncl",
  discarded: "dead",
};

/** The overview as lines, at most `height` of them. */
export function overviewLines(props: OverviewProps): Seg[][] {
  const { overview, width, height, now } = props;
  if (!overview) return [[seg("loading…", { dim: true })]];
  const problems = overview.configProblems;
  // The store line, the queue, node and attention headers and the blank lines
  // between them; and the schedules file's header and blank line when it failed.
  const fixed = 7 + (problems.length > 0 ? 2 : 0);
  const rest = Math.max(3, height - fixed);
  const share = Math.max(1, Math.floor(rest / 4));
  const nodeRows = Math.min(Math.max(1, overview.nodes.length), share);
  const attention = [
    ...scheduleAttention(overview.attention, now),
    ...overview.pipelineAttention.flatMap((p) => pipelineAttentionLines(p, now)),
  ];
  const attentionRows = Math.min(Math.max(1, attention.length), share);
  // The file's errors come before the queues' rows: they say why the rest may be wrong.
  const problemRows = Math.min(problems.length, Math.max(2, Math.floor(rest / 2)));
  const queueRows = Math.max(1, rest - nodeRows - attentionRows - problemRows);
  const lines: Seg[][] = [storeLine(overview.store), []];
  if (problems.length > 0) lines.push(...problemLines(problems, problemRows), []);
  lines.push(...queueLines(overview.queues, props.cursor, queueRows, width));
  lines.push([], ...nodeLines(overview.nodes, nodeRows, now));
  lines.push([], ...attentionLines(attention, attentionRows));
  return lines.slice(0, height);
}

function storeLine(check: StoreCheck): Seg[] {
  return [
    seg("store ", { bold: true }),
    seg(`${check.kind} ${check.location}: `),
    check.reachable
      ? seg(`reachable, a read took ${check.readMs ?? "?"} ms`, { color: "green" })
      : seg(`NOT READABLE: ${check.error ?? "unknown error"}`, { color: "red", bold: true }),
  ];
}

/**
 * Why the schedules file could not be used: its error count, then the
 * errors themselves, as many as fit and how many more (together, the count).
 */
function problemLines(problems: string[], rows: number): Seg[][] {
  const header = [
    seg("SCHEDULES FILE", { bold: true }),
    seg(`  ${plural(problems.length, "error")}; queues and schedules as the store knows them`, {
      color: "yellow",
    }),
  ];
  const { shown, more } = fitList(problems, rows);
  return [
    header,
    ...shown.map((p) => [seg(`  ${firstLine(p)}`, { color: "yellow" })]),
    ...(more > 0 ? [[seg(`  … ${more} more`, { dim: true })]] : []),
  ];
}

function queueLines(
  queues: QueueOverview[],
  cursor: number,
  rows: number,
  width: number,
): Seg[][] {
  const nameWidth = Math.max(
    8,
    Math.min(20, Math.max(0, ...queues.map((q) => Array.from(q.name).length))),
  );
  // Marker, name, state, concurrency, the counts; then two sparklines with their totals.
  const countWidth = width >= 100 ? 6 : 5;
  const labels = countWidth === 6 ? STATE_SHORT : STATE_TINY;
  const fixed = 2 + nameWidth + 1 + 7 + 6 + JOB_STATES.length * countWidth;
  const sparkWidth = Math.max(3, Math.min(60, Math.floor((width - fixed - 11) / 2)));
  const header: Seg[] = [
    seg(`  ${fit("QUEUE", nameWidth)} ${fit("STATE", 7)}${fit("CONC", 6)}`, { bold: true }),
    ...JOB_STATES.map((s) => seg(fit(labels[s], countWidth, true), { bold: true })),
    seg(`  ${fit("done/min", sparkWidth + 4)} ${fit("fail/min", sparkWidth + 4)}`, {
      bold: true,
    }),
  ];
  if (queues.length === 0) return [header, [seg("  no queues yet", { dim: true })]];
  const visible = queues.length > rows ? Math.max(1, rows - 1) : rows;
  const [start, end] = windowOf(queues.length, cursor, visible);
  const out: Seg[][] = [header];
  for (let i = start; i < end; i++) {
    const q = queues[i]!;
    const selected = i === cursor;
    const live = Object.values(q.nodes).reduce((a, b) => a + b, 0);
    const conc = `${Object.keys(q.nodes).length > 0 ? live : "-"}/${q.declaredConcurrency ?? "-"}`;
    const done = q.completed.reduce((a, b) => a + b, 0);
    const failed = q.failed.reduce((a, b) => a + b, 0);
    out.push([
      seg(selected ? "> " : "  ", { bold: true }),
      seg(fit(q.name, nameWidth), { inverse: selected }),
      seg(" "),
      q.paused
        ? seg(fit("PAUSED", 7), { color: "yellow", bold: true })
        : seg(fit(q.pausedInFile ? "run*" : "run", 7)),
      seg(fit(conc, 6)),
      ...JOB_STATES.map((s) =>
        q.counts[s] > 0
          ? seg(fit(compact(q.counts[s]), countWidth, true), { color: STATE_COLOR[s] })
          : seg(fit("0", countWidth, true), { dim: true })
      ),
      seg("  "),
      seg(sparkline(q.completed, sparkWidth), { color: "green" }),
      seg(fit(compact(done), 4, true) + " "),
      seg(sparkline(q.failed, sparkWidth), { color: "red" }),
      seg(fit(compact(failed), 4, true)),
    ]);
  }
  if (end < queues.length || start > 0) {
    out.push([seg(`  queues ${start + 1}-${end} of ${queues.length}`, { dim: true })]);
  }
  return out;
}

function nodeLines(nodes: NodeView[], rows: number, now: number): Seg[][] {
  const header = [seg("NODES", { bold: true }), seg("  heartbeat age, queues:concurrency")];
  if (nodes.length === 0) return [header, [seg("  none registered", { dim: true })]];
  const { shown, more } = fitList(nodes, rows);
  const out: Seg[][] = [header];
  for (const n of shown) {
    const queues = Object.entries(n.queues).map(([q, c]) => `${q}:${c}`).join(",");
    out.push([
      seg(`  ${n.node}  `),
      n.stale
        ? seg(`STALE, last heartbeat ${ago(n.heartbeatAt, now)}`, { color: "red", bold: true })
        : seg(`heartbeat ${ago(n.heartbeatAt, now)}`, { color: "green" }),
      seg(`  ${queues || "-"}`),
    ]);
  }
  if (more > 0) out.push([seg(`  … ${more} more`, { dim: true })]);
  return out;
}

/** The attention section: its header, then `lines` (one per problem), as many as fit. */
function attentionLines(lines: Seg[][], rows: number): Seg[][] {
  const header = [
    seg("NEEDING ATTENTION", { bold: true }),
    seg("  schedules misfired/disabled, pipelines stale/paged/failed"),
  ];
  if (lines.length === 0) return [header, [seg("  none", { dim: true })]];
  const { shown, more } = fitList(lines, rows);
  return [header, ...shown, ...(more > 0 ? [[seg(`  … ${more} more`, { dim: true })]] : [])];
}

/** A line per schedule that misfired or is disabled. */
function scheduleAttention(schedules: ScheduleStatus[], now: number): Seg[][] {
  return schedules.map((s) => {
    const parts: Seg[] = [seg(`  ${s.id}  `)];
    if (!s.enabled) {
      parts.push(seg("disabled", { color: "yellow", bold: true }));
      parts.push(
        seg(
          s.disabledIn === "file"
            ? " in the file"
            : ` by ${s.disabledBy ?? "unknown"} ${ago(s.disabledAt, now)}: ${
              s.disabledReason ?? "no reason given"
            }`,
        ),
      );
    }
    if (s.misfires > 0) {
      parts.push(
        seg(`${s.enabled ? "" : "; "}misfired ${s.misfires}×`, { color: "red" }),
        seg(s.lastMisfireFor !== null ? ` (last ${ago(s.lastMisfireFor, now)})` : ""),
      );
    }
    return parts;
  });
}

/** The first `rows` items, or `rows - 1` and how many more when they do not fit. */
export function fitList<T>(items: T[], rows: number): { shown: T[]; more: number } {
  if (items.length <= rows) return { shown: items, more: 0 };
  const shown = items.slice(0, Math.max(0, rows - 1));
  return { shown, more: items.length - shown.length };
}
