/**
 * The NDJSON writer of reports: one object a line with the declared keys
 * in order, values as JSON (no formula escaping), UTF-8 without a BOM, and
 * the column contract shared with CSV.
 */

import assert from "node:assert/strict";
import {
  checkColumns,
  NdjsonWriter,
  ReportColumnsChanged,
  type ReportRow,
} from "../../src/report/ndjson.ts";

const text = (bytes: Uint8Array) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);

Deno.test("NdjsonWriter writes one object a line, the declared keys in order, LF-terminated", () => {
  const ndjson = new NdjsonWriter({ columns: ["id", "name", "2024"] });
  assert.deepEqual(
    text(
      ndjson.rows([{ name: "Zoë, 李雷", 2024: true, id: 1 }, { id: 2, name: null, 2024: false }]),
    ),
    '{"id":1,"name":"Zoë, 李雷","2024":true}\n{"id":2,"name":null,"2024":false}\n',
  );
});

Deno.test("NdjsonWriter leaves formula-like text alone: no spreadsheet opens NDJSON", () => {
  const ndjson = new NdjsonWriter({ columns: ["v"] });
  const values = ['=HYPERLINK("http://x")', "+1", "-1+1", "@SUM(A1)", "\tx", "\rx"];
  const out = text(ndjson.rows(values.map((v) => ({ v }))));
  assert.deepEqual(out, values.map((v) => `{"v":${JSON.stringify(v)}}\n`).join(""));
  assert.deepEqual(out.split("\n").slice(0, -1).map((line) => JSON.parse(line).v), values);
});

Deno.test("NdjsonWriter writes every value as JSON: bigints exact, dates ISO, non-finite and undefined null", () => {
  const ndjson = new NdjsonWriter({ columns: ["v"] });
  const cases: [unknown, string][] = [
    ["line one\nline two\u2028", '"line one\\nline two\u2028"'],
    ["\ud800", '"\\ud800"'],
    [-5, "-5"],
    [1.5, "1.5"],
    [9007199254740993n, "9007199254740993"],
    [NaN, "null"],
    [Infinity, "null"],
    [undefined, "null"],
    [new Date(Date.UTC(2026, 2, 8, 7, 30)), '"2026-03-08T07:30:00.000Z"'],
    [{ a: [1, "x"] }, '{"a":[1,"x"]}'],
  ];
  for (const [value, json] of cases) {
    assert.deepEqual(text(ndjson.rows([{ v: value }])), `{"v":${json}}\n`, String(value));
  }
});

Deno.test("NdjsonWriter has no header and no BOM, and writes a missing key of a later row as null", () => {
  const ndjson = new NdjsonWriter({ columns: ["a", "b"], encoding: "utf-8" });
  assert.deepEqual(ndjson.header().length, 0);
  ndjson.rows([{ a: 1, b: 2 }]);
  const rows: ReportRow[] = [{ a: 3 }];
  assert.deepEqual(text(ndjson.rows(rows)), '{"a":3,"b":null}\n');
});

Deno.test("NdjsonWriter refuses bytes naming the column and the row across batches", () => {
  const ndjson = new NdjsonWriter({ columns: ["id", "blob"] });
  ndjson.rows([{ id: 1, blob: null }]);
  assert.throws(() => ndjson.rows([{ id: 2, blob: new Uint8Array([1]) }]), {
    name: "ReportValueError",
    message:
      'column "blob", row 2: bytes have no text form in a report; encode them in the query (hex, base64)',
  });
  assert.throws(() => ndjson.rows([{ id: 3, blob: { n: 1n } }]), { name: "ReportValueError" });
});

Deno.test("NdjsonWriter keeps the column contract: report-columns-changed on other columns", () => {
  const ndjson = new NdjsonWriter({ columns: ["id", "name"] });
  assert.throws(() => ndjson.rows([{ id: 1, title: "x" }]), (error: unknown) => {
    assert(error instanceof ReportColumnsChanged);
    assert.deepEqual(error.code, "report-columns-changed");
    assert.deepEqual(error.actual, ["id", "title"]);
    return true;
  });
  assert.throws(() => checkColumns(["id", "name"], ["name", "id"]), {
    message:
      'report columns changed: declared ["id","name"], the query returns ["name","id"]; column 1 is "name", not "id"',
  });
  assert.throws(
    // deno-lint-ignore no-explicit-any -- the label as a config file would give it
    () => new NdjsonWriter({ columns: ["a"], encoding: "utf-16" as any }),
    { message: 'encoding "utf-16" is not supported: reports are written as UTF-8' },
  );
});
