/**
 * The dashboard by frame, with ink-testing-library on fixture data: a frame
 * per screen at 80x24, keys driving navigation, paging and the
 * confirmation flow, read-only refusal, the unreachable-store banner, and
 * hostile stored text rendered harmlessly.
 */

import assert from "node:assert/strict";
import { render } from "ink-testing-library";
import type { ReactElement } from "react";
import { FakeClock } from "../../src/clock.ts";
import { waitUntil } from "../../src/testing.ts";
import { App } from "../../src/tui/app.tsx";
import { parseSearch } from "../../src/tui/search.ts";
import type { Tab } from "../../src/tui/state.ts";
import {
  fixtureData,
  fixtureJob,
  type FixtureState,
  fixtureState,
  manyJobs,
  NOW,
  recordingActions,
} from "./fixtures.ts";

const ENTER = "\r";
const ESC = "\x1b";
const DOWN = "\x1b[B";

/** Renders `tree` on a terminal `columns` x `rows` (ink-testing-library starts at 100 columns). */
function renderAt(tree: ReactElement, columns = 80, rows = 24) {
  const r = render(tree);
  Object.defineProperty(r.stdout, "columns", { value: columns, configurable: true });
  Object.defineProperty(r.stdout, "rows", { value: rows, configurable: true });
  r.stdout.emit("resize");
  return r;
}

function dashboard(
  options: {
    state?: FixtureState;
    readOnly?: boolean;
    tab?: Tab;
    color?: boolean;
    columns?: number;
    rows?: number;
    program?: string;
    /** The store's location in the title bar. @default "./jobs.db" */
    location?: string;
    note?: string;
  } = {},
) {
  const state = options.state ?? fixtureState();
  const clock = new FakeClock(NOW);
  const fixture = fixtureData(state);
  const { queries, counts } = fixture;
  const data = {
    ...fixture.data,
    location: options.location ?? fixture.data.location,
    note: options.note,
  };
  const { actions, calls } = recordingActions();
  const r = renderAt(
    <App
      data={data}
      actions={actions}
      clock={clock}
      program={options.program ?? "jobsctl"}
      readOnly={options.readOnly ?? false}
      color={options.color ?? false}
      initialTab={options.tab ?? "overview"}
    />,
    options.columns,
    options.rows,
  );
  /** Waits for a frame containing every one of `texts`; returns it. */
  const frame = (...texts: string[]) =>
    waitUntil(`a frame with ${texts.map((t) => JSON.stringify(t)).join(", ")}`, () => {
      const last = r.lastFrame() ?? "";
      return texts.every((t) => last.includes(t)) ? last : null;
    });
  /** Types `keys` one at a time. */
  const press = (...keys: string[]) => {
    for (const key of keys) r.stdin.write(key);
  };
  return { r, state, clock, calls, queries, counts, frame, press };
}

/** Every line of `frame` fits `columns`, and there are exactly `rows` lines. */
function assertFits(frame: string, columns: number, rows: number) {
  const lines = frame.split("\n");
  assert.equal(lines.length, rows, `the frame has ${lines.length} lines:\n${frame}`);
  for (const line of lines) {
    assert.ok(Array.from(line).length <= columns, `line wider than ${columns}: ${line}`);
  }
}

Deno.test("overview at 80x24 shows each queue's counts, pause, concurrency, throughput, nodes and schedules needing attention", async () => {
  const d = dashboard();
  const frame = await d.frame("default", "mail", "host-a:100");
  assertFits(frame, 80, 24);
  assert.match(frame, /\[1 Overview\]/);
  assert.match(frame, /> default\s+run\s+4\/4/);
  assert.match(frame, /mail\s+PAUSED/);
  assert.match(frame, /heartbeat 2s ago/);
  assert.match(frame, /hourly\s+disabled by alice 10m ago: vendor outage/);
  // The sparkline's last minutes are non-empty, and the total is written out.
  assert.match(frame, /[▁▂▃▄▅▆▇█]\s+6 /);
  assert.match(frame, /store sqlite \.\/jobs\.db: reachable/);
  d.r.unmount();
});

Deno.test("the dashboard uses a larger terminal and follows a resize", async () => {
  const d = dashboard({ columns: 140, rows: 40 });
  let frame = await d.frame("default", "done/min");
  assertFits(frame, 140, 40);
  Object.defineProperty(d.r.stdout, "columns", { value: 80, configurable: true });
  Object.defineProperty(d.r.stdout, "rows", { value: 24, configurable: true });
  d.r.stdout.emit("resize");
  frame = await waitUntil("a frame of 24 lines", () => {
    const last = d.r.lastFrame() ?? "";
    return last.split("\n").length === 24 ? last : null;
  });
  assertFits(frame, 80, 24);
  d.r.unmount();
});

Deno.test("the tab bar keeps a PostgreSQL store's host, database and schema at 80, 60 and 50 columns, never its password (issue 26.12)", async () => {
  const location = "postgres://postgres:s3cret@127.0.0.1:5432/test?schema=foo&sslmode=require";
  const tabs = async (columns: number, readOnly = false, note?: string) => {
    const d = dashboard({ columns, location, readOnly, note });
    const frame = await d.frame("host-a:100");
    d.r.unmount();
    assertFits(frame, columns, 24);
    assert.doesNotMatch(frame, /s3cret/);
    return frame.split("\n")[0];
  };
  // The keys alone leave room for every part but the user, the password and sslmode.
  assert.equal(
    await tabs(80),
    "jobs [1 Overview] 2 3 4 5 6 7  postgres://127.0.0.1:5432/test?schema=foo",
  );
  assert.equal(await tabs(60), "jobs [1 Overview] 2 3 4 5 6 7  127.0.0.1/test?schema=foo");
  assert.equal(
    await tabs(60, true),
    "jobs [1 Overview] 2 3 4 5 6 7  READ-ONLY  1…/test?schema=foo",
  );
  assert.equal(
    await tabs(80, true, " (MOVED to postgres://db2/jobs: read only)"),
    "jobs [1 Overview] 2 3 4 5 6 7  READ-ONLY  127.0.0.1/test?schema=foo (MOVED to p…",
    "the location before the note",
  );
  assert.equal(await tabs(50), "jobs [1 Overview] 2 3 4 5 6 7  1…1/test?schema=foo");
});

Deno.test("the header's rule is the terminal's width on every screen, at 80x24, 100x30 and 140x40", async () => {
  for (const [columns, rows] of [[80, 24], [100, 30], [140, 40]] as const) {
    const d = dashboard({ columns, rows });
    const screens = [await d.frame("host-a:100")];
    d.press("2");
    screens.push(await d.frame("[2 Jobs]", "> 30"));
    d.press("3");
    screens.push(await d.frame("[3 Schedules]", "── nightly "));
    d.press("4");
    screens.push(await d.frame("[4 Dead letters]", "connection refused"));
    for (const screen of screens) {
      assertFits(screen, columns, rows);
      const lines = screen.split("\n");
      assert.equal(lines[1], "─".repeat(columns), `no whole rule under the tabs:\n${screen}`);
      for (const line of lines.filter((l) => l.includes("──"))) {
        assert.equal(Array.from(line).length, columns, `a rule not the width: ${line}`);
        assert.ok(line.endsWith("─"), `a cut rule: ${line}`);
      }
    }
    d.r.unmount();
  }
});

Deno.test("the jobs view says page 2 of 8 · 391 jobs match, and counts again for a new filter", async () => {
  // 56 rows leave 50 for a page.
  const d = dashboard({ state: fixtureState(manyJobs(391)), tab: "jobs", rows: 56 });
  await d.frame("filter all jobs · newest first · page 1 of 8 · 391 jobs match", "> 391");
  d.press("n");
  await d.frame("page 2 of 8 · 391 jobs match", "> 341");
  d.press("/");
  for (const c of "state:discarded") d.press(c);
  d.press(ENTER);
  await d.frame("filter state:discarded · newest first · page 1 of 2 · 55 jobs match", "> 385");
  assert.deepEqual(d.counts.at(-1), { states: ["discarded"] });
  d.r.unmount();
});

Deno.test("number keys switch screens: jobs, schedules with DST notes, dead letters", async () => {
  const d = dashboard();
  await d.frame("host-a:100");
  d.press("2");
  let frame = await d.frame("[2 Jobs]", "filter all jobs");
  assertFits(frame, 80, 24);
  assert.match(frame, /> 30\s+available/);
  d.press("3");
  frame = await d.frame("[3 Schedules]", "nightly");
  assertFits(frame, 80, 24);
  assert.match(frame, /cron "30 2 \* \* \*"\s+America\/New_York/);
  assert.match(frame, /gap shift, overlap first: runs after the New York close/);
  assert.match(frame, /shifted: 02:30 does not exist on 2026-03-08/);
  assert.match(frame, /hourly\s+cron "0 \* \* \* \*"\s+UTC\s+disabled/);
  d.press("4");
  frame = await d.frame("[4 Dead letters]", "connection refused");
  assert.match(frame, /3 send-mail/);
  d.press("?");
  frame = await d.frame("Keys", "bulk retry or discard");
  d.press("x");
  await d.frame("[4 Dead letters]");
  d.r.unmount();
});

Deno.test("5 lists the workflow runs at 80x24; Enter draws a run's steps as a tree; r retries it after a reason and y", async () => {
  const d = dashboard();
  await d.frame("host-a:100");
  d.press("5");
  let frame = await d.frame("[5 Workflows]", "> 3");
  assertFits(frame, 80, 24);
  assert.match(frame, /runs any state · page 1 · 1 completed · 1 compensated · 1 failed/);
  assert.match(frame, /> 3\s+lend-copy\s+compensated\s+2\/3 ✗1/);
  assert.match(frame, /⏎ open run · r retry · c cancel/);
  d.press("j", ENTER);
  frame = await d.frame("run 2 import-file", "steps (5)");
  assertFits(frame, 80, 24);
  assert.match(frame, /│ {2}└─ load\s+discarded\s+items 200\/200\s+attempt 3\/3/);
  assert.match(frame, /└─ report\s+waiting/);
  assert.match(frame, /j\/k scroll · r retry · c cancel · esc back/);
  d.press("r");
  await d.frame("Reason to retry workflow run 2 (import-file) (required):");
  d.press(..."bad dates fixed");
  d.press(ENTER);
  frame = await d.frame("Retry workflow run 2?", "reason: bad dates fixed", "y yes");
  assert.match(frame, /run 2\s+import-file\s+failed/);
  d.press("y");
  await d.frame("retried workflow run 2 (import-file): failed -> running; 1 job to run again");
  assert.deepEqual(d.calls, [
    { kind: "workflow", action: "retry", id: 2, reason: "bad dates fixed" },
  ]);
  d.press(ESC);
  await d.frame("> 2 ");
  d.press("k", "r");
  await d.frame("workflow run 3 (lend-copy) is compensated, not failed: nothing to retry");
  assert.equal(d.calls.length, 1);
  d.r.unmount();
});

Deno.test("6 lists the pipelines at 80x24 with their freshness and drops; Enter opens one; Esc goes back", async () => {
  const d = dashboard();
  let frame = await d.frame("host-a:100");
  assert.match(frame, / 6 Pipes /, "the tab bar names the pipelines, short at 80 columns");
  d.press("6");
  frame = await d.frame("[6 Pipelines]", "> catalog");
  assertFits(frame, 80, 24);
  assert.match(frame, /> catalog\s+STALE 2h\s+41\s+completed\s+2h ago/);
  assert.match(frame, /dropped 1h: none {3}1d: duplicate 12 · below-threshold 3/);
  assert.match(frame, /bank\s+advisory \(erp\)\s+7\s+failed/);
  assert.match(frame, /j\/k · ⏎ open pipeline · 1-7 views · \? help · q quit/);
  d.press(DOWN, ENTER);
  frame = await d.frame("pipeline bank  7 runs in the store", "error: sink answered 503");
  assertFits(frame, 80, 24);
  assert.match(frame, /freshness {2}advisory: erp is right; last complete run 1h ago/);
  assert.match(frame, /j\/k scroll · esc back/);
  d.press(ESC);
  frame = await d.frame("> bank");
  assert.match(frame, /PIPELINE\s+FRESHNESS/);
  d.r.unmount();
});

Deno.test("j/k move the cursor and Enter opens a job's detail with attempts and audit trail", async () => {
  const state = fixtureState();
  state.attempts[29] = [{
    jobId: 29,
    attempt: 1,
    fence: 7,
    node: "host-a:100",
    kind: "run",
    actor: null,
    reason: null,
    startedAt: NOW - 5000,
    finishedAt: NOW - 4000,
    outcome: "retryable",
    error: "timeout after 30s",
    output: "line 1\nline 2\n",
    definition: null,
  }];
  state.audit[29] = [{
    id: 1,
    at: NOW - 3000,
    actor: "alice",
    action: "job.retry",
    target: "job:29",
    reason: "vendor back",
    details: {},
  }];
  const d = dashboard({ state, tab: "jobs" });
  await d.frame("> 30");
  d.press("j");
  await d.frame("> 29");
  d.press(ENTER);
  const frame = await d.frame("job 29", "attempts (1)");
  assert.match(frame, /#1 run on host-a:100, fence 7: retryable/);
  assert.match(frame, /error: timeout after 30s/);
  assert.match(frame, /\| line 2/);
  assert.match(frame, /alice\s+job\.retry: vendor back/);
  d.press(ESC);
  await d.frame("> 29", "filter all jobs");
  d.r.unmount();
});

Deno.test("the jobs list pages with keyset `after` and never asks for more than a page", async () => {
  const d = dashboard({ state: fixtureState(), tab: "jobs" });
  await d.frame("> 30");
  const pageSize = 24 - 4 - 2;
  assert.equal(d.queries.at(-1)?.limit, pageSize);
  d.press("n");
  await d.frame("page 2", `> ${30 - pageSize}`);
  assert.equal(d.queries.at(-1)?.after, 30 - pageSize + 1);
  d.press("b");
  await d.frame("page 1", "> 30");
  // j past the last row opens the next page.
  for (let i = 0; i < pageSize; i++) d.press(DOWN);
  await d.frame("page 2");
  d.r.unmount();
});

Deno.test("f picks states and a queue, / searches, and Esc clears the filters", async () => {
  const d = dashboard({ tab: "jobs" });
  await d.frame("> 30");
  d.press("f");
  await d.frame("List the jobs of: every state; any queue", "(•) any queue", "( ) mail");
  d.press(" ", "j", " "); // scheduled, then available
  await d.frame("[x] scheduled", "[x] available");
  d.press(ENTER);
  let frame = await d.frame("filter state:scheduled,available", "> 30");
  assert.match(frame, /^ {2}29\s+scheduled/m);
  assert.doesNotMatch(frame, /discarded|completed/);
  d.press("/");
  await d.frame("Search jobs", "[state:scheduled,available]");
  d.press("\x7f");
  for (const c of "queue:mail refused") d.press(c);
  d.press(ENTER);
  frame = await d.frame('filter queue:mail search:"refused"');
  assert.match(frame, /> 28\s+discarded mail/);
  assert.match(frame, /^ {2}14\s+discarded mail/m);
  assert.deepEqual(d.queries.at(-1)?.filter, { queue: "mail", search: "refused" });
  d.press(ESC);
  await d.frame("filter all jobs", "filters cleared");
  d.r.unmount();
});

Deno.test("retry asks first: n changes nothing, y calls the action with the job and says what changed", async () => {
  const d = dashboard({ tab: "jobs" });
  await d.frame("> 30");
  d.press("j", "j"); // 28: discarded
  await d.frame("> 28");
  d.press("r");
  let frame = await d.frame("Retry job 28?", "y yes");
  assert.match(frame, /It becomes available now/);
  d.press("n");
  await d.frame("not confirmed; nothing changed");
  assert.deepEqual(d.calls, []);
  d.press("r");
  await d.frame("Retry job 28?");
  d.press("y");
  frame = await d.frame("retried job 28 (was discarded)");
  assert.deepEqual(d.calls, [{ kind: "jobs", action: "retry", ids: [28] }]);
  // A job the action does not apply to is refused without asking.
  d.press("j", "j", "c"); // 26: completed
  await d.frame("job 26 is already completed: nothing to cancel");
  assert.equal(d.calls.length, 1);
  d.r.unmount();
});

Deno.test("keys that arrive in one chunk act one by one: `jjr` asks to retry the job two rows down", async () => {
  const d = dashboard({ tab: "jobs" });
  await d.frame("> 30");
  d.press("jjr");
  await d.frame("Retry job 28?");
  d.press("n");
  await d.frame("not confirmed");
  d.press("pvendor fixed\ry");
  await d.frame("replayed job 28");
  assert.deepEqual(d.calls, [{ kind: "replay", id: 28, reason: "vendor fixed" }]);
  d.press("3");
  await d.frame("[3 Schedules]");
  d.r.unmount();
});

Deno.test("read-only mode refuses every action before asking anything", async () => {
  const d = dashboard({ tab: "jobs", readOnly: true });
  let frame = await d.frame("> 30", "READ-ONLY");
  for (const key of ["r", "c", "d", "p", "B"]) {
    d.press(key);
    frame = await d.frame("read-only mode:");
    assert.doesNotMatch(frame, /y yes/);
  }
  d.press("1");
  await d.frame("[1 Overview]", "> default");
  d.press("P");
  await d.frame("read-only mode: pause refused; nothing changed");
  d.press("3");
  await d.frame("[3 Schedules]");
  d.press("R");
  await d.frame("read-only mode: run now refused");
  d.press("x");
  await d.frame("read-only mode: disable refused");
  assert.deepEqual(d.calls, []);
  d.r.unmount();
});

Deno.test("replay asks for a reason, then confirms and passes it on", async () => {
  const d = dashboard({ tab: "jobs" });
  await d.frame("> 30");
  d.press("j", "j");
  await d.frame("> 28");
  d.press("p");
  await d.frame("Reason for replaying job 28");
  d.press(ENTER);
  await d.frame("a replay needs a reason; nothing changed");
  d.press("p");
  await d.frame("Reason for replaying job 28");
  for (const c of "vendor fixed") d.press(c);
  await d.frame("> vendor fixed");
  d.press(ENTER);
  await d.frame("Replay job 28?", "reason: vendor fixed");
  d.press("y");
  await d.frame("replayed job 28: it was discarded");
  assert.deepEqual(d.calls, [{ kind: "replay", id: 28, reason: "vendor fixed" }]);
  d.r.unmount();
});

Deno.test("bulk retry previews every affected job of the filtered set, then acts on it", async () => {
  const d = dashboard({ tab: "jobs" });
  await d.frame("> 30");
  d.press("B");
  await d.frame("bulk acts on a filtered set");
  d.press("/");
  await d.frame("Search jobs");
  for (const c of "state:discarded") d.press(c);
  d.press(ENTER);
  await d.frame("filter state:discarded", "> 28");
  d.press("B");
  await d.frame("Bulk action on the filtered jobs (state:discarded)");
  d.press("r");
  // Jobs 7, 14, 21, 28 are discarded: every one is listed before anything changes.
  const frame = await d.frame("Retry 4 jobs? Every affected job:");
  for (const id of [7, 14, 21, 28]) assert.match(frame, new RegExp(`#${id}\\s+discarded`));
  assert.equal(d.queries.at(-1)?.limit, 1000);
  assert.equal(d.queries.at(-1)?.desc, false);
  assert.deepEqual(d.calls, []);
  d.press("y");
  await d.frame("retried 4 jobs");
  assert.deepEqual(d.calls, [{ kind: "jobs", action: "retry", ids: [7, 14, 21, 28] }]);
  d.r.unmount();
});

Deno.test("P pauses or resumes the selected queue after confirmation", async () => {
  const d = dashboard();
  await d.frame("> default");
  d.press("P");
  await d.frame("Pause queue default for every process on the store?");
  d.press("y");
  await d.frame("queue default paused for every process on the store");
  d.press("j");
  await d.frame("> mail");
  d.press("P");
  await d.frame("Resume queue mail");
  d.press("y");
  await d.frame("queue mail resumed");
  assert.deepEqual(d.calls, [
    { kind: "queue", queue: "default", paused: true },
    { kind: "queue", queue: "mail", paused: false },
  ]);
  d.r.unmount();
});

Deno.test("R runs a schedule now and x disables or enables one, each with a reason", async () => {
  const d = dashboard({ tab: "schedules" });
  await d.frame("> nightly");
  d.press("R");
  await d.frame("Reason for running nightly now");
  d.press(ENTER);
  await d.frame("Run schedule nightly now?");
  d.press("y");
  await d.frame("ran nightly now: job 99");
  d.press("x");
  await d.frame("Reason to disable nightly (required)");
  for (const c of "db maintenance") d.press(c);
  d.press(ENTER);
  await d.frame("Disable schedule nightly?");
  d.press("y");
  await d.frame("schedule nightly disabled");
  d.press("j");
  await d.frame("> hourly");
  d.press("x");
  await d.frame("Reason to enable hourly");
  for (const c of "vendor back") d.press(c);
  d.press(ENTER, "y");
  await d.frame("schedule hourly enabled");
  assert.deepEqual(d.calls, [
    { kind: "run", id: "nightly", reason: null },
    { kind: "schedule", id: "nightly", enabled: false, reason: "db maintenance" },
    { kind: "schedule", id: "hourly", enabled: true, reason: "vendor back" },
  ]);
  d.r.unmount();
});

Deno.test("an unreachable store shows a banner over the last data, and the next refresh recovers", async () => {
  const d = dashboard();
  await d.frame("> default");
  d.state.failWith = "database is locked";
  d.clock.advance(1000);
  let frame = await d.frame("STORE UNREACHABLE", "database is locked");
  assert.match(frame, /> default\s+run/, "the last data stays on screen");
  assert.match(frame, /showing data read 1s ago/);
  d.state.failWith = null;
  d.clock.advance(1000);
  frame = await waitUntil("the banner to go", () => {
    const last = d.r.lastFrame() ?? "";
    return last.includes("STORE UNREACHABLE") ? null : last;
  });
  assert.match(frame, /> default\s+run/);
  d.r.unmount();
});

Deno.test("the overview is read again every second of the injected clock", async () => {
  const d = dashboard();
  await d.frame("> default");
  d.state.overview = {
    ...d.state.overview,
    queues: d.state.overview.queues.map((q) => ({ ...q, paused: q.name === "default" })),
  };
  d.clock.advance(1000);
  await d.frame("default  PAUSED");
  d.r.unmount();
});

/** Stored text that would retitle the window, clear the screen and write the clipboard. */
const HOSTILE = ["\x1b]0;owned\x07", "\x1b[2J", "\x1b]52;c;aGVsbG8=\x07", "\u202e"];

function hostileState(): FixtureState {
  const evil = HOSTILE.join("");
  const job = fixtureJob({
    id: 7,
    state: "discarded",
    queue: `q${evil}`,
    worker: `w${evil}`,
    args: { a: evil, raw: "x" },
    tags: [evil],
    occurrence: `s${evil}@2026-03-08T00:00:00.000Z`,
    scheduleId: `s${evil}`,
    errors: [{ at: NOW - 1000, attempt: 1, error: `boom ${evil}` }],
    discardedAt: NOW - 1000,
  });
  const state = fixtureState([job]);
  state.attempts[7] = [{
    jobId: 7,
    attempt: 1,
    fence: 1,
    node: `n${evil}`,
    kind: "replay",
    actor: `a${evil}`,
    reason: `r${evil}`,
    startedAt: NOW - 2000,
    finishedAt: NOW - 1000,
    outcome: "discarded",
    error: `e${evil}`,
    output: `o${evil}\n`,
    definition: null,
  }];
  state.audit[7] = [{
    id: 1,
    at: NOW,
    actor: `a${evil}`,
    action: `x${evil}`,
    target: "job:7",
    reason: `r${evil}`,
    details: {},
  }];
  state.overview.nodes[0]!.node = `n${evil}`;
  state.overview.queues[0]!.name = `q${evil}`;
  state.overview.attention[0]!.disabledReason = `r${evil}`;
  state.overview.configProblems = [`c${evil}`];
  state.schedules[1]!.status.disabledReason = `r${evil}`;
  state.schedules[1]!.status.id = `s${evil}`;
  state.deadLetters[0]!.worker = `w${evil}`;
  state.deadLetters[0]!.error = `e${evil}`;
  const run = state.runs[1]!;
  run.run.workflow = `w${evil}`;
  run.run.error = `e${evil}`;
  run.steps[2] = { ...run.steps[2]!, id: `s${evil}`, error: `x${evil}` };
  return state;
}

/** The frame without the SGR colour sequences ink itself writes. */
function withoutColour(frame: string): string {
  // deno-lint-ignore no-control-regex -- removing ink's own colour codes is the point
  return frame.replace(/\x1b\[[0-9;]*m/g, "");
}

for (const color of [false, true]) {
  Deno.test(`hostile stored text renders escaped on every screen (colour ${color ? "on" : "off"})`, async () => {
    const d = dashboard({ state: hostileState(), color });
    const screens: string[] = [];
    screens.push(await d.frame("\\x1b]0;owned\\x07"));
    d.press("2");
    screens.push(await d.frame("[2 Jobs]", "> 7"));
    d.press(ENTER);
    screens.push(await d.frame("job 7", "attempts (1)", "audit (1)"));
    for (let i = 0; i < 40; i++) d.press("j");
    screens.push(await d.frame("audit (1)"));
    d.press(ESC, "3");
    screens.push(await d.frame("[3 Schedules]"));
    d.press("j");
    screens.push(await d.frame("disabled by"));
    d.press("4");
    screens.push(await d.frame("[4 Dead letters]", "\\x1b[2J"));
    d.press("5");
    screens.push(await d.frame("[5 Workflows]", "> 3"));
    d.press("j", ENTER);
    screens.push(await d.frame("run 2 w\\x1b", "steps (5)"));
    for (const frame of [...screens, ...d.r.frames]) {
      const text = withoutColour(frame);
      assert.ok(!text.includes("\x1b"), `an ESC reached the terminal: ${JSON.stringify(text)}`);
      assert.ok(!text.includes("\x07"), `a BEL reached the terminal: ${JSON.stringify(text)}`);
      assert.ok(!text.includes("\u202e"), `a bidi override reached the terminal`);
      if (!color) assert.equal(frame, text, "no colour codes without colour");
    }
    const all = screens.join("\n");
    assert.match(all, /\\x1b\]52;c;aGVsbG8=\\x07/, "the clipboard sequence is shown as text");
    assert.match(all, /\\u202e/);
    d.r.unmount();
  });
}

Deno.test("parseSearch: key:value words filter, the rest is the search text, bad states are named", () => {
  assert.deepEqual(parseSearch("state:discarded queue:mail connection  refused"), {
    filter: { states: ["discarded"], queue: "mail", search: "connection refused" },
  });
  assert.deepEqual(parseSearch("state:discarded,retryable state:scheduled,retryable"), {
    filter: { states: ["scheduled", "retryable", "discarded"] },
  });
  assert.deepEqual(parseSearch("schedule:nightly tag:x worker:w"), {
    filter: { scheduleId: "nightly", tag: "x", worker: "w" },
  });
  assert.deepEqual(parseSearch("http://host:80/x"), { filter: { search: "http://host:80/x" } });
  assert.deepEqual(parseSearch("constructor:x toString:y"), {
    filter: { search: "constructor:x toString:y" },
  });
  assert.deepEqual(parseSearch("state:dead"), {
    error:
      'state "dead" is not a job state (scheduled, available, executing, retryable, completed, cancelled, discarded)',
  });
});

Deno.test("7 watches the work queues at 80x24: scores with their inputs, claims held and expired, lead times; h/l switch queues", async () => {
  const d = dashboard();
  let frame = await d.frame("host-a:100");
  assert.match(frame, / 7 Work/, "the tab bar names the work queues");
  d.press("7");
  frame = await d.frame("[7 Work]", "[disputes]", "dsp-17");
  assertFits(frame, 80, 24);
  assert.match(frame, /queues \[disputes\] {2}reviews {3}h\/l switch/);
  assert.match(frame, /claim required · lease 1h · score rule\/dispute\.urgency-score/);
  assert.match(
    frame,
    /open 3 {2}claimed 1 {2}expired 1 {2}oldest 6d {2}lead time 4h \(median of 5 done in 1d\)/,
  );
  // Listing order, each score with the inputs that set it; who holds the claim and for how long.
  assert.match(frame, /> +61 dsp-17 +bo, 50m left +amount 1900, age 6d, evidence_missing tr/);
  assert.match(frame, /\n +29 dsp-9 +EXPIRED ada 1h ago +amount 2500, age 2d, evidence_missing f/);
  assert.match(frame, /\n +0\.7 dsp-21 +- +amount 40, age 3h, evidence_missing false/);
  assert.ok(frame.indexOf("dsp-17") < frame.indexOf("dsp-9"), "listing order");
  assert.ok(frame.indexOf("dsp-9") < frame.indexOf("dsp-21"), "listing order");
  assert.match(frame, /j\/k move · h\/l queue · 1-7 views · \? help · q quit/);
  d.press("l");
  frame = await d.frame("[reviews]", "rev-1");
  assertFits(frame, 80, 24);
  assert.match(frame, /claim optional · lease 30m · no score: oldest first/);
  assert.match(
    frame,
    /open 1 {2}claimed 0 {2}expired 0 {2}oldest 2h {2}lead time - \(none done in 1d\)/,
  );
  assert.match(frame, /> +- rev-1 +- +age 2h/);
  d.press("l");
  await d.frame("[disputes]", "dsp-17");
  // A claim taken elsewhere shows on the next refresh.
  const watch = d.state.work[0]!;
  watch.items[2] = {
    ...watch.items[2]!,
    claim: { owner: "cy", expiresAt: NOW + 3_600_000, fence: 1 },
  };
  watch.stats = { ...watch.stats, claimed: 2 };
  d.clock.advance(1000);
  frame = await d.frame("cy, 59m59s left", "claimed 2");
  d.r.unmount();
});
