/**
 * When a retryable job tries again, in one phrase for every view (`jobs
 * workflow show`, `jobs show`, the TUI): the absolute UTC instant, to the
 * second, and how far it is from now, so an operator reading "1/2 attempts"
 * knows whether the next one is seconds or days away.
 *
 * @module
 */

/** Largest first: the phrase keeps the two largest units that are not zero. */
const UNITS: [string, number][] = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["min", 60_000],
  ["s", 1_000],
];

/**
 * `next attempt 2026-12-04T17:20:05Z, in 35 s` (`..., 5 s ago` once due and
 * not yet claimed, `..., now` within a second); without `now`, the instant
 * alone.
 *
 * @param at the job's `scheduled_at` (UTC ms)
 * @param now the clock's now (UTC ms), for the relative part
 */
export function nextAttemptText(at: number, now?: number): string {
  return `next attempt ${nextAttemptWhen(at, now)}`;
}

/** {@linkcode nextAttemptText} without its words, for a field already labelled: `2026-12-04T17:20:05Z, in 35 s`. */
export function nextAttemptWhen(at: number, now?: number): string {
  const instant = new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (now === undefined) return instant;
  const diff = at - now;
  if (Math.abs(diff) < 1_000) return `${instant}, now`;
  const span = spanText(Math.abs(diff));
  return diff > 0 ? `${instant}, in ${span}` : `${instant}, ${span} ago`;
}

/** `35 s`, `6 min 40 s`, `6 d 12 h`: the two largest units, rounded down. */
function spanText(ms: number): string {
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of UNITS) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0) parts.push(`${count} ${unit}`);
    else if (parts.length > 0) break;
    if (parts.length === 2) break;
  }
  return parts.join(" ");
}
