/**
 * The PostgreSQL side of workflow runs ({@linkcode StoreWorkflows}): the
 * statements that answer the bookkeeping's {@linkcode Op}s
 * (`src/workflow/bookkeeping.ts`), awaited one by one inside the store's
 * transaction ({@linkcode answerWorkflowOp}), the actions that run the
 * bookkeeping, and the reads of the views ({@linkcode postgresWorkflows}).
 * The order of reads and writes is the bookkeeping's, shared with SQLite.
 *
 * Locking: the run's row is locked (`FOR UPDATE`) before any of its step
 * rows change, so two steps of one run ending at once on two nodes advance
 * it one after the other, each seeing what the other committed; the record
 * path locks the runs of a batch in id order before its jobs (`jobs.ts`,
 * `lockRuns`), so batches cannot deadlock on each other.
 *
 * @module
 */

import type { SnapshotRow } from "../../workflow/advance.ts";
import {
  cancelRun,
  type Op,
  retryRun,
  startRun,
  type StepFinish,
} from "../../workflow/bookkeeping.ts";
import type { RunState, WorkflowRun, WorkflowRunDetail } from "../../workflow/types.ts";
import {
  checkRunStates,
  type Row,
  toLoadedRun,
  toWorkflowRun,
  toWorkflowStepRow,
} from "../rows.ts";
import type {
  StoreWorkflows,
  WorkflowActionResult,
  WorkflowFilter,
  WorkflowStartParams,
} from "../store.ts";
import type { PostgresCore } from "./core.ts";
import { appendError, clearUnique, type Fragment, runAgain, type Sql } from "./fragments.ts";
import { countRows } from "./counts.ts";
import { insertJobs } from "./jobs.ts";

/**
 * The {@linkcode StoreWorkflows} methods of the PostgreSQL store, over
 * `core` (workflow runs: starts, actions, reads and the prune), each with
 * its transaction policy: its own transaction where it needs one
 * (`core.begin` joins a transaction's view).
 */
export function postgresWorkflows(core: PostgresCore): StoreWorkflows {
  return core.guard({
    async workflowStart(params: WorkflowStartParams): Promise<{
      id: number;
      duplicate: boolean;
      queues: string[];
    }> {
      return await core.begin(async (tx) => {
        if (params.key !== null) {
          // Starts with one key wait for each other here, so the second finds the first's run.
          await tx`SELECT pg_advisory_xact_lock(hashtext('jobs.workflow_start'), hashtext(${params.key}))`;
        }
        const started = await core.lifecycle(tx, startRun(params));
        return { id: started.id, duplicate: started.duplicate, queues: started.queues };
      });
    },

    async workflowGet(
      { id, tenant }: { id: number; tenant?: string },
    ): Promise<WorkflowRunDetail | null> {
      const q = core.tx ?? core.sql;
      const [row] = tenant === undefined
        ? await q`SELECT * FROM workflow_runs WHERE id = ${id}::bigint`
        : await q`SELECT * FROM workflow_runs WHERE id = ${id}::bigint AND tenant = ${tenant}`;
      if (!row) return null;
      const steps = (await stepRows(q, id)).map(toWorkflowStepRow);
      return { run: toWorkflowRun(row), definition: JSON.parse(String(row.definition)), steps };
    },

    async workflowsList(params: WorkflowFilter): Promise<WorkflowRun[]> {
      const q = core.tx ?? core.sql;
      const states = checkRunStates(params.state);
      const desc = params.desc ?? true;
      const limit = params.limit ?? 100;
      if (!Number.isInteger(limit) || limit < 1) {
        throw new RangeError(`limit must be a whole number >= 1, got ${params.limit}`);
      }
      if (params.after !== undefined && !Number.isInteger(params.after)) {
        throw new RangeError(`after must be a run id (a whole number), got ${params.after}`);
      }
      const where: Fragment[] = [q`true`];
      if (states) where.push(q`state = ANY(${states}::text[])`);
      if (params.workflow !== undefined) where.push(q`workflow = ${params.workflow}`);
      if (params.tenant !== undefined) where.push(q`tenant = ${params.tenant}`);
      if (params.after !== undefined) {
        where.push(desc ? q`id < ${params.after}::bigint` : q`id > ${params.after}::bigint`);
      }
      const condition = where.reduce((a, b) => q`${a} AND ${b}`);
      const rows = desc
        ? await q`SELECT * FROM workflow_runs WHERE ${condition} ORDER BY id DESC
          LIMIT ${limit}::bigint`
        : await q`SELECT * FROM workflow_runs WHERE ${condition} ORDER BY id LIMIT ${limit}::bigint`;
      return rows.map((r) => toWorkflowRun(r as Row));
    },

    async workflowsCount(): Promise<{ workflow: string; state: RunState; count: number }[]> {
      const q = core.sql;
      const rows = await q`SELECT workflow, state, count(*) AS count FROM workflow_runs
        GROUP BY workflow, state ORDER BY workflow, state`;
      return rows.map((r) => ({
        workflow: String(r.workflow),
        state: r.state as RunState,
        count: Number(r.count),
      }));
    },

    async workflowCompensationsCount(): Promise<
      { workflow: string; state: string; count: number }[]
    > {
      const q = core.sql;
      const rows = await q`SELECT r.workflow, s.state, count(*) AS count
        FROM workflow_steps AS s JOIN workflow_runs AS r ON r.id = s.run_id
        WHERE s.kind = 'compensation' GROUP BY r.workflow, s.state ORDER BY 1, 2`;
      return rows.map((r) => ({
        workflow: String(r.workflow),
        state: String(r.state),
        count: Number(r.count),
      }));
    },

    async workflowCancel(params: { id: number; now: number; reason: string }): Promise<
      WorkflowActionResult | null
    > {
      return await core.begin(async (tx) =>
        actionResult(await core.lifecycle(tx, cancelRun(params.id, params.reason, params.now)))
      );
    },

    async workflowRetry(params: { id: number; now: number }): Promise<WorkflowActionResult | null> {
      return await core.begin(async (tx) =>
        actionResult(await core.lifecycle(tx, retryRun(params.id, params.now)))
      );
    },

    async workflowsPrune(params: {
      before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
      limit: number;
    }): Promise<number> {
      return await core.sql.begin(async (q) => {
        const { completed = null, cancelled = null, discarded = null } = params.before;
        const rows = await q`DELETE FROM workflow_runs WHERE id IN (
            SELECT id FROM workflow_runs WHERE finished_at IS NOT NULL AND (
              (state = 'completed' AND finished_at < ${completed}::bigint)
              OR (state IN ('compensated', 'cancelled') AND finished_at < ${cancelled}::bigint)
              OR (state = 'failed' AND finished_at < ${discarded}::bigint))
            ORDER BY id LIMIT ${params.limit}::bigint
            FOR UPDATE SKIP LOCKED)
          RETURNING id`;
        // The step rows go with their run (ON DELETE CASCADE).
        return rows.length;
      });
    },

    async workflowCursorGet({ jobId }: { jobId: number }): Promise<string | null> {
      const q = core.tx ?? core.sql;
      const [row] = await q`SELECT cursor FROM workflow_steps WHERE job_id = ${jobId}::bigint`;
      return row?.cursor ?? null;
    },

    async workflowCursorSet(
      params: { jobId: number; fence: number; value: string; now: number },
    ): Promise<boolean> {
      const q = core.tx ?? core.sql;
      const result = await q`UPDATE workflow_steps SET cursor = ${params.value}
        WHERE job_id = ${params.jobId}::bigint AND EXISTS (
          SELECT 1 FROM jobs WHERE id = ${params.jobId}::bigint AND state = 'executing'
            AND fence = ${params.fence}::bigint)`;
      return result.count !== 0;
    },
  });
}

/** Answers one op of the workflow bookkeeping on `q`, an open transaction. */
export async function answerWorkflowOp(core: PostgresCore, op: Op, q: Sql): Promise<unknown> {
  switch (op.op) {
    case "all":
      return await Promise.all(op.ops.map((o) => answerWorkflowOp(core, o, q)));
    case "stepsByJobs": {
      const rows = await q`SELECT run_id, kind, step, item, state, job_id FROM workflow_steps
        WHERE job_id = ANY(${op.jobIds}::bigint[])`;
      return rows.map((row) => ({
        runId: Number(row.run_id),
        kind: row.kind,
        step: row.step,
        item: Number(row.item),
        state: row.state,
        jobId: Number(row.job_id),
      }));
    }
    case "stepsFinish": {
      await finishRows(q, op.rows, op.now);
      return undefined;
    }
    case "itemsEnded": {
      const groups = JSON.stringify(
        op.groups.map((g) => ({ run_id: g.runId, step: g.step, count: g.count })),
      );
      const rows = await q`UPDATE workflow_steps AS s SET remaining = s.remaining - g.count
        FROM jsonb_to_recordset(${groups}::text::jsonb) AS g(run_id bigint, step text,
          count integer)
        WHERE s.run_id = g.run_id AND s.kind = 'step' AND s.step = g.step AND s.item = -1
        RETURNING s.run_id, s.step, s.remaining, s.state`;
      return rows.map((r) => ({
        runId: Number(r.run_id),
        step: String(r.step),
        remaining: Number(r.remaining),
        state: r.state,
      }));
    }
    case "itemResults": {
      const rows = await q`SELECT item, result FROM workflow_steps
        WHERE run_id = ${op.runId}::bigint AND kind = 'step' AND step = ${op.step} AND item >= 0`;
      return rows.map((r) => ({ item: Number(r.item), result: r.result ?? null }));
    }
    case "runsGet": {
      // In id order: every path that locks several runs locks them alike.
      const rows = await q`SELECT id, workflow, state, input, tenant, error, cancel_reason,
          definition
        FROM workflow_runs WHERE id = ANY(${op.runIds}::bigint[]) ORDER BY id FOR UPDATE`;
      return rows.map(toLoadedRun);
    }
    case "runByKey": {
      const [row] = await q`SELECT id FROM workflow_runs WHERE key = ${op.key}`;
      return row ? Number(row.id) : null;
    }
    case "runInsert": {
      // A racing start with the same key waits for this one, then finds its row.
      const [row] = await q`INSERT INTO workflow_runs (workflow, hash, definition, state, input,
          tenant, key, started_at, updated_at)
        VALUES (${op.definition.id}, ${op.definition.hash}, ${JSON.stringify(op.definition)},
          'running', ${op.input}, ${op.tenant}, ${op.key}, ${op.now}::bigint, ${op.now}::bigint)
        RETURNING id`;
      return Number(row!.id);
    }
    case "snapshots": {
      // Only a running row's job state matters (is it executing?): looked up
      // by id for those rows alone, whatever the planner thinks of a join.
      const rows = await q`SELECT s.run_id, s.kind, s.step, s.job_id, s.state, s.result, s.seq,
          s.error,
          CASE WHEN s.state = 'running'
            THEN (SELECT j.state FROM jobs AS j WHERE j.id = s.job_id) END AS job_state
        FROM workflow_steps AS s
        WHERE s.run_id = ANY(${op.runIds}::bigint[]) AND s.item = -1`;
      return rows.map((r): SnapshotRow & { runId: number } => ({
        runId: Number(r.run_id),
        kind: r.kind,
        step: String(r.step),
        jobId: r.job_id == null ? null : Number(r.job_id),
        state: r.state,
        result: r.result ?? null,
        seq: r.seq == null ? null : Number(r.seq),
        error: r.error ?? null,
        jobState: r.job_state ?? null,
      }));
    }
    case "rows":
      return (await stepRows(q, op.runId)).map(toWorkflowStepRow);
    case "jobsInsert":
      return await insertJobs(core, q, op.jobs, op.now);
    case "jobsCancel":
      return await cancelWaiting(q, op.ids, op.error, op.now);
    case "itemsCancel": {
      const items = await q`SELECT s.item, s.job_id FROM workflow_steps AS s
        JOIN jobs AS j ON j.id = s.job_id
        WHERE s.run_id = ${op.runId}::bigint AND s.kind = 'step' AND s.step = ${op.step}
          AND s.item >= 0 AND s.state = 'running' AND j.state IN ${waiting(q)}`;
      const ids = items.map((r) => Number(r.job_id));
      const cancelled = await cancelWaiting(q, ids, op.error, op.now);
      if (cancelled.length > 0) {
        await q`UPDATE workflow_steps SET state = 'cancelled', error = ${op.error},
            finished_at = ${op.now}::bigint
          WHERE job_id = ANY(${cancelled}::bigint[])`;
      }
      return cancelled;
    }
    case "jobsRetry": {
      // Each job's state as it is locked (in id order), for the counts.
      const rows = await q`WITH was AS (
          SELECT id, state FROM jobs
          WHERE id = ANY(${op.ids}::bigint[]) AND state IN ('completed', 'cancelled', 'discarded')
          ORDER BY id FOR UPDATE),
        retried AS (
          UPDATE jobs SET ${runAgain(q, op.now)} FROM was WHERE jobs.id = was.id
          RETURNING jobs.id, jobs.queue, was.state AS was, jobs.state),
        counted AS (${countRows(q, "retried")})
        SELECT id, queue FROM retried`;
      const queues = [...new Set(rows.map((r) => String(r.queue)))];
      if (queues.length > 0) await core.notify(q, queues);
      return rows.map((r) => Number(r.id));
    }
    case "stepsInsert": {
      const rows = JSON.stringify(op.rows.map((r) => ({
        run_id: r.runId,
        kind: r.kind,
        step: r.step,
        item: r.item,
        job_id: r.jobId,
        state: r.state,
        result: r.result,
        error: r.error,
        seq: r.seq,
        items: r.items,
        now: r.now,
      })));
      await q`INSERT INTO workflow_steps (run_id, kind, step, item, job_id, state, result,
          error, seq, items, remaining, created_at, finished_at)
        SELECT run_id, kind, step, item, job_id, state, result, error, seq, items, items, now,
          CASE WHEN state = 'running' THEN NULL ELSE now END
        FROM jsonb_to_recordset(${rows}::text::jsonb) AS r(run_id bigint, kind text, step text,
          item integer, job_id bigint, state text, result text, error text, seq integer,
          items integer, now bigint)`;
      return undefined;
    }
    case "stepsReopen":
      for (const k of op.keys) {
        await q`UPDATE workflow_steps SET state = 'running', error = NULL, result = NULL,
            finished_at = NULL, seq = NULL,
            remaining = coalesce(${k.remaining}::integer, remaining)
          WHERE run_id = ${k.runId}::bigint AND kind = ${k.kind} AND step = ${k.step}
            AND item = ${k.item}::integer`;
      }
      return undefined;
    case "stepsDelete":
      for (const k of op.keys) {
        await q`DELETE FROM workflow_steps
          WHERE run_id = ${k.runId}::bigint AND kind = ${k.kind} AND step = ${k.step}
            AND item = ${k.item}::integer`;
      }
      return undefined;
    case "runsSet": {
      const ids = op.runs.map((r) => r.runId);
      const runs = JSON.stringify(
        Object.fromEntries(op.runs.map((r) => [r.runId, {
          state: r.state,
          error: r.error,
          finished: r.finished,
          cancel: r.cancelReason,
        }])),
      );
      // By id, each run's values looked up in one JSON object (see finishRows).
      const m = q`(input.all -> w.id::text)`;
      await q`UPDATE workflow_runs AS w SET state = ${m} ->> 'state', error = ${m} ->> 'error',
          updated_at = ${op.now}::bigint,
          finished_at = CASE WHEN (${m} ->> 'finished')::boolean THEN ${op.now}::bigint END,
          cancel_reason = coalesce(${m} ->> 'cancel', w.cancel_reason)
        FROM (SELECT ${runs}::text::jsonb AS all) AS input
        WHERE w.id = ANY(${ids}::bigint[])`;
      return undefined;
    }
    case "auditRecord": {
      // In the given order: the audit's ids are the trail's order within one instant.
      const rows = JSON.stringify(
        op.rows.map((r) => ({ ...r, details: JSON.stringify(r.details) })),
      );
      await q`INSERT INTO audit (at, actor, action, target, reason, details)
        SELECT a.at, a.actor, a.action, a.target, a.reason, a.details
        FROM ROWS FROM (jsonb_to_recordset(${rows}::text::jsonb)
            AS (at bigint, actor text, action text, target text, reason text, details text))
          WITH ORDINALITY AS a(at, actor, action, target, reason, details, n)
        ORDER BY a.n`;
      return undefined;
    }
  }
}

/** The ops whose answer is nothing: they are sent without waiting for their reply. */
export const WORKFLOW_WRITES: ReadonlySet<Op["op"]> = new Set([
  "stepsFinish",
  "stepsInsert",
  "stepsReopen",
  "stepsDelete",
  "runsSet",
  "auditRecord",
]);

function waiting(q: Sql): Fragment {
  return q`('scheduled', 'available', 'retryable')`;
}

/** Ends rows, one statement for all of them. */
async function finishRows(q: Sql, rows: StepFinish[], now: number): Promise<void> {
  if (rows.length === 0) return;
  // The runs' rows by the primary key's prefix, then matched to the values.
  const runs = [...new Set(rows.map((r) => r.key.runId))];
  const values = JSON.stringify(rows.map((r) => ({
    run_id: r.key.runId,
    kind: r.key.kind,
    step: r.key.step,
    item: r.key.item,
    state: r.state,
    result: r.result,
    error: r.error,
    seq: r.seq,
  })));
  await q`UPDATE workflow_steps AS s SET state = v.state, result = v.result, error = v.error,
      seq = v.seq, finished_at = ${now}::bigint
    FROM jsonb_to_recordset(${values}::text::jsonb) AS v(run_id bigint, kind text, step text,
      item integer, state text, result text, error text, seq integer)
    WHERE s.run_id = ANY(${runs}::bigint[])
      AND s.run_id = v.run_id AND s.kind = v.kind AND s.step = v.step AND s.item = v.item`;
}

async function cancelWaiting(q: Sql, ids: number[], error: string, now: number) {
  if (ids.length === 0) return [];
  // Each job's state as it is locked (in id order), for the counts.
  const rows = await q`WITH was AS (
      SELECT id, state FROM jobs WHERE id = ANY(${ids}::bigint[]) AND state IN ${waiting(q)}
      ORDER BY id FOR UPDATE),
    cancelled AS (
      UPDATE jobs SET state = 'cancelled', cancelled_at = ${now}::bigint,
        lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, error)}
      FROM was WHERE jobs.id = was.id
      RETURNING jobs.id, jobs.queue, was.state AS was, jobs.state),
    counted AS (${countRows(q, "cancelled")})
    SELECT id FROM cancelled`;
  return rows.map((r) => Number(r.id));
}

function stepRows(q: Sql, runId: number) {
  return q`SELECT * FROM workflow_steps WHERE run_id = ${runId}::bigint
    ORDER BY kind DESC, created_at, step, item`;
}

/** What a workflow action tells its caller: null when there is no such run. */
function actionResult(
  outcome: { was: RunState | null; state: RunState | null; jobs: number[] },
): WorkflowActionResult | null {
  if (outcome.was === null || outcome.state === null) return null;
  return { was: outcome.was, state: outcome.state, jobs: outcome.jobs };
}
