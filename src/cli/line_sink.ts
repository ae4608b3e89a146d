/**
 * Lines bound for a stream (the daemon's log on stderr), written together:
 * one write per turn of the event loop instead of one per line. A busy
 * daemon logs two events per job; a write of its own for each cost more
 * than the job's SQL (12 us a line through `console.error`, 5 us buffered,
 * `deno run -A` of a loop of jsonLinesLogger lines to a pipe).
 *
 * The lines of the current turn are written at its end, when the buffer
 * passes {@linkcode FLUSH_BYTES}, and before the process ends (`unload`, and
 * an uncaught error or rejection, which end it).
 *
 * @module
 */

import { setImmediate } from "node:timers";

/** A buffer this large is written at once, without waiting for the turn to end. */
export const FLUSH_BYTES = 64 * 1024;

/** Where {@linkcode lineSink} writes: returns how many bytes it took, as `Deno.stderr.writeSync`. */
export type WriteBytes = (bytes: Uint8Array) => number;

/** Collects lines and writes them in one call per turn of the event loop. */
export interface LineSink {
  /** Queues `line` (a newline is added). */
  write(line: string): void;
  /** Writes everything queued, now. */
  flush(): void;
}

const encoder = new TextEncoder();

/** A {@linkcode LineSink} over `write`. */
export function lineSink(write: WriteBytes): LineSink {
  let lines: string[] = [];
  let size = 0;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (lines.length === 0) return;
    const bytes = encoder.encode(lines.join("\n") + "\n");
    lines = [];
    size = 0;
    // A pipe may take part of a large write; the rest follows.
    for (let at = 0; at < bytes.length;) at += write(bytes.subarray(at));
  };
  return {
    write(line) {
      lines.push(line);
      size += line.length + 1;
      if (size >= FLUSH_BYTES) return flush();
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}

/** Flushes `sink` before the process ends, however it ends. */
export function flushOnExit(sink: LineSink): void {
  for (const event of ["unload", "error", "unhandledrejection"]) {
    globalThis.addEventListener(event, () => sink.flush());
  }
}
