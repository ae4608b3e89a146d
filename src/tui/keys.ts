/**
 * A key press as a plain value: what the reducer reads. The names are
 * ink's (`useInput`'s second argument), so the shell hands ink's key over
 * as it is; tests build keys with {@linkcode key}, {@linkcode named} and
 * {@linkcode ctrl} instead of writing terminal bytes.
 *
 * @module
 */

/** One key: the character typed (empty for a named key) and the named keys and modifiers. */
export interface Key {
  /** The character typed; for Ctrl-U, `u` with `ctrl`; empty for arrows, Enter, Esc and the like. */
  input: string;
  upArrow?: boolean;
  downArrow?: boolean;
  leftArrow?: boolean;
  rightArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  home?: boolean;
  end?: boolean;
  return?: boolean;
  escape?: boolean;
  tab?: boolean;
  backspace?: boolean;
  delete?: boolean;
  ctrl?: boolean;
  shift?: boolean;
  meta?: boolean;
}

/** The named keys of {@linkcode Key}. */
export type KeyName = Exclude<keyof Key, "input" | "ctrl" | "shift" | "meta">;

/** A character typed, e.g. `key("j")`, `key("P")` (shift is implied by the capital). */
export function key(input: string): Key {
  return { input, shift: input.length === 1 && /[A-Z]/.test(input) };
}

/** A named key, e.g. `named("downArrow")`, `named("tab", { shift: true })`. */
export function named(name: KeyName, modifiers: { shift?: boolean; meta?: boolean } = {}): Key {
  return { input: "", [name]: true, ...modifiers };
}

/** A control chord, e.g. `ctrl("u")` for Ctrl-U. */
export function ctrl(letter: string): Key {
  return { input: letter, ctrl: true };
}

/**
 * The keys of one chunk of terminal input. A terminal hands over keys typed
 * (or pasted, or sent) quickly as one chunk of text, which ink reports as
 * one input (it splits off escape sequences and Backspace only): each
 * character is then a key of its own, `\r` Enter, `\t` Tab and another
 * control character its Ctrl chord (`\x17` is Ctrl-W). A chord, an escape
 * sequence or a single character stays the one key ink parsed.
 */
export function splitChunk(input: string, parsed: Key): Key[] {
  const chars = Array.from(input);
  if (chars.length <= 1 || parsed.ctrl || parsed.meta || parsed.escape) return [parsed];
  return chars.map(charKey);
}

/** One character of a chunk as the key it stands for. */
function charKey(c: string): Key {
  if (c === "\r") return named("return");
  if (c === "\t") return named("tab");
  if (c === "\x7f" || c === "\b") return named("backspace");
  const code = c.charCodeAt(0);
  if (code >= 1 && code <= 26) return ctrl(String.fromCharCode(code + 96));
  return key(c);
}
