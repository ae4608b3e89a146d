/**
 * Text helpers of the dashboard: stored text made safe for one cell, fixed
 * widths, instants, state colours and sparklines (ages and spans are
 * `src/text/durations.ts`'s). Pure: no terminal, no store, no machine time.
 *
 * @module
 */

import { localBeside } from "../schedule/describe.ts";
import { escapeControl } from "../text/escape.ts";
import { describeLocation, isPostgresLocation } from "../store/location.ts";
import type { IngestRunState } from "../ingest/types.ts";
import type { JobState } from "../kernel/types.ts";
import type { RunState, StepState } from "../workflow/types.ts";

/**
 * Stored text for one cell of one line: control characters (escape and
 * OSC sequences start with one) shown as `\x1b`, newlines and tabs as `\n`
 * and `\t`, so nothing from the store can move the cursor, clear the
 * screen, set the title or write the clipboard, nor break a row in two.
 */
export function clean(text: string): string {
  return escapeControl(text).replaceAll("\n", "\\n").replaceAll("\t", "\\t");
}

/** The first line of stored text, cleaned. */
export function firstLine(text: string): string {
  return clean(text.split("\n", 1)[0] ?? "");
}

/** At most `width` characters (code points), marked with `…` when cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return "";
  const chars = Array.from(text);
  return chars.length <= width ? text : `${chars.slice(0, width - 1).join("")}…`;
}

/** Exactly `width` characters: cut with `…`, or padded with spaces (on the left with `right`). */
export function fit(text: string, width: number, right = false): string {
  const cut = truncate(text, width);
  const pad = " ".repeat(Math.max(0, width - Array.from(cut).length));
  return right ? pad + cut : cut + pad;
}

/**
 * `text` in at most `width` characters with `…` in its middle: the last
 * `tail` characters kept whole when they fit beside `…` and one character
 * of the start, else as much of the end as fits.
 */
export function elideMiddle(text: string, width: number, tail: number): string {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  if (width <= 1) return truncate(text, width);
  const kept = Math.min(tail, chars.length);
  if (width < kept + 2) return `…${chars.slice(chars.length - (width - 1)).join("")}`;
  return `${chars.slice(0, width - 1 - kept).join("")}…${
    chars.slice(chars.length - kept).join("")
  }`;
}

/**
 * A store's location in at most `width` characters, keeping what tells
 * stores apart. A PostgreSQL URL (never with its password or a secret
 * parameter: see `describeLocation`) sheds, until it fits, its other query
 * parameters, its user, its port and its scheme, keeping host, database and
 * `?schema=`; then the middle of its host, then of its database, go
 * (`db-pr…e.com/jobs?schema=billing`, `d…/jobs?schema=billing`), and below that what fits before
 * the schema stays (`…jobs?schema=billing`). A SQLite path loses its middle
 * and keeps its file name (`/home/…/jobs.db`).
 */
export function fitLocation(location: string, width: number): string {
  const shown = describeLocation(location);
  if (length(shown) <= width) return shown;
  const parts = isPostgresLocation(shown) ? postgresParts(shown) : null;
  if (parts === null) return elideMiddle(shown, width, length(shown.replace(/^.*\//s, "")) + 1);
  const { scheme, user, host, port, db, schema } = parts;
  const forms = [
    `${scheme}${user}${host}${port}${db}${schema}`,
    `${scheme}${host}${port}${db}${schema}`,
    `${scheme}${host}${db}${schema}`,
  ];
  const fits = forms.find((form) => length(form) <= width);
  if (fits !== undefined) return fits;
  // The host's middle first, then the database's, each down to 5
  // characters, then to 2 (`d…`).
  let [h, d] = [host, db.slice(1)];
  const compact = () => `${h}${d === "" ? "" : `/${d}`}${schema}`;
  const squeeze = (part: string, floor: number) => {
    const to = Math.max(Math.min(length(part), floor), length(part) - (length(compact()) - width));
    return elideMiddle(part, to, Math.floor((to - 1) / 2));
  };
  for (const floor of [5, 2]) {
    h = squeeze(h, floor);
    d = squeeze(d, floor);
    if (length(compact()) <= width) return compact();
  }
  // Too narrow for a piece of each: the schema, and what fits before it.
  return elideMiddle(`${host}${db}${schema}`, width, length(schema));
}

/**
 * The width of a location's shortest form that still tells which store it
 * is, at most 30: a PostgreSQL store's `host/db?schema=name`, a file's
 * `…/name`.
 */
export function tellingWidth(location: string): number {
  const shown = describeLocation(location);
  if (isPostgresLocation(shown)) return length(fitLocation(location, 30));
  return Math.min(30, length(shown.replace(/^.*\//s, "")) + 2);
}

/** The number of characters (code points) of `text`. */
function length(text: string): number {
  return Array.from(text).length;
}

/**
 * The pieces of a described PostgreSQL URL, each with its separator
 * (`postgres://`, `user@`, `:5432`, `/db`, `?schema=s`, empty when absent),
 * or null when it does not parse.
 */
function postgresParts(shown: string) {
  let url: URL;
  try {
    url = new URL(shown);
  } catch {
    return null;
  }
  const schema = url.searchParams.get("schema");
  return {
    scheme: `${url.protocol}//`,
    user: url.username === "" ? "" : `${url.username}@`,
    host: url.hostname,
    port: url.port === "" ? "" : `:${url.port}`,
    db: url.pathname === "/" ? "" : url.pathname,
    schema: schema === null ? "" : `?schema=${schema}`,
  };
}

/** An instant as ISO-8601 UTC with ms, or `-`. */
export function iso(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString();
}

/**
 * An instant as ISO-8601 UTC with ms and, for a `zone` other than UTC, its
 * wall clock and offset there:
 * `2026-03-08T07:00:00.000Z (03:00 -04:00 America/New_York)`, without the
 * zone's name unless `named`; `-` for none.
 */
export function isoIn(ms: number | null, zone: string | null, named = true): string {
  const local = ms === null || zone === null ? null : localBeside(ms, zone, named);
  return local === null ? iso(ms) : `${iso(ms)} (${local})`;
}

/** The colour of each state: where it helps, never the only sign (the state is always written). */
export const STATE_COLOR: Record<JobState, string> = {
  scheduled: "blue",
  available: "cyan",
  executing: "yellow",
  retryable: "magenta",
  completed: "green",
  cancelled: "gray",
  discarded: "red",
};

/** The colour of each workflow run's state (the state is always written too). */
export const RUN_STATE_COLOR: Record<RunState, string> = {
  running: "yellow",
  compensating: "magenta",
  completed: "green",
  compensated: "blue",
  failed: "red",
  cancelled: "gray",
};

/** The colour of each pipeline run's state (the state is always written too). */
export const INGEST_RUN_STATE_COLOR: Record<IngestRunState, string> = {
  running: "yellow",
  completed: "green",
  paged: "magenta",
  failed: "red",
  cancelled: "gray",
};

/**
 * The colour of each step's state; a waiting step has none and is drawn
 * dim instead: nothing has happened to it yet.
 */
export const STEP_STATE_COLOR: Record<StepState, string | undefined> = {
  waiting: undefined,
  running: "yellow",
  completed: "green",
  discarded: "red",
  cancelled: "gray",
};

/** Short state names for narrow columns. */
export const STATE_SHORT: Record<JobState, string> = {
  scheduled: "sched",
  available: "avail",
  executing: "exec",
  retryable: "retry",
  completed: "done",
  cancelled: "cancl",
  discarded: "dead",
};

const BARS = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/**
 * `values` (oldest first) as `width` bar characters: consecutive values are
 * summed into each cell, the tallest cell is a full bar, an empty one a
 * space, and any non-zero cell at least the lowest bar.
 */
export function sparkline(values: number[], width: number): string {
  if (width <= 0) return "";
  const cells = new Array<number>(width).fill(0);
  values.forEach((v, i) => {
    const cell = Math.min(width - 1, Math.floor((i * width) / Math.max(1, values.length)));
    cells[cell]! += v;
  });
  const max = Math.max(...cells);
  return cells.map((c) => {
    if (c <= 0 || max <= 0) return " ";
    return BARS[Math.max(0, Math.ceil((c / max) * BARS.length) - 1)]!;
  }).join("");
}

/** `1 job`, `2 jobs`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** `950`, `1.2k`, `34k`, `1.5M`: a count in at most 4 characters. */
export function compact(n: number): string {
  if (n < 1000) return String(n);
  if (n < 10_000) return `${(Math.floor(n / 100) / 10).toFixed(1)}k`;
  if (n < 1_000_000) return `${Math.floor(n / 1000)}k`;
  return `${(Math.floor(n / 100_000) / 10).toFixed(1)}M`;
}
