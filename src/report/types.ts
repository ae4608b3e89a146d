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
import type { ParamValue } from "../store/report_types.ts";

// The rows the store keeps of report runs are words of the store (a lower
// layer); reports use them under the same names.
export type { ParamValue, ReportRun, ReportRunState } from "../store/report_types.ts";

/** The queue report runs go to. */
export const REPORT_QUEUE = "reports";

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
