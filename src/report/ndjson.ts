/**
 * The NDJSON writer of reports: one JSON object a line, its keys the
 * declared columns in their order (every key on every line, `null` where
 * the row has none), each line ending with LF, in UTF-8 without a BOM
 * (RFC 8259 §8.1 forbids one). The column contract is the CSV writer's
 * (see `columns.ts`).
 *
 * No formula escaping: NDJSON is read by programs (`jq`, a loader, another
 * pipeline), which take a string for a string, and no spreadsheet opens it
 * as cells; a leading `'` would only corrupt the value.
 *
 * Values: strings, finite numbers, booleans and null as JSON has them;
 * undefined is `null`; a non-finite number is `null`, as `JSON.stringify`
 * writes it; a bigint is its exact digits as a JSON number (`jq` and most
 * languages keep them exact; JavaScript's `JSON.parse` rounds past 2^53);
 * a `Date` is its ISO 8601 string; an object or array is nested as JSON.
 * Bytes are refused, as in CSV, with a {@linkcode ReportValueError}.
 *
 * @module
 */

import type { ReportRow, ReportWriterOptions } from "./columns.ts";
import { LineWriter } from "./writer.ts";

export {
  checkColumns,
  ReportColumnsChanged,
  type ReportRow,
  ReportValueError,
  type ReportWriter,
} from "./columns.ts";

/** Options of {@linkcode NdjsonWriter}. */
export type NdjsonWriterOptions = ReportWriterOptions;

const EMPTY = new Uint8Array(0);

/**
 * Writes a report as NDJSON, one batch of rows at a time. It keeps no row,
 * so memory is one batch's whatever the row count.
 *
 * ```ts ignore
 * const ndjson = new NdjsonWriter({ columns: ["id", "name"] });
 * await file.write(ndjson.header()); // empty: NDJSON has no header
 * for await (const batch of batches) await file.write(ndjson.rows(batch));
 * ```
 */
export class NdjsonWriter extends LineWriter {
  readonly mediaType = "application/x-ndjson; charset=utf-8";
  readonly extension = "ndjson";
  /** `{"id":`, `,"name":`: each column's key with what comes before it. */
  readonly #prefixes: readonly string[];

  /** @throws RangeError when the columns are empty or repeated, or the encoding is not UTF-8. */
  constructor(options: NdjsonWriterOptions) {
    super(options);
    this.#prefixes = this.columns.map((name, i) =>
      (i === 0 ? "{" : ",") + JSON.stringify(name) + ":"
    );
  }

  /** Nothing: NDJSON has no header and no BOM. */
  header(): Uint8Array {
    return EMPTY;
  }

  /** One NDJSON line: the object of every declared column, then LF. */
  protected line(row: ReportRow, r: number): string {
    const columns = this.columns;
    const prefixes = this.#prefixes;
    const n = columns.length;
    let line = "";
    for (let i = 0; i < n; i++) {
      const value = row[columns[i]!];
      let json: string;
      if (typeof value === "string") json = JSON.stringify(value);
      else if (typeof value === "number") json = Number.isFinite(value) ? String(value) : "null";
      else if (value === null || value === undefined) json = "null";
      else json = this.#other(value, i, r);
      line += prefixes[i]! + json;
    }
    return line + "}\n";
  }

  /** A bigint, a boolean, a date or an object as JSON; anything else refused. */
  #other(value: unknown, i: number, r: number): string {
    if (typeof value === "bigint" || typeof value === "boolean") return String(value);
    return this.json(value, i, r) ?? "null";
  }
}
