/**
 * The CSV writer of reports: formula injection escaped everywhere but a
 * declared formula column, RFC 4180 quoting byte for byte, UTF-8 with an
 * optional BOM under the declared header, and the column contract.
 */

import assert from "node:assert/strict";
import { parse } from "npm:csv-parse@6.2.1/sync";
import {
  checkColumns,
  CsvWriter,
  ReportColumnsChanged,
  type ReportRow,
  ReportValueError,
} from "../../src/report/csv.ts";

const text = (bytes: Uint8Array) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);

/** The CSV of `values`, one row each, in a one-column report `v`. */
function column(values: unknown[], formulaColumns: string[] = []): string {
  const csv = new CsvWriter({ columns: ["v"], formulaColumns });
  return text(csv.rows(values.map((v) => ({ v }))));
}

// The value, and its exact field: what the issue lists, then the edges.
const CASES: [unknown, string][] = [
  ['=HYPERLINK("http://x")', `"'=HYPERLINK(""http://x"")"`],
  ["+1", "'+1"],
  ["-1+1", "'-1+1"],
  ["@SUM(A1)", "'@SUM(A1)"],
  ["\tcmd", "'\tcmd"],
  ["\rcmd", `"'\rcmd"`],
  ['say "hi"', `"say ""hi"""`],
  ["line one\nline two", `"line one\nline two"`],
  ["line one\r\nline two", `"line one\r\nline two"`],
  ["Smith, John", `"Smith, John"`],
  ["Zoë, 李雷 🚀", `"Zoë, 李雷 🚀"`],
  ["Jürgen", "Jürgen"],
  ["＝1+1", "'＝1+1"],
  ["－1", "'－1"],
  ["a=b", "a=b"],
  ["1-1", "1-1"],
  [" padded ", " padded "],
  ["", '""'],
  [null, ""],
  [undefined, ""],
];

Deno.test("CsvWriter escapes and quotes every value the issue lists exactly", () => {
  for (const [value, field] of CASES) {
    assert.deepEqual(column([value]), field + "\r\n", JSON.stringify(value));
  }
});

Deno.test("CsvWriter writes numbers as they are: -5 from a numeric column is not escaped", () => {
  assert.deepEqual(
    column([-5, -1.25, 0, 1e21, -10n, 12345678901234567890n, NaN, -Infinity]),
    "-5\r\n-1.25\r\n0\r\n1e+21\r\n-10\r\n12345678901234567890\r\nNaN\r\n-Infinity\r\n",
  );
  // The same characters as text are a formula.
  assert.deepEqual(column(["-5"]), "'-5\r\n");
});

Deno.test("CsvWriter writes booleans, dates in UTC and objects as JSON text", () => {
  assert.deepEqual(
    column([true, false, new Date(Date.UTC(2026, 2, 8, 7, 30)), { a: 1, b: "x,y" }, [1, 2]]),
    'true\r\nfalse\r\n2026-03-08T07:30:00.000Z\r\n"{""a"":1,""b"":""x,y""}"\r\n"[1,2]"\r\n',
  );
});

Deno.test("CsvWriter leaves a declared formula column alone, but still quotes it", () => {
  const csv = new CsvWriter({ columns: ["label", "total"], formulaColumns: ["total"] });
  const rows = [
    { label: "=1+1", total: "=SUM(A2,B2)" },
    { label: "-1+1", total: "-1+1" },
    { label: "@x", total: "@x" },
  ];
  assert.deepEqual(
    text(csv.rows(rows)),
    `'=1+1,"=SUM(A2,B2)"\r\n'-1+1,-1+1\r\n'@x,@x\r\n`,
  );
});

Deno.test("CsvWriter refuses a formula column that is not declared", () => {
  assert.throws(
    () => new CsvWriter({ columns: ["a"], formulaColumns: ["b"] }),
    { name: "RangeError", message: 'formula column "b" is not one of the declared columns' },
  );
});

Deno.test("CsvWriter.header() is the declared names with CRLF, after a BOM when asked", () => {
  const columns = ["id", "name", "total, EUR", "=x"];
  const plain = new CsvWriter({ columns }).header();
  assert.deepEqual(text(plain), `id,name,"total, EUR",'=x\r\n`);
  const bom = new CsvWriter({ columns, bom: true, encoding: "utf-8" }).header();
  assert.deepEqual([...bom.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  assert.deepEqual(bom.subarray(3), plain);
});

Deno.test("CsvWriter refuses an encoding other than UTF-8, no columns and a repeated column", () => {
  assert.throws(
    // deno-lint-ignore no-explicit-any -- the label as a config file would give it
    () => new CsvWriter({ columns: ["a"], encoding: "latin1" as any }),
    {
      name: "RangeError",
      message: 'encoding "latin1" is not supported: reports are written as UTF-8',
    },
  );
  assert.throws(() => new CsvWriter({ columns: [] }), { message: "a report declares no columns" });
  assert.throws(
    () => new CsvWriter({ columns: ["a", "b", "a"] }),
    { message: 'column "a" is declared twice' },
  );
});

Deno.test("CsvWriter writes the declared columns in their order whatever the row's key order", () => {
  const csv = new CsvWriter({ columns: ["b", "a", "2024"] });
  // A JavaScript object puts the integer-like key "2024" first.
  assert.deepEqual(text(csv.rows([{ a: 1, b: 2, 2024: 3 }])), "2,1,3\r\n");
});

Deno.test("CsvWriter writes the same bytes in batches as in one, with the header once", () => {
  const rows: ReportRow[] = Array.from({ length: 7 }, (_, i) => ({ id: i, note: `n,${i}` }));
  const one = new CsvWriter({ columns: ["id", "note"] });
  const many = new CsvWriter({ columns: ["id", "note"] });
  const whole = text(one.header()) + text(one.rows(rows));
  const parts = text(many.header()) + text(many.rows(rows.slice(0, 3))) +
    text(many.rows([])) + text(many.rows(rows.slice(3)));
  assert.deepEqual(parts, whole);
  assert.deepEqual(whole.split("\r\n")[0], "id,note");
});

Deno.test("CsvWriter refuses bytes and an invalid date, naming the column and the row across batches", () => {
  const csv = new CsvWriter({ columns: ["id", "blob"] });
  csv.rows([{ id: 1, blob: null }, { id: 2, blob: null }]);
  assert.throws(() => csv.rows([{ id: 3, blob: "ok" }, { id: 4, blob: new Uint8Array([1]) }]), {
    name: "ReportValueError",
    message:
      'column "blob", row 4: bytes have no text form in a report; encode them in the query (hex, base64)',
  });
  const dates = new CsvWriter({ columns: ["at"] });
  assert.throws(() => dates.rows([{ at: new Date(NaN) }]), (error: unknown) => {
    assert(error instanceof ReportValueError);
    assert.deepEqual([error.code, error.column, error.row], ["report-value-unsupported", "at", 1]);
    return true;
  });
  const nested = new CsvWriter({ columns: ["o"] });
  assert.throws(() => nested.rows([{ o: { n: 1n } }]), { name: "ReportValueError" });
});

Deno.test("checkColumns() fails with report-columns-changed naming the first difference", () => {
  const declared = ["id", "name", "total"];
  checkColumns(declared, ["id", "name", "total"]);
  const cases: [string[], string][] = [
    [["id", "total", "name"], 'column 2 is "total", not "name"'],
    [["id", "name"], 'column 3 "total" is missing'],
    [["id", "name", "total", "vat"], 'column 4 "vat" is not declared'],
    [["id", "Name", "total"], 'column 2 is "Name", not "name"'],
  ];
  for (const [actual, difference] of cases) {
    assert.throws(() => checkColumns(declared, actual), (error: unknown) => {
      assert(error instanceof ReportColumnsChanged);
      assert.deepEqual(error.code, "report-columns-changed");
      assert.deepEqual(error.declared, declared);
      assert.deepEqual(error.actual, actual);
      assert.deepEqual(
        error.message,
        `report columns changed: declared ["id","name","total"], ` +
          `the query returns ${JSON.stringify(actual)}; ${difference}`,
      );
      return true;
    });
  }
});

Deno.test("CsvWriter.rows() fails with report-columns-changed when the first row's keys are not the declared columns", () => {
  const csv = new CsvWriter({ columns: ["id", "name"] });
  assert.throws(() => csv.rows([{ id: 1, name: "a", extra: 2 }]), {
    name: "ReportColumnsChanged",
    message:
      'report columns changed: declared ["id","name"], the query returns ["id","name","extra"]; ' +
      'column 3 "extra" is not declared',
  });
  assert.throws(() => csv.rows([{ id: 1 }]), { name: "ReportColumnsChanged" });
});

Deno.test("a CSV file opens as UTF-8 with the declared header and parses back to the values, minus the escape quote", () => {
  const columns = ["id", "text", "formula", "amount"];
  const csv = new CsvWriter({ columns, formulaColumns: ["formula"], bom: true });
  const texts = CASES.map(([value]) => value).filter((v): v is string => typeof v === "string");
  const rows = texts.map((value, i) => ({ id: i, text: value, formula: value, amount: -i }));
  const bytes = new Uint8Array([...csv.header(), ...csv.rows(rows)]);
  assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  // A UTF-8 decoder takes the BOM for the encoding's mark; fatal: it throws on anything not UTF-8.
  const file = text(bytes);
  assert.deepEqual(file.slice(0, file.indexOf("\r\n")), columns.join(","));
  assert(file.includes("Zoë, 李雷 🚀"));

  const records: Record<string, string>[] = parse(bytes, { bom: true, columns: true });
  assert.deepEqual(records.length, texts.length);
  const formulaStart = /^[=+\-@\t\r＝＋－＠]/;
  for (const [i, record] of records.entries()) {
    const value = texts[i]!;
    assert.deepEqual(record, {
      id: String(i),
      text: formulaStart.test(value) ? "'" + value : value,
      formula: value,
      amount: String(-i),
    });
  }
});
