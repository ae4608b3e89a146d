/**
 * The dashboard's dialogs, drawn in place of the screen they belong to: a
 * confirmation (what will happen, every affected job, y/n), a one-line
 * text prompt (a reason, a search), a menu of single keys, and the help.
 *
 * @module
 */

import type { ReactNode } from "react";
import { Lines, type Seg, seg } from "./line.tsx";

/** A question with its preview; `yes` runs on `y`. */
export interface ConfirmDialog {
  kind: "confirm";
  title: string;
  lines: Seg[][];
  /** The first preview line shown. */
  scroll: number;
  yes: () => void;
}

/** A line of text to type; `submit` runs on Enter with what was typed. */
export interface PromptDialog {
  kind: "prompt";
  label: string;
  value: string;
  submit: (value: string) => void;
}

/** Single-key choices. */
export interface MenuDialog {
  kind: "menu";
  title: string;
  options: { key: string; label: string; run: () => void }[];
}

/** Any dialog, or the help. */
export type Overlay = ConfirmDialog | PromptDialog | MenuDialog | { kind: "help" };

/** The key bindings, as the help shows them. */
export const HELP: [string, string][] = [
  ["1 2 3 4, tab", "overview, jobs, schedules, dead letters"],
  ["j k, ↓ ↑", "move (in a list) or scroll (in a detail or preview)"],
  ["n b, PgDn PgUp", "next and previous page of jobs (g: first page)"],
  ["⏎", "open: a queue's, schedule's or group's jobs; a job's detail"],
  ["esc", "back from a detail; clear the jobs filter; cancel a dialog"],
  ["/", "search jobs: text, or state: queue: schedule: worker: tag: words"],
  ["f, o", "cycle the state filter; newest or oldest first"],
  ["r c d", "retry, cancel, discard the selected job"],
  ["p", "replay the selected job (asks a reason)"],
  ["B", "bulk retry or discard the filtered jobs (preview of each, then confirm)"],
  ["P", "pause or resume the selected queue (overview)"],
  ["R, x", "run the selected schedule now; disable or enable it (asks a reason)"],
  ["y n", "answer a confirmation"],
  ["?", "this help"],
  ["q", "quit"],
];

/** Props of {@linkcode OverlayView}. */
export interface OverlayProps {
  overlay: Overlay;
  readOnly: boolean;
  width: number;
  height: number;
}

/** The open dialog, in place of the screen. */
export function OverlayView(props: OverlayProps): ReactNode {
  return <Lines lines={overlayLines(props)} width={props.width} height={props.height} />;
}

/** The open dialog as lines. */
export function overlayLines(props: OverlayProps): Seg[][] {
  const { overlay, height } = props;
  switch (overlay.kind) {
    case "help":
      return [
        [seg("Keys", { bold: true }), seg(props.readOnly ? "  (read-only: actions refused)" : "")],
        [],
        ...HELP.map(([keys, what]) => [seg(`  ${keys.padEnd(16)}`, { color: "cyan" }), seg(what)]),
        [],
        [seg("any key closes this help", { dim: true })],
      ];
    case "prompt":
      return [
        [seg(overlay.label, { bold: true })],
        [],
        [seg("> "), seg(overlay.value), seg("█", { dim: true })],
        [],
        [seg("⏎ accept · esc cancel", { dim: true })],
      ];
    case "menu":
      return [
        [seg(overlay.title, { bold: true })],
        [],
        ...overlay.options.map((o) => [seg(`  ${o.key}  `, { color: "cyan" }), seg(o.label)]),
        [seg("  esc  cancel", { dim: true })],
      ];
    case "confirm": {
      const room = Math.max(1, height - 4);
      const scroll = Math.max(0, Math.min(overlay.scroll, overlay.lines.length - room));
      const shown = overlay.lines.slice(scroll, scroll + room);
      const more = overlay.lines.length > room
        ? ` · j/k scroll (${scroll + 1}-${scroll + shown.length} of ${overlay.lines.length})`
        : "";
      return [
        [seg(overlay.title, { bold: true, color: "yellow" })],
        [],
        ...shown,
        ...Array.from({ length: room - shown.length }, () => []),
        [
          seg("y", { bold: true, color: "green" }),
          seg(" yes · "),
          seg("n", { bold: true }),
          seg(
            ` no (nothing changes)${more}`,
          ),
        ],
      ];
    }
  }
}
