/**
 * A SQLite report's thread (see sqlite_export.ts): opens the source file
 * read-only, runs the query (a statement per page, or one statement read in
 * batches), and writes the output file itself, so a long statement never
 * blocks the thread that runs the daemon's jobs. Told one
 * {@linkcode ExportTask}; answers `{ progress }` after each batch and then
 * `{ done }` or `{ failed }`. The shared flag is the parent's way in: any
 * value but 0 stops the loop before its next batch.
 *
 * @module
 */

import { closeSync, openSync, writeSync } from "node:fs";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { parentPort } from "node:worker_threads";
import type { ReportRow } from "./columns.ts";
import type { CompiledReport } from "./definition.ts";
import {
  type Batch,
  BATCH_ROWS,
  type BatchSource,
  type ExportLimits,
  exportRows,
} from "./export.ts";

/** What the parent sends once. */
export interface ExportTask {
  path: string;
  report: CompiledReport;
  /** The bound values, booleans already 1 and 0. */
  values: Record<string, SQLInputValue>;
  masked: string[];
  limits: ExportLimits;
  /** The output file, created here. */
  output: string;
  /** Int32 slot 0: 0 go on; else an index into `reasons`. */
  flag: SharedArrayBuffer;
  reasons: string[];
}

/** What the thread answers. */
export type ExportMessage =
  | { progress: { rows: number; bytes: number } }
  | { done: { rows: number; bytes: number } }
  | {
    failed: {
      name: string;
      message: string;
      limit?: string;
      value?: number;
      code?: string;
      why?: string;
    };
  };

const port = parentPort!;

port.once("message", async (task: ExportTask) => {
  const flag = new Int32Array(task.flag);
  let db: DatabaseSync | null = null;
  let fd: number | null = null;
  try {
    db = new DatabaseSync(task.path, { readOnly: true });
    db.exec("PRAGMA busy_timeout = 5000");
    const statement = db.prepare(Deno.readTextFileSync(task.report.query));
    statement.setAllowUnknownNamedParameters(true);
    fd = openSync(task.output, "wx", 0o600);
    const out = fd;
    const result = await exportRows(task.report, sqliteSource(task, statement), {
      masked: task.masked,
      limits: task.limits,
    }, {
      write: (bytes) => {
        writeSync(out, bytes);
      },
      stopped: () => {
        const why = Atomics.load(flag, 0);
        return why === 0 ? null : task.reasons[why] ?? "stopped";
      },
      progress: (rows, bytes) => port.postMessage({ progress: { rows, bytes } }),
    });
    port.postMessage({ done: result } satisfies ExportMessage);
  } catch (error) {
    const e = error as Error & { limit?: string; value?: number; code?: string; why?: string };
    port.postMessage(
      {
        failed: {
          name: e.name ?? "Error",
          message: e.message ?? String(error),
          ...(e.limit ? { limit: e.limit, value: e.value } : {}),
          ...(e.code ? { code: e.code } : {}),
          ...(e.why ? { why: e.why } : {}),
        },
      } satisfies ExportMessage,
    );
  } finally {
    if (fd !== null) closeSync(fd);
    db?.close();
    // Nothing listens any more: the thread ends when this returns.
  }
});

/** Pages (a statement each, `:after_key` and `:page_size` bound) or batches of one statement. */
function sqliteSource(task: ExportTask, statement: StatementSync): BatchSource {
  const columns = statement.columns().map((c) => c.name);
  const paging = task.report.paging;
  if (paging?.mode === "pages") {
    const size = paging.size;
    return {
      next(afterKey: unknown): Batch {
        const rows = statement.all({
          ...task.values,
          after_key: afterKey as SQLInputValue,
          page_size: size,
        }) as ReportRow[];
        return { rows, columns, last: rows.length < size };
      },
      close() {},
    };
  }
  let iterator: Iterator<unknown> | null = null;
  return {
    next(): Batch {
      iterator ??= statement.iterate(task.values)[Symbol.iterator]();
      const rows: ReportRow[] = [];
      while (rows.length < BATCH_ROWS) {
        const step = iterator.next();
        if (step.done) return { rows, columns, last: true };
        rows.push(step.value as ReportRow);
      }
      return { rows, columns, last: false };
    },
    close() {
      iterator?.return?.();
    },
  };
}
