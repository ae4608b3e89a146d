/**
 * Bulk actions over everything a filter matches: retry, cancel or discard
 * as a background run. {@linkcode previewBulk} counts what the filter
 * matches (changing nothing); {@linkcode startBulk} takes the snapshot of
 * the matching ids at confirmation, in the person's scope (the tenant in the
 * store's statement), creates the run and enqueues its one `jobs.bulk` job
 * (`src/admin/bulk_worker.ts`) in one transaction, audited `bulk.start`; the job
 * walks the snapshot in chunks through `applyJobAction`, so each job changed
 * has its own audit row naming the person. {@linkcode abortBulk} asks a run
 * to stop between chunks, audited `bulk.abort`.
 *
 * A snapshot holds at most {@linkcode BULK_SNAPSHOT_CAP} ids: the oldest
 * that many of what matched (the preview says when there are more).
 *
 * @module
 */

import { serializeArgs } from "../kernel/enqueue.ts";
import { BULK_WORKER } from "../kernel/runs.ts";
import type { NewJob } from "../kernel/types.ts";
import type { BulkAction, BulkRun, JobMatch, Store, StoreTx } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";

/**
 * The queue of `jobs.bulk` jobs; every daemon serves it, one at a time.
 * Named as the built-in workers are, so it never meets a queue of the
 * user's own (`bulk` is a likely one, which every daemon would then claim).
 */
export const BULK_QUEUE = "jobs.bulk";

/** The most ids one bulk run's snapshot holds. */
export const BULK_SNAPSHOT_CAP = 1_000_000;

/** How many ids the walker acts on per transaction (and between abort checks). */
export const BULK_CHUNK = 500;

/** How many rows a snapshot reads per statement. */
const SNAPSHOT_PAGE = 5000;

/** The actions a bulk run may take. */
export const BULK_ACTIONS: readonly BulkAction[] = ["retry", "cancel", "discard"];

/** The args of a `jobs.bulk` job: which run it walks. */
export interface BulkJobArgs {
  kind: "bulk";
  run: number;
}

/** Raised when a bulk action is refused before anything is written (`code` is stable). */
export class BulkRefused extends Error {
  constructor(readonly code: "bulk_empty" | "bulk_action", message: string) {
    super(message);
    this.name = "BulkRefused";
  }
}

/** `filter` in `tenant`'s scope (null: installation-wide): the tenant goes into the statement. */
function scoped(filter: JobMatch, tenant: string | null): JobMatch {
  const { ids: _ids, ...rest } = filter;
  return tenant === null ? rest : { ...rest, tenant };
}

/**
 * How many jobs `filter` matches in `tenant`'s scope, counted up to the
 * snapshot's cap: `capped` when more match than one run would take.
 */
export async function previewBulk(
  store: Store,
  filter: JobMatch,
  tenant: string | null,
): Promise<{ count: number; capped: boolean }> {
  const count = await store.jobsCountMatching(scoped(filter, tenant), {
    atMost: BULK_SNAPSHOT_CAP + 1,
  });
  return { count: Math.min(count, BULK_SNAPSHOT_CAP), capped: count > BULK_SNAPSHOT_CAP };
}

/** The ids `filter` matches in scope, oldest first, at most the cap. */
async function snapshot(tx: Pick<StoreTx, "jobsList">, filter: JobMatch): Promise<number[]> {
  const ids: number[] = [];
  let after: number | undefined;
  while (ids.length < BULK_SNAPSHOT_CAP) {
    const page = await tx.jobsList({
      ...filter,
      limit: Math.min(SNAPSHOT_PAGE, BULK_SNAPSHOT_CAP - ids.length),
      ...(after === undefined ? {} : { after }),
    });
    for (const job of page) ids.push(job.id);
    if (page.length < SNAPSHOT_PAGE) break;
    after = page[page.length - 1]!.id;
  }
  return ids;
}

/** The `jobs.bulk` job that walks run `run`, for `tenant`. */
export function bulkJob(run: number, tenant: string | null, now: number): NewJob {
  const args: BulkJobArgs = { kind: "bulk", run };
  return {
    queue: BULK_QUEUE,
    worker: BULK_WORKER,
    args: serializeArgs(args, `bulk run ${run}`),
    meta: serializeArgs({ bulk: run }, `bulk run ${run}`),
    tags: JSON.stringify(["bulk"]),
    tenant,
    priority: 0,
    maxAttempts: 5,
    scheduledAt: now,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: null,
    scheduleId: null,
    scheduledFor: null,
  };
}

/**
 * Starts `action` over every job `filter` matches in `tenant`'s scope: the
 * snapshot of their ids, the run and its job in one transaction, audited
 * `bulk.start` on `bulk:<id>`. Refused ({@linkcode BulkRefused}) when
 * nothing matches.
 */
export async function startBulk(
  store: Store,
  params: { action: BulkAction; filter: JobMatch; tenant: string | null; who: Actor },
): Promise<BulkRun> {
  const { action, tenant, who } = params;
  if (!BULK_ACTIONS.includes(action)) {
    throw new BulkRefused("bulk_action", `"${action}" is not retry, cancel or discard`);
  }
  const filter = scoped(params.filter, tenant);
  return await store.transaction(async (tx) => {
    const ids = await snapshot(tx, filter);
    if (ids.length === 0) throw new BulkRefused("bulk_empty", "no job matches the filter");
    const run = await tx.bulkRunCreate({
      action,
      filter: { ...params.filter },
      ids,
      actor: who.actor,
      reason: who.reason,
      tenant,
      now: who.now,
    });
    const [job] = await tx.jobsInsert({ jobs: [bulkJob(run.id, tenant, who.now)], now: who.now });
    await audit(tx, who, "bulk.start", `bulk:${run.id}`, {
      action,
      total: run.total,
      filter: run.filter,
      tenant,
      job: job?.id ?? null,
    });
    return run;
  });
}

/** One bulk run in `tenant`'s scope (null: installation-wide); another tenant's is null. */
export async function bulkRunInScope(
  store: Store,
  id: number,
  tenant: string | null,
): Promise<BulkRun | null> {
  if (!Number.isSafeInteger(id)) return null;
  return await store.bulkRunGet({ id, ...(tenant === null ? {} : { tenant }) });
}

/** Bulk runs in `tenant`'s scope, newest first, keyset paged by `before`. */
export async function bulkRunsInScope(
  store: Store,
  tenant: string | null,
  options: { before?: number; limit?: number } = {},
): Promise<BulkRun[]> {
  return await store.bulkRunsList({
    ...(tenant === null ? {} : { tenant }),
    ...(options.before === undefined ? {} : { before: options.before }),
    limit: options.limit ?? 50,
  });
}

/**
 * Asks a running bulk run in `tenant`'s scope to stop between chunks,
 * audited `bulk.abort`; false when there is no running run in that scope.
 */
export async function abortBulk(
  store: Store,
  id: number,
  tenant: string | null,
  who: Actor,
): Promise<boolean> {
  if (!Number.isSafeInteger(id)) return false;
  return await store.transaction(async (tx) => {
    const asked = await tx.bulkRunAbort({ id, ...(tenant === null ? {} : { tenant }) });
    if (asked) await audit(tx, who, "bulk.abort", `bulk:${id}`, {});
    return asked;
  });
}
