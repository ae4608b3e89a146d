/**
 * The words of report runs: the request a caller makes (bound parameter
 * values, tenant, actor, roles), the args of the `jobs.report` job that
 * runs it, and the row a store keeps of each run. Pure data; no store, no
 * I/O.
 *
 * A run is one row of `report_runs`, made `queued` in the same transaction
 * as its `jobs.report` job (so a caller has the run id at once). The job
 * marks it `running` (fenced by its attempt), writes the output page by
 * page to a local file while it reports progress (rows, bytes), stores the
 * file under `<prefix>/<tenant>/<report>/<run-id>.<ext>`, and ends it
 * `completed` with its location and expiry, or `failed` / `cancelled` with
 * nothing left behind. The pruner removes an expired output and its row.
 *
 * @module
 */

import type { CompiledReport } from "./definition.ts";

/** The queue report runs go to. */
export const REPORT_QUEUE = "reports";

/** A report run's state. */
export type ReportRunState = "queued" | "running" | "completed" | "failed" | "cancelled";

/** A parameter value as it is bound: already checked against its declared type. */
export type ParamValue = string | number | boolean;

/** Who asks for a run, and with what. */
export interface ReportRequest {
  /** Declared parameters, typed (`date` and `datetime` stay ISO text). */
  params: Record<string, ParamValue>;
  /** Bound as `:tenant`; required unless the report's tenancy is shared. */
  tenant: string | null;
  /** Bound as `:actor`; recorded in the run and in every audit row. */
  actor: string;
  /** The actor's roles: checked against `authorize.roles` and the sensitive columns. */
  roles: string[];
  /** A key of the report's `sort.keys` (never SQL), or null for the query's own order. */
  sort: string | null;
}

/** The args of a `jobs.report` job. */
export interface ReportJobArgs {
  kind: "report";
  report: CompiledReport;
  request: ReportRequest;
}

/** One row of `report_runs`. */
export interface ReportRun {
  id: number;
  report: string;
  /** The stored state, or what the run's job says when the job ended without the run. */
  state: ReportRunState;
  jobId: number;
  tenant: string | null;
  actor: string;
  roles: string[];
  params: Record<string, ParamValue>;
  sort: string | null;
  format: "csv" | "ndjson";
  /** Rows and bytes written so far (the final counts once completed). */
  rows: number;
  bytes: number;
  /** Where the output is: a file path (folder storage) or a bucket key; null until completed. */
  output: string | null;
  /** The storage key the output is kept under (`<prefix>/<tenant>/<report>/<run>.<ext>`). */
  storageKey: string | null;
  /** Why it failed or was cancelled. */
  error: string | null;
  /** The limit a failed run hit (`max_rows`, `max_runtime`, ...), null otherwise. */
  limit: string | null;
  requestedAt: number;
  startedAt: number | null;
  updatedAt: number;
  finishedAt: number | null;
  /** When the pruner removes the output (a completed run only). */
  expiresAt: number | null;
}
