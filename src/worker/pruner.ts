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
  /**
   * Schedules with a retention of their own: their final occurrences are
   * kept exactly that long, whatever the retention by state.
   */
  schedules?: { id: string; retentionMs: number }[];
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
  const own = options.schedules ?? [];
  const except = own.map((s) => s.id);
  let batches = options.maxBatches ?? 20;
  let deleted = 0;
  const drain = async (step: () => Promise<number>) => {
    while (batches > 0) {
      batches--;
      const n = await step();
      deleted += n;
      if (n < batch) return;
      // Let other work (and other processes) take the write lock between batches.
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  };
  await drain(() => store.jobsPrune({ before, limit: batch, except }));
  for (const schedule of own) {
    await drain(() =>
      store.jobsPruneSchedule({
        scheduleId: schedule.id,
        before: now - schedule.retentionMs,
        limit: batch,
      })
    );
  }
  return { deleted };
}
