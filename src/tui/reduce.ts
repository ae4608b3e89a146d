/**
 * The dashboard's behaviour as one pure function: `reduce(state, event)`
 * returns the next state and the effects for the shell to run (read a
 * screen, run an action, read a bulk preview, read the queues, quit). Keys,
 * timer ticks, resizes and the answers to effects are all events, so a test
 * drives every behaviour here without rendering or waiting.
 *
 * This file is the dispatcher: the keys every tab shares (quit, help, the
 * tabs) and the events; each tab's own keys live beside its view
 * (`jobs/keys.ts`, `schedules/keys.ts`, ...), a dialog's in `dialog_keys.ts`.
 *
 * Reads never pile up: a refresh while the same read is still running is
 * skipped, and only the answer to the latest read is applied. When a read
 * fails the last data stays (the banner says why) and the next tick tries
 * again. In read-only mode every action is refused before it asks anything.
 * A status message belongs to the view it was said in: it clears when the
 * tab changes or a job's (or a workflow run's, or a pipeline's) detail opens
 * or closes.
 *
 * @module
 */

import type { Acted, ActResults } from "./actions.ts";
import type { ReadResult } from "./data.ts";
import { deadLettersKey } from "./dead_letters/keys.ts";
import { dialogKey, labelOf } from "./dialog_keys.ts";
import { bulkPreviewed, detailKey, jobsActed, jobsKey, replayActed } from "./jobs/keys.ts";
import type { Key } from "./keys.ts";
import { overviewKey, queueActed } from "./overview/keys.ts";
import { pipelineKey, pipelinesKey } from "./pipelines/keys.ts";
import { runActed, scheduleActed, schedulesKey } from "./schedules/keys.ts";
import {
  type Context,
  type DashboardEvent,
  type DashboardState,
  type Effect,
  pageSize,
  readOf,
  runsPageSize,
  TABS,
  viewOf,
} from "./state.ts";
import { runKey, runsKey, workflowActed } from "./workflows/keys.ts";
import { workKey } from "./work/keys.ts";

/** The next state and what the shell should do. */
export interface Step {
  state: DashboardState;
  effects: Effect[];
}

/**
 * How long the dashboard goes without reading while the store says nothing
 * changed, in ms: the ages it shows ("heartbeat 12s ago") move on at least
 * this often. A read and its frame cost some 40 ms of CPU on a small VM;
 * once a second that was 4% of a core for a screen nobody touched.
 */
export const IDLE_REFRESH_MS = 60_000;

/** The dashboard's reducer. */
export function reduce(state: DashboardState, event: DashboardEvent): Step {
  const ctx: Context = { effects: [], refresh: event.kind === "tick" && refreshDue(state, event) };
  let next = handle(state, event, ctx);
  if (viewOf(next) !== viewOf(state) && next.status === state.status) {
    next = { ...next, status: null };
  }
  next = withRead(next, ctx);
  return { state: next, effects: ctx.effects };
}

/**
 * Whether a tick reads the screen again: when the store may have changed,
 * when the last read failed or is older than {@linkcode IDLE_REFRESH_MS}.
 */
function refreshDue(
  state: DashboardState,
  tick: Extract<DashboardEvent, { kind: "tick" }>,
): boolean {
  if (tick.changed !== false || tick.at === undefined) return true;
  if (state.storeError !== null || state.lastRead === null) return true;
  return tick.at - state.lastRead >= IDLE_REFRESH_MS;
}

/** Asks for the active screen's read when it changed, or when `ctx.refresh` says so. */
function withRead(state: DashboardState, ctx: Context): DashboardState {
  const { key, request } = readOf(state);
  if (key === state.read.key && !ctx.refresh) return state;
  if (state.read.inFlight?.key === key) return { ...state, read: { ...state.read, key } };
  const seq = state.read.seq + 1;
  ctx.effects.push({ kind: "read", seq, request });
  return { ...state, read: { seq, key, inFlight: { key, seq } } };
}

function handle(state: DashboardState, event: DashboardEvent, ctx: Context): DashboardState {
  switch (event.kind) {
    case "key":
      return onKey(state, event.key, ctx);
    case "tick":
      return state;
    case "resize": {
      const next = { ...state, columns: event.columns, rows: event.rows };
      // A page read for another height is not this height's page: paging
      // from it would skip or repeat jobs, so it goes until the new one comes.
      return {
        ...next,
        ...(pageSize(next) === pageSize(state) ? {} : { jobs: null }),
        ...(runsPageSize(next) === runsPageSize(state) ? {} : { runs: null }),
      };
    }
    case "read":
    case "readFailed": {
      const inFlight = state.read.inFlight?.seq === event.seq ? null : state.read.inFlight;
      const next = { ...state, read: { ...state.read, inFlight } };
      if (event.seq !== state.read.seq) return next;
      if (event.kind === "readFailed") return { ...next, storeError: event.error };
      return { ...applyRead(next, event.result), storeError: null, lastRead: event.at };
    }
    case "acted":
      ctx.refresh = true;
      return { ...state, busy: false, status: { text: actedText(event), tone: "ok" } };
    case "actFailed":
      ctx.refresh = true;
      return {
        ...state,
        busy: false,
        status: { text: `${labelOf(event.request)} failed: ${event.error}`, tone: "error" },
      };
    case "bulkRead":
      return bulkPreviewed({ ...state, busy: false }, event.action, event.jobs);
    case "bulkReadFailed":
      return {
        ...state,
        busy: false,
        status: { text: `bulk ${event.action} failed: ${event.error}`, tone: "error" },
      };
    case "queues":
    case "queuesFailed": {
      const open = state.overlay;
      if (open?.kind !== "picker") return state;
      const names = event.kind === "queues" ? event.names : [];
      const queues = [...new Set([...names, ...(open.queue === null ? [] : [open.queue])])].sort();
      return {
        ...state,
        overlay: { ...open, queues, problem: event.kind === "queuesFailed" ? event.error : null },
      };
    }
  }
}

function applyRead(state: DashboardState, result: ReadResult): DashboardState {
  switch (result.view) {
    case "overview":
      return { ...state, overview: result.overview };
    case "jobs":
      return { ...state, jobs: result.jobs, total: result.total };
    case "detail":
      return state.detail?.id === result.id
        ? { ...state, detail: { ...state.detail, data: result.detail } }
        : state;
    case "schedules":
      return { ...state, schedules: result.schedules };
    case "dead":
      return { ...state, dead: result.groups };
    case "workflows":
      return { ...state, runs: result.page.runs, runCounts: result.page.counts };
    case "workflow":
      return state.run?.id === result.id
        ? { ...state, run: { ...state.run, data: result.run } }
        : state;
    case "pipelines":
      return { ...state, pipelines: result.pipelines };
    case "pipeline":
      return state.pipeline?.id === result.id
        ? { ...state, pipeline: { ...state.pipeline, data: result.pipeline } }
        : state;
    case "work":
      return { ...state, work: result.work };
  }
}

// ------------------------------------------------------------------- keys

function onKey(state: DashboardState, key: Key, ctx: Context): DashboardState {
  if (state.overlay) return dialogKey(state, state.overlay, key, ctx);
  if (state.busy) return state;
  if (key.input === "q") {
    ctx.effects.push({ kind: "quit" });
    return state;
  }
  if (key.input === "?") return { ...state, overlay: { kind: "help" } };
  const numbered = TABS.find((t) => t.key === key.input);
  if (numbered) return { ...state, tab: numbered.id };
  if (key.tab) {
    const i = TABS.findIndex((t) => t.id === state.tab);
    const step = key.shift ? TABS.length - 1 : 1;
    return { ...state, tab: TABS[(i + step) % TABS.length]!.id };
  }
  const down = key.input === "j" || key.downArrow === true;
  const up = key.input === "k" || key.upArrow === true;
  if (state.tab === "overview") return overviewKey(state, key, down, up);
  if (state.tab === "jobs" && state.detail !== null) return detailKey(state, key, down, up);
  if (state.tab === "jobs") return jobsKey(state, key, down, up, ctx);
  if (state.tab === "schedules") return schedulesKey(state, key, down, up);
  if (state.tab === "workflows" && state.run !== null) return runKey(state, key, down, up);
  if (state.tab === "workflows") return runsKey(state, key, down, up);
  if (state.tab === "pipelines" && state.pipeline !== null) {
    return pipelineKey(state, key, down, up);
  }
  if (state.tab === "pipelines") return pipelinesKey(state, key, down, up);
  if (state.tab === "work") return workKey(state, key, down, up);
  return deadLettersKey(state, key, down, up);
}

/** What an action changed, in a sentence: in the words of the tab it belongs to. */
function actedText(event: Acted): string {
  switch (event.request.kind) {
    case "jobs":
      return jobsActed(event.request, event.result as ActResults["jobs"]);
    case "replay":
      return replayActed(event.request, event.result as ActResults["replay"]);
    case "run":
      return runActed(event.request, event.result as ActResults["run"]);
    case "schedule":
      return scheduleActed(event.request, event.result as ActResults["schedule"]);
    case "queue":
      return queueActed(event.result as ActResults["queue"]);
    case "workflow":
      return workflowActed(event.request, event.result as ActResults["workflow"]);
  }
}
