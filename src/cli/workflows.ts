/**
 * The workflow commands: `jobs workflows` (runs, newest first), `jobs
 * workflow show <run-id>` (one run as a tree of its steps, with its
 * compensation trail and audit trail), `jobs workflow cancel | retry
 * <run-id> --reason` (audited, saying what changed) and `jobs start
 * <workflow-id> --input JSON` (a run of a workflow the schedules file
 * declares, audited; prints the run id). Each is a thin call into
 * `src/admin/workflows.ts`, which the TUI shares.
 *
 * @module
 */

import { loadWorkersModule } from "../runners/workers_module.ts";
import { when } from "../schedule/describe.ts";
import { withWorkerDefaults } from "../workflow/definition.ts";
import { type Command, InvalidArgumentError } from "commander";
import {
  cancelWorkflowRun,
  listWorkflowRuns,
  retryWorkflowRun,
  startWorkflowRun,
  WorkflowActionRefused,
  type WorkflowRunSummary,
  workflowRunView,
  workflowSummaryJson,
  workflowTreeText,
  workflowViewJson,
} from "../admin/workflows.ts";
import { EnqueueError } from "../kernel/enqueue.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { describeLocation } from "../store/open.ts";
import type { AuditRow } from "../store/store.ts";
import { errorSummary } from "../text/stored_error.ts";
import { didYouMean } from "../text/suggest.ts";
import { type CompiledWorkflow, RUN_STATES, type RunState } from "../workflow/types.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  parseCount,
  plural,
  quiet,
  tryParseJson,
  who,
} from "./common.ts";
import { requireConfig } from "./config.ts";
import { type Listing, listingOptions, printListing, tableLines } from "./listing.ts";
import { withStore } from "./store/open.ts";
import { cell, echo, iso, safeJson } from "./text.ts";

/** How many runs `jobs workflows` prints unless `--limit` says otherwise. */
export const WORKFLOWS_DEFAULT_LIMIT = 50;

const NO_AUDIT = "it only reads: nothing to audit";
const NO_CONFIG = "it acts on runs in the store, which carry their definitions";

/** Registers `workflows`, `workflow show | cancel | retry` and `start` on the program. */
export function registerWorkflowCommands(program: Command, deps: CliDeps): void {
  listCommand(program, deps);
  workflowGroup(program, deps);
  startCommand(program, deps);
}

// ------------------------------------------------------------------ parsers

/** `--state failed,compensating` -> the run states; throws naming the value otherwise. */
export function parseRunStates(value: string): RunState[] {
  const states = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const s of states) {
    if (!(RUN_STATES as readonly string[]).includes(s)) {
      throw new InvalidArgumentError(
        `"${echo(s)}" is not a run state (${RUN_STATES.join(", ")})${didYouMean(s, RUN_STATES)}`,
      );
    }
  }
  if (states.length === 0) throw new InvalidArgumentError(`"${echo(value)}" names no state`);
  return states as RunState[];
}

/** A run id given as an argument: a whole number >= 1; exit 2 naming it otherwise. */
export function parseRunId(command: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new CommandFailed(
      `jobs ${command}: run id "${echo(value)}" is not a whole number >= 1`,
      2,
    );
  }
  return n;
}

// ---------------------------------------------------------------- workflows

interface ListOptions {
  state?: RunState[];
  workflow?: string;
  limit: number;
  db?: string;
  json?: boolean;
}

/** How `jobs workflows` prints its runs. */
const RUNS: Listing<WorkflowRunSummary> = {
  json: workflowSummaryJson,
  none: "no workflow runs match",
  lines: tableLines(
    ["ID", "WORKFLOW", "STATE", "STEPS", "STARTED", "FINISHED", "ERROR"],
    summaryCells,
  ),
};

function listCommand(program: Command, deps: CliDeps): void {
  quiet(
    listingOptions(
      program.command("workflows")
        .description("workflow runs, newest first, one line each with their steps' progress")
        .option("--state <states>", "only runs in these states, comma-separated", parseRunStates)
        .option("--workflow <id>", "only runs of this workflow")
        .option("--limit <n>", "how many runs at most", parseCount, WORKFLOWS_DEFAULT_LIMIT),
    ).action((options: ListOptions) => {
      const filter = {
        ...(options.state ? { state: options.state } : {}),
        ...(options.workflow === undefined ? {} : { workflow: options.workflow }),
        limit: options.limit,
      };
      return printListing("workflows", options, deps, (s) => listWorkflowRuns(s, filter), RUNS);
    }),
    deps,
    "workflows",
  );
}

function summaryCells(run: WorkflowRunSummary, now: number): string[] {
  const s = run.steps;
  const progress = [
    `${s.completed}/${s.total} done`,
    ...(s.running > 0 ? [`${s.running} running`] : []),
    ...(s.failed > 0 ? [`${s.failed} failed`] : []),
    ...(s.cancelled > 0 ? [`${s.cancelled} cancelled`] : []),
  ].join(", ");
  return [
    String(run.id),
    cell(run.workflow),
    run.state,
    progress,
    when(run.startedAt, now),
    run.finishedAt === null ? "-" : when(run.finishedAt, now),
    // One line: the message and the last line of a command's stderr (show has it all).
    run.error === null ? "" : cell(errorSummary(run.error)),
  ];
}

// ----------------------------------------------------------------- workflow

/** The subcommands of `jobs workflow`, for the refusal of an unknown one. */
const SUBCOMMANDS = ["show", "cancel", "retry"];

function workflowGroup(program: Command, deps: CliDeps): void {
  const taken = "taken by each of its commands: show, cancel, retry";
  // Settings set here (quiet output, the exit override) are copied into the
  // subcommands made after them.
  const group = quiet(
    globalOptions(
      program.command("workflow")
        .description("one workflow run: show it as a tree, cancel it, or retry it (audited)")
        .argument("[command]", "show, cancel or retry"),
      {
        db: { not: taken },
        config: { not: taken },
        json: { not: taken },
        audit: { not: taken },
      },
    ).action((name: string | undefined) => {
      const help = `run "${deps.program} help workflow" for its commands`;
      throw new CommandFailed(
        name === undefined
          ? `jobs workflow: name a command: ${SUBCOMMANDS.join(", ")} (${help})`
          : `jobs workflow: unknown command "${echo(name)}"${
            echo(didYouMean(name, SUBCOMMANDS))
          } (${help})`,
        2,
      );
    }),
    deps,
    "workflow",
  );
  showCommand(group, deps);
  for (const action of ["cancel", "retry"] as const) actionCommand(group, deps, action);
}

function showCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("show")
        .description(
          "one run as a tree: each step with its state, attempts and result size; then the " +
            "compensation trail and the audit trail",
        )
        .argument("<run-id>", "the run's id (jobs workflows lists them)"),
      {
        db: { mode: "read" },
        config: { not: NO_CONFIG },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (ref: string, options: { db?: string; json?: boolean }) => {
      const id = parseRunId("workflow show", ref);
      const db = dbPath(options.db, deps);
      await withStore("workflow show", db, "read", deps, async (store) => {
        const view = await workflowRunView(store, id);
        if (!view) {
          throw new CommandFailed(
            `jobs workflow show: no workflow run ${id} in the store "${
              echo(describeLocation(db))
            }"`,
          );
        }
        const trail = await store.auditList({ target: `workflow:${id}` });
        if (options.json) {
          deps.out(safeJson({ ...workflowViewJson(view), audit: trail.map(auditJson) }));
          return;
        }
        const now = deps.clock.now();
        for (const line of workflowTreeText(view, now)) deps.out(line);
        for (const line of auditLines(trail, now)) deps.out(line);
      });
    }),
    deps,
    "workflow show",
  );
}

function auditJson(row: AuditRow) {
  return { ...row, at: iso(row.at) };
}

function auditLines(trail: AuditRow[], now: number): string[] {
  const lines = [`audit (${trail.length}):`];
  if (trail.length === 0) lines.push("  none");
  for (const row of trail) {
    // A step's failure has its error as the reason: one line, as the run's error is listed.
    const reason = row.reason !== null && STEP_ENDS.test(row.action)
      ? errorSummary(row.reason)
      : row.reason;
    lines.push(
      `  ${when(row.at, now)} ${cell(row.action)} by ${cell(row.actor)}${
        reason === null ? "" : `: ${cell(reason)}`
      }`,
    );
  }
  return lines;
}

/** The actions of a step's or a compensation's failure on a run's trail (`step.discard`, ...). */
const STEP_ENDS = /^(step|compensation)\.(discard|cancel)$/;

function actionCommand(group: Command, deps: CliDeps, action: "cancel" | "retry"): void {
  const name = `workflow ${action}`;
  quiet(
    globalOptions(
      group.command(action)
        .description(
          action === "cancel"
            ? "cancel a run: its waiting steps are cancelled; a saga runs its compensations " +
              "(audited)"
            : "retry a failed run: its discarded step (or compensation) runs again and the run " +
              "resumes (audited)",
        )
        .argument("<run-id>", "the run's id (jobs workflows lists them)"),
      {
        db: { mode: "write" },
        config: { not: NO_CONFIG },
        json: true,
        audit: { reason: "required" },
      },
    ).action(async (ref: string, options: {
      reason: string;
      actor?: string;
      db?: string;
      json?: boolean;
    }) => {
      const id = parseRunId(name, ref);
      const db = dbPath(options.db, deps);
      await withStore(name, db, "write", deps, async (store) => {
        const actor = who(options, deps);
        const params = { id, reason: options.reason, actor: actor.actor, now: actor.now };
        const done = await (action === "cancel"
          ? cancelWorkflowRun(store, params)
          : retryWorkflowRun(store, params)).catch((error) => {
            if (error instanceof WorkflowActionRefused) {
              throw new CommandFailed(`jobs ${name}: ${echo(error.message, 400)}; nothing changed`);
            }
            throw error;
          });
        if (options.json) {
          deps.out(JSON.stringify(done));
          return;
        }
        const jobs = done.jobs.length === 0
          ? action === "cancel" ? "no waiting job to cancel" : "no job to run again"
          : `${plural(done.jobs.length, "job")} ${
            action === "cancel" ? "cancelled" : "to run again"
          }: ${
            done.jobs.map((j) => `#${j}`).join(", ")
          }`;
        deps.out(
          `${action === "cancel" ? "cancelled" : "retried"} workflow run ${done.id} ` +
            `(${cell(done.workflow)}): it was ${done.was}, now ${done.state}; ${jobs}`,
        );
      });
    }),
    deps,
    name,
  );
}

// -------------------------------------------------------------------- start

interface StartOptions {
  input?: string;
  key?: string;
  tenant?: string;
  reason?: string;
  actor?: string;
  config?: string;
  db?: string;
  json?: boolean;
}

function startCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("start")
        .description(
          "start a run of a workflow the schedules file declares; prints the run id (audited)",
        )
        .argument("<workflow-id>", "the workflow")
        .option("--input <json>", "the run's input as JSON (default {}); - reads standard input")
        .option(
          "--key <key>",
          "an idempotency key: a second start with it returns the first run, starting nothing",
        )
        .option("--tenant <name>", "the tenant the run belongs to"),
      {
        db: { mode: "write" },
        config: { for: "which declares the workflow" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (id: string, options: StartOptions) => {
      await startRun(id, options, deps);
    }),
    deps,
    "start",
  );
}

async function startRun(id: string, options: StartOptions, deps: CliDeps): Promise<void> {
  const input = await readInput(options, deps);
  const file = configPath(options.config, deps);
  const { config } = await requireConfig("start", file, deps);
  const workflows = workflowsOf(config);
  const definition = workflows.find((w) => w.id === id);
  if (!definition) {
    const ids = workflows.map((w) => w.id);
    const known = ids.map((w) => `"${echo(w)}"`).join(", ");
    throw new CommandFailed(
      `jobs start: no workflow "${echo(id)}" in ${echo(file)}${echo(didYouMean(id, ids))} ` +
        `(it has ${known || "none"})`,
    );
  }
  const resolved = await withModuleWorkers(definition, config);
  const db = dbPath(options.db, deps);
  await withStore("start", db, "write", deps, async (store) => {
    const actor = who(options, deps);
    const started = await startWorkflowRun(store, {
      definition: resolved,
      input,
      key: options.key ?? null,
      tenant: options.tenant ?? null,
      actor: actor.actor,
      reason: actor.reason,
      now: actor.now,
    }).catch((error) => {
      if (error instanceof EnqueueError) {
        throw new CommandFailed(`jobs start: ${echo(error.message, 400)}`, 2);
      }
      if (error instanceof WorkflowActionRefused) {
        throw new CommandFailed(`jobs start: ${echo(error.message, 400)}; nothing started`);
      }
      throw error;
    });
    if (options.json) {
      deps.out(JSON.stringify({ id: started.id, workflow: id, duplicate: started.duplicate }));
      return;
    }
    // The id alone on stdout, so `run=$(jobsctl start ...)` holds it; the words go to stderr.
    deps.out(String(started.id));
    deps.err(
      started.duplicate
        ? `jobs start: key "${echo(options.key ?? "")}" already started workflow run ` +
          `${started.id} of ${cell(id)}; nothing started`
        : `jobs start: started workflow run ${started.id} of ${cell(id)} ` +
          `(${deps.program} workflow show ${started.id} follows it)`,
    );
  });
}

/**
 * `definition` with the attempts of the file's workers module's workers,
 * as the daemon starts it: a worker's retry count lives in its code, and
 * the file is read without the module.
 */
async function withModuleWorkers(
  definition: CompiledWorkflow,
  config: ScheduleConfig,
): Promise<CompiledWorkflow> {
  const module = config.workersModule;
  const wanted = definition.steps.some((s) =>
    s.job.attemptsFromWorker ||
    (s.compensation?.mode === "use-case" && s.compensation.job.attemptsFromWorker)
  );
  if (module === undefined || !wanted) return definition;
  let workers;
  try {
    workers = await loadWorkersModule(module);
  } catch (error) {
    throw new CommandFailed(`jobs start: ${(error as Error).message}`);
  }
  return withWorkerDefaults(definition, new Map(workers.map((w) => [w.name, w])));
}

/** The compiled workflows of the file (none before the file knew of them). */
function workflowsOf(config: ScheduleConfig): readonly CompiledWorkflow[] {
  return (config as { workflows?: CompiledWorkflow[] }).workflows ?? [];
}

/** The run's input: `--input` (JSON, or `-` for standard input), else `{}`. */
async function readInput(options: StartOptions, deps: CliDeps): Promise<unknown> {
  if (options.input === undefined) return {};
  const stdin = options.input === "-";
  const text = stdin ? await deps.readStdin() : options.input;
  const parsed = tryParseJson(text);
  if (!parsed.ok) {
    const where = stdin ? "--input - (standard input)" : `--input "${echo(options.input)}"`;
    throw new CommandFailed(`jobs start: ${where} ${parsed.reason}`, 2);
  }
  return parsed.value;
}
