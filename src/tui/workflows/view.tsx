/**
 * The workflows screen: a page of runs (id, definition, state, steps done
 * of all, when started and how long ago, why it failed), and one run open:
 * its steps as an indented tree, each under the dependency it waits on
 * last (as `jobs workflow show` draws it), with state colours, attempts,
 * items and result sizes, then the compensation trail in the order it ran.
 *
 * Colour never carries meaning alone: every state is written out, and a
 * waiting step, drawn dim, says `waiting`.
 *
 * @module
 */

import type { ReactNode } from "react";
import {
  bytesText,
  type CompensationRunView,
  errorIsCancel,
  type WorkflowRunSummary,
  type WorkflowRunView,
  type WorkflowStepView,
} from "../../admin/workflows.ts";
import { redact } from "../../kernel/redact.ts";
import { when } from "../../schedule/describe.ts";
import { span } from "../../text/durations.ts";
import { nextAttemptText } from "../../text/next_attempt.ts";
import { errorSummary } from "../../text/stored_error.ts";
import { RUN_STATES, type RunState, type StepState } from "../../workflow/types.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { clean, firstLine, fit, iso, RUN_STATE_COLOR, STEP_STATE_COLOR } from "../text.ts";

/** Props of {@linkcode WorkflowsList}. */
export interface WorkflowsListProps {
  runs: WorkflowRunSummary[] | null;
  /** Every run counted by state, or null until counted. */
  counts: Record<RunState, number> | null;
  /** The state listed, or null for any. */
  runState: RunState | null;
  /** 1-based page number. */
  page: number;
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** The workflow runs list. */
export function WorkflowsList(props: WorkflowsListProps): ReactNode {
  return <Lines lines={workflowsLines(props)} width={props.width} height={props.height} />;
}

/** Column widths of the runs list for a terminal `width` wide. */
function runColumns(width: number) {
  if (width >= 120) return { id: 8, workflow: 24, state: 13, steps: 10, started: 20, age: 8 };
  if (width >= 100) return { id: 7, workflow: 20, state: 13, steps: 9, started: 13, age: 7 };
  return { id: 6, workflow: 14, state: 13, steps: 8, started: 13, age: 7 };
}

/** When a run started, in UTC: to the second on a wide terminal, else to the minute. */
function startedCell(ms: number, wide: boolean): string {
  const text = iso(ms).replace("T", " ");
  return wide ? text.slice(0, 19) : text.slice(5, 16);
}

/** `2 running · 1 failed · 9 completed`: the non-zero counts, in state order, coloured. */
export function countSegs(counts: Record<RunState, number>): Seg[] {
  const shown = RUN_STATES.filter((s) => counts[s] > 0);
  if (shown.length === 0) return [seg("no runs yet", { dim: true })];
  return shown.flatMap((s, i) => [
    ...(i > 0 ? [seg(" · ")] : []),
    seg(`${counts[s]} ${s}`, { color: RUN_STATE_COLOR[s] }),
  ]);
}

/** The runs list as lines: the state listed and the counts, the header, a line per run. */
export function workflowsLines(props: WorkflowsListProps): Seg[][] {
  const { runs, width, now } = props;
  const c = runColumns(width);
  const wide = width >= 120;
  const lines: Seg[][] = [[
    seg("runs ", { bold: true }),
    seg(props.runState === null ? "any state" : `state:${props.runState}`, { color: "cyan" }),
    seg(` · page ${props.page} · `),
    ...(props.counts === null ? [seg("counting…", { dim: true })] : countSegs(props.counts)),
  ], [
    seg(
      `  ${fit("RUN", c.id)}${fit("WORKFLOW", c.workflow)} ${fit("STATE", c.state)}${
        fit("STEPS", c.steps)
      }${fit(wide ? "STARTED (UTC)" : "STARTED UTC", c.started)}${fit("AGE", c.age)} ERROR`,
      { bold: true },
    ),
  ]];
  if (!runs) return [...lines, [seg("  loading…", { dim: true })]];
  if (runs.length === 0) {
    return [
      ...lines,
      [seg(
        props.page > 1
          ? "  no more runs (b: previous page)"
          : props.runState === null
          ? "  no workflow runs"
          : `  no ${props.runState} runs (f: next state, esc: any state)`,
        { dim: true },
      )],
    ];
  }
  runs.forEach((run, i) => {
    const selected = i === props.cursor;
    lines.push([
      seg(selected ? "> " : "  ", { bold: true }),
      seg(fit(String(run.id), c.id), { inverse: selected }),
      seg(fit(clean(run.workflow), c.workflow)),
      seg(" "),
      seg(fit(run.state, c.state), { color: RUN_STATE_COLOR[run.state] }),
      ...stepsCell(run, c.steps),
      seg(fit(startedCell(run.startedAt, wide), c.started)),
      seg(fit(span(now - run.startedAt), c.age)),
      seg(" "),
      run.error !== null
        ? seg(errorLine(run.error), { color: "red" })
        : seg(run.key === null ? "" : `key ${clean(run.key)}`, { dim: true }),
    ]);
  });
  return lines;
}

/** `2/3` (completed of all steps), with `✗1` in red for each failed one, `width` wide. */
function stepsCell(run: WorkflowRunSummary, width: number): Seg[] {
  const done = `${run.steps.completed}/${run.steps.total}`;
  if (run.steps.failed === 0) return [seg(fit(done, width))];
  const failed = ` ✗${run.steps.failed}`;
  return [
    seg(done),
    seg(failed, { color: "red" }),
    seg(" ".repeat(Math.max(0, width - Array.from(done + failed).length))),
  ];
}

/** Props of {@linkcode WorkflowRunPane}. */
export interface WorkflowRunProps {
  view: WorkflowRunView | null;
  /** The id asked for, shown while loading or when it is gone. */
  id: number;
  /** The first line shown. */
  scroll: number;
  width: number;
  height: number;
  now: number;
}

/** One run, scrolled to `scroll`. */
export function WorkflowRunPane(props: WorkflowRunProps): ReactNode {
  const all = runLines(props);
  const scroll = Math.max(0, Math.min(props.scroll, all.length - props.height));
  return <Lines lines={all.slice(scroll)} width={props.width} height={props.height} />;
}

/** One step placed in the tree: its depth and the connector drawn before it. */
export interface TreeRow {
  step: WorkflowStepView;
  /** The step it hangs under, or null for a root. */
  parent: string | null;
  depth: number;
  /** The connector before the step's id (`├─ `, `└─ ` after the ancestors' `│  `). */
  prefix: string;
  /** What continues below the step's own line, for its error line (`│  ` or spaces). */
  under: string;
}

/**
 * The steps as a tree: each under its dependency that comes last in the
 * definition's order (the one it waits on longest), the rule of
 * `workflowTreeText`, so the screen and `jobs workflow show` agree. A
 * step whose dependency is unknown is a root.
 */
export function treeRows(steps: readonly WorkflowStepView[]): TreeRow[] {
  const order = new Map(steps.map((s, i) => [s.id, i]));
  const parentOf = (s: WorkflowStepView) =>
    s.dependsOn.reduce<string | null>(
      (last, d) =>
        !order.has(d) ? last : last === null || order.get(d)! > order.get(last)! ? d : last,
      null,
    );
  const children = new Map<string | null, WorkflowStepView[]>();
  for (const step of steps) {
    const parent = parentOf(step);
    children.set(parent, [...(children.get(parent) ?? []), step]);
  }
  const rows: TreeRow[] = [];
  const walk = (parent: string | null, depth: number, indent: string) => {
    const kids = children.get(parent) ?? [];
    kids.forEach((step, i) => {
      const last = i === kids.length - 1;
      const hasKids = (children.get(step.id)?.length ?? 0) > 0;
      // Roots sit at the margin; a child's connector joins it to its parent's line.
      const prefix = depth === 0 ? "" : `${indent}${last ? "└─ " : "├─ "}`;
      const next = depth === 0 ? "" : `${indent}${last ? "   " : "│  "}`;
      rows.push({ step, parent, depth, prefix, under: `${next}${hasKids ? "│  " : "   "}` });
      walk(step.id, depth + 1, next);
    });
  };
  walk(null, 0, "");
  return rows;
}

/** How wide the step column of the tree is at most (connectors and id). */
const STEP_COLUMN = 34;

function stateSeg(state: StepState, width: number): Seg {
  const color = STEP_STATE_COLOR[state];
  return color === undefined
    ? seg(fit(state, width), { dim: true })
    : seg(fit(state, width), { color, bold: state === "discarded" });
}

/** A stored error on one line, as `jobs workflows` lists it: the message and a command's last stderr line. */
function errorLine(error: string): string {
  return clean(errorSummary(redact(error)));
}

/** `attempt 2/3`, as the job detail writes it; nothing for a step that never had a job. */
function attemptsText(attempts: number, max: number | null): string | null {
  if (max === null) return attempts === 0 ? null : `attempt ${attempts}`;
  return `attempt ${attempts}/${max}`;
}

/** One run as lines: its header, the steps' tree, the compensation trail. */
export function runLines(props: WorkflowRunProps): Seg[][] {
  const { view, now } = props;
  if (!view) {
    return [[seg(`workflow run ${props.id}: loading, or no longer in the store`, { dim: true })]];
  }
  const { run } = view;
  const lines: Seg[][] = [[
    seg(`run ${run.id} `, { bold: true }),
    seg(clean(run.workflow), { bold: true }),
    seg(view.saga ? "  saga  " : "  "),
    seg(run.state, { color: RUN_STATE_COLOR[run.state], bold: true }),
    seg(`  definition ${clean(view.hash.slice(0, 12))}`, { dim: true }),
  ], [
    seg(`started    ${when(run.startedAt, now)}`),
  ]];
  if (run.finishedAt !== null) {
    lines.push([
      seg(`finished   ${when(run.finishedAt, now)}, took ${span(run.finishedAt - run.startedAt)}`),
    ]);
  }
  if (run.tenant !== null) lines.push([seg(`tenant     ${clean(run.tenant)}`)]);
  if (run.key !== null) lines.push([seg(`key        ${clean(run.key)}`)]);
  // An operator's cancel is its error too: said once, on the `cancelled` line.
  if (run.error !== null && !errorIsCancel(run)) {
    lines.push([seg("error      "), seg(errorLine(run.error), { color: "red" })]);
  }
  if (run.cancelReason !== null) {
    lines.push([seg("cancelled  "), seg(firstLine(run.cancelReason), { color: "gray" })]);
  }
  lines.push([seg("input      "), seg(clean(JSON.stringify(run.input) ?? "null"), { dim: true })]);

  const byState = new Map<StepState, number>();
  for (const s of view.steps) byState.set(s.state, (byState.get(s.state) ?? 0) + 1);
  lines.push([], [
    seg(`steps (${view.steps.length})`, { bold: true }),
    seg(
      `  ${[...byState].map(([state, n]) => `${n} ${state}`).join(", ")}`,
      { dim: true },
    ),
  ]);
  const rows = treeRows(view.steps);
  const column = Math.min(
    STEP_COLUMN,
    Math.max(8, ...rows.map((r) => Array.from(r.prefix + clean(r.step.id)).length)),
  );
  for (const row of rows) {
    lines.push(...stepLines(row, column, props.width, now));
    if (row.step.error !== null) {
      lines.push([
        seg(`  ${row.under}`, { dim: true }),
        seg("error: "),
        seg(errorLine(row.step.error), { color: "red" }),
      ]);
    }
  }

  if (view.saga || view.compensations.length > 0) {
    lines.push([]);
    if (view.compensations.length === 0) {
      lines.push([
        seg("compensations", { bold: true }),
        seg(
          run.state === "compensating" ? "  none has ended yet" : "  none ran",
          { dim: true },
        ),
      ]);
    } else {
      lines.push([
        seg(`compensations (${view.compensations.length})`, { bold: true }),
        seg("  in the order they ran, the reverse of completion", { dim: true }),
      ]);
      view.compensations.forEach((c, i) => lines.push(...compensationLines(c, i, now)));
    }
  }
  return lines;
}

/**
 * A step of the tree: connector and id, state, then what it did; its notes
 * (dependencies, use case, undo) follow on the line when they fit in
 * `width`, else on a line of their own under it.
 */
function stepLines(row: TreeRow, column: number, width: number, now: number): Seg[][] {
  const { step } = row;
  const waiting = step.state === "waiting";
  const id = clean(step.id);
  const room = Math.max(1, column - Array.from(row.prefix).length);
  const parts: Seg[] = [
    seg(`  ${row.prefix}`, { dim: true }),
    seg(fit(id, room), { bold: !waiting, dim: waiting }),
    seg(" "),
    stateSeg(step.state, 10),
  ];
  const facts: string[] = [];
  if (step.items !== null) facts.push(`items ${step.items.done}/${step.items.total}`);
  const attempts = waiting
    ? null
    : step.state === "cancelled" && step.attempts === 0
    ? "not run"
    : attemptsText(step.attempts, step.maxAttempts);
  if (attempts !== null) facts.push(attempts);
  if (step.nextAttemptAt !== null) facts.push(nextAttemptText(step.nextAttemptAt, now));
  if (step.resultBytes !== null) facts.push(`result ${bytesText(step.resultBytes)}`);
  if (step.jobId !== null) facts.push(`job ${step.jobId}`);
  if (facts.length > 0) parts.push(seg(` ${facts.join("  ")}`));
  const notes: string[] = [];
  const others = step.dependsOn.filter((d) => d !== row.parent);
  if (others.length > 0) notes.push(`after ${others.map(clean).join(", ")}`);
  if (step.forEach !== null) notes.push(`for each of ${clean(step.forEach)}`);
  if (step.optional) notes.push("optional");
  if (step.useCase !== null && step.useCase !== step.id) notes.push(clean(step.useCase));
  if (step.compensation?.mode === "use-case") {
    notes.push(`undo: ${clean(step.compensation.useCase)}`);
  } else if (step.compensation?.mode === "none") {
    notes.push(`no undo: ${clean(step.compensation.reason)}`);
  }
  if (notes.length === 0) return [parts];
  const note = seg(`(${notes.join("; ")})`, { dim: true });
  const length = (segs: Seg[]) => segs.reduce((n, s) => n + Array.from(clean(s.text)).length, 0);
  if (length(parts) + 2 + length([note]) <= width) return [[...parts, seg("  "), note]];
  return [parts, [seg(`  ${row.under}`, { dim: true }), note]];
}

function compensationLines(c: CompensationRunView, index: number, now: number): Seg[][] {
  const facts = [
    attemptsText(c.attempts, c.maxAttempts),
    c.nextAttemptAt === null ? null : nextAttemptText(c.nextAttemptAt, now),
    c.jobId === null ? null : `job ${c.jobId}`,
  ].filter((f) => f !== null);
  const lines: Seg[][] = [[
    seg(`  ${index + 1}. undo `),
    seg(clean(c.step), { bold: true }),
    seg("  "),
    stateSeg(c.state, 10),
    seg(facts.length === 0 ? "" : ` ${facts.join("  ")}`),
    seg(c.useCase === null ? "" : `  with ${clean(c.useCase)}`, { dim: true }),
  ]];
  if (c.error !== null) {
    lines.push([seg("       error: "), seg(errorLine(c.error), { color: "red" })]);
  }
  return lines;
}
