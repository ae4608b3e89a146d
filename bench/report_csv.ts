/**
 * The CSV export of reports: rows per second and peak RSS of
 * `src/report/csv.ts` against `csv-stringify` with the same quoting and
 * formula escaping, on a 6-column query of N rows written in batches of
 * 5,000 to a file.
 *
 * ```sh
 * deno run -A bench/report_csv.ts                  # N=1000000, RUNS=3
 * N=200000 RUNS=1 deno run -A bench/report_csv.ts
 * ```
 *
 * The rows are made a batch at a time, fresh objects for each (an integer
 * id, a name with now and then a comma, a quote or non-ASCII text, a
 * signed amount, a `Date`, a boolean, a note that now and then starts
 * with `=` or `-` or holds a line break), so one batch is all there is to
 * hold. Before timing, both writers turn the same 20,000 rows into bytes
 * and the bench stops unless the bytes are identical: the two do the same
 * work.
 *
 * Each run is a process of its own (this module with `--child`), so its
 * peak RSS (the kernel's `VmHWM`) is its own, at N / 4 rows and at N rows:
 * a streaming writer's peak does not grow with N (RSS moves with V8's
 * heap sizing, so the live heap after a full collection at the end is
 * shown too: what the export kept). `write/s` counts the
 * time in the writer alone (the row to bytes); `export/s` the whole export
 * (making the rows, the writer, the file writes). The table shows the
 * medians over RUNS; the last line of stdout is one JSON object with them.
 *
 * @module
 */

import { stringify } from "csv-stringify/sync";
import { CsvWriter } from "../src/report/csv.ts";
import type { ReportRow } from "../src/report/columns.ts";

const BATCH = 5_000;
const COLUMNS = ["id", "name", "amount", "created_at", "active", "note"] as const;
const IMPLS = ["ours", "csv-stringify"] as const;
type Impl = typeof IMPLS[number];

/** What one child process measured. */
interface ChildResult {
  rows: number;
  bytes: number;
  writePerS: number;
  exportPerS: number;
  peakRssMb: number;
  /** The heap still alive after a full collection at the end, MB: what the export kept. */
  liveMb: number;
}

const NAMES = ["Ada", "Grace", "Edsger", "Barbara, Jr.", 'Donald "Don"', "Zoë", "Jürgen", "李雷"];
const EPOCH = Date.UTC(2026, 0, 1);

/** Rows `start` .. `start + count - 1` of the query, fresh objects. */
function makeBatch(start: number, count: number): ReportRow[] {
  const rows: ReportRow[] = new Array(count);
  for (let k = 0; k < count; k++) {
    const i = start + k;
    rows[k] = {
      id: i + 1,
      name: NAMES[i % NAMES.length]!,
      amount: ((i * 7919) % 200_001 - 100_000) / 100,
      created_at: new Date(EPOCH + i * 1_000),
      active: i % 3 !== 0,
      note: i % 10 === 0
        ? `=HYPERLINK("http://x/${i}")`
        : i % 10 === 5
        ? `-${i}+1`
        : i % 20 === 7
        ? `line one\nline ${i}`
        : `order ${i} shipped`,
    };
  }
  return rows;
}

/** `csv-stringify` set to write what {@linkcode CsvWriter} writes. */
function stringifier(): { header(): Uint8Array; rows(rows: readonly ReportRow[]): Uint8Array } {
  const encoder = new TextEncoder();
  const options = {
    columns: [...COLUMNS],
    record_delimiter: "windows" as const,
    // With `record_delimiter` set, csv-stringify quotes a field holding a
    // bare LF or CR only when told to: without this a note "a\nb" splits
    // its row in two.
    quote_record_delimiter: true,
    escape_formulas: true,
    cast: {
      boolean: (value: boolean) => value ? "true" : "false",
      date: (value: Date) => value.toISOString(),
    },
  };
  return {
    header: () => encoder.encode(stringify([], { ...options, header: true })),
    rows: (rows) => encoder.encode(stringify(rows as Record<string, unknown>[], options)),
  };
}

function writerOf(impl: Impl) {
  return impl === "ours" ? new CsvWriter({ columns: COLUMNS }) : stringifier();
}

/** Stops the bench unless both writers turn the same rows into the same bytes. */
function checkSameBytes(): void {
  const rows = makeBatch(0, 20_000);
  const decoder = new TextDecoder();
  const a = writerOf("ours");
  const b = writerOf("csv-stringify");
  const ours = decoder.decode(a.header()) + decoder.decode(a.rows(rows));
  const theirs = decoder.decode(b.header()) + decoder.decode(b.rows(rows));
  if (ours !== theirs) {
    let i = 0;
    while (ours[i] === theirs[i]) i++;
    throw new Error(
      `the writers differ at character ${i}: ours ${JSON.stringify(ours.slice(i - 20, i + 40))}, ` +
        `csv-stringify ${JSON.stringify(theirs.slice(i - 20, i + 40))}`,
    );
  }
}

function peakRssMb(sampled: number): number {
  try {
    const status = Deno.readTextFileSync("/proc/self/status");
    const kb = status.match(/^VmHWM:\s+(\d+) kB/m);
    if (kb) return Number(kb[1]) / 1024;
  } catch {
    // not Linux: the sampled peak
  }
  return sampled / 1024 / 1024;
}

/** One export of `n` rows by `impl` to a temporary file, in this process. */
async function child(impl: Impl, n: number): Promise<ChildResult> {
  const path = await Deno.makeTempFile({ prefix: "jobs-bench-report-", suffix: ".csv" });
  const file = await Deno.open(path, { write: true, truncate: true });
  try {
    const writer = writerOf(impl);
    let writing = 0;
    let bytes = 0;
    let sampled = 0;
    const started = performance.now();
    const head = writer.header();
    bytes += head.length;
    await file.write(head);
    for (let start = 0; start < n; start += BATCH) {
      const rows = makeBatch(start, Math.min(BATCH, n - start));
      const t = performance.now();
      const chunk = writer.rows(rows);
      writing += performance.now() - t;
      bytes += chunk.length;
      for (let off = 0; off < chunk.length;) off += await file.write(chunk.subarray(off));
      sampled = Math.max(sampled, Deno.memoryUsage().rss);
    }
    const elapsed = performance.now() - started;
    (globalThis as { gc?: () => void }).gc?.();
    return {
      rows: n,
      bytes,
      writePerS: n / (writing / 1000),
      exportPerS: n / (elapsed / 1000),
      peakRssMb: peakRssMb(sampled),
      liveMb: Deno.memoryUsage().heapUsed / 1024 / 1024,
    };
  } finally {
    file.close();
    await Deno.remove(path);
  }
}

async function runChild(impl: Impl, n: number): Promise<ChildResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--v8-flags=--expose-gc",
      import.meta.filename!,
      "--child",
      impl,
      String(n),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`the ${impl} run of ${n} rows failed (exit ${out.code})`);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  return JSON.parse(lines[lines.length - 1]!);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const envInt = (name: string, fallback: number): number => {
  const raw = Deno.env.get(name);
  return raw === undefined || raw === "" ? fallback : Number(raw);
};

async function main(): Promise<void> {
  const n = envInt("N", 1_000_000);
  const runs = envInt("RUNS", 3);
  checkSameBytes();
  console.error(`both writers write the same bytes; ${runs} run(s) of ${n} and ${n / 4} rows`);
  const results: Record<string, Record<string, number>> = {};
  const table = [[
    "writer",
    "write/s",
    "export/s",
    `peak RSS MB @${n / 4}`,
    `@${n}`,
    `live heap MB @${n / 4}`,
    `@${n}`,
    "file MB",
  ]];
  for (const impl of IMPLS) {
    const long: ChildResult[] = [];
    const short: ChildResult[] = [];
    for (let run = 0; run < runs; run++) {
      short.push(await runChild(impl, Math.floor(n / 4)));
      long.push(await runChild(impl, n));
      const last = long[long.length - 1]!;
      console.error(
        `${impl} run ${run + 1}: ${Math.round(last.writePerS)} write/s, ` +
          `${Math.round(last.exportPerS)} export/s, peak ${last.peakRssMb.toFixed(1)} MB`,
      );
    }
    const r = {
      writePerS: Math.round(median(long.map((x) => x.writePerS))),
      exportPerS: Math.round(median(long.map((x) => x.exportPerS))),
      peakShortMb: Number(median(short.map((x) => x.peakRssMb)).toFixed(1)),
      peakLongMb: Number(median(long.map((x) => x.peakRssMb)).toFixed(1)),
      liveShortMb: Number(median(short.map((x) => x.liveMb)).toFixed(1)),
      liveLongMb: Number(median(long.map((x) => x.liveMb)).toFixed(1)),
      fileMb: Number((long[0]!.bytes / 1024 / 1024).toFixed(1)),
    };
    results[impl] = r;
    table.push([
      impl,
      String(r.writePerS),
      String(r.exportPerS),
      String(r.peakShortMb),
      String(r.peakLongMb),
      String(r.liveShortMb),
      String(r.liveLongMb),
      String(r.fileMb),
    ]);
  }
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c]!)).join("  "));
  const ours = results["ours"]!;
  const theirs = results["csv-stringify"]!;
  console.log(
    JSON.stringify({
      rows: n,
      batch: BATCH,
      ...Object.fromEntries(
        Object.entries(results).flatMap(([impl, r]) =>
          Object.entries(r).map(([k, v]) => [`${impl}.${k}`, v])
        ),
      ),
      writeSpeedup: Number((ours.writePerS! / theirs.writePerS!).toFixed(2)),
      exportSpeedup: Number((ours.exportPerS! / theirs.exportPerS!).toFixed(2)),
    }),
  );
}

if (Deno.args[0] === "--child") {
  const impl = Deno.args[1] as Impl;
  if (!IMPLS.includes(impl)) throw new Error(`unknown writer "${impl}"`);
  console.log(JSON.stringify(await child(impl, Number(Deno.args[2]))));
} else {
  await main();
}
