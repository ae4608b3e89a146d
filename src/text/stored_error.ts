/**
 * How a stored error reads back: its message, and the stderr tail a
 * command's failure appends after {@linkcode STDERR_MARK} (the command
 * runner's `withStderr`, the ingest command processor). A view shows the
 * message's first line (a worker's throw carries frames after it) and the
 * tail as lines of their own, or, on one line, the message and the tail's
 * last line. Nothing here escapes: the faces escape what they print.
 *
 * @module
 */

/** What separates a failure's message from the tail of its command's stderr. */
export const STDERR_MARK = "\nstderr:\n";

/** A stored error, read: its message's first line and its stderr tail's lines (none without one). */
export interface ErrorParts {
  message: string;
  stderr: string[];
}

/** `error` split into its message's first line and its stderr tail's non-blank-ended lines. */
export function errorParts(error: string): ErrorParts {
  const at = error.indexOf(STDERR_MARK);
  const head = at < 0 ? error : error.slice(0, at);
  const tail = at < 0 ? "" : error.slice(at + STDERR_MARK.length).trimEnd();
  return {
    message: head.split("\n", 1)[0]!,
    stderr: tail.trim() === "" ? [] : tail.split("\n"),
  };
}

/** How many characters of the stderr line a one-line summary keeps. */
export const SUMMARY_STDERR_CHARS = 120;

/**
 * `error` on one line: its message's first line, then `; stderr: ` and the
 * last non-blank line of its stderr tail (most tools say what went wrong
 * last), marked `…` when lines before it are left off, and cut to
 * {@linkcode SUMMARY_STDERR_CHARS}.
 */
export function errorSummary(error: string): string {
  const { message, stderr } = errorParts(error);
  const lines = stderr.filter((l) => l.trim() !== "");
  const last = lines.at(-1);
  if (last === undefined) return message;
  const shown = Array.from(last.trim());
  const cut = shown.length > SUMMARY_STDERR_CHARS
    ? `${shown.slice(0, SUMMARY_STDERR_CHARS - 1).join("")}…`
    : shown.join("");
  return `${message}; stderr: ${lines.length > 1 ? "…" : ""}${cut}`;
}
