/**
 * The `reports:` section of a schedules file as the report module sees it:
 * each entry becomes the {@linkcode ReportOptions} a library user would
 * pass, with the text of its query file (read through the reader the
 * caller gives, so parsing stays free of I/O), and
 * {@linkcode checkReport}'s problems become errors of the file, each with
 * the problem's code, at the YAML node its path names: `jobs check` and
 * `defineReport` hold a report to the same rules. A problem at or under a
 * node the schema already reported is the same mistake and is left out.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { z } from "npm:zod@4.6.7";
import { checkReport, type ReportOptions } from "../report/definition.ts";
import {
  LIMIT_KINDS,
  LIMIT_NAMES,
  type LimitName,
  tryParseValue,
  type ValueKind,
} from "../report/limits.ts";
import { type Path, quote, type Reporter } from "./report.ts";

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Fields
    : undefined;
}

/** One limit of `limits:`, in the form people write it (`10m`, `200MB`, `500000`), as its canonical number. */
function limitValue(kind: ValueKind) {
  return z.unknown().transform((value, ctx) => {
    const result = tryParseValue(kind, value);
    if (result.ok) return result.value;
    ctx.addIssue({ code: "custom", message: result.reason });
    return z.NEVER;
  });
}

/**
 * A report's `limits:` mapping (the schema of `reportSchema`): each limit
 * optional, a duration, a size or a count as `limits.ts` parses it; the
 * output is canonical (ms, bytes, counts).
 */
export const reportLimitsSchema = z.strictObject({
  max_range: limitValue(LIMIT_KINDS.max_range).optional(),
  max_rows: limitValue(LIMIT_KINDS.max_rows).optional(),
  max_runtime: limitValue(LIMIT_KINDS.max_runtime).optional(),
  max_concurrent: limitValue(LIMIT_KINDS.max_concurrent).optional(),
  max_bytes: limitValue(LIMIT_KINDS.max_bytes).optional(),
  lifetime: limitValue(LIMIT_KINDS.lifetime).optional(),
});

/** The limits of `limits:` that parse, canonical; the schema reports the others. */
function limitsOf(value: unknown): Partial<Record<LimitName, number>> | undefined {
  const raw = fields(value);
  if (!raw) return undefined;
  const limits: Partial<Record<LimitName, number>> = {};
  for (const name of LIMIT_NAMES) {
    if (raw[name] === undefined) continue;
    const result = tryParseValue(LIMIT_KINDS[name], raw[name]);
    if (result.ok) limits[name] = result.value;
  }
  return limits;
}

/** Reads a report's query file (its path resolved against the schedules file's folder); null when it cannot. */
export type QueryReader = (path: string) => string | null;

/**
 * One entry of `reports:` (the parsed YAML) as {@linkcode ReportOptions}.
 * Never throws: a field of the wrong type is passed on as missing (the
 * schema reports it), so every other rule runs.
 *
 * @param folder the schedules file's folder, the query file's base
 * @param read given, the query file is read for the checks of its parameters
 */
export function reportOptions(value: unknown, folder: string, read?: QueryReader): ReportOptions {
  const r = fields(value) ?? {};
  const query = typeof r.query === "string" ? r.query : undefined;
  const paging = fields(r.paging);
  const tenancy = fields(r.tenancy);
  const options: ReportOptions = {
    id: typeof r.id === "string" ? r.id : "",
    ...(fields(r.need) ? { need: fields(r.need) as ReportOptions["need"] } : {}),
    ...(fields(r.source) ? { source: fields(r.source) as ReportOptions["source"] } : {}),
    ...(query !== undefined ? { query } : {}),
    ...(fields(r.params) ? { params: fields(r.params) as ReportOptions["params"] } : {}),
    ...(paging
      ? {
        paging: (paging.mode === "none" ? { mode: "none", reason: String(paging.reason ?? "") } : {
          mode: "pages",
          size: Number(paging.size ?? 0),
          key: String(paging.key ?? ""),
        }) as ReportOptions["paging"],
      }
      : {}),
    ...(fields(r.audit) ? { audit: fields(r.audit) as ReportOptions["audit"] } : {}),
    ...(fields(r.format) ? { format: fields(r.format) as ReportOptions["format"] } : {}),
    ...(fields(r.authorize)
      ? { authorize: fields(r.authorize) as ReportOptions["authorize"] }
      : {}),
    ...(tenancy
      ? {
        tenancy: (tenancy.mode === "shared"
          ? { mode: "shared", reason: String(tenancy.reason ?? "") }
          : { mode: "isolated" }) as ReportOptions["tenancy"],
      }
      : {}),
    ...(fields(r.sort) ? { sort: fields(r.sort) as ReportOptions["sort"] } : {}),
    ...(fields(r.storage) ? { storage: fields(r.storage) as ReportOptions["storage"] } : {}),
    ...(typeof r.contact === "string" ? { contact: r.contact } : {}),
    ...(limitsOf(r.limits) ? { limits: limitsOf(r.limits) } : {}),
  };
  if (read && query !== undefined) {
    options.queryText = read(isAbsolute(query) ? query : join(folder, query));
  }
  return options;
}

/** Whether `prefix` is `path` or a node above it. */
function within(prefix: Path, path: Path): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => segment === path[i]);
}

/**
 * Checks every entry of `reports:` in the file `report` holds: ids unique,
 * then {@linkcode checkReport} (with the query's text when `read` is
 * given). Each problem is an error with its code, at its node; one at or
 * under a path in `reported` is left out.
 */
export function checkReports(
  report: Reporter,
  reported: readonly Path[],
  folder: string,
  read?: QueryReader,
): void {
  const root = fields(report.raw);
  const list = Array.isArray(root?.reports) ? root.reports as unknown[] : [];
  const firstLine = new Map<string, number>();
  for (const [index, item] of list.entries()) {
    if (!fields(item)) continue;
    const id = fields(item)!.id;
    if (typeof id === "string") {
      const line = report.at.of(report.offset(["reports", index, "id"])).line;
      const first = firstLine.get(id);
      if (first === undefined) firstLine.set(id, line);
      else {
        report.add(
          "duplicate-id",
          ["reports", index, "id"],
          `duplicate report id ${quote(id)}, first declared on line ${first}`,
        );
      }
    }
    for (const problem of checkReport(reportOptions(item, folder, read))) {
      const path: Path = ["reports", index, ...problem.path];
      if (reported.some((at) => within(at, path))) continue;
      report.add(problem.code, path, `${problem.code}: ${problem.message}`);
    }
  }
}
