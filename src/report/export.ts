/**
 * The export loop shared by both sources: take the query's rows a page (or
 * a batch) at a time, check the result's columns against the declared ones,
 * mask the columns the actor may not read, write each batch through the
 * format's writer, and stop with the limit named when the rows or the
 * output size pass theirs, or when told to stop (a cancel, the runtime
 * limit, a lost lease). It knows no database: a {@linkcode BatchSource}
 * gives it rows. SQLite's runs in a worker thread (its statements block),
 * PostgreSQL's on the event loop.
 *
 * @module
 */

import { checkColumns, type ReportRow, type ReportWriter } from "./columns.ts";
import { CsvWriter } from "./csv.ts";
import type { CompiledReport } from "./definition.ts";
import { NdjsonWriter } from "./ndjson.ts";
import { MASKED } from "./query.ts";
import type { StopSwitch } from "./stop.ts";
import type { ParamValue } from "./types.ts";

/** Rows per write when the query is read as one statement (`paging: none`). */
export const BATCH_ROWS = 1000;

/** One batch of the query's rows, with the statement's result columns. */
export interface Batch {
  rows: ReportRow[];
  /** The result's column names, in order (known even with no rows). */
  columns: readonly string[];
  /** True when no batch follows. */
  last: boolean;
}

/**
 * Where rows come from: `next(afterKey)` runs the next page with
 * `:after_key` bound to the key of the last row so far (null at first) in
 * paged mode, or reads the next batch of the one statement otherwise.
 */
export interface BatchSource {
  next(afterKey: unknown): Batch | Promise<Batch>;
  close(): void | Promise<void>;
}

/** The limits the loop enforces itself (runtime and concurrency are the caller's). */
export interface ExportLimits {
  maxRows: number;
  maxBytes: number;
}

/** A limit reached: the loop stops, nothing of the output is kept. */
export class LimitReached extends Error {
  constructor(readonly limit: "max_rows" | "max_bytes", readonly value: number, message: string) {
    super(message);
    this.name = "LimitReached";
  }
}

/** The loop was told to stop; `why` is what the caller said (`cancelled`, `max_runtime`). */
export class ExportStopped extends Error {
  constructor(readonly why: string) {
    super(`the export stopped: ${why}`);
    this.name = "ExportStopped";
  }
}

/** What the loop needs beside its rows. */
export interface ExportHooks {
  /** Appends bytes to the output file. */
  write(bytes: Uint8Array): void | Promise<void>;
  /** A reason to stop now, or null: asked before each batch. */
  stopped(): string | null;
  /** Told the totals after each batch. */
  progress(rows: number, bytes: number): void | Promise<void>;
}

/** What an export from either source needs beside where the source is. */
export interface ExportOptions {
  report: CompiledReport;
  /** Every value the query may bind, by name (see `boundValues`). */
  values: Record<string, ParamValue | null>;
  /** Columns written as {@linkcode MASKED}. */
  masked: string[];
  limits: ExportLimits;
  /** The output file, created by the export (it must not exist). */
  output: string;
  stop: StopSwitch;
  /** Told the rows and bytes written after each batch. */
  progress(rows: number, bytes: number): void;
}

/** The writer of `report`'s format. */
export function writerOf(report: CompiledReport): ReportWriter {
  const format = report.format!;
  return format.type === "csv"
    ? new CsvWriter({
      columns: format.columns,
      formulaColumns: format.formula_columns ?? [],
      bom: format.bom ?? false,
    })
    : new NdjsonWriter({ columns: format.columns });
}

/** Runs the loop over `source`; returns the rows and bytes written. */
export async function exportRows(
  report: CompiledReport,
  source: BatchSource,
  options: { masked: readonly string[]; limits: ExportLimits },
  hooks: ExportHooks,
): Promise<{ rows: number; bytes: number }> {
  const writer = writerOf(report);
  const key = report.paging?.mode === "pages" ? report.paging.key : null;
  const masked = options.masked;
  const { maxRows, maxBytes } = options.limits;
  let rows = 0;
  let bytes = 0;
  let checked = false;
  let afterKey: unknown = null;
  const emit = async (chunk: Uint8Array) => {
    if (bytes + chunk.length > maxBytes) {
      throw new LimitReached(
        "max_bytes",
        maxBytes,
        `the output would pass max_bytes (${maxBytes} bytes) after ${rows} rows`,
      );
    }
    await hooks.write(chunk);
    bytes += chunk.length;
  };
  await emit(writer.header());
  try {
    for (;;) {
      const why = hooks.stopped();
      if (why !== null) throw new ExportStopped(why);
      const batch = await source.next(afterKey);
      if (!checked) {
        checkColumns(writer.columns, batch.columns);
        checked = true;
      }
      if (rows + batch.rows.length > maxRows) {
        throw new LimitReached(
          "max_rows",
          maxRows,
          `the query returned more than max_rows (${maxRows} rows)`,
        );
      }
      if (batch.rows.length > 0) {
        const out = masked.length === 0 ? batch.rows : batch.rows.map((row) => mask(row, masked));
        await emit(writer.rows(out));
        rows += batch.rows.length;
        if (key !== null) afterKey = batch.rows[batch.rows.length - 1]![key];
      }
      await hooks.progress(rows, bytes);
      if (batch.last) break;
    }
  } finally {
    await source.close();
  }
  return { rows, bytes };
}

function mask(row: ReportRow, columns: readonly string[]): ReportRow {
  const out: Record<string, unknown> = { ...row };
  for (const column of columns) {
    if (out[column] !== null && out[column] !== undefined) out[column] = MASKED;
  }
  return out;
}
