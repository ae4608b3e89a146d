/**
 * Pruner: deletes final jobs (and their attempts) older than their retention.
 *
 * A pass is sized by what is due, not by a fixed budget: it keeps deleting
 * while full batches come back, so it keeps up with any completion rate the
 * runtime sustains (a budget of so many batches per pass lets a busy node
 * pile up completed rows without bound). Each batch is its own short write
 * transaction, and the pass yields to the event loop between batches: claims,
 * results and heartbeats of this process (and other processes waiting for
 * the write lock) go between two batches, so they wait at most one batch,
 * never the whole pass.
 *
 * @module
 */

import { DEFAULT_DROPS_RETENTION_MS } from "../ingest/types.ts";
import type { PrunerConfig } from "../config/types.ts";
import type { Store } from "../store/store.ts";
import { yieldToOthers } from "../clock.ts";

const DAY = 24 * 60 * 60 * 1000;

/** Default retention per final state. */
export const DEFAULT_RETENTION = { completed: 7 * DAY, cancelled: 30 * DAY, discarded: 30 * DAY };

/** Rows per write transaction when not set. @default 1000 */
export const DEFAULT_PRUNE_BATCH = 1000;

/** How often the runtime starts a pass when not set, in ms. @default 60_000 */
export const DEFAULT_PRUNE_EVERY_MS = 60_000;

/** Pruner settings. */
export interface PrunerOptions {
  /**
   * How long final jobs are kept, by state, in ms.
   * @default { completed: 7 days, cancelled: 30 days, discarded: 30 days }
   */
  retention?: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
  /** Rows per write transaction: an integer >= 1. @default 1000 */
  batch?: number;
  /**
   * Transactions per pass at most; the rest waits for the next pass.
   * @default no limit: a pass deletes everything due
   */
  maxBatches?: number;
  /**
   * Schedules with a retention of their own: their final occurrences are
   * kept exactly that long, whatever the retention by state.
   */
  schedules?: { id: string; retentionMs: number }[];
  /**
   * Pipelines with the retention of their dropped records (`drops_retention`);
   * the drops of every other pipeline are kept {@linkcode DEFAULT_DROPS_RETENTION_MS}.
   */
  drops?: { pipeline: string; retentionMs: number }[];
  /**
   * Removes expired report outputs and their runs, and the rows of runs
   * that ended without output past the discarded retention: the daemon's
   * (it knows each report's storage). Returns how many runs went.
   */
  reportOutputs?: (now: number, endedBefore: number) => Promise<number>;
  /** Ends the pass between two batches (the runtime's shutdown); what was deleted stays deleted. */
  signal?: AbortSignal;
}

/** The pruner's settings with every default filled in. */
export interface PrunerSettings {
  /** How often a pass starts, in ms. */
  everyMs: number;
  /** Rows per write transaction. */
  batch: number;
  /** How long final jobs are kept, by state, in ms. */
  retention: Record<"completed" | "cancelled" | "discarded", number>;
}

/**
 * What the pruner does with the schedules file's `pruner:` section: its
 * values, and the defaults ({@linkcode DEFAULT_PRUNE_EVERY_MS},
 * {@linkcode DEFAULT_PRUNE_BATCH}, {@linkcode DEFAULT_RETENTION}) where it
 * sets none or there is no section.
 */
export function prunerSettings(config: PrunerConfig = {}): PrunerSettings {
  return {
    everyMs: config.everyMs ?? DEFAULT_PRUNE_EVERY_MS,
    batch: config.batch ?? DEFAULT_PRUNE_BATCH,
    retention: { ...DEFAULT_RETENTION, ...config.retention },
  };
}

/**
 * One pruner pass: deletes, batch by batch, every final job that is due at
 * `now`, and returns how many it deleted.
 *
 * @throws {RangeError} when `batch` is not an integer >= 1
 */
export async function pruneJobs(
  store: Store,
  now: number,
  options: PrunerOptions = {},
): Promise<{ deleted: number }> {
  const { batch, before } = passOf(now, options);
  const own = options.schedules ?? [];
  const except = own.map((s) => s.id);
  const signal = options.signal;
  let batches = options.maxBatches ?? Infinity;
  let deleted = 0;
  const drain = async (step: () => Promise<number>) => {
    while (batches > 0 && !signal?.aborted) {
      batches--;
      const n = await step();
      deleted += n;
      // A short batch means nothing more is due.
      if (n < batch) return;
      await yieldToOthers();
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

/** A pass's batch size (checked) and its cutoffs by final state. */
function passOf(
  now: number,
  options: Pick<PrunerOptions, "batch" | "retention">,
): { batch: number; before: Record<"completed" | "cancelled" | "discarded", number> } {
  const batch = options.batch ?? DEFAULT_PRUNE_BATCH;
  if (!Number.isSafeInteger(batch) || batch < 1) {
    throw new RangeError(`pruner batch must be an integer >= 1, got ${batch}`);
  }
  const retention = { ...DEFAULT_RETENTION, ...options.retention };
  return {
    batch,
    before: {
      completed: now - retention.completed,
      cancelled: now - retention.cancelled,
      discarded: now - retention.discarded,
    },
  };
}

/**
 * One pass over workflow runs: deletes the final runs (and their step rows)
 * past the retention of their kind of end, `batch` runs per transaction
 * (see `Store.workflowsPrune`): completed runs as completed jobs,
 * compensated and cancelled runs as cancelled jobs, failed runs (dead
 * letters) as discarded jobs. Returns how many runs it deleted.
 */
export async function pruneWorkflowRuns(
  store: Store,
  now: number,
  options: Omit<PrunerOptions, "schedules"> = {},
): Promise<{ runs: number }> {
  const { batch, before } = passOf(now, options);
  let batches = options.maxBatches ?? Infinity;
  let runs = 0;
  while (batches-- > 0 && !options.signal?.aborted) {
    const n = await store.workflowsPrune({ before, limit: batch });
    runs += n;
    if (n < batch) break;
    await yieldToOthers();
  }
  return { runs };
}

/**
 * One pass over pipelines' dropped records: deletes those older than their
 * pipeline's retention (`drops`, else {@linkcode DEFAULT_DROPS_RETENTION_MS}),
 * `batch` per transaction. Returns how many it deleted.
 */
export async function pruneIngestDrops(
  store: Store,
  now: number,
  options: Pick<PrunerOptions, "batch" | "maxBatches" | "drops" | "signal"> = {},
): Promise<{ drops: number }> {
  const { batch } = passOf(now, options);
  const before = (options.drops ?? []).map((d) => ({
    pipeline: d.pipeline,
    before: now - d.retentionMs,
  }));
  let batches = options.maxBatches ?? Infinity;
  let drops = 0;
  while (batches-- > 0 && !options.signal?.aborted) {
    const n = await store.ingestDropsPrune({
      before,
      otherwise: now - DEFAULT_DROPS_RETENTION_MS,
      limit: batch,
    });
    drops += n;
    if (n < batch) break;
    await yieldToOthers();
  }
  return { drops };
}
