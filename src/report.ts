/**
 * Reports (`@jobs/jobs/report`): a heavy query whose output (CSV or NDJSON)
 * a person downloads later, run as a job on the `reports` queue. A report
 * is held to written-down bounds before it runs: the need record that earns
 * it its infrastructure, paging, an audit target, every parameter bound
 * (never SQL text from a caller), the tenant bound unless its tenancy is
 * shared, and a stable column contract. {@linkcode defineReport} checks and
 * compiles one (each broken rule a {@linkcode ReportProblem} with a code);
 * `jobs.report(report, request)` checks a request against it
 * ({@linkcode ReportRequestError}) and its limits
 * ({@linkcode ReportLimitExceeded}), and queues a run, kept by the store as
 * a {@linkcode ReportRun}.
 *
 * @example Run a report into a folder
 * ```ts
 * import assert from "node:assert/strict";
 * import { DatabaseSync } from "node:sqlite";
 * import { openJobs, silentLogger } from "@jobs/jobs";
 * import { defineReport } from "@jobs/jobs/report";
 * import { drainJobs } from "@jobs/jobs/testing";
 *
 * const dir = await Deno.makeTempDir();
 * const app = new DatabaseSync(`${dir}/app.db`);
 * app.exec("create table ledger (id integer primary key, booked_at text, amount real)");
 * app.exec(`insert into ledger (booked_at, amount)
 *   values ('2026-03-02', 12.5), ('2026-03-09', -4)`);
 * app.close();
 * // Named parameters, each bound, never spliced: :from from the request, the rest by the engine.
 * await Deno.writeTextFile(
 *   `${dir}/ledger.sql`,
 *   `select id, booked_at, amount from ledger
 *    where booked_at >= :from and id > coalesce(:after_key, -1)
 *    order by id limit :page_size`,
 * );
 * const ledger = defineReport({
 *   id: "ledger",
 *   need: {
 *     report: "the ledger since a date, for the accountants",
 *     volume: "a few thousand rows a month",
 *     plan: "a range scan over ledger by id",
 *     latency_target: "1m",
 *     max_result: "100000 rows",
 *     operator: "finance-ops",
 *   },
 *   source: { sqlite: "./app.db" },
 *   query: "./ledger.sql",
 *   params: { from: { type: "date" } },
 *   paging: { mode: "pages", size: 500, key: "id" },
 *   audit: { reason: "ledger export", target: "finance-audit" },
 *   format: { type: "csv", columns: ["id", "booked_at", "amount"] },
 *   tenancy: { mode: "shared", reason: "one company's ledger" },
 *   storage: { folder: "./exports" },
 *   contact: "finance-ops@example.com",
 * }, dir); // relative paths are resolved against dir
 *
 * const jobs = await openJobs(":memory:", { logger: silentLogger });
 * const { run } = await jobs.report(ledger, { params: { from: "2026-03-01" }, actor: "ada" });
 * await drainJobs(jobs); // in production, a runtime serving the "reports" queue runs it
 * const done = await jobs.store.reportRunGet({ id: run.id });
 * assert.equal(done?.state, "completed");
 * assert.equal(
 *   await Deno.readTextFile(done!.output!),
 *   "id,booked_at,amount\r\n1,2026-03-02,12.5\r\n2,2026-03-09,-4\r\n",
 * );
 * await jobs.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

export {
  checkReport,
  type CompiledReport,
  defineReport,
  type ParamType,
  queryParams,
  ReportDefinitionError,
  type ReportOptions,
  type ReportProblem,
  type ReportProblemCode,
} from "./report/definition.ts";
export {
  checkRequest,
  type RawRequest,
  type ReportRequestCode,
  ReportRequestError,
} from "./report/query.ts";
export {
  DEFAULT_LIMITS,
  type EffectiveLimits,
  effectiveLimits,
  LIMIT_NAMES,
  type LimitName,
  type LimitSource,
  ReportLimitExceeded,
  type ReportLimits,
  type SettingReader,
} from "./report/limits.ts";
export {
  type ParamValue,
  REPORT_QUEUE,
  type ReportJobArgs,
  type ReportRequest,
  type ReportRun,
  type ReportRunState,
} from "./report/types.ts";
export { REPORT_WORKER } from "./kernel/runs.ts";
export { openStorage, type OutputStorage, type StorageSpec } from "./report/storage.ts";
export { ReportColumnsChanged, ReportValueError } from "./report/columns.ts";
