/**
 * A PostgreSQL report's export: its own connection (read-only: every
 * transaction it opens is `READ ONLY`), the query with its named
 * parameters as `$1..$n` and every value bound by the driver, a statement
 * per page (or one statement read through a cursor in batches), and the
 * output written batch by batch. A stop cancels the statement running now
 * on the server (the driver's cancel request), so a slow query ends at
 * once, not at its next row.
 *
 * Values keep their text where JavaScript would change it: `date` as
 * `YYYY-MM-DD`, `bigint` as a BigInt, `numeric` as a number only when that
 * number prints back the same value (else its text, which the CSV writer
 * escapes if it starts with `-`).
 *
 * @module
 */

import { open } from "node:fs/promises";
import { postgresDriver } from "../store/drivers.ts";
import type { ReportRow } from "./columns.ts";
import {
  type Batch,
  BATCH_ROWS,
  type BatchSource,
  type ExportOptions,
  exportRows,
  ExportStopped,
} from "./export.ts";
import { positional } from "../text/named_params.ts";
import { valuesOf } from "./query.ts";
import type { ParamValue } from "./types.ts";

/** What a PostgreSQL export needs: the connection URL beside the rest. */
export interface PostgresExportOptions extends ExportOptions {
  /** Variables already filled in (never printed). */
  url: string;
}

/** SQLSTATE of a statement cancelled by a cancel request. */
const QUERY_CANCELED = "57014";

/** `numeric` text as a number when the number keeps its value exactly. */
function numeric(text: string): number | string {
  const n = Number(text);
  if (!Number.isFinite(n)) return text;
  const trimmed = text.includes(".") ? text.replace(/\.?0+$/, "") : text;
  return String(n) === trimmed || (trimmed === "-0" && n === 0) ? n : text;
}

/** Runs the export; resolves with the totals, rejects as the loop would. */
export async function exportPostgres(
  options: PostgresExportOptions,
): Promise<{ rows: number; bytes: number }> {
  const postgres = await postgresDriver();
  const sql = postgres(options.url, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: "jobs report", default_transaction_read_only: true },
    types: {
      // deno-lint-ignore no-explicit-any
      bigint: postgres.BigInt as any,
      date: { to: 1082, from: [1082], serialize: (x: string) => x, parse: (x: string) => x },
      numeric: { to: 1700, from: [1700], serialize: (x: unknown) => String(x), parse: numeric },
    },
  });
  const file = await open(options.output, "wx", 0o600);
  const text = await Deno.readTextFile(options.report.query);
  const { text: statement, names } = positional(text);
  let running: { cancel(): void } | null = null;
  const unsubscribe = options.stop.onStop(() => running?.cancel());
  /** Awaits `pending`, the work of `query`, which a stop cancels meanwhile. */
  const run = async <T>(pending: PromiseLike<T>, query: { cancel(): void }): Promise<T> => {
    running = query;
    try {
      return await pending;
    } catch (error) {
      const why = options.stop.reason;
      if ((error as { code?: string }).code === QUERY_CANCELED && why) throw new ExportStopped(why);
      throw error;
    } finally {
      running = null;
    }
  };
  try {
    const bound = (afterKey: unknown, pageSize: number | null) =>
      valuesOf(names, { ...options.values, after_key: afterKey as ParamValue, page_size: pageSize })
        // deno-lint-ignore no-explicit-any
        .map((v) => typeof v === "bigint" ? String(v) : v) as any[];
    const paging = options.report.paging;
    const probe = sql.unsafe(statement, bound(null, paging?.mode === "pages" ? paging.size : null));
    const described = await run(probe.describe(), probe);
    const columns = described.columns.map((c: { name: string }) => c.name);
    let source: BatchSource;
    if (paging?.mode === "pages") {
      const size = paging.size;
      source = {
        async next(afterKey: unknown): Promise<Batch> {
          const query = sql.unsafe(statement, bound(afterKey, size));
          const rows = await run(query, query);
          return { rows: rows as unknown as ReportRow[], columns, last: rows.length < size };
        },
        close() {},
      };
    } else {
      source = cursorSource(sql, statement, bound(null, null), columns, run);
    }
    return await exportRows(options.report, source, {
      masked: options.masked,
      limits: options.limits,
    }, {
      write: async (bytes) => {
        await file.write(bytes);
      },
      stopped: () => options.stop.reason,
      progress: options.progress,
    });
  } finally {
    unsubscribe();
    await file.close();
    await sql.end({ timeout: 1 });
  }
}

/** One statement read through a server-side cursor, `BATCH_ROWS` at a time. */
function cursorSource(
  // deno-lint-ignore no-explicit-any
  sql: any,
  statement: string,
  values: unknown[],
  columns: string[],
  run: <T>(pending: PromiseLike<T>, query: { cancel(): void }) => Promise<T>,
): BatchSource {
  const query = sql.unsafe(statement, values);
  let iterator: AsyncIterator<ReportRow[]> | null = null;
  return {
    async next(): Promise<Batch> {
      iterator ??= query.cursor(BATCH_ROWS)[Symbol.asyncIterator]();
      const step = await run(iterator!.next(), query);
      if (step.done) return { rows: [], columns, last: true };
      return { rows: step.value, columns, last: false };
    },
    async close() {
      await iterator?.return?.();
    },
  };
}
