/**
 * When a retryable job tries again, in one phrase for every view (`jobs
 * workflow show`, `jobs show`, the TUI): the absolute UTC instant, to the
 * second, and how far it is from now, so an operator reading "1/2 attempts"
 * knows whether the next one is seconds or days away.
 *
 * @module
 */

import { ago } from "./durations.ts";

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
  // `in 35 s`, `6 min 40 s ago`, `now`: the two largest units, rounded down.
  return `${instant}, ${ago(at, now, { spaced: true })}`;
}
