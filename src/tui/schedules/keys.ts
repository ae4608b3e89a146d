/**
 * The schedules tab's keys: move, open a schedule's jobs, run one now,
 * disable or enable one; what Enter in their reason prompts does, and what
 * they changed, in a sentence.
 *
 * @module
 */

import type { ActRequest, ActResults } from "../actions.ts";
import { capital, confirm, failed, prompt, refused } from "../ask.ts";
import { showJobs } from "../jobs/keys.ts";
import type { Key } from "../keys.ts";
import { seg } from "../seg.ts";
import { clamp, type DashboardState, type PromptPurpose, selectedSchedule } from "../state.ts";

/** Keys of the schedules list: move, open its jobs, run now, disable or enable. */
export function schedulesKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const count = state.schedules?.length ?? 0;
  if (down) return { ...state, scheduleCursor: clamp(state.scheduleCursor + 1, count) };
  if (up) return { ...state, scheduleCursor: clamp(state.scheduleCursor - 1, count) };
  if (key.input === "R") return runSchedule(state);
  if (key.input === "x") return toggleSchedule(state);
  const info = selectedSchedule(state);
  if (key.return && info) return showJobs(state, { scheduleId: info.status.id });
  return state;
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

/** Enter in a run-now reason prompt: the confirmation, or why not. */
export function submitRun(
  state: DashboardState,
  purpose: Extract<PromptPurpose, { kind: "run" }>,
  reason: string,
): DashboardState {
  const { id, manual, queue } = purpose;
  if (manual && reason === "") {
    return failed(state, `${id} is manual: a reason is required; nothing changed`);
  }
  return confirm(state, `Run schedule ${id} now?`, [
    [seg(`One occurrence ${id}@<now> on queue ${queue}, as the planner builds it.`)],
    [seg("The planned occurrences are unchanged.")],
    ...(reason ? [[seg(`reason: ${reason}`)]] : []),
  ], { kind: "act", request: { kind: "run", id, reason: reason || null } });
}

/** Enter in a disable or enable reason prompt: the confirmation, or why not. */
export function submitToggle(
  state: DashboardState,
  purpose: Extract<PromptPurpose, { kind: "toggle" }>,
  reason: string,
): DashboardState {
  const { id, enable } = purpose;
  const verb = enable ? "enable" : "disable";
  if (reason === "") return failed(state, `${verb} needs a reason; nothing changed`);
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

/** What a run now changed, in a sentence. */
export function runActed(
  request: Extract<ActRequest, { kind: "run" }>,
  result: ActResults["run"],
): string {
  const { id } = request;
  return `ran ${id} now: job ${result.id}, occurrence ${result.occurrence}, ` +
    `${result.state} on queue ${result.queue}`;
}

/** What a disable or enable changed, in a sentence. */
export function scheduleActed(
  request: Extract<ActRequest, { kind: "schedule" }>,
  result: ActResults["schedule"],
): string {
  const { id } = request;
  return result.was === result.enabled
    ? `schedule ${id} was already ${result.enabled ? "enabled" : "disabled"}; recorded`
    : `schedule ${id} ${result.enabled ? "enabled" : "disabled"}`;
}
