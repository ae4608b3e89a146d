/**
 * The SQLite side of report runs ({@linkcode StoreReports}): the statements
 * behind the store's `reportRun*` methods and those methods, each run
 * synchronously inside the store's transactions; no op of the shared
 * lifecycle is answered here. The statements are prepared at their first
 * use (see `SqliteCore.onDemand`).
 *
 * A run's writes after its creation are fenced by its job: they happen
 * only while the job is `executing` with the attempt's fence, checked by
 * the statement that writes. The concurrency check and the insert of a new
 * run share the write transaction, which SQLite serializes.
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
import type { SqliteCore } from "./core.ts";

type Row = Record<string, unknown>;

const LEASE =
  `EXISTS (SELECT 1 FROM jobs WHERE id = :job AND state = 'executing' AND fence = :fence)`;

const COLUMNS = `r.*, j.state AS job_state, json_extract(j.errors, '$[#-1].error') AS job_error`;
const FROM = `FROM report_runs AS r LEFT JOIN jobs AS j ON j.id = r.job_id`;

const SQL = {
  active: `SELECT r.id, j.state AS job_state ${FROM}
    WHERE r.report = :report AND (r.state = 'queued' OR r.state = 'running') ORDER BY r.id`,
  insert: `INSERT INTO report_runs (report, state, job_id, tenant, actor, roles, params, sort,
      format, requested_at, updated_at)
    VALUES (:report, 'queued', :job, :tenant, :actor, :roles, :params, :sort, :format, :now, :now)`,
  get: `SELECT ${COLUMNS} ${FROM} WHERE r.id = :id AND (:tenant IS NULL OR r.tenant = :tenant)`,
  start: `UPDATE report_runs SET state = 'running', rows = 0, bytes = 0,
      started_at = coalesce(started_at, :now), updated_at = :now
    WHERE job_id = :job AND (state = 'queued' OR state = 'running') AND ${LEASE}`,
  byJob: `SELECT ${COLUMNS} ${FROM} WHERE r.job_id = :job`,
  progress: `UPDATE report_runs SET rows = :rows, bytes = :bytes, updated_at = :now
    WHERE id = :run AND job_id = :job AND state = 'running' AND ${LEASE}`,
  finish: `UPDATE report_runs SET state = :state, rows = :rows, bytes = :bytes, output = :output,
      storage_key = :key, error = :error, limit_name = :limit, expires_at = :expires,
      finished_at = :now, updated_at = :now
    WHERE id = :run AND job_id = :job AND state = 'running' AND ${LEASE}`,
  list: `SELECT ${COLUMNS} ${FROM}
    WHERE (:report IS NULL OR r.report = :report) AND (:tenant IS NULL OR r.tenant = :tenant)
      AND (:before IS NULL OR r.id < :before)
    ORDER BY r.id DESC LIMIT :limit`,
  expired: `SELECT ${COLUMNS} ${FROM}
    WHERE r.expires_at IS NOT NULL AND r.expires_at <= :now ORDER BY r.expires_at LIMIT :limit`,
  endedBefore: `SELECT ${COLUMNS} ${FROM}
    WHERE r.expires_at IS NULL AND coalesce(r.finished_at, r.updated_at) < :before
      AND (r.state = 'failed' OR r.state = 'cancelled'
        OR ((r.state = 'queued' OR r.state = 'running')
          AND (j.state IS NULL OR j.state = 'cancelled' OR j.state = 'discarded'
            OR j.state = 'completed')))
    ORDER BY r.id LIMIT :limit`,
  delete: `DELETE FROM report_runs WHERE id = :id`,
} as const;

/** The {@linkcode StoreReports} of the store over `core`. */
export function sqliteReports(core: SqliteCore): StoreReports {
  const q = () => core.onDemand(SQL);
  const get = (id: number, tenant: string | null = null): ReportRun | null => {
    const row = q().get.get({ id, tenant }) as Row | undefined;
    return row ? toReportRun(row) : null;
  };
  return {
    reportRunCreate(
      params: ReportRunCreateParams,
    ): Promise<{ run: ReportRun } | { active: number[] }> {
      return core.exclusive(() =>
        core.write(() => {
          const s = q();
          const active = (s.active.all({ report: params.report }) as Row[])
            // A run whose job ended without it no longer holds a place.
            .filter((row) =>
              row.job_state === "available" || row.job_state === "scheduled" ||
              row.job_state === "executing" || row.job_state === "retryable"
            )
            .map((row) => Number(row.id));
          if (active.length >= params.maxConcurrent) return { active };
          const result = s.insert.run({
            report: params.report,
            job: params.jobId,
            tenant: params.tenant,
            actor: params.actor,
            roles: JSON.stringify(params.roles),
            params: JSON.stringify(params.params),
            sort: params.sort,
            format: params.format,
            now: params.now,
          });
          return { run: get(Number(result.lastInsertRowid))! };
        })
      );
    },

    reportRunStart(params: { jobId: number; fence: number; now: number }): Promise<
      ReportRun | null
    > {
      return core.exclusive(() =>
        core.write(() => {
          const s = q();
          const changed =
            s.start.run({ job: params.jobId, fence: params.fence, now: params.now }).changes;
          if (changed === 0) return null;
          return toReportRun(s.byJob.get({ job: params.jobId }) as Row);
        })
      );
    },

    reportRunProgress(
      params: { lease: IngestLease; rows: number; bytes: number; now: number },
    ): Promise<
      boolean
    > {
      return core.exclusive(() =>
        core.write(() =>
          q().progress.run({
            run: params.lease.runId,
            job: params.lease.jobId,
            fence: params.lease.fence,
            rows: params.rows,
            bytes: params.bytes,
            now: params.now,
          }).changes > 0
        )
      );
    },

    reportRunFinish(params: ReportRunFinishParams): Promise<boolean> {
      return core.exclusive(() =>
        core.write(() =>
          q().finish.run({
            run: params.lease.runId,
            job: params.lease.jobId,
            fence: params.lease.fence,
            state: params.state,
            rows: params.rows,
            bytes: params.bytes,
            output: params.output,
            key: params.storageKey,
            error: params.error,
            limit: params.limit,
            expires: params.expiresAt,
            now: params.now,
          }).changes > 0
        )
      );
    },

    reportRunGet(params: { id: number; tenant?: string }): Promise<ReportRun | null> {
      return core.exclusive(() => get(params.id, params.tenant ?? null));
    },

    reportRunsList(filter: ReportRunFilter): Promise<ReportRun[]> {
      return core.exclusive(() => {
        const rows = q().list.all({
          report: filter.report ?? null,
          tenant: filter.tenant ?? null,
          before: filter.before ?? null,
          // The state filter reads the state as shown (a run whose job ended reads as its end).
          limit: filter.state ? -1 : filter.limit ?? 50,
        }) as Row[];
        const runs = rows.map(toReportRun);
        if (!filter.state) return runs;
        return runs.filter((r) => r.state === filter.state).slice(0, filter.limit ?? 50);
      });
    },

    reportRunsExpired(params: { now: number; limit: number }): Promise<ReportRun[]> {
      return core.exclusive(() => (q().expired.all(params) as Row[]).map(toReportRun));
    },

    reportRunsEndedBefore(params: { before: number; limit: number }): Promise<ReportRun[]> {
      return core.exclusive(() => (q().endedBefore.all(params) as Row[]).map(toReportRun));
    },

    reportRunDelete(params: { id: number }): Promise<boolean> {
      return core.exclusive(() => core.write(() => q().delete.run({ id: params.id }).changes > 0));
    },
  };
}
