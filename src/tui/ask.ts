/**
 * How a key asks before it acts, for every tab: a confirmation with its
 * preview, a prompt for a reason, and the status lines that say no (read-only
 * mode, a reason refused, nothing to do). Each returns the next state.
 *
 * @module
 */

import { lineOf } from "./line_edit.ts";
import type { Seg } from "./seg.ts";
import type {
  ConfirmDialog,
  DashboardState,
  Intent,
  PromptDialog,
  PromptPurpose,
} from "./state.ts";

/** Opens a confirmation with its preview `lines`; `then` runs on `y`. */
export function confirm(
  state: DashboardState,
  title: string,
  lines: Seg[][],
  then: Intent,
): DashboardState {
  const dialog: ConfirmDialog = { kind: "confirm", title, lines, scroll: 0, then };
  return { ...state, overlay: dialog };
}

/** Opens a prompt; `text` starts selected, so typing replaces it and a cursor key keeps it. */
export function prompt(
  state: DashboardState,
  label: string,
  purpose: PromptPurpose,
  text = "",
): DashboardState {
  const dialog: PromptDialog = { kind: "prompt", label, line: lineOf(text, true), purpose };
  return { ...state, overlay: dialog };
}

/** True (and says so) in read-only mode. */
export function refused(state: DashboardState, what: string): DashboardState | null {
  if (!state.readOnly) return null;
  return {
    ...state,
    status: { text: `read-only mode: ${what} refused; nothing changed`, tone: "error" },
  };
}

/** `text` in the status line, as information. */
export function info(state: DashboardState, text: string): DashboardState {
  return { ...state, status: { text, tone: "info" } };
}

/** `text` in the status line, as an error: nothing changed. */
export function failed(state: DashboardState, text: string): DashboardState {
  return { ...state, status: { text, tone: "error" } };
}

/** `text` with a capital first letter. */
export function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
