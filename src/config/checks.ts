/**
 * The schema, then the checks that span fields: one rhythm, one runner, the
 * fields that apply only with another (`anchor` with `every`, `shell` with
 * `command`, `guard` with `manual`), local-time policies, duplicate ids,
 * fan-out runs, backoff bounds, worker names against the workers module,
 * use cases (one runner each), the workflow rules (`workflows.ts`), a
 * `run.workflow` that names a workflow of the file, and schedules that
 * never fire. Each check reads the parsed YAML as it is,
 * so that it still runs, and still names the field, where the schema found
 * something else wrong in the same schedule.
 *
 * @module
 */

import { didYouMean } from "../text/suggest.ts";
import { tryParseDuration } from "../text/durations.ts";
import { neverFires } from "../schedule/occurrences.ts";
import { ITEM_PLACEHOLDER, type Timing } from "../schedule/types.ts";
import { WORKFLOW_ID } from "../workflow/definition.ts";
import { SCHEDULE_DEFAULTS, toTiming } from "./build.ts";
import { type Path, quote, render, type Reporter, valueAt } from "./report.ts";
import {
  defaultsSchema,
  fileSchema,
  knownKeys,
  NAME,
  type RawDefaults,
  type RawSchedule,
  scheduleSchema,
} from "./schema.ts";
import { isUtc, zoneId } from "../schedule/zones.ts";
import { dirname } from "node:path";
import { checkPipelines } from "./pipelines.ts";
import { checkReports, type QueryReader } from "./reports.ts";
import { checkWorkflows } from "./workflows.ts";
import { checkWorkQueues } from "./work_queues.ts";

/**
 * The names of the workers the `workers:` module exports, to check each
 * `run.worker` and `selection.worker` against; or why the module could not
 * be loaded.
 */
export type WorkerNames = { names: readonly string[] } | { error: string };

/**
 * Runs the schema and every check on the file `report` holds, and records
 * what they find in it.
 *
 * @param workers given, each `run.worker` and `selection.worker` is checked against it
 */
export function validate(report: Reporter, workers?: WorkerNames, readQuery?: QueryReader): void {
  const result = fileSchema.safeParse(report.raw);
  // Where the schema found something wrong: the workflow rules say nothing more there.
  const reported: Path[] = [];
  if (!result.success) {
    for (const issue of result.error.issues) {
      report.addIssue(issue, knownKeys);
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) reported.push([...issue.path, key]);
      } else reported.push(issue.path);
    }
  }

  const root = fields(report.raw);
  const defaults = fields(root?.defaults) ?? {};
  if (root?.defaults !== undefined) checkBackoff(report, ["defaults"], defaults);
  for (const [name, queue] of Object.entries(fields(root?.queues) ?? {})) {
    if (!NAME.test(name)) {
      report.add(
        "schedule-invalid",
        ["queues"],
        "name must be 1-128 letters, digits or ._:/-, starting with a letter or digit",
        name,
      );
    }
    const partition = fields(fields(queue)?.partition);
    if (partition && partition.limit === undefined && partition.rate === undefined) {
      report.add(
        "schedule-invalid",
        ["queues", name, "partition"],
        "partition needs a limit (jobs executing per key), a rate (starts per key), or both",
      );
    }
  }
  checkUseCases(report, fields(root?.use_cases) ?? {});
  const workflowList = Array.isArray(root?.workflows) ? root.workflows as unknown[] : [];
  for (const [index, workflow] of workflowList.entries()) {
    const steps = fields(workflow)?.steps;
    for (const [i, step] of (Array.isArray(steps) ? steps : []).entries()) {
      const path = ["workflows", index, "steps", i];
      const run = fields(fields(step)?.run);
      if (run) checkRun(report, [...path, "run"], run, "run", RUNNERS);
      checkBackoff(report, path, fields(step) ?? {});
    }
  }
  checkWorkflows(report, reported);
  const workflowIds = workflowList.map((w) => fields(w)?.id).filter((id) => typeof id === "string");
  const pipelineList = Array.isArray(root?.pipelines) ? root.pipelines as unknown[] : [];
  for (const [index, pipeline] of pipelineList.entries()) {
    const path = ["pipelines", index];
    const p = fields(pipeline) ?? {};
    const steps = Array.isArray(p.steps) ? p.steps : [];
    for (const [i, step] of steps.entries()) {
      const run = fields(fields(step)?.run);
      if (run) checkRun(report, [...path, "steps", i, "run"], run, "run", PROCESSORS);
    }
    const sink = fields(p.sink);
    if (sink) {
      checkRun(report, [...path, "sink"], sink, "sink", SINKS);
      for (const key of ["key", "tenant"]) {
        if (sink[key] !== undefined && sink.work_queue === undefined) {
          report.add(
            "schedule-invalid",
            [...path, "sink"],
            `sink.${key} applies only to work_queue`,
            key,
          );
        }
      }
    }
    if (fields(p.source)) {
      checkRun(report, [...path, "source"], fields(p.source)!, "source", FEEDS);
    }
    if (fields(p.notify)) {
      checkRun(report, [...path, "notify"], fields(p.notify)!, "notify", ["command"]);
    }
  }
  checkPipelines(report, reported);
  checkReports(report, reported, dirname(report.file), readQuery);
  const pipelineIds = pipelineList.map((p) => fields(p)?.id).filter((id) => typeof id === "string");
  const queueList = Array.isArray(root?.work_queues) ? root.work_queues as unknown[] : [];
  for (const [index, queue] of queueList.entries()) {
    const actions = fields(queue)?.actions;
    for (const [i, action] of (Array.isArray(actions) ? actions : []).entries()) {
      const run = fields(fields(action)?.run);
      if (run) checkRun(report, ["work_queues", index, "actions", i, "run"], run, "run", RUNNERS);
    }
  }
  checkWorkQueues(report, reported);

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
    checkSchedule(report, path, schedule, defaults, workflowIds, pipelineIds);
  }
  if (workers && typeof root?.workers === "string") {
    checkWorkers(report, root.workers, workerFields(root), workers);
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
  report.dropTypoEchoes();
}

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

/** A field of a run as a message names it: `run.shell`; a use case's (label ""), `shell`. */
function dotted(label: string, key: string): string {
  return label === "" ? key : `${label}.${key}`;
}

/** What a run, a use case and a step's `run:` choose from. */
const RUNNERS = ["command", "http", "worker"] as const;
/** What a pipeline step or sink runs. */
const PROCESSORS = ["command", "worker"] as const;
/** Where a pipeline's kept records go. */
const SINKS = ["command", "worker", "work_queue"] as const;
/** Where a pipeline reads from. */
const FEEDS = ["file", "glob", "command", "http"] as const;

/** Use-case ids follow the workflow ids' rule; each use case has one runner, as a run does. */
function checkUseCases(report: Reporter, useCases: Fields): void {
  for (const [id, useCase] of Object.entries(useCases)) {
    if (!WORKFLOW_ID.test(id)) {
      report.add(
        "schedule-invalid",
        ["use_cases"],
        `id must be 1-128 letters, digits or ._/-, starting with a letter or digit, got ${
          quote(id)
        }`,
        id,
      );
    }
    const run = fields(useCase);
    // The message's prefix names the use case: `use case "x": needs one of ...`.
    if (run) checkRun(report, ["use_cases", id], run, "", RUNNERS);
    if (run) checkBackoff(report, ["use_cases", id], run);
  }
}

function checkSchedule(
  report: Reporter,
  path: Path,
  schedule: Fields,
  defaults: Fields,
  workflows: readonly string[],
  pipelines: readonly string[],
): void {
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
  if (run) {
    checkRun(report, [...path, "run"], run, "run", [...RUNNERS, "workflow", "pipeline"]);
    checkWorkflowRun(report, [...path, "run"], run, workflows);
    checkPipelineRun(report, [...path, "run"], run, pipelines);
  }
  const selection = fields(schedule.selection);
  if (selection) {
    checkRun(report, [...path, "selection"], selection, "selection", ["command", "worker"]);
    if (run) checkFanOutRun(report, [...path, "run"], run);
  }
  if (schedule.batch_size !== undefined && schedule.selection === undefined) {
    report.add("schedule-invalid", path, "batch_size applies only with selection", "batch_size");
  }
  checkBackoff(report, path, schedule);
  checkTenants(report, path, schedule);

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

/**
 * A schedule's `tenants`: not beside `tenant`, not empty, each tenant once
 * (each becomes the schedule `<id>:<tenant>`, see `build.ts`). Each name's
 * rule is the schema's.
 */
function checkTenants(report: Reporter, path: Path, schedule: Fields): void {
  const tenants = schedule.tenants;
  if (tenants === undefined) return;
  if (schedule.tenant !== undefined) {
    report.add(
      "schedule-invalid",
      [...path, "tenants"],
      "has both tenant and tenants, choose one: tenant runs it for one tenant, " +
        "tenants once for each tenant of the list",
    );
  }
  if (!Array.isArray(tenants)) return;
  if (tenants.length === 0) {
    report.add(
      "schedule-invalid",
      [...path, "tenants"],
      "tenants must list at least one tenant, got []",
    );
  }
  const first = new Map<string, number>();
  for (const [i, tenant] of tenants.entries()) {
    if (typeof tenant !== "string") continue;
    const seen = first.get(tenant);
    if (seen === undefined) {
      first.set(tenant, i);
      continue;
    }
    const line = report.at.of(report.offset([...path, "tenants", seen])).line;
    report.add(
      "schedule-invalid",
      [...path, "tenants", i],
      `tenants[${i}] ${render(tenant)} is listed twice, first as tenants[${seen}] on line ${line}`,
    );
  }
}

/**
 * A `run` (command, http, worker or workflow), a `selection` (command or
 * worker), a use case or a step's `run:` (command, http or worker).
 */
function checkRun(
  report: Reporter,
  path: Path,
  run: Fields,
  label: string,
  choices: readonly string[],
): void {
  const kinds = present(run, choices);
  if (kinds.length === 0) {
    report.add(
      "schedule-invalid",
      path,
      `${label}${label ? " " : ""}needs one of ${choices.slice(0, -1).join(", ")} or ${
        choices.at(-1)
      }`,
    );
  } else if (kinds.length > 1) {
    report.add(
      "schedule-invalid",
      [...path, kinds[1]!],
      `${label}${label ? " " : ""}has both ${kinds[0]} and ${kinds[1]}, choose one`,
    );
  }
  for (const key of ["shell", "cwd", "env"]) {
    if (run[key] !== undefined && run.command === undefined && kinds.length > 0) {
      report.add("schedule-invalid", path, `${dotted(label, key)} applies only to command`, key);
    }
  }
  if (run.args !== undefined && run.worker === undefined && kinds.length > 0) {
    report.add("schedule-invalid", path, `${dotted(label, "args")} applies only to worker`, "args");
  }
  if (run.input !== undefined && run.workflow === undefined && kinds.length > 0) {
    report.add(
      "schedule-invalid",
      path,
      `${dotted(label, "input")} applies only to workflow`,
      "input",
    );
  }
  const command = run.command;
  const shell = run.shell === true;
  if (typeof command === "string" && command.trim() !== "" && !shell) {
    report.add(
      "schedule-invalid",
      [...path, "command"],
      `${dotted(label, "command")} must be a list of strings, or one string with shell: true, got ${
        quote(command)
      }`,
    );
  } else if (Array.isArray(command) && shell && command.length > 1) {
    report.add(
      "schedule-invalid",
      [...path, "command"],
      `${
        dotted(label, "command")
      } must be one string with shell: true, got a list of ${command.length}`,
    );
  }
}

/** A `run.workflow` names a workflow of the file. */
function checkWorkflowRun(
  report: Reporter,
  path: Path,
  run: Fields,
  workflows: readonly string[],
): void {
  const id = run.workflow;
  if (typeof id !== "string" || id.trim() === "" || workflows.includes(id)) return;
  const known = workflows.length === 0
    ? "the file has none"
    : `it has ${workflows.slice(0, 10).map(quote).join(", ")}`;
  const hint = didYouMean(id, workflows);
  report.add(
    "workflow-unknown",
    [...path, "workflow"],
    `run.workflow ${quote(id)} is not a workflow of the file${hint ? hint : `; ${known}`}`,
  );
}

/** A `run.pipeline` names a pipeline of the file. */
function checkPipelineRun(
  report: Reporter,
  path: Path,
  run: Fields,
  pipelines: readonly string[],
): void {
  const id = run.pipeline;
  if (typeof id !== "string" || id.trim() === "" || pipelines.includes(id)) return;
  const known = pipelines.length === 0
    ? "the file has none"
    : `it has ${pipelines.slice(0, 10).map(quote).join(", ")}`;
  const hint = didYouMean(id, pipelines);
  report.add(
    "pipeline-unknown",
    [...path, "pipeline"],
    `run.pipeline ${quote(id)} is not a pipeline of the file${hint ? hint : `; ${known}`}`,
  );
}

/** What a fan-out's `run` may not do with its item. */
function checkFanOutRun(report: Reporter, path: Path, run: Fields): void {
  if (run.pipeline !== undefined) {
    report.add(
      "schedule-invalid",
      [...path, "pipeline"],
      "run.pipeline cannot be fanned out by a selection: a pipeline reads its own source",
    );
    return;
  }
  if (run.workflow !== undefined) {
    report.add(
      "schedule-invalid",
      [...path, "workflow"],
      "run.workflow cannot be fanned out by a selection: a workflow's step may use for_each",
    );
    return;
  }
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

/**
 * Where the file names a worker: each schedule's `run` and `selection`,
 * each use case, each workflow step's `run:`. The path of the mapping that
 * holds `worker`, and how the message names that mapping.
 */
function workerFields(root: Fields): Array<{ path: Path; label: string; value: unknown }> {
  const found: Array<{ path: Path; label: string; value: unknown }> = [];
  const schedules = Array.isArray(root.schedules) ? root.schedules as unknown[] : [];
  for (const [index, item] of schedules.entries()) {
    for (const key of ["run", "selection"]) {
      found.push({ path: ["schedules", index, key], label: key, value: fields(item)?.[key] });
    }
  }
  for (const [id, useCase] of Object.entries(fields(root.use_cases) ?? {})) {
    found.push({ path: ["use_cases", id], label: "", value: useCase });
  }
  const workflows = Array.isArray(root.workflows) ? root.workflows as unknown[] : [];
  for (const [index, workflow] of workflows.entries()) {
    const steps = fields(workflow)?.steps;
    for (const [i, step] of (Array.isArray(steps) ? steps : []).entries()) {
      found.push({
        path: ["workflows", index, "steps", i, "run"],
        label: "run",
        value: fields(step)?.run,
      });
    }
  }
  const pipelines = Array.isArray(root.pipelines) ? root.pipelines as unknown[] : [];
  for (const [index, pipeline] of pipelines.entries()) {
    const steps = fields(pipeline)?.steps;
    for (const [i, step] of (Array.isArray(steps) ? steps : []).entries()) {
      found.push({
        path: ["pipelines", index, "steps", i, "run"],
        label: "run",
        value: fields(step)?.run,
      });
    }
    found.push({
      path: ["pipelines", index, "sink"],
      label: "sink",
      value: fields(pipeline)?.sink,
    });
  }
  const queues = Array.isArray(root.work_queues) ? root.work_queues as unknown[] : [];
  for (const [index, queue] of queues.entries()) {
    const actions = fields(queue)?.actions;
    for (const [i, action] of (Array.isArray(actions) ? actions : []).entries()) {
      found.push({
        path: ["work_queues", index, "actions", i, "run"],
        label: "run",
        value: fields(action)?.run,
      });
    }
  }
  return found;
}

/**
 * Every worker the file names (see {@linkcode workerFields}) must be a
 * worker of the `workers:` module. The message lists what the module
 * exports and ends with the nearest names, when some are close enough to
 * be a typo.
 */
function checkWorkers(
  report: Reporter,
  module: string,
  named: Array<{ path: Path; label: string; value: unknown }>,
  workers: WorkerNames,
) {
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
  for (const { path, label, value } of named) {
    const worker = fields(value)?.worker;
    if (typeof worker !== "string" || names.has(worker)) continue;
    const hint = didYouMean(worker, names);
    const unknown = `${dotted(label, "worker")} ${quote(worker)} is not a worker of ${
      quote(module)
    }`;
    report.add(
      "worker-unknown",
      [...path, "worker"],
      hint ? `${unknown} (${exports})${hint}` : `${unknown}; ${exports}`,
    );
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
  const timing = toTiming(schedule, defaults);
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
