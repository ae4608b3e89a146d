/**
 * Why a report run must stop, said once by whoever sees it first (an
 * operator's cancel, the runtime limit, a lost lease) and read by the
 * export loop before each batch, in this thread or, through a shared
 * flag, in a SQLite export's thread.
 *
 * @module
 */

/** The reasons a run stops, by their index in the shared flag. */
export const STOP_REASONS = ["", "cancelled", "max_runtime", "lease-lost", "shutdown"] as const;
export type StopReason = Exclude<typeof STOP_REASONS[number], "">;

/** One run's stop switch. */
export class StopSwitch {
  /** Int32 slot 0 holds the index of the reason, 0 while the run goes on. */
  readonly flag: SharedArrayBuffer = new SharedArrayBuffer(4);
  readonly #view = new Int32Array(this.flag);
  readonly #listeners = new Set<(why: StopReason) => void>();

  /** The reason given first, or null. */
  get reason(): StopReason | null {
    const i = Atomics.load(this.#view, 0);
    return i === 0 ? null : STOP_REASONS[i] as StopReason;
  }

  /** Stops the run for `why`, unless it was already stopped (the first reason stays). */
  stop(why: StopReason): void {
    if (Atomics.compareExchange(this.#view, 0, 0, STOP_REASONS.indexOf(why)) !== 0) return;
    for (const listener of this.#listeners) listener(why);
  }

  /** Calls `listener` when the run is stopped; returns the unsubscribe function. */
  onStop(listener: (why: StopReason) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
