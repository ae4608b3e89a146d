/**
 * How long a failed job waits before its next attempt.
 *
 * @module
 */

/** Chooses the delay before attempt `attempt + 1`, in ms, after attempt `attempt` failed. */
export type Backoff = (attempt: number, random: () => number) => number;

/**
 * The default: `attempt^4 + 15 s + random(0..30 * attempt) s`, as Sidekiq
 * and Oban use: quick first retries, about a day between the last of 20.
 */
export const defaultBackoff: Backoff = (attempt, random) => {
  const seconds = attempt ** 4 + 15 + random() * 30 * attempt;
  return Math.round(seconds * 1000);
};

/**
 * How long to wait before trying an unreachable store again, after a number of
 * failures in a row: 100 ms doubling to 5 s, each jittered down by up to
 * half (opening the daemon's store, reconnecting PostgreSQL sessions).
 */
export const reconnectBackoff: Backoff = exponentialBackoff(100, 5_000);

/**
 * Exponential backoff with full jitter, capped: for workers that want a
 * different curve than the default.
 *
 * @param baseMs the delay after the first failure @default 1000
 * @param maxMs the longest delay @default 3_600_000
 */
export function exponentialBackoff(baseMs = 1000, maxMs = 3_600_000): Backoff {
  return (attempt, random) => {
    const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + random() * (ceiling / 2));
  };
}
