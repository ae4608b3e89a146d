/**
 * How a thrown value reads as a stored error, before redaction and the cap.
 *
 * Two kinds of failure are told apart. An expected one (a command's exit
 * code, an HTTP status, a timeout) is a {@linkcode JobFailure}: its message
 * says everything, and frames of the runner that noticed it would only bury
 * it. Anything else keeps its message, its cause chain and the first frames
 * of its stack, because it may be a bug someone has to find; but only the
 * frames of the code that threw. Frames of this library's runtime (every
 * module under its `src/`: the executor, the runtime, the runners)
 * below a user's frames say how the runtime reached the user's `perform`,
 * which is the same for every job, and frames of the JavaScript runtime
 * (`ext:`, `node:`) are never the user's; both are dropped. An error thrown
 * by the library itself, where no user frame is above, keeps its frames.
 * A stack overflow keeps none: its frames are one recursion repeated, most
 * often inside the runtime (`JSON.stringify`, `structuredClone`), and say
 * nothing its one line does not.
 *
 * @module
 */

/**
 * An expected failure of a job: stored as its message alone, without a
 * stack or cause chain, so the message must name what failed and how
 * (`command "sh" exited with code 1`). Thrown, it retries the job like any
 * error.
 */
export class JobFailure extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "JobFailure";
  }
}

/** How many frames of a stack a stored error keeps, from the top. */
export const FRAMES_KEPT = 5;
/** How deep a cause chain is followed. */
const CAUSES_KEPT = 4;

/** Where this library's modules live: `.../src/`, from this file's own URL. */
const LIBRARY_ROOT = new URL("../", import.meta.url).href;

/**
 * The text of `error` as a stored error: a {@linkcode JobFailure}'s message;
 * for another `Error`, `Name: message` (just the message for a plain
 * `Error`), its frames as described in the module doc, and `caused by: ...`
 * for each cause; a string as it is; anything else as JSON.
 */
export function errorText(error: unknown): string {
  return textOf(error, 0);
}

function textOf(error: unknown, depth: number): string {
  if (error instanceof JobFailure) return error.message;
  if (error instanceof Error) {
    const head = error.name && error.name !== "Error"
      ? `${error.name}: ${error.message}`
      : error.message;
    const frames = depth === 0 && typeof error.stack === "string" && !isStackOverflow(error)
      ? framesOf(error.stack)
      : [];
    const cause = error.cause !== undefined && depth < CAUSES_KEPT
      ? `\ncaused by: ${textOf(error.cause, depth + 1)}`
      : "";
    return [head, ...frames].join("\n") + cause;
  }
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** Whether `error` is the runtime's stack overflow (V8's RangeError). */
function isStackOverflow(error: Error): boolean {
  return error instanceof RangeError && error.message === "Maximum call stack size exceeded";
}

type FrameKind = "user" | "library" | "engine" | "neutral";

/**
 * The frames of `stack` a stored error keeps: the engine's dropped, the
 * stack cut at the first library frame below a user frame, the first
 * {@linkcode FRAMES_KEPT} of the rest.
 */
export function framesOf(stack: string): string[] {
  const frames = stack.split("\n")
    .filter((line) => /^\s+at /.test(line))
    .map((line) => ({ line, kind: frameKind(line) }))
    .filter((frame) => frame.kind !== "engine");
  const firstUser = frames.findIndex((frame) => frame.kind === "user");
  const below = firstUser === -1
    ? -1
    : frames.findIndex((frame, i) => i > firstUser && frame.kind === "library");
  const kept = below === -1 ? frames : frames.slice(0, below);
  return kept.slice(0, FRAMES_KEPT).map((frame) => frame.line);
}

/** Whose code a stack line names: `at name (location)` or `at location`. */
function frameKind(line: string): FrameKind {
  const body = line.trim().replace(/^at (?:async )?/, "");
  const location = /\(([^()]*)\)$/.exec(body)?.[1] ?? body;
  if (/^(?:ext|node):/.test(location)) return "engine";
  if (location.startsWith(LIBRARY_ROOT)) return "library";
  // `<anonymous>`, `native`, `index 0` (Promise.all): no file of anyone's.
  if (!/:\d+(?::\d+)?$/.test(location)) return "neutral";
  return "user";
}
