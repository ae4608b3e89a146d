/**
 * The keys of an open dialog (the help, a menu, a prompt, the jobs filter's
 * picker, a confirmation) and what a confirmed choice does. Enter in a
 * prompt refuses a placeholder reason here, then hands the text to the tab
 * whose prompt it is.
 *
 * @module
 */

import { placeholderMessage, placeholderReason } from "../admin/audit.ts";
import type { ActRequest } from "./actions.ts";
import { failed } from "./ask.ts";
import { pickerKey, submitReplay, submitSearch } from "./jobs/keys.ts";
import type { Key } from "./keys.ts";
import { editLine } from "./line_edit.ts";
import { submitRun, submitToggle } from "./schedules/keys.ts";
import {
  BULK_LIMIT,
  contentHeight,
  type Context,
  type DashboardState,
  type Intent,
  type Overlay,
  type PromptPurpose,
} from "./state.ts";
import { submitWorkflow } from "./workflows/keys.ts";

/** Keys of the open dialog. */
export function dialogKey(
  state: DashboardState,
  open: Overlay,
  key: Key,
  ctx: Context,
): DashboardState {
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

/** What Enter in a prompt does with the text typed. */
function submit(state: DashboardState, purpose: PromptPurpose, text: string): DashboardState {
  const reason = text.trim();
  // An empty reason is each case's own refusal (a manual run's only); any
  // other placeholder (`...`, `TODO`) is refused as on the command line.
  const placeholder = purpose.kind === "search" || reason === "" ? null : placeholderReason(reason);
  if (placeholder !== null) {
    return failed(state, `${placeholderMessage(reason, placeholder)}; nothing changed`);
  }
  switch (purpose.kind) {
    case "search":
      return submitSearch(state, text);
    case "replay":
      return submitReplay(state, purpose, reason);
    case "run":
      return submitRun(state, purpose, reason);
    case "toggle":
      return submitToggle(state, purpose, reason);
    case "workflow":
      return submitWorkflow(state, purpose, reason);
  }
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
