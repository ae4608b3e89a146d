/**
 * How the command line prints: stored text escaped cell by cell, tables,
 * instants as ISO UTC (with a schedule's own wall clock beside them; with
 * a relative age, `when` of `src/schedule/describe.ts`), JSON safe for a
 * terminal, and (from `src/text/shell.ts`) words quoted so a printed
 * command pastes as the same words.
 *
 * @module
 */

import { localBeside } from "../schedule/describe.ts";
import { escapeControl } from "../text/escape.ts";

// Commands to paste are quoted by the rules the TUI shares.
export { commandLine, shellQuote } from "../text/shell.ts";

/** Stored text for one cell of one line: control characters, newlines and tabs escaped. */
export function cell(text: string): string {
  return escapeControl(text).replaceAll("\n", "\\n").replaceAll("\t", "\\t");
}

/** How many characters of one value an error shows by default (see {@linkcode echo}). */
export const ECHO_MAX = 200;

/**
 * A value an error quotes back (what the user typed, or what a file or the
 * store holds), safe on one line of a terminal: escaped as {@linkcode cell}
 * escapes, and cut to `max` characters as shown, escapes included, with
 * `… (N more characters)` naming what was left off. Without the cut, a
 * 1 MiB `--args` would be printed whole, twice.
 */
export function echo(value: string, max: number = ECHO_MAX): string {
  let shown = "";
  let width = 0;
  let rest = 0;
  for (const char of value) {
    if (rest > 0) {
      rest++;
      continue;
    }
    const text = cell(char);
    const w = text === char ? 1 : text.length;
    if (width + w > max) {
      rest = 1;
      continue;
    }
    shown += text;
    width += w;
  }
  return rest === 0 ? shown : `${shown}… (${rest} more character${rest === 1 ? "" : "s"})`;
}

/** Stored multi-line text, each line escaped and indented. */
export function block(text: string, indent: string): string[] {
  return text.replace(/\n$/, "").split("\n").map((l) => `${indent}${cell(l)}`);
}

/** The first line of `text`. */
export function firstLine(text: string): string {
  return text.split("\n", 1)[0] ?? "";
}

/** At most `max` characters (code points), marked with `…` when cut. */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** Rows as columns padded to their widest cell; the last column is not padded. */
export function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((c, i) => widths[i] = Math.max(widths[i] ?? 0, Array.from(c).length));
  }
  return rows.map((row) =>
    row.map((c, i) => i === row.length - 1 ? c : c + " ".repeat(widths[i]! - Array.from(c).length))
      .join("  ").trimEnd()
  );
}

export { iso } from "../admin/job_json.ts";

/**
 * An instant as ISO-8601 UTC with ms and, for a `zone` other than UTC,
 * its wall clock and offset there:
 * `2026-03-08T07:00:00.000Z (03:00 -04:00 America/New_York)`; `never` for none.
 */
export function isoIn(ms: number | null, zone: string | null): string {
  if (ms === null) return "never";
  const local = zone === null ? null : localBeside(ms, zone);
  return `${new Date(ms).toISOString()}${local === null ? "" : ` (${cell(local)})`}`;
}

// Raw C1 controls and bidi overrides are valid inside JSON strings, and
// JSON.stringify leaves them raw; as \u escapes they parse to the same text.
const JSON_UNSAFE = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** JSON, indented, with every character that could act on a terminal escaped. */
export function safeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    JSON_UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
