/**
 * The prompt's line editor, key by key: typing at the cursor, Backspace and
 * Delete, ← → Home End, Ctrl-U, Ctrl-K, Ctrl-W, and a selected text that
 * typing replaces and a cursor key keeps.
 */

import assert from "node:assert/strict";
import { ctrl, type Key, key, named } from "../../src/tui/keys.ts";
import { editLine, type LineEdit, lineOf, lineParts } from "../../src/tui/line_edit.ts";

/** The line after each of `keys` in turn, shown as `before|after` (the cursor as `|`). */
function typed(start: LineEdit, ...keys: (Key | string)[]): string {
  let line = start;
  for (const k of keys) {
    for (const one of typeof k === "string" ? Array.from(k).map(key) : [k]) {
      line = editLine(line, one) ?? line;
    }
  }
  const { before, at, after } = lineParts(line);
  return `${before}|${at}${after}${line.selected ? " (selected)" : ""}`;
}

const empty = lineOf("");

Deno.test("typing inserts at the cursor, which ← → Home End move", () => {
  assert.equal(typed(empty, "queue:mail"), "queue:mail|");
  assert.equal(typed(empty, "queue:mail", named("leftArrow"), named("leftArrow")), "queue:ma|il");
  assert.equal(typed(empty, "mail", named("home"), "queue:"), "queue:|mail");
  assert.equal(typed(empty, "ail", named("home"), "m", named("end"), "!"), "mail!|");
  assert.equal(typed(empty, "ab", ctrl("a"), "<", ctrl("e"), ">"), "<ab>|");
  // The cursor stops at both ends.
  assert.equal(typed(empty, "ab", named("rightArrow"), named("rightArrow")), "ab|");
  assert.equal(typed(empty, "ab", named("home"), named("leftArrow"), "x"), "x|ab");
});

Deno.test("Backspace deletes before the cursor, Delete under it, each one code point", () => {
  assert.equal(typed(empty, "refused", named("backspace")), "refuse|");
  assert.equal(typed(empty, "abc", named("leftArrow"), named("backspace")), "a|c");
  assert.equal(typed(empty, "abc", named("home"), named("delete")), "|bc");
  assert.equal(typed(empty, "abc", named("home"), named("backspace")), "|abc");
  assert.equal(typed(empty, "naïve 🚀", named("backspace"), named("backspace")), "naïve|");
});

Deno.test("Ctrl-U deletes to the start, Ctrl-K to the end, Ctrl-W the word before the cursor", () => {
  const line = lineOf("state:discarded connection refused");
  assert.equal(typed(line, ctrl("u")), "|");
  assert.equal(typed(line, named("leftArrow"), named("leftArrow"), ctrl("u")), "|ed");
  assert.equal(typed(line, named("home"), named("rightArrow"), ctrl("k")), "s|");
  assert.equal(typed(line, ctrl("w")), "state:discarded connection |");
  assert.equal(typed(line, ctrl("w"), ctrl("w")), "state:discarded |");
  // Spaces before the cursor go with the word, as in readline.
  assert.equal(typed(lineOf("one two   "), ctrl("w")), "one |");
  assert.equal(typed(lineOf("one two"), named("backspace", { meta: true })), "one |");
  assert.equal(typed(lineOf("one two"), named("leftArrow"), ctrl("w")), "one |o");
});

Deno.test("a selected text is replaced by typing, cleared by a delete, kept by a cursor key", () => {
  const search = lineOf("queue:mail", true);
  assert.equal(typed(search), "queue:mail| (selected)");
  assert.equal(typed(search, "timeout"), "timeout|");
  assert.equal(typed(search, named("backspace")), "|");
  assert.equal(typed(search, ctrl("w")), "|");
  assert.equal(typed(search, named("end"), " refused"), "queue:mail refused|");
  assert.equal(typed(search, named("leftArrow"), "x"), "x|queue:mail");
  assert.equal(typed(search, named("rightArrow"), "!"), "queue:mail!|");
  assert.equal(lineOf("", true).selected, false, "nothing to select");
});

Deno.test("keys that are not the editor's are left to the dialog", () => {
  for (const k of [named("return"), named("escape"), named("tab"), named("upArrow"), ctrl("x")]) {
    assert.equal(editLine(lineOf("abc"), k), null, JSON.stringify(k));
  }
});
