/**
 * Throughput per queue as the TUI's and the console's overviews show it:
 * jobs completed and attempts failed per minute over the last hour, and
 * attempts failed since the start of the UTC day. Each is one read of
 * `store.jobsThroughput`, which walks indexes only (completions by
 * `completed_at`, failed attempts by `finished_at`).
 *
 * "Failed" is an attempt whose outcome was `retryable` or `discarded`: a
 * job that failed three times before it completed counts three failures,
 * and a job discarded after its last attempt counts that attempt. It is
 * what the store can answer from its index of failed attempts; a count of
 * distinct jobs would read every row.
 *
 * @module
 */

import type { Store } from "../store/store.ts";

/** The width of one bucket of the hour's series: a minute. */
export const THROUGHPUT_BUCKET_MS = 60_000;
/** How many buckets the series cover: the last hour. */
export const THROUGHPUT_BUCKETS = 60;
/** One UTC day, ms. */
const DAY_MS = 86_400_000;

/** One queue's series over the last hour, oldest minute first. */
export interface Throughput {
  /** Jobs completed per minute. */
  completed: number[];
  /** Attempts failed (retryable or discarded) per minute. */
  failed: number[];
}

/** A series of {@linkcode THROUGHPUT_BUCKETS} zeros of each kind. */
export function emptyThroughput(): Throughput {
  return {
    completed: new Array(THROUGHPUT_BUCKETS).fill(0),
    failed: new Array(THROUGHPUT_BUCKETS).fill(0),
  };
}

/**
 * The instants the hour's series cover: [since, until), the hour that ends
 * with the current minute. Aligned to whole minutes so that a bucket's start
 * is the same instant whichever way the store counts it.
 */
export function throughputWindow(now: number): { since: number; until: number } {
  const until = Math.floor(now / THROUGHPUT_BUCKET_MS) * THROUGHPUT_BUCKET_MS +
    THROUGHPUT_BUCKET_MS;
  return { since: until - THROUGHPUT_BUCKETS * THROUGHPUT_BUCKET_MS, until };
}

/**
 * Completed and failed per queue and minute over the hour that ends with
 * the current minute (see {@linkcode throughputWindow}). Queues with
 * neither are left out.
 */
export async function throughputByQueue(
  store: Store,
  now: number,
): Promise<Map<string, Throughput>> {
  const { since, until } = throughputWindow(now);
  const rows = await store.jobsThroughput({ since, until, bucketMs: THROUGHPUT_BUCKET_MS });
  const byQueue = new Map<string, Throughput>();
  for (const row of rows) {
    const index = Math.floor((row.bucket - since) / THROUGHPUT_BUCKET_MS);
    if (index < 0 || index >= THROUGHPUT_BUCKETS) continue;
    const series = byQueue.get(row.queue) ?? emptyThroughput();
    series.completed[index]! += row.completed;
    series.failed[index]! += row.failed;
    byQueue.set(row.queue, series);
  }
  return byQueue;
}

/** Every queue's series added up, minute by minute. */
export function throughputTotal(series: Iterable<Throughput>): Throughput {
  const total = emptyThroughput();
  for (const s of series) {
    for (let i = 0; i < THROUGHPUT_BUCKETS; i++) {
      total.completed[i]! += s.completed[i] ?? 0;
      total.failed[i]! += s.failed[i] ?? 0;
    }
  }
  return total;
}

/** The sum of a series. */
export function sumOf(series: readonly number[]): number {
  let total = 0;
  for (const n of series) total += n;
  return total;
}

/** The start of the UTC day `now` falls in. */
export function startOfUtcDay(now: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS;
}

/**
 * Attempts failed (outcome retryable or discarded) per queue since the
 * start of the UTC day, up to and including `now`. Queues with none are
 * left out.
 */
export async function failedToday(store: Store, now: number): Promise<Map<string, number>> {
  const since = startOfUtcDay(now);
  const until = now + 1;
  const rows = await store.jobsThroughput({ since, until, bucketMs: until - since });
  const byQueue = new Map<string, number>();
  for (const row of rows) {
    if (row.failed > 0) byQueue.set(row.queue, (byQueue.get(row.queue) ?? 0) + row.failed);
  }
  return byQueue;
}
