/**
 * Lifeline: rescues jobs whose lease expired (their node died or lost the
 * store): back to `available` while attempts remain, else `discarded` with
 * `orphaned: lease of <node> expired`. Only expired leases are touched; a
 * live node renews its leases long before they expire. The same pass
 * returns the work items whose claim ran out ({@linkcode returnExpiredClaims}),
 * so their history says `expired` when it happened, not when someone next
 * touched the queue.
 *
 * @module
 */

import type { RescuedJob, Store } from "../store/store.ts";

/** Lifeline settings. */
export interface LifelineOptions {
  /** Most jobs rescued per transaction. @default 1000 */
  limit?: number;
}

/** What one lifeline pass did. */
export interface RescueReport {
  rescued: number;
  discarded: number;
  /** Queues that received jobs back. */
  queues: string[];
  /** Each job moved, with the node whose lease expired: the runtime logs each as `job.rescued`. */
  jobs: RescuedJob[];
}

/** One lifeline pass. */
export function rescueOrphans(
  store: Store,
  now: number,
  options: LifelineOptions = {},
): Promise<RescueReport> {
  return store.jobsRescue({ now, limit: options.limit ?? 1000 });
}

/**
 * Clears the work items' claims that ran out by `now`, recording `expired`
 * for each (the item returns to its queue); answers how many.
 */
export function returnExpiredClaims(
  store: Store,
  now: number,
  options: LifelineOptions = {},
): Promise<number> {
  return store.workItemsExpire({ now, limit: options.limit ?? 1000 });
}
