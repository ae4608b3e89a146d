/**
 * Keys that indentation put at the wrong level in a file that is still
 * valid YAML. `defaults:` followed by `  queue: ops` without the indent, or
 * a schedule's `every:` written flush with `schedules:`, parses: the key
 * lands in the mapping above, where it is unknown, and the mapping it was
 * meant for lacks it. The schema would report both, and every field of the
 * schedule as missing; this check reports the one mistake instead, at the
 * key, and the schema does not run.
 *
 * A key counts as misplaced when the mapping it is in does not take it and
 * either the key just before it holds an empty value or a block mapping or
 * list that takes it (it belongs below), or a mapping it is nested in takes
 * it (it is indented too deep, as `queues:` indented under `defaults:`).
 * The keys after it that belong there too are the same mistake. A key such
 * as `default { concurrency` is a key without its colon (`default {
 * concurrency: 4 }` parses as that key with the value `4 }`).
 *
 @module
 */

import { isMap, isNode, isScalar, isSeq } from "npm:yaml@2.9.1";
import type { Pair } from "npm:yaml@2.9.1";
import { fieldName, type Path, quote, type Reporter } from "./report.ts";
import { missingColon } from "./yaml_hints.ts";
import { expectedAt } from "./schema.ts";

/** Where a misplaced key belongs: the mapping's path and how to get it there. */
interface Owner {
  path: Path;
  /** 1-based line of the owner's key. */
  line: number;
  /** The owner's key as written, for an empty owner: indent under `defaults:`. */
  key: string;
  /** The first key of the owner's mapping, for one that has keys: line up with `queue`. */
  alignWith?: string;
}

/** A key indented deeper than the mapping it belongs to, which is an ancestor's. */
interface Above {
  path: Path;
  /** The key of that mapping to line up with: the one the misplaced key is indented under. */
  alignWith: string;
  /** How many columns too deep the key is. */
  by: number;
  /** With an empty value, the keys after it may be its own, indented as deep as it. */
  own?: Path;
}

/** One mistake: the first misplaced key, how many follow it, and where they belong. */
interface Run {
  key: string;
  after: number;
  below?: Owner;
  above?: Above;
}

/** Reports each run of misplaced keys in the file `report` holds, as one error. */
export function misplacedKeys(report: Reporter): void {
  const stack: Array<[node: unknown, path: Path]> = [[report.doc.contents, []]];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (isSeq(node)) {
      node.items.forEach((item, index) => stack.push([item, [...path, index]]));
      continue;
    }
    if (!isMap(node)) continue;
    const pairs = node.items as Pair[];
    checkMapping(report, path, pairs, node.flow === true);
    for (const pair of pairs) {
      if (isScalar(pair.key)) stack.push([pair.value, [...path, String(pair.key.value)]]);
    }
  }
}

/** `flow`: a mapping in braces, where indentation says nothing. */
function checkMapping(report: Reporter, path: Path, pairs: readonly Pair[], flow: boolean): void {
  const expected = expectedAt(path);
  if (expected.kind === "other") return;
  const runs: Run[] = [];
  let run: Run | undefined;
  for (const [index, pair] of pairs.entries()) {
    const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
    if (key === undefined) continue;
    // `name { a: b }` is valid YAML: a key "name { a" with the value "b }".
    if (/^[A-Za-z_][\w.-]*\s+[[{]/.test(key)) {
      const value = isScalar(pair.value) && pair.value.source !== undefined
        ? `: ${pair.value.source}`
        : "";
      report.add("yaml-invalid", path, missingColon(`${key}${value}`), key, true);
      run = undefined;
      continue;
    }
    if (flow || expected.kind !== "fields" || expected.keys.includes(key)) {
      run = undefined;
      continue;
    }
    const next = run && continues(run, key, pair.value);
    if (next) {
      // Keys of an empty key moved up stay where they are: under it once it moves.
      if (next === "moves") run!.after++;
      continue;
    }
    const below = index > 0 ? ownerOf(report, path, pairs[index - 1]!) : undefined;
    if (below && fits(below.path, key, pair.value)) run = { key, after: 0, below };
    else {
      const above = ancestorOf(report, path, pair);
      run = above ? { key, after: 0, above } : undefined;
    }
    if (run) runs.push(run);
  }
  for (const found of runs) reportRun(report, path, found);
}

/** Whether `key` is part of the mistake `run` began, and whether it must move too. */
function continues(run: Run, key: string, value: unknown): "moves" | "stays" | false {
  if (run.below) return fits(run.below.path, key, value) && "moves";
  const { path, own } = run.above!;
  if (fits(path, key, value)) return "moves";
  return own !== undefined && fits(own, key, value) && "stays";
}

function reportRun(report: Reporter, path: Path, { key, after, below, above }: Run): void {
  const label = (at: Path) => {
    const [where, field] = report.where(at);
    if (field.length === 0) return where || "the top level";
    return `${fieldName(field)}${where ? ` of ${where}` : ""}`;
  };
  const others = after === 0
    ? ""
    : after === 1
    ? ", and the key after it,"
    : `, and the ${after} keys after it,`;
  let text: string;
  if (below) {
    const remedy = below.alignWith === undefined
      ? `indent it${others} under ${quote(`${below.key}:`)}`
      : `indent it${others} to line up with ${quote(below.alignWith)}`;
    text = `${quote(key)} belongs to ${label(below.path)} (line ${below.line}) but is not ` +
      `indented under it; ${remedy}`;
  } else {
    const { path: to, alignWith, by } = above!;
    text = `${quote(key)} belongs to ${label(to)}, not to ${label(path)}; indent it${others} ` +
      `${by} space${by === 1 ? "" : "s"} less, to line up with ${quote(alignWith)}`;
  }
  report.add("schedule-invalid", path, text, key, true);
}

/**
 * The nearest mapping above `path` that takes the key of `pair`, when the
 * key is indented deeper than that mapping's keys.
 */
function ancestorOf(report: Reporter, path: Path, pair: Pair): Above | undefined {
  if (!isScalar(pair.key) || !pair.key.range) return undefined;
  const key = String(pair.key.value);
  for (let depth = path.length - 1; depth >= 0; depth--) {
    const at = path.slice(0, depth);
    const expected = expectedAt(at);
    if (expected.kind !== "fields" || !expected.keys.includes(key)) continue;
    const alignWith = String(path[depth]);
    const column = report.at.of(pair.key.range[0]).column;
    const by = column - report.at.of(report.offset(at, alignWith)).column;
    if (by <= 0) return undefined;
    const empty = pair.value === null || (isScalar(pair.value) && pair.value.value === null);
    return { path: at, alignWith, by, ...(empty ? { own: [...at, key] } : {}) };
  }
  return undefined;
}

/** The mapping the value of `pair` opens below it, if it is empty or a block mapping or list. */
function ownerOf(report: Reporter, path: Path, pair: Pair): Owner | undefined {
  if (!isScalar(pair.key) || !pair.key.range) return undefined;
  const key = String(pair.key.value);
  const line = report.at.of(pair.key.range[0]).line;
  const value = pair.value;
  if (value === null || (isScalar(value) && value.value === null)) {
    return { path: [...path, key], line, key };
  }
  if (isMap(value) && !value.flow) {
    return { path: [...path, key], line, key, alignWith: firstKey(value) };
  }
  if (isSeq(value) && !value.flow) {
    const last = value.items.at(-1);
    if (isMap(last) && !last.flow) {
      const itemLine = isNode(last) && last.range ? report.at.of(last.range[0]).line : line;
      return {
        path: [...path, key, value.items.length - 1],
        line: itemLine,
        key,
        alignWith: firstKey(last),
      };
    }
  }
  return undefined;
}

function firstKey(map: { items: unknown[] }): string | undefined {
  const pair = map.items[0] as Pair | undefined;
  return pair && isScalar(pair.key) ? String(pair.key.value) : undefined;
}

/** Whether the mapping at `path` takes `key` with a value like `value`. */
function fits(path: Path, key: string, value: unknown): boolean {
  const expected = expectedAt(path);
  if (expected.kind === "fields") return expected.keys.includes(key);
  if (expected.kind !== "names") return false;
  // Any name fits a mapping of names (queues, env), so the value must be one such a name holds.
  const holds = expectedAt([...path, key]);
  if (holds.kind !== "fields") return isScalar(value) && value.value !== null;
  if (value === null || (isScalar(value) && value.value === null)) return true;
  return isMap(value) &&
    value.items.every((p) => isScalar(p.key) && holds.keys.includes(String(p.key.value)));
}
