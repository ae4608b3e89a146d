/**
 * Durations, once: the units every part of the program writes, the two
 * syntaxes people write durations in, and the ways a number of
 * milliseconds is written back.
 *
 * - Read: {@linkcode tryParseDuration} takes `schedules.yaml`'s form
 *   (`250ms`, `90s`, `15m`, `1h30m`, `7d`, `2w`: whole numbers, units
 *   largest first, each at most once); {@linkcode tryParseDurationOrIso}
 *   takes that or ISO 8601 (`PT15M`, `P7D`), as a setting's value may be.
 *   Zero, negative and unit-less values are refused, so that `every: 0s`
 *   or `timeout: 30` never reach the engine as a silent surprise.
 * - Write exactly, so it reads back the same: {@linkcode formatDuration}
 *   (`1h30m`, `1w`; from days down with `largest: "d"`, `366d`).
 * - Write roughly, for a person: {@linkcode span} (`1h5m`, or `6 min 40 s`
 *   spaced), {@linkcode ago} (`12s ago`, `in 3m`, `now`), and
 *   {@linkcode inOneUnit} (`15m`, `2h`, `90s`).
 *
 * @module
 */

/** A unit of time, as durations write it. */
export type Unit = "w" | "d" | "h" | "m" | "s" | "ms";

/**
 * Every unit, largest first (the order a duration writes them in), with its
 * length and its name in a spaced span (`6 min 40 s`).
 */
const UNITS: ReadonlyArray<{ readonly unit: Unit; readonly ms: number; readonly spaced: string }> =
  [
    { unit: "w", ms: 7 * 86_400_000, spaced: "w" },
    { unit: "d", ms: 86_400_000, spaced: "d" },
    { unit: "h", ms: 3_600_000, spaced: "h" },
    { unit: "m", ms: 60_000, spaced: "min" },
    { unit: "s", ms: 1_000, spaced: "s" },
    { unit: "ms", ms: 1, spaced: "ms" },
  ];

/** Milliseconds in one `unit`: `msPer("d")` is 86_400_000. */
export function msPer(unit: Unit): number {
  return UNITS.find((u) => u.unit === unit)!.ms;
}

/** The units from `largest` down to `smallest`, largest first. */
function unitsFrom(largest: Unit, smallest: Unit) {
  return UNITS.slice(
    UNITS.findIndex((u) => u.unit === largest),
    UNITS.findIndex((u) => u.unit === smallest) + 1,
  );
}

// ------------------------------------------------------------------- read

// Longest names first (`ms` before `m` and `s`) so that the alternation
// takes the longest unit.
const PART = new RegExp(
  `(\\d+)(${UNITS.map((u) => u.unit).sort((a, b) => b.length - a.length).join("|")})`,
  "y",
);

/**
 * The outcome of {@linkcode tryParseDuration}: milliseconds, or why not, as
 * the end of a sentence that starts with the duration's name
 * (`must be more than zero`).
 */
export type DurationResult = { ok: true; ms: number } | { ok: false; reason: string };

/**
 * Parses a duration as `schedules.yaml` writes it into milliseconds without
 * throwing.
 *
 * @example
 * ```ts
 * tryParseDuration("1h30m"); // { ok: true, ms: 5_400_000 }
 * tryParseDuration("0s"); // { ok: false, reason: "must be more than zero" }
 * ```
 */
export function tryParseDuration(text: string): DurationResult {
  const shape = `must be a number with a unit, such as "250ms", "90s", "15m", "1h30m" or "7d"`;
  if (typeof text !== "string" || text.trim() === "") return { ok: false, reason: shape };
  const source = text.trim();
  if (source.startsWith("-")) return { ok: false, reason: "must be more than zero" };
  let ms = 0;
  let at = 0;
  let lastRank = -1;
  while (at < source.length) {
    PART.lastIndex = at;
    const match = PART.exec(source);
    if (!match) return { ok: false, reason: shape };
    const [whole, digits, unit] = match as unknown as [string, string, string];
    const rank = UNITS.findIndex((u) => u.unit === unit);
    if (rank <= lastRank) {
      return { ok: false, reason: "must give units from largest to smallest, each once" };
    }
    lastRank = rank;
    ms += Number(digits) * UNITS[rank]!.ms;
    at += whole.length;
  }
  if (!Number.isSafeInteger(ms)) return { ok: false, reason: "is too long" };
  if (ms <= 0) return { ok: false, reason: "must be more than zero" };
  return { ok: true, ms };
}

const SETTING_SHAPE = `must be a duration such as "30s", "10m", "1h30m", "7d", "PT15M" or "P7D"`;

/** `PT15M`, `P7D`, `P1DT12H`, `PT0.5S`; weeks too. Years and months have no fixed length. */
const ISO_DURATION =
  /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:[.,]\d{1,3})?)S)?)?$/i;

function tryParseIsoDuration(text: string): DurationResult {
  if (/^P(\d+Y|\d+M)/i.test(text)) {
    return { ok: false, reason: `must not count months or years, whose length varies` };
  }
  const match = ISO_DURATION.exec(text);
  if (!match || /^PT?$/i.test(text) || /T$/i.test(text)) {
    return { ok: false, reason: SETTING_SHAPE };
  }
  const [, w, d, h, m, s] = match;
  const ms = Number(w ?? 0) * msPer("w") + Number(d ?? 0) * msPer("d") +
    Number(h ?? 0) * msPer("h") + Number(m ?? 0) * msPer("m") +
    Math.round(Number((s ?? "0").replace(",", ".")) * msPer("s"));
  if (!Number.isSafeInteger(ms)) return { ok: false, reason: "is too long" };
  if (ms <= 0) return { ok: false, reason: "must be more than zero" };
  return { ok: true, ms };
}

/**
 * Parses a duration as a setting's value may be written: as
 * {@linkcode tryParseDuration} reads it, or ISO 8601 (`PT15M`, `P7D`,
 * `PT0.5S`; no months or years). A number is refused: it has no unit.
 *
 * @example
 * ```ts
 * tryParseDurationOrIso("PT15M"); // { ok: true, ms: 900_000 }
 * tryParseDurationOrIso("1h30m"); // { ok: true, ms: 5_400_000 }
 * ```
 */
export function tryParseDurationOrIso(value: unknown): DurationResult {
  if (typeof value !== "string") {
    return { ok: false, reason: `${SETTING_SHAPE}; a bare number has no unit` };
  }
  const text = value.trim();
  if (/^P/i.test(text)) return tryParseIsoDuration(text);
  const result = tryParseDuration(text);
  if (result.ok) return result;
  return {
    ok: false,
    reason: result.reason.startsWith("must be a number with a unit")
      ? SETTING_SHAPE
      : result.reason,
  };
}

/** Raised by {@linkcode parseDuration} and {@linkcode formatDuration} for a duration they refuse. */
export class DurationError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = "DurationError";
  }
}

/**
 * Parses a duration as `schedules.yaml` writes it into milliseconds.
 *
 * @throws {DurationError} when the text is empty, zero, negative, has no unit
 * or is not a duration at all
 */
export function parseDuration(text: string): number {
  const result = tryParseDuration(text);
  if (!result.ok) throw new DurationError(`duration ${JSON.stringify(text)} ${result.reason}`);
  return result.ms;
}

// ------------------------------------------------------------------ write

/**
 * Writes milliseconds the way `schedules.yaml` does, largest units first:
 * `5_400_000` -> `1h30m`, `604_800_000` -> `1w`; with `largest: "d"`, days
 * are the largest unit, so a year reads `366d`. The inverse of
 * {@linkcode parseDuration} for positive whole milliseconds.
 *
 * @throws {DurationError} when `ms` is not a positive whole number
 */
export function formatDuration(ms: number, largest: "w" | "d" = "w"): string {
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new DurationError(`cannot format ${ms} as a duration, expected a positive whole ms`);
  }
  let rest = ms;
  let text = "";
  for (const { unit, ms: size } of unitsFrom(largest, "ms")) {
    const count = Math.floor(rest / size);
    if (count > 0) {
      text += `${count}${unit}`;
      rest -= count * size;
    }
  }
  return text;
}

/** How {@linkcode span} writes a span. */
export interface SpanStyle {
  /** How many units at most: `1h5m` with 2, `1h` with 1. @default 2 */
  parts?: 1 | 2;
  /** `6 min 40 s`, for a sentence, rather than `6m40s`. @default false */
  spaced?: boolean;
}

/**
 * A span as a person reads it, rounded down to its largest units, days to
 * seconds, leaving out a zero after the first: `12s`, `3m`, `1h5m`, `2d3h`,
 * `1d` (for 1d0h5m); `0s` under a second; spaced, `35 s`, `6 min 40 s`. The
 * sign is ignored.
 */
export function span(ms: number, style: SpanStyle = {}): string {
  const { parts = 2, spaced = false } = style;
  let rest = Math.abs(ms);
  if (rest < msPer("s")) return spaced ? "0 s" : "0s";
  const words: string[] = [];
  for (const { unit, ms: size, spaced: name } of unitsFrom("d", "s")) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0) words.push(spaced ? `${count} ${name}` : `${count}${unit}`);
    else if (words.length > 0) break;
    if (words.length === parts) break;
  }
  return words.join(spaced ? " " : "");
}

/**
 * An instant from `now`, as a {@linkcode span}: `12s ago`, `in 3m`,
 * `1h5m ago`, `now` (within a second); `-` for no instant.
 */
export function ago(ms: number | null, now: number, style: SpanStyle = {}): string {
  if (ms === null) return "-";
  if (Math.abs(now - ms) < msPer("s")) return "now";
  return ms <= now ? `${span(now - ms, style)} ago` : `in ${span(ms - now, style)}`;
}

/**
 * A span in one unit, the largest of hours and minutes that divides it,
 * else seconds (with a fraction): `2h`, `90m`, `45s`, `1.5s`.
 */
export function inOneUnit(ms: number): string {
  for (const { unit, ms: size } of unitsFrom("h", "m")) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms / msPer("s")}s`;
}
