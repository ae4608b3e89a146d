/**
 * What a person should change when `schedules.yaml` is not valid YAML. The
 * `yaml` package reports where it noticed the problem and in its own terms
 * ("implicit keys need to be on a single line", "missing closing quote" at
 * the end of the file); this module finds where the mistake was made and
 * says how to mend it: a tab in the indentation, a key without its colon, a
 * quote or bracket left open (at its opening), a line indented unlike the
 * keys or list items beside it, a value that needs quotes.
 *
 * Only the first error the package reports is explained: the rest are most
 * often the parser losing its way after it.
 *
 * @module
 */

import { CST, Lexer } from "npm:yaml@2.9.1";
import type { ErrorCode } from "npm:yaml@2.9.1";
import { quote } from "./report.ts";

/** A YAML mistake as a person reads it: where it is, and one sentence with the remedy. */
export interface YamlMistake {
  offset: number;
  text: string;
}

/** The parts of a `yaml` package error that are read. */
export interface YamlErrorLike {
  code: ErrorCode;
  message: string;
  pos: [number, number];
}

/** Lexer tokens that stand for no source text. */
const ZERO_WIDTH = new Set(["\u0002", "\u0018", "\u001f"]);

/**
 * Calls `visit` with each token of the `yaml` lexer, its type and its offset;
 * a plain scalar comes as one `scalar` token holding its source. Stops when
 * `visit` returns true.
 */
export function eachToken(
  text: string,
  visit: (type: CST.TokenType | null, source: string, offset: number) => boolean | void,
): void {
  let offset = 0;
  let scalar = -1;
  for (const token of new Lexer().lex(text)) {
    if (scalar !== -1) {
      // The marker of a plain scalar is followed by the scalar's source.
      if (visit("scalar", token, scalar)) return;
      scalar = -1;
      offset += token.length;
      continue;
    }
    const type = CST.tokenType(token);
    if (type === "scalar") scalar = offset;
    else if (visit(type, token, offset)) return;
    offset += ZERO_WIDTH.has(token) ? 0 : token.length;
  }
}

/**
 * The message and position of the first YAML error, with a remedy where one
 * is known.
 *
 * @param reach the furthest offset the parser's errors at the same place
 *   span: a value read over several lines ends where the mistake is
 */
export function explainYamlError(error: YamlErrorLike, text: string, reach = 0): YamlMistake {
  const [start, end] = error.pos;
  const plain = (message: string): YamlMistake => ({
    offset: start,
    text: `invalid YAML: ${sentence(message)}`,
  });
  switch (error.code) {
    case "TAB_AS_INDENT":
      return { offset: start, text: TABS };
    case "MULTIPLE_DOCS":
      return {
        offset: start,
        text: `a schedules file holds one YAML document; remove the ${
          quote(text.slice(start, start + 3))
        } line and what follows it, or merge the documents`,
      };
    case "BAD_SCALAR_START": {
      const value = restOfLine(text, start);
      return {
        offset: start,
        text: `invalid YAML: a value cannot start with ${quote(value.charAt(0))} unless quoted; ` +
          `write it in quotes: ${quote(value)}`,
      };
    }
    case "BAD_DQ_ESCAPE": {
      const escape = /sequence (\S+)/.exec(error.message)?.[1] ?? text.slice(start, end);
      return {
        offset: start,
        text: `invalid YAML: ${escape} is not an escape in a double-quoted value; ` +
          `write \\\\ for a backslash, or use single quotes`,
      };
    }
  }
  if (/closing ["']quote/.test(error.message)) {
    return unclosedQuote(text, start) ?? plain(error.message);
  }
  if (/end with an? [\]}]/.test(error.message)) {
    return unclosedFlow(text, start) ?? plain(error.message);
  }
  // Inside [ ] and { } the parser's own words say what is missing.
  if (LAYOUT_CODES.has(error.code) && !/\bflow (sequence|map|collection)/i.test(error.message)) {
    const found = layoutMistakeNear(text, start, Math.max(end, reach));
    if (found) return found;
    return {
      offset: start,
      text: `invalid YAML: ${sentence(error.message)}; ` +
        "check this line and the one above for a key without its colon, or a line indented " +
        "unlike the keys beside it",
    };
  }
  return plain(error.message);
}

const TABS = "YAML does not allow tabs for indentation; indent with spaces";

/** Errors that a missing colon or a wrong indentation most often causes. */
const LAYOUT_CODES = new Set<ErrorCode>([
  "BAD_INDENT",
  "BLOCK_AS_IMPLICIT_KEY",
  "MISSING_CHAR",
  "MULTILINE_IMPLICIT_KEY",
  "UNEXPECTED_TOKEN",
]);

function sentence(message: string): string {
  const text = message.replace(/\s+/g, " ").trim().replace(/\.$/, "");
  return `${text.charAt(0).toLowerCase()}${text.slice(1)}`;
}

/** The text from `offset` to the end of its line, without a trailing comment. */
function restOfLine(text: string, offset: number): string {
  const line = text.slice(offset).split("\n", 1)[0] ?? "";
  return line.replace(/\s+#.*$/, "").trim();
}

/** The quoted value running up to `at`, reported at its opening quote. */
function unclosedQuote(text: string, at: number): YamlMistake | undefined {
  let found: YamlMistake | undefined;
  eachToken(text, (type, source, offset) => {
    if (offset > at) return true;
    if (type !== "double-quoted-scalar" && type !== "single-quoted-scalar") return;
    if (offset + source.length < at) return;
    const mark = source.charAt(0);
    found = {
      offset,
      text: `invalid YAML: the ${mark === '"' ? "double" : "single"} quote opened here is never ` +
        `closed; end the value with ${mark}`,
    };
    return true;
  });
  return found;
}

/** The flow list or mapping left open before `at`, reported at its bracket. */
function unclosedFlow(text: string, at: number): YamlMistake | undefined {
  const open: Array<{ mark: string; offset: number }> = [];
  let found: { mark: string; offset: number } | undefined;
  eachToken(text, (type, source, offset) => {
    if (type === "flow-map-start" || type === "flow-seq-start") {
      open.push({ mark: source, offset });
    } else if (type === "flow-map-end" || type === "flow-seq-end") {
      const top = open.at(-1);
      if (top && (top.mark === "[") === (source === "]")) open.pop();
      else if (top) found = top;
    } else if (type === "flow-error-end" || offset >= at) {
      found = open.at(-1);
    }
    return found !== undefined || offset >= at;
  });
  if (!found) return undefined;
  const [kind, close] = found.mark === "[" ? ["list", "]"] : ["mapping", "}"];
  return {
    offset: found.offset,
    text: `invalid YAML: the ${kind} opened with ${quote(found.mark)} here is never closed; ` +
      `end it with ${quote(close)} (on one line, or with the lines in between indented deeper)`,
  };
}

// ---------------------------------------------------------------- layout

/** A column where keys of one mapping, items of one list, or a bare value start. */
interface Level {
  indent: number;
  kind: "key" | "item" | "scalar";
  /** The key, or the bare value, as written. */
  name: string;
  /** 1-based. */
  line: number;
}

/** What one line of block YAML holds, columns 0-based. */
interface Line {
  /** Columns of `- ` indicators. */
  items: number[];
  key?: { column: number; name: string };
  /** A value without a key: `- text`, or a line that is only text. */
  bare?: { column: number; text: string };
  /** How the line's last value is written. */
  value: "none" | "plain" | "quoted" | "block" | "flow";
  /** Where a value continues on the next lines: a quote or a flow collection left open. */
  open?: { quote?: string; depth: number };
}

/**
 * The mistake about layout nearest to `offset`: on its line, the one above,
 * or one below down to the line after `reach` (blank lines and comments
 * aside).
 */
function layoutMistakeNear(text: string, offset: number, reach: number): YamlMistake | undefined {
  const lines = text.split("\n");
  const starts: number[] = [];
  let at = 0;
  for (const line of lines) {
    starts.push(at);
    at += line.length + 1;
  }
  const lineOf = (at: number) => Math.max(1, starts.findLastIndex((start) => start <= at) + 1);
  const errorLine = lineOf(offset);
  // The line below is the next one with text: the parser stops at blank lines and comments.
  let lastLine = Math.max(errorLine, lineOf(reach)) + 1;
  while (lastLine < lines.length && /^\s*(#.*)?$/.test(lines[lastLine - 1]!)) lastLine++;
  const found = layoutMistakes(lines, lastLine)
    .filter((m) => m.line >= errorLine - 1)
    .sort((a, b) => Math.abs(a.line - errorLine) - Math.abs(b.line - errorLine));
  const first = found[0];
  return first && { offset: starts[first.line - 1]! + first.column, text: first.text };
}

/**
 * Reads the block structure of the first `last` lines by indentation alone
 * and returns each line that breaks it: a key without its colon, a key or
 * list item indented unlike its neighbours. Only used once the parser has
 * failed, to say which line to mend.
 */
function layoutMistakes(
  lines: readonly string[],
  last: number,
): Array<{ line: number; column: number; text: string }> {
  const found: Array<{ line: number; column: number; text: string }> = [];
  const stack: Level[] = [];
  let prev: Line | undefined;
  /** Set while a block scalar's lines are read: deeper than `above`, then as deep as `lines`. */
  let block: { above: number; lines?: number } | undefined;
  let open: Line["open"];

  for (let n = 1; n <= Math.min(last, lines.length); n++) {
    const raw = lines[n - 1]!.replace(/\r$/, "");
    const indent = raw.length - raw.replace(/^ +/, "").length;
    const content = raw.slice(indent);
    if (block) {
      // The first line with text sets the block's indentation; a line indented less ends it.
      if (content.trim() === "") continue;
      block.lines ??= indent > block.above ? indent : undefined;
      if (block.lines !== undefined && indent >= block.lines) continue;
      block = undefined;
    }
    if (open) {
      open = continueValue(raw, 0, open);
      continue;
    }
    if (content.trim() === "" || content.startsWith("#")) continue;
    if (content.startsWith("\t")) {
      found.push({ line: n, column: indent, text: TABS });
      continue;
    }
    if (indent === 0 && /^(---|\.\.\.|%)/.test(content)) {
      stack.length = 0;
      prev = undefined;
      continue;
    }
    const line = readLine(raw, indent);
    const first = line.items[0] ?? line.key?.column ?? line.bare?.column ?? indent;
    const kind: Level["kind"] = line.items.length > 0 ? "item" : line.key ? "key" : "scalar";

    // A deeper line of text after a plain value is the value going on.
    if (prev?.value === "plain" && kind === "scalar" && first > ownerColumn(prev)) continue;

    const before = [...stack];
    while (stack.length > 0 && stack.at(-1)!.indent > first) stack.pop();
    const top = stack.at(-1);
    const same = stack.filter((level) => level.indent === first);
    const opens = prev === undefined || prev.value === "none";
    const report = (at: number, column: number, text: string | undefined) => {
      if (text) found.push({ line: at, column, text });
    };
    if (same.length === 0) {
      if (!(opens && (top === undefined || first > top.indent))) {
        report(n, first, misaligned(kind, first, before));
      }
    } else if (kind === "scalar" && same.some((level) => level.kind === "key")) {
      report(n, first, missingColon(line.bare?.text ?? content));
    } else if (kind === "key" && top?.kind === "scalar" && prev?.bare?.column === first) {
      report(top.line, top.indent, missingColon(top.name));
    } else if (kind === "key" && same.every((level) => level.kind === "item")) {
      // A key at the column of a list's "-" belongs with the keys of the item.
      report(n, first, misaligned(kind, first, before.filter((level) => level.indent !== first)));
    } else if (kind === "item" && same.every((level) => level.kind !== "item") && !opens) {
      const items = before.filter((level) => level.indent !== first);
      report(
        n,
        first,
        misaligned(kind, first, items) ?? listAmongKeys(same.find((l) => l.kind === "key")),
      );
    }

    for (const column of line.items) {
      push(stack, { indent: column, kind: "item", name: "-", line: n });
    }
    if (line.key) {
      push(stack, { indent: line.key.column, kind: "key", name: line.key.name, line: n });
    }
    if (line.bare) {
      push(stack, { indent: line.bare.column, kind: "scalar", name: line.bare.text, line: n });
    }
    if (line.value === "block") block = { above: Math.max(...line.items, line.key?.column ?? -1) };
    open = line.open;
    prev = line;
  }
  return found;
}

/** The column a line's last value belongs to: its key's, else its last `- `'s. */
function ownerColumn(line: Line): number {
  return line.key?.column ?? line.items.at(-1) ?? -1;
}

function push(stack: Level[], level: Level): void {
  for (let top = stack.at(-1); top && top.indent >= level.indent; top = stack.at(-1)) {
    // A list may start at its key's column (`schedules:` then `- id: a`): both stay.
    if (top.indent === level.indent && top.kind === "key" && level.kind === "item") break;
    stack.pop();
  }
  stack.push(level);
}

/** `"every" needs a colon after it, as in every: 1m`, for the line `every 1m`. */
export function missingColon(text: string): string {
  if (/^[A-Za-z_][\w.-]*$/.test(text)) {
    return `invalid YAML: ${quote(text)} needs a colon after it, as in ${text}:`;
  }
  const parts = /^([A-Za-z_][\w.-]*)\s+(.+)$/.exec(text);
  if (!parts) {
    return `invalid YAML: ${quote(text)} is not a key and value; a key needs ": " after it`;
  }
  return `invalid YAML: ${quote(parts[1]!)} needs a colon after it, as in ${parts[1]}: ${parts[2]}`;
}

/** A list item at the column of a mapping's keys. */
function listAmongKeys(key: Level | undefined): string {
  const among = key ? ` (${quote(key.name)} on line ${key.line})` : "";
  return `invalid YAML: a list item cannot stand at the column of a mapping's keys${among}; ` +
    `start each entry with "- ", or indent the list under a key`;
}

/** A key or list item at a column where no mapping or list of its kind is. */
function misaligned(
  kind: Level["kind"],
  column: number,
  levels: readonly Level[],
): string | undefined {
  const family = levels.filter((l) => kind === "item" ? l.kind === "item" : l.kind !== "item");
  const nearest = family.reduce<Level | undefined>(
    (best, l) => !best || Math.abs(l.indent - column) <= Math.abs(best.indent - column) ? l : best,
    undefined,
  );
  if (!nearest || nearest.indent === column) return undefined;
  const spaces = (n: number) => `${n} space${n === 1 ? "" : "s"}`;
  if (kind === "item") {
    return `invalid YAML: this list item is indented ${spaces(column)} but the one on line ` +
      `${nearest.line} is indented ${nearest.indent}; indent the items of one list alike`;
  }
  return `invalid YAML: this line is indented ${spaces(column)} but ${
    quote(nearest.name)
  } on line ${nearest.line} is indented ${nearest.indent}; indent the keys of one mapping alike`;
}

const KEY =
  /^(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s\-?:,[\]{}#&*!|>'"%@`][^#[\]{}]*?|-[^\s#][^#[\]{}]*?)[ \t]*:(?=[ \t]|$)/;

/** The `- ` indicators, key and value of one line that starts outside any value. */
function readLine(raw: string, indent: number): Line {
  const items: number[] = [];
  let at = indent;
  while (raw[at] === "-" && (at + 1 === raw.length || raw[at + 1] === " ")) {
    items.push(at);
    at++;
    while (raw[at] === " ") at++;
  }
  const line: Line = { items, value: "none" };
  const key = KEY.exec(raw.slice(at));
  if (key) {
    line.key = { column: at, name: key[0].replace(/[ \t]*:$/, "") };
    at += key[0].length;
    while (raw[at] === " " || raw[at] === "\t") at++;
  }
  // Tags such as `!!str` come before the value they apply to.
  while (raw[at] === "!" || raw[at] === "&") {
    while (at < raw.length && raw[at] !== " ") at++;
    while (raw[at] === " ") at++;
  }
  const rest = raw.slice(at);
  if (rest === "" || rest.startsWith("#")) return line;
  if (!line.key) line.bare = { column: at, text: rest.replace(/\s+#.*$/, "").trimEnd() };
  const mark = rest[0]!;
  if (mark === "|" || mark === ">") line.value = "block";
  else if (mark === '"' || mark === "'") {
    line.value = "quoted";
    line.open = continueValue(raw, at + 1, { quote: mark, depth: 0 });
  } else if (mark === "[" || mark === "{") {
    line.value = "flow";
    line.open = continueValue(raw, at, { depth: 0 });
  } else line.value = "plain";
  return line;
}

/** Reads a quoted value or flow collection on from `at`; what is still open at the line's end. */
function continueValue(raw: string, at: number, state: NonNullable<Line["open"]>): Line["open"] {
  let { quote, depth } = state;
  for (let i = at; i < raw.length; i++) {
    const c = raw[i]!;
    if (quote === '"') {
      if (c === "\\") i++;
      else if (c === '"') quote = undefined;
    } else if (quote === "'") {
      if (c === "'" && raw[i + 1] === "'") i++;
      else if (c === "'") quote = undefined;
    } else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") depth--;
    else if ((c === '"' || c === "'") && /[\s[{,:]/.test(raw[i - 1] ?? " ")) quote = c;
    else if (c === "#" && /\s/.test(raw[i - 1] ?? " ")) break;
    // The value ended on this line: what follows it is not read.
    if (quote === undefined && depth <= 0) return undefined;
  }
  return quote !== undefined || depth > 0 ? { quote, depth } : undefined;
}
