/**
 * Durations as `schedules.yaml` writes them: `250ms`, `90s`, `15m`, `1h30m`,
 * `7d`. Whole numbers only, units largest first, each unit at most once.
 * Zero, negative and unit-less values are refused, so that `every: 0s` or
 * `timeout: 30` never reach the engine as a silent surprise.
 *
 * @module
 */

/** Milliseconds per unit, largest first: the order units must appear in. */
const UNITS: ReadonlyArray<readonly [unit: string, ms: number]> = [
  ["w", 7 * 24 * 3_600_000],
  ["d", 24 * 3_600_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
  ["ms", 1],
];

// "ms" before "m" and "s" so that the alternation takes the longest unit.
const PART = /(\d+)(ms|w|d|h|m|s)/y;

/**
 * The outcome of {@linkcode tryParseDuration}: milliseconds, or why not, as
 * the end of a sentence that starts with the duration's name
 * (`must be more than zero`).
 */
export type DurationResult = { ok: true; ms: number } | { ok: false; reason: string };

/**
 * Parses a duration into milliseconds without throwing.
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
    const rank = UNITS.findIndex(([u]) => u === unit);
    if (rank <= lastRank) {
      return { ok: false, reason: "must give units from largest to smallest, each once" };
    }
    lastRank = rank;
    ms += Number(digits) * UNITS[rank]![1];
    at += whole.length;
  }
  if (!Number.isSafeInteger(ms)) return { ok: false, reason: "is too long" };
  if (ms <= 0) return { ok: false, reason: "must be more than zero" };
  return { ok: true, ms };
}

/** Raised by {@linkcode parseDuration} for a duration it refuses. */
export class DurationError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = "DurationError";
  }
}

/**
 * Parses a duration into milliseconds.
 *
 * @throws {DurationError} when the text is empty, zero, negative, has no unit
 * or is not a duration at all
 */
export function parseDuration(text: string): number {
  const result = tryParseDuration(text);
  if (!result.ok) throw new DurationError(`duration ${JSON.stringify(text)} ${result.reason}`);
  return result.ms;
}

/**
 * Writes milliseconds the way `schedules.yaml` does, largest units first:
 * `5_400_000` -> `1h30m`. The inverse of {@linkcode parseDuration} for
 * positive whole milliseconds.
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new DurationError(`cannot format ${ms} as a duration, expected a positive whole ms`);
  }
  let rest = ms;
  let text = "";
  for (const [unit, size] of UNITS) {
    const count = Math.floor(rest / size);
    if (count > 0) {
      text += `${count}${unit}`;
      rest -= count * size;
    }
  }
  return text;
}
