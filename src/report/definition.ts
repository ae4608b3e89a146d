/**
 * Report definitions: the rules every report is held to before it runs,
 * and its compiled form. A report is a heavy query whose output a person
 * downloads later; the rules are the bounds written down: the need record
 * that earns it its infrastructure, paging, an audit target, every
 * parameter bound (never SQL text from a caller), the tenant bound when the
 * report is tenant-isolated, and a stable column contract.
 *
 * `checkReport` returns each broken rule with a code and the path of the
 * field, so `jobs check` reports it at its line in `schedules.yaml` and the
 * library's `defineReport` throws the same problems.
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import { queryParams } from "../text/named_params.ts";

export { queryParams };
import type { LimitName } from "./limits.ts";

/** The fields of a need record, each required. */
export const NEED_FIELDS = [
  "report",
  "volume",
  "plan",
  "latency_target",
  "max_result",
  "operator",
] as const;

/** The types a report parameter may have. */
export const PARAM_TYPES = ["date", "datetime", "string", "integer", "number", "boolean"] as const;
export type ParamType = typeof PARAM_TYPES[number];

/** Parameters the engine binds itself: never declared, never from the caller's `--param`. */
export const ENGINE_PARAMS = ["tenant", "actor", "after_key", "page_size"] as const;

/** What a report definition says, as the file or the library writes it. */
export interface ReportOptions {
  id: string;
  need?: Partial<Record<typeof NEED_FIELDS[number], string>>;
  source?: { sqlite: string } | { postgres: string };
  /** The SQL file, with named parameters (`:tenant`, `:from`). */
  query?: string;
  /** The text of `query`, when it could be read (the checks of its parameters need it). */
  queryText?: string | null;
  params?: Record<string, { type: ParamType; values?: string[] }>;
  paging?: { mode: "pages"; size: number; key: string } | { mode: "none"; reason: string };
  audit?: { reason?: string; target?: string };
  format?: {
    type: "csv" | "ndjson";
    encoding?: string;
    bom?: boolean;
    columns: string[];
    formula_columns?: string[];
  };
  authorize?: { roles?: string[]; sensitive?: Record<string, string[]> };
  /** Who may see whose rows. @default { mode: "isolated" } (the query binds `:tenant`) */
  tenancy?: { mode: "isolated" } | { mode: "shared"; reason: string };
  /** Sort keys a caller may choose, each mapped to a column of the query. */
  sort?: { keys: Record<string, string>; default?: string };
  storage?: { folder: string } | { s3: Record<string, string> };
  contact?: string;
  /**
   * The file's limits, canonical (ms, bytes, counts); a stored setting
   * overrides each, and a limit not given is the default (see `limits.ts`).
   */
  limits?: Partial<Record<LimitName, number>>;
}

/** What kind of problem a {@linkcode ReportProblem} is. */
export type ReportProblemCode =
  | "report-need-missing"
  | "report-paging-missing"
  | "report-audit-missing"
  | "report-source-missing"
  | "report-query-unreadable"
  | "report-param-unbound"
  | "report-param-unused"
  | "report-param-name-invalid"
  | "report-tenant-missing"
  | "report-paging-unbound"
  | "report-columns-invalid"
  | "report-sort-invalid"
  | "report-storage-missing"
  | "report-contact-missing";

/** One broken rule: its code, the path of the field under the report, and what is wrong. */
export interface ReportProblem {
  code: ReportProblemCode;
  path: (string | number)[];
  message: string;
}

/** Every rule `options` breaks; none when the report may run. */
export function checkReport(options: ReportOptions): ReportProblem[] {
  const problems: ReportProblem[] = [];
  const add = (code: ReportProblemCode, path: (string | number)[], message: string) =>
    problems.push({ code, path, message });

  if (!options.need) {
    add(
      "report-need-missing",
      [],
      `has no need record: say what it answers (report), its volume, the plan that rules out ` +
        `the request path, its latency_target, max_result and operator`,
    );
  } else {
    for (const field of NEED_FIELDS) {
      const value = options.need[field];
      if (typeof value !== "string" || value.trim() === "") {
        add("report-need-missing", ["need", field], `need.${field} is missing`);
      }
    }
  }
  if (!options.paging) {
    add(
      "report-paging-missing",
      [],
      `has no paging: { mode: pages, size, key } (keyset, each page its own statement) or ` +
        `{ mode: none, reason }`,
    );
  } else if (options.paging.mode === "none" && !options.paging.reason?.trim()) {
    add("report-paging-missing", ["paging", "reason"], `paging mode none needs a reason`);
  }
  if (!options.audit) {
    add("report-audit-missing", [], `has no audit: { reason, target } for every run and download`);
  } else {
    for (const field of ["reason", "target"] as const) {
      if (!options.audit[field]?.trim()) {
        add("report-audit-missing", ["audit", field], `audit.${field} is missing`);
      }
    }
  }
  if (!options.source) {
    add("report-source-missing", [], `has no source: { sqlite } or { postgres }`);
  }
  if (!options.storage) {
    add("report-storage-missing", [], `has no storage: { folder } or { s3 }`);
  } else if (!options.contact?.trim()) {
    add(
      "report-contact-missing",
      [],
      `stores its output but names no contact: who answers for the files it keeps (contact)`,
    );
  }

  const format = options.format;
  const columns = format?.columns ?? [];
  if (format) {
    const seen = new Set<string>();
    for (const [i, column] of columns.entries()) {
      if (seen.has(column)) {
        add(
          "report-columns-invalid",
          ["format", "columns", i],
          `column "${column}" is listed twice`,
        );
      }
      seen.add(column);
    }
    for (const [i, column] of (format.formula_columns ?? []).entries()) {
      if (!seen.has(column)) {
        add(
          "report-columns-invalid",
          ["format", "formula_columns", i],
          `formula column "${column}" is not one of the columns (${columns.join(", ")})`,
        );
      }
    }
    for (const column of Object.keys(options.authorize?.sensitive ?? {})) {
      if (!seen.has(column)) {
        add(
          "report-columns-invalid",
          ["authorize", "sensitive", column],
          `sensitive column "${column}" is not one of the columns (${columns.join(", ")})`,
        );
      }
    }
    if (options.paging?.mode === "pages" && !seen.has(options.paging.key)) {
      add(
        "report-columns-invalid",
        ["paging", "key"],
        `paging key "${options.paging.key}" is not one of the columns (${columns.join(", ")})`,
      );
    }
  }
  for (const [key, column] of Object.entries(options.sort?.keys ?? {})) {
    if (format && !columns.includes(column)) {
      add(
        "report-sort-invalid",
        ["sort", "keys", key],
        `sort key "${key}" maps to "${column}", not one of the columns (${columns.join(", ")})`,
      );
    }
  }
  if (
    options.sort?.default !== undefined &&
    !Object.hasOwn(options.sort.keys ?? {}, options.sort.default)
  ) {
    add(
      "report-sort-invalid",
      ["sort", "default"],
      `default sort "${options.sort.default}" is not a sort key`,
    );
  }

  for (const name of Object.keys(options.params ?? {})) {
    // Every other name works (requests look params up as own properties:
    // `constructor` or `toString` can be declared and given), but this one
    // sets an object's prototype when written as a plain key, in a request's
    // JSON and in code: it could never be given reliably.
    if (name === "__proto__") {
      add(
        "report-param-name-invalid",
        ["params", name],
        `param "__proto__" cannot be declared: JavaScript objects treat that name specially; ` +
          `rename it`,
      );
    }
  }
  if (options.query !== undefined && options.queryText === null) {
    add("report-query-unreadable", ["query"], `cannot read the query file ${options.query}`);
  }
  if (typeof options.queryText === "string") {
    const used = queryParams(options.queryText);
    const declared = Object.keys(options.params ?? {});
    for (const name of used) {
      if ((ENGINE_PARAMS as readonly string[]).includes(name) || declared.includes(name)) continue;
      add(
        "report-param-unbound",
        ["query"],
        `the query uses :${name}, which is not declared in params (declared: ${
          declared.join(", ") || "none"
        }; the engine binds ${ENGINE_PARAMS.map((p) => `:${p}`).join(", ")})`,
      );
    }
    for (const name of declared) {
      if ((ENGINE_PARAMS as readonly string[]).includes(name)) {
        add(
          "report-param-unbound",
          ["params", name],
          `:${name} is bound by the engine, never by a caller: remove it from params`,
        );
      } else if (!used.includes(name)) {
        add("report-param-unused", ["params", name], `param "${name}" is not used by the query`);
      }
    }
    const tenancy = options.tenancy ?? { mode: "isolated" };
    if (tenancy.mode === "isolated" && !used.includes("tenant")) {
      add(
        "report-tenant-missing",
        ["query"],
        `the report is tenant-isolated but its query never binds :tenant, so it would read every ` +
          `tenant's rows (or declare tenancy: { mode: shared, reason })`,
      );
    }
    if (options.paging?.mode === "pages") {
      for (const name of ["after_key", "page_size"]) {
        if (!used.includes(name)) {
          add(
            "report-paging-unbound",
            ["query"],
            `paging mode pages binds :after_key and :page_size, and the query never uses :${name}`,
          );
        }
      }
    }
  }
  return problems;
}

/** A report as it runs: checked, paths absolute. */
export interface CompiledReport extends Omit<ReportOptions, "queryText"> {
  query: string;
  tenancy: NonNullable<ReportOptions["tenancy"]>;
}

/** `options` with relative paths resolved against `baseDir`; call after `checkReport` found nothing. */
export function compileReport(options: ReportOptions, baseDir = "."): CompiledReport {
  const path = (p: string) => isAbsolute(p) ? p : resolve(baseDir, p);
  const { queryText: _text, ...rest } = options;
  const source = options.source && "sqlite" in options.source
    ? { sqlite: path(options.source.sqlite) }
    : options.source;
  const storage = options.storage && "folder" in options.storage
    ? { folder: path(options.storage.folder) }
    : options.storage;
  return {
    ...rest,
    ...(source ? { source } : {}),
    ...(storage ? { storage } : {}),
    query: path(options.query ?? ""),
    tenancy: options.tenancy ?? { mode: "isolated" },
  };
}

/** Raised by {@linkcode defineReport}: every problem, one per line, with its code. */
export class ReportDefinitionError extends Error {
  constructor(readonly id: string, readonly problems: ReportProblem[]) {
    super(
      `report "${id}": ${problems.length} problem(s):\n` +
        problems.map((p) => `  ${p.code}: ${p.message}`).join("\n"),
    );
    this.name = "ReportDefinitionError";
  }
}

/**
 * A report for the library: checked by {@linkcode checkReport} (the query
 * file read from `baseDir` when `queryText` is not given, so its parameters
 * are checked too) and compiled; every problem is thrown at once.
 * `jobs.report(report, request)` queues a run (see `@jobs/jobs/report` for
 * one run whole).
 *
 * @example A report's rules, and a report that breaks one
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineReport } from "@jobs/jobs";
 * import { ReportDefinitionError, type ReportOptions } from "@jobs/jobs/report";
 *
 * const options: ReportOptions = {
 *   id: "ledger",
 *   // Why the report earns its infrastructure, and who answers for it.
 *   need: {
 *     report: "the ledger since a date, for the accountants",
 *     volume: "a few thousand rows a month",
 *     plan: "a range scan over ledger by id",
 *     latency_target: "1m",
 *     max_result: "100000 rows",
 *     operator: "finance-ops",
 *   },
 *   source: { sqlite: "./app.db" }, // or { postgres: "postgres://..." }
 *   query: "./ledger.sql",
 *   // The query file's text (read from the file when left out): every parameter bound.
 *   queryText: `select id, booked_at, amount from ledger
 *     where booked_at >= :from and id > coalesce(:after_key, -1)
 *     order by id limit :page_size`,
 *   params: { from: { type: "date" } },
 *   paging: { mode: "pages", size: 500, key: "id" },
 *   audit: { reason: "ledger export", target: "finance-audit" },
 *   format: { type: "csv", columns: ["id", "booked_at", "amount"] },
 *   tenancy: { mode: "shared", reason: "one company's ledger" }, // else the query binds :tenant
 *   storage: { folder: "./exports" }, // or { s3: { bucket, region, ... } }
 *   contact: "finance-ops@example.com",
 * };
 * const ledger = defineReport(options, "/srv/reports");
 * assert.equal(ledger.query, "/srv/reports/ledger.sql");
 *
 * assert.throws(
 *   () => defineReport({ ...options, paging: undefined }),
 *   (error: ReportDefinitionError) => error.problems[0]!.code === "report-paging-missing",
 * );
 * ```
 *
 * @throws {ReportDefinitionError} when any rule is broken
 */
export function defineReport(options: ReportOptions, baseDir = "."): CompiledReport {
  let checked = options;
  if (options.queryText === undefined && options.query !== undefined) {
    const file = isAbsolute(options.query) ? options.query : resolve(baseDir, options.query);
    let text: string | null;
    try {
      text = Deno.readTextFileSync(file);
    } catch {
      text = null;
    }
    checked = { ...options, queryText: text };
  }
  const problems = checkReport(checked);
  if (problems.length > 0) throw new ReportDefinitionError(options.id, problems);
  return compileReport(checked, baseDir);
}
