/**
 * The PostgreSQL side of report runs ({@linkcode StoreReports}): the
 * statements behind the store's `reportRun*` methods, each run on the pool,
 * or on the open transaction of a transaction's view. A run's writes after its creation are fenced by its job: the
 * statement that writes checks the job is `executing` with the attempt's
 * fence, locking the job row (`FOR UPDATE`) so a rescue or a cancel cannot
 * slip in between. A new run's concurrency check and insert hold a
 * transaction-scoped advisory lock on the report, so two requests at once
 * are counted one after the other.
 *
 * @module
 */

import type { ReportRun } from "../report_types.ts";
import { toReportRun } from "../report_rows.ts";
import type {
  IngestLease,
  ReportRunCreateParams,
  ReportRunFilter,
  ReportRunFinishParams,
  StoreReports,
} from "../store.ts";
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";

type Row = Record<string, unknown>;

const LIVE_JOB = ["available", "scheduled", "executing", "retryable"];

function columns(q: Sql) {
  return q`r.*, j.state AS job_state, j.errors -> -1 ->> 'error' AS job_error`;
}

async function held(q: Sql, jobId: number, fence: number): Promise<boolean> {
  const rows = await q`SELECT 1 FROM jobs WHERE id = ${jobId}::bigint AND state = 'executing'
    AND fence = ${fence}::bigint FOR UPDATE`;
  return rows.length > 0;
}

/**
 * One run with its job's state, on `q` (a transaction sees the run it made);
 * with `tenant`, only that tenant's.
 */
async function runById(
  q: Sql,
  id: number,
  tenant: string | null = null,
): Promise<ReportRun | null> {
  const [row] = await q`SELECT ${columns(q)} FROM report_runs AS r
    LEFT JOIN jobs AS j ON j.id = r.job_id WHERE r.id = ${id}::bigint
      AND (${tenant}::text IS NULL OR r.tenant = ${tenant})`;
  return row ? toReportRun(row) : null;
}

/**
 * The {@linkcode StoreReports} methods of the PostgreSQL store, over `core`
 * (report runs), each with its transaction policy: its own transaction where
 * it needs one (`core.begin` joins a transaction's view).
 */
export function postgresReports(core: PostgresCore): StoreReports {
  return core.guard({
    async reportRunCreate(
      params: ReportRunCreateParams,
    ): Promise<{ run: ReportRun } | { active: number[] }> {
      return await core.begin(async (q) => {
        await q`SELECT pg_advisory_xact_lock(hashtext('jobs.report_run'),
          hashtext(${`${core.schema} ${params.report}`}))`;
        const active = await q`SELECT r.id FROM report_runs AS r JOIN jobs AS j ON j.id = r.job_id
          WHERE r.report = ${params.report} AND r.state IN ('queued', 'running')
            AND j.state = ANY(${LIVE_JOB}::text[])
          ORDER BY r.id`;
        if (active.length >= params.maxConcurrent) {
          return { active: active.map((r) => Number(r.id)) };
        }
        const [row] = await q`INSERT INTO report_runs (report, state, job_id, tenant, actor, roles,
            params, sort, format, requested_at, updated_at)
          VALUES (${params.report}, 'queued', ${params.jobId}::bigint, ${params.tenant}, ${params.actor},
            ${JSON.stringify(params.roles)}::jsonb, ${JSON.stringify(params.params)}::jsonb,
            ${params.sort}, ${params.format}, ${params.now}::bigint, ${params.now}::bigint)
          RETURNING id`;
        return { run: (await runById(q, Number(row!.id)))! };
      });
    },

    async reportRunStart(
      params: { jobId: number; fence: number; now: number },
    ): Promise<ReportRun | null> {
      return await core.begin(async (q) => {
        if (!await held(q, params.jobId, params.fence)) return null;
        const [row] = await q`UPDATE report_runs SET state = 'running', rows = 0, bytes = 0,
            started_at = coalesce(started_at, ${params.now}::bigint), updated_at = ${params.now}::bigint
          WHERE job_id = ${params.jobId}::bigint AND state IN ('queued', 'running')
          RETURNING id`;
        return row ? await runById(q, Number(row.id)) : null;
      });
    },

    async reportRunProgress(
      params: { lease: IngestLease; rows: number; bytes: number; now: number },
    ): Promise<boolean> {
      return await core.begin(async (q) => {
        const { lease } = params;
        if (!await held(q, lease.jobId, lease.fence)) return false;
        const result = await q`UPDATE report_runs SET rows = ${params.rows}::bigint,
            bytes = ${params.bytes}::bigint, updated_at = ${params.now}::bigint
          WHERE id = ${lease.runId}::bigint AND job_id = ${lease.jobId}::bigint AND state = 'running'`;
        return result.count !== 0;
      });
    },

    async reportRunFinish(params: ReportRunFinishParams): Promise<boolean> {
      return await core.begin(async (q) => {
        const { lease } = params;
        if (!await held(q, lease.jobId, lease.fence)) return false;
        const result = await q`UPDATE report_runs SET state = ${params.state},
            rows = ${params.rows}::bigint, bytes = ${params.bytes}::bigint, output = ${params.output},
            storage_key = ${params.storageKey}, error = ${params.error}, limit_name = ${params.limit},
            expires_at = ${params.expiresAt}::bigint, finished_at = ${params.now}::bigint,
            updated_at = ${params.now}::bigint
          WHERE id = ${lease.runId}::bigint AND job_id = ${lease.jobId}::bigint AND state = 'running'`;
        return result.count !== 0;
      });
    },

    async reportRunGet({ id, tenant }: { id: number; tenant?: string }): Promise<ReportRun | null> {
      return await runById(core.tx ?? core.sql, id, tenant ?? null);
    },

    async reportRunsList(filter: ReportRunFilter): Promise<ReportRun[]> {
      const q = core.tx ?? core.sql;
      const limit = filter.limit ?? 50;
      const rows = await q`SELECT ${columns(q)} FROM report_runs AS r
        LEFT JOIN jobs AS j ON j.id = r.job_id
        WHERE (${filter.report ?? null}::text IS NULL OR r.report = ${filter.report ?? null})
          AND (${filter.tenant ?? null}::text IS NULL OR r.tenant = ${filter.tenant ?? null})
          AND (${filter.before ?? null}::bigint IS NULL OR r.id < ${filter.before ?? null}::bigint)
        ORDER BY r.id DESC LIMIT ${filter.state ? null : limit}`;
      const runs = (rows as Row[]).map(toReportRun);
      // The state filter reads the state as shown (a run whose job ended reads as its end).
      return filter.state ? runs.filter((r) => r.state === filter.state).slice(0, limit) : runs;
    },

    async reportRunsExpired(params: { now: number; limit: number }): Promise<ReportRun[]> {
      const q = core.tx ?? core.sql;
      const rows = await q`SELECT ${columns(q)} FROM report_runs AS r
        LEFT JOIN jobs AS j ON j.id = r.job_id
        WHERE r.expires_at IS NOT NULL AND r.expires_at <= ${params.now}::bigint
        ORDER BY r.expires_at LIMIT ${params.limit}`;
      return (rows as Row[]).map(toReportRun);
    },

    async reportRunsEndedBefore(params: { before: number; limit: number }): Promise<ReportRun[]> {
      const q = core.tx ?? core.sql;
      const rows = await q`SELECT ${columns(q)} FROM report_runs AS r
        LEFT JOIN jobs AS j ON j.id = r.job_id
        WHERE r.expires_at IS NULL AND coalesce(r.finished_at, r.updated_at) < ${params.before}::bigint
          AND (r.state IN ('failed', 'cancelled')
            OR (r.state IN ('queued', 'running')
              AND (j.state IS NULL OR j.state IN ('cancelled', 'discarded', 'completed'))))
        ORDER BY r.id LIMIT ${params.limit}`;
      return (rows as Row[]).map(toReportRun);
    },

    async reportRunDelete({ id }: { id: number }): Promise<boolean> {
      const q = core.tx ?? core.sql;
      const result = await q`DELETE FROM report_runs WHERE id = ${id}::bigint`;
      return result.count !== 0;
    },
  });
}
