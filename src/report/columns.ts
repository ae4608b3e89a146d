/**
 * The contract every report writer keeps (CSV, NDJSON): the declared
 * columns, in order, are the file's columns. A query whose result columns
 * differ in names or order fails with `report-columns-changed` before a
 * byte is written, never a file whose columns moved under their header.
 *
 * A writer is streaming by shape: it turns one batch of rows into bytes
 * and keeps nothing of it, so an export holds one batch at a time whatever
 * the row count.
 *
 * @module
 */

import { escapeControl } from "../text/escape.ts";

/** One row of a query's result, keyed by column name. */
export type ReportRow = Readonly<Record<string, unknown>>;

/** The only encoding reports are written in. */
export type ReportEncoding = "utf-8";

/** What {@linkcode CsvWriter} and {@linkcode NdjsonWriter} have in common. */
export interface ReportWriter {
  /** The declared columns, in file order. */
  readonly columns: readonly string[];
  /** The file's media type, for an HTTP response or an S3 object. */
  readonly mediaType: string;
  /** The file name's extension, without the dot. */
  readonly extension: string;
  /** The bytes that open the file (a BOM, a header line); may be empty. Call it once, first. */
  header(): Uint8Array;
  /** The bytes of one batch of rows, each ending with its line ending. */
  rows(rows: readonly ReportRow[]): Uint8Array;
}

/** Options every writer takes. */
export interface ReportWriterOptions {
  /** The declared columns, in file order; names must be unique. */
  columns: readonly string[];
  /** The output encoding; nothing else is accepted. @default "utf-8" */
  encoding?: ReportEncoding;
}

const q = (value: unknown) => escapeControl(JSON.stringify(value));

/**
 * Raised when a query's result columns are not the declared ones, in names
 * or order. `code` is `report-columns-changed`.
 */
export class ReportColumnsChanged extends Error {
  /** The error's code in reports and run records. */
  readonly code = "report-columns-changed";

  /**
   * @param declared The report's declared columns.
   * @param actual The columns the query returned.
   */
  constructor(readonly declared: readonly string[], readonly actual: readonly string[]) {
    super(
      `report columns changed: declared ${q(declared)}, the query returns ${q(actual)}; ` +
        firstDifference(declared, actual),
    );
    this.name = "ReportColumnsChanged";
  }
}

function firstDifference(declared: readonly string[], actual: readonly string[]): string {
  const n = Math.min(declared.length, actual.length);
  for (let i = 0; i < n; i++) {
    if (declared[i] !== actual[i]) {
      return `column ${i + 1} is ${q(actual[i])}, not ${q(declared[i])}`;
    }
  }
  return declared.length > actual.length
    ? `column ${n + 1} ${q(declared[n])} is missing`
    : `column ${n + 1} ${q(actual[n])} is not declared`;
}

/**
 * Throws {@linkcode ReportColumnsChanged} unless `actual` (the query's
 * result columns, from its metadata) equals `declared`, name for name and
 * in order.
 */
export function checkColumns(declared: readonly string[], actual: readonly string[]): void {
  if (declared.length !== actual.length || declared.some((name, i) => name !== actual[i])) {
    throw new ReportColumnsChanged(declared, actual);
  }
}

/**
 * Throws {@linkcode ReportColumnsChanged} unless `row` has exactly the
 * declared columns as keys. Order is not compared: a JavaScript object puts
 * integer-like keys first whatever the query said, so only the result's
 * metadata ({@linkcode checkColumns}) can tell the order.
 */
export function checkRowKeys(declared: readonly string[], row: ReportRow): void {
  const keys = Object.keys(row);
  if (keys.length !== declared.length || !declared.every((name) => Object.hasOwn(row, name))) {
    throw new ReportColumnsChanged(declared, keys);
  }
}

/**
 * The declared columns, checked once when a writer is made: at least one,
 * each a unique string, in UTF-8.
 */
export function checkWriterOptions(options: ReportWriterOptions): readonly string[] {
  const encoding = options.encoding ?? "utf-8";
  if (encoding.toLowerCase() !== "utf-8") {
    throw new RangeError(`encoding ${q(encoding)} is not supported: reports are written as UTF-8`);
  }
  const columns = [...options.columns];
  if (columns.length === 0) throw new RangeError("a report declares no columns");
  const seen = new Set<string>();
  for (const name of columns) {
    if (typeof name !== "string") throw new TypeError(`column ${q(name)} is not a string`);
    if (seen.has(name)) throw new RangeError(`column ${q(name)} is declared twice`);
    seen.add(name);
  }
  return columns;
}

/**
 * Raised when a value has no form in the file (bytes, a symbol, a
 * function, an invalid date), naming the column and the row.
 */
export class ReportValueError extends Error {
  /** The error's code in reports and run records. */
  readonly code = "report-value-unsupported";

  /**
   * @param column The value's column.
   * @param row The row's number among the rows written, from 1 (the header is none).
   * @param reason Why the value cannot be written.
   */
  constructor(
    readonly column: string,
    readonly row: number,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`column ${q(column)}, row ${row}: ${reason}`, options);
    this.name = "ReportValueError";
  }
}

/** Why `value` cannot be written, or undefined when it can (as text, a number, JSON). */
export function unsupported(value: unknown): string | undefined {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    return "bytes have no text form in a report; encode them in the query (hex, base64)";
  }
  if (value instanceof Date && Number.isNaN(value.getTime())) return "an invalid date";
  if (typeof value === "symbol" || typeof value === "function") {
    return `a ${typeof value} has no text form in a report`;
  }
  return undefined;
}
