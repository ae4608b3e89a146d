/**
 * Events the runtime reports: one name and a few fields, redacted before
 * they are written anywhere. `main.ts` picks the form: JSON lines for a
 * machine (stderr is a file or a pipe), one readable line per event for a
 * person (stderr is a terminal). Both take their timestamps from the
 * injected clock.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { escapeControl } from "../text/escape.ts";
import { redact } from "./redact.ts";

/**
 * Receives runtime events (`job.start`, `job.stop`, `store.degraded`, ...).
 * Any such function is a logger; one that drops every event may say so
 * with `silent: true` (as {@linkcode silentLogger} does), and the runtime
 * then skips building the fields of its per-job events.
 */
export type Logger = ((event: string, fields: Record<string, unknown>) => void) & {
  /** Every event is dropped: callers need not build any. @default false */
  readonly silent?: boolean;
};

/** Drops every event: for tests and benchmarks. */
export const silentLogger: Logger = Object.assign(() => {}, { silent: true });

/**
 * Writes each event as one JSON line to stderr, redacted, without a
 * timestamp (for a collector that stamps lines itself). The library's
 * default is {@linkcode jsonLinesLogger} on stderr, whose lines carry `time`.
 */
export const jsonLogger: Logger = (event, fields) => {
  console.error(redact(JSON.stringify({ event, ...fields })));
};

/**
 * Each event as one JSON line, redacted, led by `time` (ISO-8601 UTC with
 * milliseconds, from `clock`): `{"time":"…","event":"job.stop","queue":"default",…}`.
 */
export function jsonLinesLogger(clock: Clock, write: (line: string) => void): Logger {
  return (event, fields) => {
    write(redact(JSON.stringify({ time: new Date(clock.now()).toISOString(), event, ...fields })));
  };
}

/** Event names are padded to this width so the fields line up. */
const EVENT_WIDTH = 14;
/** A value shown without quotes: nothing a reader could mistake for a separator. */
const BARE = /^[\w.:/@+-]+$/;

/**
 * Each event as one line a person reads, redacted, control characters
 * escaped:
 * `12:03:04.120Z job.stop       queue=default job=42 worker=jobs.command outcome=completed 120ms`.
 * The time of day is UTC from `clock`; fields named `…Ms` read as
 * `wait=35ms`, and `durationMs` closes the line.
 */
export function humanLogger(clock: Clock, write: (line: string) => void): Logger {
  return (event, fields) => write(formatHuman(clock.now(), event, fields));
}

/** One line of {@linkcode humanLogger}. */
function formatHuman(now: number, event: string, fields: Record<string, unknown>): string {
  const time = new Date(now).toISOString().slice(11);
  const parts = [time, event.padEnd(EVENT_WIDTH)];
  let duration: string | null = null;
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (key === "durationMs" && typeof value === "number") {
      duration = formatMs(value);
    } else if (key.endsWith("Ms") && key.length > 2 && typeof value === "number") {
      parts.push(`${key.slice(0, -2)}=${formatMs(value)}`);
    } else {
      parts.push(`${key}=${formatValue(value)}`);
    }
  }
  if (duration !== null) parts.push(duration);
  // escapeControl keeps tabs and line feeds; one event stays one line.
  return escapeControl(redact(parts.join(" ")))
    .replace(/\n/g, "\\n").replace(/\t/g, "\\t");
}

function formatMs(ms: number): string {
  return `${Math.round(ms * 100) / 100}ms`;
}

function formatValue(value: unknown): string {
  if (typeof value === "string") return BARE.test(value) ? value : JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null) {
    return String(value);
  }
  if (value instanceof Error) return JSON.stringify(value.message);
  return JSON.stringify(value) ?? String(value);
}
