/**
 * Stager: moves `scheduled` and `retryable` jobs whose time has come to
 * `available`, and tells when the next one is due so the loop can sleep
 * exactly that long (bounded by its interval).
 *
 * @module
 */

import type { Store } from "../store/store.ts";

/** Stager settings. */
export interface StagerOptions {
  /** Most jobs moved per transaction. @default 5000 */
  limit?: number;
}

/** What one stager pass did. */
export interface StageReport {
  staged: number;
  /** Queues that received jobs: their producers should wake. */
  queues: string[];
  /** When the next scheduled or retryable job is due, if any. */
  nextAt: number | null;
}

/** One stager pass. */
export function stageJobs(
  store: Store,
  now: number,
  options: StagerOptions = {},
): Promise<StageReport> {
  return store.jobsStage({ now, limit: options.limit ?? 5000 });
}
