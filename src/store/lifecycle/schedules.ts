/**
 * A schedule's planning and its switch, written once for every store (see
 * `jobs.ts` for the form): the planner's decision is taken on the
 * schedule's row as it is now (locked where the store locks rows, so two
 * planners of one schedule take turns), its occurrences inserted once
 * each, those it skips inserted cancelled, and the row advanced.
 *
 * @module
 */

import type { InsertResult, NewJob, PlanContext, PlanDecision } from "../../kernel/types.ts";
import type { CountMove, JobOp } from "./jobs.ts";

/** One primitive read or write of schedules, and what the store answers ({@linkcode ScheduleOpAnswers}). */
export type ScheduleOp =
  /** The schedule's row (locked for this transaction), or null. */
  | { op: "scheduleLock"; id: string }
  /** How many of its occurrences execute and wait now. */
  | { op: "scheduleActive"; id: string }
  /** Inserts occurrences; one whose occurrence id is taken answers the job that has it, as a duplicate. */
  | { op: "occurrencesInsert"; jobs: NewJob[]; now: number }
  /** Advances the row past what was planned now. */
  | {
    op: "scheduleAdvance";
    id: string;
    plannedFor: number | null;
    misfires: number;
    lastMisfireFor: number | null;
    now: number;
  }
  /** Sets the switch and why it is off (all null when on); answers whether the schedule exists. */
  | {
    op: "scheduleSet";
    id: string;
    enabled: boolean;
    reason: string | null;
    actor: string | null;
    at: number | null;
    now: number;
  };

/** What the store answers to each {@linkcode ScheduleOp}. */
export interface ScheduleOpAnswers {
  scheduleLock: { enabled: boolean; lastPlannedFor: number | null } | null;
  scheduleActive: { executing: number; waiting: number };
  occurrencesInsert: InsertResult[];
  scheduleAdvance: void;
  scheduleSet: boolean;
}

/** A generator of schedule ops (and the jobs' ops they use) returning `R`. */
export type ScheduleOps<R> = Generator<ScheduleOp | JobOp, R, unknown>;

function* ask<O extends ScheduleOp>(op: O): ScheduleOps<ScheduleOpAnswers[O["op"]]> {
  return (yield op) as ScheduleOpAnswers[O["op"]];
}

/**
 * Plans schedule `id` now: `plan` decides from its row and active
 * occurrences; the occurrences it plans are inserted, those it skips are
 * inserted and cancelled at once with the reason given (so the skip is on
 * record), and the row advances. Answers null as the decision when there
 * is no such schedule.
 */
export function* planSchedule(params: {
  id: string;
  now: number;
  plan: (ctx: PlanContext) => PlanDecision;
}): ScheduleOps<{ inserted: InsertResult[]; cancelled: number; decision: PlanDecision | null }> {
  const { id, now } = params;
  const row = yield* ask({ op: "scheduleLock", id });
  if (!row) return { inserted: [], cancelled: 0, decision: null };
  const active = yield* ask({ op: "scheduleActive", id });
  const decision = params.plan({ ...row, ...active });
  const inserted = yield* ask({ op: "occurrencesInsert", jobs: decision.jobs, now });
  let cancelled = 0;
  const moves: CountMove[] = [];
  for (const { job, reason } of decision.cancelled) {
    const [result] = yield* ask({ op: "occurrencesInsert", jobs: [job], now });
    if (!result || result.duplicate) continue;
    const stop: JobOp = { op: "jobStop", id: result.id, to: "cancelled", now, error: reason };
    if (!(yield stop)) continue;
    moves.push({ id: result.id, queue: result.queue, from: result.state, to: "cancelled" });
    cancelled++;
  }
  if (moves.length > 0) yield { op: "countsMove", moves };
  yield* ask({
    op: "scheduleAdvance",
    id,
    plannedFor: decision.plannedFor,
    misfires: decision.misfires,
    lastMisfireFor: decision.lastMisfireFor,
    now,
  });
  return { inserted, cancelled, decision };
}

/**
 * Turns schedule `id` on or off: off keeps who turned it off, why and
 * when; on clears them. Answers whether the schedule exists.
 */
export function* setScheduleEnabled(params: {
  id: string;
  enabled: boolean;
  reason: string | null;
  actor: string | null;
  now: number;
}): ScheduleOps<boolean> {
  const off = !params.enabled;
  return yield* ask({
    op: "scheduleSet",
    id: params.id,
    enabled: params.enabled,
    reason: off ? params.reason : null,
    actor: off ? params.actor : null,
    at: off ? params.now : null,
    now: params.now,
  });
}
