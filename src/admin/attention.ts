/**
 * What needs someone's attention, as the console's Overview lists it:
 * schedules failing (their newest occurrences discarded, a run of failures
 * not yet ended by a completion), schedules that misfired, pipelines stale
 * against their freshness promise, pipelines whose last run paged (its
 * buffer overflowed with `overflow: page`) or failed, and jobs still
 * executing past their lease's expiry (no node renews them and none has
 * rescued them yet: stuck).
 *
 * Reads only, each through the store's own reads and the views of the
 * doors beside this one (`schedules.ts`, `pipelines.ts`), in a scope: with
 * `tenant`, the tenant is in every statement, so a tenant's person sees
 * its own schedules, runs and jobs only. A tenant is not told a pipeline
 * is stale unless it ran that pipeline in the last day: the pipelines of
 * the file are installation-wide, and a tenant that never runs one has no
 * freshness to keep.
 *
 * @module
 */

import type { CompiledPipeline } from "../ingest/types.ts";
import type { Job } from "../kernel/types.ts";
import type { Store } from "../store/store.ts";
import { pipelinesView, type PipelineView } from "./pipelines.ts";
import { schedulesView, storedConfig } from "./schedules.ts";

/** How many stuck jobs the list names; past it, it says there are more. */
export const STUCK_SHOWN = 20;

/** One thing to look at. */
export type AttentionItem =
  | {
    kind: "schedule-failing";
    schedule: string;
    /** Discarded occurrences since its newest completed one. */
    failures: number;
    /** When the newest of them ended. */
    at: number | null;
  }
  | {
    kind: "schedule-misfires";
    schedule: string;
    /** Occurrences the planner skipped (its misfire policy), as the store counts them. */
    misfires: number;
    /** The instant of the newest one skipped. */
    at: number | null;
  }
  | {
    kind: "pipeline-stale";
    pipeline: string;
    /** How old its newest completed run is; null when none completed. */
    ageMs: number | null;
    /** What its freshness promises. */
    withinMs: number;
  }
  | {
    kind: "pipeline-run";
    pipeline: string;
    /** How its newest run ended. */
    state: "paged" | "failed";
    run: number;
    job: number;
    at: number;
  }
  | {
    kind: "job-stuck";
    job: number;
    queue: string;
    worker: string;
    /** The node whose lease ran out. */
    node: string | null;
    /** When the lease ran out. */
    leaseExpiredAt: number | null;
  };

/** The attention list: its items in the order above, and whether stuck jobs were left out. */
export interface AttentionView {
  items: AttentionItem[];
  /** More than {@linkcode STUCK_SHOWN} jobs are stuck: the list names the longest stuck. */
  moreStuck: boolean;
}

/** A pipeline the overviews name: stale, or its newest run paged or failed. */
export function pipelineNeedsAttention(view: PipelineView): boolean {
  const last = view.recent[0]?.state;
  return view.freshness?.stale === true || last === "paged" || last === "failed";
}

/**
 * Everything in `tenant`'s scope (null: installation-wide) that needs
 * attention as of `now`. `pipelines` are the schedules file's (the daemon's
 * definitions now); the schedules are the definitions the store last synced,
 * as the Schedules page reads them.
 */
export async function attentionView(params: {
  store: Store;
  pipelines: readonly CompiledPipeline[];
  now: number;
  tenant: string | null;
}): Promise<AttentionView> {
  const { store, now, tenant } = params;
  const items: AttentionItem[] = [];

  const config = await storedConfig(store, tenant);
  const schedules = await schedulesView(store, config, now, tenant);
  for (const s of schedules) {
    if (s.failures > 0) {
      items.push({
        kind: "schedule-failing",
        schedule: s.id,
        failures: s.failures,
        at: s.lastOutcomeAt,
      });
    }
  }
  for (const s of schedules) {
    if (s.misfires > 0) {
      items.push({
        kind: "schedule-misfires",
        schedule: s.id,
        misfires: s.misfires,
        at: s.lastMisfireFor,
      });
    }
  }

  const pipelines = await pipelinesView({
    store,
    pipelines: params.pipelines,
    now,
    recent: 1,
    tenant,
  });
  for (const p of pipelines) {
    if (!pipelineNeedsAttention(p)) continue;
    const stale = p.freshness?.stale === true && (tenant === null || p.runs > 0);
    if (stale) {
      items.push({
        kind: "pipeline-stale",
        pipeline: p.id,
        ageMs: p.freshness!.ageMs,
        withinMs: p.freshness!.withinMs ?? 0,
      });
    }
    const last = p.recent[0];
    if (last && (last.state === "paged" || last.state === "failed")) {
      items.push({
        kind: "pipeline-run",
        pipeline: p.id,
        state: last.state,
        run: last.id,
        job: last.jobId,
        at: last.finishedAt ?? last.updatedAt,
      });
    }
  }

  const stuck = await store.jobsLeaseExpired({
    now,
    limit: STUCK_SHOWN + 1,
    ...(tenant === null ? {} : { tenant }),
  });
  for (const job of stuck.slice(0, STUCK_SHOWN)) items.push(stuckItem(job));
  return { items, moreStuck: stuck.length > STUCK_SHOWN };
}

function stuckItem(job: Job): AttentionItem {
  return {
    kind: "job-stuck",
    job: job.id,
    queue: job.queue,
    worker: job.worker,
    node: job.attemptedBy,
    leaseExpiredAt: job.leaseExpiresAt,
  };
}
