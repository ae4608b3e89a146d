/**
 * Reads `schedules.yaml`: YAML limits first (size, anchors and aliases,
 * nesting), then YAML syntax, then one zod schema for shapes and types, then
 * the checks that span fields (one rhythm, one runner, local-time policies,
 * guards, duplicate ids, schedules that never fire). Every error is reported,
 * each one line naming the file, line, column, schedule, field and value; any
 * error rejects the whole file.
 *
 * Defaults, when neither the schedule nor `defaults:` says otherwise (see
 * {@linkcode SCHEDULE_DEFAULTS}): zone `UTC`, misfire `fire_once` with a 60 s
 * grace and a catch-up limit of 100, overlap policy `allow`, queue `default`,
 * priority 0, 20 attempts, enabled. A schedule's own value replaces the
 * default (lists such as `tags` included: they are not merged).
 *
 * `workers: ./workers.ts` at the top names a TypeScript module whose
 * exported workers run the schedules' `worker` runs; the path is read
 * relative to the schedules file and kept as {@linkcode ScheduleConfig.workersModule}.
 * The parser does not import it: {@linkcode loadSchedules} with a `workers`
 * loader (as `jobs check` does) checks every `run.worker` and
 * `selection.worker` against the names the module exports.
 *
 * Fan-out: a schedule with `selection` runs `run` once per item. The
 * selection is a command (`command`, `shell`, `cwd`, `env`, run as a
 * `command` run is: no shell unless `shell: true`, `${NAME}` in `env` filled
 * from the daemon's environment) whose stdout lists the items, one per
 * non-empty line or as one JSON array; or a `worker` (with `args`) of the
 * workers module whose `perform` returns the list. `batch_size` (default
 * {@linkcode DEFAULT_BATCH_SIZE}) item jobs are inserted per transaction.
 * How an item reaches its job:
 *
 * - `command`: always as the environment variable `JOBS_ITEM`, and in place
 *   of each `{item}` in an argv element (a literal argument: no shell sees
 *   it). With `shell: true` the script may not hold `{item}`, since the
 *   item's text would run as shell code: use `"$JOBS_ITEM"`.
 * - `http`: `{item}` in the URL is replaced percent-encoded, in the body as
 *   it is.
 * - `worker`: as `args.item` (`args`, if given, must be a mapping without
 *   `item`).
 *
 * An item that is not a string is passed as its JSON text. A selection is
 * allowed on manual schedules too: a run started by an operator fans out the
 * same way.
 *
 * Pure except {@linkcode loadSchedules}, which reads the file. The `yaml`
 * package reads the environment variables `LOG_TOKENS` and `LOG_STREAM`, so
 * a program that parses needs `--allow-env` (or at least those two names).
 *
 * @module
 */

import {
  CST,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  parseDocument,
} from "npm:yaml@2.9.1";
import type { Document, Node as YamlNode } from "npm:yaml@2.9.1";
import { dirname, isAbsolute, join } from "node:path";
import { z } from "npm:zod@4.6.7";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_QUEUE } from "../kernel/worker.ts";
import { tryParseDuration } from "./durations.ts";
import { neverFires, validateCron } from "./occurrences.ts";
import {
  ITEM_PLACEHOLDER,
  type LocalTimePolicy,
  type RunSpec,
  type Schedule,
  type ScheduleConfig,
  type Selection,
  type Timing,
} from "./types.ts";

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
  /** Anchors or aliases, nesting beyond {@linkcode MAX_DEPTH}, a file beyond {@linkcode MAX_FILE_BYTES}. */
  | "yaml-limits"
  /** {@linkcode loadSchedules} only: the file is missing or cannot be read. */
  | "file-unreadable"
  /** The `workers:` module cannot be imported, or exports something other than workers. */
  | "workers-invalid"
  /** A `run.worker` or `selection.worker` that the `workers:` module does not export. */
  | "worker-unknown";

/** One problem in a schedules file. */
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

/** The result of {@linkcode parseSchedules} and {@linkcode loadSchedules}. */
export type ParseResult =
  | { ok: true; config: ScheduleConfig }
  | { ok: false; errors: ConfigError[] };

/** Largest schedules file read, in bytes (1 MiB). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** Deepest nesting of YAML collections accepted (the root mapping is depth 1). */
export const MAX_DEPTH = 32;

/** The built-in defaults, used where neither a schedule nor `defaults:` sets a value. */
export const SCHEDULE_DEFAULTS = Object.freeze({
  /** @default "UTC" */
  timezone: "UTC",
  /** After downtime, run once for everything missed: neither a burst nor silence. @default "fire_once" */
  misfire: "fire_once" as const,
  /** @default 100 */
  catchUpLimit: 100,
  /** @default 60_000 (60 s) */
  graceMs: 60_000,
  /** As cron does, and Kubernetes' CronJob by default. @default "allow" */
  overlapPolicy: "allow" as const,
  /** @default "default" */
  queue: DEFAULT_QUEUE,
  /** @default 0 */
  priority: 0,
  /** The kernel's default. @default 20 */
  maxAttempts: DEFAULT_MAX_ATTEMPTS,
  /** @default true */
  enabled: true,
  /** The Unix epoch: `every: 15m` fires at :00, :15, :30, :45 of each hour (UTC). @default 0 */
  anchor: 0,
});

/** Queue concurrency when a queue is declared without one. @default 10 */
export const DEFAULT_CONCURRENCY = 10;

/** Item jobs a fan-out inserts per transaction when `batch_size` is not given. @default 100 */
export const DEFAULT_BATCH_SIZE = 100;
/** The largest `batch_size`: one transaction stays short. */
export const MAX_BATCH_SIZE = 10_000;

/** What {@linkcode parseSchedules} checks beyond the file itself. */
export interface ParseOptions {
  /**
   * The names of the workers the `workers:` module exports, to check each
   * `run.worker` and `selection.worker` against; or why the module could
   * not be loaded. Left out, worker names are not checked.
   */
  workers?: { names: readonly string[] } | { error: string };
}

/** What {@linkcode loadSchedules} may do beyond reading the file. */
export interface LoadOptions {
  /**
   * Loads the `workers:` module (the path as in
   * {@linkcode ScheduleConfig.workersModule}) and returns the names of its
   * workers; throws when it cannot. Given, worker names are checked (see
   * {@linkcode ParseOptions.workers}); the error's `reason`, else its
   * message, is reported.
   */
  workers?: (module: string) => Promise<readonly string[]>;
}

// ---------------------------------------------------------------- the schema

const SLUG = /^[a-z0-9][a-z0-9._-]{0,127}$/;
/** The kernel's rule for queue and worker names (`kernel/worker.ts`). */
const NAME = /^[A-Za-z0-9][\w.:/-]{0,127}$/;
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** Zone names that mean UTC: no local clock, so no local-time policy needed. */
const UTC_NAMES = new Set([
  "UTC",
  "Etc/UTC",
  "Etc/UCT",
  "UCT",
  "Etc/Universal",
  "Universal",
  "Etc/Zulu",
  "Zulu",
  "GMT",
  "Etc/GMT",
  "Etc/GMT0",
  "Etc/GMT+0",
  "Etc/GMT-0",
  "GMT0",
  "GMT+0",
  "GMT-0",
  "Etc/Greenwich",
  "Greenwich",
]);

function isUtc(zone: string): boolean {
  return UTC_NAMES.has(zone);
}

type Refine = z.core.$RefinementCtx;

/**
 * How a custom issue is reported: its code (else `schedule-invalid`), a whole
 * text that replaces `<field> <message>, got <value>`, or `plain` to leave
 * out the value.
 */
interface IssueParams {
  code?: ConfigErrorCode;
  text?: string;
  plain?: boolean;
}

function issue(ctx: Refine, message: string, params?: IssueParams) {
  ctx.addIssue({ code: "custom", message, ...(params ? { params } : {}) });
}

const nonEmpty = z.string().trim().min(1);
const whole = () => z.int({ error: "must be a whole number" });

const duration = z.string({ error: 'must be a duration such as "30s" or "1h30m"' }).transform(
  (text, ctx) => {
    const result = tryParseDuration(text);
    if (result.ok) return result.ms;
    issue(ctx, result.reason);
    return z.NEVER;
  },
);

const instant = z.string({ error: 'must be an ISO instant such as "2026-03-08T07:00:00Z"' })
  .transform((text, ctx) => {
    try {
      return Temporal.Instant.from(text).epochMilliseconds;
    } catch {
      issue(ctx, 'must be an ISO instant with an offset, such as "2026-03-08T07:00:00Z"');
      return z.NEVER;
    }
  });

const zone = z.string({ error: 'must be an IANA time zone such as "Europe/London"' })
  .superRefine((name, ctx) => {
    const canonical = zoneId(name);
    if (canonical === name) return;
    const hint = canonical ? ` (did you mean "${canonical}"?)` : "";
    issue(ctx, "", { code: "timezone-unknown", text: `unknown time zone ${quote(name)}${hint}` });
  });

/** The zone's own id if Temporal knows it, else null; offsets such as `+01:00` are not zones. */
function zoneId(name: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return null;
  try {
    return new Temporal.ZonedDateTime(0n, name).timeZoneId;
  } catch {
    return null;
  }
}

const cron = z.string({ error: 'must be a cron expression such as "0 7 * * *"' }).superRefine(
  (expression, ctx) => {
    const reason = validateCron(expression);
    if (reason) issue(ctx, "", { text: reason.replace(/\.$/, "") });
  },
);

const slug = z.string().superRefine((id, ctx) => {
  if (!SLUG.test(id)) {
    issue(
      ctx,
      "must be 1-128 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit",
    );
  }
});

const name = z.string().superRefine((value, ctx) => {
  if (!NAME.test(value)) {
    issue(ctx, "must be 1-128 letters, digits or ._:/-, starting with a letter or digit");
  }
});

const stringMap = z.record(z.string(), z.string());

const localTime = z.strictObject({
  reason: nonEmpty,
  gap: z.enum(["skip", "shift"]),
  overlap: z.enum(["first", "second", "both"]),
});

const backoff = z.strictObject({
  fixed: duration.optional(),
  exponential: z.strictObject({ base: duration, max: duration }).optional(),
});

const http = z.strictObject({
  method: z.string().transform((method, ctx) => {
    const upper = method.toUpperCase();
    if ((HTTP_METHODS as readonly string[]).includes(upper)) return upper;
    issue(ctx, `must be one of ${HTTP_METHODS.join(", ")}`);
    return z.NEVER;
  }),
  url: z.string().superRefine((url, ctx) => {
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
      issue(ctx, "must be an http or https URL");
    }
  }),
  headers: stringMap.optional(),
  body: z.string().optional(),
  timeout: duration.optional(),
});

const command = z.unknown().superRefine((value, ctx) => {
  if (typeof value === "string") {
    if (value.trim() === "") issue(ctx, "must not be empty", { plain: true });
    return;
  }
  if (!Array.isArray(value)) {
    issue(ctx, "must be a list of strings (program and arguments)");
    return;
  }
  if (value.length === 0) issue(ctx, "must not be empty", { plain: true });
  for (const [i, arg] of value.entries()) {
    if (typeof arg !== "string") {
      ctx.addIssue({ code: "custom", message: "must be a string", path: [i] });
    } else if (i === 0 && arg.trim() === "") {
      ctx.addIssue({
        code: "custom",
        message: "must name a program",
        path: [i],
        params: { plain: true },
      });
    }
  }
});

const run = z.strictObject({
  command: command.optional(),
  shell: z.boolean().optional(),
  cwd: nonEmpty.optional(),
  env: stringMap.optional(),
  http: http.optional(),
  worker: name.optional(),
  args: z.unknown().optional(),
});

const selection = z.strictObject({
  command: command.optional(),
  shell: z.boolean().optional(),
  cwd: nonEmpty.optional(),
  env: stringMap.optional(),
  worker: name.optional(),
  args: z.unknown().optional(),
});

const MODULE_EXTENSIONS = [".ts", ".mts", ".tsx", ".js", ".mjs", ".jsx"];

const workersPath = z.string().superRefine((path, ctx) => {
  const local = !/^[A-Za-z][A-Za-z0-9+.-]+:/.test(path);
  if (path.trim() === "" || !local || !MODULE_EXTENSIONS.some((ext) => path.endsWith(ext))) {
    issue(ctx, "must be the path of a local TypeScript or JavaScript module such as ./workers.ts");
  }
});

/** Fields a schedule may take from `defaults:`. */
const defaultable = {
  timezone: zone.optional(),
  local_time: localTime.optional(),
  misfire: z.enum(["skip", "fire_once", "catch_up"]).optional(),
  catch_up_limit: whole().min(1).optional(),
  grace: duration.optional(),
  overlap_policy: z.enum(["allow", "skip", "queue_one"]).optional(),
  jitter: duration.optional(),
  queue: name.optional(),
  priority: whole().min(0).max(9).optional(),
  max_attempts: whole().min(1).optional(),
  backoff: backoff.optional(),
  timeout: duration.optional(),
  retention: duration.optional(),
  tenant: nonEmpty.optional(),
  tags: z.array(nonEmpty).optional(),
  enabled: z.boolean().optional(),
};

const defaultsSchema = z.strictObject(defaultable);

const scheduleSchema = z.strictObject({
  id: slug,
  cron: cron.optional(),
  every: duration.optional(),
  anchor: instant.optional(),
  manual: z.literal(true).optional(),
  start_at: instant.optional(),
  end_at: instant.optional(),
  run,
  selection: selection.optional(),
  batch_size: whole().min(1).max(MAX_BATCH_SIZE).optional(),
  guard: nonEmpty.optional(),
  runs_where: nonEmpty.optional(),
  ...defaultable,
});

const queueSchema = z.strictObject({
  concurrency: whole().min(1).optional(),
  paused: z.boolean().optional(),
});

/** The schema of the whole file, before the checks that span fields. */
const fileSchema = z.strictObject({
  version: z.literal(1),
  workers: workersPath.optional(),
  defaults: defaultsSchema.optional(),
  queues: z.record(z.string(), queueSchema).optional(),
  schedules: z.array(scheduleSchema).optional(),
});

type RawSchedule = z.output<typeof scheduleSchema>;
type RawDefaults = z.output<typeof defaultsSchema>;

// ---------------------------------------------------------------- the pipeline

/**
 * Parses and validates the text of a schedules file.
 *
 * @param text the file's contents
 * @param file the name shown in messages, e.g. `schedules.yaml`; the
 *   `workers:` module is resolved against its folder
 * @param options worker names to check `worker` runs against
 * @returns the config with defaults applied, or every error found
 */
export function parseSchedules(
  text: string,
  file: string,
  options: ParseOptions = {},
): ParseResult {
  const at = new Positions(text);
  const limit = (offset: number, message: string): ConfigError => {
    const { line, column } = at.of(offset);
    return {
      code: "yaml-limits",
      file,
      line,
      column,
      message: `${file}:${line}:${column}: ${message}`,
    };
  };

  const bytes = new TextEncoder().encode(text).length;
  if (bytes > MAX_FILE_BYTES) {
    return fail([
      limit(0, `the file is ${bytes} bytes, more than the limit of ${MAX_FILE_BYTES} (1 MiB)`),
    ]);
  }
  const scanned = scanLimits(text);
  if (scanned.length > 0) return fail(scanned.map((found) => limit(found.offset, found.message)));

  const doc = parseDocument(text, {
    lineCounter: new LineCounter(),
    prettyErrors: false,
    uniqueKeys: true,
    version: "1.2",
  });
  const syntax = [...doc.errors, ...doc.warnings].map((error): ConfigError => {
    const { line, column } = at.of(error.pos[0]);
    const message = yamlMessage(error.code, error.message, text, error.pos);
    return {
      code: "yaml-invalid",
      file,
      line,
      column,
      message: `${file}:${line}:${column}: ${message}`,
    };
  });
  if (syntax.length > 0) return fail(syntax);

  const { deep, tagged } = inspectNodes(doc.contents);
  if (deep) {
    return fail([limit(deep.range?.[0] ?? 0, `YAML nesting is deeper than ${MAX_DEPTH} levels`)]);
  }
  if (tagged.length > 0) {
    return fail(
      tagged.map((node): ConfigError => {
        const { line, column } = at.of(node.range?.[0] ?? 0);
        const tag = String(node.tag).replace("tag:yaml.org,2002:", "!!");
        const message = `${file}:${line}:${column}: unsupported YAML tag ${quote(tag)}`;
        return { code: "yaml-invalid", file, line, column, message };
      }).sort((a, b) => a.line - b.line || a.column - b.column),
    );
  }

  const raw: unknown = doc.toJS({ maxAliasCount: 0 });
  const errors = validate(new Reporter(file, doc, at, raw), options);
  return errors.length > 0 ? fail(errors) : { ok: true, config: build(raw, file) };
}

/**
 * Reads and parses a schedules file. A missing or unreadable file is an error
 * with code `file-unreadable`, a file beyond {@linkcode MAX_FILE_BYTES} one
 * with code `yaml-limits` (refused before it is read). With a `workers`
 * loader, a valid file that names a workers module is checked against it:
 * a module that cannot be loaded is an error with code `workers-invalid`, a
 * worker it does not export one with code `worker-unknown`.
 *
 * @param path the file; also the name shown in messages
 */
export async function loadSchedules(
  path: string,
  options: LoadOptions = {},
): Promise<ParseResult> {
  const refuse = (code: ConfigErrorCode, message: string): ParseResult =>
    fail([{ code, file: path, line: 1, column: 1, message: `${path}:1:1: ${message}` }]);
  let bytes: Uint8Array;
  try {
    const info = await Deno.stat(path);
    if (!info.isFile) return refuse("file-unreadable", "cannot read the file: not a regular file");
    if (info.size > MAX_FILE_BYTES) {
      return refuse(
        "yaml-limits",
        `the file is ${info.size} bytes, more than the limit of ${MAX_FILE_BYTES} (1 MiB)`,
      );
    }
    bytes = await Deno.readFile(path);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound
      ? "the file does not exist"
      : `cannot read the file: ${error instanceof Error ? error.message : String(error)}`;
    return refuse("file-unreadable", reason);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return refuse("yaml-invalid", "the file is not UTF-8 text");
  }
  const result = parseSchedules(text, path);
  const module = result.ok ? result.config.workersModule : undefined;
  if (module === undefined || !options.workers) return result;
  let workers: ParseOptions["workers"];
  try {
    workers = { names: await options.workers(module) };
  } catch (error) {
    workers = { error: reasonOf(error) };
  }
  return parseSchedules(text, path, { workers });
}

/** An error's `reason` (a loader's cause, without the file it names), else its message, on one line. */
function reasonOf(error: unknown): string {
  const reason = (error as { reason?: unknown })?.reason;
  const text = typeof reason === "string"
    ? reason
    : error instanceof Error
    ? error.message
    : String(error);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

function fail(errors: ConfigError[]): ParseResult {
  return { ok: false, errors };
}

/** Line and column (both 1-based, in UTF-16 units) of an offset into the text. */
class Positions {
  readonly #starts: number[] = [0];

  constructor(text: string) {
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) {
      this.#starts.push(i + 1);
    }
  }

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

// ---------------------------------------------------------------- YAML limits

/** Lexer tokens that stand for no source text. */
const ZERO_WIDTH = new Set(["\u0002", "\u0018", "\u001f"]);
/** Anchor and alias errors reported one by one before the rest are counted. */
const LISTED_REFERENCES = 20;

/**
 * Refuses anchors, aliases and deep flow or compact nesting from the lexer's
 * tokens alone, before the (much slower) parser runs: an alias bomb or a
 * megabyte of `[` is refused in milliseconds. Nesting by indentation is
 * bounded by the file size and checked on the parsed document.
 */
function scanLimits(text: string): Array<{ offset: number; message: string }> {
  const found: Array<{ offset: number; message: string }> = [];
  let references = 0;
  let offset = 0;
  let flow = 0;
  let compact = 0;
  let deep = false;
  let scalarSource = false;
  for (const token of new Lexer().lex(text)) {
    const width = ZERO_WIDTH.has(token) ? 0 : token.length;
    if (scalarSource) {
      scalarSource = false;
      offset += width;
      continue;
    }
    const type = CST.tokenType(token);
    switch (type) {
      case "scalar":
        scalarSource = true;
        break;
      case "anchor":
      case "alias":
        if (++references <= LISTED_REFERENCES) {
          found.push({
            offset,
            message: `YAML ${type === "anchor" ? "anchors" : "aliases"} are not allowed, got ${
              quote(token)
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
    offset += width;
  }
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

function yamlMessage(
  code: string,
  message: string,
  text: string,
  [start, end]: [number, number],
): string {
  if (code === "DUPLICATE_KEY") {
    // The error spans the key's first character only: read the key up to its colon.
    const line = text.slice(start).split("\n", 1)[0] ?? "";
    const key = /^(.*?)\s*:(?:\s|$)/.exec(line);
    return `duplicate key ${quote(key?.[1] ?? text.slice(start, end))}`;
  }
  if (code === "TAG_RESOLVE_FAILED") return `unknown YAML tag ${quote(text.slice(start, end))}`;
  const sentence = message.replace(/\s+/g, " ").trim().replace(/\.$/, "");
  return `invalid YAML: ${sentence.charAt(0).toLowerCase()}${sentence.slice(1)}`;
}

// ---------------------------------------------------------------- errors

type Path = ReadonlyArray<PropertyKey>;

/** Turns a path into the YAML position, the schedule, the field and a message. */
class Reporter {
  readonly errors: ConfigError[] = [];
  /** Indices of schedules with at least one error. */
  readonly broken = new Set<number>();

  constructor(
    readonly file: string,
    readonly doc: Document,
    readonly at: Positions,
    readonly raw: unknown,
  ) {}

  /**
   * Records an error at `path`; with `key`, at that key of the mapping at
   * `path` (unknown fields), else at the value (or the nearest parent that
   * exists, for a missing field).
   */
  add(code: ConfigErrorCode, path: Path, text: string, key?: string, bare = false): void {
    const full = key === undefined ? path : [...path, key];
    const { line, column } = this.at.of(this.offset(path, key));
    const [where, fieldPath, index] = this.where(full);
    const field = fieldName(fieldPath);
    const value = key === undefined ? valueAt(this.raw, path) : undefined;
    const error: ConfigError = { code, file: this.file, line, column, message: "" };
    if (index !== undefined) {
      this.broken.add(index);
      const id = scheduleIdAt(this.raw, index);
      if (id !== undefined) error.scheduleId = id;
    }
    if (field !== "") error.field = field;
    if (value !== undefined) error.value = value;
    error.message = `${this.file}:${line}:${column}: ${where && !bare ? `${where}: ` : ""}${text}`;
    this.errors.push(error);
  }

  /** Records one zod issue (several for unknown keys). */
  addIssue(issue: z.core.$ZodIssue): void {
    const path = issue.path;
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const field = fieldName([...this.where([...path, key])[1]]);
        this.add("schedule-invalid", path, `unknown field ${quote(field)}`, key);
      }
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

  /** `schedule "nightly"`, `defaults`, `queue "fast"` or nothing; the rest of the path; the schedule's index. */
  where(path: Path): [where: string, field: Path, index?: number] {
    const [first, second] = path;
    if (first === "schedules" && typeof second === "number") {
      const id = scheduleIdAt(this.raw, second);
      const where = id === undefined ? `schedule #${second + 1}` : `schedule ${quote(id)}`;
      return [where, path.slice(2), second];
    }
    if (first === "defaults") return ["defaults", path.slice(1)];
    if (first === "queues" && second !== undefined) {
      return [`queue ${quote(String(second))}`, path.slice(2)];
    }
    return ["", path];
  }
}

function fieldName(path: Path): string {
  let name = "";
  for (const segment of path) {
    if (typeof segment === "number") name += `[${segment}]`;
    else name += name === "" ? String(segment) : `.${String(segment)}`;
  }
  return name;
}

function valueAt(raw: unknown, path: Path): unknown {
  let value = raw;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

function scheduleIdAt(raw: unknown, index: number): string | undefined {
  const id = valueAt(raw, ["schedules", index, "id"]);
  return typeof id === "string" && id !== "" ? id : undefined;
}

function quote(value: string): string {
  const text = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return JSON.stringify(text);
}

function render(value: unknown): string {
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

// ---------------------------------------------------------------- checks across fields

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Fields
    : undefined;
}

/** Present keys of `value` among `keys`, in the order of `keys`. */
function present(value: Fields, keys: readonly string[]): string[] {
  return keys.filter((key) => value[key] !== undefined);
}

function validate(report: Reporter, options: ParseOptions): ConfigError[] {
  const result = fileSchema.safeParse(report.raw);
  if (!result.success) { for (const issue of result.error.issues) report.addIssue(issue); }

  const root = fields(report.raw);
  const defaults = fields(root?.defaults) ?? {};
  if (root?.defaults !== undefined) checkBackoff(report, ["defaults"], defaults);
  for (const name of Object.keys(fields(root?.queues) ?? {})) {
    if (!NAME.test(name)) {
      report.add(
        "schedule-invalid",
        ["queues"],
        "name must be 1-128 letters, digits or ._:/-, starting with a letter or digit",
        name,
      );
    }
  }
  const list = Array.isArray(root?.schedules) ? root.schedules as unknown[] : [];
  const firstLine = new Map<string, number>();
  for (const [index, item] of list.entries()) {
    const schedule = fields(item);
    if (!schedule) continue;
    const path = ["schedules", index];
    if (typeof schedule.id === "string") {
      const line = report.at.of(report.offset([...path, "id"])).line;
      const first = firstLine.get(schedule.id);
      if (first === undefined) firstLine.set(schedule.id, line);
      else {
        report.add(
          "duplicate-id",
          [...path, "id"],
          `duplicate id ${quote(schedule.id)}, first declared on line ${first}`,
        );
      }
    }
    checkSchedule(report, path, schedule, defaults);
  }
  if (options.workers && typeof root?.workers === "string") {
    checkWorkers(report, root.workers, list, options.workers);
  }

  // Whether a schedule ever fires is only asked of schedules without other errors.
  const parsedDefaults = defaultsSchema.safeParse(root?.defaults ?? {});
  if (parsedDefaults.success) {
    for (const [index, item] of list.entries()) {
      if (report.broken.has(index)) continue;
      const parsed = scheduleSchema.safeParse(item);
      if (parsed.success) {
        checkFires(report, ["schedules", index], parsed.data, parsedDefaults.data);
      }
    }
  }

  return report.errors.sort((a, b) => a.line - b.line || a.column - b.column);
}

function checkSchedule(report: Reporter, path: Path, schedule: Fields, defaults: Fields): void {
  const rhythms = present(schedule, ["cron", "every", "manual"]);
  if (rhythms.length === 0) {
    report.add("schedule-invalid", path, "needs a rhythm: cron, every or manual: true");
  } else if (rhythms.length > 1) {
    report.add(
      "schedule-invalid",
      [...path, rhythms[1]!],
      `has both ${rhythms[0]} and ${rhythms[1]}, choose one rhythm`,
    );
  }
  if (schedule.anchor !== undefined && schedule.every === undefined) {
    report.add("schedule-invalid", path, "anchor applies only to every", "anchor");
  }

  const manual = schedule.manual === true;
  const guards = [
    ["guard", "who may run it and when"],
    ["runs_where", "the environment it may touch"],
  ] as const;
  for (const [key, meaning] of guards) {
    if (manual && schedule[key] === undefined) {
      report.add("job-guard-missing", path, `manual schedule needs ${key}: ${meaning}`);
    } else if (!manual && schedule[key] !== undefined && rhythms.length > 0) {
      report.add("schedule-invalid", path, `${key} applies only to manual schedules`, key);
    }
  }

  const own = schedule.timezone !== undefined;
  const zone = schedule.timezone ?? defaults.timezone ?? SCHEDULE_DEFAULTS.timezone;
  if (typeof zone === "string" && zoneId(zone) === zone) {
    if (isUtc(zone)) {
      if (schedule.local_time !== undefined) {
        report.add(
          "schedule-invalid",
          path,
          `local_time applies only to a zone other than UTC, got time zone ${quote(zone)}`,
          "local_time",
        );
      }
    } else if (!manual && (schedule.local_time ?? defaults.local_time) === undefined) {
      report.add(
        "local-time-policy-missing",
        own ? [...path, "timezone"] : path,
        `time zone ${quote(zone)}${
          own ? "" : " (from defaults)"
        } needs local_time with reason, gap and overlap`,
      );
    }
  }

  const run = fields(schedule.run);
  if (run) checkRun(report, [...path, "run"], run);
  const selection = fields(schedule.selection);
  if (selection) {
    checkRun(report, [...path, "selection"], selection, "selection");
    if (run) checkFanOutRun(report, [...path, "run"], run);
  }
  if (schedule.batch_size !== undefined && schedule.selection === undefined) {
    report.add("schedule-invalid", path, "batch_size applies only with selection", "batch_size");
  }
  checkBackoff(report, path, schedule);

  const start = instantOf(schedule.start_at);
  const end = instantOf(schedule.end_at);
  if (start !== undefined && end !== undefined && start >= end) {
    report.add(
      "schedule-invalid",
      [...path, "end_at"],
      `end_at must be after start_at, got ${quote(String(schedule.end_at))}`,
    );
  }
}

/** A `run` (command, http or worker) or a `selection` (command or worker). */
function checkRun(report: Reporter, path: Path, run: Fields, label = "run"): void {
  const choices = label === "run" ? ["command", "http", "worker"] : ["command", "worker"];
  const kinds = present(run, choices);
  if (kinds.length === 0) {
    report.add(
      "schedule-invalid",
      path,
      `${label} needs one of ${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`,
    );
  } else if (kinds.length > 1) {
    report.add(
      "schedule-invalid",
      [...path, kinds[1]!],
      `${label} has both ${kinds[0]} and ${kinds[1]}, choose one`,
    );
  }
  for (const key of ["shell", "cwd", "env"]) {
    if (run[key] !== undefined && run.command === undefined && kinds.length > 0) {
      report.add("schedule-invalid", path, `${label}.${key} applies only to command`, key);
    }
  }
  if (run.args !== undefined && run.worker === undefined && kinds.length > 0) {
    report.add("schedule-invalid", path, `${label}.args applies only to worker`, "args");
  }
  const command = run.command;
  const shell = run.shell === true;
  if (typeof command === "string" && command.trim() !== "" && !shell) {
    report.add(
      "schedule-invalid",
      [...path, "command"],
      `${label}.command must be a list of strings, or one string with shell: true, got ${
        quote(command)
      }`,
    );
  } else if (Array.isArray(command) && shell && command.length > 1) {
    report.add(
      "schedule-invalid",
      [...path, "command"],
      `${label}.command must be one string with shell: true, got a list of ${command.length}`,
    );
  }
}

/** What a fan-out's `run` may not do with its item. */
function checkFanOutRun(report: Reporter, path: Path, run: Fields): void {
  const script = Array.isArray(run.command) ? run.command[0] : run.command;
  if (run.shell === true && typeof script === "string" && script.includes(ITEM_PLACEHOLDER)) {
    report.add(
      "schedule-invalid",
      [...path, "command"],
      `run.command must not hold ${ITEM_PLACEHOLDER} with shell: true (the item would run as ` +
        `shell code), use "$JOBS_ITEM", got ${quote(script)}`,
    );
  }
  if (run.worker === undefined || run.args === undefined) return;
  const args = fields(run.args);
  if (!args) {
    report.add(
      "schedule-invalid",
      [...path, "args"],
      `run.args must be a mapping with selection (the item is added as args.item), got ${
        render(run.args)
      }`,
    );
  } else if (args.item !== undefined) {
    report.add(
      "schedule-invalid",
      [...path, "args", "item"],
      "run.args.item is set by the selection, leave it out",
    );
  }
}

/** Every `run.worker` and `selection.worker` must be a worker of the `workers:` module. */
function checkWorkers(
  report: Reporter,
  module: string,
  list: unknown[],
  workers: NonNullable<ParseOptions["workers"]>,
): void {
  if ("error" in workers) {
    report.add(
      "workers-invalid",
      ["workers"],
      `workers module ${quote(module)} cannot be loaded: ${workers.error}`,
    );
    return;
  }
  const names = new Set(workers.names);
  const shown = [...names].slice(0, 10).map(quote).join(", ");
  const exports = names.size === 0
    ? "it exports no worker"
    : `it exports ${shown}${names.size > 10 ? `, and ${names.size - 10} more` : ""}`;
  for (const [index, item] of list.entries()) {
    for (const key of ["run", "selection"]) {
      const worker = fields(fields(item)?.[key])?.worker;
      if (typeof worker !== "string" || names.has(worker)) continue;
      report.add(
        "worker-unknown",
        ["schedules", index, key, "worker"],
        `${key}.worker ${quote(worker)} is not a worker of ${quote(module)}; ${exports}`,
      );
    }
  }
}

function checkBackoff(report: Reporter, path: Path, owner: Fields): void {
  const backoff = fields(owner.backoff);
  if (!backoff) return;
  const kinds = present(backoff, ["fixed", "exponential"]);
  if (kinds.length === 0) {
    report.add("schedule-invalid", [...path, "backoff"], "backoff needs fixed or exponential");
  } else if (kinds.length > 1) {
    report.add(
      "schedule-invalid",
      [...path, "backoff", "exponential"],
      "backoff has both fixed and exponential, choose one",
    );
  }
  const exponential = fields(backoff.exponential);
  const base = durationOf(exponential?.base);
  const max = durationOf(exponential?.max);
  if (base !== undefined && max !== undefined && base > max) {
    report.add(
      "schedule-invalid",
      [...path, "backoff", "exponential", "max"],
      `backoff.exponential.max must not be less than base, got ${quote(String(exponential?.max))}`,
    );
  }
}

function checkFires(report: Reporter, path: Path, schedule: RawSchedule, defaults: RawDefaults) {
  const timing = toSchedule(schedule, defaults);
  if (timing.rhythm.kind === "manual") return;
  const unbounded: Timing = { ...timing, startAt: undefined, endAt: undefined };
  if (neverFires(unbounded, 0)) {
    const what = timing.rhythm.kind === "cron"
      ? `cron expression ${quote(timing.rhythm.expression)}`
      : `every ${quote(String(valueAt(report.raw, [...path, "every"])))}`;
    report.add("never-fires", [...path, timing.rhythm.kind], `${what} never fires`);
  } else if (neverFires(timing, timing.startAt ?? 0)) {
    const written = (key: string) => String(valueAt(report.raw, [...path, key]));
    const window = [
      schedule.start_at !== undefined ? ` after start_at ${quote(written("start_at"))}` : "",
      schedule.end_at !== undefined ? ` before end_at ${quote(written("end_at"))}` : "",
    ].join("");
    const key = schedule.start_at !== undefined ? "start_at" : "end_at";
    report.add("never-fires", [...path, key], `never fires${window}`);
  }
}

function durationOf(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const result = tryParseDuration(value);
  return result.ok ? result.ms : undefined;
}

function instantOf(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  try {
    return Temporal.Instant.from(value).epochMilliseconds;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- the config

/** Drops the keys whose value is undefined, so that optional fields are absent, not undefined. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function toSchedule(s: RawSchedule, d: RawDefaults): Schedule {
  const timezone = s.timezone ?? d.timezone ?? SCHEDULE_DEFAULTS.timezone;
  const rhythm: Schedule["rhythm"] = s.cron !== undefined
    ? { kind: "cron", expression: s.cron }
    : s.every !== undefined
    ? { kind: "every", everyMs: s.every, anchor: s.anchor ?? SCHEDULE_DEFAULTS.anchor }
    : { kind: "manual" };
  const localTime: LocalTimePolicy | undefined = isUtc(timezone)
    ? undefined
    : s.local_time ?? d.local_time;
  const backoff = s.backoff ?? d.backoff;
  return compact<Schedule>({
    id: s.id,
    rhythm,
    timezone,
    localTime: localTime && { ...localTime },
    startAt: s.start_at,
    endAt: s.end_at,
    jitterMs: s.jitter ?? d.jitter,
    misfire: {
      policy: s.misfire ?? d.misfire ?? SCHEDULE_DEFAULTS.misfire,
      catchUpLimit: s.catch_up_limit ?? d.catch_up_limit ?? SCHEDULE_DEFAULTS.catchUpLimit,
      graceMs: s.grace ?? d.grace ?? SCHEDULE_DEFAULTS.graceMs,
    },
    overlapPolicy: s.overlap_policy ?? d.overlap_policy ?? SCHEDULE_DEFAULTS.overlapPolicy,
    run: toRun(s.run),
    queue: s.queue ?? d.queue ?? SCHEDULE_DEFAULTS.queue,
    priority: s.priority ?? d.priority ?? SCHEDULE_DEFAULTS.priority,
    maxAttempts: s.max_attempts ?? d.max_attempts ?? SCHEDULE_DEFAULTS.maxAttempts,
    backoff: backoff?.fixed !== undefined
      ? { kind: "fixed", delayMs: backoff.fixed }
      : backoff?.exponential !== undefined
      ? { kind: "exponential", baseMs: backoff.exponential.base, maxMs: backoff.exponential.max }
      : undefined,
    timeoutMs: s.timeout ?? d.timeout,
    retentionMs: s.retention ?? d.retention,
    tenant: s.tenant ?? d.tenant,
    tags: [...(s.tags ?? d.tags ?? [])],
    enabled: s.enabled ?? d.enabled ?? SCHEDULE_DEFAULTS.enabled,
    guard: s.guard,
    runsWhere: s.runs_where,
    fanOut: s.selection && {
      selection: toSelection(s.selection),
      batchSize: s.batch_size ?? DEFAULT_BATCH_SIZE,
    },
  });
}

function toSelection(selection: NonNullable<RawSchedule["selection"]>): Selection {
  if (selection.worker !== undefined) {
    return { kind: "worker", worker: selection.worker, args: selection.args ?? {} };
  }
  return toRun({ ...selection, http: undefined }) as Selection;
}

function toRun(run: RawSchedule["run"]): RunSpec {
  if (run.http) {
    return compact<RunSpec>({
      kind: "http",
      method: run.http.method,
      url: run.http.url,
      headers: run.http.headers,
      body: run.http.body,
      timeoutMs: run.http.timeout,
    });
  }
  if (run.worker !== undefined) return { kind: "worker", worker: run.worker, args: run.args ?? {} };
  const command = run.command as string | string[];
  return compact<RunSpec>({
    kind: "command",
    argv: typeof command === "string" ? [command] : [...command],
    shell: run.shell ?? false,
    cwd: run.cwd,
    env: run.env,
  });
}

/** Builds the config from a file that passed every check; `path` is where it was read. */
function build(raw: unknown, path: string): ScheduleConfig {
  const file = fileSchema.parse(raw);
  const defaults = file.defaults ?? {};
  return compact<ScheduleConfig>({
    version: 1,
    queues: Object.fromEntries(
      Object.entries(file.queues ?? {}).map(([name, queue]) => [name, {
        concurrency: queue.concurrency ?? DEFAULT_CONCURRENCY,
        paused: queue.paused ?? false,
      }]),
    ),
    schedules: (file.schedules ?? []).map((schedule) => toSchedule(schedule, defaults)),
    workersModule: file.workers === undefined
      ? undefined
      : isAbsolute(file.workers)
      ? file.workers
      : join(dirname(path), file.workers),
  });
}
