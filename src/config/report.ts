/**
 * The error shape of a schedules file and the reporter that fills it in.
 * Every check names a problem by its path in the parsed value (`["schedules",
 * 2, "run", "command"]`); the {@linkcode Reporter} turns that path into the
 * YAML position (line and column of the node, or of the nearest parent that
 * exists when a field is missing), the schedule it belongs to, the field as
 * the YAML spells it and the value, and one line of text:
 * `schedules.yaml:14:9: schedule "nightly": unknown time zone "Europe/Berln"`.
 *
 * @module
 */

import { isMap, isNode, isScalar, isSeq } from "npm:yaml@2.9.1";
import type { Document } from "npm:yaml@2.9.1";
import type { core } from "npm:zod@4.6.7";
import { didYouMean, nearest } from "../text/suggest.ts";
import type { PipelineProblemCode } from "../ingest/definition.ts";
import type { ReportProblemCode } from "../report/definition.ts";
import type { WorkflowProblemCode } from "../workflow/definition.ts";
import type { WorkQueueProblemCode } from "../workqueue/definition.ts";

/** What kind of problem a {@linkcode ConfigError} is. */
export type ConfigErrorCode =
  /** A shape or type error, an invalid cron expression, a value out of range. */
  | "schedule-invalid"
  | "timezone-unknown"
  /** A zone other than UTC without a complete `local_time` (reason, gap, overlap). */
  | "local-time-policy-missing"
  /** A `manual: true` schedule without `guard` or `runs_where`. */
  | "job-guard-missing"
  | "duplicate-id"
  /** A schedule with no occurrence in the 8 years from its start. */
  | "never-fires"
  /** YAML syntax, duplicate keys, unknown tags, several documents. */
  | "yaml-invalid"
  /** Anchors or aliases, nesting beyond 32 levels, a file beyond 1 MiB. */
  | "yaml-limits"
  /** `loadSchedules` only: the file is missing or cannot be read. */
  | "file-unreadable"
  /** The `workers:` module cannot be imported, or exports something other than workers. */
  | "workers-invalid"
  /** A `worker` (of a run, selection, use case or step) that the `workers:` module does not export. */
  | "worker-unknown"
  /** A schedule's `run.workflow` that names no workflow of the file. */
  | "workflow-unknown"
  /**
   * A workflow that breaks a rule of `checkWorkflow` (the record rules of a
   * saga among them), with that rule's code: `behavior-unrecorded`,
   * `use-case-shared`, `compensation-missing`, `engine-config-in-record`...
   */
  | WorkflowProblemCode
  /** A schedule's `run.pipeline` that names no pipeline of the file. */
  | "pipeline-unknown"
  /**
   * A pipeline that breaks a rule of `checkPipeline`, with that rule's code:
   * `drop-reasons-missing`, `step-unmarked`, `source-undeclared`,
   * `overflow-reason-missing`, `poison-reason-missing`...
   */
  | PipelineProblemCode
  /**
   * A report that breaks a rule of `checkReport`, with that rule's code:
   * `report-need-missing`, `report-paging-missing`, `report-audit-missing`,
   * `report-param-unbound`, `report-tenant-missing`...
   */
  | ReportProblemCode
  /**
   * A work queue that breaks a rule of `checkWorkQueue`, with that rule's
   * code: `work-claim-missing`, `work-score-rule-missing`,
   * `work-bulk-confirm-missing`, `work-action-unknown`, `work-input-unknown`...
   */
  | WorkQueueProblemCode
  /**
   * A warning, not an error: the program a `command` starts (its first argv
   * word) is not a file where it would run, or a bare name is not on PATH.
   */
  | "command-missing"
  /** A warning, not an error: the program a `command` starts is not an executable file. */
  | "command-not-executable";

/** One problem in a schedules file (an error, or with a warning's code a warning). */
export interface ConfigError {
  code: ConfigErrorCode;
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  /** The schedule's id, when the problem is inside a schedule that has one. */
  scheduleId?: string;
  /** The field as the YAML spells it, e.g. `timezone`, `run.http.url`, `tags[2]`. */
  field?: string;
  /** The offending value as read from the YAML, when there is one. */
  value?: unknown;
  /** The whole one-line message: `schedules.yaml:14:9: schedule "nightly": unknown time zone "Europe/Berln"`. */
  message: string;
}

/** Where a problem is in the parsed value: keys and list indices from the root. */
export type Path = ReadonlyArray<PropertyKey>;

/**
 * How a custom zod issue is reported: its code (else `schedule-invalid`), a
 * whole text that replaces `<field> <message>, got <value>`, or `plain` to
 * leave out the value.
 */
export interface IssueParams {
  code?: ConfigErrorCode;
  text?: string;
  plain?: boolean;
}

/** Line and column (both 1-based, in UTF-16 units) of an offset into the text. */
export class Positions {
  readonly #starts: number[] = [0];

  constructor(text: string) {
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) {
      this.#starts.push(i + 1);
    }
  }

  /** The line and column of `offset`. */
  of(offset: number): { line: number; column: number } {
    let low = 0;
    let high = this.#starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.#starts[mid]! <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - this.#starts[low]! + 1 };
  }
}

/**
 * An error at an offset of the text that belongs to no schedule or field (a
 * YAML mistake, a limit, an unreadable file).
 */
export function errorAt(
  code: ConfigErrorCode,
  file: string,
  at: Positions,
  offset: number,
  text: string,
): ConfigError {
  const { line, column } = at.of(offset);
  return { code, file, line, column, message: `${file}:${line}:${column}: ${text}` };
}

/** Turns a path into the YAML position, the schedule, the field and a message. */
export class Reporter {
  /** What was reported so far, in the order it was reported. */
  readonly errors: ConfigError[] = [];
  /** Problems that do not reject the file, in the order they were reported. */
  readonly warnings: ConfigError[] = [];
  /** Indices of schedules with at least one error. */
  readonly broken = new Set<number>();
  /** Where each error was reported, and its text without the prefix. */
  readonly #reported = new Map<ConfigError, { path: string; text: string }>();
  /** Unknown keys, each with the key it most likely stands for. */
  readonly #typos: Array<{ path: Path; meant: string; error: ConfigError }> = [];

  constructor(
    readonly file: string,
    readonly doc: Document,
    readonly at: Positions,
    readonly raw: unknown,
  ) {}

  /**
   * Records an error at `path`; with `key`, at that key of the mapping at
   * `path` (unknown fields), else at the value (or the nearest parent that
   * exists, for a missing field). `bare` leaves out the `schedule "x": `
   * prefix, for a text that names the schedule itself.
   */
  add(code: ConfigErrorCode, path: Path, text: string, key?: string, bare = false): void {
    const full = key === undefined ? path : [...path, key];
    const error = this.#problem(code, path, text, key, bare);
    const index = this.where(full)[2];
    if (index !== undefined) this.broken.add(index);
    this.errors.push(error);
    this.#reported.set(error, { path: JSON.stringify(full), text });
  }

  /**
   * Records a warning at the value at `path`: named as an error is (file,
   * line, column, field, value), but it does not reject the file.
   */
  warn(code: ConfigErrorCode, path: Path, text: string): void {
    this.warnings.push(this.#problem(code, path, text));
  }

  /** The problem at `path` (or at `key` of the mapping there), as {@linkcode add} describes. */
  #problem(
    code: ConfigErrorCode,
    path: Path,
    text: string,
    key?: string,
    bare = false,
  ): ConfigError {
    const full = key === undefined ? path : [...path, key];
    const { line, column } = this.at.of(this.offset(path, key));
    const [where, fieldPath, index] = this.where(full);
    const field = fieldName(fieldPath);
    const value = key === undefined ? valueAt(this.raw, path) : undefined;
    const error: ConfigError = { code, file: this.file, line, column, message: "" };
    if (index !== undefined) {
      const id = scheduleIdAt(this.raw, index);
      if (id !== undefined) error.scheduleId = id;
    }
    if (field !== "") error.field = field;
    if (value !== undefined) error.value = value;
    error.message = `${this.file}:${line}:${column}: ${where && !bare ? `${where}: ` : ""}${text}`;
    return error;
  }

  /**
   * Records a key the mapping at `path` does not take, with the nearest of
   * the keys it does take: `unknown field "timout"; did you mean "timeout"?`.
   */
  unknownKey(path: Path, key: string, known: readonly string[]): void {
    const field = fieldName(this.where([...path, key])[1]);
    this.add(
      "schedule-invalid",
      path,
      `unknown field ${quote(field)}${didYouMean(key, known)}`,
      key,
    );
    const meant = nearest(key, known, 1)[0];
    if (meant !== undefined) this.#typos.push({ path, meant, error: this.errors.at(-1)! });
  }

  /**
   * Drops the errors a misspelt key caused: with `timout:` for `timeout:`,
   * `comand:` for `command:`, the mapping also lacks the key it meant, and
   * the error about that (`local_time.reason is missing`, `run needs one of
   * command, http or worker`) is the same mistake as the unknown key, whose
   * error already names the key.
   */
  dropTypoEchoes(): void {
    for (const { path, meant, error: typo } of this.#typos) {
      const at = new Set([JSON.stringify(path), JSON.stringify([...path, meant])]);
      const word = new RegExp(
        `(?:^|[^\\w])${meant.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?:$|[^\\w])`,
      );
      for (let i = this.errors.length - 1; i >= 0; i--) {
        const error = this.errors[i]!;
        const reported = this.#reported.get(error);
        if (error === typo || !reported || !at.has(reported.path)) continue;
        if (word.test(reported.text)) this.errors.splice(i, 1);
      }
    }
  }

  /**
   * Records one zod issue; `knownKeys` names the keys a mapping takes, for
   * the suggestion on an unknown key (one error per key).
   */
  addIssue(issue: core.$ZodIssue, knownKeys: (path: Path) => readonly string[]): void {
    const path = issue.path;
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) this.unknownKey(path, key, knownKeys(path));
      return;
    }
    const value = valueAt(this.raw, path);
    const [where, fieldPath] = this.where(path);
    // A whole entry of the wrong type is named by itself: `schedule #3 must be a mapping`.
    const bare = fieldPath.length === 0;
    const subject = fieldName(fieldPath) || where || "the file";
    const last = path.at(-1);
    const parent = path.at(-2);
    let code: ConfigErrorCode = "schedule-invalid";
    let text: string;
    switch (issue.code) {
      case "invalid_type":
        text = value === undefined
          ? `${subject} is missing`
          : `${subject} ${
            issue.message.startsWith("must ")
              ? issue.message
              : path.length === 0
              ? "must be a mapping with version and schedules"
              : `must be ${expected(issue.expected)}`
          }, got ${render(value)}`;
        break;
      case "invalid_value":
        text = value === undefined
          ? `${subject} is missing`
          : `${subject} must be ${oneOf(issue.values)}, got ${render(value)}`;
        break;
      case "too_small":
        text = issue.origin === "number" || issue.origin === "int"
          ? `${subject} must be at least ${issue.minimum}, got ${render(value)}`
          : `${subject} must not be empty`;
        break;
      case "too_big":
        text = `${subject} must be at most ${issue.maximum}, got ${render(value)}`;
        break;
      case "custom": {
        const params = (issue.params ?? {}) as IssueParams;
        code = params.code ?? code;
        text = params.text ??
          `${subject} ${issue.message}${params.plain ? "" : `, got ${render(value)}`}`;
        break;
      }
      default:
        text = `${subject} is invalid: ${issue.message}`;
    }
    const missing = value === undefined || issue.code === "too_small";
    if (missing && parent === "local_time" && ["reason", "gap", "overlap"].includes(String(last))) {
      code = "local-time-policy-missing";
    }
    if (missing && (last === "guard" || last === "runs_where")) code = "job-guard-missing";
    this.add(code, path, text, undefined, bare);
  }

  /** The offset of the node at `path` (or of `key` in it), else of its nearest parent. */
  offset(path: Path, key?: string): number {
    let node: unknown = this.doc.contents;
    let offset = 0;
    const segments = key === undefined ? path : [...path, key];
    for (const [i, segment] of segments.entries()) {
      if (isNode(node) && node.range) offset = node.range[0];
      let next: unknown;
      if (isMap(node)) {
        const pair = node.items.find((p) =>
          isScalar(p.key) && String(p.key.value) === String(segment)
        );
        if (!pair) return offset;
        const isLast = i === segments.length - 1;
        // A key's own position for an unknown key, and for a key without a value.
        if ((isLast && key !== undefined) || pair.value === null) {
          return isNode(pair.key) && pair.key.range ? pair.key.range[0] : offset;
        }
        next = pair.value;
      } else if (isSeq(node) && typeof segment === "number") {
        next = node.items[segment];
      } else {
        return offset;
      }
      if (next === undefined) return offset;
      node = next;
    }
    return isNode(node) && node.range ? node.range[0] : offset;
  }

  /**
   * `schedule "nightly"`, `defaults`, `queue "fast"`, `workflow "lend-copy"`,
   * `use case "use-case/billing.charge-fee"` or nothing; the rest of the
   * path; the schedule's index.
   */
  where(path: Path): [where: string, field: Path, index?: number] {
    const [first, second] = path;
    if (first === "schedules" && typeof second === "number") {
      const id = scheduleIdAt(this.raw, second);
      const where = id === undefined ? `schedule #${second + 1}` : `schedule ${quote(id)}`;
      return [where, path.slice(2), second];
    }
    if (first === "workflows" && typeof second === "number") {
      const id = valueAt(this.raw, [...path.slice(0, 2), "id"]);
      const where = typeof id === "string" && id !== ""
        ? `workflow ${quote(id)}`
        : `workflow #${second + 1}`;
      return [where, path.slice(2)];
    }
    if (first === "pipelines" && typeof second === "number") {
      const id = valueAt(this.raw, [...path.slice(0, 2), "id"]);
      const where = typeof id === "string" && id !== ""
        ? `pipeline ${quote(id)}`
        : `pipeline #${second + 1}`;
      return [where, path.slice(2)];
    }
    if (first === "reports" && typeof second === "number") {
      const id = valueAt(this.raw, [...path.slice(0, 2), "id"]);
      const where = typeof id === "string" && id !== ""
        ? `report ${quote(id)}`
        : `report #${second + 1}`;
      return [where, path.slice(2)];
    }
    if (first === "work_queues" && typeof second === "number") {
      const id = valueAt(this.raw, [...path.slice(0, 2), "id"]);
      const where = typeof id === "string" && id !== ""
        ? `work queue ${quote(id)}`
        : `work queue #${second + 1}`;
      return [where, path.slice(2)];
    }
    if (first === "sources" && second !== undefined) {
      return [`source ${quote(String(second))}`, path.slice(2)];
    }
    if (first === "use_cases" && second !== undefined) {
      return [`use case ${quote(String(second))}`, path.slice(2)];
    }
    if (first === "defaults") return ["defaults", path.slice(1)];
    if (first === "queues" && second !== undefined) {
      return [`queue ${quote(String(second))}`, path.slice(2)];
    }
    return ["", path];
  }
}

/** The field as the YAML spells it: `run.http.url`, `tags[2]`. */
export function fieldName(path: Path): string {
  let name = "";
  for (const segment of path) {
    if (typeof segment === "number") name += `[${segment}]`;
    else name += name === "" ? String(segment) : `.${String(segment)}`;
  }
  return name;
}

/** The value at `path` in the parsed file, or undefined where there is none. */
export function valueAt(raw: unknown, path: Path): unknown {
  let value = raw;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/** The id of the schedule at `index`, when it has a usable one. */
export function scheduleIdAt(raw: unknown, index: number): string | undefined {
  const id = valueAt(raw, ["schedules", index, "id"]);
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** A value as a message quotes it: JSON rules (control characters stay visible), cut at 80. */
export function quote(value: string): string {
  const text = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return JSON.stringify(text);
}

/** A value read from the YAML as a message names it after `got`. */
export function render(value: unknown): string {
  if (typeof value === "string") return quote(value);
  if (value === null) return "an empty value";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return String(value);
}

function expected(type: string): string {
  switch (type) {
    case "int":
      return "a whole number";
    case "number":
      return "a number";
    case "boolean":
      return "true or false";
    case "object":
    case "record":
      return "a mapping";
    case "array":
      return "a list";
    default:
      return `a ${type}`;
  }
}

function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => typeof v === "string" ? quote(v) : String(v));
  if (shown.length <= 1) return shown.join("");
  return `${shown.length > 2 ? "one of " : ""}${shown.slice(0, -1).join(", ")} or ${shown.at(-1)}`;
}
