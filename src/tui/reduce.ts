/**
 * The dashboard's behaviour as one pure function: `reduce(state, event)`
 * returns the next state and the effects for the shell to run (read a
 * screen, run an action, read a bulk preview, read the queues, quit). Keys,
 * timer ticks, resizes and the answers to effects are all events, so a test
 * drives every behaviour here without rendering or waiting.
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

import { type JobAction, planJobAction } from "../admin/jobs.ts";
import { definitionText } from "../admin/definitions.ts";
import { placeholderMessage, placeholderReason, reasonPlaceholder } from "../admin/audit.ts";
import { type Job, JOB_STATES } from "../kernel/types.ts";
import { commandLine, shellQuote } from "../text/shell.ts";
import { FINAL_RUN_STATES, RUN_STATES, type RunState } from "../workflow/types.ts";
import type { Acted, ActRequest, ActResults, RunAction, RunTarget } from "./actions.ts";
import type { ReadResult } from "./data.ts";
import type { Key } from "./keys.ts";
import { editLine, lineOf } from "./line_edit.ts";
import {
  exactTotal,
  type JobsFilter,
  parseSearch,
  searchText,
  statesOf,
  unfiltered,
} from "./search.ts";
import { type Seg, seg } from "./seg.ts";
import {
  BULK_LIMIT,
  clamp,
  type ConfirmDialog,
  contentHeight,
  type DashboardEvent,
  type DashboardState,
  type Effect,
  type Intent,
  type Overlay,
  pageSize,
  type PickerDialog,
  pickerRows,
  type PromptDialog,
  type PromptPurpose,
  readOf,
  runsPageSize,
  selectedJob,
  selectedPipeline,
  selectedRun,
  selectedSchedule,
  shownJob,
  shownRun,
  TABS,
  viewOf,
} from "./state.ts";
import { clean, fit, plural, RUN_STATE_COLOR, STATE_COLOR } from "./text.ts";

/** The next state and what the shell should do. */
export interface Step {
  state: DashboardState;
  effects: Effect[];
}

/** What one event's handling collects besides the state. */
interface Context {
  effects: Effect[];
  /** Read the active screen again even if it is the same read (a tick, an action done). */
  refresh: boolean;
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
  if (state.tab === "overview") {
    const count = state.overview?.queues.length ?? 0;
    if (down) return { ...state, queueCursor: clamp(state.queueCursor + 1, count) };
    if (up) return { ...state, queueCursor: clamp(state.queueCursor - 1, count) };
    if (key.input === "P") return pauseQueue(state);
    const queue = state.overview?.queues[clamp(state.queueCursor, count)];
    if (key.return && queue) return showJobs(state, { queue: queue.name });
    return state;
  }
  if (state.tab === "jobs" && state.detail !== null) return detailKey(state, key, down, up);
  if (state.tab === "jobs") return jobsKey(state, key, down, up, ctx);
  if (state.tab === "schedules") {
    const count = state.schedules?.length ?? 0;
    if (down) return { ...state, scheduleCursor: clamp(state.scheduleCursor + 1, count) };
    if (up) return { ...state, scheduleCursor: clamp(state.scheduleCursor - 1, count) };
    if (key.input === "R") return runSchedule(state);
    if (key.input === "x") return toggleSchedule(state);
    const info = selectedSchedule(state);
    if (key.return && info) return showJobs(state, { scheduleId: info.status.id });
    return state;
  }
  if (state.tab === "workflows" && state.run !== null) return runKey(state, key, down, up);
  if (state.tab === "workflows") return runsKey(state, key, down, up);
  if (state.tab === "pipelines" && state.pipeline !== null) {
    return pipelineKey(state, key, down, up);
  }
  if (state.tab === "pipelines") return pipelinesKey(state, key, down, up);
  const count = state.dead?.length ?? 0;
  if (down) return { ...state, deadCursor: clamp(state.deadCursor + 1, count) };
  if (up) return { ...state, deadCursor: clamp(state.deadCursor - 1, count) };
  const group = state.dead?.[clamp(state.deadCursor, count)];
  if (key.return && group) {
    const error = group.error.split("\n", 1)[0]!.slice(0, 200);
    return showJobs(state, {
      states: ["discarded"],
      worker: group.worker,
      ...(group.scheduleId === null ? {} : { scheduleId: group.scheduleId }),
      ...(error === "" ? {} : { search: error }),
    });
  }
  return state;
}

function detailKey(state: DashboardState, key: Key, down: boolean, up: boolean): DashboardState {
  const detail = state.detail!;
  const page = contentHeight(state) - 1;
  const scroll = (to: number) => ({ ...state, detail: { ...detail, scroll: Math.max(0, to) } });
  if (down) return scroll(detail.scroll + 1);
  if (up) return scroll(detail.scroll - 1);
  if (key.pageDown || key.input === " ") return scroll(detail.scroll + page);
  if (key.pageUp) return scroll(detail.scroll - page);
  if (key.escape || key.backspace || key.leftArrow) return { ...state, detail: null };
  if (key.input === "r") return jobAction(state, "retry", shownJob(state));
  if (key.input === "c") return jobAction(state, "cancel", shownJob(state));
  if (key.input === "d") return jobAction(state, "discard", shownJob(state));
  if (key.input === "p") return replay(state, shownJob(state));
  return state;
}

function jobsKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
  ctx: Context,
): DashboardState {
  const count = state.jobs?.length ?? 0;
  const job = selectedJob(state);
  if (down) {
    return state.jobCursor >= count - 1
      ? nextPage(state) ?? state
      : { ...state, jobCursor: clamp(state.jobCursor + 1, count) };
  }
  if (up) {
    if (state.jobCursor > 0) return { ...state, jobCursor: clamp(state.jobCursor - 1, count) };
    const previous = previousPage(state);
    return previous ? { ...previous, jobCursor: pageSize(state) - 1 } : state;
  }
  if (key.input === "n" || key.pageDown) return nextPage(state) ?? state;
  if (key.input === "b" || key.pageUp) return previousPage(state) ?? state;
  if (key.input === "g" || key.home) {
    return {
      ...state,
      pages: [null],
      jobCursor: 0,
      jobs: state.pages.length > 1 ? null : state.jobs,
    };
  }
  if (key.return && job) return { ...state, detail: { id: job.id, data: null, scroll: 0 } };
  if (key.input === "/") {
    return prompt(
      state,
      "Search jobs: text, and/or state:<s>[,<s>] queue:<q> schedule:<id> worker:<w> tag:<t>",
      { kind: "search" },
      searchText(state.filter),
    );
  }
  if (key.input === "f") return openPicker(state, ctx);
  if (key.input === "o") {
    return { ...state, desc: !state.desc, pages: [null], jobCursor: 0, jobs: null };
  }
  if (key.escape) {
    if (unfiltered(state.filter)) return state;
    return { ...showJobs(state, {}), status: { text: "filters cleared", tone: "info" } };
  }
  if (key.input === "r") return jobAction(state, "retry", job);
  if (key.input === "c") return jobAction(state, "cancel", job);
  if (key.input === "d") return jobAction(state, "discard", job);
  if (key.input === "p") return replay(state, job);
  if (key.input === "B") return bulk(state);
  return state;
}

// -------------------------------------------------------------- workflows

/** Keys of the workflow runs list. */
function runsKey(state: DashboardState, key: Key, down: boolean, up: boolean): DashboardState {
  const count = state.runs?.length ?? 0;
  if (down) return { ...state, runCursor: clamp(state.runCursor + 1, count) };
  if (up) return { ...state, runCursor: clamp(state.runCursor - 1, count) };
  if (key.input === "n" || key.pageDown) return nextRunsPage(state) ?? state;
  if (key.input === "b" || key.pageUp) {
    if (state.runPages.length <= 1) return state;
    return { ...state, runPages: state.runPages.slice(0, -1), runCursor: 0, runs: null };
  }
  if (key.input === "g" || key.home) {
    return {
      ...state,
      runPages: [null],
      runCursor: 0,
      runs: state.runPages.length > 1 ? null : state.runs,
    };
  }
  const run = selectedRun(state);
  if (key.return && run) return { ...state, run: { id: run.id, data: null, scroll: 0 } };
  if (key.input === "f") return showRuns(state, nextRunState(state.runState));
  if (key.escape && state.runState !== null) {
    return { ...showRuns(state, null), status: { text: "state filter cleared", tone: "info" } };
  }
  if (key.input === "r") return runAction(state, "retry", shownRun(state));
  if (key.input === "c") return runAction(state, "cancel", shownRun(state));
  return state;
}

/** Keys of an open run: scroll, back, retry, cancel. */
function runKey(state: DashboardState, key: Key, down: boolean, up: boolean): DashboardState {
  const run = state.run!;
  const page = contentHeight(state) - 1;
  const scroll = (to: number) => ({ ...state, run: { ...run, scroll: Math.max(0, to) } });
  if (down) return scroll(run.scroll + 1);
  if (up) return scroll(run.scroll - 1);
  if (key.pageDown || key.input === " ") return scroll(run.scroll + page);
  if (key.pageUp) return scroll(run.scroll - page);
  if (key.home || key.input === "g") return scroll(0);
  if (key.escape || key.backspace || key.leftArrow) return { ...state, run: null };
  if (key.input === "r") return runAction(state, "retry", shownRun(state));
  if (key.input === "c") return runAction(state, "cancel", shownRun(state));
  return state;
}

/** The run state `f` moves to after `current`: any, then each state in turn, then any again. */
export function nextRunState(current: RunState | null): RunState | null {
  if (current === null) return RUN_STATES[0]!;
  return RUN_STATES[RUN_STATES.indexOf(current) + 1] ?? null;
}

/** The runs list of `runState`, from the first page. */
function showRuns(state: DashboardState, runState: RunState | null): DashboardState {
  return { ...state, runState, runPages: [null], runCursor: 0, runs: null, run: null };
}

function nextRunsPage(state: DashboardState): DashboardState | null {
  const last = state.runs?.at(-1);
  const full = (state.runs?.length ?? 0) >= runsPageSize(state);
  if (!full || !last || state.runPages.at(-1) === last.id) return null;
  return { ...state, runPages: [...state.runPages, last.id], runCursor: 0, runs: null };
}

const RUN_EXPLAIN: Record<RunAction, string[]> = {
  retry: [
    "Its discarded or cancelled steps (or the compensation that failed) run again,",
    "and the run resumes where it stopped.",
  ],
  cancel: [
    "Its waiting steps are cancelled and running ones let finish; a plain run then ends",
    "cancelled, a saga first runs the compensations of its completed steps.",
  ],
};

const RUN_PAST: Record<RunAction, string> = { retry: "retried", cancel: "cancelled" };

/** Asks the reason for retrying or cancelling `target`, or says why there is nothing to do. */
function runAction(state: DashboardState, action: RunAction, target: RunTarget | null) {
  if (!target) return state;
  const no = refused(state, `${action} of a workflow run`);
  if (no) return no;
  const name = `workflow run ${target.id} (${clean(target.workflow)})`;
  if (action === "retry" && target.state !== "failed") {
    return info(state, `${name} is ${target.state}, not failed: nothing to retry`);
  }
  if (action === "cancel" && FINAL_RUN_STATES.includes(target.state)) {
    return info(state, `${name} is already ${target.state}: nothing to cancel`);
  }
  return prompt(state, `Reason to ${action} ${name} (required):`, {
    kind: "workflow",
    action,
    run: target,
  });
}

/** The next page (keyset: after the last row shown), or null when this one is not full. */
function nextPage(state: DashboardState): DashboardState | null {
  const last = state.jobs?.at(-1);
  const full = (state.jobs?.length ?? 0) >= pageSize(state);
  // A page already asked for and not yet shown is not asked for twice.
  if (!full || !last || state.pages.at(-1) === last.id) return null;
  return { ...state, pages: [...state.pages, last.id], jobCursor: 0, jobs: null };
}

/** The previous page, or null on the first. */
function previousPage(state: DashboardState): DashboardState | null {
  if (state.pages.length <= 1) return null;
  return { ...state, pages: state.pages.slice(0, -1), jobCursor: 0, jobs: null };
}

/** The jobs screen with `filter`, from the first page; its total is counted again. */
function showJobs(state: DashboardState, filter: JobsFilter): DashboardState {
  const defined = Object.fromEntries(
    Object.entries(filter).filter(([, v]) => v !== undefined && !(Array.isArray(v) && !v.length)),
  ) as JobsFilter;
  return {
    ...state,
    filter: defined,
    pages: [null],
    jobCursor: 0,
    jobs: null,
    total: null,
    detail: null,
    tab: "jobs",
  };
}

// -------------------------------------------------------------- pipelines

/** Keys of the pipelines list: move, open. */
function pipelinesKey(state: DashboardState, key: Key, down: boolean, up: boolean): DashboardState {
  const count = state.pipelines?.length ?? 0;
  if (down) return { ...state, pipelineCursor: clamp(state.pipelineCursor + 1, count) };
  if (up) return { ...state, pipelineCursor: clamp(state.pipelineCursor - 1, count) };
  const pipeline = selectedPipeline(state);
  if (key.return && pipeline) {
    return { ...state, pipeline: { id: pipeline.id, data: null, scroll: 0 } };
  }
  return state;
}

/** Keys of an open pipeline: scroll, back. */
function pipelineKey(state: DashboardState, key: Key, down: boolean, up: boolean): DashboardState {
  const pipeline = state.pipeline!;
  const page = contentHeight(state) - 1;
  const scroll = (to: number) => ({ ...state, pipeline: { ...pipeline, scroll: Math.max(0, to) } });
  if (down) return scroll(pipeline.scroll + 1);
  if (up) return scroll(pipeline.scroll - 1);
  if (key.pageDown || key.input === " ") return scroll(pipeline.scroll + page);
  if (key.pageUp) return scroll(pipeline.scroll - page);
  if (key.home || key.input === "g") return scroll(0);
  if (key.escape || key.backspace || key.leftArrow) return { ...state, pipeline: null };
  return state;
}

// ---------------------------------------------------------------- dialogs

function dialogKey(state: DashboardState, open: Overlay, key: Key, ctx: Context): DashboardState {
  const cancelled = (text: string): DashboardState => ({
    ...state,
    overlay: null,
    status: { text, tone: "info" },
  });
  switch (open.kind) {
    case "help":
      return { ...state, overlay: null };
    case "menu": {
      if (key.escape || key.input === "q") return cancelled("cancelled; nothing changed");
      const option = open.options.find((o) => o.key === key.input);
      return option ? choose({ ...state, overlay: null }, option.then, ctx) : state;
    }
    case "prompt": {
      if (key.escape) return cancelled("cancelled; nothing changed");
      if (key.return) return submit({ ...state, overlay: null }, open.purpose, open.line.text);
      const line = editLine(open.line, key);
      return line ? { ...state, overlay: { ...open, line } } : state;
    }
    case "picker":
      return pickerKey(state, open, key, cancelled);
    case "confirm": {
      if (key.input === "y" || key.input === "Y") {
        return choose({ ...state, overlay: null }, open.then, ctx);
      }
      if (key.input === "n" || key.input === "N" || key.escape || key.input === "q") {
        return cancelled("not confirmed; nothing changed");
      }
      const room = Math.max(1, contentHeight(state) - 4);
      const step = key.input === "j" || key.downArrow
        ? 1
        : key.input === "k" || key.upArrow
        ? -1
        : key.pageDown || key.input === " "
        ? room
        : key.pageUp
        ? -room
        : 0;
      if (step === 0) return state;
      const max = Math.max(0, open.lines.length - room);
      const scroll = Math.max(0, Math.min(max, open.scroll + step));
      return { ...state, overlay: { ...open, scroll } };
    }
  }
}

/** Does what a confirmation or menu option chose. */
function choose(state: DashboardState, intent: Intent, ctx: Context): DashboardState {
  if (intent.kind === "act") {
    ctx.effects.push({ kind: "act", request: intent.request });
    return { ...state, busy: true, status: { text: `${labelOf(intent.request)}…`, tone: "info" } };
  }
  const action = intent.action;
  ctx.effects.push({
    kind: "bulkRead",
    action,
    query: { filter: state.filter, desc: false, limit: BULK_LIMIT },
  });
  return { ...state, busy: true, status: { text: `reading the jobs to ${action}…`, tone: "info" } };
}

function confirm(
  state: DashboardState,
  title: string,
  lines: Seg[][],
  then: Intent,
): DashboardState {
  const dialog: ConfirmDialog = { kind: "confirm", title, lines, scroll: 0, then };
  return { ...state, overlay: dialog };
}

/** Opens a prompt; `text` starts selected, so typing replaces it and a cursor key keeps it. */
function prompt(
  state: DashboardState,
  label: string,
  purpose: PromptPurpose,
  text = "",
): DashboardState {
  const dialog: PromptDialog = { kind: "prompt", label, line: lineOf(text, true), purpose };
  return { ...state, overlay: dialog };
}

/** What Enter in a prompt does with the text typed. */
function submit(state: DashboardState, purpose: PromptPurpose, text: string): DashboardState {
  const error = (message: string): DashboardState => ({
    ...state,
    status: { text: message, tone: "error" },
  });
  const reason = text.trim();
  // An empty reason is each case's own refusal (a manual run's only); any
  // other placeholder (`...`, `TODO`) is refused as on the command line.
  const placeholder = purpose.kind === "search" || reason === "" ? null : placeholderReason(reason);
  if (placeholder !== null) {
    return error(`${placeholderMessage(reason, placeholder)}; nothing changed`);
  }
  switch (purpose.kind) {
    case "search": {
      const parsed = parseSearch(text);
      return "error" in parsed ? error(parsed.error) : showJobs(state, parsed.filter);
    }
    case "replay": {
      const job = purpose.job;
      if (reason === "") return error("a replay needs a reason; nothing changed");
      return confirm(state, `Replay job ${job.id}?`, [
        jobLine(job),
        [],
        [seg(EXPLAIN.replay)],
        [seg(`reason: ${reason}`)],
      ], { kind: "act", request: { kind: "replay", job, reason } });
    }
    case "run": {
      const { id, manual, queue } = purpose;
      if (manual && reason === "") {
        return error(`${id} is manual: a reason is required; nothing changed`);
      }
      return confirm(state, `Run schedule ${id} now?`, [
        [seg(`One occurrence ${id}@<now> on queue ${queue}, as the planner builds it.`)],
        [seg("The planned occurrences are unchanged.")],
        ...(reason ? [[seg(`reason: ${reason}`)]] : []),
      ], { kind: "act", request: { kind: "run", id, reason: reason || null } });
    }
    case "toggle": {
      const { id, enable } = purpose;
      const verb = enable ? "enable" : "disable";
      if (reason === "") return error(`${verb} needs a reason; nothing changed`);
      return confirm(state, `${capital(verb)} schedule ${id}?`, [
        [seg(
          enable
            ? "The planner resumes it, applying its misfire policy to the gap."
            : "Nothing new is planned; an occurrence already claimed finishes. Stored: survives restarts.",
        )],
        ...(enable && purpose.disabledInFile
          ? [[seg(
            "It is disabled in the schedules file: enabling in the store does not override that.",
            { color: "yellow" },
          )]]
          : []),
        [seg(`reason: ${reason}`)],
      ], { kind: "act", request: { kind: "schedule", id, enabled: enable, reason } });
    }
    case "workflow": {
      const { action, run } = purpose;
      if (reason === "") return error(`${action} needs a reason; nothing changed`);
      return confirm(state, `${capital(action)} workflow run ${run.id}?`, [
        [
          seg(`  run ${fit(String(run.id), 7)}`),
          seg(fit(clean(run.workflow), 24)),
          seg(" "),
          seg(run.state, { color: RUN_STATE_COLOR[run.state] }),
        ],
        [],
        ...RUN_EXPLAIN[action].map((line) => [seg(line)]),
        [seg(`reason: ${reason}`)],
      ], { kind: "act", request: { kind: "workflow", action, run, reason } });
    }
  }
}

// ----------------------------------------------------------------- picker

function openPicker(state: DashboardState, ctx: Context): DashboardState {
  const queue = state.filter.queue ?? null;
  const known = state.overview?.queues.map((q) => q.name) ?? null;
  ctx.effects.push({ kind: "queues" });
  const picker: PickerDialog = {
    kind: "picker",
    cursor: 0,
    states: statesOf(state.filter),
    queue,
    queues: known === null
      ? null
      : [...new Set([...known, ...(queue === null ? [] : [queue])])].sort(),
    problem: null,
  };
  return { ...state, overlay: picker };
}

function pickerKey(
  state: DashboardState,
  open: PickerDialog,
  key: Key,
  cancelled: (text: string) => DashboardState,
): DashboardState {
  const rows = pickerRows(open);
  const move = (cursor: number) => ({
    ...state,
    overlay: { ...open, cursor: clamp(cursor, rows.length) },
  });
  if (key.escape || key.input === "q") return cancelled("cancelled; nothing changed");
  if (key.input === "j" || key.downArrow) return move(open.cursor + 1);
  if (key.input === "k" || key.upArrow) return move(open.cursor - 1);
  if (key.home || key.input === "g") return move(0);
  if (key.end || key.input === "G") return move(rows.length - 1);
  if (key.input === " " || key.input === "x") {
    const row = rows[clamp(open.cursor, rows.length)]!;
    if (row.kind === "queue") return { ...state, overlay: { ...open, queue: row.queue } };
    const states = open.states.includes(row.state)
      ? open.states.filter((s) => s !== row.state)
      : JOB_STATES.filter((s) => s === row.state || open.states.includes(s));
    return { ...state, overlay: { ...open, states } };
  }
  if (key.return) {
    const { queue: _queue, states: _states, ...rest } = state.filter;
    return showJobs({ ...state, overlay: null }, {
      ...rest,
      ...(open.states.length > 0 ? { states: open.states } : {}),
      ...(open.queue === null ? {} : { queue: open.queue }),
    });
  }
  return state;
}

// ---------------------------------------------------------------- actions

const PAST: Record<JobAction, string> = {
  retry: "retried",
  cancel: "cancelled",
  discard: "discarded",
};

const EXPLAIN: Record<JobAction | "replay", string> = {
  retry: "It becomes available now; if its attempts are used up it gets one more.",
  cancel: "It becomes cancelled; if it is executing, its node loses the lease and aborts it.",
  discard: "It becomes discarded (a dead letter); if executing, its node loses the lease.",
  replay: "A new attempt of the same job and occurrence, recorded as a replay with the reason.",
};

/** True (and says so) in read-only mode. */
function refused(state: DashboardState, what: string): DashboardState | null {
  if (!state.readOnly) return null;
  return {
    ...state,
    status: { text: `read-only mode: ${what} refused; nothing changed`, tone: "error" },
  };
}

function info(state: DashboardState, text: string): DashboardState {
  return { ...state, status: { text, tone: "info" } };
}

function jobAction(state: DashboardState, action: JobAction, target: Job | null): DashboardState {
  if (!target) return state;
  const no = refused(state, action);
  if (no) return no;
  const { act, skip } = planJobAction(action, [target]);
  if (act.length === 0) {
    return info(
      state,
      `job ${target.id} ${skip[0]?.why ?? "does not qualify"}: nothing to ${action}`,
    );
  }
  return confirm(state, `${capital(action)} job ${target.id}?`, [
    jobLine(target),
    [],
    [seg(EXPLAIN[action])],
  ], { kind: "act", request: { kind: "jobs", action, jobs: [target], bulk: false } });
}

function replay(state: DashboardState, target: Job | null): DashboardState {
  if (!target) return state;
  const no = refused(state, "replay");
  if (no) return no;
  if (target.state === "executing") {
    const command = `${commandLine(state.program, ["replay", String(target.id), "--force"])} ` +
      `--reason ${shellQuote(reasonPlaceholder("breaking its lease to replay it"))}${
        state.location === "" ? "" : ` --db ${shellQuote(state.location)}`
      }`;
    return info(
      state,
      `job ${target.id} is executing: a replay would break its lease; ` +
        `use "${command}" for that; nothing changed`,
    );
  }
  return prompt(state, `Reason for replaying job ${target.id} (required):`, {
    kind: "replay",
    job: target,
  });
}

function bulk(state: DashboardState): DashboardState {
  const no = refused(state, "bulk");
  if (no) return no;
  if (unfiltered(state.filter)) {
    return {
      ...state,
      status: {
        text:
          "bulk acts on a filtered set: filter first (f state and queue, / search, ⏎ from a queue)",
        tone: "error",
      },
    };
  }
  return {
    ...state,
    overlay: {
      kind: "menu",
      title: `Bulk action on the filtered jobs (${clean(searchText(state.filter))}):`,
      options: (["retry", "discard"] as const).map((action) => ({
        key: action[0]!,
        label: `${action} them (a preview of every affected job comes first)`,
        then: { kind: "bulkPreview", action },
      })),
    },
  };
}

function bulkPreviewed(state: DashboardState, action: JobAction, matched: Job[]): DashboardState {
  const { act, skip } = planJobAction(action, matched);
  const capped = matched.length < BULK_LIMIT
    ? ""
    // The list's total, when it counted every job (a search's is bounded).
    : state.total !== null && exactTotal(state.total) && state.total.count > BULK_LIMIT
    ? ` (the oldest ${BULK_LIMIT} of ${state.total.count} matching)`
    : ` (the oldest ${BULK_LIMIT} matching)`;
  if (act.length === 0) {
    return info(state, `nothing to ${action}: ${plural(matched.length, "job")} matched${capped}`);
  }
  return confirm(
    { ...state, status: null },
    `${capital(action)} ${plural(act.length, "job")}${capped}? Every affected job:`,
    [
      ...act.map(jobLine),
      ...(skip.length > 0 ? [[], [seg(`skipped (${skip.length}):`, { bold: true })]] : []),
      ...skip.map((s) => [...jobLine(s.job), seg(`  ${s.why}`, { dim: true })]),
    ],
    { kind: "act", request: { kind: "jobs", action, jobs: matched, bulk: true } },
  );
}

function pauseQueue(state: DashboardState): DashboardState {
  const queues = state.overview?.queues ?? [];
  const queue = queues[clamp(state.queueCursor, queues.length)];
  if (!queue) return state;
  const paused = !queue.paused;
  const verb = paused ? "pause" : "resume";
  const no = refused(state, verb);
  if (no) return no;
  return confirm(
    state,
    `${capital(verb)} queue ${clean(queue.name)} for every process on the store?`,
    [[
      seg(
        paused
          ? "Nothing new is claimed from it; running jobs finish."
          : "Processes claim from it again.",
      ),
    ]],
    { kind: "act", request: { kind: "queue", queue: queue.name, paused } },
  );
}

function runSchedule(state: DashboardState): DashboardState {
  const info = selectedSchedule(state);
  if (!info) return state;
  const no = refused(state, "run now");
  if (no) return no;
  const id = info.status.id;
  if (!info.schedule) {
    return {
      ...state,
      status: { text: `${id} is not in the schedules file: it cannot run`, tone: "error" },
    };
  }
  const manual = info.status.manual;
  return prompt(
    state,
    `Reason for running ${id} now${manual ? " (required: it is manual)" : ""}:`,
    {
      kind: "run",
      id,
      manual,
      queue: info.schedule.queue,
    },
  );
}

function toggleSchedule(state: DashboardState): DashboardState {
  const info = selectedSchedule(state);
  if (!info) return state;
  const enable = !info.status.enabled;
  const verb = enable ? "enable" : "disable";
  const no = refused(state, verb);
  if (no) return no;
  return prompt(state, `Reason to ${verb} ${info.status.id} (required):`, {
    kind: "toggle",
    id: info.status.id,
    enable,
    disabledInFile: info.status.disabledIn === "file",
  });
}

/** How an action is named in its status line: `retry…`, `bulk discard failed: …`. */
export function labelOf(request: ActRequest): string {
  switch (request.kind) {
    case "jobs":
      return request.bulk ? `bulk ${request.action}` : request.action;
    case "replay":
      return "replay";
    case "run":
      return "run now";
    case "schedule":
      return request.enabled ? "enable" : "disable";
    case "queue":
      return request.paused ? "pause" : "resume";
    case "workflow":
      return `${request.action} run`;
  }
}

/** What an action changed, in a sentence. */
function actedText(event: Acted): string {
  switch (event.request.kind) {
    case "jobs": {
      const { action, jobs, bulk } = event.request;
      const { changed, skipped, definitions } = event.result as ActResults["jobs"];
      if (bulk) {
        const live = [...(definitions?.values() ?? [])].filter((d) => d.runs === "live").length;
        return `${PAST[action]} ${plural(changed.length, "job")}` +
          (skipped.length > 0 ? `, skipped ${skipped.length}` : "") +
          (live > 0 ? `; ${live} run their schedule's live definition` : "");
      }
      const target = jobs[0]!;
      const choice = definitions?.get(target.id);
      return changed.length > 0
        ? `${PAST[action]} job ${target.id} (was ${target.state})` +
          (choice ? `; ${definitionText(choice)}` : "")
        : `job ${target.id} not ${PAST[action]}: ${skipped[0]?.why ?? "unchanged"}`;
    }
    case "replay": {
      const { job } = event.request;
      const result = event.result as ActResults["replay"];
      return result.replayed
        ? `replayed job ${job.id}: it was ${result.was}; now available, recorded as a replay` +
          (job.scheduleId !== null ? `; ${definitionText(result.definition)}` : "")
        : `job ${job.id} is ${result.was}: not replayed; nothing changed`;
    }
    case "run": {
      const { id } = event.request;
      const result = event.result as ActResults["run"];
      return `ran ${id} now: job ${result.id}, occurrence ${result.occurrence}, ` +
        `${result.state} on queue ${result.queue}`;
    }
    case "schedule": {
      const { id } = event.request;
      const result = event.result as ActResults["schedule"];
      return result.was === result.enabled
        ? `schedule ${id} was already ${result.enabled ? "enabled" : "disabled"}; recorded`
        : `schedule ${id} ${result.enabled ? "enabled" : "disabled"}`;
    }
    case "queue": {
      const r = event.result as ActResults["queue"];
      return r.was === r.paused
        ? `queue ${r.queue} was already ${r.paused ? "paused" : "running"}; recorded`
        : `queue ${r.queue} ${r.paused ? "paused" : "resumed"} for every process on the store`;
    }
    case "workflow": {
      const { action, run } = event.request;
      const r = event.result as ActResults["workflow"];
      const jobs = action === "retry"
        ? `${plural(r.jobs.length, "job")} to run again`
        : `${plural(r.jobs.length, "waiting job")} cancelled`;
      return `${RUN_PAST[action]} workflow run ${run.id} (${clean(run.workflow)}): ` +
        `${r.was} -> ${r.state}; ${jobs}`;
    }
  }
}

/** A job on one line, for previews. */
function jobLine(job: Job): Seg[] {
  return [
    seg(`  #${fit(String(job.id), 7)}`),
    seg(fit(job.state, 10), { color: STATE_COLOR[job.state] }),
    seg(`${fit(clean(job.queue), 12)} ${fit(clean(job.worker), 16)} `),
    seg(clean(job.occurrence ?? "")),
  ];
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
