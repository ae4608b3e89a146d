/**
 * What the CSV and NDJSON writers share around their row loop: the
 * declared columns checked once, the first row's keys checked against
 * them, a batch's lines joined and encoded at once, the count of rows
 * written (for the row number in a {@linkcode ReportValueError}), and a
 * value with no plain form turned into JSON or refused.
 *
 * What stays in each writer is its line: the field dispatch runs for
 * every value, so it is written out in the writer, one call a row, not
 * one a field (`bench/report_csv.ts` measured no cost for the call).
 *
 * @module
 */

import {
  checkRowKeys,
  checkWriterOptions,
  type ReportRow,
  ReportValueError,
  type ReportWriter,
  type ReportWriterOptions,
  unsupported,
} from "./columns.ts";

const encoder = new TextEncoder();

/**
 * A streaming writer of one line a row: subclasses say how a row becomes
 * its line ({@linkcode LineWriter.line}) and what opens the file.
 */
export abstract class LineWriter implements ReportWriter {
  readonly columns: readonly string[];
  abstract readonly mediaType: string;
  abstract readonly extension: string;
  #written = 0;
  #keysChecked = false;

  /** @throws RangeError when the columns are empty or repeated, or the encoding is not UTF-8. */
  constructor(options: ReportWriterOptions) {
    this.columns = checkWriterOptions(options);
  }

  abstract header(): Uint8Array;

  /**
   * The lines of `rows`. The first row ever given must have exactly the
   * declared columns as keys; a missing key in a later row is a null.
   *
   * @throws ReportColumnsChanged when the first row's keys are not the declared columns.
   * @throws ReportValueError naming the column and row of a value the file has no form for.
   */
  rows(rows: readonly ReportRow[]): Uint8Array {
    if (!this.#keysChecked && rows.length > 0) {
      checkRowKeys(this.columns, rows[0]!);
      this.#keysChecked = true;
    }
    let out = "";
    for (let r = 0; r < rows.length; r++) out += this.line(rows[r]!, r);
    this.#written += rows.length;
    return encoder.encode(out);
  }

  /** Row `r` of the batch as its line, line ending included. */
  protected abstract line(row: ReportRow, r: number): string;

  /**
   * The JSON text of a value neither writer has a plainer form for;
   * undefined where `JSON.stringify` gives none (a value with a `toJSON`
   * returning undefined).
   *
   * @param i The value's column index, for the error.
   * @param r The value's row in the batch, for the error.
   * @throws ReportValueError for bytes, a symbol, a function, an invalid date, or an object JSON cannot write.
   */
  protected json(value: unknown, i: number, r: number): string | undefined {
    const why = unsupported(value);
    if (why !== undefined) throw new ReportValueError(this.columns[i]!, this.#written + r + 1, why);
    try {
      return JSON.stringify(value);
    } catch (error) {
      const reason = `an object with no JSON text: ${(error as Error).message}`;
      throw new ReportValueError(this.columns[i]!, this.#written + r + 1, reason, { cause: error });
    }
  }
}
