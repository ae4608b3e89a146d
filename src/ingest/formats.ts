/**
 * Record readers over a byte stream: NDJSON (one JSON object a line) and
 * CSV (RFC 4180, by `csv-parse`; the header row names the fields). A
 * reader yields the records of each chunk of bytes it was given as one
 * array, so the loop above it pays one promise per chunk, not per record,
 * and it never holds more than one chunk and one unfinished line.
 *
 * A line that does not parse is not a crash: it is a record with `error`
 * set (and no `value`), so the run can count it, retry it on the next run
 * and drop it as poison at last. Every record carries the position just
 * after it (byte offset from the stream's start, line number, record
 * number), which is what a cursor stores: a run that resumes there reads
 * the next record first.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { Parser } from "npm:csv-parse@6.2.1";
import type { SourceFormat } from "./types.ts";

/** Where a reader stands: just after a record, or where it started. */
export interface Position {
  /** Bytes from the start of the stream (a file's start, not the resume point). */
  offset: number;
  /** Lines read so far, from the stream's start. */
  line: number;
  /** Records read so far (the header row is none), from the stream's start. */
  n: number;
  /** A glob's file the record is in (set by the source). */
  file?: string;
}

/** One record as read: its text, and either its value or why it did not parse. */
export interface SourceRecord {
  /** The record's text as it stood in the source (a CSV record's raw row). */
  raw: string;
  /** The parsed object; absent when `error` is set. */
  value?: Record<string, unknown>;
  /** Why the record did not parse. */
  error?: string;
  /** The position after the record. */
  position: Position;
}

/** Where the bytes given start (a resumed file: its cursor), and a CSV's header when past it. */
export interface ReadStart {
  offset: number;
  line: number;
  n: number;
  /** CSV: the field names when the bytes start after the header row. */
  columns?: string[];
}

/** Options of {@linkcode readRecords}. */
export interface ReadOptions {
  format: SourceFormat;
  /** A WHATWG encoding label. @default "utf-8" */
  encoding?: string;
  /** @default the stream's start */
  start?: ReadStart;
  /** CSV: told the header's field names once read (cursors keep them, for a resume past it). */
  onColumns?: (columns: string[]) => void;
  /** Longest record read, in bytes; a longer one is a failed record. @default 16 MiB */
  maxRecordBytes?: number;
}

/** Longest record a reader holds. @default 16 MiB */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** The records of `bytes` in `options.format`, an array per chunk of bytes. */
export function readRecords(
  bytes: AsyncIterable<Uint8Array>,
  options: ReadOptions,
): AsyncGenerator<SourceRecord[]> {
  return options.format === "csv" ? csvRecords(bytes, options) : ndjsonRecords(bytes, options);
}

const NEWLINE = 0x0a;
const CR = 0x0d;

/**
 * NDJSON records: each non-blank line is one JSON object (`\r\n` works too);
 * a line that is not JSON, or JSON but not an object, is a failed record. A
 * UTF-8 byte order mark at the start of the stream is skipped.
 */
export async function* ndjsonRecords(
  bytes: AsyncIterable<Uint8Array>,
  options: Omit<ReadOptions, "format">,
): AsyncGenerator<SourceRecord[]> {
  const decoder = new TextDecoder(options.encoding ?? "utf-8");
  const max = options.maxRecordBytes ?? MAX_RECORD_BYTES;
  let offset = options.start?.offset ?? 0;
  let line = options.start?.line ?? 0;
  let index = options.start?.n ?? 0;
  let atStart = offset === 0;
  /** The unfinished line carried into the next chunk. */
  let carry: Uint8Array | null = null;
  /** Bytes of an over-long line skipped so far (it ends at its newline). */
  let skipping = 0;
  for await (let chunk of bytes) {
    if (atStart && chunk.length > 0) {
      atStart = false;
      if (chunk.length >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
        chunk = chunk.subarray(3);
        offset += 3;
      }
    }
    const out: SourceRecord[] = [];
    let from = 0;
    if (skipping > 0) {
      const end = chunk.indexOf(NEWLINE);
      if (end === -1) {
        skipping += chunk.length;
        continue;
      }
      skipping += end + 1;
      offset += skipping;
      line++;
      index++;
      out.push({
        raw: "",
        error: `line ${line} is longer than ${max} bytes`,
        position: { offset, line, n: index },
      });
      skipping = 0;
      from = end + 1;
    }
    let buf = chunk;
    if (carry !== null) {
      buf = new Uint8Array(carry.length + chunk.length);
      buf.set(carry);
      buf.set(chunk.subarray(from), carry.length);
      from = 0;
      carry = null;
    }
    for (;;) {
      const end = buf.indexOf(NEWLINE, from);
      if (end === -1) break;
      const length = end + 1 - from;
      offset += length;
      line++;
      const stop = end > from && buf[end - 1] === CR ? end - 1 : end;
      if (stop > from) {
        index++;
        out.push(ndjsonRecord(decoder.decode(buf.subarray(from, stop)), line, offset, index));
      }
      from = end + 1;
    }
    if (from < buf.length) {
      const rest = buf.length - from;
      if (rest > max) {
        skipping = rest;
      } else carry = buf.slice(from);
    }
    if (out.length > 0) yield out;
  }
  if (skipping > 0) {
    line++;
    index++;
    yield [{
      raw: "",
      error: `line ${line} is longer than ${max} bytes`,
      position: { offset: offset + skipping, line, n: index },
    }];
  } else if (carry !== null) {
    // A last line without its newline is a whole record.
    offset += carry.length;
    line++;
    const text = decoder.decode(carry).replace(/\r$/, "");
    if (text.trim() !== "") {
      index++;
      yield [ndjsonRecord(text, line, offset, index)];
    }
  }
}

function ndjsonRecord(raw: string, line: number, offset: number, index: number): SourceRecord {
  const position = { offset, line, n: index };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { raw, error: `line ${line} is not JSON: ${(error as Error).message}`, position };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    const what = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
    return { raw, error: `line ${line} is ${what}, not a JSON object`, position };
  }
  return { raw, value: value as Record<string, unknown>, position };
}

interface CsvApi {
  parse(
    buf: Buffer | undefined,
    end: boolean,
    push: (record: unknown) => void,
    close: () => void,
  ): Error | undefined;
  info: { bytes: number; lines: number; records: number };
}

/**
 * CSV records by `csv-parse`: the header row gives the field names (or
 * `options.start.columns`, for bytes that start after it), a byte order
 * mark is skipped, and a row that does not parse (a stray quote, a wrong
 * number of fields) is a failed record while the rows after it read on.
 */
export async function* csvRecords(
  bytes: AsyncIterable<Uint8Array>,
  options: Omit<ReadOptions, "format">,
): AsyncGenerator<SourceRecord[]> {
  const start = options.start ?? { offset: 0, line: 0, n: 0 };
  const encoding = csvEncoding(options.encoding ?? "utf-8");
  const text = encoding.windows1252 ? fromLatin1 : (t: string) => t;
  let out: SourceRecord[] = [];
  let n = start.n;
  /** The offset after the last record (parsed or not). */
  let last = start.offset;
  const parser = new Parser({
    bom: true,
    columns: start.columns ?? ((header: string[]) => {
      const columns = header.map(text);
      options.onColumns?.(columns);
      return columns;
    }),
    encoding: encoding.node,
    raw: true,
    info: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    max_record_size: options.maxRecordBytes ?? MAX_RECORD_BYTES,
    on_skip: (error: Error | undefined, raw: string | undefined) => {
      // A row that did not parse counts as a record: the cursor's record number counts rows.
      n++;
      // csv-parse does not move info.bytes past a skipped row: its raw text does.
      const at = {
        offset: Math.max(start.offset + api.info.bytes, last + Buffer.byteLength(raw ?? "")),
        line: start.line + api.info.lines,
        n,
      };
      last = at.offset;
      out.push({
        raw: text((raw ?? "").replace(/\r?\n$/, "")),
        error: `row at line ${at.line} does not parse: ${error?.message ?? "unknown error"}`,
        position: at,
      });
    },
  });
  // The push API parses a chunk synchronously, so records come out per chunk.
  const api = (parser as unknown as { api: CsvApi }).api;
  const push = (entry: unknown) => {
    const e = entry as {
      record: Record<string, unknown>;
      raw: string;
      info: { bytes: number; lines: number };
    };
    n++;
    last = start.offset + e.info.bytes;
    out.push({
      raw: text(e.raw.replace(/\r?\n$/, "")),
      value: encoding.windows1252 ? recordFromLatin1(e.record) : e.record,
      position: { offset: start.offset + e.info.bytes, line: start.line + e.info.lines, n },
    });
  };
  const flush = () => {
    const records = out;
    out = [];
    return records;
  };
  for await (const chunk of bytes) {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    const error = api.parse(buf, false, push, () => {});
    if (error) throw new Error(`CSV cannot be read: ${error.message}`);
    if (out.length > 0) yield flush();
  }
  const error = api.parse(undefined, true, push, () => {});
  if (error) throw new Error(`CSV cannot be read: ${error.message}`);
  if (out.length > 0) yield flush();
}

/**
 * How csv-parse reads a WHATWG encoding label: Node's encoding, and whether
 * its text then needs windows-1252's characters for 0x80-0x9F. WHATWG reads
 * `latin1`, `iso-8859-1` and `ascii` as windows-1252 (as `TextDecoder`, and
 * so the NDJSON reader, does); Node's `latin1` keeps 0x80 as U+0080 where
 * windows-1252 has €, and Node's `ascii` clears the top bit (é would be i).
 */
function csvEncoding(label: string): { node: BufferEncoding; windows1252: boolean } {
  let name: string;
  try {
    name = new TextDecoder(label).encoding;
  } catch {
    // Names Node knows that are no WHATWG label (`utf16le`, `ucs2`, `windows1252`).
    name = LEGACY_NAMES[label.toLowerCase().replace(/[^a-z0-9]/g, "")] ?? label;
  }
  if (name === "utf-8") return { node: "utf8", windows1252: false };
  if (name === "windows-1252") return { node: "latin1", windows1252: true };
  if (name === "utf-16le") return { node: "utf16le", windows1252: false };
  throw new RangeError(`CSV encoding "${label}" is not supported (utf-8, latin1, utf-16le, ascii)`);
}

const LEGACY_NAMES: Record<string, string> = {
  utf8: "utf-8",
  latin1: "windows-1252",
  iso88591: "windows-1252",
  windows1252: "windows-1252",
  ascii: "windows-1252",
  usascii: "windows-1252",
  utf16le: "utf-16le",
  ucs2: "utf-16le",
};

/** windows-1252's characters for the bytes 0x80-0x9F, by their latin1 code point. */
const WINDOWS_1252 = new Map(
  Array.from({ length: 32 }, (_, i) => [
    String.fromCharCode(0x80 + i),
    new TextDecoder("windows-1252").decode(Uint8Array.of(0x80 + i)),
  ]),
);

/** Text read as latin1 turned into windows-1252's (the other bytes are the same in both). */
function fromLatin1(text: string): string {
  return text.replace(/[\x80-\x9f]/g, (c) => WINDOWS_1252.get(c)!);
}

function recordFromLatin1(record: Record<string, unknown>): Record<string, unknown> {
  for (const [name, value] of Object.entries(record)) {
    if (typeof value === "string") record[name] = fromLatin1(value);
  }
  return record;
}
