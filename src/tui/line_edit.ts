/**
 * One line of text being typed (a search, a reason), with a cursor and the
 * keys a shell's line editor has: Backspace and Delete, ← → Home End (and
 * Ctrl-A/Ctrl-E), Ctrl-U (delete to the start), Ctrl-K (to the end) and
 * Ctrl-W or Alt-Backspace (the word before the cursor). Text can start
 * selected, as a search opens with the current one: typing replaces it,
 * Backspace clears it, and a cursor key keeps it for editing. Pure.
 *
 * Positions count code points, so an emoji or an accented letter typed as
 * one character is deleted as one.
 *
 * @module
 */

import type { Key } from "./keys.ts";

/** A line being edited. */
export interface LineEdit {
  text: string;
  /** How many code points stand before the cursor. */
  cursor: number;
  /** The whole text is selected: typing replaces it, Backspace clears it. */
  selected: boolean;
}

/** `text` with the cursor at its end; `selected` marks it all (typing replaces it). */
export function lineOf(text: string, selected = false): LineEdit {
  return { text, cursor: Array.from(text).length, selected: selected && text !== "" };
}

/** The line's text before the cursor, the character under it (or "") and the rest. */
export function lineParts(line: LineEdit): { before: string; at: string; after: string } {
  const chars = Array.from(line.text);
  return {
    before: chars.slice(0, line.cursor).join(""),
    at: chars[line.cursor] ?? "",
    after: chars.slice(line.cursor + 1).join(""),
  };
}

/**
 * The line after `key`, or null when `key` is not one the editor handles
 * (Enter, Esc, Tab, ↑ ↓ are the dialog's).
 */
export function editLine(line: LineEdit, key: Key): LineEdit | null {
  const chars = Array.from(line.text);
  const at = (text: string[], cursor: number): LineEdit => ({
    text: text.join(""),
    cursor: Math.max(0, Math.min(cursor, text.length)),
    selected: false,
  });
  const cursor = Math.max(0, Math.min(line.cursor, chars.length));
  if (key.return || key.escape || key.tab || key.upArrow || key.downArrow) return null;
  const chord = key.ctrl ? key.input.toLowerCase() : "";
  const deletes = key.backspace || key.delete || chord === "u" || chord === "k" ||
    chord === "w" || chord === "h";
  if (line.selected && deletes) return at([], 0);
  if (key.leftArrow) return at(chars, line.selected ? 0 : cursor - 1);
  if (key.rightArrow) return at(chars, line.selected ? chars.length : cursor + 1);
  if (key.home || chord === "a") return at(chars, 0);
  if (key.end || chord === "e") return at(chars, chars.length);
  if (chord === "u") return at(chars.slice(cursor), 0);
  if (chord === "k") return at(chars.slice(0, cursor), cursor);
  if (chord === "w" || (key.backspace && key.meta)) {
    const start = wordStart(chars, cursor);
    return at([...chars.slice(0, start), ...chars.slice(cursor)], start);
  }
  if (key.backspace || chord === "h") {
    if (cursor === 0) return at(chars, 0);
    return at([...chars.slice(0, cursor - 1), ...chars.slice(cursor)], cursor - 1);
  }
  if (key.delete) return at([...chars.slice(0, cursor), ...chars.slice(cursor + 1)], cursor);
  if (key.ctrl || key.meta || key.pageUp || key.pageDown || key.input === "") return null;
  const typed = Array.from(key.input);
  if (line.selected) return at(typed, typed.length);
  return at([...chars.slice(0, cursor), ...typed, ...chars.slice(cursor)], cursor + typed.length);
}

/** Where the word before `cursor` starts: spaces before the cursor, then the word (readline's Ctrl-W). */
function wordStart(chars: string[], cursor: number): number {
  let i = cursor;
  while (i > 0 && /\s/.test(chars[i - 1]!)) i--;
  while (i > 0 && !/\s/.test(chars[i - 1]!)) i--;
  return i;
}
