/**
 * The SQLite side of workflow runs: the statements that answer the
 * bookkeeping's {@linkcode Op}s (`src/workflow/bookkeeping.ts`), run
 * synchronously inside the store's write transaction, and the reads of the
 * views. The order of reads and writes is the bookkeeping's, shared with
 * PostgreSQL; only the SQL is here.
 *
 * @module
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { InsertResult, NewJob } from "../../kernel/types.ts";
import type { SnapshotRow } from "../../workflow/advance.ts";
import type { Op, StepInsert } from "../../workflow/bookkeeping.ts";
import type { WorkflowRun, WorkflowRunDetail } from "../../workflow/types.ts";
import type { WorkflowFilter } from "../store.ts";
import { checkRunStates, type Row, toWorkflowRun, toWorkflowStepRow } from "../rows.ts";
import { APPEND_ERROR, CLEAR_UNIQUE, RUN_AGAIN } from "./sql.ts";

const WAITING = `('scheduled', 'available', 'retryable')`;

const SQL = {
  stepByJob: `SELECT run_id, kind, step, item, state FROM workflow_steps WHERE job_id = :job`,
  stepFinish: `UPDATE workflow_steps SET state = :state, result = :result, error = :error,
      finished_at = :now,
      seq = CASE WHEN :ordered THEN (SELECT coalesce(max(seq), 0) + 1 FROM workflow_steps
        WHERE run_id = :run) END
    WHERE run_id = :run AND kind = :kind AND step = :step AND item = :item`,
  itemEnded: `UPDATE workflow_steps SET remaining = remaining - 1
    WHERE run_id = :run AND kind = 'step' AND step = :step AND item = -1
    RETURNING remaining, state`,
  itemResults: `SELECT item, result FROM workflow_steps
    WHERE run_id = :run AND kind = 'step' AND step = :step AND item >= 0`,
  runGet: `SELECT id, workflow, state, input, tenant, error, cancel_reason, definition
    FROM workflow_runs WHERE id = :run`,
  runByKey: `SELECT id FROM workflow_runs WHERE key = :key`,
  runInsert: `INSERT INTO workflow_runs (workflow, hash, definition, state, input, tenant, key,
      started_at, updated_at)
    VALUES (:workflow, :hash, :definition, 'running', :input, :tenant, :key, :now, :now)
    RETURNING id`,
  snapshot: `SELECT s.kind, s.step, s.job_id, s.state, s.result, s.seq, s.error,
      j.state AS job_state
    FROM workflow_steps AS s LEFT JOIN jobs AS j ON j.id = s.job_id
    WHERE s.run_id = :run AND s.item = -1`,
  rows: `SELECT * FROM workflow_steps WHERE run_id = :run
    ORDER BY kind DESC, created_at, step, item`,
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
  stepInsert: `INSERT INTO workflow_steps (run_id, kind, step, item, job_id, state, result,
      error, seq, items, remaining, created_at, finished_at)
    VALUES (:run, :kind, :step, :item, :job, :state, :result, :error, :seq, :items, :items, :now,
      CASE WHEN :state = 'running' THEN NULL ELSE :now END)`,
  stepReopen: `UPDATE workflow_steps SET state = 'running', error = NULL, result = NULL,
      finished_at = NULL, seq = NULL, remaining = coalesce(:remaining, remaining)
    WHERE run_id = :run AND kind = :kind AND step = :step AND item = :item`,
  stepDelete: `DELETE FROM workflow_steps
    WHERE run_id = :run AND kind = :kind AND step = :step AND item = :item`,
  runSet: `UPDATE workflow_runs SET state = :state, error = :error, updated_at = :now,
      finished_at = CASE WHEN :finished THEN :now END,
      cancel_reason = coalesce(:cancel, cancel_reason)
    WHERE id = :run`,
  runRow: `SELECT * FROM workflow_runs WHERE id = :run`,
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

/** The workflow statements of one connection, and the answers to the bookkeeping's ops. */
export class SqliteWorkflows {
  #s: Record<keyof typeof SQL, StatementSync> | null = null;

  constructor(
    /** The connection (a function: the store opens it after building this). */
    readonly connection: () => DatabaseSync,
    /** The store's own insert (ids, uniqueness, wake-ups), inside the open transaction. */
    readonly insert: (jobs: NewJob[], now: number) => InsertResult[],
  ) {}

  get #q(): Record<keyof typeof SQL, StatementSync> {
    return this.#s ??= Object.fromEntries(
      Object.entries(SQL).map(([k, sql]) => [k, this.connection().prepare(sql)]),
    ) as Record<keyof typeof SQL, StatementSync>;
  }

  /** Forgets the prepared statements (the connection closed). */
  reset(): void {
    this.#s = null;
  }

  /** Answers one op of the bookkeeping; call only inside a write transaction. */
  answer(op: Op): unknown {
    const q = this.#q;
    switch (op.op) {
      case "stepByJob": {
        const row = q.stepByJob.get({ job: op.jobId }) as Row | undefined;
        if (!row) return null;
        return {
          runId: Number(row.run_id),
          kind: row.kind,
          step: row.step,
          item: Number(row.item),
          state: row.state,
        };
      }
      case "stepFinish":
        q.stepFinish.run({
          run: op.key.runId,
          kind: op.key.kind,
          step: op.key.step,
          item: op.key.item,
          state: op.state,
          result: op.result,
          error: op.error,
          ordered: op.ordered ? 1 : 0,
          now: op.now,
        });
        return undefined;
      case "itemEnded": {
        const row = q.itemEnded.get({ run: op.runId, step: op.step }) as Row;
        return { remaining: Number(row.remaining), state: row.state };
      }
      case "itemResults":
        return (q.itemResults.all({ run: op.runId, step: op.step }) as Row[]).map((r) => ({
          item: Number(r.item),
          result: r.result as string | null,
        }));
      case "runGet": {
        const row = q.runGet.get({ run: op.runId }) as Row | undefined;
        if (!row) return null;
        return {
          run: {
            id: Number(row.id),
            workflow: String(row.workflow),
            state: row.state,
            input: String(row.input),
            tenant: row.tenant ?? null,
            error: row.error ?? null,
            cancelReason: row.cancel_reason ?? null,
          },
          definition: String(row.definition),
        };
      }
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
      case "snapshot":
        return (q.snapshot.all({ run: op.runId }) as Row[]).map((r): SnapshotRow => ({
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
        return this.insert(op.jobs, op.now);
      case "jobsCancel":
        return op.ids.filter((id) =>
          q.jobCancel.get({ id, now: op.now, error: op.error }) !== undefined
        );
      case "itemsCancel": {
        const waiting = q.itemsWaiting.all({ run: op.runId, step: op.step }) as Row[];
        const cancelled: number[] = [];
        for (const w of waiting) {
          const id = Number(w.job_id);
          if (q.jobCancel.get({ id, now: op.now, error: op.error }) === undefined) continue;
          cancelled.push(id);
          q.stepFinish.run({
            run: op.runId,
            kind: "step",
            step: op.step,
            item: Number(w.item),
            state: "cancelled",
            result: null,
            error: op.error,
            ordered: 0,
            now: op.now,
          });
        }
        return cancelled;
      }
      case "jobsRetry":
        return op.ids.filter((id) => q.jobRetry.get({ id, now: op.now }) !== undefined);
      case "stepsInsert":
        for (const r of op.rows) q.stepInsert.run(stepInsertParams(r));
        return undefined;
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
      case "runSet":
        q.runSet.run({
          run: op.runId,
          state: op.state,
          error: op.error,
          finished: op.finished ? 1 : 0,
          cancel: op.cancelReason ?? null,
          now: op.now,
        });
        return undefined;
    }
  }

  get(id: number): WorkflowRunDetail | null {
    const row = this.#q.runRow.get({ run: id }) as Row | undefined;
    if (!row) return null;
    const steps = (this.#q.rows.all({ run: id }) as Row[]).map(toWorkflowStepRow);
    return { run: toWorkflowRun(row), definition: JSON.parse(String(row.definition)), steps };
  }

  list(params: WorkflowFilter): WorkflowRun[] {
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
    if (params.after !== undefined) {
      if (!Number.isInteger(params.after)) {
        throw new RangeError(`after must be a run id (a whole number), got ${params.after}`);
      }
      where.push(desc ? `id < :after` : `id > :after`);
      values.after = params.after;
    }
    // The clauses are fixed texts chosen above; every value is bound.
    const sql = `SELECT * FROM workflow_runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY id ${desc ? "DESC" : "ASC"} LIMIT :limit`;
    return (this.connection().prepare(sql).all(values) as Row[]).map(toWorkflowRun);
  }

  count(): { workflow: string; state: WorkflowRun["state"]; count: number }[] {
    return (this.#q.count.all() as Row[]).map((r) => ({
      workflow: String(r.workflow),
      state: r.state as WorkflowRun["state"],
      count: Number(r.count),
    }));
  }

  compensations(): { workflow: string; state: string; count: number }[] {
    return (this.#q.compensations.all() as Row[]).map((r) => ({
      workflow: String(r.workflow),
      state: String(r.state),
      count: Number(r.count),
    }));
  }

  /** See `Store.workflowsPrune`; inside a write transaction. */
  prune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
  }): number {
    const { completed = null, cancelled = null, discarded = null } = params.before;
    const ids =
      (this.#q.prune.all({ completed, cancelled, discarded, limit: params.limit }) as Row[])
        .map((r) => Number(r.id));
    if (ids.length > 0) this.#q.pruneSteps.run({ ids: JSON.stringify(ids) });
    return ids.length;
  }

  cursorGet(jobId: number): string | null {
    const row = this.#q.cursorGet.get({ job: jobId }) as Row | undefined;
    return (row?.cursor as string | null | undefined) ?? null;
  }

  cursorSet(params: { jobId: number; fence: number; value: string }): boolean {
    return this.#q.cursorSet.run({
      job: params.jobId,
      fence: params.fence,
      value: params.value,
    }).changes !== 0;
  }
}

function stepInsertParams(r: StepInsert) {
  return {
    run: r.runId,
    kind: r.kind,
    step: r.step,
    item: r.item,
    job: r.jobId,
    state: r.state,
    result: r.result,
    error: r.error,
    seq: r.seq,
    items: r.items,
    now: r.now,
  };
}
