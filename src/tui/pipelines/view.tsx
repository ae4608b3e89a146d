/**
 * The pipelines screen: a row per pipeline (its freshness, its last run
 * with that run's counts, its drops per reason over the last hour and the
 * last day), and one pipeline open: its freshness as a sentence, its drops
 * per reason, then its newest runs, each with its counts, its drops per
 * reason and why it failed. The overview's attention section takes its
 * pipeline lines from here, so both say a pipeline is stale the same way.
 *
 * Colour never carries meaning alone: `STALE` and every state are written out.
 *
 * @module
 */

import type { ReactNode } from "react";
import { type FreshnessView, type PipelineView, totalDropped } from "../../admin/pipelines.ts";
import type { IngestRun } from "../../ingest/types.ts";
import { redact } from "../../kernel/redact.ts";
import { ago, span } from "../../text/durations.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { clean, compact, firstLine, fit, INGEST_RUN_STATE_COLOR, iso } from "../text.ts";

/** Lines above the rows of the pipelines list (the counts line and the column header). */
const PIPELINES_HEADER_LINES = 2;

/** `duplicate 12 · below-threshold 3`: the reasons with any drops, the most first; `none`. */
export function reasonsText(dropped: Record<string, number>): string {
  const shown = Object.entries(dropped)
    .filter(([, n]) => n > 0)
    .sort(([a, m], [b, n]) => n - m || (a < b ? -1 : a > b ? 1 : 0));
  return shown.length === 0 ? "none" : shown.map(([r, n]) => `${clean(r)} ${n}`).join(" · ");
}

/** `15: duplicate 12 · below-threshold 3`, or `none`. */
function droppedText(dropped: Record<string, number>): string {
  const total = totalDropped(dropped);
  return total === 0 ? "none" : `${total}: ${reasonsText(dropped)}`;
}

/**
 * How fresh the data is, as a sentence's tail: `last complete run 2h ago,
 * promised within 15m`, `no complete run yet, promised within 15m`, or for
 * an advisory pipeline `erp is right; last complete run 3m ago`.
 */
export function freshnessText(f: FreshnessView, now: number): string {
  const last = f.lastCompletedAt === null
    ? "no complete run yet"
    : `last complete run ${ago(f.lastCompletedAt, now)}`;
  if (f.mode === "advisory") return `${clean(f.authority ?? "?")} is right; ${last}`;
  return `${last}, promised within ${span(f.withinMs ?? 0)}`;
}

/** The freshness cell of the list: `fresh 3m`, `STALE 2h`, `STALE never`, `advisory (erp)`, `-`. */
function freshnessCell(f: FreshnessView | null, width: number): Seg {
  if (f === null) return seg(fit("-", width), { dim: true });
  if (f.mode === "advisory") return seg(fit(`advisory (${clean(f.authority ?? "?")})`, width));
  const age = f.ageMs === null ? "never" : span(f.ageMs);
  return f.stale
    ? seg(fit(`STALE ${age}`, width), { color: "red", bold: true })
    : seg(fit(`fresh ${age}`, width), { color: "green" });
}

/** When a run last moved: finished, else started. */
function runAt(run: IngestRun): number {
  return run.finishedAt ?? run.startedAt;
}

/**
 * What the overview's attention section says of a pipeline: that it is
 * stale, and that its last run paged or failed; no lines when neither.
 */
export function pipelineAttentionLines(view: PipelineView, now: number): Seg[][] {
  const name = `  pipeline "${clean(view.id)}"`;
  const lines: Seg[][] = [];
  if (view.freshness?.stale) {
    lines.push([
      seg(`${name} `),
      seg("is stale", { color: "red", bold: true }),
      seg(`: ${freshnessText(view.freshness, now)}`),
    ]);
  }
  const last = view.recent[0];
  if (last && (last.state === "paged" || last.state === "failed")) {
    lines.push([
      seg(`${name}: last run ${last.id} `),
      seg(last.state, { color: INGEST_RUN_STATE_COLOR[last.state], bold: true }),
      seg(` ${ago(runAt(last), now)}`),
      ...(last.error === null ? [] : [seg(`: ${firstLine(redact(last.error))}`)]),
    ]);
  }
  return lines;
}

// ------------------------------------------------------------------- list

/** Props of {@linkcode PipelinesList}. */
export interface PipelinesListProps {
  pipelines: PipelineView[] | null;
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** The pipelines list. */
export function PipelinesList(props: PipelinesListProps): ReactNode {
  return <Lines lines={pipelinesLines(props)} width={props.width} height={props.height} />;
}

/** Column widths of the list for a terminal `width` wide. */
function listColumns(width: number) {
  if (width >= 100) return { id: 20, fresh: 18, run: 8, state: 11, age: 9, count: 8 };
  return { id: 14, fresh: 15, run: 6, state: 10, age: 8, count: 6 };
}

/** `4 · 1 stale · 1 last run failed`: the counts line after its label, `pipelines`. */
function countSegs(pipelines: PipelineView[]): Seg[] {
  const stale = pipelines.filter((p) => p.freshness?.stale).length;
  const last = (state: IngestRun["state"]) =>
    pipelines.filter((p) => p.recent[0]?.state === state).length;
  const segs: Seg[] = [seg(`${pipelines.length}`)];
  if (stale > 0) segs.push(seg(" · "), seg(`${stale} stale`, { color: "red" }));
  for (const state of ["failed", "paged"] as const) {
    const n = last(state);
    if (n > 0) {
      segs.push(
        seg(" · "),
        seg(`${n} last run ${state}`, { color: INGEST_RUN_STATE_COLOR[state] }),
      );
    }
  }
  return segs;
}

/** The list as lines: the counts, the header, then each pipeline's row and its drops. */
export function pipelinesLines(props: PipelinesListProps): Seg[][] {
  const { pipelines, width, height } = props;
  const c = listColumns(width);
  const lines: Seg[][] = [[
    seg("pipelines ", { bold: true }),
    ...(pipelines === null ? [] : countSegs(pipelines)),
  ], [
    seg(
      `  ${fit("PIPELINE", c.id)} ${fit("FRESHNESS", c.fresh)}${fit("RUN", c.run)}${
        fit("STATE", c.state)
      }${fit("AGE", c.age)}${fit("RECV", c.count, true)}${fit("SUNK", c.count, true)}${
        fit("FAIL", c.count, true)
      }`,
      { bold: true },
    ),
  ]];
  if (!pipelines) return [...lines, [seg("  loading…", { dim: true })]];
  if (pipelines.length === 0) {
    return [
      ...lines,
      [seg("  no pipelines: none in the schedules file, none with runs in the store", {
        dim: true,
      })],
    ];
  }
  const blocks = pipelines.map((view, i) => pipelineRows(view, i === props.cursor, props));
  const room = Math.max(1, height - PIPELINES_HEADER_LINES);
  const [start, end] = blockWindow(blocks.map((b) => b.length), props.cursor, room);
  for (let i = start; i < end; i++) lines.push(...blocks[i]!);
  if (start > 0 || end < blocks.length) {
    lines.push([seg(`  pipelines ${start + 1}-${end} of ${blocks.length}`, { dim: true })]);
  }
  return lines;
}

/**
 * The `[start, end)` of blocks of `sizes` lines that fit `room` lines and
 * show the block at `cursor`; a line is kept for the position when not all fit.
 */
function blockWindow(sizes: number[], cursor: number, room: number): [number, number] {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= room) return [0, sizes.length];
  const fits = Math.max(1, room - 1);
  const at = Math.max(0, Math.min(cursor, sizes.length - 1));
  let start = at;
  let used = sizes[at]!;
  while (start > 0 && used + sizes[start - 1]! <= fits) used += sizes[--start]!;
  let end = at + 1;
  while (end < sizes.length && used + sizes[end]! <= fits) used += sizes[end++]!;
  return [start, end];
}

/** One pipeline of the list: its row, then its drops (on two lines when one is too narrow). */
function pipelineRows(view: PipelineView, selected: boolean, props: PipelinesListProps): Seg[][] {
  const { width, now } = props;
  const c = listColumns(width);
  const last = view.recent[0];
  const count = (n: number, color?: string) =>
    seg(fit(compact(n), c.count, true), n > 0 && color ? { color } : { dim: n === 0 });
  const row: Seg[] = [
    seg(selected ? "> " : "  ", { bold: true }),
    seg(fit(clean(view.id), c.id), { inverse: selected }),
    seg(" "),
    freshnessCell(view.freshness, c.fresh),
    ...(last
      ? [
        seg(fit(String(last.id), c.run)),
        seg(fit(last.state, c.state), { color: INGEST_RUN_STATE_COLOR[last.state] }),
        seg(fit(ago(runAt(last), now), c.age)),
        count(last.counts.received),
        count(last.counts.sunk),
        count(last.counts.failed, "red"),
      ]
      : [seg(fit("-", c.run)), seg("no runs", { dim: true })]),
  ];
  const hour = `1h: ${reasonsText(view.droppedLastHour)}`;
  const day = `1d: ${reasonsText(view.droppedLastDay)}`;
  const dim = totalDropped(view.droppedLastDay) === 0;
  const label = "    dropped ";
  if (Array.from(`${label}${hour}   ${day}`).length <= width) {
    return [row, [seg(label, { dim: true }), seg(`${hour}   ${day}`, { dim })]];
  }
  return [
    row,
    [seg(label, { dim: true }), seg(hour, { dim })],
    [seg(" ".repeat(label.length)), seg(day, { dim })],
  ];
}

// ----------------------------------------------------------------- detail

/** Props of {@linkcode PipelinePane}. */
export interface PipelineProps {
  view: PipelineView | null;
  /** The id asked for, shown while loading or when it is gone. */
  id: string;
  /** The first line shown. */
  scroll: number;
  width: number;
  height: number;
  now: number;
}

/** One pipeline, scrolled to `scroll`. */
export function PipelinePane(props: PipelineProps): ReactNode {
  const all = pipelineLines(props);
  const scroll = Math.max(0, Math.min(props.scroll, all.length - props.height));
  return <Lines lines={all.slice(scroll)} width={props.width} height={props.height} />;
}

/** One pipeline as lines: what it is, its freshness, its drops, then its newest runs. */
export function pipelineLines(props: PipelineProps): Seg[][] {
  const { view, now } = props;
  if (!view) {
    return [[
      seg(`pipeline "${clean(props.id)}": loading, or no longer known`, { dim: true }),
    ]];
  }
  const lines: Seg[][] = [[
    seg(`pipeline ${clean(view.id)}`, { bold: true }),
    seg(`  ${view.runs} run${view.runs === 1 ? "" : "s"} in the store`),
    view.hash === null
      ? seg("  not in the schedules file", { color: "yellow" })
      : seg(`  definition ${clean(view.hash.slice(0, 12))}`, { dim: true }),
  ], [seg("freshness  "), ...freshnessSegs(view.freshness, now)]];
  const dropped = (label: string, counts: Record<string, number>): Seg[] => [
    seg(label),
    seg(droppedText(counts), { dim: totalDropped(counts) === 0 }),
  ];
  lines.push(
    dropped("dropped    last hour ", view.droppedLastHour),
    dropped("           last day  ", view.droppedLastDay),
    [],
  );
  if (view.recent.length === 0) {
    lines.push([seg("runs", { bold: true }), seg("  none yet", { dim: true })]);
    return lines;
  }
  lines.push([
    seg(`runs (${view.recent.length} newest of ${view.runs})`, { bold: true }),
    seg("  newest first", { dim: true }),
  ]);
  for (const run of view.recent) lines.push(...runLines(run, now, props.width >= 100));
  return lines;
}

/** `STALE: last complete run 2h ago, promised within 15m`, `fresh: …`, `advisory: …`, or none. */
function freshnessSegs(f: FreshnessView | null, now: number): Seg[] {
  if (f === null) return [seg("none declared", { dim: true })];
  const text = `: ${freshnessText(f, now)}`;
  if (f.mode === "advisory") return [seg("advisory"), seg(text)];
  return f.stale
    ? [seg("STALE", { color: "red", bold: true }), seg(text)]
    : [seg("fresh", { color: "green" }), seg(text)];
}

/**
 * One run: its state, trigger and times; its counts; its drops per reason;
 * its error. When it started is written in UTC too on a `wide` terminal.
 */
function runLines(run: IngestRun, now: number, wide: boolean): Seg[][] {
  const started = wide
    ? `${iso(run.startedAt).slice(0, 16).replace("T", " ")} UTC (${ago(run.startedAt, now)})`
    : ago(run.startedAt, now);
  const took = run.finishedAt !== null
    ? `, took ${span(run.finishedAt - run.startedAt)}`
    : run.state === "running"
    ? `, last chunk ${ago(run.updatedAt, now)}`
    : "";
  const { counts } = run;
  const lines: Seg[][] = [[
    seg(`  ${fit(String(run.id), 6)}`, { bold: true }),
    seg(fit(run.state, 10), { color: INGEST_RUN_STATE_COLOR[run.state], bold: true }),
    seg(fit(run.trigger, 9)),
    seg(`started ${started}${took}`),
  ], [
    seg(
      `        received ${counts.received} · kept ${counts.kept} · sunk ${counts.sunk} · `,
    ),
    seg(`failed ${counts.failed}`, counts.failed > 0 ? { color: "red" } : {}),
    seg(` · pending ${counts.pending}`),
  ], [
    seg("        dropped "),
    seg(droppedText(counts.dropped), { dim: totalDropped(counts.dropped) === 0 }),
  ]];
  if (run.error !== null) {
    lines.push([seg("        error: "), seg(firstLine(redact(run.error)), { color: "red" })]);
  }
  return lines;
}
