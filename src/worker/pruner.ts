/**
 * Pruner: deletes final jobs (and their attempts) older than their retention,
 * in small batches, each its own short transaction, so it never holds the
 * write lock for long.
 *
 * @module
 */

import type { Store } from "../store/store.ts";

const DAY = 24 * 60 * 60 * 1000;

/** Pruner settings. */
export interface PrunerOptions {
  /**
   * How long final jobs are kept, by state, in ms.
   * @default { completed: 7 days, cancelled: 30 days, discarded: 30 days }
   */
  retention?: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
  /** Rows per transaction. @default 1000 */
  batch?: number;
  /** Transactions per pass; the rest waits for the next pass. @default 20 */
  maxBatches?: number;
}

/** Default retention per final state. */
export const DEFAULT_RETENTION = { completed: 7 * DAY, cancelled: 30 * DAY, discarded: 30 * DAY };

/** One pruner pass: returns how many jobs it deleted. */
export async function pruneJobs(
  store: Store,
  now: number,
  options: PrunerOptions = {},
): Promise<{ deleted: number }> {
  const retention = { ...DEFAULT_RETENTION, ...options.retention };
  const before = {
    completed: now - retention.completed,
    cancelled: now - retention.cancelled,
    discarded: now - retention.discarded,
  };
  const batch = options.batch ?? 1000;
  let deleted = 0;
  for (let i = 0; i < (options.maxBatches ?? 20); i++) {
    const n = await store.jobsPrune({ before, limit: batch });
    deleted += n;
    if (n < batch) break;
    // Let other work (and other processes) take the write lock between batches.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return { deleted };
}
