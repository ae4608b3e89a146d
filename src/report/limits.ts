/**
 * The limits a report runs within, and the settings that hold them. Every
 * limit has a built-in default; a report of `schedules.yaml` may set its own
 * (`limits:`), and an operator overrides either with a stored setting
 * (`jobs settings set report.<id>.<limit> <value> --reason ...`), which
 * wins: so a limit can be raised or lowered on a running installation
 * without editing and reloading the file, and the change is audited.
 *
 * Values are stored and passed in one canonical form, a positive whole
 * number (milliseconds, bytes or a count); people write and read them in a
 * human form (`30m`, `PT15M`, `200MB`, `1GiB`, `500000`), parsed and
 * formatted here (durations through `src/text/durations.ts`). Nothing here
 * reads the store: {@linkcode effectiveLimits} takes the reader, so it runs
 * the same inside a transaction, outside one, and in tests.
 *
 * `max_concurrent` counts the running runs of one report over all tenants
 * (overall per report, not per tenant): it bounds the load one report puts
 * on its source, which is what the limit is for; fairness between tenants
 * is the queue's business.
 *
 * @module
 */

import { formatDuration, msPer, tryParseDurationOrIso } from "../text/durations.ts";

/** The limits of one report, in the order they are listed. */
export const LIMIT_NAMES = [
  "max_range",
  "max_rows",
  "max_runtime",
  "max_concurrent",
  "max_bytes",
  "lifetime",
] as const;

/** The name of one limit of {@linkcode LIMIT_NAMES}. */
export type LimitName = typeof LIMIT_NAMES[number];

/** What a setting's number counts: milliseconds, bytes, or things. */
export type ValueKind = "duration" | "bytes" | "count";

/** A report's limits, each a canonical number (ms, bytes or a count). */
export type ReportLimits = Record<LimitName, number>;

/** Where a limit's value came from: the built-in default, the schedules file, or a stored setting. */
export type LimitSource = "default" | "file" | "setting";

/** What each limit measures. */
export const LIMIT_KINDS: Readonly<Record<LimitName, ValueKind>> = Object.freeze({
  max_range: "duration",
  max_rows: "count",
  max_runtime: "duration",
  max_concurrent: "count",
  max_bytes: "bytes",
  lifetime: "duration",
});

const DAY = msPer("d");

/**
 * The built-in limits, for a report that sets none.
 *
 * - `max_range`: 366d, a year of dates, leap years included
 * - `max_rows`: 1,000,000 rows
 * - `max_runtime`: 30m
 * - `max_concurrent`: 2 running runs of the report, over all tenants
 * - `max_bytes`: 1 GiB of output
 * - `lifetime`: 7d before the pruner removes the stored output
 */
export const DEFAULT_LIMITS: Readonly<ReportLimits> = Object.freeze({
  max_range: 366 * DAY,
  max_rows: 1_000_000,
  max_runtime: 30 * 60_000,
  max_concurrent: 2,
  max_bytes: 1024 ** 3,
  lifetime: 7 * DAY,
});

/** What each limit bounds, for `jobs settings` and the errors. */
export const LIMIT_DESCRIPTIONS: Readonly<Record<LimitName, string>> = Object.freeze({
  max_range: "longest span between the earliest and latest date or datetime parameter",
  max_rows: "most rows one run writes",
  max_runtime: "longest one run takes",
  max_concurrent: "most runs of the report running at once, over all tenants",
  max_bytes: "largest output one run writes",
  lifetime: "how long a run's output is kept before the pruner removes it",
});

/** A setting any part of the program may read: its key, kind, default and what it is for. */
export interface SettingSpec {
  key: string;
  kind: ValueKind;
  /** The built-in value, canonical. */
  default: number;
  description: string;
}

/** The key of the reports' request budget. */
export const REQUEST_BUDGET_KEY = "reports.request_budget";

/**
 * Settings that belong to no one report, by key. New ones are added here
 * (their keys start `reports.`), and `jobs settings` lists and sets them.
 *
 * - `reports.request_budget` (@default 2s): how long the daemon's report
 *   endpoint may spend answering; a report that cannot finish within it is
 *   answered `202 Accepted` and runs in the background
 */
export const GLOBAL_SETTINGS: readonly SettingSpec[] = Object.freeze([
  {
    key: REQUEST_BUDGET_KEY,
    kind: "duration",
    default: 2_000,
    description: "longest the report endpoint waits for a run before answering 202 Accepted",
  },
]);

/** What a report says about its limits: its id, and the file's values (canonical). */
export interface LimitedReport {
  id: string;
  limits?: Partial<Record<LimitName, number>>;
}

/** `report.statement.max_rows`: the setting key of one limit of one report. */
export function limitKey(reportId: string, limit: LimitName): string {
  return `report.${reportId}.${limit}`;
}

/** The report id and limit of a key of the shape `report.<id>.<limit>`, else null. */
export function parseLimitKey(key: string): { report: string; limit: LimitName } | null {
  const match = /^report\.(.+)\.([a-z_]+)$/.exec(key);
  if (!match) return null;
  const limit = match[2] as LimitName;
  if (!LIMIT_NAMES.includes(limit) || match[1] === "") return null;
  return { report: match[1]!, limit };
}

/** One setting the program knows, with the file's value when a report sets it. */
export interface KnownSetting extends SettingSpec {
  /** The schedules file's value (canonical), or null when the file sets none. */
  file: number | null;
  /** The report and limit of a report's setting; null for a global one. */
  report: string | null;
  limit: LimitName | null;
}

/** Every setting there is for `reports`: the global ones, then each report's limits, in order. */
export function knownSettings(reports: readonly LimitedReport[]): KnownSetting[] {
  const known: KnownSetting[] = GLOBAL_SETTINGS.map((spec) => ({
    ...spec,
    file: null,
    report: null,
    limit: null,
  }));
  for (const report of reports) {
    for (const limit of LIMIT_NAMES) {
      known.push({
        key: limitKey(report.id, limit),
        kind: LIMIT_KINDS[limit],
        default: DEFAULT_LIMITS[limit],
        description: LIMIT_DESCRIPTIONS[limit],
        file: report.limits?.[limit] ?? null,
        report: report.id,
        limit,
      });
    }
  }
  return known;
}

// ------------------------------------------------------------------ values

/**
 * The outcome of {@linkcode tryParseValue}: the canonical number, or why
 * not, as the end of a sentence that starts with the value's name
 * (`must be a whole number above zero, such as 500000`).
 */
export type ValueResult = { ok: true; value: number } | { ok: false; reason: string };

const BYTES_SHAPE = `must be a size such as "500MB", "1GiB" or 1048576 (bytes)`;
const COUNT_SHAPE = `must be a whole number above zero, such as 500000`;

/** Bytes per unit; decimal units are powers of 1000, binary ones (`KiB`) of 1024. */
const BYTE_UNITS: ReadonlyArray<readonly [unit: string, bytes: number]> = [
  ["TiB", 1024 ** 4],
  ["TB", 1000 ** 4],
  ["GiB", 1024 ** 3],
  ["GB", 1000 ** 3],
  ["MiB", 1024 ** 2],
  ["MB", 1000 ** 2],
  ["KiB", 1024],
  ["KB", 1000],
  ["B", 1],
];

function parseBytesValue(value: unknown): ValueResult {
  if (typeof value === "number") return wholeAboveZero(value, BYTES_SHAPE);
  if (typeof value !== "string") return { ok: false, reason: BYTES_SHAPE };
  const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$/.exec(value.trim());
  if (!match) return { ok: false, reason: BYTES_SHAPE };
  const [, digits, unit] = match as unknown as [string, string, string];
  let size = 1;
  if (unit !== "") {
    const found = BYTE_UNITS.find(([u]) => u.toLowerCase() === unit.toLowerCase());
    if (!found) {
      return {
        ok: false,
        reason: `has no unit "${unit}" (B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)`,
      };
    }
    size = found[1];
  }
  const bytes = Number(digits) * size;
  if (!Number.isInteger(bytes) && size === 1) {
    return { ok: false, reason: "must be a whole number of bytes" };
  }
  return wholeAboveZero(Math.round(bytes), BYTES_SHAPE);
}

function parseCountValue(value: unknown): ValueResult {
  if (typeof value === "number") return wholeAboveZero(value, COUNT_SHAPE);
  if (typeof value !== "string") return { ok: false, reason: COUNT_SHAPE };
  const text = value.trim();
  // Digits may be grouped, `1_000_000` or `1,000,000`, as people write large counts.
  if (!/^\d{1,3}(?:([_,])\d{3}(?:\1\d{3})*)?$|^\d+$/.test(text)) {
    return { ok: false, reason: COUNT_SHAPE };
  }
  return wholeAboveZero(Number(text.replace(/[_,]/g, "")), COUNT_SHAPE);
}

function wholeAboveZero(n: number, shape: string): ValueResult {
  if (!Number.isFinite(n) || !Number.isInteger(n) || n <= 0) return { ok: false, reason: shape };
  if (!Number.isSafeInteger(n)) return { ok: false, reason: "is too large" };
  return { ok: true, value: n };
}

/**
 * Parses a value of `kind` into its canonical number without throwing: a
 * duration (`30s`, `10m`, `1h30m`, `7d`, ISO `PT15M`, `P7D`) into ms, a
 * size (`500MB`, `1GiB`, `1048576`) into bytes, a count (`500000`,
 * `1_000_000`) as itself. Numbers (from YAML) are taken as bytes and
 * counts; a duration needs its unit.
 *
 * @example
 * ```ts
 * tryParseValue("bytes", "200MB"); // { ok: true, value: 200_000_000 }
 * tryParseValue("duration", "PT15M"); // { ok: true, value: 900_000 }
 * ```
 */
export function tryParseValue(kind: ValueKind, value: unknown): ValueResult {
  switch (kind) {
    case "duration": {
      const result = tryParseDurationOrIso(value);
      return result.ok ? { ok: true, value: result.ms } : result;
    }
    case "bytes":
      return parseBytesValue(value);
    case "count":
      return parseCountValue(value);
  }
}

/** Raised for a setting value that is not of its kind; the message names the key and the value. */
export class SettingValueError extends RangeError {
  constructor(readonly key: string, readonly value: unknown, reason: string) {
    super(`setting ${key} ${reason}, got ${shown(value)}`);
    this.name = "SettingValueError";
  }
}

function shown(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value));
}

/**
 * The canonical number of `value` for the setting `key` of `kind`.
 *
 * @throws {SettingValueError} naming the key and the value when it is not of its kind
 */
export function parseValue(key: string, kind: ValueKind, value: unknown): number {
  const result = tryParseValue(kind, value);
  if (!result.ok) throw new SettingValueError(key, value, result.reason);
  return result.value;
}

/**
 * A canonical value in the form people write it, which {@linkcode tryParseValue}
 * reads back to the same number: `1h30m`, `366d`; `1GiB`, `200MB` (the
 * largest unit that divides it), `1048577B`; counts as digits.
 */
export function formatValue(kind: ValueKind, value: number): string {
  if (!Number.isSafeInteger(value) || value <= 0) return String(value);
  if (kind === "count") return String(value);
  if (kind === "bytes") {
    for (const [unit, size] of BYTE_UNITS) {
      if (value % size === 0) return `${value / size}${unit}`;
    }
    return `${value}B`;
  }
  return formatDuration(value, "d");
}

// ---------------------------------------------------------------- effective

/** A report's limits as they apply now, with where each came from. */
export type EffectiveLimits = ReportLimits & { sources: Record<LimitName, LimitSource> };

/** Reads one stored setting (null when there is none): `store.settingGet` or a transaction's. */
export type SettingReader = (key: string) => Promise<unknown>;

/**
 * The value a stored setting holds, checked: null when nothing is stored.
 *
 * @throws {SettingValueError} when the stored value is not a positive whole number
 */
export async function readSetting(read: SettingReader, key: string): Promise<number | null> {
  const stored = await read(key);
  if (stored === null || stored === undefined) return null;
  if (typeof stored !== "number" || !Number.isSafeInteger(stored) || stored <= 0) {
    throw new SettingValueError(key, stored, "holds a stored value that is not a positive number");
  }
  return stored;
}

/**
 * The limits `report` runs within now: each limit's stored setting
 * (`report.<id>.<limit>`) when there is one, else the file's value, else
 * the default; `sources` says which.
 *
 * @throws {SettingValueError} when a stored setting is not a positive whole number
 */
export async function effectiveLimits(
  read: SettingReader,
  report: LimitedReport,
): Promise<EffectiveLimits> {
  const limits = { ...DEFAULT_LIMITS } as ReportLimits;
  const sources = {} as Record<LimitName, LimitSource>;
  // One at a time: a transaction's reader runs its statements in order.
  for (const limit of LIMIT_NAMES) {
    const stored = await readSetting(read, limitKey(report.id, limit));
    const file = report.limits?.[limit];
    if (stored !== null) {
      limits[limit] = stored;
      sources[limit] = "setting";
    } else if (file !== undefined) {
      limits[limit] = file;
      sources[limit] = "file";
    } else {
      sources[limit] = "default";
    }
  }
  return { ...limits, sources };
}

/**
 * The value of a global setting of {@linkcode GLOBAL_SETTINGS}: stored, else its default.
 *
 * @throws {SettingValueError} when the stored value is not a positive whole number
 */
export async function globalSetting(read: SettingReader, key: string): Promise<number> {
  const spec = GLOBAL_SETTINGS.find((s) => s.key === key);
  if (!spec) throw new RangeError(`unknown global setting ${JSON.stringify(key)}`);
  return (await readSetting(read, key)) ?? spec.default;
}

/** `reports.request_budget` in ms: stored, else 2s. */
export function requestBudget(read: SettingReader): Promise<number> {
  return globalSetting(read, REQUEST_BUDGET_KEY);
}

// ------------------------------------------------------------------ errors

/** `(setting report.statement.max_rows)`, or where else the value came from and how to change it. */
function origin(key: string, source: LimitSource | undefined): string {
  if (source === "setting") return `setting ${key}`;
  const from = source === "file" ? "from the schedules file" : "the default";
  return `${from}; setting ${key} overrides it`;
}

/** What running into each limit means, before `<limit> <value>`. */
const HIT: Readonly<Record<LimitName, string>> = Object.freeze({
  max_range: "the date range exceeds",
  max_rows: "the output has more rows than",
  max_runtime: "the run took longer than",
  max_concurrent: "the report's running runs are already at",
  max_bytes: "the output is larger than",
  lifetime: "the output is kept no longer than",
});

/**
 * A run stopped by one of its limits, or refused by it before it ran. The
 * message names the report, the limit, its value as people write it and
 * the setting key that changes it: `report statement: the output has more
 * rows than max_rows 1000000 (the default; setting
 * report.statement.max_rows overrides it)`.
 */
export class ReportLimitExceeded extends Error {
  readonly report: string;
  readonly limit: LimitName;
  /** The limit's value, canonical. */
  readonly value: number;
  /** The setting key that changes it. */
  readonly key: string;
  readonly source: LimitSource | undefined;

  constructor(params: {
    report: string;
    limit: LimitName;
    value: number;
    /** Where the value came from, for the message (see {@linkcode EffectiveLimits}). */
    source?: LimitSource;
    /** What the run reached, in words, instead of the limit's own phrase (`the date range A..B (516 days) exceeds`). */
    what?: string;
  }) {
    const key = limitKey(params.report, params.limit);
    const display = formatValue(LIMIT_KINDS[params.limit], params.value);
    super(
      `report ${params.report}: ${params.what ?? HIT[params.limit]} ${params.limit} ${display} ` +
        `(${origin(key, params.source)})`,
    );
    this.name = "ReportLimitExceeded";
    this.report = params.report;
    this.limit = params.limit;
    this.value = params.value;
    this.key = key;
    this.source = params.source;
  }
}
