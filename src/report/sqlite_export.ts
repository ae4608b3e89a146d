/**
 * A SQLite report's export, run on a thread of its own
 * (`sqlite_export_worker.ts`): node:sqlite's statements block the thread
 * that runs them, and a report's can take minutes. The thread stops before
 * its next batch once the run's {@linkcode StopSwitch} is set; a statement
 * already running finishes its page first (node:sqlite offers no
 * interrupt), and if the thread has not ended `TERMINATE_AFTER_MS` after
 * the stop it is terminated.
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { type ExportOptions, ExportStopped, LimitReached } from "./export.ts";
import type { ExportMessage, ExportTask } from "./sqlite_export_worker.ts";
import { STOP_REASONS } from "./stop.ts";

/**
 * The export thread's old-generation heap, MB. A run holds one page (the
 * rows of one statement and their bytes) at a time, so this bounds a
 * report's memory whatever its row count: without it V8 lets the thread's
 * heap grow with the export's garbage (peak RSS of the whole benchmark
 * process 186 MB at 250,000 rows and 245 MB at 1,000,000; 193 and 195 MB
 * with it), and a page too large for it fails the run naming this bound.
 */
export const THREAD_HEAP_MB = 64;

/** After a stop, how long the thread may take to end before it is terminated. */
export const TERMINATE_AFTER_MS = 2000;

/** What a SQLite export needs: the source file beside the rest. */
export interface SqliteExportOptions extends ExportOptions {
  path: string;
}

/** Runs the export on its thread; resolves with the totals, rejects as the loop would. */
export function exportSqlite(
  options: SqliteExportOptions,
): Promise<{ rows: number; bytes: number }> {
  const worker = new Worker(new URL("./sqlite_export_worker.ts", import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
  });
  // SQLite binds no booleans: 1 and 0, as it stores them.
  const values: ExportTask["values"] = Object.fromEntries(
    Object.entries(options.values).map(([k, v]) => [k, typeof v === "boolean" ? Number(v) : v]),
  );
  const task: ExportTask = {
    path: options.path,
    report: options.report,
    values,
    masked: options.masked,
    limits: options.limits,
    output: options.output,
    flag: options.stop.flag,
    reasons: [...STOP_REASONS],
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      unsubscribe();
      clearTimeout(timer);
      fn();
    };
    const unsubscribe = options.stop.onStop((why) => {
      timer = setTimeout(() => {
        void worker.terminate();
        settle(() => reject(new ExportStopped(why)));
      }, TERMINATE_AFTER_MS);
    });
    worker.on("message", (message: ExportMessage) => {
      if ("progress" in message) options.progress(message.progress.rows, message.progress.bytes);
      else if ("done" in message) settle(() => resolve(message.done));
      else settle(() => reject(rebuilt(message.failed)));
    });
    worker.on("error", (error: Error & { code?: string }) =>
      settle(() =>
        reject(
          error.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? new Error(
              `report ${options.report.id}: the export thread ran out of its ${THREAD_HEAP_MB} MB ` +
                `heap; a page must fit in it (make paging.size smaller)`,
              { cause: error },
            )
            : error,
        )
      ));
    worker.on("exit", () => settle(() => reject(new Error("the SQLite export thread exited"))));
    worker.postMessage(task);
  });
}

/** The error the thread described, as its class again. */
function rebuilt(failed: Extract<ExportMessage, { failed: unknown }>["failed"]): Error {
  if (failed.name === "LimitReached" && failed.limit) {
    return new LimitReached(
      failed.limit as "max_rows" | "max_bytes",
      failed.value!,
      failed.message,
    );
  }
  if (failed.name === "ExportStopped" && failed.why) return new ExportStopped(failed.why);
  const error = Object.assign(new Error(failed.message), failed.code ? { code: failed.code } : {});
  error.name = failed.name;
  return error;
}
