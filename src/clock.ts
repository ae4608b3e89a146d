/**
 * The only place that reads the machine's time. Everything else receives a
 * {@linkcode Clock} and asks it: instants are UTC epoch milliseconds.
 *
 * @module
 */

/** A source of UTC instants and of waits, injected everywhere time matters. */
export interface Clock {
  /** The current instant in UTC epoch milliseconds. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds of this clock's time, or early (without
   * rejecting) when `signal` aborts: callers check the signal themselves.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The longest delay one timer is given. `setTimeout` takes at most 2^31-1 ms
 * (about 24.8 days) and fires at once for anything longer, so a 40-day
 * timeout would end a job after a millisecond: longer waits chain timers.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The real clock: wall time from the system, waits from timers. */
export class SystemClock implements Clock {
  readonly #maxTimerMs: number;

  constructor(options: {
    /** The longest single timer; tests shorten it. @default MAX_TIMER_MS */
    maxTimerMs?: number;
  } = {}) {
    this.#maxTimerMs = Math.min(MAX_TIMER_MS, Math.max(1, options.maxTimerMs ?? MAX_TIMER_MS));
  }

  now(): number {
    return Date.now();
  }

  /**
   * Waits `ms` of wall time, however long: a wait beyond one timer's reach
   * is a chain of timers, each re-reading the time, so it ends at its
   * instant (never early). `Infinity` waits until `signal` aborts; a
   * negative or NaN `ms` is 0.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    const wait = Number.isNaN(ms) ? 0 : Math.max(0, ms);
    const until = Date.now() + wait;
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const arm = (left: number) => {
        timer = setTimeout(() => {
          const rest = until - Date.now();
          if (rest > 0) arm(rest);
          else done();
        }, Math.min(left, this.#maxTimerMs));
      };
      arm(wait);
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}

interface Sleeper {
  until: number;
  resolve: () => void;
}

/**
 * A clock for tests: time stands still until {@linkcode FakeClock.advance}
 * moves it, and sleepers wake when their instant is reached.
 */
export class FakeClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  /** @param start the first instant, UTC epoch ms @default 2026-01-01T00:00:00Z */
  constructor(start: number = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        until: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener("abort", sleeper.resolve);
          this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
          resolve();
        },
      };
      this.#sleepers.push(sleeper);
      signal?.addEventListener("abort", sleeper.resolve, { once: true });
    });
  }

  /** Moves time forward by `ms` and wakes every sleeper whose instant has come. */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /** Moves time to `instant` (never backwards) and wakes due sleepers. */
  set(instant: number): void {
    if (instant < this.#now) {
      throw new Error(`FakeClock cannot go back from ${this.#now} to ${instant}`);
    }
    this.#now = instant;
    for (const s of [...this.#sleepers]) if (s.until <= instant) s.resolve();
  }

  /** How many sleeps are pending: lets a test wait until a loop is parked. */
  get sleepers(): number {
    return this.#sleepers.length;
  }
}

/**
 * Lets the rest of the process run (and another process take the write lock)
 * before a long loop's next batch. A macrotask, not a microtask: a resolved
 * promise (every call of the synchronous SQLite store answers one) would run
 * the next batch before any timer, request or I/O callback of the process.
 * Not a wait for time: it reads and waits for no clock.
 */
export function yieldToOthers(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
