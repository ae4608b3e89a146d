/**
 * The workflows tab's keys: the runs list (move, page, open, the state
 * filter, retry, cancel) and an open run (scroll, back, retry, cancel);
 * what Enter in their reason prompt does, and what they changed, in a
 * sentence.
 *
 * @module
 */

import { FINAL_RUN_STATES, RUN_STATES, type RunState } from "../../workflow/types.ts";
import type { ActRequest, ActResults, RunAction, RunTarget } from "../actions.ts";
import { capital, confirm, failed, info, prompt, refused } from "../ask.ts";
import type { Key } from "../keys.ts";
import { seg } from "../seg.ts";
import {
  clamp,
  contentHeight,
  type DashboardState,
  type PromptPurpose,
  runsPageSize,
  selectedRun,
  shownRun,
} from "../state.ts";
import { clean, fit, plural, RUN_STATE_COLOR } from "../text.ts";

/** Keys of the workflow runs list. */
export function runsKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
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
export function runKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
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

/** Enter in a workflow run's reason prompt: the confirmation, or why not. */
export function submitWorkflow(
  state: DashboardState,
  purpose: Extract<PromptPurpose, { kind: "workflow" }>,
  reason: string,
): DashboardState {
  const { action, run } = purpose;
  if (reason === "") return failed(state, `${action} needs a reason; nothing changed`);
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

/** What a retry or cancel of a workflow run changed, in a sentence. */
export function workflowActed(
  request: Extract<ActRequest, { kind: "workflow" }>,
  r: ActResults["workflow"],
): string {
  const { action, run } = request;
  const jobs = action === "retry"
    ? `${plural(r.jobs.length, "job")} to run again`
    : `${plural(r.jobs.length, "waiting job")} cancelled`;
  return `${RUN_PAST[action]} workflow run ${run.id} (${clean(run.workflow)}): ` +
    `${r.was} -> ${r.state}; ${jobs}`;
}
