/**
 * The PostgreSQL side of schedules ({@linkcode StoreSchedules}): their
 * rows, their outcomes, and the planning and the switch the shared
 * schedule lifecycle (`src/store/lifecycle/schedules.ts`) decides, over the
 * ops {@linkcode answerScheduleOp} answers here.
 *
 * `schedulePlan` locks the schedule's row `FOR UPDATE`, so planners on
 * several hosts decide one after another, each reading what the previous
 * one committed.
 *
 * @module
 */

import type { InsertResult, NewJob, PlanContext, PlanDecision } from "../../kernel/types.ts";
import type { ScheduleOutcome, ScheduleRow, StoreSchedules } from "../store.ts";
import { planSchedule, type ScheduleOp, setScheduleEnabled } from "../lifecycle/schedules.ts";
import type { PostgresCore } from "./core.ts";
import { compare, type Sql } from "./fragments.ts";
import { insertJobs } from "./jobs.ts";
import { toInsertResult, toScheduleRow } from "./rows.ts";

/**
 * The {@linkcode StoreSchedules} methods of the PostgreSQL store, over
 * `core` (schedule rows, their outcomes, planning and the switch), each with
 * its transaction policy: its own transaction where it needs one
 * (`core.begin` joins a transaction's view).
 */
export function postgresSchedules(core: PostgresCore): StoreSchedules {
  return core.guard({
    async schedulesSync(params: {
      schedules: { id: string; hash: string; tenant: string | null; definition?: string | null }[];
      complete?: boolean;
      now: number;
    }): Promise<void> {
      if (params.complete) {
        // Nothing runs the others any more: their definitions no longer say what runs.
        const ids = params.schedules.map((s) => s.id);
        await core.sql`UPDATE schedules SET definition = NULL
          WHERE definition IS NOT NULL AND NOT (id = ANY(${ids}::text[]))`;
      }
      if (params.schedules.length === 0) return;
      // One row per id (the last given wins), in id order: one statement may
      // not touch a row twice, and daemons syncing at once lock in one order.
      const byId = new Map(params.schedules.map((s) => [s.id, s]));
      const rows = JSON.stringify(
        [...byId.values()]
          .sort((a, b) => compare(a.id, b.id))
          .map((s) => ({
            id: s.id,
            tenant: s.tenant,
            hash: s.hash,
            definition: s.definition ?? null,
          })),
      );
      const now = params.now;
      await core.sql`INSERT INTO schedules
          (id, tenant, definition_hash, definition, created_at, updated_at)
        SELECT id, tenant, hash, definition, ${now}::bigint, ${now}::bigint
        FROM jsonb_to_recordset(${rows}::text::jsonb)
          AS r(id text, tenant text, hash text, definition text)
        ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,
          definition = coalesce(excluded.definition, CASE WHEN schedules.definition_hash
            IS NOT DISTINCT FROM excluded.definition_hash THEN schedules.definition END),
          definition_hash = excluded.definition_hash,
          updated_at = CASE WHEN schedules.definition_hash IS NOT DISTINCT FROM
            excluded.definition_hash THEN schedules.updated_at ELSE excluded.updated_at END`;
    },

    async schedulesList(params: { ids?: string[]; tenant?: string }): Promise<ScheduleRow[]> {
      const ids = params.ids ?? null;
      const tenant = params.tenant ?? null;
      const rows = await core.sql`SELECT * FROM schedules
        WHERE (${ids}::text[] IS NULL OR id = ANY(${ids}::text[]))
          AND (${tenant}::text IS NULL OR tenant = ${tenant}::text) ORDER BY id COLLATE "C"`;
      return rows.map(toScheduleRow);
    },

    async schedulesOutcomes(
      params: { ids?: string[]; tenant?: string },
    ): Promise<ScheduleOutcome[]> {
      const ids = params.ids ?? null;
      const tenant = params.tenant ?? null;
      // Each LATERAL walks the index on (schedule_id, scheduled_for) from the
      // newest occurrence; the count reads only the run after the last success.
      const rows = await core.sql`SELECT s.id, l.state, l.at,
          (SELECT count(*) FROM jobs AS d
            WHERE d.schedule_id = s.id AND d.occurrence IS NOT NULL AND d.state = 'discarded'
              AND (c.scheduled_for IS NULL OR d.scheduled_for > c.scheduled_for)) AS failures
        FROM schedules AS s
        CROSS JOIN LATERAL (SELECT state, coalesce(completed_at, cancelled_at, discarded_at) AS at
          FROM jobs WHERE schedule_id = s.id AND occurrence IS NOT NULL
            AND state IN ('completed', 'cancelled', 'discarded')
          ORDER BY scheduled_for DESC LIMIT 1) AS l
        LEFT JOIN LATERAL (SELECT scheduled_for FROM jobs
          WHERE schedule_id = s.id AND occurrence IS NOT NULL AND state = 'completed'
          ORDER BY scheduled_for DESC LIMIT 1) AS c ON true
        WHERE (${ids}::text[] IS NULL OR s.id = ANY(${ids}::text[]))
          AND (${tenant}::text IS NULL OR s.tenant = ${tenant}::text) ORDER BY s.id COLLATE "C"`;
      return rows.map((r) => ({
        scheduleId: String(r.id),
        lastOutcome: r.state as ScheduleOutcome["lastOutcome"],
        lastOutcomeAt: Number(r.at),
        failures: Number(r.failures),
      }));
    },

    async schedulePlan(params: {
      id: string;
      now: number;
      plan: (ctx: PlanContext) => PlanDecision;
    }): Promise<{ inserted: InsertResult[]; cancelled: number; decision: PlanDecision | null }> {
      return await core.sql.begin((tx) => core.lifecycle(tx, planSchedule(params)));
    },

    async scheduleSetEnabled(params: {
      id: string;
      enabled: boolean;
      reason: string | null;
      actor: string | null;
      now: number;
    }): Promise<boolean> {
      return await core.lifecycle(core.sql, setScheduleEnabled(params));
    },
  });
}

/** Answers one op of the shared schedule lifecycle (`src/store/lifecycle/schedules.ts`) on `q`. */
export async function answerScheduleOp(
  core: PostgresCore,
  op: ScheduleOp,
  q: Sql,
): Promise<unknown> {
  switch (op.op) {
    case "scheduleLock": {
      // Planners of the same schedule on other connections wait here until
      // this transaction ends, then read what it wrote.
      const [row] = await q`SELECT enabled, last_planned_for FROM schedules
        WHERE id = ${op.id} FOR UPDATE`;
      if (!row) return null;
      const plannedFor = row.last_planned_for;
      return {
        enabled: row.enabled === true,
        lastPlannedFor: plannedFor == null ? null : Number(plannedFor),
      };
    }
    case "scheduleActive": {
      const [active] = await q`SELECT count(*) FILTER (WHERE state = 'executing') AS executing,
          count(*) FILTER (WHERE state <> 'executing') AS waiting
        FROM jobs WHERE schedule_id = ${op.id}
          AND state IN ('scheduled', 'available', 'executing', 'retryable')`;
      return {
        executing: Number(active?.executing ?? 0),
        waiting: Number(active?.waiting ?? 0),
      };
    }
    case "occurrencesInsert":
      return await insertNewOccurrences(core, q, op.jobs, op.now);
    case "scheduleAdvance":
      await q`UPDATE schedules SET
          last_planned_for = coalesce(${op.plannedFor}::bigint, last_planned_for),
          misfires = misfires + ${op.misfires}::integer,
          last_misfire_for = coalesce(${op.lastMisfireFor}::bigint, last_misfire_for),
          updated_at = ${op.now}::bigint
        WHERE id = ${op.id}`;
      return undefined;
    case "scheduleSet": {
      const result = await q`UPDATE schedules SET enabled = ${op.enabled}::boolean,
          disabled_reason = ${op.reason}::text, disabled_by = ${op.actor}::text,
          disabled_at = ${op.at}::bigint, updated_at = ${op.now}::bigint
        WHERE id = ${op.id}`;
      return result.count !== 0;
    }
  }
}

/**
 * The planner's insert: occurrences already committed are reported as
 * duplicates from a plain read, and only the others are inserted. An
 * insert that met an existing occurrence row a claimer has just locked
 * would wait for that claimer, which in turn waits for the schedule row
 * this planner holds (to set last_started_at): a deadlock. Occurrences
 * not yet committed can only be another planner's, and those wait for
 * the schedule's row before they insert.
 */
async function insertNewOccurrences(
  core: PostgresCore,
  q: Sql,
  jobs: NewJob[],
  now: number,
): Promise<InsertResult[]> {
  const identities = jobs.flatMap((j) => (j.occurrence === null ? [] : [j.occurrence]));
  if (identities.length === 0) return await insertJobs(core, q, jobs, now);
  const existing = await q`SELECT id, queue, state, occurrence FROM jobs
    WHERE occurrence = ANY(${identities}::text[])`;
  const byOccurrence = new Map(existing.map((r) => [String(r.occurrence), r]));
  const fresh = jobs.filter((j) => j.occurrence === null || !byOccurrence.has(j.occurrence));
  const inserted = await insertJobs(core, q, fresh, now);
  let next = 0;
  return jobs.map((job) => {
    const row = job.occurrence === null ? undefined : byOccurrence.get(job.occurrence);
    return row ? toInsertResult(row, true) : inserted[next++]!;
  });
}

/** The schedule ops that answer nothing: they are pipelined (see `PostgresCore.lifecycle`). */
export const SCHEDULE_WRITES: ReadonlySet<ScheduleOp["op"]> = new Set<ScheduleOp["op"]>([
  "scheduleAdvance",
]);
