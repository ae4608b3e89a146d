/**
 * The dashboard on a real SQLite store: the store-backed data (pages with
 * keyset paging, redacted args, throughput, schedules with DST notes) and
 * actions that go through `src/admin` and leave an audit row, driven once
 * from the keyboard end to end; and the workflows screen over real runs, a
 * failed one retried from the keyboard until it completes; and the
 * pipelines screen over real ingest runs, opened, committed chunk by chunk
 * and finished through the store seam.
 */

import assert from "node:assert/strict";
import { render } from "ink-testing-library";
import { FakeClock } from "../../src/clock.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import { storeActions } from "../../src/tui/actions.ts";
import { App } from "../../src/tui/app.tsx";
import { configFile, fixedStore, storeAt, storeData } from "../../src/tui/data.ts";
import { SchedulesView } from "../../src/tui/schedules/view.tsx";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { openFailure } from "../../src/cli/store/open.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { BACKENDS, newJob } from "../support/backends.ts";
import { parseSearch } from "../../src/tui/search.ts";
import { insertJob, tempJobs, tempStore } from "../support/stores.ts";
import { startWorkflowRun } from "../../src/admin/workflows.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { drainAllJobs, waitUntil } from "../../src/testing.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { type ChunkDelta, INGEST_QUEUE, type IngestRunState } from "../../src/ingest/types.ts";
import { INGEST_WORKER } from "../../src/kernel/runs.ts";
import type { Store } from "../../src/store/store.ts";
import { nextWorkItem, type WorkActor } from "../../src/admin/work.ts";
import { actionJob, addParams } from "../../src/workqueue/items.ts";

const NOW = Date.UTC(2026, 2, 6, 12, 0, 30);
const noConfig = () => Promise.resolve({ config: null, problems: [] });

Deno.test("a retry from the dashboard's actions changes the store and writes an audit row", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  const job = await insertJob(temp.store, {
    state: "discarded",
    worker: "send-mail",
    args: { password: "hunter2", to: "ops@example.com" },
    attempt: 3,
    maxAttempts: 3,
    discardedAt: NOW - 1000,
  });
  const source = fixedStore(temp.store);
  const data = storeData({ source, config: noConfig, clock });
  const actions = storeActions({
    source,
    config: noConfig,
    clock,
    actor: "alice",
    environment: null,
  });

  const [listed] = await data.jobs({ filter: { states: ["discarded"] }, desc: true, limit: 50 });
  assert.equal(listed?.id, job.id);
  assert.deepEqual(listed?.args, { password: "[REDACTED]", to: "ops@example.com" });

  const { changed } = await actions.jobs("retry", [listed!]);
  assert.deepEqual(changed.map((j) => j.id), [job.id]);
  assert.equal((await temp.store.jobGet({ id: job.id }))?.state, "available");
  const [row] = await temp.store.auditList({ target: `job:${job.id}` });
  assert.equal(row?.action, "job.retry");
  assert.equal(row?.actor, "alice");
  assert.equal(row?.at, NOW);
  assert.equal(row?.details.was, "discarded");
});

Deno.test("r then y in the dashboard retries the selected job on the store, audited", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  await insertJob(temp.store, { state: "completed", completedAt: NOW - 5000 });
  const job = await insertJob(temp.store, { state: "discarded", discardedAt: NOW - 1000 });
  const source = fixedStore(temp.store);
  const r = render(
    <App
      data={storeData({ source, config: noConfig, clock })}
      actions={storeActions({ source, config: noConfig, clock, actor: "bob", environment: null })}
      clock={clock}
      program="jobsctl"
      color={false}
      initialTab="jobs"
    />,
  );
  const frame = (text: string) =>
    waitUntil(`a frame with ${JSON.stringify(text)}`, () => r.lastFrame()?.includes(text));
  await frame(`> ${job.id}`);
  r.stdin.write("r");
  await frame(`Retry job ${job.id}?`);
  r.stdin.write("y");
  await frame(`retried job ${job.id} (was discarded)`);
  assert.equal((await temp.store.jobGet({ id: job.id }))?.state, "available");
  const audit = await temp.store.auditList({ target: `job:${job.id}` });
  assert.deepEqual(audit.map((a) => [a.action, a.actor]), [["job.retry", "bob"]]);
  // The list is read again after the action: the job shows its new state.
  await waitUntil("the list to show the retried job", () => {
    return /> \d+\s+available/.test(r.lastFrame() ?? "");
  });
  r.unmount();
});

Deno.test("pages of the store-backed jobs list return each job once, newest or oldest first", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  const ids: number[] = [];
  for (let i = 0; i < 7; i++) ids.push((await insertJob(temp.store, { queue: "q" })).id);
  await insertJob(temp.store, { queue: "other" });
  const data = storeData({ source: fixedStore(temp.store), config: noConfig, clock });
  for (const desc of [true, false]) {
    const seen: number[] = [];
    let after: number | undefined;
    for (;;) {
      const page = await data.jobs({ filter: { queue: "q" }, desc, after, limit: 3 });
      seen.push(...page.map((j) => j.id));
      if (page.length < 3) break;
      after = page.at(-1)!.id;
    }
    assert.deepEqual(seen, desc ? [...ids].reverse() : ids);
  }
});

Deno.test("the overview counts completions per minute, this minute in the last sparkline bucket", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  await insertJob(temp.store, { state: "completed", queue: "mail", completedAt: NOW - 10_000 });
  await insertJob(temp.store, {
    state: "completed",
    queue: "mail",
    completedAt: NOW - 30 * 60_000,
  });
  await insertJob(temp.store, { state: "available", queue: "mail" });
  const data = storeData({ source: fixedStore(temp.store), config: noConfig, clock });
  const overview = await data.overview(NOW);
  const mail = overview.queues.find((q) => q.name === "mail");
  assert.ok(mail);
  assert.equal(mail.completed.length, 60);
  assert.equal(mail.completed.at(-1), 1);
  assert.equal(mail.completed.reduce((a, b) => a + b, 0), 2);
  assert.equal(mail.counts.available, 1);
  assert.equal(overview.store.reachable, true);
});

Deno.test("schedules come with their next 5 occurrences and the DST note of 2026-03-08 in America/New_York", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  const path = `${temp.dir}/schedules.yaml`;
  await Deno.writeTextFile(
    path,
    [
      "version: 1",
      "schedules:",
      "  - id: nightly",
      '    cron: "30 2 * * *"',
      "    timezone: America/New_York",
      "    local_time: { reason: after the close, gap: shift, overlap: first }",
      "    run: { command: [echo, hi] }",
    ].join("\n"),
  );
  const data = storeData({
    source: fixedStore(temp.store),
    config: configFile(path),
    clock,
  });
  const [nightly] = await data.schedules(NOW);
  assert.equal(nightly?.status.id, "nightly");
  assert.equal(nightly?.upcoming.length, 5);
  const shifted = nightly?.upcoming.find((o) => o.note !== null);
  assert.match(shifted?.note ?? "", /02:30 does not exist on 2026-03-08/);
});

Deno.test("the schedules screen shows the definitions the store last synced while the file has a syntax error", async () => {
  await using temp = await tempStore();
  const path = `${temp.dir}/schedules.yaml`;
  const good = [
    "version: 1",
    "schedules:",
    "  - id: nightly",
    '    cron: "30 2 * * *"',
    "    timezone: America/New_York",
    "    local_time: { reason: after the close, gap: shift, overlap: first }",
    "    run: { command: [echo, hi] }",
    "  - id: hourly",
    '    cron: "0 * * * *"',
    "    run: { command: [echo, hi] }",
  ].join("\n");
  await Deno.writeTextFile(path, good);
  const loaded = await configFile(path)();
  // What a daemon does on start: sync the schedules of the good file.
  await syncSchedules(temp.store, NOW - 60_000, loaded.config!.schedules);
  const [row] = await temp.store.schedulesList({ ids: ["nightly"] });
  // Then the file gets a syntax error on line 4; the daemon keeps the good definitions.
  await Deno.writeTextFile(path, good.replace('"30 2 * * *"', '"30 2 * * *'));
  const data = storeData({
    source: fixedStore(temp.store),
    config: configFile(path),
    clock: new FakeClock(NOW),
  });
  const schedules = await data.schedules(NOW);
  const frame = render(
    <SchedulesView schedules={schedules} cursor={1} width={200} height={40} now={NOW} />,
  ).lastFrame() ?? "";
  assert.match(
    frame,
    /the schedules file has errors and is not in force: shown is what a daemon runs, as stored/,
  );
  assert.match(frame, new RegExp(`${path}:\\d+`));
  assert.match(frame, /> nightly +cron "30 2 \* \* \*" +America\/New_York +enabled/);
  assert.match(frame, / {2}hourly +cron "0 \* \* \* \*" +UTC +enabled/);
  assert.match(frame, new RegExp(`stored   definition ${row!.definitionHash!.slice(0, 12)}`));
  assert.match(frame, /2026-03-08T03:30:00-04:00\[America\/New_York\] {2}shifted: 02:30 does/);
  assert.doesNotMatch(frame, /not in file|disabled/);
});

Deno.test("the file source rejects while the database is missing and opens it once it is there", async () => {
  await using temp = await tempStore();
  const path = `${temp.dir}/later.db`;
  const source = storeAt(path, {
    now: () => NOW,
    explain: (error) => openFailure(path, error, "jobsctl"),
  });
  await assert.rejects(source.get(), /no file ".*later\.db" for the store/);
  await (await openSqliteStore(path, { now: NOW })).close();
  const store = await source.get();
  assert.deepEqual(await store.jobsList({}), []);
  await Deno.remove(path);
  await assert.rejects(source.get(), /no file ".*later\.db" for the store/);
  await source.close();
});

Deno.test("the file source's schema message says what to run with the program's own name", async () => {
  await using temp = await tempStore();
  const path = `${temp.dir}/old.db`;
  const old = await openSqliteStore(path, { now: NOW });
  old.db.exec("DELETE FROM schema_migrations WHERE version > 1");
  await old.close();
  for (const program of ["jobsctl", "deno run -A /opt/jobs/main.ts"]) {
    const source = storeAt(path, {
      now: () => NOW,
      explain: (error) => openFailure(path, error, program),
    });
    await assert.rejects(source.get(), (error: Error) => {
      assert.match(error.message, /is at schema version 1, older than this program's \(\d+\)/);
      assert.ok(
        error.message.endsWith(`; run: ${program} migrate --db ${path}`),
        error.message,
      );
      return true;
    });
    await source.close();
  }
});

Deno.test("the store-backed data counts a filter's matches and names every known queue", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  for (let i = 0; i < 5; i++) await insertJob(temp.store, { queue: "q" });
  await insertJob(temp.store, { queue: "q", state: "discarded", discardedAt: NOW - 1 });
  await insertJob(temp.store, { queue: "other", state: "retryable" });
  await temp.store.queuePause({ name: "paused-only", paused: true, now: NOW });
  const data = storeData({ source: fixedStore(temp.store), config: noConfig, clock });
  const exact = (count: number) => ({ count, atLeast: false, newest: null });
  assert.deepEqual(await data.jobsCount({}), exact(7));
  assert.deepEqual(await data.jobsCount({ queue: "q" }), exact(6));
  assert.deepEqual(await data.jobsCount({ states: ["discarded", "retryable"] }), exact(2));
  assert.deepEqual(await data.jobsCount({ states: [] }), exact(7), "no states chosen is any state");
  assert.deepEqual(await data.jobsCount({ queue: "q", states: ["retryable"] }), exact(0));
  assert.deepEqual(await data.queues(), ["other", "paused-only", "q"]);
});

Deno.test("a replay or retry from the dashboard runs the schedule's live definition, and refuses while the file has errors", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  const path = `${temp.dir}/schedules.yaml`;
  const schedulesFile = (argv: string[]) =>
    `version: 1\nschedules:\n  - id: feed\n    every: 1h\n    run: { command: ${
      JSON.stringify(argv)
    } }\n`;
  await Deno.writeTextFile(path, schedulesFile(["false"]));
  const loaded = await configFile(path)();
  const planned = occurrenceJob(loaded.config!.schedules[0]!, {
    at: NOW - 1000,
    occurrence: "feed@2026-03-06T12:00:29.000Z",
    local: "",
    note: "",
  });
  const [row] = await temp.store.jobsInsert({ jobs: [planned], now: NOW - 1000 });
  await temp.store.jobsDiscard({ ids: [row!.id], now: NOW - 500, reason: "it failed" });
  await Deno.writeTextFile(path, schedulesFile(["true"]));
  const source = fixedStore(temp.store);
  const actions = storeActions({
    source,
    config: configFile(path),
    configPath: path,
    clock,
    actor: "alice",
    environment: null,
  });
  const job = (await temp.store.jobGet({ id: row!.id }))!;
  const replayed = await actions.replay(job, "fixed the command");
  assert.equal(replayed.definition.runs, "live");
  assert.deepEqual(replayed.definition.differences, ['args.argv: ["false"] -> ["true"]']);
  assert.deepEqual((await temp.store.jobGet({ id: row!.id }))?.args, {
    kind: "command",
    argv: ["true"],
    shell: false,
  });

  await Deno.writeTextFile(path, "version: 1\nschedules: [\n");
  await temp.store.jobsDiscard({ ids: [row!.id], now: NOW, reason: "again" });
  const again = (await temp.store.jobGet({ id: row!.id }))!;
  await assert.rejects(actions.jobs("retry", [again]), /live definitions cannot be read/);
  assert.equal((await temp.store.jobGet({ id: row!.id }))?.state, "discarded", "nothing changed");
});

/**
 * A store holding two runs driven through the real claim -> perform ->
 * record path: `greet` completed, and `ingest` failed at its `load` step
 * (one attempt, while `loadFails` says so), its `report` cancelled.
 */
async function workflowStore(clock: FakeClock) {
  const state = { loadFails: true };
  const workers = [
    defineWorker({ name: "fetch", maxAttempts: 1, perform: () => ({ result: { rows: 3 } }) }),
    defineWorker({
      name: "load",
      maxAttempts: 1,
      perform: () => {
        if (state.loadFails) throw new Error("row 2: bad date");
        return { result: "loaded" };
      },
    }),
    defineWorker({ name: "report", maxAttempts: 1, perform: () => ({ result: "sent" }) }),
  ];
  const t = await tempJobs(workers, { clock });
  const registry = { workers: new Map(workers.map((w) => [w.name, w])) };
  const greet = compileWorkflow({
    id: "greet",
    steps: [{ id: "fetch", worker: "fetch" }, {
      id: "report",
      worker: "report",
      dependsOn: ["fetch"],
    }],
  }, registry);
  const ingest = compileWorkflow({
    id: "ingest",
    steps: [
      { id: "fetch", worker: "fetch" },
      { id: "load", worker: "load", dependsOn: ["fetch"] },
      { id: "report", worker: "report", dependsOn: ["load", "fetch"] },
    ],
  }, registry);
  const who = { actor: "ops", now: clock.now() };
  const completed = await startWorkflowRun(t.store, { definition: greet, input: {}, ...who });
  const failed = await startWorkflowRun(t.store, {
    definition: ingest,
    input: { file: "march.csv" },
    ...who,
  });
  await drainAllJobs(t.jobs);
  return { ...t, state, completed: completed.id, failed: failed.id };
}

Deno.test("the workflows screen on a real store: a failed run's tree, retried from the keyboard, audited, then completed", async () => {
  const clock = new FakeClock(NOW);
  await using t = await workflowStore(clock);
  const source = fixedStore(t.store);
  const r = render(
    <App
      data={storeData({ source, config: noConfig, clock })}
      actions={storeActions({ source, config: noConfig, clock, actor: "bob", environment: null })}
      clock={clock}
      program="jobsctl"
      color={false}
      initialTab="workflows"
    />,
  );
  const frame = (...texts: string[]) =>
    waitUntil(`a frame with ${texts.map((t) => JSON.stringify(t)).join(", ")}`, () => {
      const last = r.lastFrame() ?? "";
      return texts.every((t) => last.includes(t)) ? last : null;
    });
  let shown = await frame(`> ${t.failed}`, "1 completed · 1 failed");
  assert.match(shown, new RegExp(`> ${t.failed}\\s+ingest\\s+failed\\s+1/3 ✗1`));
  assert.match(shown, new RegExp(`  ${t.completed}\\s+greet\\s+completed\\s+2/2`));
  r.stdin.write("\r");
  shown = await frame(`run ${t.failed} ingest`, "steps (3)");
  assert.match(shown, /^ {2}fetch +completed +attempt 1\/1 +result 10 B/m);
  assert.match(shown, /^ {2}└─ load +discarded +attempt 1\/1/m);
  assert.match(shown, /error: row 2: bad date/);
  assert.match(shown, /└─ report +cancelled/);
  r.stdin.write("r");
  await frame(`Reason to retry workflow run ${t.failed} (ingest)`);
  r.stdin.write("dates fixed");
  await frame("> dates fixed");
  r.stdin.write("\r");
  await frame(`Retry workflow run ${t.failed}?`);
  r.stdin.write("y");
  await frame(`retried workflow run ${t.failed} (ingest): failed -> running`);
  assert.equal((await t.store.workflowGet({ id: t.failed }))?.run.state, "running");
  const audit = await t.store.auditList({ target: `workflow:${t.failed}` });
  assert.deepEqual(
    audit.filter((a) => a.action.startsWith("workflow.") && a.action !== "workflow.start")
      .map((a) => [a.action, a.actor, a.reason]),
    [["workflow.retry", "bob", "dates fixed"]],
  );
  // The load now succeeds; the next refresh of the clock shows the run completed.
  t.state.loadFails = false;
  await drainAllJobs(t.jobs);
  assert.equal((await t.store.workflowGet({ id: t.failed }))?.run.state, "completed");
  clock.advance(1000);
  shown = await frame(`run ${t.failed} ingest  completed`);
  assert.match(shown, /└─ report +completed/);
  // A completed run cannot be cancelled: said without asking.
  r.stdin.write("c");
  await frame(`workflow run ${t.failed} (ingest) is already completed: nothing to cancel`);
  r.unmount();
});

Deno.test("the store-backed workflows data pages runs with their step counts and counts every run by state", async () => {
  const clock = new FakeClock(NOW);
  await using t = await workflowStore(clock);
  const source = fixedStore(t.store);
  const data = storeData({ source, config: noConfig, clock });
  const page = await data.workflowRuns({ state: null, limit: 10 });
  assert.deepEqual(page.runs.map((run) => [run.id, run.workflow, run.state]), [
    [t.failed, "ingest", "failed"],
    [t.completed, "greet", "completed"],
  ]);
  assert.deepEqual(page.runs[0]?.steps, {
    total: 3,
    completed: 1,
    running: 0,
    failed: 1,
    cancelled: 1,
    waiting: 0,
  });
  assert.equal(page.counts.failed, 1);
  assert.equal(page.counts.completed, 1);
  assert.equal(page.counts.running, 0);
  const older = await data.workflowRuns({ state: null, limit: 1, after: t.failed });
  assert.deepEqual(older.runs.map((run) => run.id), [t.completed]);
  const failedOnly = await data.workflowRuns({ state: "failed", limit: 10 });
  assert.deepEqual(failedOnly.runs.map((run) => run.id), [t.failed]);
  const view = await data.workflowRun(t.failed);
  assert.deepEqual(view?.steps.map((s) => [s.id, s.state]), [
    ["fetch", "completed"],
    ["load", "discarded"],
    ["report", "cancelled"],
  ]);
  assert.equal(await data.workflowRun(t.failed + 100), null);
  // An action the run no longer qualifies for is refused with the admin function's words.
  const actions = storeActions({
    source,
    config: noConfig,
    clock,
    actor: "bob",
    environment: null,
  });
  await assert.rejects(
    actions.workflowRun("retry", t.completed, "again"),
    /workflow run \d+ \(greet\) is completed, not failed: only a failed run can be retried/,
  );
  await assert.rejects(
    actions.workflowRun("cancel", t.completed, "stop"),
    /workflow run \d+ \(greet\) is already completed: nothing to cancel/,
  );
});

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] the TUI's / search finds what its rows show, not a redacted secret`, async () => {
    const harness = await backend.open(NOW);
    try {
      const [secret, other] = (await harness.store.jobsInsert({
        now: NOW,
        jobs: [
          newJob({ scheduledAt: NOW, args: JSON.stringify({ argv: ["password=PASS-222"] }) }),
          newJob({ scheduledAt: NOW, args: JSON.stringify({ note: "nothing secret" }) }),
        ],
      })).map((r) => r.id);
      const data = storeData({
        source: fixedStore(harness.store),
        config: noConfig,
        clock: new FakeClock(NOW),
      });
      const search = async (text: string) => {
        const parsed = parseSearch(text);
        assert.ok("filter" in parsed, text);
        const rows = await data.jobs({ filter: parsed.filter, desc: true, limit: 50 });
        const { count } = await data.jobsCount(parsed.filter);
        assert.equal(count, rows.length, `${text}: the count agrees with the rows`);
        return rows.map((j) => j.id);
      };
      assert.deepEqual(await search("PASS-2"), []);
      assert.deepEqual(await search("password"), [secret]);
      assert.deepEqual(await search("[REDACTED]"), [secret]);
      assert.deepEqual(await search("secret"), [other]);
      const [shown] = await data.jobs({ filter: { search: "password" }, desc: true, limit: 1 });
      assert.deepEqual(shown?.args, { argv: ["password=[REDACTED]"] });
    } finally {
      await harness.close();
    }
  });
}

Deno.test("the store-backed data bounds a search to the newest ids and its count to its cap", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  // Ids 1-12: the odd ones match, the newest (12) does not.
  for (let i = 1; i <= 12; i++) {
    await insertJob(temp.store, { args: { customer: i % 2 ? "cust-7" : "cust-8" } });
  }
  const source = fixedStore(temp.store);
  const data = storeData({ source, config: noConfig, clock, searchWindow: 5, searchCountCap: 2 });
  const search = { search: "cust-7" };
  // The newest 5 ids are 8-12: 9 and 11 match, counted to the cap of 2 exactly.
  assert.deepEqual(await data.jobsCount(search), {
    count: 2,
    atLeast: false,
    newest: { window: 5, above: 7 },
  });
  const page = await data.jobs({ filter: search, desc: true, limit: 10 });
  assert.deepEqual(page.map((j) => j.id), [11, 9]);
  assert.deepEqual(
    (await data.jobs({ filter: search, desc: true, limit: 10, after: 9 })).map((j) => j.id),
    [],
    "no page reaches past the window",
  );
  // A third match in the window: the count stops at its cap and says so.
  await insertJob(temp.store, { args: { customer: "cust-7" } });
  assert.deepEqual(await data.jobsCount(search), {
    count: 2,
    atLeast: true,
    newest: { window: 5, above: 8 },
  });
  // A window that holds every job reads them all, and says nothing of a bound.
  const wide = storeData({
    source,
    config: noConfig,
    clock,
    searchWindow: 100,
    searchCountCap: 100,
  });
  assert.deepEqual(await wide.jobsCount(search), { count: 7, atLeast: false, newest: null });
  assert.equal((await wide.jobs({ filter: search, desc: true, limit: 50 })).length, 7);
  // A filter without a search is counted exactly, from the kept counts.
  assert.deepEqual(await data.jobsCount({}), { count: 13, atLeast: false, newest: null });
});

/**
 * One ingest run of `pipeline` made through the store seam as the runner
 * makes it: a `jobs.ingest` job claimed, its run opened at `at`, one
 * chunk committed a minute later with `delta` (a drop row per dropped
 * record), and the run finished in `state` a minute after that.
 */
async function ingestRun(
  store: Store,
  params: {
    pipeline: string;
    at: number;
    delta: Partial<ChunkDelta>;
    state: Exclude<IngestRunState, "running">;
    error?: string;
  },
): Promise<number> {
  const { pipeline, at } = params;
  const [job] = await store.jobsInsert({
    jobs: [newJob({ queue: INGEST_QUEUE, worker: INGEST_WORKER, scheduledAt: at })],
    now: at,
  });
  const { jobs: [claimed] } = await store.jobsClaim({
    queue: INGEST_QUEUE,
    node: "n1",
    limit: 1,
    now: at,
    leaseMs: 600_000,
  });
  assert.equal(claimed?.id, job!.id);
  const run = await store.ingestRunOpen({
    pipeline,
    hash: "h1",
    jobId: claimed.id,
    fence: claimed.fence,
    trigger: "schedule",
    now: at,
  });
  assert.ok(run);
  const lease = { runId: run.id, jobId: claimed.id, fence: claimed.fence };
  const delta: ChunkDelta = {
    received: 0,
    kept: 0,
    sunk: 0,
    failed: 0,
    dropped: {},
    ...params.delta,
  };
  const drops = Object.entries(delta.dropped).flatMap(([reason, n]) =>
    Array.from({ length: n }, (_, i) => ({
      recordKey: `${reason}-${i}`,
      reason,
      step: "dedupe",
      excerpt: "{}",
      record: "{}",
    }))
  );
  assert.ok(
    await store.ingestChunkCommit({
      lease,
      pipeline,
      delta,
      pending: 0,
      cursor: "1",
      drops,
      failures: [],
      cleared: [],
      now: at + 60_000,
    }),
  );
  assert.ok(
    await store.ingestRunFinish({
      lease,
      state: params.state,
      error: params.error ?? null,
      pending: 0,
      now: at + 120_000,
    }),
  );
  return run.id;
}

/** A schedules file declaring `catalog`, promised fresh within 15 minutes. */
const CATALOG_FILE = [
  "version: 1",
  "pipelines:",
  "  - id: catalog",
  "    source: { file: ./feed.ndjson, format: ndjson }",
  "    key: sku",
  "    steps:",
  "      - drop: drop-duplicates",
  '        run: { command: ["./steps/dedupe"] }',
  "    drop_reasons: [duplicate, below-threshold, poison]",
  '    sink: { command: ["./bin/upsert-product"] }',
  "    freshness: { mode: bounded, within: 15m }",
].join("\n");

Deno.test("the pipelines screen on a real store: runs made through the store seam in the list, the open pipeline and the overview", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  const path = `${temp.dir}/schedules.yaml`;
  await Deno.writeTextFile(path, CATALOG_FILE);
  const hour = 3_600_000;
  // catalog: completed 5h and 2h ago (stale: promised within 15m), with drops of two reasons.
  await ingestRun(temp.store, {
    pipeline: "catalog",
    at: NOW - 5 * hour,
    delta: { received: 900, kept: 900, sunk: 900 },
    state: "completed",
  });
  const last = await ingestRun(temp.store, {
    pipeline: "catalog",
    at: NOW - 2 * hour - 120_000,
    delta: {
      received: 1215,
      kept: 1200,
      sunk: 1200,
      dropped: { duplicate: 12, "below-threshold": 3 },
    },
    state: "completed",
  });
  // bank: not in the file; its last run failed 10 minutes ago.
  const failed = await ingestRun(temp.store, {
    pipeline: "bank",
    at: NOW - 12 * 60_000,
    delta: { received: 50, kept: 48, sunk: 40, failed: 8, dropped: { duplicate: 2 } },
    state: "failed",
    error: "sink answered 503",
  });
  const source = fixedStore(temp.store);
  const config = configFile(path);
  const data = storeData({ source, config, clock });

  const views = await data.pipelines(NOW);
  assert.deepEqual(views.map((v) => [v.id, v.declared, v.runs, v.recent.map((r) => r.id)]), [
    ["catalog", true, 2, [last]],
    ["bank", false, 1, [failed]],
  ]);
  assert.deepEqual(views[0]?.droppedLastDay, { duplicate: 12, "below-threshold": 3 });
  assert.deepEqual(views[0]?.droppedLastHour, {});
  assert.deepEqual(views[1]?.droppedLastHour, { duplicate: 2 });
  assert.equal(views[0]?.freshness?.stale, true);
  assert.equal((await data.pipeline("catalog", NOW))?.recent.length, 2, "every recent run");
  assert.equal(await data.pipeline("nowhere", NOW), null);
  const overview = await data.overview(NOW);
  assert.deepEqual(overview.pipelineAttention.map((p) => p.id), ["catalog", "bank"]);

  const r = render(
    <App
      data={data}
      actions={storeActions({ source, config, clock, actor: "bob", environment: null })}
      clock={clock}
      program="jobsctl"
      color={false}
    />,
  );
  const frame = (...texts: string[]) =>
    waitUntil(`a frame with ${texts.map((t) => JSON.stringify(t)).join(", ")}`, () => {
      const shown = r.lastFrame() ?? "";
      return texts.every((t) => shown.includes(t)) ? shown : null;
    });
  await frame(
    'pipeline "catalog" is stale: last complete run 2h ago, promised within 15m',
    `pipeline "bank": last run ${failed} failed 10m ago: sink answered 503`,
  );
  r.stdin.write("6");
  let shown = await frame("[6 Pipelines]", "> catalog");
  assert.match(
    shown,
    new RegExp(`> catalog\\s+STALE 2h\\s+${last}\\s+completed\\s+2h ago\\s+1\\.2k\\s+1\\.2k\\s+0`),
  );
  assert.match(shown, /dropped 1h: none {3}1d: duplicate 12 · below-threshold 3/);
  assert.match(shown, new RegExp(`  bank\\s+-\\s+${failed}\\s+failed\\s+10m ago\\s+50\\s+40\\s+8`));
  assert.match(shown, /dropped 1h: duplicate 2 {3}1d: duplicate 2/);
  assert.match(shown, /j\/k · ⏎ open pipeline · 1-7 views/);
  r.stdin.write("\r");
  shown = await frame("pipeline catalog  2 runs in the store", "runs (2 newest of 2)");
  assert.match(shown, /freshness {2}STALE: last complete run 2h ago, promised within 15m/);
  assert.match(shown, /last day {2}15: duplicate 12 · below-threshold 3/);
  assert.match(
    shown,
    new RegExp(
      `${last}\\s+completed schedule started 2026-03-06 09:58 UTC \\(2h2m ago\\), took 2m`,
    ),
  );
  assert.match(shown, /received 1215 · kept 1200 · sunk 1200 · failed 0 · pending 0/);
  // A new complete run: the next refresh of the clock shows it, and catalog fresh again.
  const fresh = await ingestRun(temp.store, {
    pipeline: "catalog",
    at: NOW - 120_000,
    delta: { received: 10, kept: 10, sunk: 10 },
    state: "completed",
  });
  clock.advance(1000);
  shown = await frame("runs (3 newest of 3)", "freshness  fresh: last complete run 1s ago");
  assert.match(
    shown,
    new RegExp(
      `${fresh}\\s+completed schedule started 2026-03-06 11:58 UTC \\(2m1s ago\\), took 2m`,
    ),
  );
  r.stdin.write("\x1b");
  shown = await frame("> catalog", "fresh 1s");
  assert.match(shown, new RegExp(`> catalog\\s+fresh 1s\\s+${fresh}\\s+completed\\s+1s ago`));
  r.unmount();
});

Deno.test("an idle dashboard reads and draws nothing while the store does not change, and reads again on another connection's commit", async () => {
  await using temp = await tempStore();
  const clock = new FakeClock(NOW);
  const other = await openSqliteStore(temp.path);
  // The dashboard's own connection, as `jobs tui` opens it.
  const source = storeAt(temp.path, { now: () => NOW, explain: String });
  const data = storeData({ source, config: noConfig, clock });
  let reads = 0;
  const overview = data.overview.bind(data);
  data.overview = (now) => (reads++, overview(now));
  const r = render(
    <App
      data={data}
      actions={storeActions({ source, config: noConfig, clock, actor: "bob", environment: null })}
      clock={clock}
      program="jobsctl"
      color={false}
    />,
  );
  try {
    await waitUntil("the first overview", () => r.lastFrame()?.includes("QUEUE"));
    await waitUntil("the first read", () => reads === 1);
    const frames = r.frames.length;
    // Nine ticks of a quiet store: no read, no frame (the old dashboard read and drew nine times).
    for (let i = 0; i < 9; i++) {
      clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(reads, 1, "reads while nothing changed");
    assert.equal(r.frames.length, frames, "frames drawn while nothing changed");

    // Another process enqueues: the store's change watch tells, the next tick reads.
    await other.jobsInsert({ jobs: [newJob({ queue: "fresh", scheduledAt: NOW })], now: NOW });
    await waitUntil("the next tick to read the change", async () => {
      clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return r.lastFrame()?.includes("fresh");
    });
    assert.ok(reads >= 2);
  } finally {
    r.unmount();
    await source.close();
    await other.close();
  }
});

const WORK_FILE = [
  "version: 1",
  "work_queues:",
  "  - id: disputes",
  "    claim: required",
  "    lease: 1h",
  "    score:",
  "      rule: rule/dispute.urgency-score",
  "      inputs: [amount, age, evidence_missing]",
  "      weights: { amount: 0.01, age: 2/day, evidence_missing: 30 }",
  "    actions:",
  "      - id: refund",
  "        run: { worker: refund_dispute }",
  "  - id: reviews",
  "    claim: optional",
  "    lease: 30m",
  "    actions:",
  "      - id: approve",
  "        run: { worker: approve_review }",
].join("\n");

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] the work tab on a real store: a queue's items in listing order with their scores and inputs, claims held and expired, lead time, and a claim taken while it watches`, async () => {
    const harness = await backend.open(NOW);
    const dir = await Deno.makeTempDir();
    try {
      const store = harness.store;
      const path = `${dir}/schedules.yaml`;
      await Deno.writeTextFile(path, WORK_FILE);
      const config = configFile(path);
      const loaded = await config();
      assert.deepEqual(loaded.problems, []);
      const [disputes] = loaded.config!.workQueues;
      const clock = new FakeClock(NOW - 2 * 3_600_000);
      const who = (person: string): WorkActor => ({
        person,
        roles: ["admin"],
        tenant: null,
        door: "library",
        reason: null,
        now: clock.now(),
      });
      const add = (key: string, data: Record<string, unknown>) =>
        store.workItemAdd(addParams(disputes!, { key, data }, "ada", clock.now()));
      // Two hours ago: three items; bo takes the best, whose claim lapses an hour later.
      await add("dsp-1", { amount: 1900, evidence_missing: true });
      await add("dsp-2", { amount: 2500, evidence_missing: false });
      await add("dsp-3", { amount: 40, evidence_missing: false });
      assert.equal((await nextWorkItem(store, disputes!, who("bo")))?.key, "dsp-1");
      // Done within the hour: two items whose lead times are 10 and 30 minutes.
      for (const [key, minutes] of [["old-1", 10], ["old-2", 30]] as const) {
        await add(key, { amount: 1 });
        clock.advance(minutes * 60_000);
        await store.workItemDo({
          queue: "disputes",
          key,
          person: "cy",
          action: "refund",
          job: actionJob(
            disputes!,
            disputes!.actions[0]!,
            { key, tenant: null, data: {} },
            clock.now(),
          ),
          needClaim: false,
          fence: null,
          reason: null,
          now: clock.now(),
        });
      }
      clock.set(NOW - 30 * 60_000);
      // The lifeline clears bo's lapsed claim: its history says expired.
      assert.equal(await store.workItemsExpire({ now: clock.now() }), 1);
      clock.advance(60_000);
      assert.equal((await nextWorkItem(store, disputes!, who("di")))?.key, "dsp-1");
      await store.workItemRelease({
        queue: "disputes",
        key: "dsp-1",
        person: "di",
        now: clock.now(),
      });
      // dsp-2: claimed by ed, lapsed ten minutes ago and not cleared yet.
      await store.workItemClaim({
        queue: "disputes",
        key: "dsp-2",
        person: "ed",
        now: NOW - 70 * 60_000,
        leaseMs: 3_600_000,
      });
      clock.set(NOW);

      const data = storeData({ source: fixedStore(store), config, clock });
      const screen = await data.work(null, 10, NOW);
      assert.deepEqual(screen.queues, ["disputes", "reviews"]);
      const watch = screen.watch!;
      assert.deepEqual(watch.stats, {
        open: 3,
        claimed: 0,
        expired: 1,
        oldestRequestedAt: NOW - 2 * 3_600_000,
        done: 2,
        leadMedianMs: 20 * 60_000,
      });
      assert.deepEqual(
        watch.items.map((i) => [i.key, i.claim?.owner ?? null, i.expiredClaim?.owner ?? null]),
        [["dsp-1", null, null], ["dsp-2", null, "ed"], ["dsp-3", null, null]],
        "released is not expired; lapsed (cleared or not) is",
      );

      const r = render(
        <App
          data={data}
          actions={storeActions({
            source: fixedStore(store),
            config,
            clock,
            actor: "bob",
            environment: null,
          })}
          clock={clock}
          program="jobsctl"
          color={false}
          initialTab="work"
        />,
      );
      const frame = (...texts: string[]) =>
        waitUntil(`a frame with ${texts.map((t) => JSON.stringify(t)).join(", ")}`, () => {
          const shown = r.lastFrame() ?? "";
          return texts.every((t) => shown.includes(t)) ? shown : null;
        });
      let shown = await frame("[7 Work]", "[disputes]", "dsp-3");
      assert.match(
        shown,
        /open 3 {2}claimed 0 {2}expired 1 {2}oldest 2h {2}lead time 20m \(median of 2 done in 1d\)/,
      );
      assert.match(shown, /> +49\.2 dsp-1 +- +amount 1900, age 2h, evidence_missing true/);
      assert.match(
        shown,
        /\n +25\.2 dsp-2 +EXPIRED ed 10m ago +amount 2500, age 2h, evidence_missing f/,
      );
      assert.match(shown, /\n +0\.6 dsp-3 +- +amount 40, age 2h, evidence_missing false/);
      // Someone presses next while the operator watches: the next refresh shows the claim.
      clock.advance(1000);
      assert.equal(
        (await nextWorkItem(store, disputes!, { ...who("fay"), now: clock.now() }))?.key,
        "dsp-1",
      );
      // Each tick reads again (one that met a read still running is owed to the next);
      // a tick every 100 ms leaves the event loop to PostgreSQL's answers between frames.
      shown = await waitUntil("fay's claim on the screen", () => {
        clock.advance(1000);
        const last = r.lastFrame() ?? "";
        return /> +49\.\d dsp-1 +fay, \d+m(\d+s)? left/.test(last) && last.includes("claimed 1")
          ? last
          : null;
      }, { intervalMs: 100 });
      assert.match(shown, /open 3 {2}claimed 1 {2}expired 0/, "next cleared ed's lapsed claim");
      assert.match(shown, /\n +25\.2 dsp-2 +EXPIRED ed /, "and its history says it expired");
      r.stdin.write("l");
      shown = await frame("[reviews]", "no open items");
      r.unmount();
    } finally {
      await harness.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
