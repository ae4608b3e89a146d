/**
 * The dashboard's reducer without a renderer: keys, ticks and the answers
 * to effects go in as events, the state and effects that come out are
 * compared as values. A driver answers effects from the fixture data the
 * way the shell would, one at a time, so a test can also hold an answer
 * back and send it late.
 */

import assert from "node:assert/strict";
import { type ActRequest, runAction } from "../../src/tui/actions.ts";
import { readView } from "../../src/tui/data.ts";
import { type Key, key, named } from "../../src/tui/keys.ts";
import { IDLE_REFRESH_MS, reduce } from "../../src/tui/reduce.ts";
import { nextRunState } from "../../src/tui/workflows/keys.ts";
import {
  type DashboardEvent,
  type DashboardState,
  type Effect,
  initialState,
  type Overlay,
  pageSize,
  type Tab,
} from "../../src/tui/state.ts";
import {
  fixtureData,
  fixtureJob,
  fixtureRun,
  type FixtureState,
  fixtureState,
  manyJobs,
  NOW,
  recordingActions,
} from "./fixtures.ts";

/** A reducer with the shell's loop: effects queue up until `settle` answers them from the fixtures. */
function driver(
  options: { state?: FixtureState; tab?: Tab; program?: string; readOnly?: boolean } = {},
) {
  const fixture = options.state ?? fixtureState();
  const { data, queries, counts, runQueries } = fixtureData(fixture);
  const { actions, calls } = recordingActions();
  let state: DashboardState = initialState({
    program: options.program ?? "jobsctl",
    location: "./jobs.db",
    readOnly: options.readOnly,
    tab: options.tab,
  });
  const pending: Effect[] = [];
  const send = (event: DashboardEvent): Effect[] => {
    const step = reduce(state, event);
    state = step.state;
    pending.push(...step.effects);
    return step.effects;
  };
  /** The answer the shell would send for `effect`. */
  const answer = async (effect: Effect): Promise<DashboardEvent | null> => {
    switch (effect.kind) {
      case "read":
        try {
          const result = await readView(data, effect.request, NOW);
          return { kind: "read", seq: effect.seq, at: NOW, result };
        } catch (error) {
          return { kind: "readFailed", seq: effect.seq, error: (error as Error).message };
        }
      case "act":
        return await runAction(actions, effect.request);
      case "bulkRead":
        return { kind: "bulkRead", action: effect.action, jobs: await data.jobs(effect.query) };
      case "queues":
        return { kind: "queues", names: await data.queues() };
      case "quit":
        return null;
    }
  };
  return {
    fixture,
    queries,
    counts,
    runQueries,
    calls,
    get state() {
      return state;
    },
    send,
    pending,
    /** Sends each key (a string is one key per character) and returns every effect they asked for. */
    press(...keys: (string | Key)[]): Effect[] {
      const out: Effect[] = [];
      for (const k of keys) {
        for (const one of typeof k === "string" ? Array.from(k).map(key) : [k]) {
          out.push(...send({ kind: "key", key: one }));
        }
      }
      return out;
    },
    /** Answers every queued effect, and those their answers ask for, in order. */
    async settle(): Promise<void> {
      while (pending.length > 0) {
        const event = await answer(pending.shift()!);
        if (event) send(event);
      }
    },
    answer,
  };
}

/** Started: the shell's first resize at 80x24, then every read answered. */
async function started(options: Parameters<typeof driver>[0] = {}) {
  const d = driver(options);
  d.send({ kind: "resize", columns: 80, rows: 24 });
  await d.settle();
  return d;
}

Deno.test("the first resize asks for the active screen's read; its answer fills the screen", async () => {
  const d = driver({ tab: "jobs" });
  const effects = d.send({ kind: "resize", columns: 80, rows: 24 });
  assert.deepEqual(effects, [{
    kind: "read",
    seq: 1,
    request: { view: "jobs", query: { filter: {}, desc: true, limit: 18 } },
  }]);
  assert.equal(d.state.jobs === null, true, "nothing read yet");
  await d.settle();
  assert.equal(d.state.jobs?.length, 18);
  assert.equal(d.state.total?.count, 30);
  assert.equal(d.state.lastRead, NOW);
});

Deno.test("keys act on the state the previous key left: j j r asks to retry the job two rows down", async () => {
  const d = await started({ tab: "jobs" });
  d.press("jjr");
  const overlay = d.state.overlay;
  assert.equal(overlay?.kind, "confirm");
  assert.equal(overlay.kind === "confirm" && overlay.title, "Retry job 28?");
  d.press("y");
  assert.equal(d.state.busy, true);
  assert.deepEqual(d.pending.map((e) => e.kind), ["act"]);
  const request = (d.pending[0] as { request: ActRequest }).request;
  assert.deepEqual(request.kind === "jobs" && request.jobs.map((j) => j.id), [28]);
  // While the action runs, keys outside dialogs wait.
  assert.deepEqual(d.press("j"), []);
  assert.equal(d.state.jobCursor, 2);
  await d.settle();
  assert.deepEqual(d.state.status, { text: "retried job 28 (was discarded)", tone: "ok" });
  assert.equal(d.state.busy, false);
  assert.deepEqual(d.calls, [{ kind: "jobs", action: "retry", ids: [28] }]);
});

Deno.test("a refresh while the same read runs asks for nothing, and a late answer to an older read is dropped", async () => {
  const d = await started();
  assert.equal(d.state.read.inFlight, null);
  const [first] = d.send({ kind: "tick" });
  assert.equal(first?.kind, "read");
  assert.deepEqual(d.send({ kind: "tick" }), [], "the same read is still running");
  // Switching screens asks for another read; the overview's answer then comes too late.
  const [second] = d.press("3");
  assert.deepEqual(second, { kind: "read", seq: 3, request: { view: "schedules" } });
  d.fixture.overview = {
    ...d.fixture.overview,
    queues: d.fixture.overview.queues.map((q) => ({ ...q, paused: true })),
  };
  const stale = await d.answer(first!);
  d.send(stale!);
  assert.equal(d.state.overview?.queues[0]?.paused, false, "an older read's answer was applied");
  d.send((await d.answer(second!))!);
  assert.equal(d.state.schedules?.length, 2);
  assert.equal(d.state.read.inFlight, null);
});

Deno.test("a tick of a quiet store reads nothing and returns the same state, until IDLE_REFRESH_MS after the last read", async () => {
  const d = await started();
  const read = d.state.lastRead!;
  const before = d.state;
  assert.deepEqual(d.send({ kind: "tick", changed: false, at: read + 1000 }), []);
  assert.equal(d.state, before, "the same state: nothing to draw");
  const [again] = d.send({ kind: "tick", changed: false, at: read + IDLE_REFRESH_MS });
  assert.equal(again?.kind, "read");
  await d.settle();
  const [changed] = d.send({ kind: "tick", changed: true, at: d.state.lastRead! + 1 });
  assert.equal(changed?.kind, "read", "a change is read at the next tick");
});

Deno.test("a failed read keeps the last data and says why; the next tick reads again and clears it", async () => {
  const d = await started();
  const before = d.state.overview;
  d.fixture.failWith = "database is locked";
  d.send({ kind: "tick" });
  await d.settle();
  assert.equal(d.state.storeError, "database is locked");
  assert.equal(d.state.overview, before);
  d.fixture.failWith = null;
  d.send({ kind: "tick" });
  await d.settle();
  assert.equal(d.state.storeError, null);
});

Deno.test("f opens a picker of every state and the known queues; space chooses, Enter lists them", async () => {
  const d = await started({ tab: "jobs" });
  const [queues] = d.press("f");
  assert.deepEqual(queues, { kind: "queues" });
  let picker = d.state.overlay;
  assert.equal(picker?.kind, "picker");
  assert.equal(picker.kind === "picker" && picker.queues, null, "no overview read yet");
  await d.settle();
  picker = d.state.overlay;
  assert.deepEqual(picker?.kind === "picker" && picker.queues, ["default", "mail"]);
  // Rows: the 7 states, "any queue", default, mail.
  d.press(" ", named("downArrow"), named("downArrow"), named("downArrow"), " "); // scheduled, retryable
  d.press("j", "j", "j", " ", "j", "j", "j", " "); // discarded, then the queue mail
  picker = d.state.overlay;
  assert.deepEqual(picker?.kind === "picker" && [picker.states, picker.queue], [
    ["scheduled", "retryable", "discarded"],
    "mail",
  ]);
  d.press(" "); // mail stays the one queue: choosing it again keeps it
  d.press(named("upArrow"), named("upArrow"), " "); // any queue
  assert.equal(d.state.overlay?.kind === "picker" && d.state.overlay.queue, null);
  d.press("j", " ");
  picker = d.state.overlay;
  assert.deepEqual(picker?.kind === "picker" && picker.queue, "default");
  const effects = d.press(named("return"));
  assert.equal(d.state.overlay, null);
  assert.deepEqual(d.state.filter, {
    states: ["scheduled", "retryable", "discarded"],
    queue: "default",
  });
  assert.deepEqual(effects, [{
    kind: "read",
    seq: d.state.read.seq,
    request: { view: "jobs", query: { filter: d.state.filter, desc: true, limit: 18 } },
  }]);
  await d.settle();
  assert.ok(d.state.jobs!.length > 0);
  for (const job of d.state.jobs!) {
    assert.ok(["scheduled", "retryable", "discarded"].includes(job.state), job.state);
    assert.equal(job.queue, "default");
  }
  assert.deepEqual(d.counts.at(-1), d.state.filter, "the total counts the same filter");
});

Deno.test("the picker opens with the filter's states and queue, and Esc leaves the filter alone", async () => {
  const d = await started({ tab: "jobs" });
  d.press("/");
  d.press("state:retryable,cancelled queue:mail", named("return"));
  d.press("f");
  await d.settle();
  const picker = d.state.overlay;
  assert.deepEqual(picker?.kind === "picker" && [picker.states, picker.queue, picker.queues], [
    ["retryable", "cancelled"],
    "mail",
    ["default", "mail"],
  ]);
  d.press(" ", named("escape"));
  assert.equal(d.state.overlay, null);
  assert.deepEqual(d.state.filter, { states: ["retryable", "cancelled"], queue: "mail" });
  assert.deepEqual(d.state.status, { text: "cancelled; nothing changed", tone: "info" });
});

Deno.test("/ opens with the current search selected: typing replaces it, a cursor key edits it", async () => {
  const d = await started({ tab: "jobs" });
  d.press("/", "queue:mail refused", named("return"));
  assert.deepEqual(d.state.filter, { queue: "mail", search: "refused" });
  d.press("/");
  const prompt = d.state.overlay;
  assert.deepEqual(prompt?.kind === "prompt" && prompt.line, {
    text: "queue:mail refused",
    cursor: 18,
    selected: true,
  });
  d.press("timeout", named("return"));
  assert.deepEqual(d.state.filter, { search: "timeout" });
  d.press("/", named("home"), "state:discarded ", named("return"));
  assert.deepEqual(d.state.filter, { states: ["discarded"], search: "timeout" });
  d.press("/", named("backspace"), named("return"));
  assert.deepEqual(d.state.filter, {});
});

Deno.test("a status message clears when the tab changes or a detail opens or closes, not otherwise", async () => {
  const d = await started({ tab: "jobs" });
  const said = (text: string) => ({ text, tone: "info" as const });
  d.press("/", "queue:mail", named("return"), named("escape"));
  assert.deepEqual(d.state.status, said("filters cleared"));
  d.press("j", "2", "o");
  assert.deepEqual(d.state.status, said("filters cleared"), "same view: kept");
  d.press("3");
  assert.equal(d.state.status, null, "tab switch");
  d.press("2");
  await d.settle();
  d.press("c", "n"); // oldest first: job 1 is scheduled, cancel asks
  assert.deepEqual(d.state.status, said("not confirmed; nothing changed"));
  d.press(named("return"));
  assert.equal(d.state.status, null, "detail opened");
  await d.settle();
  d.press("c", "n");
  assert.deepEqual(d.state.status, said("not confirmed; nothing changed"));
  d.press(named("escape"));
  assert.equal(d.state.status, null, "detail closed");
  d.press("q");
  assert.deepEqual(d.pending.at(-1), { kind: "quit" });
});

Deno.test("an action's answer says what changed even when the view changed meanwhile, and reads again", async () => {
  const d = await started();
  d.press("P", "y");
  const [act] = d.pending.splice(0);
  assert.equal(act?.kind, "act");
  d.send((await d.answer(act!))!);
  assert.deepEqual(d.state.status, {
    text: "queue default paused for every process on the store",
    tone: "ok",
  });
  assert.deepEqual(d.pending.map((e) => e.kind), ["read"], "the screen is read again");
});

Deno.test("hints to paste use the program's name: replaying an executing job points at replay --force", async () => {
  for (const program of ["jobsctl", "deno run -A /opt/jobs/main.ts"]) {
    const job = fixtureJob({ id: 3, state: "executing", attempt: 1, attemptedBy: "host-a:100" });
    const d = await started({ state: fixtureState([job]), tab: "jobs", program });
    d.press("p");
    const text = d.state.status?.text ?? "";
    assert.equal(d.state.overlay, null);
    assert.ok(
      text.includes(
        `use "${program} replay 3 --force --reason '<why you are breaking its lease to replay it>' --db ./jobs.db" for that`,
      ),
      text,
    );
    assert.doesNotMatch(text, /\bjobs replay\b/);
  }
});

Deno.test("bulk says how many of the matches it looks at when there are more than it reads", async () => {
  const d = await started({ state: fixtureState(manyJobs(2100)), tab: "jobs" });
  d.press("/", "state:completed", named("return"));
  await d.settle();
  assert.equal(d.state.total?.count, 300);
  d.press("/", "queue:default", named("return"));
  await d.settle();
  assert.equal(d.state.total?.count, 1050);
  d.press("B", "d");
  await d.settle();
  const confirm = d.state.overlay;
  assert.match(
    confirm?.kind === "confirm" ? confirm.title : "",
    /^Discard \d+ jobs \(the oldest 1000 of 1050 matching\)\? Every affected job:$/,
  );
  assert.equal(pageSize(d.state), 18);
});

// -------------------------------------------------------------- workflows

/** The open dialog, read afresh (an earlier assertion does not narrow it). */
function overlayOf(state: DashboardState): Overlay | null {
  return state.overlay;
}

Deno.test("5 reads a page of runs; Enter opens the selected run and reads it; Esc goes back to the list", async () => {
  const d = await started();
  const [read] = d.press("5");
  assert.deepEqual(read, {
    kind: "read",
    seq: d.state.read.seq,
    request: { view: "workflows", query: { state: null, limit: 18 } },
  });
  await d.settle();
  assert.deepEqual(d.state.runs?.map((r) => [r.id, r.state]), [
    [3, "compensated"],
    [2, "failed"],
    [1, "completed"],
  ]);
  assert.equal(d.state.runCounts?.failed, 1);
  const [open] = d.press("j", named("return"));
  assert.deepEqual(open, {
    kind: "read",
    seq: d.state.read.seq,
    request: { view: "workflow", id: 2 },
  });
  assert.deepEqual({ ...d.state.run }, { id: 2, data: null, scroll: 0 });
  await d.settle();
  assert.equal(d.state.run?.data?.run.workflow, "import-file");
  d.press("j", "j");
  assert.equal(d.state.run?.scroll, 2);
  // A tick reads the open run again, not the list.
  assert.deepEqual(d.send({ kind: "tick" }).map((e) => e.kind === "read" && e.request), [
    { view: "workflow", id: 2 },
  ]);
  await d.settle();
  d.press(named("escape"));
  assert.equal(d.state.run, null);
  assert.equal(d.state.runCursor, 1, "the list keeps its cursor");
});

Deno.test("r on a failed run asks a reason, then confirms; y retries it through the actions and says what changed", async () => {
  const d = await started({ tab: "workflows" });
  d.press("j", "r");
  const prompt = d.state.overlay;
  assert.equal(prompt?.kind, "prompt");
  assert.equal(
    prompt.kind === "prompt" && prompt.label,
    "Reason to retry workflow run 2 (import-file) (required):",
  );
  d.press(named("return"));
  assert.deepEqual(d.state.status, {
    text: "retry needs a reason; nothing changed",
    tone: "error",
  });
  assert.equal(d.state.overlay, null);
  // A placeholder is refused as on the command line.
  d.press("r", "...", named("return"));
  assert.deepEqual(d.state.status, {
    text: `"..." is not a reason (it is only punctuation): write why, in a few words, for the ` +
      `audit trail, such as "vendor API down until 14:00"; nothing changed`,
    tone: "error",
  });
  assert.equal(d.state.overlay, null);
  d.press("r", "dates fixed upstream", named("return"));
  const confirm = overlayOf(d.state);
  assert.equal(confirm?.kind === "confirm" && confirm.title, "Retry workflow run 2?");
  assert.match(
    confirm?.kind === "confirm"
      ? confirm.lines.map((l) => l.map((s) => s.text).join("")).join("\n")
      : "",
    /run 2 +import-file +failed\n\nIts discarded or cancelled steps .*\n.*resumes.*\nreason: dates fixed upstream/,
  );
  d.press("n");
  assert.deepEqual(d.calls, []);
  d.press("r", "dates fixed upstream", named("return"), "y");
  assert.equal(d.state.busy, true);
  await d.settle();
  assert.deepEqual(d.calls, [
    { kind: "workflow", action: "retry", id: 2, reason: "dates fixed upstream" },
  ]);
  assert.deepEqual(d.state.status, {
    text: "retried workflow run 2 (import-file): failed -> running; 1 job to run again",
    tone: "ok",
  });
  assert.equal(d.state.busy, false);
  assert.equal(d.runQueries.length, 2, "the list is read again after the action");
});

Deno.test("retry of a run that is not failed, or cancel of a final one, says why and asks nothing", async () => {
  const d = await started({ tab: "workflows" });
  d.press("r");
  assert.deepEqual(d.state.status, {
    text: "workflow run 3 (lend-copy) is compensated, not failed: nothing to retry",
    tone: "info",
  });
  d.press("c");
  assert.deepEqual(d.state.status, {
    text: "workflow run 3 (lend-copy) is already compensated: nothing to cancel",
    tone: "info",
  });
  assert.equal(d.state.overlay, null);
  assert.deepEqual(d.calls, []);
});

Deno.test("c in an open running run cancels it after a reason and a confirmation", async () => {
  const fixture = fixtureState();
  fixture.runs.unshift(fixtureRun({ id: 4, workflow: "lend-copy", state: "running" }));
  const d = await started({ state: fixture, tab: "workflows" });
  d.press(named("return"));
  d.press("c"); // before the run is read, there is nothing to act on
  assert.equal(d.state.overlay, null);
  await d.settle();
  d.press("c", "customer left", named("return"));
  const confirm = overlayOf(d.state);
  assert.equal(confirm?.kind === "confirm" && confirm.title, "Cancel workflow run 4?");
  d.press("y");
  await d.settle();
  assert.deepEqual(d.calls, [{
    kind: "workflow",
    action: "cancel",
    id: 4,
    reason: "customer left",
  }]);
  assert.match(
    d.state.status?.text ?? "",
    /^cancelled workflow run 4 \(lend-copy\): running -> cancelled; 1 waiting job cancelled$/,
  );
  assert.equal(d.state.run?.id, 4, "still in the run, read again");
  assert.deepEqual(d.pending, []);
});

Deno.test("read-only mode refuses a run's retry and cancel before asking anything", async () => {
  const d = await started({ tab: "workflows", readOnly: true });
  d.press("j", "r");
  assert.deepEqual(d.state.status, {
    text: "read-only mode: retry of a workflow run refused; nothing changed",
    tone: "error",
  });
  d.press("c");
  assert.equal(d.state.overlay, null);
  assert.deepEqual(d.calls, []);
});

Deno.test("f lists the runs of each state in turn and Esc lists any state again", async () => {
  assert.equal(nextRunState(null), "running");
  assert.equal(nextRunState("running"), "compensating");
  assert.equal(nextRunState("cancelled"), null);
  const d = await started({ tab: "workflows" });
  for (const expected of ["running", "compensating", "completed", "compensated", "failed"]) {
    d.press("f");
    await d.settle();
    assert.equal(d.state.runState, expected);
    assert.equal(d.runQueries.at(-1)?.state, expected);
    assert.ok(d.state.runs!.every((r) => r.state === expected));
  }
  assert.deepEqual(d.state.runs?.map((r) => r.id), [2]);
  d.press(named("escape"));
  await d.settle();
  assert.equal(d.state.runState, null);
  assert.deepEqual(d.state.status, { text: "state filter cleared", tone: "info" });
  assert.equal(d.state.runs?.length, 3);
});

Deno.test("the runs list pages with keyset after: n asks for the runs older than the last shown", async () => {
  const fixture = fixtureState();
  fixture.runs = Array.from(
    { length: 40 },
    (_, i) => fixtureRun({ id: 40 - i, workflow: "nightly-import", state: "completed" }),
  );
  const d = await started({ state: fixture, tab: "workflows" });
  assert.equal(d.state.runs?.length, 18);
  d.press("n");
  await d.settle();
  assert.deepEqual(d.runQueries.at(-1), { state: null, limit: 18, after: 23 });
  assert.equal(d.state.runs?.[0]?.id, 22);
  d.press("n", "n");
  await d.settle();
  assert.deepEqual(d.state.runs?.map((r) => r.id), [4, 3, 2, 1]);
  assert.deepEqual(d.press("n"), [], "a page that is not full is the last");
  d.press("b");
  await d.settle();
  assert.equal(d.state.runs?.[0]?.id, 22);
  d.press("g");
  await d.settle();
  assert.equal(d.state.runs?.[0]?.id, 40);
});

// -------------------------------------------------------------- pipelines

Deno.test("6 reads the pipelines; j/k move the selection; Enter opens the selected one and reads it; Esc goes back", async () => {
  const d = await started();
  const [read] = d.press("6");
  assert.equal(d.state.tab, "pipelines");
  assert.deepEqual(read, { kind: "read", seq: d.state.read.seq, request: { view: "pipelines" } });
  await d.settle();
  assert.deepEqual(d.state.pipelines?.map((p) => p.id), ["catalog", "bank", "prices", "feed"]);
  d.press("j", "j", "j", "j", named("downArrow"));
  assert.equal(d.state.pipelineCursor, 3, "the selection stops at the last pipeline");
  d.press("k", named("upArrow"));
  assert.equal(d.state.pipelineCursor, 1);
  const [open] = d.press(named("return"));
  assert.deepEqual(open, {
    kind: "read",
    seq: d.state.read.seq,
    request: { view: "pipeline", id: "bank" },
  });
  assert.deepEqual({ ...d.state.pipeline }, { id: "bank", data: null, scroll: 0 });
  await d.settle();
  assert.equal(d.state.pipeline?.data?.recent[0]?.state, "failed");
  d.press("j", "j", "k");
  assert.equal(d.state.pipeline?.scroll, 1);
  // A tick reads the open pipeline again, not the list.
  assert.deepEqual(d.send({ kind: "tick" }).map((e) => e.kind === "read" && e.request), [
    { view: "pipeline", id: "bank" },
  ]);
  await d.settle();
  const [back] = d.press(named("escape"));
  assert.equal(d.state.pipeline, null);
  assert.equal(d.state.pipelineCursor, 1, "the list keeps its cursor");
  assert.deepEqual(back, { kind: "read", seq: d.state.read.seq, request: { view: "pipelines" } });
});

Deno.test("Enter on an empty pipelines list opens nothing, and Tab reaches the pipelines after the workflows", async () => {
  const fixture = fixtureState();
  fixture.pipelines = [];
  const d = await started({ state: fixture, tab: "pipelines" });
  assert.deepEqual(d.state.pipelines, []);
  assert.deepEqual(d.press("j", named("return")), []);
  assert.equal(d.state.pipeline, null);
  d.press("5", named("tab"));
  assert.equal(d.state.tab, "pipelines");
  d.press(named("tab"));
  assert.equal(d.state.tab, "work", "the work queues come after the pipelines");
  d.press(named("tab"));
  assert.equal(d.state.tab, "overview", "Tab wraps around");
  d.press(named("tab", { shift: true }));
  assert.equal(d.state.tab, "work");
});

Deno.test("an answer for a pipeline no longer open leaves the open one alone", async () => {
  const d = await started({ tab: "pipelines" });
  d.press(named("return"));
  assert.equal(d.state.pipeline?.id, "catalog");
  const stale = d.state;
  const other = d.fixture.pipelines[1]!;
  const step = reduce(stale, {
    kind: "read",
    seq: stale.read.seq,
    at: NOW,
    result: { view: "pipeline", id: other.id, pipeline: other },
  });
  assert.equal(step.state.pipeline?.id, "catalog");
  assert.equal(step.state.pipeline?.data, null);
});

Deno.test("the work tab reads the chosen queue at the screen's height; h/l and ←/→ move between queues, wrapping, the cursor back at the top", async () => {
  const d = await started({ tab: "work" });
  assert.equal(d.state.work?.watch?.queue.id, "disputes", "the first queue until one is chosen");
  assert.deepEqual(d.press("j", "j", "j"), []);
  assert.equal(d.state.workCursor, 2, "the cursor stops at the last item");
  const effects = d.press("l");
  assert.equal(d.state.workQueue, "reviews");
  assert.equal(d.state.workCursor, 0);
  assert.deepEqual(effects, [{
    kind: "read",
    seq: d.state.read.seq,
    request: { view: "work", queue: "reviews", limit: 16 },
  }]);
  await d.settle();
  assert.equal(d.state.work?.watch?.queue.id, "reviews");
  d.press("l");
  assert.equal(d.state.workQueue, "disputes", "l wraps around");
  d.press(named("leftArrow"));
  assert.equal(d.state.workQueue, "reviews", "← wraps the other way");
  d.press("[");
  assert.equal(d.state.workQueue, "disputes");
  await d.settle();
  // A file with one queue: nothing to switch to.
  d.fixture.work = d.fixture.work.slice(0, 1);
  d.send({ kind: "tick" });
  await d.settle();
  assert.deepEqual(d.state.work?.queues, ["disputes"]);
  assert.deepEqual(d.press("l"), []);
  assert.equal(d.state.workQueue, "disputes");
});
