/**
 * Command lines a person pastes: the program's invocation and words quoted
 * for a POSIX shell only when they need it, safe to show on a terminal
 * either way. Shared by every part that prints such a line (the TUI's
 * hints; the CLI keeps the same rules in src/cli/text.ts).
 *
 * @module
 */

import { escapeControl } from "./escape.ts";

/** Characters that need no quoting in a shell word. */
const SHELL_SAFE = /^[A-Za-z0-9._:@\/-]+$/;
// deno-lint-ignore no-control-regex -- matching control characters is the point
const CONTROL = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/**
 * Quotes `word` for a POSIX shell when it holds anything outside
 * `[A-Za-z0-9._:@/-]`: single quotes, or bash's `$'...'` with `\xNN`
 * escapes when it holds control characters, so what is printed is both
 * safe on the terminal and the same word once pasted.
 */
export function shellQuote(word: string): string {
  if (SHELL_SAFE.test(word)) return word;
  if (!CONTROL.test(word)) return `'${word.replaceAll("'", `'\\''`)}'`;
  const body = word.replaceAll("\\", "\\\\").replaceAll("'", "\\'");
  return `$'${escapeControl(body).replaceAll("\n", "\\n").replaceAll("\t", "\\t")}'`;
}

/**
 * A command line to paste: the program's invocation (`jobsctl`, or a whole
 * `deno run ... main.ts` line, printed as given) and `words`, each quoted.
 */
export function commandLine(program: string, words: string[]): string {
  return [program, ...words.map(shellQuote)].join(" ");
}
