/**
 * The SQLite side of schedules ({@linkcode StoreSchedules}): their
 * statements, the store's methods over them, and the answers to the
 * schedule ops ({@linkcode ScheduleOp}, decided once in
 * src/store/lifecycle/schedules.ts) in {@linkcode answerScheduleOp}. A
 * schedule's occurrences are inserted as jobs.ts inserts every job; the
 * claim and the record mark a schedule started and completed (jobs.ts).
 *
 * @module
 */

import type { InsertResult, PlanContext, PlanDecision } from "../../kernel/types.ts";
import type { ScheduleOutcome, ScheduleRow, StoreSchedules } from "../store.ts";
import { planSchedule, type ScheduleOp, setScheduleEnabled } from "../lifecycle/schedules.ts";
import type { SqliteCore } from "./core.ts";
import { insertJobs } from "./jobs.ts";
import { type Row, toScheduleRow } from "./rows.ts";

const SQL = {
  schedulesSync: `INSERT INTO schedules
      (id, tenant, definition_hash, definition, created_at, updated_at)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, :now, :now
    FROM json_each(:rows) WHERE true
    ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,
      definition = coalesce(excluded.definition,
        CASE WHEN definition_hash IS excluded.definition_hash THEN definition END),
      definition_hash = excluded.definition_hash,
      updated_at = CASE WHEN definition_hash IS excluded.definition_hash THEN updated_at
        ELSE excluded.updated_at END`,
  schedulesForget: `UPDATE schedules SET definition = NULL
    WHERE definition IS NOT NULL AND id NOT IN (SELECT value FROM json_each(:ids))`,
  schedulesList: `SELECT * FROM schedules
    WHERE (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
      AND (:tenant IS NULL OR tenant = :tenant) ORDER BY id`,
  scheduleGet: `SELECT * FROM schedules WHERE id = :id`,
  // A schedule's outcomes walk the index on (schedule_id, scheduled_for)
  // from its newest occurrence: to the first final one, to the first
  // completed one, and over the discarded ones after that.
  scheduleLastFinal: `SELECT state, coalesce(completed_at, cancelled_at, discarded_at) AS at
    FROM jobs WHERE schedule_id = :id AND occurrence IS NOT NULL
      AND state IN ('completed', 'cancelled', 'discarded')
    ORDER BY scheduled_for DESC LIMIT 1`,
  scheduleLastCompletedFor: `SELECT scheduled_for FROM jobs
    WHERE schedule_id = :id AND occurrence IS NOT NULL AND state = 'completed'
    ORDER BY scheduled_for DESC LIMIT 1`,
  scheduleFailuresAfter: `SELECT count(*) AS n FROM jobs
    WHERE schedule_id = :id AND scheduled_for > :after AND occurrence IS NOT NULL
      AND state = 'discarded'`,
  // The WHERE repeats the partial index's condition so the planner can use it.
  scheduleActive: `SELECT coalesce(sum(state = 'executing'), 0) AS executing,
      coalesce(sum(state <> 'executing'), 0) AS waiting
    FROM jobs WHERE schedule_id = :id AND schedule_id IS NOT NULL
      AND state IN ('scheduled', 'available', 'executing', 'retryable')`,
  scheduleAdvance: `UPDATE schedules SET
      last_planned_for = coalesce(:plannedFor, last_planned_for),
      misfires = misfires + :misfires,
      last_misfire_for = coalesce(:lastMisfireFor, last_misfire_for),
      updated_at = :now
    WHERE id = :id`,
  scheduleSet: `UPDATE schedules SET enabled = :enabled, disabled_reason = :reason,
      disabled_by = :actor, disabled_at = :at, updated_at = :now
    WHERE id = :id`,
} as const;

/** The {@linkcode StoreSchedules} of the store over `core`. */
export function sqliteSchedules(core: SqliteCore): StoreSchedules {
  core.register(SQL);
  const q = () => core.statements(SQL);
  return {
    schedulesSync(params: {
      schedules: { id: string; hash: string; tenant: string | null; definition?: string | null }[];
      complete?: boolean;
      now: number;
    }): Promise<void> {
      if (params.schedules.length === 0 && !params.complete) return Promise.resolve();
      const rows = JSON.stringify(
        params.schedules.map((s) => [s.id, s.tenant, s.hash, s.definition ?? null]),
      );
      return core.exclusive(() =>
        core.write(() => {
          if (params.schedules.length > 0) q().schedulesSync.run({ rows, now: params.now });
          if (params.complete) {
            q().schedulesForget.run({ ids: JSON.stringify(params.schedules.map((s) => s.id)) });
          }
        })
      );
    },

    schedulesList(params: { ids?: string[]; tenant?: string }): Promise<ScheduleRow[]> {
      return core.exclusive(() =>
        (q().schedulesList.all(listParams(params)) as Row[]).map(toScheduleRow)
      );
    },

    schedulesOutcomes(params: { ids?: string[]; tenant?: string }): Promise<ScheduleOutcome[]> {
      return core.exclusive(() => {
        const statements = q();
        const ids = (statements.schedulesList.all(listParams(params)) as Row[])
          .map((r) => String(r.id));
        const outcomes: ScheduleOutcome[] = [];
        for (const id of ids) {
          const last = statements.scheduleLastFinal.get({ id }) as Row | undefined;
          if (!last) continue;
          const completed = statements.scheduleLastCompletedFor.get({ id }) as Row | undefined;
          const after = completed ? Number(completed.scheduled_for) : Number.MIN_SAFE_INTEGER;
          const failures = statements.scheduleFailuresAfter.get({ id, after }) as Row;
          outcomes.push({
            scheduleId: id,
            lastOutcome: last.state as ScheduleOutcome["lastOutcome"],
            lastOutcomeAt: Number(last.at),
            failures: Number(failures.n),
          });
        }
        return outcomes;
      });
    },

    schedulePlan(params: {
      id: string;
      now: number;
      plan: (ctx: PlanContext) => PlanDecision;
    }): Promise<{ inserted: InsertResult[]; cancelled: number; decision: PlanDecision | null }> {
      return core.exclusive(() => core.write(() => core.lifecycle(planSchedule(params))));
    },

    scheduleSetEnabled(params: {
      id: string;
      enabled: boolean;
      reason: string | null;
      actor: string | null;
      now: number;
    }): Promise<boolean> {
      return core.exclusive(() => core.write(() => core.lifecycle(setScheduleEnabled(params))));
    },
  };
}

/** The bindings of `schedulesList`: the ids as JSON, the tenant; null for either not given. */
function listParams(params: { ids?: string[]; tenant?: string }) {
  return {
    ids: params.ids ? JSON.stringify(params.ids) : null,
    tenant: params.tenant ?? null,
  };
}

/** Answers one schedule op (src/store/lifecycle/schedules.ts), inside the open write. */
export function answerScheduleOp(core: SqliteCore, op: ScheduleOp): unknown {
  const s = core.statements(SQL);
  switch (op.op) {
    case "scheduleLock": {
      const row = s.scheduleGet.get({ id: op.id }) as Row | undefined;
      if (!row) return null;
      const plannedFor = row.last_planned_for;
      return {
        enabled: row.enabled === 1,
        lastPlannedFor: plannedFor == null ? null : Number(plannedFor),
      };
    }
    case "scheduleActive": {
      const active = s.scheduleActive.get({ id: op.id }) as Row;
      return { executing: Number(active.executing), waiting: Number(active.waiting) };
    }
    case "occurrencesInsert":
      return insertJobs(core, op.jobs, op.now);
    case "scheduleAdvance": {
      const { op: _, ...values } = op;
      s.scheduleAdvance.run(values);
      return undefined;
    }
    case "scheduleSet": {
      const { op: _, ...values } = op;
      return s.scheduleSet.run({ ...values, enabled: op.enabled ? 1 : 0 }).changes !== 0;
    }
  }
}
