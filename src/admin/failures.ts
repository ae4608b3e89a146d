/**
 * Failed credentials counted per key, on the injected clock: past
 * {@linkcode FailureLimitOptions.limit} failures in a window, the key is
 * refused until the window ends, whatever it presents, so a guesser cannot
 * try secrets faster than that. The API counts bad bearer tokens per source
 * address (`src/http/api/app.ts`, 429); person sign-in counts failed
 * passwords per name (`SignInLimiter`, `people.ts`).
 *
 * @module
 */

import type { Clock } from "../clock.ts";

/** Options of a {@linkcode FailureLimiter}. */
export interface FailureLimitOptions {
  /** Failures a key (an address, a name) may have in one window. @default 10 */
  limit?: number;
  /** The window's length, in ms. @default 60_000 */
  windowMs?: number;
  /** Keys remembered at most; the oldest window is forgotten first. @default 10_000 */
  maxAddresses?: number;
}

/** Counts failures per key (an address, a name); refuses a key past its limit until its window ends. */
export class FailureLimiter {
  readonly #clock: Clock;
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #max: number;
  readonly #seen = new Map<string, { since: number; count: number }>();

  constructor(clock: Clock, options: FailureLimitOptions = {}) {
    this.#clock = clock;
    this.#limit = options.limit ?? 10;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#max = options.maxAddresses ?? 10_000;
  }

  /** The ms until `address` may try again, or 0 when it may now. */
  blockedFor(address: string): number {
    const entry = this.#current(address);
    if (!entry || entry.count < this.#limit) return 0;
    return entry.since + this.#windowMs - this.#clock.now();
  }

  /** Records one failed attempt of `address`. */
  fail(address: string): void {
    const entry = this.#current(address);
    if (entry) {
      entry.count++;
      return;
    }
    if (this.#seen.size >= this.#max) this.#seen.delete(this.#seen.keys().next().value!);
    this.#seen.set(address, { since: this.#clock.now(), count: 1 });
  }

  #current(address: string): { since: number; count: number } | undefined {
    const entry = this.#seen.get(address);
    if (entry && entry.since + this.#windowMs <= this.#clock.now()) {
      this.#seen.delete(address);
      return undefined;
    }
    return entry;
  }
}
