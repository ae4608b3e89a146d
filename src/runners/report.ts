/**
 * The `jobs.report` runner: one job is one report run (see
 * `src/report/run.ts`). It is self-timed: the run holds itself to its
 * `max_runtime` limit and stops its own statement. `reportJob` makes the
 * job row the CLI, the daemon's HTTP endpoint and the library enqueue,
 * beside the run's row.
 *
 * @module
 */

import { serializeArgs } from "../kernel/enqueue.ts";
import type { NewJob } from "../kernel/types.ts";
import { type ArgsSchema, defineWorker, type Worker } from "../kernel/worker.ts";
import type { CompiledReport } from "../report/definition.ts";
import { effectiveLimits } from "../report/limits.ts";
import { type ReportRunDeps, runReport } from "../report/run.ts";
import { openStorage, type OutputStorage, type StorageSpec } from "../report/storage.ts";
import { REPORT_QUEUE, type ReportJobArgs, type ReportRequest } from "../report/types.ts";
import { REPORT_WORKER } from "../kernel/runs.ts";
import type { Store } from "../store/store.ts";

export { REPORT_QUEUE, REPORT_WORKER };

/** Options of {@linkcode reportWorker}. */
export interface ReportWorkerOptions extends Omit<ReportRunDeps, "store" | "limits" | "storage"> {
  /** The store runs are kept in (a function: the daemon opens it after building its workers). */
  store: () => Store;
}

/** Each report's output storage, opened once (its `${NAME}` credentials filled from `env`). */
export function storageOf(
  env: (name: string) => string | undefined,
): (report: CompiledReport) => OutputStorage {
  const opened = new Map<string, OutputStorage>();
  return (report) => {
    const spec = report.storage ?? { folder: "." };
    const key = JSON.stringify(spec);
    let storage = opened.get(key);
    if (!storage) opened.set(key, storage = openStorage(spec as StorageSpec, env));
    return storage;
  };
}

/** Validates a job's args as a report run; what it refuses is discarded. */
export const reportArgsSchema: ArgsSchema<ReportJobArgs> = {
  parse(input: unknown): ReportJobArgs {
    const value = input as Partial<ReportJobArgs> | null;
    if (value === null || typeof value !== "object" || value.kind !== "report") {
      throw new TypeError(`report run must be an object of kind "report"`);
    }
    const r = value.report as Partial<CompiledReport> | undefined;
    if (!r || typeof r.id !== "string" || !r.source || !r.format || !r.query) {
      throw new TypeError(`report run must carry a compiled report`);
    }
    if (!value.request) throw new TypeError(`report run must carry its request`);
    return value as ReportJobArgs;
  },
};

/** The `jobs.report` worker. */
export function reportWorker(options: ReportWorkerOptions): Worker<ReportJobArgs> {
  const storage = storageOf(options.env);
  return defineWorker<ReportJobArgs>({
    name: REPORT_WORKER,
    queue: REPORT_QUEUE,
    selfTimed: true,
    // A limit discards the job itself; a retry is for a source that was down.
    maxAttempts: 3,
    args: reportArgsSchema,
    perform: (args, ctx) => {
      const store = options.store();
      return runReport(args, ctx, {
        ...options,
        store,
        limits: (report) => effectiveLimits((key) => store.settingGet({ key }), report),
        storage,
      });
    },
  });
}

/**
 * The job of one run of `report`; insert it and make its run (with
 * `reportRunCreate`, which finds it by the job's id) in one transaction.
 */
export function reportJob(
  report: CompiledReport,
  request: ReportRequest,
  options: { now: number },
): NewJob {
  const args: ReportJobArgs = { kind: "report", report, request };
  const where = `report "${report.id}"`;
  return {
    queue: REPORT_QUEUE,
    worker: REPORT_WORKER,
    args: serializeArgs(args, where),
    meta: serializeArgs({ report: report.id, tenant: request.tenant }, where),
    tags: JSON.stringify(["report"]),
    tenant: request.tenant,
    priority: 0,
    maxAttempts: 3,
    scheduledAt: options.now,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: null,
    scheduleId: null,
    scheduledFor: null,
  };
}
