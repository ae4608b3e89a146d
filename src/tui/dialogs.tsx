/**
 * The dashboard's dialogs, drawn in place of the screen they belong to: a
 * confirmation (what will happen, every affected job, y/n), a one-line
 * text prompt with a cursor (a reason, a search), a menu of single keys,
 * the jobs filter's picker of states and queue, and the help. The dialogs
 * are values of the reducer's state (`state.ts`); this only draws them
 * (their keys are `dialog_keys.ts`'s).
 *
 * @module
 */

import { type ReactNode, useContext } from "react";
import { JOB_STATES } from "../kernel/types.ts";
import { ColorContext, Lines, type Seg, seg } from "./line.tsx";
import { type LineEdit, lineParts } from "./line_edit.ts";
import { windowOf } from "./seg.ts";
import { type Overlay, type PickerDialog, pickerRows } from "./state.ts";
import { STATE_COLOR } from "./text.ts";

export type { ConfirmDialog, MenuDialog, Overlay, PickerDialog, PromptDialog } from "./state.ts";

/** The key bindings, as the help shows them. */
export const HELP: [string, string][] = [
  ["1-7, tab", "overview, jobs, schedules, dead letters, workflows, pipelines, work"],
  ["j k, ↓ ↑", "move (in a list) or scroll (in a detail or preview)"],
  ["n b, PgDn PgUp", "next and previous page of jobs (g: first page)"],
  ["⏎", "open: a queue's, schedule's or group's jobs; a job, run or pipeline"],
  ["esc", "back from a detail; clear the jobs filter; cancel a dialog"],
  ["/", "search jobs: text, or state: queue: schedule: worker: tag: words"],
  ["", "(typing replaces the search shown; ← → Home End ^U ^K ^W edit it)"],
  ["f, o", "pick states (any number) and a queue to list; newest or oldest first"],
  ["r c d", "retry, cancel, discard the selected job"],
  ["p", "replay the selected job (asks a reason)"],
  ["B", "bulk retry or discard the filtered jobs (preview of each, then confirm)"],
  ["P", "pause or resume the selected queue (overview)"],
  ["R, x", "run the selected schedule now; disable or enable it (asks a reason)"],
  ["5: ⏎ r c f", "open a run, retry it (failed), cancel it; f: runs by state"],
  ["7: h l, [ ]", "the previous and next work queue"],
  ["y n", "answer a confirmation"],
  ["?, q", "this help; quit"],
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
  const color = useContext(ColorContext);
  return <Lines lines={overlayLines(props, color)} width={props.width} height={props.height} />;
}

/** The open dialog as lines; without `color` the prompt's cursor is drawn as a character. */
export function overlayLines(props: OverlayProps, color = true): Seg[][] {
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
        [seg("> "), ...lineSegs(overlay.line, color)],
        overlay.line.selected
          ? [seg("  (selected: typing replaces it; ← → Home End keep it to edit)", { dim: true })]
          : [],
        [seg("⏎ accept · esc cancel · ← → Home End move · ^U ^K ^W delete", { dim: true })],
      ];
    case "menu":
      return [
        [seg(overlay.title, { bold: true })],
        [],
        ...overlay.options.map((o) => [seg(`  ${o.key}  `, { color: "cyan" }), seg(o.label)]),
        [seg("  esc  cancel", { dim: true })],
      ];
    case "picker":
      return pickerLines(overlay, height);
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

/**
 * The text being typed with its cursor: the character under it inverted
 * (a block at the end). Without colour, where nothing is inverted, the
 * cursor is a bar before that character and a selection is bracketed.
 */
function lineSegs(line: LineEdit, color: boolean): Seg[] {
  if (line.selected) {
    return color
      ? [seg(line.text, { inverse: true }), seg("█", { dim: true })]
      : [seg(`[${line.text}]`), seg("█")];
  }
  const { before, at, after } = lineParts(line);
  if (at === "") return [seg(before), seg("█", { dim: true })];
  return color
    ? [seg(before), seg(at, { inverse: true }), seg(after)]
    : [seg(before), seg("▏"), seg(at), seg(after)];
}

/** The picker: the states with their boxes, the queues with their one choice, the cursor's row marked. */
function pickerLines(picker: PickerDialog, height: number): Seg[][] {
  const rows = pickerRows(picker);
  const cursor = Math.max(0, Math.min(picker.cursor, rows.length - 1));
  // Every line of the list, with the index of its row (null for a heading).
  const list: { row: number | null; segs: Seg[] }[] = [];
  const mark = (i: number) => seg(i === cursor ? "> " : "  ", { bold: true });
  list.push({
    row: null,
    segs: [seg("STATE", { bold: true }), seg("  any number; none chosen lists every state")],
  });
  rows.forEach((row, i) => {
    if (row.kind === "state") {
      const on = picker.states.includes(row.state);
      list.push({
        row: i,
        segs: [
          mark(i),
          seg(on ? "[x] " : "[ ] ", { bold: on }),
          seg(row.state, { color: STATE_COLOR[row.state], inverse: i === cursor }),
        ],
      });
      return;
    }
    if (row.queue === null) {
      list.push({ row: null, segs: [seg("QUEUE", { bold: true }), seg("  one, or any")] });
    }
    const on = picker.queue === row.queue;
    list.push({
      row: i,
      segs: [
        mark(i),
        seg(on ? "(•) " : "( ) ", { bold: on }),
        seg(row.queue ?? "any queue", { inverse: i === cursor, dim: row.queue === null }),
      ],
    });
  });
  if (picker.queues === null) {
    list.push({ row: null, segs: [seg("  reading the queues…", { dim: true })] });
  }
  if (picker.problem !== null) {
    list.push({
      row: null,
      segs: [seg(`  the queues could not be read: ${picker.problem}`, { color: "red" })],
    });
  }
  const room = Math.max(1, height - 2);
  const at = list.findIndex((l) => l.row === cursor);
  const [start, end] = windowOf(list.length, at, room);
  const chosen = picker.states.length === 0
    ? "every state"
    : picker.states.length === JOB_STATES.length
    ? "all states"
    : picker.states.join(", ");
  return [
    [
      seg("List the jobs of: ", { bold: true }),
      seg(`${chosen}; ${picker.queue ?? "any queue"}`, {
        color: "cyan",
      }),
    ],
    [],
    ...list.slice(start, end).map((l) => l.segs),
  ];
}
