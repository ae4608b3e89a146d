/**
 * The schema's output becomes a {@linkcode ScheduleConfig}: snake_case fields
 * to the camelCase schedule, durations and instants already in milliseconds,
 * and the defaults applied where neither the schedule nor `defaults:` sets a
 * value (see {@linkcode SCHEDULE_DEFAULTS}). A schedule's own value replaces
 * the default, lists such as `tags` included: they are not merged.
 * `pruner:` is kept as the file sets it: its defaults are the pruner's own.
 * A schedule with `tenants:` becomes one schedule per tenant
 * ({@linkcode perTenant}).
 *
 * Only a file that passed every check is built, so nothing here reports.
 *
 * @module
 */

import { dirname, isAbsolute, join, resolve } from "node:path";
import { compilePipeline } from "../ingest/definition.ts";
import { type CompiledPipeline, type IngestJobArgs } from "../ingest/types.ts";
import { INGEST_WORKER } from "../kernel/runs.ts";
import { clampPriority, DEFAULT_MAX_ATTEMPTS, DEFAULT_QUEUE } from "../kernel/worker.ts";
import type { BackoffSpec } from "../kernel/run_settings.ts";
import {
  compileWorkflow,
  hashed,
  type WorkflowOptions,
  type WorkflowStepOptions,
} from "../workflow/definition.ts";
import {
  type CompiledWorkflow,
  type JobTemplate,
  type StepRun,
  type WorkflowStartRun,
} from "../workflow/types.ts";
import { WORKFLOW_START_WORKER } from "../kernel/runs.ts";
import type { LocalTimePolicy, Schedule, Timing } from "../schedule/types.ts";
import type { PrunerConfig, QueueConfig, ScheduleConfig } from "./types.ts";
import { type FlowLimits, isLimited, type RateLimit } from "../kernel/flow.ts";
import type { RunSpec, Selection } from "../kernel/runs.ts";
import {
  fileSchema,
  type RawDefaults,
  type RawQueue,
  type RawSchedule,
  type RawUseCase,
  type RawWorkflow,
} from "./schema.ts";
import { isUtc } from "../schedule/zones.ts";
import { pipelineOptions } from "./pipelines.ts";
import { reportOptions } from "./reports.ts";
import { compileReport } from "../report/definition.ts";
import { workflowOptions } from "./workflows.ts";
import { workQueueOptions } from "./work_queues.ts";
import { compileWorkQueue } from "../workqueue/definition.ts";

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

/**
 * Builds the config from a file that passed every check.
 *
 * @param raw the file's parsed YAML
 * @param path where it was read; the `workers:` module is resolved against its folder
 */
export function build(raw: unknown, path: string): ScheduleConfig {
  const file = fileSchema.parse(raw);
  const defaults = file.defaults ?? {};
  const useCases: Record<string, StepRun> = Object.fromEntries(
    Object.entries(file.use_cases ?? {}).map(([id, useCase]) => [id, toStepRun(useCase)]),
  );
  const workflows = (file.workflows ?? []).map((workflow) =>
    toWorkflow(workflow, useCases, file.use_cases ?? {})
  );
  const byId = new Map(workflows.map((workflow) => [workflow.id, workflow]));
  // Paths of a pipeline are the file's: resolved against its folder, absolute.
  const folder = resolve(dirname(path));
  // From the file as written, as reports are: `workQueueOptions` reads the lease's text.
  const workQueues = ((raw as { work_queues?: unknown[] })?.work_queues ?? []).map((queue) =>
    compileWorkQueue(workQueueOptions(queue, (run) => toStepRun(run as RawUseCase)), useCases)
  );
  // A pipeline sinking into a work queue carries the queue's definition.
  const pipelines = ((raw as { pipelines?: unknown[] })?.pipelines ?? []).map((pipeline) =>
    compilePipeline(
      pipelineOptions(pipeline, (raw as { sources?: unknown }).sources, folder),
      folder,
      { workQueues: workQueues as unknown as ({ id: string } & Record<string, unknown>)[] },
    )
  );
  const pipelinesById = new Map(pipelines.map((pipeline) => [pipeline.id, pipeline]));
  const reports = ((raw as { reports?: unknown[] })?.reports ?? []).map((report) =>
    compileReport(reportOptions(report, folder), folder)
  );
  return compact<ScheduleConfig>({
    version: 1,
    queues: Object.fromEntries(
      Object.entries(file.queues ?? {}).map(([name, queue]) => [
        name,
        compact<QueueConfig>({
          concurrency: queue.concurrency ?? DEFAULT_CONCURRENCY,
          paused: queue.paused ?? false,
          flow: flowOf(queue),
        }),
      ]),
    ),
    schedules: (file.schedules ?? []).flatMap((schedule) =>
      perTenant(schedule).map((one) => toSchedule(one, defaults, byId, pipelinesById))
    ),
    pruner: file.pruner && compact<PrunerConfig>({
      everyMs: file.pruner.every,
      batch: file.pruner.batch,
      retention: file.pruner.retention && compact({ ...file.pruner.retention }),
    }),
    workersModule: file.workers === undefined
      ? undefined
      : isAbsolute(file.workers)
      ? file.workers
      : join(dirname(path), file.workers),
    useCases,
    workflows,
    pipelines,
    reports,
    workQueues,
  });
}

/**
 * The schedules one entry of the file stands for: itself, or with
 * `tenants:` one per tenant of the list, in its order, each with the id
 * `<id>:<tenant>` (`nightly:acme`) and that `tenant`. Each is a schedule of
 * its own: its occurrences (`nightly:acme@2026-12-05T02:00:00.000Z`), its
 * row (recovery point, misfires, enabled) and their leases are never
 * another tenant's. A declared id is a slug, which cannot hold `:`, so a
 * derived id meets no declared one, and the first `:` splits it back into
 * schedule and tenant; two entries' derived ids differ by their declared
 * ids, and one entry's by its tenants, which the checks keep distinct.
 */
export function perTenant(s: RawSchedule): RawSchedule[] {
  if (s.tenants === undefined) return [s];
  const { tenants, ...rest } = s;
  return tenants.map((tenant) => ({ ...rest, id: tenantScheduleId(s.id, tenant), tenant }));
}

/** The id of the schedule `<id>:<tenant>` a `tenants:` entry makes for one tenant. */
export function tenantScheduleId(id: string, tenant: string): string {
  return `${id}:${tenant}`;
}

/** When one schedule fires, with `defaults:` and the built-in defaults applied. */
export function toTiming(s: RawSchedule, d: RawDefaults): Timing {
  const timezone = s.timezone ?? d.timezone ?? SCHEDULE_DEFAULTS.timezone;
  const rhythm: Schedule["rhythm"] = s.cron !== undefined
    ? { kind: "cron", expression: s.cron }
    : s.every !== undefined
    ? { kind: "every", everyMs: s.every, anchor: s.anchor ?? SCHEDULE_DEFAULTS.anchor }
    : { kind: "manual" };
  const localTime: LocalTimePolicy | undefined = isUtc(timezone)
    ? undefined
    : s.local_time ?? d.local_time;
  return compact<Timing>({
    id: s.id,
    rhythm,
    timezone,
    localTime: localTime && { ...localTime },
    startAt: s.start_at,
    endAt: s.end_at,
    jitterMs: s.jitter ?? d.jitter,
  });
}

/**
 * One schedule with `defaults:` and the built-in defaults applied.
 *
 * @param workflows the file's compiled workflows by id, for a `run.workflow`
 * @param pipelines the file's compiled pipelines by id, for a `run.pipeline`:
 *   its runs go to the pipeline's queue with its attempts unless the
 *   schedule sets its own
 */
export function toSchedule(
  s: RawSchedule,
  d: RawDefaults,
  workflows: ReadonlyMap<string, CompiledWorkflow> = new Map(),
  pipelines: ReadonlyMap<string, CompiledPipeline> = new Map(),
): Schedule {
  const backoff = s.backoff ?? d.backoff;
  const pipeline = s.run.pipeline === undefined ? undefined : pipelines.get(s.run.pipeline);
  return compact<Schedule>({
    ...toTiming(s, d),
    misfire: {
      policy: s.misfire ?? d.misfire ?? SCHEDULE_DEFAULTS.misfire,
      catchUpLimit: s.catch_up_limit ?? d.catch_up_limit ?? SCHEDULE_DEFAULTS.catchUpLimit,
      graceMs: s.grace ?? d.grace ?? SCHEDULE_DEFAULTS.graceMs,
    },
    overlapPolicy: s.overlap_policy ?? d.overlap_policy ?? SCHEDULE_DEFAULTS.overlapPolicy,
    run: s.run.pipeline !== undefined
      ? pipelineRun(s, pipeline)
      : s.run.workflow === undefined
      ? toRun(s.run)
      : workflowRun(s, workflows),
    workflow: s.run.workflow,
    queue: s.queue ?? pipeline?.queue ?? d.queue ?? SCHEDULE_DEFAULTS.queue,
    priority: s.priority ?? d.priority ?? SCHEDULE_DEFAULTS.priority,
    maxAttempts: s.max_attempts ?? pipeline?.maxAttempts ?? d.max_attempts ??
      SCHEDULE_DEFAULTS.maxAttempts,
    backoff: toBackoff(backoff),
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

/**
 * The run of a schedule that starts a workflow: a `jobs.workflow` job whose
 * args carry the compiled definition and the input, so an occurrence starts
 * the workflow as the file defined it when the occurrence was planned, and
 * the schedule's definition hash changes with the workflow's.
 */
function workflowRun(s: RawSchedule, workflows: ReadonlyMap<string, CompiledWorkflow>): RunSpec {
  const definition = workflows.get(s.run.workflow!);
  // The checks refuse an unknown workflow before anything is built.
  if (!definition) throw new TypeError(`schedule "${s.id}": no workflow "${s.run.workflow}"`);
  const args: WorkflowStartRun = { kind: "workflow", definition, input: s.run.input ?? {} };
  return { kind: "worker", worker: WORKFLOW_START_WORKER, args };
}

/**
 * The run of a schedule that runs a pipeline: a `jobs.ingest` job whose args
 * carry the compiled pipeline, so an occurrence runs the pipeline as the
 * file defined it when it was planned, and the schedule's definition hash
 * changes with the pipeline's.
 */
function pipelineRun(s: RawSchedule, pipeline: CompiledPipeline | undefined): RunSpec {
  // The checks refuse an unknown pipeline before anything is built.
  if (!pipeline) throw new TypeError(`schedule "${s.id}": no pipeline "${s.run.pipeline}"`);
  const args: IngestJobArgs = { kind: "ingest", pipeline };
  return { kind: "worker", worker: INGEST_WORKER, args };
}

/**
 * One workflow of the file, compiled against the file's use cases. A use
 * case's `queue` and `priority` apply to the jobs that run it (a step's own
 * win), its compensations' included.
 */
function toWorkflow(
  raw: RawWorkflow,
  useCases: Record<string, StepRun>,
  settings: Record<string, RawUseCase>,
): CompiledWorkflow {
  const options = workflowOptions(raw, (run) => toStepRun(run as RawUseCase));
  const compiled = compileWorkflow(options, { useCases });
  return withUseCaseSettings(compiled, options, settings);
}

/**
 * `compiled` with each use case's settings on the jobs that run it, hashed
 * again: its queue and priority, and its attempts, backoff and timeout (a
 * saga's record cannot hold those, so a command or HTTP use case is where
 * they live). A plain workflow step's own setting wins over its use case's.
 */
function withUseCaseSettings(
  compiled: CompiledWorkflow,
  options: WorkflowOptions,
  settings: Record<string, RawUseCase>,
): CompiledWorkflow {
  const apply = (
    job: JobTemplate,
    useCase: string | null,
    own?: WorkflowStepOptions,
  ): JobTemplate => {
    const setting = useCase === null ? undefined : settings[useCase];
    const applied: JobTemplate = {
      ...job,
      queue: own?.queue ?? setting?.queue ?? job.queue,
      priority: own?.priority ??
        (setting?.priority !== undefined ? clampPriority(setting.priority) : job.priority),
    };
    if (own?.maxAttempts === undefined && setting?.max_attempts !== undefined) {
      // Declared attempts are not the worker's to fill in (`withWorkerDefaults`).
      delete applied.attemptsFromWorker;
      applied.maxAttempts = setting.max_attempts;
    }
    if (own?.timeoutMs === undefined && setting?.timeout !== undefined) {
      applied.timeoutMs = setting.timeout;
    }
    const backoff = own?.backoff === undefined ? toBackoff(setting?.backoff) : undefined;
    if (backoff !== undefined) applied.backoff = backoff;
    return applied;
  };
  const steps = compiled.steps.map((step) => {
    const own = options.steps.find((s) => s.id === step.id);
    const compensation = step.compensation?.mode === "use-case"
      ? {
        ...step.compensation,
        job: apply(step.compensation.job, step.compensation.useCase),
      }
      : step.compensation;
    return { ...step, job: apply(step.job, step.useCase, own), compensation };
  });
  // Hashed as `compileWorkflow` hashes, so the hash covers the settings applied here.
  return hashed({ id: compiled.id, saga: compiled.saga, steps });
}

/** A `backoff:` as the schema outputs it (a schedule's or a use case's) as a {@linkcode BackoffSpec}. */
function toBackoff(backoff: RawSchedule["backoff"]): BackoffSpec | undefined {
  return backoff?.fixed !== undefined
    ? { kind: "fixed", delayMs: backoff.fixed }
    : backoff?.exponential !== undefined
    ? { kind: "exponential", baseMs: backoff.exponential.base, maxMs: backoff.exponential.max }
    : undefined;
}

/** What a use case or a step's `run:` runs. */
function toStepRun(run: RawUseCase): StepRun {
  if (run.worker !== undefined) return { kind: "worker", worker: run.worker };
  return toRun(run) as StepRun;
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

/** Drops the keys whose value is undefined, so that optional fields are absent, not undefined. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** A queue's `global`, `partition` and `rate` as {@linkcode FlowLimits}, or undefined when none. */
function flowOf(queue: RawQueue): FlowLimits | undefined {
  const rate = (
    r: { limit: number; per: number; burst?: number } | undefined,
  ): RateLimit | undefined => r && { limit: r.limit, perMs: r.per, burst: r.burst ?? r.limit };
  const flow = compact<FlowLimits>({
    global: queue.global,
    partition: queue.partition && compact({
      by: queue.partition.by,
      limit: queue.partition.limit,
      rate: rate(queue.partition.rate),
    }),
    rate: rate(queue.rate),
  });
  return isLimited(flow) ? flow : undefined;
}
