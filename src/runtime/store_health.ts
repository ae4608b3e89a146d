/**
 * Store health: what the runtime's steps (each producer, each plugin) saw
 * of the store on their last call. While any step's last call failed (the
 * store is locked past its busy timeout, read-only, or gone) the node is
 * degraded: `/readyz` says so, and the failures are logged at a bounded rate
 * rather than once per poll: `store.degraded` when the first step fails,
 * `store.error` at most once per `logEveryMs` while it lasts, and
 * `store.recovered` once every step has succeeded again.
 *
 * A step that fails for a reason of its own (a planner bug) degrades the
 * node too: it is not doing its work either.
 *
 * A store that is lost (its file deleted or replaced while open: a
 * {@linkcode StoreLostError}) is not an outage to ride out: it never comes
 * back, so the first such failure logs `store.degraded` with `lost: true`,
 * the node stays degraded for good, and the listeners of
 * {@linkcode StoreHealth.onLost} (the runtime, the daemon) are told once.
 *
 * Before there is a runtime, a daemon whose database server is away
 * ({@linkcode isStoreUnreachable}: refused, reset, restarting) waits for it
 * with {@linkcode openWhenReachable}: `store.waiting` once with the reason,
 * then at the same bounded rate, and `store.reachable` once it opens.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { isStoreUnreachable, StoreLostError } from "../store/errors.ts";
import { reconnectBackoff } from "../kernel/backoff.ts";
import type { Logger } from "../kernel/logger.ts";

/** Settings of {@linkcode StoreHealth}. */
export interface StoreHealthOptions {
  /** While degraded, at most one `store.error` line per this many ms of the clock. @default 30_000 */
  logEveryMs?: number;
}

/** Why the node is degraded, or that it is not. */
export type HealthStatus =
  | { ok: true }
  | {
    ok: false;
    /** Since when (clock ms) some step has been failing. */
    since: number;
    /** The step that failed first, e.g. `heartbeat` or `producer:default`. */
    source: string;
    /** That step's last error, one line. */
    error: string;
    /** The store is lost for good (see {@linkcode StoreHealth.lost}); `error` says why. */
    lost?: true;
  };

interface Failing {
  since: number;
  error: string;
}

/** Tracks the store's health as the runtime's steps see it. */
export class StoreHealth {
  #clock: Clock;
  #logger: Logger;
  #logEveryMs: number;
  #failing = new Map<string, Failing>();
  #degradedSince: number | null = null;
  #lastLogAt = -Infinity;
  /** Failures since the last line logged about them. */
  #unlogged = 0;
  /** Failures during the current outage. */
  #outageFailures = 0;
  #errors = new Map<string, number>();
  #lost: { error: StoreLostError; source: string; since: number } | null = null;
  #lostListeners = new Set<(error: StoreLostError) => void>();

  constructor(deps: { clock: Clock; logger: Logger }, options: StoreHealthOptions = {}) {
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#logEveryMs = options.logEveryMs ?? 30_000;
  }

  /** Whether some step's last store call failed, or the store is lost. */
  get degraded(): boolean {
    return this.#lost !== null || this.#failing.size > 0;
  }

  /**
   * Why the store is lost for good (its file was deleted or replaced), or
   * null while it is not.
   */
  get lost(): StoreLostError | null {
    return this.#lost?.error ?? null;
  }

  /**
   * Calls `listener` once, when a step first fails because the store is
   * lost (at once when it already is); returns the unsubscribe.
   */
  onLost(listener: (error: StoreLostError) => void): () => void {
    if (this.#lost) {
      listener(this.#lost.error);
      return () => {};
    }
    this.#lostListeners.add(listener);
    return () => this.#lostListeners.delete(listener);
  }

  /** Records that a store call of `source` failed; logs only the first and then at a bounded rate. */
  failed(source: string, error: unknown): void {
    const now = this.#clock.now();
    const text = oneLine(error);
    this.#errors.set(source, (this.#errors.get(source) ?? 0) + 1);
    const known = this.#failing.get(source);
    this.#failing.set(source, { since: known?.since ?? now, error: text });
    this.#outageFailures++;
    if (this.#lost) return; // said once; every call fails the same way until the node stops
    if (error instanceof StoreLostError) return this.#storeLost(source, error, now);
    if (this.#degradedSince === null) {
      this.#degradedSince = now;
      this.#lastLogAt = now;
      this.#unlogged = 0;
      this.#logger("store.degraded", { source, error: text });
      return;
    }
    this.#unlogged++;
    if (now - this.#lastLogAt < this.#logEveryMs) return;
    this.#logger("store.error", {
      source,
      error: text,
      failures: this.#unlogged,
      failing: [...this.#failing.keys()],
      degradedForMs: now - this.#degradedSince,
    });
    this.#lastLogAt = now;
    this.#unlogged = 0;
  }

  /** Records that a store call of `source` succeeded; the last step to recover ends the outage. */
  succeeded(source: string): void {
    // A lost store does not come back: a step that did not need it proves nothing.
    if (this.#lost || !this.#failing.delete(source) || this.#failing.size > 0) return;
    const now = this.#clock.now();
    this.#logger("store.recovered", {
      failures: this.#outageFailures,
      downMs: now - (this.#degradedSince ?? now),
    });
    this.#degradedSince = null;
    this.#outageFailures = 0;
    this.#unlogged = 0;
  }

  /** Healthy, or since when, which step and why not. */
  status(): HealthStatus {
    if (this.#lost) {
      const { source, since, error } = this.#lost;
      return { ok: false, since, source, error: error.message, lost: true };
    }
    let first: [string, Failing] | null = null;
    for (const entry of this.#failing) {
      if (first === null || entry[1].since < first[1].since) first = entry;
    }
    if (first === null) return { ok: true };
    const [source, { since, error }] = first;
    return { ok: false, since: this.#degradedSince ?? since, source, error };
  }

  /**
   * The first failure for a lost store: logged even while an outage is
   * already logged (this one is new, and final), then the listeners.
   */
  #storeLost(source: string, error: StoreLostError, now: number): void {
    this.#lost = { error, source, since: now };
    this.#degradedSince ??= now;
    this.#logger("store.degraded", { source, error: error.message, lost: true });
    for (const listener of this.#lostListeners) listener(error);
    this.#lostListeners.clear();
  }

  /** Failed store calls since start, by step. */
  errors(): { source: string; count: number }[] {
    return [...this.#errors].map(([source, count]) => ({ source, count }));
  }
}

/** The first line of an error's message: a reason fits on one line. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n", 1)[0] ?? "").trim();
}

/** Settings of {@linkcode openWhenReachable}. */
export interface OpenWhenReachableOptions<T> {
  clock: Clock;
  logger: Logger;
  /** Where the store is, credentials removed (it is logged). */
  location: string;
  /** Stops waiting (a stop signal): the result is then null. */
  signal?: AbortSignal;
  /** While waiting, at most one `store.waiting` line per this many ms of the clock. @default 30_000 */
  logEveryMs?: number;
  /** Jitter of the waits, in [0, 1). @default Math.random */
  random?: () => number;
  /** Closes what an attempt opened after the wait was stopped. */
  dispose?: (value: T) => Promise<void>;
}

/**
 * Calls `open` until it succeeds, and returns what it opened. While it
 * fails because the store cannot be reached ({@linkcode isStoreUnreachable})
 * it waits (100 ms doubling to 5 s, each jittered down by up to half) and
 * tries again, logging `store.waiting` at the first failure and then at most
 * once per `logEveryMs`; any other failure is thrown at once (a wrong
 * password does not heal by waiting). Resolves null when `signal` aborts
 * first, closing with `dispose` anything an attempt still under way opens.
 */
export async function openWhenReachable<T>(
  open: () => Promise<T>,
  options: OpenWhenReachableOptions<T>,
): Promise<T | null> {
  const { clock, logger, location, signal } = options;
  const logEveryMs = options.logEveryMs ?? 30_000;
  const random = options.random ?? Math.random;
  const began = clock.now();
  let attempts = 0;
  let loggedAt = -Infinity;
  let unlogged = 0;
  while (!signal?.aborted) {
    attempts++;
    const attempt = open();
    let outcome: { opened: T } | { failed: unknown } | null;
    try {
      outcome = await raceAbort(attempt.then((opened) => ({ opened })), signal);
    } catch (error) {
      outcome = { failed: error };
    }
    if (outcome === null) {
      attempt.then((opened) => options.dispose?.(opened)).catch(() => {});
      return null;
    }
    if ("opened" in outcome) {
      if (attempts > 1) {
        logger("store.reachable", { location, attempts, waitedMs: clock.now() - began });
      }
      return outcome.opened;
    }
    if (!isStoreUnreachable(outcome.failed)) throw outcome.failed;
    const retryInMs = reconnectBackoff(attempts, random);
    const now = clock.now();
    unlogged++;
    if (now - loggedAt >= logEveryMs) {
      logger("store.waiting", {
        location,
        error: oneLine(outcome.failed),
        attempts,
        failures: unlogged,
        waitingForMs: now - began,
        retryInMs,
      });
      loggedAt = now;
      unlogged = 0;
    }
    await clock.sleep(retryInMs, signal);
  }
  return null;
}

/** `work`'s outcome, or null as soon as `signal` aborts. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | null> {
  if (!signal) return work;
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
