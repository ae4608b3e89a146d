/**
 * From the text of a schedules file to its parsed value, or the reason it
 * has none. In order: the size limit, anchors, aliases and deep flow nesting
 * (from the lexer's tokens, before the much slower parser runs, so an alias
 * bomb or a megabyte of `[` is refused in milliseconds), YAML syntax, then
 * duplicate keys, tags beyond the core schema's and block nesting (on the
 * parsed document).
 *
 * One mistake is one error: of the syntax errors only the first is reported,
 * explained by `yaml_hints.ts` (the parser's later errors are most often it
 * losing its way after the first), and a document that fails here is never
 * given to the schema, which would report every field it lost as missing.
 *
 * @module
 */

import { isMap, isNode, isPair, isScalar, isSeq, LineCounter, parseDocument } from "npm:yaml@2.9.1";
import type { Document, Node as YamlNode, YAMLError } from "npm:yaml@2.9.1";
import { type ConfigError, errorAt, type Positions, quote } from "./report.ts";
import { eachToken, explainYamlError } from "./yaml_hints.ts";

/** Largest schedules file read, in bytes (1 MiB). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** Deepest nesting of YAML collections accepted (the root mapping is depth 1). */
export const MAX_DEPTH = 32;

/** Anchor and alias errors reported one by one before the rest are counted. */
const LISTED_REFERENCES = 20;

/** The text of the error for a file of `bytes` bytes, beyond {@linkcode MAX_FILE_BYTES}. */
export function tooLarge(bytes: number): string {
  return `the file is ${bytes} bytes, more than the limit of ${MAX_FILE_BYTES} (1 MiB)`;
}

/** The parsed file, or why there is none. */
export type YamlRead =
  | { ok: true; doc: Document; raw: unknown }
  | { ok: false; errors: ConfigError[] };

/**
 * Parses the text of a schedules file within the limits.
 *
 * @param file the name shown in messages
 * @param at the positions of `text`
 */
export function readYaml(text: string, file: string, at: Positions): YamlRead {
  const fail = (errors: ConfigError[]): YamlRead => ({ ok: false, errors });
  const limit = (offset: number, message: string) =>
    errorAt("yaml-limits", file, at, offset, message);
  const invalid = (offset: number, message: string) =>
    errorAt("yaml-invalid", file, at, offset, message);

  const bytes = new TextEncoder().encode(text).length;
  if (bytes > MAX_FILE_BYTES) return fail([limit(0, tooLarge(bytes))]);
  const scanned = scanLimits(text);
  if (scanned.length > 0) return fail(scanned.map((found) => limit(found.offset, found.message)));

  const doc = parseDocument(text, {
    lineCounter: new LineCounter(),
    prettyErrors: false,
    uniqueKeys: true,
    version: "1.2",
  });
  const problems = [...doc.errors, ...doc.warnings];
  const syntax = firstSyntaxError(problems);
  if (syntax) {
    const reach = Math.max(
      ...problems.filter((p) => p.pos[0] === syntax.pos[0]).map((p) => p.pos[1]),
    );
    const mistake = explainYamlError(syntax, text, reach);
    return fail([invalid(mistake.offset, mistake.text)]);
  }
  // Unknown tags are mistakes each of its own, and so are duplicate keys of different mappings.
  if (problems.length > 0) {
    const tags = problems.filter((problem) => problem.code !== "DUPLICATE_KEY").map((problem) =>
      invalid(problem.pos[0], `unknown YAML tag ${quote(text.slice(...problem.pos))}`)
    );
    const keys = duplicateKeys(doc, text, problems.filter((p) => p.code === "DUPLICATE_KEY"));
    return fail([...tags, ...keys.map((key) => invalid(key.offset, key.text))].sort(byPosition));
  }

  const { deep, tagged } = inspectNodes(doc.contents);
  if (deep) {
    return fail([limit(deep.range?.[0] ?? 0, `YAML nesting is deeper than ${MAX_DEPTH} levels`)]);
  }
  if (tagged.length > 0) {
    return fail(
      tagged.map((node) => {
        const tag = String(node.tag).replace("tag:yaml.org,2002:", "!!");
        return invalid(node.range?.[0] ?? 0, `unsupported YAML tag ${quote(tag)}`);
      }).sort(byPosition),
    );
  }
  return { ok: true, doc, raw: doc.toJS({ maxAliasCount: 0 }) };
}

function byPosition(a: ConfigError, b: ConfigError): number {
  return a.line - b.line || a.column - b.column;
}

/** The syntax error that comes first in the file; duplicate keys and unknown tags are not syntax. */
function firstSyntaxError(problems: readonly YAMLError[]): YAMLError | undefined {
  let first: YAMLError | undefined;
  for (const problem of problems) {
    if (problem.code === "DUPLICATE_KEY" || problem.code === "TAG_RESOLVE_FAILED") continue;
    if (!first || problem.pos[0] < first.pos[0]) first = problem;
  }
  return first;
}

/**
 * One error per mapping with repeated keys, at its first repeat: `duplicate
 * key "every", first on line 4`. Several repeats in one mapping are most
 * often two entries run together, where a list's `- ` is missing.
 */
function duplicateKeys(
  doc: Document,
  text: string,
  problems: readonly YAMLError[],
): Array<{ offset: number; text: string }> {
  const lineOf = (offset: number) => text.slice(0, offset).split("\n").length;
  const byMapping = new Map<unknown, Array<{ offset: number; first?: number }>>();
  for (const problem of problems) {
    const found = firstOfKey(doc.contents, problem.pos[0]);
    const list = byMapping.get(found?.map) ?? [];
    list.push({ offset: problem.pos[0], first: found?.first });
    byMapping.set(found?.map, list);
  }
  return [...byMapping.values()].map((repeats) => {
    const { offset, first } = repeats.sort((a, b) => a.offset - b.offset)[0]!;
    // The error spans the key's first character only: read the key up to its colon.
    const line = text.slice(offset).split("\n", 1)[0] ?? "";
    const written = /^(.*?)\s*:(?:\s|$)/.exec(line)?.[1] ?? text.slice(offset, offset + 1);
    const where = first === undefined ? "" : `, first on line ${lineOf(first)}`;
    const remedy = repeats.length === 1
      ? "a mapping holds each key once, keep one of them"
      : `${repeats.length - 1} more key${repeats.length === 2 ? " repeats" : "s repeat"} ` +
        'below it: two entries may have run together where a "- " is missing';
    return { offset, text: `duplicate key ${quote(written)}${where}; ${remedy}` };
  });
}

/** The mapping that holds the key at `offset`, and the offset of the first key equal to it. */
function firstOfKey(root: unknown, offset: number): { map: unknown; first?: number } | undefined {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (isMap(node)) {
      const index = node.items.findIndex((p) => isNode(p.key) && p.key.range?.[0] === offset);
      const key = node.items[index]?.key;
      if (index !== -1 && isScalar(key)) {
        const earlier = node.items.slice(0, index).find((p) =>
          isScalar(p.key) && p.key.value === key.value
        );
        return { map: node, first: isNode(earlier?.key) ? earlier.key.range?.[0] : undefined };
      }
      for (const pair of node.items) stack.push(pair.key, pair.value);
    } else if (isSeq(node)) stack.push(...node.items);
  }
  return undefined;
}

/**
 * Refuses anchors, aliases and deep flow or compact nesting from the lexer's
 * tokens alone. Nesting by indentation is bounded by the file size and
 * checked on the parsed document.
 */
function scanLimits(text: string): Array<{ offset: number; message: string }> {
  const found: Array<{ offset: number; message: string }> = [];
  let references = 0;
  let flow = 0;
  let compact = 0;
  let deep = false;
  eachToken(text, (type, source, offset) => {
    switch (type) {
      case "anchor":
      case "alias":
        if (++references <= LISTED_REFERENCES) {
          found.push({
            offset,
            message: `YAML ${type === "anchor" ? "anchors" : "aliases"} are not allowed, got ${
              quote(source)
            }`,
          });
        }
        break;
      case "flow-map-start":
      case "flow-seq-start":
        flow++;
        break;
      case "flow-map-end":
      case "flow-seq-end":
        flow = Math.max(0, flow - 1);
        break;
      case "seq-item-ind":
      case "explicit-key-ind":
        compact++;
        break;
      case "newline":
        compact = 0;
        break;
    }
    if (!deep && 1 + flow + compact > MAX_DEPTH) {
      deep = true;
      found.push({ offset, message: `YAML nesting is deeper than ${MAX_DEPTH} levels` });
    }
  });
  if (references > LISTED_REFERENCES) {
    found.push({
      offset: text.length,
      message: `${references - LISTED_REFERENCES} more YAML anchors or aliases are not listed`,
    });
  }
  return found;
}

/** Tags a schedules file may use: the YAML 1.2 core schema's, such as `!!str 1`. */
const CORE_TAGS = new Set(
  ["str", "int", "float", "bool", "null", "map", "seq"].map((t) => `tag:yaml.org,2002:${t}`),
);

/**
 * The first collection nested deeper than {@linkcode MAX_DEPTH}, and every
 * node with a tag beyond the core schema's (`!!binary`, `!!set`, `!!timestamp`
 * would otherwise become a byte array, a set or a date).
 */
function inspectNodes(root: unknown): { deep?: YamlNode; tagged: YamlNode[] } {
  const tagged: YamlNode[] = [];
  const stack: Array<[node: unknown, depth: number]> = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (isNode(node) && node.tag !== undefined && !CORE_TAGS.has(node.tag)) tagged.push(node);
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth > MAX_DEPTH) return { deep: node, tagged };
    for (const item of node.items) {
      if (isPair(item)) {
        stack.push([item.key, depth + 1], [item.value, depth + 1]);
      } else stack.push([item, depth + 1]);
    }
  }
  return { tagged };
}
