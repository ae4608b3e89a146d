/**
 * A report request's values, checked and bound: each `--param k=v` parsed
 * by its declared type (never spliced into SQL), the sort key looked up in
 * the report's fixed list, and the query's named parameters (`:tenant`)
 * turned into what each driver binds: SQLite binds `:name` itself,
 * PostgreSQL takes `$1..$n` with the values in order. The date range a
 * request spans is held to the report's `max_range` here too
 * ({@linkcode checkRange}), before anything runs.
 *
 * @module
 */

import { msPer } from "../text/durations.ts";
import type { CompiledReport, ParamType } from "./definition.ts";
import { formatValue, type LimitName, type LimitSource, ReportLimitExceeded } from "./limits.ts";
import { TENANT_RULE, tenantProblem } from "./tenant.ts";
import type { ParamValue, ReportRequest } from "./types.ts";

/**
 * The stable code of a refused request, as the daemon's API answers it
 * (`code`): `report-param-unknown` (a param the report does not declare),
 * `report-param-invalid` (of the wrong type, or not one of its values, or a
 * date range past `max_range`), `report-param-missing`, `tenant-invalid`
 * (breaks {@linkcode TENANT_RULE}), `tenant-missing`, `actor-missing`,
 * `role-refused`, `sort-invalid`.
 */
export type ReportRequestCode =
  | "report-param-unknown"
  | "report-param-invalid"
  | "report-param-missing"
  | "tenant-invalid"
  | "tenant-missing"
  | "actor-missing"
  | "role-refused"
  | "sort-invalid";

/** A request the report refuses before anything runs; `field` names what is wrong, `code` how. */
export class ReportRequestError extends Error {
  /** `message` is prefixed with `report <id>: ` unless it already starts so. */
  constructor(
    readonly report: string,
    readonly field: string,
    message: string,
    readonly code: ReportRequestCode = "report-param-invalid",
  ) {
    super(message.startsWith(`report ${report}: `) ? message : `report ${report}: ${message}`);
    this.name = "ReportRequestError";
  }
}

/** `text` quoted for an error, cut after 40 characters (a 300-character tenant stays readable). */
function quoted(text: string): string {
  return text.length <= 40 ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, 40))}...`;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const INTEGER = /^-?\d{1,15}$/;

/** `text` as a value of `type`, or a reason it is not one. */
export function parseParam(type: ParamType, text: string): ParamValue | { invalid: string } {
  switch (type) {
    case "string":
      return text;
    case "date": {
      const m = DATE.exec(text);
      if (m) {
        const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
        const day = new Date(Date.UTC(y, mo - 1, d));
        if (day.getUTCFullYear() === y && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d) {
          return text;
        }
      }
      return { invalid: "must be a date such as 2026-03-01" };
    }
    case "datetime":
      return INSTANT.test(text) && !Number.isNaN(Date.parse(text))
        ? text
        : { invalid: "must be an ISO instant such as 2026-03-01T00:00:00Z" };
    case "integer":
      return INTEGER.test(text) ? Number(text) : { invalid: "must be a whole number" };
    case "number": {
      const n = Number(text);
      return text.trim() !== "" && Number.isFinite(n) ? n : { invalid: "must be a number" };
    }
    case "boolean":
      if (text === "true") return true;
      if (text === "false") return false;
      return { invalid: "must be true or false" };
  }
}

/** What a caller gives: parameter texts by name, and who asks. */
export interface RawRequest {
  params: Record<string, string>;
  tenant?: string | null;
  actor: string;
  roles?: string[];
  sort?: string | null;
}

/**
 * The request `raw` checked against `report`: every declared parameter
 * given once and of its type (and one of its `values` when listed), no
 * undeclared one, the tenant given unless tenancy is shared, the actor
 * holding one of `authorize.roles` when the report lists any, and the sort
 * a key of `sort.keys`.
 *
 * @throws {ReportRequestError} naming the field and the value
 */
export function checkRequest(report: CompiledReport, raw: RawRequest): ReportRequest {
  const fail = (field: string, message: string, code: ReportRequestCode): never => {
    throw new ReportRequestError(report.id, field, message, code);
  };
  // Own properties only, here and below: a param named `constructor` or
  // `toString` is not declared because every object inherits one.
  const declared = report.params ?? {};
  const names = Object.keys(declared);
  const given = raw.params === null || typeof raw.params !== "object" ? {} : raw.params;
  const params = new Map<string, ParamValue>();
  for (const [name, text] of Object.entries(given)) {
    if (!Object.hasOwn(declared, name)) {
      fail(
        `params.${name}`,
        `has no parameter ${quoted(name)} (its parameters: ${names.join(", ") || "none"})`,
        "report-param-unknown",
      );
    }
    const spec = declared[name]!;
    const value = parseParam(spec.type, text);
    if (typeof value === "object") {
      fail(
        `params.${name}`,
        `param ${name}=${JSON.stringify(text)} ${value.invalid}`,
        "report-param-invalid",
      );
    }
    if (spec.values && !spec.values.includes(text)) {
      fail(
        `params.${name}`,
        `param ${name}=${JSON.stringify(text)} is not one of ${spec.values.join(", ")}`,
        "report-param-invalid",
      );
    }
    params.set(name, value as ParamValue);
  }
  for (const name of names) {
    if (!params.has(name)) {
      fail(
        `params.${name}`,
        `needs the param ${name} (a ${declared[name]!.type})`,
        "report-param-missing",
      );
    }
  }
  const tenant = raw.tenant?.trim() ? raw.tenant : null;
  if (tenant === null && report.tenancy.mode === "isolated") {
    fail(
      "tenant",
      "is tenant-isolated: give the tenant whose rows it reads (tenant, --tenant)",
      "tenant-missing",
    );
  }
  const problem = tenant === null ? null : tenantProblem(tenant);
  if (problem !== null) {
    fail("tenant", `tenant ${quoted(tenant!)} ${problem}: ${TENANT_RULE}`, "tenant-invalid");
  }
  if (!raw.actor.trim()) {
    fail("actor", "needs the actor it runs for (actor, --actor)", "actor-missing");
  }
  const roles = [...new Set(raw.roles ?? [])];
  const allowed = report.authorize?.roles ?? [];
  if (allowed.length > 0 && !roles.some((r) => allowed.includes(r))) {
    fail(
      "roles",
      `may be run by the roles ${allowed.join(", ")}; ${raw.actor} has ${
        roles.length ? roles.join(", ") : "no role"
      }`,
      "role-refused",
    );
  }
  const keys = report.sort?.keys ?? {};
  const sort = raw.sort ?? report.sort?.default ?? null;
  if (sort !== null) {
    if (!Object.hasOwn(keys, sort)) {
      fail(
        "sort",
        `cannot sort by ${JSON.stringify(sort)}: the sort keys are ${
          Object.keys(keys).join(", ") || "none"
        }`,
        "sort-invalid",
      );
    }
    if (report.paging?.mode === "pages" && keys[sort] !== report.paging.key) {
      fail(
        "sort",
        `pages by ${report.paging.key}, so its order is ${report.paging.key}: sort key ` +
          `${JSON.stringify(sort)} (${keys[sort]}) would break its keyset paging`,
        "sort-invalid",
      );
    }
  }
  // fromEntries defines own properties: even a declared `__proto__` stays a value.
  return { params: Object.fromEntries(params), tenant, actor: raw.actor, roles, sort };
}

/** The columns of `report` the actor may not read: each masked in the output. */
export function maskedColumns(report: CompiledReport, roles: readonly string[]): string[] {
  const sensitive = report.authorize?.sensitive ?? {};
  return Object.entries(sensitive)
    .filter(([, readers]) => !readers.some((r) => roles.includes(r)))
    .map(([column]) => column);
}

/** What a masked value reads as in the output. */
export const MASKED = "[REDACTED]";

/**
 * Every value the query may bind, by name: the declared parameters and the
 * engine's (`tenant`, `actor`; `after_key` and `page_size` are set per page).
 */
export function boundValues(request: ReportRequest): Record<string, ParamValue | null> {
  return { ...request.params, tenant: request.tenant, actor: request.actor };
}

/** The values of `names` from `values`, for a positional statement. */
export function valuesOf(
  names: readonly string[],
  values: Record<string, ParamValue | null>,
): (ParamValue | null)[] {
  return names.map((name) => Object.hasOwn(values, name) ? values[name] ?? null : null);
}

// ------------------------------------------------------------------- range

/** The types of parameter whose values span a date range. */
const RANGE_TYPES: readonly ParamType[] = ["date", "datetime"];

/** `YYYY-MM-DD` as UTC midnight, an ISO instant as itself; null when it is neither. */
function instantOf(type: ParamType, value: string): number | null {
  try {
    if (type === "date") {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return null;
      return Temporal.PlainDate.from(value, { overflow: "reject" })
        .toZonedDateTime("UTC").epochMilliseconds;
    }
    return Temporal.Instant.from(value).epochMilliseconds;
  } catch {
    return null;
  }
}

/** `516 days`, `1 day`, or `36h30m` when the span is not whole days. */
function spanText(ms: number): string {
  const day = msPer("d");
  if (ms % day === 0) return `${ms / day} day${ms === day ? "" : "s"}`;
  return formatValue("duration", ms);
}

/**
 * Whether the date range of a request fits `max_range`, before it runs:
 * the span from the earliest to the latest value of the report's `date`
 * and `datetime` parameters (dates as UTC midnight, so `from: 2026-01-01,
 * to: 2027-01-02` spans 366 days). A span equal to the limit fits. Null
 * when it fits (or fewer than two such values are given), else the error
 * naming the range, the limit, its value and the setting key:
 * `report statement: the date range 2026-01-01..2027-06-01 (516 days)
 * exceeds max_range 366d (setting report.statement.max_range)`.
 *
 * A value of a date parameter that is not a date is refused here too, since
 * the range cannot be known: `YYYY-MM-DD` for `date`, an ISO instant with
 * its offset for `datetime`.
 */
export function checkRange(
  report: { id: string; params?: Record<string, { type: ParamType }> },
  values: Readonly<Record<string, unknown>>,
  limits: { max_range: number; sources?: Partial<Record<LimitName, LimitSource>> },
): string | null {
  const points: { value: string; at: number }[] = [];
  for (const [name, spec] of Object.entries(report.params ?? {})) {
    if (!RANGE_TYPES.includes(spec.type)) continue;
    const value = values[name];
    if (value === undefined || value === null) continue;
    const at = typeof value === "string" ? instantOf(spec.type, value) : null;
    if (typeof value !== "string" || at === null) {
      return `report ${report.id}: param ${name} must be ${
        spec.type === "date"
          ? "a date such as 2026-01-31"
          : "an ISO instant with an offset such as 2026-01-31T00:00:00Z"
      }, got ${String(JSON.stringify(value))}`;
    }
    points.push({ value, at });
  }
  if (points.length < 2) return null;
  points.sort((a, b) => a.at - b.at);
  const first = points[0]!;
  const last = points.at(-1)!;
  const span = last.at - first.at;
  if (span <= limits.max_range) return null;
  return new ReportLimitExceeded({
    report: report.id,
    limit: "max_range",
    value: limits.max_range,
    source: limits.sources?.max_range,
    what: `the date range ${first.value}..${last.value} (${spanText(span)}) exceeds`,
  }).message;
}
