/**
 * Rows of `report_runs` as the views read them, shared by the SQLite and
 * PostgreSQL adapters (their SQL returns the same columns, with the run's
 * job state as `job_state` and its last error as `job_error`).
 *
 * @module
 */

import type { ParamValue, ReportRun, ReportRunState } from "./report_types.ts";

type Row = Record<string, unknown>;

/**
 * The state a run reads as: its own, unless it is still queued or running
 * and its job (`job_state`, null when pruned) is no longer going to run it.
 */
export function reportStateOf(
  state: ReportRunState,
  jobState: string | null | undefined,
): ReportRunState {
  if (state !== "running" && state !== "queued") return state;
  if (jobState === "cancelled") return "cancelled";
  if (jobState === "discarded" || jobState === "completed" || jobState === null) return "failed";
  return state;
}

function parsed<T>(value: unknown, otherwise: T): T {
  if (value === null || value === undefined) return otherwise;
  return (typeof value === "string" ? JSON.parse(value) : value) as T;
}

const numOrNull = (v: unknown): number | null => v === null || v === undefined ? null : Number(v);

/** A row of `report_runs` joined with its job's state and last error. */
export function toReportRun(row: Row): ReportRun {
  const stored = row.state as ReportRunState;
  const state = reportStateOf(stored, row.job_state as string | null | undefined);
  const ended = state !== stored;
  return {
    id: Number(row.id),
    report: row.report as string,
    state,
    jobId: Number(row.job_id),
    tenant: (row.tenant as string | null) ?? null,
    actor: row.actor as string,
    roles: parsed<string[]>(row.roles, []),
    params: parsed<Record<string, ParamValue>>(row.params, {}),
    sort: (row.sort as string | null) ?? null,
    format: row.format as "csv" | "ndjson",
    rows: Number(row.rows ?? 0),
    bytes: Number(row.bytes ?? 0),
    output: (row.output as string | null) ?? null,
    storageKey: (row.storage_key as string | null) ?? null,
    error: (row.error as string | null) ??
      (ended ? (row.job_error as string | null) ?? `its job is ${row.job_state ?? "gone"}` : null),
    limit: (row.limit_name as string | null) ?? null,
    requestedAt: Number(row.requested_at),
    startedAt: numOrNull(row.started_at),
    updatedAt: Number(row.updated_at),
    finishedAt: numOrNull(row.finished_at),
    expiresAt: numOrNull(row.expires_at),
  };
}
