/**
 * Text that came from a file or the store, made safe for a terminal.
 *
 * @module
 */

// C0 controls except tab and newline, DEL, C1 controls, and the bidi
// overrides and isolates that can reorder what a reader sees.
// deno-lint-ignore no-control-regex -- matching control characters is the point
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Replaces control characters (ANSI/OSC escape sequences start with one)
 * and bidi overrides with visible `\x1b`/`\u202e` escapes, so stored text can
 * change neither the screen, the title nor the clipboard.
 */
export function escapeControl(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`;
  });
}
