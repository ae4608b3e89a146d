/**
 * The zod schema of `schedules.yaml`: the shape and type of every field, and
 * the checks one field can make alone (a duration, an instant, a known time
 * zone, a valid cron expression, a slug). Checks that span fields (one
 * rhythm, one runner, local-time policies, guards) are in `checks.ts`; the
 * schema's output becomes a `ScheduleConfig` in `build.ts`. Of a workflow,
 * the schema checks types only: ids, dependencies, compensation modes and
 * the record rules are `checkWorkflow`'s (`workflows.ts`), which name them
 * by their own codes.
 *
 * Every mapping is strict, so an unknown key is an error;
 * {@linkcode knownKeys} lists the keys a mapping takes, for the nearest one
 * to suggest.
 *
 * @module
 */

import { z } from "npm:zod@4.6.7";
import { didYouMean, editDistance, nearest } from "../text/suggest.ts";
import { tryParseDuration } from "../text/durations.ts";
import { validateCron } from "../schedule/occurrences.ts";
import { type IssueParams, type Path, quote } from "./report.ts";
import { reportLimitsSchema } from "./reports.ts";
import { zoneId } from "../schedule/zones.ts";
import { parsePartitionBy } from "../kernel/flow.ts";

/** The largest `batch_size` and `pruner.batch`: one transaction stays short. */
export const MAX_BATCH_SIZE = 10_000;

/** The kernel's rule for queue and worker names (`kernel/worker.ts`). */
export const NAME = /^[A-Za-z0-9][\w.:/-]{0,127}$/;
const SLUG = /^[a-z0-9][a-z0-9._-]{0,127}$/;
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

let zoneNames: readonly string[] | undefined;

/** The names a suggestion for an unknown zone is chosen from: the runtime's IANA zones and `UTC`. */
function knownZones(): readonly string[] {
  return zoneNames ??= [...Intl.supportedValuesOf("timeZone"), "UTC"];
}

/**
 * The nearest zones only, all at the same distance: names of one region are
 * alike (`Europe/Berln` is as near to `Europe/Dublin` as a typo allows), and
 * the one a person meant is the nearest.
 */
function zoneHint(name: string): string {
  const close = nearest(name, knownZones());
  const best = close[0] === undefined ? 0 : editDistance(name, close[0]);
  return didYouMean(name, close.filter((zone) => editDistance(name, zone) === best));
}

type Refine = z.core.$RefinementCtx;

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
    // A name Temporal knows in another case has one answer: its own spelling.
    const hint = canonical ? didYouMean(name, [canonical]) : zoneHint(name);
    issue(ctx, "", { code: "timezone-unknown", text: `unknown time zone ${quote(name)}${hint}` });
  });

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

/** What runs: a command, an HTTP request or a worker; shared by runs, use cases and steps. */
const runner = {
  command: command.optional(),
  shell: z.boolean().optional(),
  cwd: nonEmpty.optional(),
  env: stringMap.optional(),
  http: http.optional(),
  worker: name.optional(),
};

const run = z.strictObject({
  ...runner,
  args: z.unknown().optional(),
  /** Starts a run of this workflow of the file instead (`input` is its input). */
  workflow: nonEmpty.optional(),
  input: z.unknown().optional(),
  /** Starts a run of this pipeline of the file instead. */
  pipeline: nonEmpty.optional(),
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
  /** The tenant its occurrences run for, by the rule of tenants' names (`checkTenant`). */
  tenant: name.optional(),
  tags: z.array(nonEmpty).optional(),
  enabled: z.boolean().optional(),
};

/** The `defaults:` mapping. */
export const defaultsSchema = z.strictObject(defaultable);

/** One entry of `schedules:`. */
export const scheduleSchema = z.strictObject({
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
  /**
   * Runs once per tenant of the list: the build makes one schedule per
   * tenant, `<id>:<tenant>` (see `build.ts`). Not in `defaults:`. An empty
   * list, a duplicate and `tenant` beside it are `checks.ts`'s.
   */
  tenants: z.array(name).optional(),
});

/**
 * One entry of `use_cases:`: what runs the use case, where its jobs go, and
 * how they are retried. A saga's record may not say how to retry
 * (`engine-config-in-record`); a command or HTTP use case has no workers'
 * code to say it either, so the use case, which is the implementation, does,
 * in the same keys and value shapes as a schedule.
 */
export const useCaseSchema = z.strictObject({
  ...runner,
  queue: name.optional(),
  priority: whole().min(0).max(9).optional(),
  max_attempts: whole().min(1).optional(),
  backoff: backoff.optional(),
  timeout: duration.optional(),
});

/**
 * A step's `use_case`: one id, or a list (refused by the record rules as
 * `use-case-ambiguous`, so the schema lets it through to be named so).
 */
const stepUseCase = z.unknown().superRefine((value, ctx) => {
  const ok = typeof value === "string" ||
    (Array.isArray(value) && value.every((v) => typeof v === "string"));
  if (!ok) issue(ctx, "must be a use-case id");
});

/**
 * A step's `compensation`. `mode` and what it needs are the record rules'
 * (`compensation-invalid`), not the schema's: only the types are here.
 */
const compensation = z.strictObject({
  mode: z.string().optional(),
  use_case: z.string().optional(),
  reason: z.string().optional(),
});

/** One entry of a workflow's `steps:`; ids, dependencies and the record are checked by `checkWorkflow`. */
export const stepSchema = z.strictObject({
  id: z.string(),
  depends_on: z.array(z.string()).optional(),
  for_each: z.string().optional(),
  optional: z.boolean().optional(),
  use_case: stepUseCase.optional(),
  run: z.strictObject(runner).optional(),
  compensation: compensation.optional(),
  max_attempts: whole().min(1).optional(),
  timeout: duration.optional(),
  backoff: backoff.optional(),
  queue: name.optional(),
  priority: whole().min(0).max(9).optional(),
  tags: z.array(nonEmpty).optional(),
});

/** One entry of `workflows:`. */
export const workflowSchema = z.strictObject({
  id: z.string(),
  carried_by: z.literal("workflow").optional(),
  queue: name.optional(),
  steps: z.array(stepSchema),
});

/** A freshness `within`: a duration as the file writes them (`15m`) or ISO 8601 (`PT15M`). */
const within = z.string({ error: 'must be a duration such as "15m" or "PT15M"' }).transform(
  (text, ctx) => {
    const result = tryParseDuration(text);
    if (result.ok) return result.ms;
    try {
      const ms = Temporal.Duration.from(text).total({ unit: "milliseconds" });
      if (ms > 0) return ms;
    } catch {
      // Neither spelling: the file's own duration error says what is accepted.
    }
    issue(ctx, result.reason);
    return z.NEVER;
  },
);

const httpSource = z.union([
  z.string(),
  z.strictObject({ url: z.string(), headers: stringMap.optional() }),
], { error: "must be a URL, or { url, headers }" });

/** One entry of `sources:`: what an enrich step may read, by name. */
export const namedSourceSchema = z.strictObject({
  file: nonEmpty.optional(),
  http: httpSource.optional(),
  sqlite: nonEmpty.optional(),
  postgres: nonEmpty.optional(),
  /** The query of a `sqlite` or `postgres` source, with named parameters (`:sku`). */
  query: nonEmpty.optional(),
});

/** What a pipeline step or sink runs: a command, or a TypeScript step or sink of the workers module. */
const processor = z.strictObject({
  command: command.optional(),
  shell: z.boolean().optional(),
  cwd: nonEmpty.optional(),
  env: stringMap.optional(),
  worker: name.optional(),
});

/**
 * Where a pipeline's kept records go: what a step runs, or a work queue
 * (`work_queue: disputes`, with the record fields of the item's `key` and
 * `tenant` when not the record's identity and the run's tenant).
 */
const pipelineSink = z.strictObject({
  command: command.optional(),
  shell: z.boolean().optional(),
  cwd: nonEmpty.optional(),
  env: stringMap.optional(),
  worker: name.optional(),
  work_queue: nonEmpty.optional(),
  key: nonEmpty.optional(),
  tenant: nonEmpty.optional(),
});

/** Where a pipeline's records come from. */
const pipelineSource = z.strictObject({
  file: nonEmpty.optional(),
  glob: nonEmpty.optional(),
  command: command.optional(),
  shell: z.boolean().optional(),
  cwd: nonEmpty.optional(),
  env: stringMap.optional(),
  http: httpSource.optional(),
  format: z.enum(["ndjson", "csv"]).optional(),
  encoding: nonEmpty.optional(),
});

/** One entry of a pipeline's `steps:`; the marks and sources are checked by `checkPipeline`. */
export const pipelineStepSchema = z.strictObject({
  drop: z.string().optional(),
  enrich: z.string().optional(),
  sources: z.array(z.string()).optional(),
  run: processor,
});

/** One entry of `pipelines:`; the rules spanning fields are `checkPipeline`'s (`pipelines.ts`). */
export const pipelineSchema = z.strictObject({
  id: slug,
  source: pipelineSource,
  key: z.union([nonEmpty, z.array(nonEmpty)], { error: "must be a field name or a list of them" }),
  steps: z.array(pipelineStepSchema).optional(),
  /** Required, but its absence is `checkPipeline`'s `drop-reasons-missing`. */
  drop_reasons: z.array(slug).optional(),
  buffer: z.strictObject({
    capacity: whole().min(1).optional(),
    overflow: z.enum(["block", "drop_oldest", "page"]).optional(),
  }).optional(),
  poison_after: whole().min(1).optional(),
  sink: pipelineSink,
  sink_batch: whole().min(1).max(MAX_BATCH_SIZE).optional(),
  freshness: z.strictObject({
    mode: z.enum(["bounded", "advisory"]),
    within: within.optional(),
    authority: nonEmpty.optional(),
  }).optional(),
  queue: name.optional(),
  max_attempts: whole().min(1).optional(),
  /** How long dropped records are kept. */
  drops_retention: duration.optional(),
  /** Run when a run is paged (`overflow: page`). */
  notify: z.strictObject({
    command,
    shell: z.boolean().optional(),
    cwd: nonEmpty.optional(),
    env: stringMap.optional(),
  }).optional(),
});

/** One entry of `reports:`; the rules spanning fields are `checkReport`'s (`reports.ts`). */
export const reportSchema = z.strictObject({
  id: slug,
  /** Required, each field too, but their absence is `checkReport`'s `report-need-missing`. */
  need: z.strictObject({
    report: z.string().optional(),
    volume: z.string().optional(),
    plan: z.string().optional(),
    latency_target: z.string().optional(),
    max_result: z.string().optional(),
    operator: z.string().optional(),
  }).optional(),
  source: z.strictObject({ sqlite: nonEmpty.optional(), postgres: nonEmpty.optional() })
    .optional(),
  query: nonEmpty,
  params: z.record(
    z.string(),
    z.strictObject({
      type: z.enum(["date", "datetime", "string", "integer", "number", "boolean"]),
      values: z.array(nonEmpty).optional(),
    }),
  ).optional(),
  paging: z.strictObject({
    mode: z.enum(["pages", "none"]),
    size: whole().min(1).optional(),
    key: nonEmpty.optional(),
    reason: z.string().optional(),
  }).optional(),
  audit: z.strictObject({ reason: z.string().optional(), target: z.string().optional() })
    .optional(),
  format: z.strictObject({
    type: z.enum(["csv", "ndjson"]),
    encoding: z.enum(["utf-8"]).optional(),
    bom: z.boolean().optional(),
    columns: z.array(nonEmpty).min(1),
    formula_columns: z.array(nonEmpty).optional(),
  }),
  authorize: z.strictObject({
    roles: z.array(nonEmpty).optional(),
    sensitive: z.record(z.string(), z.array(nonEmpty)).optional(),
  }).optional(),
  tenancy: z.strictObject({
    mode: z.enum(["isolated", "shared"]),
    reason: z.string().optional(),
  }).optional(),
  sort: z.strictObject({
    keys: z.record(z.string(), nonEmpty),
    default: nonEmpty.optional(),
  }).optional(),
  storage: z.strictObject({
    folder: nonEmpty.optional(),
    s3: z.strictObject({
      endpoint: nonEmpty,
      bucket: nonEmpty,
      access_key: nonEmpty,
      secret_key: nonEmpty,
      region: nonEmpty.optional(),
      prefix: z.string().optional(),
    }).optional(),
  }).optional(),
  contact: nonEmpty.optional(),
  /** Each limit's default for this report; a stored setting overrides it (`report/limits.ts`). */
  limits: reportLimitsSchema.optional(),
});

const webhookUrl = z.string().superRefine((url, ctx) => {
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    issue(ctx, "must be an http or https URL");
  }
});

const emailAddress = z.string().superRefine((address, ctx) => {
  if (!/^[^\s@]+@[^\s@]+$/.test(address)) {
    issue(ctx, "must be an e-mail address such as finance@example.com");
  }
});

/** One action of a work queue: one job per item, run by a use case of the file or its own `run:`. */
const workActionSchema = z.strictObject({
  id: slug,
  use_case: nonEmpty.optional(),
  run: z.strictObject(runner).optional(),
  queue: name.optional(),
});

/** One bulk action of a work queue; `money` without `confirm_by` is `checkWorkQueue`'s. */
const workBulkSchema = z.strictObject({
  id: slug,
  action: nonEmpty,
  money: z.strictObject({ amount: nonEmpty, currency: nonEmpty }).optional(),
  confirm_by: z.strictObject({
    totp: nonEmpty.optional(),
    command: command.optional(),
    webhook: webhookUrl.optional(),
    email: emailAddress.optional(),
  }).optional(),
  second_person: z.boolean().optional(),
});

/**
 * One entry of `work_queues:`; the rules spanning fields (a claim mode, a
 * rule for a score, a weight per input, actions that name something, a
 * confirmation for money) are `checkWorkQueue`'s (`src/workqueue/definition.ts`).
 */
export const workQueueSchema = z.strictObject({
  id: slug,
  use_case: nonEmpty.optional(),
  /** Required, but its absence is `checkWorkQueue`'s `work-claim-missing`. */
  claim: z.enum(["disabled", "optional", "required"]).optional(),
  lease: duration.optional(),
  score: z.strictObject({
    rule: nonEmpty.optional(),
    inputs: z.array(nonEmpty).min(1),
    /** The formula: input -> weight (`0.01`; the age's per unit of time, `2/day`). */
    weights: z.record(z.string(), z.unknown()).optional(),
  }).optional(),
  show: z.array(nonEmpty).optional(),
  actions: z.array(workActionSchema).optional(),
  bulk: z.array(workBulkSchema).optional(),
  roles: z.array(nonEmpty).optional(),
});
/** `rate:` of a queue or a partition: at most `limit` starts per `per`, `burst` at once. */
const rateSchema = z.strictObject({
  limit: whole().min(1),
  per: duration.refine((ms) => ms >= 1, { error: "must be at least 1ms" }),
  burst: whole().min(1).optional(),
});

/** `partition.by:` where a job's partition key is read: its tenant, an arg or a meta key. */
const partitionBy = z.string({ error: "must be tenant, args.<key> or meta.<key>" }).transform(
  (text, ctx) => {
    const by = parsePartitionBy(text);
    if (by !== null) return by;
    issue(ctx, "must be tenant, args.<key> or meta.<key> (a key of letters, digits, _ or -)");
    return z.NEVER;
  },
);

const queueSchema = z.strictObject({
  concurrency: whole().min(1).optional(),
  paused: z.boolean().optional(),
  global: whole().min(1).optional(),
  partition: z.strictObject({
    by: partitionBy,
    limit: whole().min(1).optional(),
    rate: rateSchema.optional(),
  }).optional(),
  rate: rateSchema.optional(),
});

/** The `pruner:` mapping: the daemon's retention sweep, each field optional. */
export const prunerSchema = z.strictObject({
  every: duration.optional(),
  batch: whole().min(1).max(MAX_BATCH_SIZE).optional(),
  retention: z.strictObject({
    completed: duration.optional(),
    cancelled: duration.optional(),
    discarded: duration.optional(),
  }).optional(),
});

/** The schema of the whole file, before the checks that span fields. */
export const fileSchema = z.strictObject({
  version: z.literal(1),
  workers: workersPath.optional(),
  defaults: defaultsSchema.optional(),
  queues: z.record(z.string(), queueSchema).optional(),
  pruner: prunerSchema.optional(),
  use_cases: z.record(z.string(), useCaseSchema).optional(),
  workflows: z.array(workflowSchema).optional(),
  sources: z.record(z.string(), namedSourceSchema).optional(),
  pipelines: z.array(pipelineSchema).optional(),
  reports: z.array(reportSchema).optional(),
  work_queues: z.array(workQueueSchema).optional(),
  schedules: z.array(scheduleSchema).optional(),
});

/** A schedule as the schema outputs it: durations and instants in milliseconds, nothing defaulted. */
export type RawSchedule = z.output<typeof scheduleSchema>;
/** `defaults:` as the schema outputs it. */
export type RawDefaults = z.output<typeof defaultsSchema>;
/** A use case as the schema outputs it. */
export type RawUseCase = z.output<typeof useCaseSchema>;
/** A workflow as the schema outputs it: durations in milliseconds. */
export type RawWorkflow = z.output<typeof workflowSchema>;
/** A pipeline as the schema outputs it: durations in milliseconds. */
export type RawPipeline = z.output<typeof pipelineSchema>;
/** A work queue as the schema outputs it: its lease in milliseconds. */
export type RawWorkQueue = z.output<typeof workQueueSchema>;
/** A queue of `queues:` as the schema outputs it: durations in milliseconds, `by` parsed. */
export type RawQueue = z.output<typeof queueSchema>;
/** `pruner:` as the schema outputs it: durations in milliseconds, nothing defaulted. */
export type RawPruner = z.output<typeof prunerSchema>;

/** What the schema expects at a path: a mapping of named fields, a mapping of any names, or neither. */
export type Expected =
  | { kind: "fields"; keys: readonly string[] }
  | { kind: "names" }
  | { kind: "other" };

/**
 * What the file's schema expects at `path` (`["schedules", 0, "run"]`):
 * `fields` with the keys that mapping takes, `names` for a mapping whose keys
 * are names (`queues`, `env`, `headers`), or `other`.
 */
export function expectedAt(path: Path): Expected {
  let schema: unknown = fileSchema;
  for (const segment of path) {
    schema = unwrap(schema);
    if (schema instanceof z.ZodObject && typeof segment === "string") {
      schema = (schema.shape as Record<string, unknown>)[segment];
    } else if (schema instanceof z.ZodArray && typeof segment === "number") {
      schema = schema.element;
    } else if (schema instanceof z.ZodRecord) {
      schema = schema.valueType;
    } else {
      return { kind: "other" };
    }
  }
  schema = unwrap(schema);
  if (schema instanceof z.ZodObject) return { kind: "fields", keys: Object.keys(schema.shape) };
  if (schema instanceof z.ZodRecord) return { kind: "names" };
  return { kind: "other" };
}

/** The keys the mapping at `path` takes; none where the schema expects no mapping of fields. */
export function knownKeys(path: Path): readonly string[] {
  const expected = expectedAt(path);
  return expected.kind === "fields" ? expected.keys : [];
}

function unwrap(schema: unknown): unknown {
  while (schema instanceof z.ZodOptional) schema = schema.unwrap();
  return schema;
}
