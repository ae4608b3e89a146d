/**
 * The dashboard's state as one plain value, what can happen to it (events)
 * and what it asks the shell to do (effects): the vocabulary of
 * {@linkcode reduce} in `reduce.ts`. Dialogs are values too: a
 * confirmation carries the action it confirms, a prompt what its text is
 * for, so nothing here is a closure and a test can compare any of it.
 *
 * @module
 */

import type { JobAction } from "../admin/jobs.ts";
import type { PipelineView } from "../admin/pipelines.ts";
import type { JobDetail } from "../admin/jobs.ts";
import type { WorkflowRunSummary, WorkflowRunView } from "../admin/workflows.ts";
import { type Job, JOB_STATES, type JobState } from "../kernel/types.ts";
import type { RunState } from "../workflow/types.ts";
import type { Acted, ActRequest, RunAction, RunTarget } from "./actions.ts";
import type {
  DeadLetterGroup,
  JobsQuery,
  Overview,
  ReadRequest,
  ReadResult,
  RunsQuery,
  ScheduleInfo,
  WorkScreen,
} from "./data.ts";
import type { Key } from "./keys.ts";
import type { LineEdit } from "./line_edit.ts";
import type { JobsFilter, JobsTotal } from "./search.ts";
import type { Seg } from "./seg.ts";

/** The screens, in tab order. */
export const TABS = [
  { id: "overview", key: "1", label: "Overview", short: "Overview" },
  { id: "jobs", key: "2", label: "Jobs", short: "Jobs" },
  { id: "schedules", key: "3", label: "Schedules", short: "Sched" },
  { id: "dead", key: "4", label: "Dead letters", short: "Dead" },
  { id: "workflows", key: "5", label: "Workflows", short: "Flows" },
  { id: "pipelines", key: "6", label: "Pipelines", short: "Pipes" },
  { id: "work", key: "7", label: "Work", short: "Work" },
] as const;

/** One of the screens. */
export type Tab = (typeof TABS)[number]["id"];

/** How many jobs a bulk action looks at, the oldest matching first. */
export const BULK_LIMIT = 1000;
/** How many dead-letter groups the screen reads. */
export const DEAD_LETTER_GROUPS = 200;
/** Lines the dashboard keeps around a screen: tab bar, banner or rule, status line, footer. */
export const CHROME_LINES = 4;
/** Lines above the rows of the jobs list (the filter line and the column header). */
export const JOBS_HEADER_LINES = 2;
/** Lines above the rows of the workflow runs list (the counts line and the column header). */
export const RUNS_HEADER_LINES = 2;

/**
 * Lines above the items of the work screen: the queues, the queue's
 * definition, its stats and lead time, and the column header.
 */
export const WORK_HEADER_LINES = 4;

/** A line of the status bar. */
export interface Status {
  text: string;
  tone: "ok" | "info" | "error";
}

/** What a confirmation or a menu option does when chosen. */
export type Intent =
  | { kind: "act"; request: ActRequest }
  | { kind: "bulkPreview"; action: JobAction };

/** What a prompt's text is for, and what it needs to act on it. */
export type PromptPurpose =
  | { kind: "search" }
  | { kind: "replay"; job: Job }
  | { kind: "run"; id: string; manual: boolean; queue: string }
  | { kind: "toggle"; id: string; enable: boolean; disabledInFile: boolean }
  | { kind: "workflow"; action: RunAction; run: RunTarget };

/** A question with its preview; `then` runs on `y`. */
export interface ConfirmDialog {
  kind: "confirm";
  title: string;
  lines: Seg[][];
  /** The first preview line shown. */
  scroll: number;
  then: Intent;
}

/** A line of text to type; Enter hands it to `purpose`. */
export interface PromptDialog {
  kind: "prompt";
  label: string;
  line: LineEdit;
  purpose: PromptPurpose;
}

/** Single-key choices. */
export interface MenuDialog {
  kind: "menu";
  title: string;
  options: { key: string; label: string; then: Intent }[];
}

/**
 * The jobs filter's picker: every state (any number of them chosen) and
 * every known queue (one, or any), chosen with the cursor and space.
 */
export interface PickerDialog {
  kind: "picker";
  /** The row under the cursor: a state, then "any queue", then each queue. */
  cursor: number;
  states: JobState[];
  /** The queue chosen, or null for any. */
  queue: string | null;
  /** The known queues; null while they are read. */
  queues: string[] | null;
  /** Why the queues could not be read, or null. */
  problem: string | null;
}

/** One choice of the picker: a state, or a queue (null: any queue). */
export type PickerRow = { kind: "state"; state: JobState } | {
  kind: "queue";
  queue: string | null;
};

/** The rows of the picker: the states, "any queue", then each queue (null while unknown). */
export function pickerRows(picker: PickerDialog): PickerRow[] {
  return [
    ...JOB_STATES.map((state) => ({ kind: "state" as const, state })),
    { kind: "queue" as const, queue: null },
    ...(picker.queues ?? []).map((queue) => ({ kind: "queue" as const, queue })),
  ];
}

/** Any dialog, or the help. */
export type Overlay = ConfirmDialog | PromptDialog | MenuDialog | PickerDialog | { kind: "help" };

/** The open job's detail. */
export interface DetailState {
  id: number;
  /** As read; null until the read arrives (or when the job is gone). */
  data: JobDetail | null;
  /** The first line shown. */
  scroll: number;
}

/** The open workflow run's view. */
export interface RunDetailState {
  id: number;
  /** As read; null until the read arrives (or when the run is gone). */
  data: WorkflowRunView | null;
  /** The first line shown. */
  scroll: number;
}

/** The open pipeline's view. */
export interface PipelineDetailState {
  id: string;
  /** As read, with its newest runs; null until the read arrives (or when it is gone). */
  data: PipelineView | null;
  /** The first line shown. */
  scroll: number;
}

/** The reads of the active screen: which one was asked for last, and which is running. */
export interface ReadState {
  /** Numbers each read; only the answer to the latest counts. */
  seq: number;
  /** The key of the screen's read last considered (see {@linkcode readOf}). */
  key: string | null;
  /** The read on its way, if any: a refresh of the same read waits for it. */
  inFlight: { key: string; seq: number } | null;
}

/** Everything the dashboard shows and remembers. */
export interface DashboardState {
  /** The command a person types to reach this program (`jobsctl`), for hints to paste. */
  program: string;
  /** Where the data comes from (the database file), for hints to paste; "" when none. */
  location: string;
  readOnly: boolean;
  /** The terminal's size. */
  columns: number;
  rows: number;
  tab: Tab;
  overlay: Overlay | null;
  status: Status | null;
  /** An action or a bulk preview's read is running: keys outside dialogs wait. */
  busy: boolean;
  /** Why the last read failed, or null. */
  storeError: string | null;
  /** When the last read that worked was made. */
  lastRead: number | null;

  overview: Overview | null;
  queueCursor: number;

  jobs: Job[] | null;
  /** How many jobs match the filter (every page), or null until counted. */
  total: JobsTotal | null;
  jobCursor: number;
  filter: JobsFilter;
  /** Newest first. */
  desc: boolean;
  /** Keyset paging: the `after` of each page opened so far (null: the first); the last is the current page. */
  pages: (number | null)[];
  detail: DetailState | null;

  schedules: ScheduleInfo[] | null;
  scheduleCursor: number;
  dead: DeadLetterGroup[] | null;
  deadCursor: number;

  /** One page of workflow runs, newest first; null until read. */
  runs: WorkflowRunSummary[] | null;
  /** Every run counted by state, or null until read. */
  runCounts: Record<RunState, number> | null;
  runCursor: number;
  /** The runs listed: those in this state, or null for any. */
  runState: RunState | null;
  /** Keyset paging of the runs, as `pages` is of the jobs. */
  runPages: (number | null)[];
  /** The open run, or null for the list. */
  run: RunDetailState | null;

  /** Every pipeline with its last run, drops and freshness; null until read. */
  pipelines: PipelineView[] | null;
  pipelineCursor: number;
  /** The open pipeline, or null for the list. */
  pipeline: PipelineDetailState | null;

  /** The work queues and the one watched, as read; null until read. */
  work: WorkScreen | null;
  /** The work queue chosen (its tab), or null for the first. */
  workQueue: string | null;
  workCursor: number;

  read: ReadState;
}

/** Something that happened: a key, a timer tick, a resize, or the answer to an effect. */
export type DashboardEvent =
  | { kind: "key"; key: Key }
  | {
    kind: "tick";
    /**
     * Whether the store may have changed since the last tick; false only
     * where it can tell (a SQLite file). @default true
     */
    changed?: boolean;
    /** The tick's instant, to read again now and then while nothing changes. */
    at?: number;
  }
  | { kind: "resize"; columns: number; rows: number }
  | { kind: "read"; seq: number; at: number; result: ReadResult }
  | { kind: "readFailed"; seq: number; error: string }
  | Acted
  | { kind: "actFailed"; request: ActRequest; error: string }
  | { kind: "bulkRead"; action: JobAction; jobs: Job[] }
  | { kind: "bulkReadFailed"; action: JobAction; error: string }
  | { kind: "queues"; names: string[] }
  | { kind: "queuesFailed"; error: string };

/** Something for the shell to do; its answer comes back as an event. */
export type Effect =
  /** Read the active screen's data; answered by `read` or `readFailed` with this `seq`. */
  | { kind: "read"; seq: number; request: ReadRequest }
  /** Run an operator action; answered by `acted` or `actFailed`. */
  | { kind: "act"; request: ActRequest }
  /** Read the jobs a bulk action would look at; answered by `bulkRead` or `bulkReadFailed`. */
  | { kind: "bulkRead"; action: JobAction; query: JobsQuery }
  /** Read the known queues' names; answered by `queues` or `queuesFailed`. */
  | { kind: "queues" }
  /** Leave the dashboard. */
  | { kind: "quit" };

/** What one event's handling collects besides the state. */
export interface Context {
  effects: Effect[];
  /** Read the active screen again even if it is the same read (a tick, an action done). */
  refresh: boolean;
}

/** What {@linkcode initialState} needs. */
export interface InitialOptions {
  program: string;
  /** @default "" */
  location?: string;
  /** @default false */
  readOnly?: boolean;
  /** @default "overview" */
  tab?: Tab;
  /** @default 80 */
  columns?: number;
  /** @default 24 */
  rows?: number;
}

/** The dashboard before anything was read: the shell's first `resize` asks for the first read. */
export function initialState(options: InitialOptions): DashboardState {
  return {
    program: options.program,
    location: options.location ?? "",
    readOnly: options.readOnly ?? false,
    columns: options.columns ?? 80,
    rows: options.rows ?? 24,
    tab: options.tab ?? "overview",
    overlay: null,
    status: null,
    busy: false,
    storeError: null,
    lastRead: null,
    overview: null,
    queueCursor: 0,
    jobs: null,
    total: null,
    jobCursor: 0,
    filter: {},
    desc: true,
    pages: [null],
    detail: null,
    schedules: null,
    scheduleCursor: 0,
    dead: null,
    deadCursor: 0,
    runs: null,
    runCounts: null,
    runCursor: 0,
    runState: null,
    runPages: [null],
    run: null,
    pipelines: null,
    pipelineCursor: 0,
    pipeline: null,
    work: null,
    workQueue: null,
    workCursor: 0,
    read: { seq: 0, key: null, inFlight: null },
  };
}

// ------------------------------------------------------------ derived values

/** The width the dashboard draws: the terminal's, at least 20. */
export function widthOf(state: DashboardState): number {
  return Math.max(20, state.columns);
}

/** The lines between the chrome: what a screen may fill. */
export function contentHeight(state: DashboardState): number {
  return Math.max(3, state.rows - CHROME_LINES);
}

/** How many jobs a page of the list holds at this terminal's height. */
export function pageSize(state: DashboardState): number {
  return Math.max(1, contentHeight(state) - JOBS_HEADER_LINES);
}

/** How many runs a page of the workflow runs list holds at this terminal's height. */
export function runsPageSize(state: DashboardState): number {
  return Math.max(1, contentHeight(state) - RUNS_HEADER_LINES);
}

/** How many open items the work screen reads at this terminal's height. */
export function workPageSize(state: DashboardState): number {
  return Math.max(1, contentHeight(state) - WORK_HEADER_LINES);
}

/** `index` kept within `count` items (0 when there are none). */
export function clamp(index: number, count: number): number {
  return Math.max(0, Math.min(index, count - 1));
}

/** The selected job of the list, or null. */
export function selectedJob(state: DashboardState): Job | null {
  return state.jobs?.[clamp(state.jobCursor, state.jobs.length)] ?? null;
}

/** The job the detail shows (once read), else the selected one of the list. */
export function shownJob(state: DashboardState): Job | null {
  return state.detail !== null ? state.detail.data?.job ?? null : selectedJob(state);
}

/** The selected schedule, or null. */
export function selectedSchedule(state: DashboardState): ScheduleInfo | null {
  return state.schedules?.[clamp(state.scheduleCursor, state.schedules.length)] ?? null;
}

/** The selected run of the workflow runs list, or null. */
export function selectedRun(state: DashboardState): WorkflowRunSummary | null {
  return state.runs?.[clamp(state.runCursor, state.runs.length)] ?? null;
}

/** The selected pipeline of the pipelines list, or null. */
export function selectedPipeline(state: DashboardState): PipelineView | null {
  return state.pipelines?.[clamp(state.pipelineCursor, state.pipelines.length)] ?? null;
}

/** The run an action on the workflows screen targets: the open one once read, else the selected one. */
export function shownRun(state: DashboardState): RunTarget | null {
  if (state.run !== null) {
    const run = state.run.data?.run;
    return run && run.id === state.run.id
      ? { id: run.id, workflow: run.workflow, state: run.state }
      : null;
  }
  const run = selectedRun(state);
  return run ? { id: run.id, workflow: run.workflow, state: run.state } : null;
}

/** The active screen's read: a key naming it (same key, same read) and what to ask for. */
export function readOf(state: DashboardState): { key: string; request: ReadRequest } {
  if (state.tab === "overview") return { key: "overview", request: { view: "overview" } };
  if (state.tab === "jobs" && state.detail !== null) {
    return { key: `detail:${state.detail.id}`, request: { view: "detail", id: state.detail.id } };
  }
  if (state.tab === "jobs") {
    const after = state.pages.at(-1) ?? null;
    const limit = pageSize(state);
    const query: JobsQuery = {
      filter: state.filter,
      desc: state.desc,
      limit,
      ...(after === null ? {} : { after }),
    };
    return {
      key: `jobs:${JSON.stringify([state.filter, state.desc, after, limit])}`,
      request: { view: "jobs", query },
    };
  }
  if (state.tab === "schedules") return { key: "schedules", request: { view: "schedules" } };
  if (state.tab === "workflows" && state.run !== null) {
    return { key: `run:${state.run.id}`, request: { view: "workflow", id: state.run.id } };
  }
  if (state.tab === "workflows") {
    const after = state.runPages.at(-1) ?? null;
    const limit = runsPageSize(state);
    const query: RunsQuery = {
      state: state.runState,
      limit,
      ...(after === null ? {} : { after }),
    };
    return {
      key: `workflows:${JSON.stringify([state.runState, after, limit])}`,
      request: { view: "workflows", query },
    };
  }
  if (state.tab === "pipelines" && state.pipeline !== null) {
    const id = state.pipeline.id;
    return { key: `pipeline:${id}`, request: { view: "pipeline", id } };
  }
  if (state.tab === "pipelines") return { key: "pipelines", request: { view: "pipelines" } };
  if (state.tab === "work") {
    const limit = workPageSize(state);
    return {
      key: `work:${JSON.stringify([state.workQueue, limit])}`,
      request: { view: "work", queue: state.workQueue, limit },
    };
  }
  return { key: "dead", request: { view: "dead", limit: DEAD_LETTER_GROUPS } };
}

/**
 * Which view is showing: a tab, or a job's, a run's or a pipeline's
 * detail. Status messages belong to one.
 */
export function viewOf(state: DashboardState): string {
  if (state.tab === "jobs" && state.detail !== null) return `detail:${state.detail.id}`;
  if (state.tab === "workflows" && state.run !== null) return `run:${state.run.id}`;
  if (state.tab === "pipelines" && state.pipeline !== null) {
    return `pipeline:${state.pipeline.id}`;
  }
  return state.tab;
}
