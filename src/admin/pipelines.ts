/**
 * Ingest pipelines as the command line, the TUI and `/metrics` show them:
 * each pipeline of the schedules file (and any other the store has runs
 * of, such as a library user's) with its newest runs, its drops per reason
 * over the last hour and the last day, and its freshness: a bounded
 * pipeline is `stale` when its newest completed run finished longer than
 * `within` ago, or never finished at all.
 *
 * @module
 */

import type { CompiledPipeline, Freshness, IngestDrop, IngestRun } from "../ingest/types.ts";
import { ingestJob } from "../runners/ingest.ts";
import type { Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";

/** The windows drops are counted over. */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** How many of a pipeline's newest runs a view carries. @default 5 */
export const RECENT_RUNS = 5;

/** Whether a pipeline's data is as fresh as it promises. */
export interface FreshnessView {
  mode: Freshness["mode"];
  /** `bounded`: the promise, ms. */
  withinMs: number | null;
  /** `advisory`: who is right when the data and the authority disagree. */
  authority: string | null;
  /** `finished_at` of the newest completed run, null when none completed. */
  lastCompletedAt: number | null;
  /** `now - lastCompletedAt`, null when none completed. */
  ageMs: number | null;
  /** Bounded only: older than `within`, or never completed. Advisory: always false. */
  stale: boolean;
}

/** One pipeline as a view shows it. */
export interface PipelineView {
  id: string;
  /** Declared by the schedules file (false: the store has runs of it, e.g. from the library). */
  declared: boolean;
  /** The definition's hash in the file, null when undeclared. */
  hash: string | null;
  /** Runs the store holds. */
  runs: number;
  /** The newest runs, newest first. */
  recent: IngestRun[];
  /** Drops by reason finished in the last hour and day. */
  droppedLastHour: Record<string, number>;
  droppedLastDay: Record<string, number>;
  /** Null when the pipeline declares no freshness. */
  freshness: FreshnessView | null;
}

/** Every pipeline: the file's in file order, then the store's other ones by name. */
export async function pipelinesView(params: {
  store: Store;
  pipelines: readonly CompiledPipeline[];
  now: number;
  /** @default RECENT_RUNS */
  recent?: number;
  /**
   * Only this tenant's runs and their drops (a tenant principal's scope),
   * in the store's statements: the file's pipelines are listed still.
   * @default null, every run
   */
  tenant?: string | null;
}): Promise<PipelineView[]> {
  const { store, now } = params;
  const scope = (params.tenant ?? null) === null ? {} : { tenant: params.tenant! };
  const [day, hour] = await Promise.all([
    store.ingestSummaries({ since: now - DAY_MS, ...scope }),
    store.ingestSummaries({ since: now - HOUR_MS, ...scope }),
  ]);
  const dayOf = new Map(day.map((s) => [s.pipeline, s]));
  const hourOf = new Map(hour.map((s) => [s.pipeline, s]));
  const declared = new Map(params.pipelines.map((p) => [p.id, p]));
  const ids = [
    ...declared.keys(),
    ...day.map((s) => s.pipeline).filter((id) => !declared.has(id)).sort(),
  ];
  const views: PipelineView[] = [];
  for (const id of ids) {
    const summary = dayOf.get(id);
    const pipeline = declared.get(id);
    const recent = summary && summary.runs > 0
      ? await store.ingestRunsList({ pipeline: id, limit: params.recent ?? RECENT_RUNS, ...scope })
      : [];
    views.push({
      id,
      declared: pipeline !== undefined,
      hash: pipeline?.hash ?? null,
      runs: summary?.runs ?? 0,
      recent,
      droppedLastHour: hourOf.get(id)?.droppedSince ?? {},
      droppedLastDay: summary?.droppedSince ?? {},
      freshness: freshnessOf(pipeline?.freshness ?? null, summary?.lastCompletedAt ?? null, now),
    });
  }
  return views;
}

/** What `freshness` promises against the newest completed run. */
export function freshnessOf(
  freshness: Freshness | null,
  lastCompletedAt: number | null,
  now: number,
): FreshnessView | null {
  if (freshness === null) return null;
  const ageMs = lastCompletedAt === null ? null : Math.max(0, now - lastCompletedAt);
  return {
    mode: freshness.mode,
    withinMs: freshness.mode === "bounded" ? freshness.withinMs : null,
    authority: freshness.mode === "advisory" ? freshness.authority : null,
    lastCompletedAt,
    ageMs,
    stale: freshness.mode === "bounded" && (ageMs === null || ageMs > freshness.withinMs),
  };
}

/** A view as `jobs pipelines --json` and the API show it: instants as ISO UTC. */
export function pipelineViewJson(view: PipelineView) {
  return {
    ...view,
    recent: view.recent.map(ingestRunJson),
    freshness: view.freshness && {
      ...view.freshness,
      lastCompletedAt: iso(view.freshness.lastCompletedAt),
    },
  };
}

/** A run as `jobs pipelines --json` and the API show it: its counts flat, without its cursor. */
export function ingestRunJson(run: IngestRun) {
  return {
    id: run.id,
    state: run.state,
    trigger: run.trigger,
    tenant: run.tenant,
    job: run.jobId,
    ...run.counts,
    error: run.error,
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
  };
}

/** A drop as `jobs drops --json` and the API show it (its excerpt redacted, never its record). */
export function dropJson(drop: IngestDrop) {
  return { ...drop, at: iso(drop.at), replayedAt: iso(drop.replayedAt) };
}

/** The sum of a drops-by-reason map. */
export function totalDropped(dropped: Record<string, number>): number {
  let total = 0;
  for (const n of Object.values(dropped)) total += n;
  return total;
}

/** An action on a pipeline the store refused to take, with why. */
export class PipelineActionRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PipelineActionRefused";
  }
}

/**
 * Enqueues a run of `pipeline` now (`jobs ingest`), audited in the same
 * transaction as `ingest.run` on `pipeline:<id>`. Returns the job's id.
 * The job, and so the run, carries `tenant` (the principal's; null:
 * installation-wide).
 */
export async function startIngestRun(
  store: Store,
  pipeline: CompiledPipeline,
  who: Actor,
  tenant: string | null = null,
): Promise<number> {
  return await store.transaction(async (tx) => {
    const [inserted] = await tx.jobsInsert({
      jobs: [ingestJob(pipeline, { now: who.now, tenant })],
      now: who.now,
    });
    await audit(tx, who, "ingest.run", `pipeline:${pipeline.id}`, {
      job: inserted!.id,
      hash: pipeline.hash,
      ...(tenant === null ? {} : { tenant }),
    });
    return inserted!.id;
  });
}

/**
 * Replays one dropped record (`jobs drops replay <id>`): a `jobs.ingest`
 * job that runs just that record through `pipeline` (the definition of
 * now: the fix is usually in it), marked on the drop and audited as
 * `ingest.replay` on `drop:<id>`, all in one transaction, so a drop is
 * replayed once unless `again`. The replay carries the tenant of the
 * drop's run; with `tenant`, a drop of another tenant's run is refused as
 * one that is not there.
 *
 * @param pipeline the definition to replay through, given the drop's
 *   pipeline id; null when there is none to use (refused)
 * @throws {PipelineActionRefused} no such drop, its record was too long
 *   to keep, no definition, or already replayed (without `again`)
 */
export async function replayDrop(
  store: Store,
  params: {
    id: number;
    pipeline: (id: string) => CompiledPipeline | null;
    who: Actor & { reason: string };
    again?: boolean;
    /** Only a drop of this tenant's runs (a tenant principal's scope). @default null, any */
    tenant?: string | null;
  },
): Promise<{ job: number; drop: IngestDrop }> {
  const { id, who } = params;
  const scope = params.tenant ?? null;
  const drop = await store.ingestDropGet({ id, ...(scope === null ? {} : { tenant: scope }) });
  if (!drop) throw new PipelineActionRefused(`no drop ${id}: nothing to replay`);
  if (!drop.replayable) {
    throw new PipelineActionRefused(
      `drop ${id} is not replayable: its record was longer than the store keeps`,
    );
  }
  if (drop.replayedAt !== null && !params.again) {
    throw new PipelineActionRefused(
      `drop ${id} was already replayed by job ${drop.replayedJob}; --again replays it once more`,
    );
  }
  const pipeline = params.pipeline(drop.pipeline);
  if (!pipeline) {
    throw new PipelineActionRefused(
      `drop ${id} is of pipeline "${drop.pipeline}", which the schedules file does not declare`,
    );
  }
  const tenant = (await store.ingestRunGet({ id: drop.runId }))?.tenant ?? scope;
  const job = await store.transaction(async (tx) => {
    const replay = { drop: id, actor: who.actor, reason: who.reason };
    const [inserted] = await tx.jobsInsert({
      jobs: [ingestJob(pipeline, { now: who.now, replay, tenant })],
      now: who.now,
    });
    await tx.ingestDropReplayed({ id, jobId: inserted!.id, now: who.now });
    await audit(tx, who, "ingest.replay", `drop:${id}`, {
      pipeline: pipeline.id,
      hash: pipeline.hash,
      job: inserted!.id,
      reason: drop.reason,
      key: drop.recordKey,
    });
    return inserted!.id;
  });
  return { job, drop };
}
