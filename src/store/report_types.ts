/**
 * The rows the store keeps of report runs (`report_runs`), as the seam
 * reads and writes them. They are the store's words: `src/report/`
 * re-exports them from `report/types.ts`.
 *
 * @module
 */

/** A report run's state. */
export type ReportRunState = "queued" | "running" | "completed" | "failed" | "cancelled";

/** A parameter value as it is bound: already checked against its declared type. */
export type ParamValue = string | number | boolean;

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
