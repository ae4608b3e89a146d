/**
 * The workflows screen by frame (ink-testing-library) and as coloured
 * lines: the runs list's columns, a run's steps as a tree under their
 * dependencies with attempts, items and result sizes, the compensation
 * trail in the order it ran, the state colours, and stored text cleaned.
 */

import assert from "node:assert/strict";
import { render } from "ink-testing-library";
import type { ReactElement } from "react";
import type { WorkflowRunView } from "../../src/admin/workflows.ts";
import { runCounts } from "../../src/tui/data.ts";
import { plain, type Seg } from "../../src/tui/seg.ts";
import {
  runLines,
  treeRows,
  WorkflowRunPane,
  workflowsLines,
  WorkflowsList,
  type WorkflowsListProps,
} from "../../src/tui/workflows/view.tsx";
import { fixtureRun, fixtureRuns, fixtureStep, NOW, summaryOf } from "./fixtures.ts";

/** The frame of `tree` on a terminal `columns` wide, as lines. */
function frameOf(tree: ReactElement, columns: number): string[] {
  const r = render(tree);
  Object.defineProperty(r.stdout, "columns", { value: columns, configurable: true });
  r.rerender(tree);
  const frame = r.lastFrame() ?? "";
  r.unmount();
  return frame.split("\n");
}

function runPane(view: WorkflowRunView, width = 80, height = 22, scroll = 0): string[] {
  return frameOf(
    <WorkflowRunPane
      view={view}
      id={view.run.id}
      scroll={scroll}
      width={width}
      height={height}
      now={NOW}
    />,
    width,
  );
}

function runsProps(overrides: Partial<WorkflowsListProps> = {}): WorkflowsListProps {
  const runs = fixtureRuns();
  return {
    runs: runs.map(summaryOf),
    counts: runCounts(runs.map((v) => ({ state: v.run.state, count: 1 }))),
    runState: null,
    page: 1,
    cursor: 1,
    width: 80,
    height: 10,
    now: NOW,
    ...overrides,
  };
}

/** The segment of `line` whose text, trimmed, is `text`. */
function segOf(lines: Seg[][], line: RegExp, text: string): Seg {
  const found = lines.find((l) => line.test(plain(l)));
  assert.ok(found, `no line ${line} in:\n${lines.map(plain).join("\n")}`);
  const s = found.find((s) => s.text.trim() === text);
  assert.ok(s, `no segment "${text}" in ${JSON.stringify(found)}`);
  return s;
}

Deno.test("the runs list at 80 columns shows id, workflow, state, steps done/total, started, age and why it failed", () => {
  const lines = frameOf(<WorkflowsList {...runsProps()} />, 80);
  assert.equal(lines.length, 10);
  for (const line of lines) assert.ok(Array.from(line).length <= 80, line);
  assert.equal(lines[0], "runs any state · page 1 · 1 completed · 1 compensated · 1 failed");
  assert.match(lines[1]!, /^ {2}RUN\s+WORKFLOW\s+STATE\s+STEPS\s+STARTED UTC\s+AGE\s+ERROR$/);
  assert.match(
    lines[2]!,
    /^ {2}3\s+lend-copy\s+compensated\s+2\/3 ✗1\s+03-08 11:57\s+2m30s\s+step "notify/,
  );
  assert.match(
    lines[3]!,
    /^> 2\s+import-file\s+failed\s+2\/5 ✗1\s+03-08 11:00\s+1h\s+step "load" di…$/,
  );
  assert.match(
    lines[4]!,
    /^ {2}1\s+lend-copy\s+completed\s+3\/3\s+03-08 11:57\s+2m30s\s+key lend@/,
  );
});

Deno.test("the runs list's states are coloured: failed red, completed green, compensating magenta, cancelled grey", () => {
  const runs = [
    fixtureRun({ id: 4, workflow: "a", state: "compensating" }),
    fixtureRun({ id: 3, workflow: "b", state: "cancelled" }),
    fixtureRun({ id: 2, workflow: "c", state: "failed" }),
    fixtureRun({ id: 1, workflow: "d", state: "completed" }),
    fixtureRun({ id: 0, workflow: "e", state: "running" }),
  ];
  const lines = workflowsLines(runsProps({ runs: runs.map(summaryOf) }));
  const color = (state: string) =>
    segOf(lines, new RegExp(`^. \\d\\s+\\w\\s+${state}`), state).color;
  assert.equal(color("compensating"), "magenta");
  assert.equal(color("cancelled"), "gray");
  assert.equal(color("failed"), "red");
  assert.equal(color("completed"), "green");
  assert.equal(color("running"), "yellow");
});

Deno.test("the runs list says when nothing matches, and which state it lists", () => {
  const lines = workflowsLines(runsProps({ runs: [], runState: "failed" })).map(plain);
  assert.match(lines[0]!, /^runs state:failed · page 1 · /);
  assert.equal(lines[2], "  no failed runs (f: next state, esc: any state)");
  assert.equal(
    workflowsLines(runsProps({ runs: null }))[2]!.map((s) => s.text).join(""),
    "  loading…",
  );
});

Deno.test("a run's steps are drawn as a tree, each under the dependency it waits on last", () => {
  const failed = fixtureRuns()[1]!;
  const lines = runPane(failed);
  const start = lines.findIndex((l) => l.startsWith("steps (5)"));
  assert.equal(lines[start], "steps (5)  2 completed, 1 discarded, 1 cancelled, 1 waiting");
  assert.deepEqual(lines.slice(start + 1, start + 8), [
    "  fetch              completed  attempt 1/3  result 300 B  job 21",
    "  ├─ split           completed  attempt 1/3  result 1.2 KiB  job 22",
    "  │  └─ load         discarded  items 200/200  attempt 3/3  (for each of split)",
    "  │     │  error: row 600: bad date",
    "  │     └─ reconcile cancelled  not run  (after fetch)",
    "  │           error: upstream failed",
    "  └─ report          waiting     (optional)",
  ]);
  assert.deepEqual(
    treeRows(failed.steps).map((r) => [r.step.id, r.parent, r.depth]),
    [
      ["fetch", null, 0],
      ["split", "fetch", 1],
      ["load", "split", 2],
      ["reconcile", "load", 3],
      ["report", "fetch", 1],
    ],
  );
});

Deno.test("step states are coloured: completed green, running yellow, waiting dim, discarded red, cancelled grey", () => {
  const view = fixtureRun({ id: 9, workflow: "mix", state: "running" }, {
    steps: [
      fixtureStep({ id: "a" }),
      fixtureStep({ id: "b", state: "running", dependsOn: ["a"], resultBytes: null }),
      fixtureStep({ id: "c", state: "waiting", dependsOn: ["b"], resultBytes: null }),
      fixtureStep({ id: "d", state: "discarded", dependsOn: ["a"], optional: true }),
      fixtureStep({ id: "e", state: "cancelled", dependsOn: ["d"] }),
    ],
  });
  const lines = runLines({ view, id: 9, scroll: 0, width: 100, height: 30, now: NOW });
  const style = (step: string, state: string) => {
    const s = segOf(lines, new RegExp(`${step}\\s+${state}`), state);
    return { color: s.color, dim: s.dim ?? false };
  };
  assert.deepEqual(style("a", "completed"), { color: "green", dim: false });
  assert.deepEqual(style("b", "running"), { color: "yellow", dim: false });
  assert.deepEqual(style("c", "waiting"), { color: undefined, dim: true });
  assert.deepEqual(style("d", "discarded"), { color: "red", dim: false });
  assert.deepEqual(style("e", "cancelled"), { color: "gray", dim: false });
  assert.equal(segOf(lines, /^run 9 mix/, "running").color, "yellow");
  const compensating = runLines({
    view: fixtureRun({ id: 8, workflow: "saga", state: "compensating" }, { saga: true }),
    id: 8,
    scroll: 0,
    width: 80,
    height: 20,
    now: NOW,
  });
  assert.equal(segOf(compensating, /^run 8 saga/, "compensating").color, "magenta");
  assert.match(compensating.map(plain).join("\n"), /compensations {2}none has ended yet/);
});

Deno.test("a saga's run shows its compensation trail in the order it ran, with attempts and jobs", () => {
  const lines = runPane(fixtureRuns()[0]!, 140);
  const trail = lines.findIndex((l) => l.startsWith("compensations (2)"));
  assert.ok(trail > 0, lines.join("\n"));
  assert.deepEqual(lines.slice(trail, trail + 3), [
    "compensations (2)  in the order they ran, the reverse of completion",
    "  1. undo charge-fee  completed  attempt 1/3  job 34  with use-case/billing.refund-fee",
    "  2. undo place-hold  completed  attempt 2/3  job 35  with use-case/lending.cancel-hold",
  ]);
  assert.match(lines[0]!, /^run 3 lend-copy {2}saga {2}compensated/);
  assert.ok(lines.includes(`error      step "notify" discarded: notify.internal answered 503`));
  // Each step's use case and what undoes it, on the step's line when it fits.
  assert.ok(
    lines.some((l) =>
      /└─ charge-fee completed {2}attempt 1\/3 {2}result 12 B {2}job 32 {2}\(use-case\/billing\.charge-fee; undo: use-case\/billing\.refund-fee\)/
        .test(l)
    ),
    lines.join("\n"),
  );
});

Deno.test("at 80 columns a step's notes go under it and no line is wider than the terminal", () => {
  const lines = runPane(fixtureRuns()[0]!, 80, 30);
  for (const line of lines) assert.ok(Array.from(line).length <= 80, line);
  const at = lines.findIndex((l) => l.includes("└─ notify  discarded"));
  assert.equal(
    lines[at + 1],
    "           (use-case/lending.notify; no undo: a sent notice cannot be recalled)",
  );
  assert.equal(lines[at + 2], "           error: notify.internal answered 503");
});

Deno.test("a run scrolls, never past its last line, and says so while it is not read", () => {
  const view = fixtureRuns()[1]!;
  const all = runLines({ view, id: 2, scroll: 0, width: 80, height: 6, now: NOW }).length;
  const bottom = runPane(view, 80, 6, 1000);
  assert.equal(bottom.length, 6);
  assert.equal(bottom.at(-1), "  └─ report          waiting     (optional)");
  assert.equal(runPane(view, 80, 6, 1)[0], "started    2026-03-08T11:00:00.000Z (1h ago)");
  assert.ok(all > 6);
  const missing = frameOf(
    <WorkflowRunPane view={null} id={77} scroll={0} width={80} height={3} now={NOW} />,
    80,
  );
  assert.equal(missing[0], "workflow run 77: loading, or no longer in the store");
});

Deno.test("stored text of a run is shown escaped: no control character reaches the terminal", () => {
  const evil = "\x1b[2J\x1b]0;owned\x07";
  const view = fixtureRun({
    id: 5,
    workflow: `wf${evil}`,
    state: "failed",
    error: `e${evil}`,
    key: `k${evil}`,
  }, {
    steps: [fixtureStep({ id: `s${evil}`, state: "discarded", error: `x${evil}\nsecond line` })],
  });
  const frames = [
    ...runPane(view),
    ...frameOf(<WorkflowsList {...runsProps({ runs: [summaryOf(view)], cursor: 0 })} />, 80),
  ];
  for (const line of frames) {
    assert.ok(!line.includes("\x1b") && !line.includes("\x07"), JSON.stringify(line));
  }
  assert.match(frames.join("\n"), /run 5 wf\\x1b\[2J\\x1b\]0;owned\\x07/);
  assert.match(frames.join("\n"), /error: x\\x1b\[2J/);
});

Deno.test("a step waiting to retry shows when its next attempt is, in UTC and from now (issue 26.2)", () => {
  const view = fixtureRun({ id: 4, workflow: "lend-copy", state: "running" }, {
    saga: true,
    steps: [
      fixtureStep({
        id: "place-hold",
        state: "running",
        jobId: 41,
        attempts: 1,
        maxAttempts: 2,
        nextAttemptAt: NOW + 35_000,
        resultBytes: null,
        finishedAt: null,
      }),
    ],
  });
  const lines = runPane(view, 120);
  assert.ok(
    lines.some((l) =>
      /^ {2}place-hold running {4}attempt 1\/2 {2}next attempt 2026-03-08T12:00:35Z, in 35 s {2}job 41/
        .test(l)
    ),
    lines.join("\n"),
  );
});

Deno.test("the screen shows a command's stderr on one line and an operator's cancel once, as jobs workflows does (issue 26.12)", () => {
  const error =
    'step "hold" discarded: command "sh" exited with code 3\nstderr:\nbad \x1b]0;x\x07\nno room';
  const failed = fixtureRun({ id: 7, workflow: "s", state: "failed", error }, {
    steps: [fixtureStep({ id: "hold", state: "discarded", error: error.slice(23) })],
  });
  const listed = workflowsLines(runsProps({ runs: [summaryOf(failed)], cursor: 0, width: 140 }))
    .map(plain);
  assert.match(listed[2]!, /code 3; stderr: …no room$/);
  const pane = runLines({ view: failed, id: 7, scroll: 0, width: 140, height: 40, now: NOW })
    .map(plain);
  assert.ok(
    pane.includes(
      'error      step "hold" discarded: command "sh" exited with code 3; stderr: …no room',
    ),
  );
  assert.ok(
    pane.some((l) => l.endsWith('error: command "sh" exited with code 3; stderr: …no room')),
  );
  assert.ok(!pane.join("\n").includes("\\n") && !pane.join("\n").includes("\x1b"));

  const cancelled = fixtureRun({
    id: 8,
    workflow: "import",
    state: "cancelled",
    error: "cancelled: wrong file",
    cancelReason: "wrong file",
  }, {
    steps: [
      fixtureStep({
        id: "load",
        state: "cancelled",
        attempts: 0,
        maxAttempts: null,
        resultBytes: null,
      }),
    ],
  });
  const lines = runLines({ view: cancelled, id: 8, scroll: 0, width: 100, height: 40, now: NOW })
    .map(plain);
  assert.equal(lines.filter((l) => l.includes("wrong file")).length, 1, lines.join("\n"));
  assert.ok(lines.some((l) => /^ {2}load +cancelled +not run$/.test(l)), lines.join("\n"));
});
