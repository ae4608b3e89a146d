/** One chunk of terminal input as the keys it holds: what the shell hands the reducer. */

import assert from "node:assert/strict";
import { ctrl, key, named, splitChunk } from "../../src/tui/keys.ts";

Deno.test("splitChunk() makes each character of a chunk a key, control characters their chords", () => {
  assert.deepEqual(splitChunk("jjr", { input: "jjr" }), [key("j"), key("j"), key("r")]);
  assert.deepEqual(splitChunk("ab\x17\x15C", { input: "ab\x17\x15C" }), [
    key("a"),
    key("b"),
    ctrl("w"),
    ctrl("u"),
    key("C"),
  ]);
  assert.deepEqual(splitChunk("x\ry\t", { input: "x\ry\t" }), [
    key("x"),
    named("return"),
    key("y"),
    named("tab"),
  ]);
  assert.deepEqual(splitChunk("a\x7f", { input: "a\x7f" }), [key("a"), named("backspace")]);
  assert.equal(key("P").shift, true);
});

Deno.test("splitChunk() leaves one key, a chord and an escape sequence as ink parsed them", () => {
  const down = { input: "", downArrow: true };
  assert.deepEqual(splitChunk("", down), [down]);
  assert.deepEqual(splitChunk("u", { input: "u", ctrl: true }), [ctrl("u")]);
  const meta = { input: "q", meta: true };
  assert.deepEqual(splitChunk("q", meta), [meta]);
  assert.deepEqual(splitChunk("é", { input: "é" }), [{ input: "é" }]);
});
