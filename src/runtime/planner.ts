/**
 * Planner: turns each schedule's due occurrences into jobs, exactly once
 * across any number of processes (the decision runs inside the store's write
 * transaction and every occurrence row is unique by identity).
 *
 * @module
 */

import { next, occurrenceInstant } from "../schedule/occurrences.ts";
import { decide, definitionHash } from "../schedule/plan.ts";
import type { Schedule } from "../schedule/types.ts";
import type { Store } from "../store/store.ts";

/** What one planner pass did. */
export interface PlanReport {
  /** Occurrence rows inserted (racing planners' duplicates not counted). */
  planned: number;
  /** Occurrences the overlap policy recorded as cancelled. */
  cancelled: number;
  /** Occurrences the misfire policy skipped. */
  misfires: number;
  /** Queues that received runnable jobs: their producers should wake. */
  queues: string[];
  /** Planned jobs due later (jitter): the stager should know. */
  scheduled: number;
  /** The earliest next occurrence (before jitter) of the schedules planned, if any. */
  nextAt: number | null;
}

export { definitionHash };

/**
 * Makes sure every declared schedule has its row, with its definition and
 * its hash; call on start and on every reload.
 */
export function syncSchedules(
  store: Store,
  now: number,
  schedules: readonly Schedule[],
): Promise<void> {
  return store.schedulesSync({
    schedules: schedules.map((s) => ({
      id: s.id,
      hash: definitionHash(s),
      tenant: s.tenant ?? null,
      // Kept so the views can show what runs while the file has errors.
      definition: JSON.stringify(s),
    })),
    // The whole file: a schedule removed from it keeps its row, not its definition.
    complete: true,
    now,
  });
}

/**
 * One planner pass over `schedules` at `now`. `due` (optional) remembers, per
 * schedule id, the instant before which it has nothing to plan, so a pass
 * writes only for schedules with work; the caller resets it on reload.
 */
export async function planSchedules(
  store: Store,
  now: number,
  schedules: readonly Schedule[],
  due: Map<string, number> = new Map(),
): Promise<PlanReport> {
  const report: PlanReport = {
    planned: 0,
    cancelled: 0,
    misfires: 0,
    queues: [],
    scheduled: 0,
    nextAt: null,
  };
  const queues = new Set<string>();
  for (const schedule of schedules) {
    if (schedule.rhythm.kind === "manual") continue;
    const waitUntil = due.get(schedule.id);
    if (waitUntil === undefined || waitUntil <= now) {
      const result = await store.schedulePlan({
        id: schedule.id,
        now,
        plan: (ctx) => decide(schedule, ctx, now),
      });
      for (const job of result.inserted) {
        if (job.duplicate) continue;
        report.planned++;
        if (job.state === "available") queues.add(job.queue);
        else report.scheduled++;
      }
      report.cancelled += result.cancelled;
      report.misfires += result.decision?.misfires ?? 0;
      // Planned up to a full window only: come back at once for the rest.
      const plannedTo = result.decision?.plannedFor ?? now;
      const following = plannedTo < now ? plannedTo : nextInstant(schedule, now);
      if (following === null) due.set(schedule.id, Infinity);
      else due.set(schedule.id, following);
    }
    const at = due.get(schedule.id)!;
    if (at !== Infinity && (report.nextAt === null || at < report.nextAt)) report.nextAt = at;
  }
  report.queues = [...queues];
  return report;
}

function nextInstant(schedule: Schedule, after: number): number | null {
  const [following] = next(schedule, after, 1);
  return following ? occurrenceInstant(following.occurrence) : null;
}
