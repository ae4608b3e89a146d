/**
 * A report's limits: values parse from the forms people write (durations
 * with units or ISO, sizes decimal or binary, counts) and format back to
 * them; a stored setting overrides the file, which overrides the default;
 * `checkRange` refuses a request one day over `max_range` and lets one
 * exactly at it through; every error names the limit, its value and the
 * setting key that changes it.
 */

import assert from "node:assert/strict";
import {
  DEFAULT_LIMITS,
  effectiveLimits,
  formatValue,
  knownSettings,
  LIMIT_KINDS,
  LIMIT_NAMES,
  limitKey,
  parseLimitKey,
  parseValue,
  ReportLimitExceeded,
  requestBudget,
  SettingValueError,
  tryParseValue,
  type ValueKind,
} from "../../src/report/limits.ts";
import { checkRange } from "../../src/report/query.ts";

const DAY = 86_400_000;

function ok(kind: ValueKind, value: unknown): number {
  const result = tryParseValue(kind, value);
  if (!result.ok) assert.fail(`${JSON.stringify(value)}: ${result.reason}`);
  return result.value;
}

function reason(kind: ValueKind, value: unknown): string {
  const result = tryParseValue(kind, value);
  if (result.ok) assert.fail(`${JSON.stringify(value)} parsed as ${result.value}`);
  return result.reason;
}

/** A reader over a map, as `store.settingGet` reads. */
function reader(stored: Record<string, unknown>) {
  return (key: string) => Promise.resolve(key in stored ? stored[key] : null);
}

Deno.test("durations parse with units and as ISO 8601, into ms", () => {
  assert.equal(ok("duration", "30s"), 30_000);
  assert.equal(ok("duration", "10m"), 600_000);
  assert.equal(ok("duration", "1h30m"), 5_400_000);
  assert.equal(ok("duration", "7d"), 7 * DAY);
  assert.equal(ok("duration", "PT15M"), 900_000);
  assert.equal(ok("duration", "P7D"), 7 * DAY);
  assert.equal(ok("duration", "P1DT12H"), 36 * 3_600_000);
  assert.equal(ok("duration", "pt0.5s"), 500);
  assert.equal(ok("duration", "P2W"), 14 * DAY);
});

Deno.test("durations without a unit, of zero, or of months are refused with why", () => {
  assert.match(reason("duration", "30"), /must be a duration such as "30s", "10m"/);
  assert.match(reason("duration", 30), /a bare number has no unit/);
  assert.match(reason("duration", "0s"), /must be more than zero/);
  assert.match(reason("duration", "PT0S"), /must be more than zero/);
  assert.match(reason("duration", "P1M"), /months or years/);
  assert.match(reason("duration", "P1Y"), /months or years/);
  assert.match(reason("duration", "PT"), /must be a duration/);
  assert.match(reason("duration", "P1DT"), /must be a duration/);
  assert.match(reason("duration", "30m1h"), /largest to smallest/);
});

Deno.test("sizes parse decimal (MB) and binary (GiB) units and bare bytes", () => {
  assert.equal(ok("bytes", "500MB"), 500_000_000);
  assert.equal(ok("bytes", "1GiB"), 1024 ** 3);
  assert.equal(ok("bytes", "1048576"), 1_048_576);
  assert.equal(ok("bytes", 1_048_576), 1_048_576);
  assert.equal(ok("bytes", "1.5KB"), 1500);
  assert.equal(ok("bytes", "200 mb"), 200_000_000);
  assert.equal(ok("bytes", "64KiB"), 65_536);
  assert.match(reason("bytes", "lots"), /must be a size such as "500MB", "1GiB" or 1048576/);
  assert.match(reason("bytes", "5XB"), /no unit "XB"/);
  assert.match(reason("bytes", "0"), /must be a size/);
  assert.match(reason("bytes", "1.5"), /whole number of bytes/);
});

Deno.test("counts are whole numbers above zero, grouped or not", () => {
  assert.equal(ok("count", "500000"), 500_000);
  assert.equal(ok("count", 2), 2);
  assert.equal(ok("count", "1_000_000"), 1_000_000);
  assert.equal(ok("count", "1,000,000"), 1_000_000);
  for (const bad of ["0", "-3", "1.5", "1e6", "ten", "1,00", 0, 2.5, -1]) {
    assert.match(reason("count", bad), /must be a whole number above zero/, String(bad));
  }
});

Deno.test("formatValue writes what tryParseValue reads back to the same number", () => {
  assert.equal(formatValue("duration", 366 * DAY), "366d");
  assert.equal(formatValue("duration", 5_400_000), "1h30m");
  assert.equal(formatValue("duration", 2_000), "2s");
  assert.equal(formatValue("duration", 1_500), "1s500ms");
  assert.equal(formatValue("bytes", 1024 ** 3), "1GiB");
  assert.equal(formatValue("bytes", 200_000_000), "200MB");
  assert.equal(formatValue("bytes", 1_500_000_000), "1500MB");
  assert.equal(formatValue("bytes", 1_048_577), "1048577B");
  assert.equal(formatValue("count", 1_000_000), "1000000");
  for (
    const [kind, value] of [
      ["duration", 8_035_200_000],
      ["duration", 90_061_001],
      ["bytes", 123_456_789],
      ["bytes", 3 * 1024 ** 4],
      ["count", 7],
    ] as const
  ) {
    assert.equal(ok(kind, formatValue(kind, value)), value, `${kind} ${value}`);
  }
});

Deno.test("parseValue throws naming the key and the value", () => {
  assert.throws(
    () => parseValue("report.statement.max_rows", "count", "lots"),
    (error) =>
      error instanceof SettingValueError &&
      error.message ===
        `setting report.statement.max_rows must be a whole number above zero, such as 500000, ` +
          `got "lots"`,
  );
  assert.equal(parseValue("reports.request_budget", "duration", "PT5S"), 5_000);
});

Deno.test("keys are report.<id>.<limit> and reports.request_budget", () => {
  assert.equal(limitKey("statement", "max_rows"), "report.statement.max_rows");
  assert.deepEqual(parseLimitKey("report.statement.max_rows"), {
    report: "statement",
    limit: "max_rows",
  });
  assert.deepEqual(parseLimitKey("report.eu.monthly.lifetime"), {
    report: "eu.monthly",
    limit: "lifetime",
  });
  assert.equal(parseLimitKey("report.statement.max_rowz"), null);
  assert.equal(parseLimitKey("reports.request_budget"), null);
  const keys = knownSettings([{ id: "statement", limits: { max_rows: 500 } }]);
  assert.deepEqual(keys.map((k) => k.key), [
    "reports.request_budget",
    "report.statement.max_range",
    "report.statement.max_rows",
    "report.statement.max_runtime",
    "report.statement.max_concurrent",
    "report.statement.max_bytes",
    "report.statement.lifetime",
  ]);
  assert.equal(keys.find((k) => k.limit === "max_rows")?.file, 500);
  assert.equal(keys.find((k) => k.limit === "max_bytes")?.file, null);
});

Deno.test("a stored setting overrides the file's value, which overrides the default", async () => {
  const report = { id: "statement", limits: { max_rows: 500_000, max_runtime: 600_000 } };
  const limits = await effectiveLimits(reader({ "report.statement.max_rows": 500 }), report);
  assert.equal(limits.max_rows, 500);
  assert.equal(limits.max_runtime, 600_000);
  assert.equal(limits.max_bytes, DEFAULT_LIMITS.max_bytes);
  assert.deepEqual(limits.sources, {
    max_range: "default",
    max_rows: "setting",
    max_runtime: "file",
    max_concurrent: "default",
    max_bytes: "default",
    lifetime: "default",
  });
  // Another report's setting is not this one's.
  const other = await effectiveLimits(reader({ "report.other.max_rows": 5 }), { id: "statement" });
  assert.equal(other.max_rows, 1_000_000);
  assert.equal(other.sources.max_rows, "default");
});

Deno.test("the defaults are a year, a million rows, 30m, 2 at once, 1 GiB and a week", () => {
  assert.deepEqual(
    Object.fromEntries(
      LIMIT_NAMES.map((name) => [name, formatValue(LIMIT_KINDS[name], DEFAULT_LIMITS[name])]),
    ),
    {
      max_range: "366d",
      max_rows: "1000000",
      max_runtime: "30m",
      max_concurrent: "2",
      max_bytes: "1GiB",
      lifetime: "7d",
    },
  );
});

Deno.test("a stored value that is not a positive number is an error naming the key", async () => {
  await assert.rejects(
    () => effectiveLimits(reader({ "report.statement.max_rows": "500" }), { id: "statement" }),
    (error) =>
      error instanceof SettingValueError &&
      /setting report\.statement\.max_rows/.test(error.message),
  );
});

Deno.test("reports.request_budget is 2s unless stored", async () => {
  assert.equal(await requestBudget(reader({})), 2_000);
  assert.equal(await requestBudget(reader({ "reports.request_budget": 5_000 })), 5_000);
});

const STATEMENT = {
  id: "statement",
  params: {
    from: { type: "date" as const },
    to: { type: "date" as const },
    kind: { type: "string" as const },
  },
};

Deno.test("checkRange lets 2026-01-01..2027-01-02 (366 days) through max_range 366d", () => {
  const limits = { max_range: 366 * DAY };
  assert.equal(checkRange(STATEMENT, { from: "2026-01-01", to: "2027-01-02" }, limits), null);
  assert.equal(checkRange(STATEMENT, { from: "2026-01-01", to: "2026-01-01" }, limits), null);
});

Deno.test("checkRange refuses one day over, naming the range, the limit, its value and key", () => {
  const over = checkRange(
    STATEMENT,
    { from: "2026-01-01", to: "2027-01-03" },
    { max_range: 366 * DAY, sources: { max_range: "default" } },
  );
  assert.equal(
    over,
    "report statement: the date range 2026-01-01..2027-01-03 (367 days) exceeds max_range 366d " +
      "(the default; setting report.statement.max_range overrides it)",
  );
  const set = checkRange(
    STATEMENT,
    { from: "2026-01-01", to: "2027-06-01" },
    { max_range: 366 * DAY, sources: { max_range: "setting" } },
  );
  assert.equal(
    set,
    "report statement: the date range 2026-01-01..2027-06-01 (516 days) exceeds max_range 366d " +
      "(setting report.statement.max_range)",
  );
  const file = checkRange(
    STATEMENT,
    { from: "2026-01-01", to: "2026-04-05" },
    { max_range: 93 * DAY, sources: { max_range: "file" } },
  );
  assert.match(file!, /\(94 days\) exceeds max_range 93d \(from the schedules file; setting/);
});

Deno.test("checkRange spans earliest to latest of date and datetime params, in any order", () => {
  const report = {
    id: "events",
    params: { since: { type: "datetime" as const }, until: { type: "datetime" as const } },
  };
  const limits = { max_range: 36 * 3_600_000 };
  assert.equal(
    checkRange(report, { since: "2026-03-02T00:00:00Z", until: "2026-03-01T12:00:00Z" }, limits),
    null,
  );
  assert.equal(
    checkRange(
      report,
      { since: "2026-03-01T00:00:00Z", until: "2026-03-02T12:00:00+00:00" },
      limits,
    ),
    null,
  );
  assert.match(
    checkRange(report, { since: "2026-03-01T00:00:00Z", until: "2026-03-02T12:00:01Z" }, limits)!,
    /the date range 2026-03-01T00:00:00Z\.\.2026-03-02T12:00:01Z \(1d12h1s\) exceeds max_range 1d12h/,
  );
});

Deno.test("checkRange needs two date values, and refuses one that is not a date", () => {
  const limits = { max_range: DAY };
  assert.equal(checkRange(STATEMENT, { from: "2026-01-01" }, limits), null);
  assert.equal(checkRange(STATEMENT, {}, limits), null);
  assert.equal(checkRange({ id: "x" }, { from: "2026-01-01", to: "2030-01-01" }, limits), null);
  assert.equal(
    checkRange(STATEMENT, { from: "2026-02-30", to: "2026-03-01" }, limits),
    'report statement: param from must be a date such as 2026-01-31, got "2026-02-30"',
  );
  assert.match(
    checkRange(
      { id: "e", params: { at: { type: "datetime" }, to: { type: "datetime" } } },
      { at: "2026-03-01T00:00", to: "2026-03-01T00:00:00Z" },
      limits,
    )!,
    /param at must be an ISO instant with an offset/,
  );
});

Deno.test("ReportLimitExceeded names the limit, its value as written and the key to change it", () => {
  const rows = new ReportLimitExceeded({
    report: "statement",
    limit: "max_rows",
    value: 1_000_000,
  });
  assert.equal(rows.limit, "max_rows");
  assert.equal(rows.value, 1_000_000);
  assert.equal(rows.key, "report.statement.max_rows");
  assert.equal(
    rows.message,
    "report statement: the output has more rows than max_rows 1000000 " +
      "(the default; setting report.statement.max_rows overrides it)",
  );
  const bytes = new ReportLimitExceeded({
    report: "statement",
    limit: "max_bytes",
    value: 200_000_000,
    source: "file",
  });
  assert.equal(
    bytes.message,
    "report statement: the output is larger than max_bytes 200MB " +
      "(from the schedules file; setting report.statement.max_bytes overrides it)",
  );
  const runtime = new ReportLimitExceeded({
    report: "statement",
    limit: "max_runtime",
    value: 1_800_000,
    source: "setting",
  });
  assert.equal(
    runtime.message,
    "report statement: the run took longer than max_runtime 30m (setting report.statement.max_runtime)",
  );
  const concurrent = new ReportLimitExceeded({
    report: "statement",
    limit: "max_concurrent",
    value: 2,
  });
  assert.match(concurrent.message, /running runs are already at max_concurrent 2 \(the default/);
  assert.ok(concurrent instanceof Error);
  assert.equal(concurrent.name, "ReportLimitExceeded");
});
