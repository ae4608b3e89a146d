/**
 * The whole dashboard drawn from its state: the tab bar, a rule under it
 * (or the banner while the store cannot be read), the active screen or the
 * open dialog, the status line and a footer of keys. It only renders: what
 * happens on a key is the reducer's (`reduce.ts`, and each tab's `keys.ts`).
 *
 * @module
 */

import { Box } from "ink";
import type { ReactNode } from "react";
import { ago } from "../text/durations.ts";
import { OverlayView } from "./dialogs.tsx";
import { DeadLettersView } from "./dead_letters/view.tsx";
import { JobDetailPane, JobsList } from "./jobs/view.tsx";
import { ColorContext, Line, type Seg, seg } from "./line.tsx";
import { OverviewView } from "./overview/view.tsx";
import { PipelinePane, PipelinesList } from "./pipelines/view.tsx";
import { SchedulesView } from "./schedules/view.tsx";
import { WorkflowRunPane, WorkflowsList } from "./workflows/view.tsx";
import { WorkView } from "./work/view.tsx";
import { rule } from "./seg.ts";
import {
  CHROME_LINES,
  clamp,
  contentHeight,
  type DashboardState,
  pageSize,
  type Status,
  type Tab,
  TABS,
  widthOf,
} from "./state.ts";
import { fitLocation, tellingWidth } from "./text.ts";

/** Props of {@linkcode DashboardView}. */
export interface DashboardViewProps {
  state: DashboardState;
  /** Now, from the injected clock: ages are drawn relative to it. */
  now: number;
  /** Where the data comes from, for the title bar. */
  location: string;
  /** Said after the location (a retired store: where it moved). @default "" */
  note?: string;
  /** Paint colours. @default true */
  color?: boolean;
}

/** The dashboard, exactly the terminal's size. */
export function DashboardView(props: DashboardViewProps): ReactNode {
  const { state, now } = props;
  const width = widthOf(state);
  const height = contentHeight(state);
  return (
    <ColorContext.Provider value={props.color ?? true}>
      <Box flexDirection="column" width={width} height={height + CHROME_LINES}>
        <Line
          segs={tabBar(state.tab, state.readOnly, props.location, width, props.note)}
          width={width}
        />
        <Line segs={banner(state, now, width)} width={width} />
        <Box flexDirection="column" height={height}>{screen(state, now, width, height)}</Box>
        <Line segs={statusLine(state.status)} width={width} />
        <Line segs={[seg(footer(state), { dim: true })]} width={width} />
      </Box>
    </ColorContext.Provider>
  );
}

function screen(state: DashboardState, now: number, width: number, height: number): ReactNode {
  if (state.overlay) {
    return (
      <OverlayView
        overlay={state.overlay}
        readOnly={state.readOnly}
        width={width}
        height={height}
      />
    );
  }
  if (state.tab === "overview") {
    return (
      <OverviewView
        overview={state.overview}
        cursor={clamp(state.queueCursor, state.overview?.queues.length ?? 0)}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "jobs" && state.detail !== null) {
    const { id, data, scroll } = state.detail;
    return (
      <JobDetailPane
        detail={data?.job.id === id ? data : null}
        id={id}
        scroll={scroll}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "jobs") {
    return (
      <JobsList
        jobs={state.jobs}
        filter={state.filter}
        desc={state.desc}
        page={state.pages.length}
        pageSize={pageSize(state)}
        total={state.total}
        cursor={clamp(state.jobCursor, state.jobs?.length ?? 0)}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "schedules") {
    return (
      <SchedulesView
        schedules={state.schedules}
        cursor={clamp(state.scheduleCursor, state.schedules?.length ?? 0)}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "workflows" && state.run !== null) {
    const { id, data, scroll } = state.run;
    return (
      <WorkflowRunPane
        view={data?.run.id === id ? data : null}
        id={id}
        scroll={scroll}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "workflows") {
    return (
      <WorkflowsList
        runs={state.runs}
        counts={state.runCounts}
        runState={state.runState}
        page={state.runPages.length}
        cursor={clamp(state.runCursor, state.runs?.length ?? 0)}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "pipelines" && state.pipeline !== null) {
    const { id, data, scroll } = state.pipeline;
    return (
      <PipelinePane
        view={data?.id === id ? data : null}
        id={id}
        scroll={scroll}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "pipelines") {
    return (
      <PipelinesList
        pipelines={state.pipelines}
        cursor={clamp(state.pipelineCursor, state.pipelines?.length ?? 0)}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  if (state.tab === "work") {
    return (
      <WorkView
        work={state.work}
        queue={state.workQueue}
        cursor={clamp(state.workCursor, state.work?.watch?.items.length ?? 0)}
        width={width}
        height={height}
        now={now}
      />
    );
  }
  return (
    <DeadLettersView
      groups={state.dead}
      cursor={clamp(state.deadCursor, state.dead?.length ?? 0)}
      width={width}
      height={height}
      now={now}
    />
  );
}

/** The banner while the store cannot be read; else the header's rule, the terminal's width. */
export function banner(state: DashboardState, now: number, width: number): Seg[] {
  if (state.storeError === null) return rule(width);
  return [
    seg(" STORE UNREACHABLE ", { color: "red", bold: true, inverse: true }),
    seg(` ${state.storeError}`, { color: "red" }),
    seg(
      state.lastRead === null
        ? "; retrying every tick"
        : `; showing data read ${ago(state.lastRead, now)}, retrying`,
    ),
  ];
}

/**
 * The tab bar: the program, each screen (the active one bracketed),
 * read-only, the location and its note. When the full labels would leave
 * the location less than 30 columns of `width`, the other screens go by
 * short labels, one space apart, and by their keys alone when even those
 * would leave it less than 20, or less than its shortest telling form (a
 * PostgreSQL store's `host/db?schema=name`, a file's `…/name`, up to 30:
 * see {@linkcode tellingWidth}): which store is open
 * matters more than the spelled-out tab names (the footer and `?` name the
 * keys). A location that still does not fit is shortened by
 * {@linkcode fitLocation}, so a PostgreSQL store keeps its host, database
 * and schema in sight.
 */
export function tabBar(
  active: Tab,
  readOnly: boolean,
  location: string,
  width = Infinity,
  note = "",
): Seg[] {
  const tabs = (label: (t: (typeof TABS)[number]) => string, gap: string): Seg[] =>
    TABS.map((t, i) => {
      const on = t.id === active;
      const text = on
        ? `${i > 0 && gap === "" ? " " : ""}[${t.key} ${t.label}]`
        : ` ${t.key}${label(t) === "" ? "" : ` ${label(t)}`}${gap}`;
      return seg(text, { bold: on, color: on ? "cyan" : undefined });
    });
  const room = (segs: Seg[]) =>
    width - 5 - segs.reduce((n, s) => n + s.text.length, 0) - (readOnly ? 11 : 0);
  const wanted = Array.from(location + note).length + 2;
  const telling = tellingWidth(location);
  // The location's 20 columns, or its shortest telling form, and the two spaces before it.
  const needed = Math.max(Math.min(22, wanted), telling + 2);
  let chosen = tabs((t) => t.label, " ");
  if (room(chosen) < Math.min(30, wanted)) {
    chosen = tabs((t) => t.short, "");
    if (room(chosen) < needed) chosen = tabs(() => "", "");
  }
  const segs: Seg[] = [seg("jobs ", { bold: true }), ...chosen];
  if (readOnly) segs.push(seg("  READ-ONLY", { color: "yellow", bold: true }));
  // The note is cut at the end if need be: the location keeps at least its
  // shortest telling form before it.
  const left = room(chosen) - 2;
  const fitted = fitLocation(
    location,
    Math.max(Math.min(left, telling), left - Array.from(note).length),
  );
  segs.push(seg(`  ${fitted}`, { dim: true }));
  if (note !== "") segs.push(seg(note, { dim: true }));
  return segs;
}

function statusLine(status: Status | null): Seg[] {
  if (!status) return [];
  const color = status.tone === "error" ? "red" : status.tone === "ok" ? "green" : undefined;
  return [seg(status.text, { color })];
}

/** The keys of what is showing. */
export function footer(state: DashboardState): string {
  const overlay = state.overlay;
  if (overlay?.kind === "confirm") return "y confirm · n/esc cancel · j/k scroll";
  if (overlay?.kind === "prompt") return "type · ⏎ accept · esc cancel";
  if (overlay?.kind === "menu") return "a key from the menu · esc cancel";
  if (overlay?.kind === "picker") return "j/k move · space choose · ⏎ list them · esc/q cancel";
  if (overlay?.kind === "help") return "any key closes the help";
  if (state.tab === "overview") {
    return "j/k queue · ⏎ its jobs · P pause/resume · 1-7 views · ? help · q quit";
  }
  if (state.tab === "jobs" && state.detail !== null) {
    return "j/k scroll · r retry · c cancel · d discard · p replay · esc back · ? · q";
  }
  if (state.tab === "jobs") {
    return "j/k ⏎ · / search · f filter · o order · n/b page · r c d p · B bulk · ? · q";
  }
  if (state.tab === "schedules") {
    return "j/k · ⏎ its jobs · R run now · x disable/enable · 1-7 views · ? help · q quit";
  }
  if (state.tab === "workflows" && state.run !== null) {
    return "j/k scroll · r retry · c cancel · esc back · 1-7 views · ? help · q quit";
  }
  if (state.tab === "workflows") {
    return "j/k · ⏎ open run · r retry · c cancel · f state · n/b page · 1-7 · ? · q";
  }
  if (state.tab === "pipelines" && state.pipeline !== null) {
    return "j/k scroll · esc back · 1-7 views · ? help · q quit";
  }
  if (state.tab === "pipelines") return "j/k · ⏎ open pipeline · 1-7 views · ? help · q quit";
  if (state.tab === "work") return "j/k move · h/l queue · 1-7 views · ? help · q quit";
  return "j/k · ⏎ the group's jobs · 1-7 views · ? help · q quit";
}
