/**
 * The SQLite side of workflow runs ({@linkcode StoreWorkflows}): the
 * statements that answer the bookkeeping's {@linkcode Op}s
 * (`src/workflow/bookkeeping.ts`) in {@linkcode answerWorkflowOp}, run
 * synchronously inside the store's write transaction, the reads of the
 * views, and the store's methods over them. The order of reads and writes
 * is the bookkeeping's, shared with PostgreSQL; only the SQL is here. The
 * statements are prepared at their first use (see `SqliteCore.onDemand`).
 *
 * @module
 */

import type { JobState } from "../../kernel/types.ts";
import type { SnapshotRow } from "../../workflow/advance.ts";
import { cancelRun, type Op, retryRun, startRun } from "../../workflow/bookkeeping.ts";
import type { RunState, WorkflowRun, WorkflowRunDetail } from "../../workflow/types.ts";
import type {
  StoreWorkflows,
  WorkflowActionResult,
  WorkflowFilter,
  WorkflowStartParams,
} from "../store.ts";
import type { SqliteCore } from "./core.ts";
import { insertFresh } from "./jobs.ts";
import {
  checkRunStates,
  type Row,
  toLoadedRun,
  toWorkflowRun,
  toWorkflowStepRow,
} from "../rows.ts";
import { APPEND_ERROR, CLEAR_UNIQUE, RUN_AGAIN } from "./sql.ts";

const WAITING = `('scheduled', 'available', 'retryable')`;

const SQL = {
  stepsByJobs: `SELECT run_id, kind, step, item, state, job_id FROM workflow_steps
    WHERE job_id IN (SELECT value FROM json_each(:jobs)) AND job_id IS NOT NULL`,
  // Each end as [run, kind, step, item, state, result, error, seq].
  stepsFinish: `UPDATE workflow_steps SET state = v.value ->> 4, result = v.value ->> 5,
      error = v.value ->> 6, seq = v.value ->> 7, finished_at = :now
    FROM json_each(:rows) AS v
    WHERE run_id = v.value ->> 0 AND kind = v.value ->> 1 AND step = v.value ->> 2
      AND item = v.value ->> 3`,
  itemsEnded: `UPDATE workflow_steps SET remaining = remaining - :count
    WHERE run_id = :run AND kind = 'step' AND step = :step AND item = -1
    RETURNING remaining, state`,
  itemResults: `SELECT item, result FROM workflow_steps
    WHERE run_id = :run AND kind = 'step' AND step = :step AND item >= 0`,
  runsGet: `SELECT id, workflow, state, input, tenant, error, cancel_reason, definition
    FROM workflow_runs WHERE id IN (SELECT value FROM json_each(:runs)) ORDER BY id`,
  runByKey: `SELECT id FROM workflow_runs WHERE key = :key`,
  runInsert: `INSERT INTO workflow_runs (workflow, hash, definition, state, input, tenant, key,
      started_at, updated_at)
    VALUES (:workflow, :hash, :definition, 'running', :input, :tenant, :key, :now, :now)
    RETURNING id`,
  snapshots: `SELECT s.run_id, s.kind, s.step, s.job_id, s.state, s.result, s.seq, s.error,
      j.state AS job_state
    FROM workflow_steps AS s
      -- Only a running row's job state matters (is it executing?).
      LEFT JOIN jobs AS j ON j.id = s.job_id AND s.state = 'running'
    WHERE s.run_id IN (SELECT value FROM json_each(:runs)) AND s.item = -1`,
  rows: `SELECT * FROM workflow_steps WHERE run_id = :run
    ORDER BY kind DESC, created_at, step, item`,
  // The state a job leaves, for the counts (RETURNING knows only the new one).
  jobState: `SELECT state, queue FROM jobs WHERE id = :id`,
  jobCancel: `UPDATE jobs SET state = 'cancelled', cancelled_at = :now, lease_expires_at = NULL,
      ${CLEAR_UNIQUE}, ${APPEND_ERROR}
    WHERE id = :id AND state IN ${WAITING}
    RETURNING id`,
  itemsWaiting: `SELECT s.item, s.job_id FROM workflow_steps AS s JOIN jobs AS j ON j.id = s.job_id
    WHERE s.run_id = :run AND s.kind = 'step' AND s.step = :step AND s.item >= 0
      AND s.state = 'running' AND j.state IN ${WAITING}`,
  jobRetry: `UPDATE jobs SET ${RUN_AGAIN}
    WHERE id = :id AND state IN ('completed', 'cancelled', 'discarded')
    RETURNING id, queue`,
  // Each row as [run, kind, step, item, job, state, result, error, seq, items, now].
  stepsInsert: `INSERT INTO workflow_steps (run_id, kind, step, item, job_id, state, result,
      error, seq, items, remaining, created_at, finished_at)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5,
      value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 9, value ->> 10,
      CASE WHEN value ->> 5 = 'running' THEN NULL ELSE value ->> 10 END
    FROM json_each(:rows) WHERE true`,
  stepReopen: `UPDATE workflow_steps SET state = 'running', error = NULL, result = NULL,
      finished_at = NULL, seq = NULL, remaining = coalesce(:remaining, remaining)
    WHERE run_id = :run AND kind = :kind AND step = :step AND item = :item`,
  stepDelete: `DELETE FROM workflow_steps
    WHERE run_id = :run AND kind = :kind AND step = :step AND item = :item`,
  // Each run as [id, state, error, finished (0/1), cancel reason].
  runsSet: `UPDATE workflow_runs SET state = v.value ->> 1, error = v.value ->> 2,
      updated_at = :now, finished_at = CASE WHEN v.value ->> 3 THEN :now END,
      cancel_reason = coalesce(v.value ->> 4, cancel_reason)
    FROM json_each(:runs) AS v WHERE workflow_runs.id = v.value ->> 0`,
  // Each row as [at, actor, action, target, reason, details (JSON)].
  auditRecord: `INSERT INTO audit (at, actor, action, target, reason, details)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5
    FROM json_each(:rows) ORDER BY key`,
  runRow: `SELECT * FROM workflow_runs WHERE id = :run`,
  runRowOf: `SELECT * FROM workflow_runs WHERE id = :run AND tenant = :tenant`,
  count: `SELECT workflow, state, count(*) AS count FROM workflow_runs
    GROUP BY workflow, state ORDER BY workflow, state`,
  compensations: `SELECT r.workflow, s.state, count(*) AS count
    FROM workflow_steps AS s JOIN workflow_runs AS r ON r.id = s.run_id
    WHERE s.kind = 'compensation' GROUP BY r.workflow, s.state ORDER BY 1, 2`,
  prune: `DELETE FROM workflow_runs WHERE id IN (
      SELECT id FROM workflow_runs WHERE finished_at IS NOT NULL AND (
        (state = 'completed' AND finished_at < :completed)
        OR (state IN ('compensated', 'cancelled') AND finished_at < :cancelled)
        OR (state = 'failed' AND finished_at < :discarded))
      ORDER BY id LIMIT :limit)
    RETURNING id`,
  pruneSteps: `DELETE FROM workflow_steps WHERE run_id IN (SELECT value FROM json_each(:ids))`,
  cursorGet: `SELECT cursor FROM workflow_steps WHERE job_id = :job`,
  cursorSet: `UPDATE workflow_steps SET cursor = :value
    WHERE job_id = :job AND EXISTS (
      SELECT 1 FROM jobs WHERE id = :job AND state = 'executing' AND fence = :fence)`,
} as const;

/** The {@linkcode StoreWorkflows} of the store over `core`. */
export function sqliteWorkflows(core: SqliteCore): StoreWorkflows {
  const q = () => core.onDemand(SQL);
  return {
    workflowStart(params: WorkflowStartParams): Promise<{
      id: number;
      duplicate: boolean;
      queues: string[];
    }> {
      return core.exclusive(() =>
        core.write(() => {
          const started = core.lifecycle(startRun(params));
          return { id: started.id, duplicate: started.duplicate, queues: started.queues };
        })
      );
    },

    workflowGet(params: { id: number; tenant?: string }): Promise<WorkflowRunDetail | null> {
      return core.exclusive(() => {
        const id = params.id;
        const row = (params.tenant === undefined
          ? q().runRow.get({ run: id })
          : q().runRowOf.get({ run: id, tenant: params.tenant })) as Row | undefined;
        if (!row) {
          return null;
        }
        const steps = (q().rows.all({ run: id }) as Row[]).map(toWorkflowStepRow);
        return { run: toWorkflowRun(row), definition: JSON.parse(String(row.definition)), steps };
      });
    },

    workflowsList(params: WorkflowFilter): Promise<WorkflowRun[]> {
      return core.exclusive(() => {
        const states = checkRunStates(params.state);
        const desc = params.desc ?? true;
        const limit = params.limit ?? 100;
        if (!Number.isInteger(limit) || limit < 1) {
          throw new RangeError(`limit must be a whole number >= 1, got ${params.limit}`);
        }
        const where: string[] = [];
        const values: Record<string, string | number> = { limit };
        if (states) {
          where.push(`state IN (SELECT value FROM json_each(:states))`);
          values.states = JSON.stringify(states);
        }
        if (params.workflow !== undefined) {
          where.push(`workflow = :workflow`);
          values.workflow = params.workflow;
        }
        if (params.tenant !== undefined) {
          where.push(`tenant = :tenant`);
          values.tenant = params.tenant;
        }
        if (params.after !== undefined) {
          if (!Number.isInteger(params.after)) {
            throw new RangeError(`after must be a run id (a whole number), got ${params.after}`);
          }
          where.push(desc ? `id < :after` : `id > :after`);
          values.after = params.after;
        }
        // The clauses are fixed texts chosen above; every value is bound.
        const sql = `SELECT * FROM workflow_runs ${
          where.length ? `WHERE ${where.join(" AND ")}` : ""
        }
      ORDER BY id ${desc ? "DESC" : "ASC"} LIMIT :limit`;
        return (core.db.prepare(sql).all(values) as Row[]).map(toWorkflowRun);
      });
    },

    workflowsCount(): Promise<{ workflow: string; state: RunState; count: number }[]> {
      return core.exclusive(() =>
        (q().count.all() as Row[]).map((r) => ({
          workflow: String(r.workflow),
          state: r.state as WorkflowRun["state"],
          count: Number(r.count),
        }))
      );
    },

    workflowCompensationsCount(): Promise<{ workflow: string; state: string; count: number }[]> {
      return core.exclusive(() =>
        (q().compensations.all() as Row[]).map((r) => ({
          workflow: String(r.workflow),
          state: String(r.state),
          count: Number(r.count),
        }))
      );
    },

    workflowCancel(params: { id: number; now: number; reason: string }): Promise<
      WorkflowActionResult | null
    > {
      return core.exclusive(() =>
        core.write(() =>
          actionResult(core.lifecycle(cancelRun(params.id, params.reason, params.now)))
        )
      );
    },

    workflowRetry(params: { id: number; now: number }): Promise<WorkflowActionResult | null> {
      return core.exclusive(() =>
        core.write(() => actionResult(core.lifecycle(retryRun(params.id, params.now))))
      );
    },

    workflowsPrune(params: {
      before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
      limit: number;
    }): Promise<number> {
      return core.exclusive(() =>
        core.write(() => {
          const { completed = null, cancelled = null, discarded = null } = params.before;
          const ids =
            (q().prune.all({ completed, cancelled, discarded, limit: params.limit }) as Row[])
              .map((r) => Number(r.id));
          if (ids.length > 0) q().pruneSteps.run({ ids: JSON.stringify(ids) });
          return ids.length;
        })
      );
    },

    workflowCursorGet(params: { jobId: number }): Promise<string | null> {
      return core.exclusive(() => {
        const row = q().cursorGet.get({ job: params.jobId }) as Row | undefined;
        return (row?.cursor as string | null | undefined) ?? null;
      });
    },

    workflowCursorSet(
      params: { jobId: number; fence: number; value: string; now: number },
    ): Promise<
      boolean
    > {
      return core.exclusive(() =>
        core.write(() =>
          q().cursorSet.run({
            job: params.jobId,
            fence: params.fence,
            value: params.value,
          }).changes !== 0
        )
      );
    },
  };
}

/** What a workflow action tells its caller: null when there is no such run. */
function actionResult(
  outcome: { was: RunState | null; state: RunState | null; jobs: number[] },
): WorkflowActionResult | null {
  if (outcome.was === null || outcome.state === null) return null;
  return { was: outcome.was, state: outcome.state, jobs: outcome.jobs };
}

/** Cancels the job `id` if it waits (not executing, not final), counting the move. */
function cancelWaiting(core: SqliteCore, id: number, now: number, error: string): boolean {
  const q = core.onDemand(SQL);
  const was = q.jobState.get({ id }) as Row | undefined;
  if (!was || q.jobCancel.get({ id, now, error }) === undefined) return false;
  core.counts.moved(id, was.queue as string, was.state as JobState, "cancelled");
  return true;
}

/** Answers one op of the bookkeeping; call only inside a write transaction. */
export function answerWorkflowOp(core: SqliteCore, op: Op): unknown {
  const q = core.onDemand(SQL);
  switch (op.op) {
    case "all":
      return op.ops.map((o) => answerWorkflowOp(core, o));
    case "stepsByJobs":
      return (q.stepsByJobs.all({ jobs: JSON.stringify(op.jobIds) }) as Row[]).map((row) => ({
        runId: Number(row.run_id),
        kind: row.kind,
        step: row.step,
        item: Number(row.item),
        state: row.state,
        jobId: Number(row.job_id),
      }));
    case "stepsFinish": {
      const rows = op.rows.map((r) => [
        r.key.runId,
        r.key.kind,
        r.key.step,
        r.key.item,
        r.state,
        r.result,
        r.error,
        r.seq,
      ]);
      q.stepsFinish.run({ rows: JSON.stringify(rows), now: op.now });
      return undefined;
    }
    case "itemsEnded":
      return op.groups.map((g) => {
        const row = q.itemsEnded.get({ run: g.runId, step: g.step, count: g.count }) as Row;
        return {
          runId: g.runId,
          step: g.step,
          remaining: Number(row.remaining),
          state: row.state,
        };
      });
    case "itemResults":
      return (q.itemResults.all({ run: op.runId, step: op.step }) as Row[]).map((r) => ({
        item: Number(r.item),
        result: r.result as string | null,
      }));
    case "runsGet":
      return (q.runsGet.all({ runs: JSON.stringify(op.runIds) }) as Row[]).map(toLoadedRun);
    case "runByKey": {
      const row = q.runByKey.get({ key: op.key }) as Row | undefined;
      return row ? Number(row.id) : null;
    }
    case "runInsert": {
      const row = q.runInsert.get({
        workflow: op.definition.id,
        hash: op.definition.hash,
        definition: JSON.stringify(op.definition),
        input: op.input,
        tenant: op.tenant,
        key: op.key,
        now: op.now,
      }) as Row;
      return Number(row.id);
    }
    case "snapshots":
      return (q.snapshots.all({ runs: JSON.stringify(op.runIds) }) as Row[]).map((r) => ({
        runId: Number(r.run_id),
        kind: r.kind as SnapshotRow["kind"],
        step: String(r.step),
        jobId: r.job_id == null ? null : Number(r.job_id),
        state: r.state as SnapshotRow["state"],
        result: (r.result as string | null) ?? null,
        seq: r.seq == null ? null : Number(r.seq),
        error: (r.error as string | null) ?? null,
        jobState: (r.job_state as SnapshotRow["jobState"]) ?? null,
      }));
    case "rows":
      return (q.rows.all({ run: op.runId }) as Row[]).map(toWorkflowStepRow);
    case "jobsInsert":
      return insertFresh(core, op.jobs, op.now);
    case "jobsCancel":
      return op.ids.filter((id) => cancelWaiting(core, id, op.now, op.error));
    case "itemsCancel": {
      const waiting = q.itemsWaiting.all({ run: op.runId, step: op.step }) as Row[];
      const cancelled: number[] = [];
      for (const w of waiting) {
        const id = Number(w.job_id);
        if (!cancelWaiting(core, id, op.now, op.error)) continue;
        cancelled.push(id);
        const end = [
          op.runId,
          "step",
          op.step,
          Number(w.item),
          "cancelled",
          null,
          op.error,
          null,
        ];
        q.stepsFinish.run({ rows: JSON.stringify([end]), now: op.now });
      }
      return cancelled;
    }
    case "jobsRetry":
      return op.ids.filter((id) => {
        const was = q.jobState.get({ id }) as Row | undefined;
        if (!was || q.jobRetry.get({ id, now: op.now }) === undefined) return false;
        core.counts.moved(id, was.queue as string, was.state as JobState, "available");
        return true;
      });
    case "stepsInsert": {
      const rows = op.rows.map((r) => [
        r.runId,
        r.kind,
        r.step,
        r.item,
        r.jobId,
        r.state,
        r.result,
        r.error,
        r.seq,
        r.items,
        r.now,
      ]);
      q.stepsInsert.run({ rows: JSON.stringify(rows) });
      return undefined;
    }
    case "stepsReopen":
      for (const k of op.keys) {
        q.stepReopen.run({
          run: k.runId,
          kind: k.kind,
          step: k.step,
          item: k.item,
          remaining: k.remaining,
        });
      }
      return undefined;
    case "stepsDelete":
      for (const k of op.keys) {
        q.stepDelete.run({ run: k.runId, kind: k.kind, step: k.step, item: k.item });
      }
      return undefined;
    case "runsSet": {
      const runs = op.runs.map((r) => [
        r.runId,
        r.state,
        r.error,
        r.finished ? 1 : 0,
        r.cancelReason,
      ]);
      q.runsSet.run({ runs: JSON.stringify(runs), now: op.now });
      return undefined;
    }
    case "auditRecord": {
      const rows = op.rows.map((r) => [
        r.at,
        r.actor,
        r.action,
        r.target,
        r.reason,
        JSON.stringify(r.details),
      ]);
      q.auditRecord.run({ rows: JSON.stringify(rows) });
      return undefined;
    }
  }
}
