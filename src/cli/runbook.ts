/**
 * `jobs runbook [<schedule-or-workflow-id>]`: the operator procedures of
 * each schedule and each workflow of the live configuration, with the
 * commands to paste. Every command is printed with the program's own
 * invocation (`CliDeps.program`, such as `jobsctl`) and its words
 * shell-quoted, so it pastes as printed.
 *
 * The store is read (never created or migrated) for the latest occurrence,
 * a workflow's latest runs and the stored state; without it the procedures
 * are printed alone.
 *
 * @module
 */

import type { Command } from "commander";
import {
  pasteLine,
  type Procedure,
  type Runbook,
  runbookOf,
  type Why,
  why,
} from "../admin/runbook.ts";
import { latestOccurrence, scheduleStatus, storedConfig } from "../admin/schedules.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { Store, WorkflowFilter } from "../store/store.ts";
import {
  type CompiledWorkflow,
  FINAL_RUN_STATES,
  RUN_STATES,
  type RunState,
  type WorkflowRun,
} from "../workflow/types.ts";
import { when } from "../schedule/describe.ts";
import { type CliDeps, CommandFailed, configPath, dbPath, globalOptions, quiet } from "./common.ts";
import { configOrFail, loadConfig, notInForce } from "./config.ts";
import { scheduleJson } from "./schedules.ts";
import { describeLocation } from "../store/open.ts";
import { movedNotice, tryOpenStore } from "./store/open.ts";
import { cell, echo, safeJson } from "./text.ts";
import { didYouMean } from "../text/suggest.ts";

/** Registers `jobs runbook` on the program. */
export function registerRunbookCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("runbook")
        .description(
          "the operator procedures of each schedule and workflow, with the commands to paste",
        )
        .argument("[id]", "only this schedule or workflow"),
      {
        db: { mode: "read" },
        config: { for: "whose schedules and workflows it describes" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(
      async (id: string | undefined, options: { db?: string; config?: string; json?: boolean }) => {
        await runbookCommand({
          id,
          db: dbPath(options.db, deps),
          config: configPath(options.config, deps),
          // Only paths given on this command line need repeating in the
          // commands to paste; the environment carries the others.
          given: { db: options.db, config: options.config },
          json: !!options.json,
        }, deps);
      },
    ),
    deps,
    "runbook",
  );
}

/** What `jobs runbook` was given. */
interface RunbookOptions {
  id: string | undefined;
  db: string;
  config: string;
  given: { db?: string; config?: string };
  json: boolean;
}

/** `jobs runbook [<id>]`: exit 1 for an invalid file or an unknown id. */
export async function runbookCommand(
  options: RunbookOptions,
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const { config, warning, early } = await runbookConfig(options, deps);
  try {
    await runbookFor(config, warning, early, options, deps, now);
  } finally {
    if (early?.ok) await early.store.close();
  }
}

/**
 * The configuration the runbook describes: the file's; or, while the file
 * has errors, the schedules as the store last synced them (what a daemon
 * runs), with the warning that says so (also on stderr) and the store
 * opened to read them. Without stored definitions the command fails on the
 * file's errors as before.
 */
async function runbookConfig(
  options: { db: string; config: string },
  deps: CliDeps,
): Promise<{ config: ScheduleConfig; warning: string | null; early: Opened | null }> {
  const loaded = await loadConfig(options.config);
  if (loaded.config !== null) return { config: loaded.config, warning: null, early: null };
  const early = await tryOpenStore(options.db, "read", deps);
  const stored = early.ok ? await storedConfig(early.store).catch(() => null) : null;
  if (stored === null || stored.schedules.length === 0) {
    if (early.ok) await early.store.close();
    configOrFail("runbook", loaded, deps);
  }
  const warning = notInForce(loaded, stored);
  deps.err(`jobs runbook: warning: ${echo(warning, 1000)}`);
  return { config: stored!, warning, early };
}

type Opened = Awaited<ReturnType<typeof tryOpenStore>>;

async function runbookFor(
  config: ScheduleConfig,
  warning: string | null,
  early: Opened | null,
  options: RunbookOptions,
  deps: CliDeps,
  now: number,
): Promise<void> {
  const declared = workflowsOf(config);
  const schedules = options.id === undefined
    ? config.schedules
    : config.schedules.filter((s) => s.id === options.id);
  const workflows = options.id === undefined
    ? declared
    : declared.filter((w) => w.id === options.id);
  if (schedules.length === 0 && workflows.length === 0) {
    const ids = [...config.schedules.map((s) => s.id), ...declared.map((w) => w.id)];
    const known = ids.map((id) => `"${echo(id)}"`).join(", ");
    const what = declared.length > 0 ? "schedule or workflow" : "schedule";
    throw new CommandFailed(
      options.id === undefined
        ? `jobs runbook: ${echo(options.config)} declares no ${what}`
        : `jobs runbook: no ${what} "${echo(options.id)}" in ${echo(options.config)}` +
          `${echo(didYouMean(options.id, ids))} (it has ${known || "none"})`,
    );
  }
  const opened = early ?? await tryOpenStore(options.db, "read", deps);
  if (opened.ok && opened.moved) deps.err(`jobs runbook: ${movedNotice(options.db, opened.moved)}`);
  try {
    const store = opened.ok ? opened.store : null;
    const rows = new Map(
      (store ? await store.schedulesList({ ids: schedules.map((s) => s.id) }) : [])
        .map((r) => [r.id, r]),
    );
    const books: Runbook[] = [];
    for (const schedule of schedules) {
      const latest = store ? await latestOccurrence(store, schedule.id) : null;
      const state = scheduleStatus(schedule, rows.get(schedule.id), now);
      books.push(runbookOf(schedule, state, latest, options.given, deps.program));
    }
    const counts = store ? await store.workflowsCount() : null;
    const flows: WorkflowRunbook[] = [];
    for (const workflow of workflows) {
      const runs = store ? await workflowRunsOf(store, workflow.id) : null;
      const byState = counts === null ? null : Object.fromEntries(
        RUN_STATES.map((state) => [
          state,
          counts.filter((c) => c.workflow === workflow.id && c.state === state)
            .reduce((n, c) => n + c.count, 0),
        ]),
      ) as Record<RunState, number>;
      flows.push(workflowRunbookOf(workflow, byState, runs, options.given, deps.program));
    }
    if (options.json) {
      deps.out(safeJson({
        store: opened.ok ? null : opened.problem,
        ...(warning === null ? {} : { config: { file: options.config, notInForce: warning } }),
        schedules: books.map((b) => ({ ...b, state: scheduleJson(b.state) })),
        workflows: flows,
      }));
      return;
    }
    const lines = [`runbook: ${cell(options.config)}, store ${cell(describeLocation(options.db))}`];
    if (warning !== null) lines.push(`warning: ${cell(warning)}`);
    if (!opened.ok) lines.push(`(store: ${opened.problem}; no stored state shown)`);
    for (const book of books) lines.push("", ...runbookText(book, now));
    for (const flow of flows) lines.push("", ...workflowRunbookText(flow));
    for (const line of lines) deps.out(line);
  } finally {
    // A store opened early (to read the stored definitions) is closed by the caller.
    if (opened.ok && early === null) await opened.store.close();
  }
}

// ---------------------------------------------------------------- workflows

/** One workflow's runbook. */
export interface WorkflowRunbook {
  id: string;
  /** `carried_by: workflow`: a failed step runs the compensations of those that completed. */
  saga: boolean;
  steps: {
    id: string;
    dependsOn: string[];
    useCase: string | null;
    /** `undo: <use case>`, `no undo: <reason>`, or null for a plain step. */
    compensation: string | null;
  }[];
  /** Its runs in the store by state, or null without a store. */
  runs: Record<RunState, number> | null;
  /** Its newest run, newest run still going, and newest failed run, when the store has them. */
  latest: { id: number; state: RunState } | null;
  active: { id: number; state: RunState } | null;
  failed: { id: number; state: RunState } | null;
  procedures: Procedure[];
}

/** The runs of one workflow a runbook points at (null entries: none in the store). */
interface RunsOf {
  latest: WorkflowRun | null;
  active: WorkflowRun | null;
  failed: WorkflowRun | null;
}

async function workflowRunsOf(store: Store, workflow: string): Promise<RunsOf> {
  const first = async (filter: WorkflowFilter) =>
    (await store.workflowsList({ ...filter, workflow, limit: 1, desc: true }))[0] ?? null;
  return {
    latest: await first({}),
    active: await first({ state: RUN_STATES.filter((s) => !FINAL_RUN_STATES.includes(s)) }),
    failed: await first({ state: "failed" }),
  };
}

/** The compiled workflows of the file (none before the file knew of them). */
function workflowsOf(config: ScheduleConfig): readonly CompiledWorkflow[] {
  return (config as { workflows?: CompiledWorkflow[] }).workflows ?? [];
}

/**
 * The procedures of one workflow, every command ready to paste (see
 * {@linkcode runbookOf}); a command on a run names a real run of the store,
 * and is left out (with a note) when there is none.
 */
export function workflowRunbookOf(
  workflow: CompiledWorkflow,
  runs: Record<RunState, number> | null,
  found: RunsOf | null,
  given: { db?: string; config?: string },
  program: string,
): WorkflowRunbook {
  const db = given.db === undefined ? [] : ["--db", describeLocation(given.db)];
  const config = given.config === undefined ? [] : ["--config", given.config];
  const paste = (...words: (string | Why)[]) => pasteLine(program, words);
  const ref = (run: WorkflowRun | null | undefined) =>
    run ? { id: run.id, state: run.state } : null;
  const latest = found?.latest ?? null;
  const active = found?.active ?? null;
  const failed = found?.failed ?? null;
  const start: Procedure = {
    title: "Start a run",
    notes: [
      "The input is any JSON value; each step gets it with its dependencies' results. " +
      "--key makes the start idempotent: a second start with the same key starts nothing.",
      "It prints the run id.",
    ],
    commands: [paste("start", workflow.id, "--input", "{}", ...db, ...config)],
  };
  const inspect: Procedure = {
    title: "Inspect",
    notes: latest === null
      ? ["No run in the store yet."]
      : [`Latest run: ${latest.id} (${latest.state}).`],
    commands: [
      paste("workflows", "--workflow", workflow.id, ...db),
      paste("workflows", "--workflow", workflow.id, "--state", "failed", ...db),
      ...(latest === null ? [] : [paste("workflow", "show", String(latest.id), ...db)]),
    ],
  };
  const cancel: Procedure = {
    title: "Cancel a run",
    notes: [
      workflow.saga
        ? "Cancels its waiting steps, lets the running ones finish, then runs the " +
          "compensations of the steps that completed, newest first; the run ends cancelled."
        : "Cancels its waiting steps and lets the running ones finish; the run ends cancelled.",
      ...(active === null ? ["Nothing to cancel: no run of it is going."] : [
        `Newest run still going: ${active.id} (${active.state}).`,
      ]),
    ],
    commands: active === null
      ? []
      : [paste("workflow", "cancel", String(active.id), why("cancelling it"), ...db)],
  };
  const retry: Procedure = {
    title: "Retry a failed run",
    notes: [
      "A failed run is a dead letter: a step was discarded with nothing to undo, or a " +
      "compensation was discarded. A retry runs that step (or compensation) again and the " +
      "run resumes; the steps cancelled because of it wait for it again.",
      ...(failed === null ? ["Nothing to retry: no failed run."] : [
        `Newest failed run: ${failed.id}.`,
      ]),
    ],
    commands: failed === null
      ? []
      : [paste("workflow", "retry", String(failed.id), why("retrying it"), ...db)],
  };
  return {
    id: workflow.id,
    saga: workflow.saga,
    steps: workflow.steps.map((s) => ({
      id: s.id,
      dependsOn: [...s.dependsOn],
      useCase: s.useCase,
      compensation: s.compensation === null
        ? null
        : s.compensation.mode === "use-case"
        ? `undo: ${s.compensation.useCase}`
        : `no undo: ${s.compensation.reason}`,
    })),
    runs,
    latest: ref(latest),
    active: ref(active),
    failed: ref(failed),
    procedures: [start, inspect, cancel, retry],
  };
}

function workflowRunbookText(book: WorkflowRunbook): string[] {
  const lines = [`## workflow ${cell(book.id)}${book.saga ? " (saga)" : ""}`, ""];
  lines.push("  steps");
  for (const s of book.steps) {
    const notes = [
      ...(s.dependsOn.length > 0 ? [`after ${s.dependsOn.map(cell).join(", ")}`] : []),
      ...(s.useCase !== null && s.useCase !== s.id ? [cell(s.useCase)] : []),
      ...(s.compensation === null ? [] : [cell(s.compensation)]),
    ];
    lines.push(`    ${cell(s.id)}${notes.length > 0 ? `  (${notes.join("; ")})` : ""}`);
  }
  if (book.runs !== null) {
    const counts = RUN_STATES.filter((s) => book.runs![s] > 0).map((s) => `${s} ${book.runs![s]}`);
    lines.push(`  runs     ${counts.join(", ") || "none in the store"}`);
  }
  for (const p of book.procedures) {
    lines.push("", `### ${p.title}`);
    for (const note of p.notes) lines.push(`  ${cell(note)}`);
    for (const command of p.commands) lines.push(`    ${command}`);
  }
  return lines;
}

function runbookText(book: Runbook, now: number): string[] {
  const t = book.timing;
  const s = book.state;
  const lines = [`## ${cell(book.id)}`, ""];
  lines.push(
    `  rhythm   ${cell(t.rhythm)} in ${cell(t.timezone)}${
      t.localTime ? ` (${cell(t.localTime)})` : ""
    }`,
    `  policies ${t.misfire === null ? "" : `misfire ${t.misfire}; `}overlap ${t.overlap}; ` +
      `queue ${cell(t.queue)}; ${t.maxAttempts} attempt${t.maxAttempts === 1 ? "" : "s"}${
        t.jitter ? `; jitter ${t.jitter}` : ""
      }`,
    `  next run ${
      s.next !== null
        ? `${when(s.next, now, t.timezone)} (${cell(s.nextOccurrence ?? "")})`
        : s.manual
        ? "only when someone runs it"
        : s.enabled
        ? "none"
        : "none while disabled"
    }`,
    `  state    ${
      s.enabled
        ? "enabled"
        : s.disabledIn === "file"
        ? "disabled in the file"
        : `disabled by ${cell(s.disabledBy ?? "unknown")} ${when(s.disabledAt, now)}: ${
          cell(s.disabledReason ?? "no reason given")
        }`
    }`,
  );
  for (const p of book.procedures) {
    lines.push("", `### ${p.title}`);
    for (const note of p.notes) lines.push(`  ${cell(note)}`);
    for (const command of p.commands) lines.push(`    ${command}`);
  }
  return lines;
}
