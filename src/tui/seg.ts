/**
 * A line of the dashboard as plain values: coloured segments, and the cut
 * that makes them fit a width. Pure, so that the reducer's dialogs and the
 * views can build lines without a renderer.
 *
 * @module
 */

import { clean, truncate } from "./text.ts";

/** A piece of a line with its style. */
export interface Seg {
  text: string;
  color?: string;
  bold?: boolean;
  dim?: boolean;
  inverse?: boolean;
}

/** Shorthand for a segment. */
export function seg(text: string, style: Omit<Seg, "text"> = {}): Seg {
  return { text, ...style };
}

/**
 * Cuts `segs` so that their text fits in `width` characters, the last cut
 * one ending with `…`. Every segment's text is cleaned on the way.
 */
export function clip(segs: Seg[], width: number): Seg[] {
  const out: Seg[] = [];
  let left = width;
  for (const s of segs) {
    if (left <= 0) break;
    const text = clean(s.text);
    const length = Array.from(text).length;
    if (length <= left) {
      out.push({ ...s, text });
      left -= length;
    } else {
      out.push({ ...s, text: truncate(text, left) });
      left = 0;
    }
  }
  return out;
}

/** The characters of `segs` together, as a terminal without colour shows them. */
export function plain(segs: Seg[]): string {
  return segs.map((s) => s.text).join("");
}

/** A horizontal rule of exactly `width` characters, after `label` when given. */
export function rule(width: number, label = ""): Seg[] {
  const head = label === "" ? "" : `── ${label} `;
  const room = Math.max(0, width - Array.from(clean(head)).length);
  return [
    ...(head === "" ? [] : [seg(head, { bold: true })]),
    seg("─".repeat(room), { dim: true }),
  ];
}

/** The `[start, end)` of `rows` items out of `count` that keeps `cursor` in view. */
export function windowOf(count: number, cursor: number, rows: number): [number, number] {
  if (count <= rows) return [0, count];
  const start = Math.min(Math.max(0, cursor - rows + 1), count - rows);
  return [Math.max(0, start), Math.max(0, start) + rows];
}
