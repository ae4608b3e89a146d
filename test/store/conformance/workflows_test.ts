/**
 * The workflow methods of the `Store` interface, called directly on every
 * backend, and the bookkeeping they share (`src/workflow/bookkeeping.ts`):
 * each adapter answers the same operations, so a run started, advanced by a
 * step's end (recorded, cancelled, discarded or rescued), cancelled,
 * retried, listed and pruned must read the same on both. Each step runs on
 * a queue named after it, so a test claims exactly the step it means; a
 * step's result carries its run (`workflow`) as the executor's does.
 */

import assert from "node:assert/strict";
import type { ClaimedJob, JobResult } from "../../../src/kernel/types.ts";
import type { Store } from "../../../src/store/store.ts";
import { compileWorkflow, type WorkflowStepOptions } from "../../../src/workflow/definition.ts";
import type { CompiledWorkflow, WorkflowRunDetail } from "../../../src/workflow/types.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, completed, insert, LEASE_MS, newJob, stateOf, T0 } from "./helpers.ts";

const NODE = "node-a";

/**
 * A plain workflow whose steps run the workers `w.<step>` on the queue
 * `<step>`, each once (a failure is final), unless a step says otherwise.
 */
function plain(id: string, steps: WorkflowStepOptions[]): CompiledWorkflow {
  return compileWorkflow({
    id,
    steps: steps.map((s) => ({ worker: `w.${s.id}`, queue: s.id, maxAttempts: 1, ...s })),
  });
}

/** `first` then `second`: the smallest run with a dependency. */
const PAIR = plain("pair", [{ id: "first" }, { id: "second", dependsOn: ["first"] }]);
/** One step. */
const SOLO = plain("solo", [{ id: "only" }]);

function start(
  store: Pick<Store, "workflowStart">,
  definition: CompiledWorkflow,
  fields: { input?: unknown; tenant?: string | null; key?: string | null; now?: number } = {},
) {
  return store.workflowStart({
    definition,
    input: JSON.stringify(fields.input ?? {}),
    tenant: fields.tenant ?? null,
    key: fields.key ?? null,
    now: fields.now ?? T0,
  });
}

/** Records `results` of node-a's attempts at `now`. */
function record(store: Store, now: number, ...results: JobResult[]) {
  return store.jobsRecord({ node: NODE, now, results });
}

/**
 * The completion of a step's job with its result (JSON text), as the
 * executor writes it: with the job's occurrence and the run it is a step of.
 */
function done(job: ClaimedJob, run: number, value?: unknown): JobResult {
  return completed(job, {
    occurrence: job.occurrence,
    workflow: run,
    ...(value === undefined ? {} : { value: JSON.stringify(value) }),
  });
}

/** A step's job discarded with `error`. */
function failed(job: ClaimedJob, run: number, error: string): JobResult {
  return {
    ...completed(job),
    outcome: "discarded",
    error,
    occurrence: job.occurrence,
    workflow: run,
  } as JobResult;
}

/** A claimed job's args, parsed. */
function argsOf(job: ClaimedJob): unknown {
  return JSON.parse(job.args);
}

/** A run's detail, failing the test when there is none. */
async function detailOf(store: Store, id: number): Promise<WorkflowRunDetail> {
  const detail = await store.workflowGet({ id });
  assert.ok(detail, `run ${id} exists`);
  return detail;
}

/** Each step row as `[kind, step, item, state]`, in the order workflowGet() gives them. */
async function rowsOf(store: Store, id: number) {
  return (await detailOf(store, id)).steps.map((s) => [s.kind, s.step, s.item, s.state]);
}

/** Runs `plain` to the end: completes every step of a run of SOLO at `now`. */
async function completeSolo(store: Store, now: number): Promise<number> {
  const { id } = await start(store, SOLO, { now });
  const job = await claimOne(store, { queue: "only", now });
  await record(store, now, done(job, id, "ok"));
  return id;
}

/** A run of SOLO whose step was discarded at `now`: failed. */
async function failSolo(store: Store, now: number): Promise<number> {
  const { id } = await start(store, SOLO, { now });
  const job = await claimOne(store, { queue: "only", now });
  await record(store, now, failed(job, id, "boom"));
  return id;
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("workflowStart() writes the run and the jobs of its first steps; a used key returns that run and writes nothing", async ({ store }) => {
    const definition = plain("orders", [
      { id: "fetch" },
      { id: "audit", tags: ["books"] },
      { id: "ship", dependsOn: ["fetch"] },
    ]);
    const started = await start(store, definition, {
      input: { order: 7 },
      tenant: "acme",
      key: "orders@1",
      now: T0 + 5,
    });
    assert.equal(started.duplicate, false);
    assert.deepEqual([...started.queues].sort(), ["audit", "fetch"]);
    const detail = await detailOf(store, started.id);
    assert.deepEqual(detail.run, {
      id: started.id,
      workflow: "orders",
      hash: definition.hash,
      state: "running",
      input: { order: 7 },
      tenant: "acme",
      key: "orders@1",
      error: null,
      cancelReason: null,
      startedAt: T0 + 5,
      finishedAt: null,
      updatedAt: T0 + 5,
    });
    assert.deepEqual(detail.definition, definition);
    assert.deepEqual(
      detail.steps.map((s) => [s.kind, s.step, s.item, s.state, s.result, s.seq, s.cursor]),
      [
        ["step", "audit", -1, "running", null, null, null],
        ["step", "fetch", -1, "running", null, null, null],
      ],
    );
    assert.ok(detail.steps.every((s) => s.createdAt === T0 + 5 && s.finishedAt === null));
    for (const step of detail.steps) {
      const job = await store.jobGet({ id: step.jobId! });
      assert.deepEqual(
        [job?.state, job?.queue, job?.worker, job?.tenant, job?.occurrence, job?.maxAttempts],
        ["available", step.step, `w.${step.step}`, "acme", `${started.id}/${step.step}`, 1],
      );
      assert.equal(job?.scheduledAt, T0 + 5);
      assert.deepEqual(job?.args, { input: { order: 7 }, results: {} });
      assert.deepEqual(job?.meta.workflow, {
        run: started.id,
        workflow: "orders",
        step: step.step,
        item: -1,
        kind: "step",
        useCase: null,
      });
    }
    assert.deepEqual((await store.jobGet({ id: detail.steps[0]!.jobId! }))?.tags, ["books"]);

    const again = await start(store, definition, { input: { order: 8 }, key: "orders@1" });
    assert.deepEqual(again, { id: started.id, duplicate: true, queues: [] });
    assert.equal((await store.workflowsList({})).length, 1);
    assert.equal(await store.jobsCountMatching({}), 2);
    // Without a key every start is a run of its own.
    const [one, two] = [await start(store, definition), await start(store, definition)];
    assert.ok(!one.duplicate && !two.duplicate && two.id > one.id && one.id > started.id);
    assert.equal(await store.workflowGet({ id: two.id + 1 }), null);
  });

  test("a step's completion written by jobsRecord() starts its dependants in that write; the last completes the run", async ({ store }) => {
    const definition = plain("parcel", [
      { id: "fetch" },
      { id: "pack", dependsOn: ["fetch"] },
      { id: "label", dependsOn: ["fetch"] },
      { id: "send", dependsOn: ["pack", "label"] },
    ]);
    const { id } = await start(store, definition, { input: { to: "Oslo" } });
    const fetch = await claimOne(store, { queue: "fetch", now: T0 + 1 });
    // A result whose lease is gone is lost, and advances nothing.
    const stale = await record(store, T0 + 2, {
      ...done(fetch, id, "x"),
      fence: fetch.fence + 1,
    });
    assert.deepEqual(stale, { recorded: [], lost: [fetch.id] });
    assert.deepEqual(await rowsOf(store, id), [["step", "fetch", -1, "running"]]);

    const report = await record(store, T0 + 3, done(fetch, id, { boxes: 2 }));
    assert.deepEqual(report.recorded, [fetch.id]);
    assert.deepEqual([...report.queues!].sort(), ["label", "pack"]);
    let detail = await detailOf(store, id);
    const fetched = detail.steps.find((s) => s.step === "fetch")!;
    assert.deepEqual(
      [fetched.state, fetched.result, fetched.seq, fetched.finishedAt],
      ["completed", '{"boxes":2}', 1, T0 + 3],
    );
    const pack = await claimOne(store, { queue: "pack", now: T0 + 4 });
    const label = await claimOne(store, { queue: "label", now: T0 + 4 });
    assert.deepEqual(argsOf(pack), { input: { to: "Oslo" }, results: { fetch: { boxes: 2 } } });

    // Two steps of one run ending in one batch: the fan-in starts once, after both.
    const both = await record(store, T0 + 5, done(pack, id, "p"), done(label, id, "l"));
    assert.deepEqual(both.queues, ["send"]);
    detail = await detailOf(store, id);
    assert.deepEqual(
      detail.steps.filter((s) => s.seq !== null).map((s) => [s.step, s.seq]).sort(),
      [["fetch", 1], ["label", 3], ["pack", 2]],
    );
    const send = await claimOne(store, { queue: "send", now: T0 + 6 });
    assert.deepEqual(argsOf(send), {
      input: { to: "Oslo" },
      results: { pack: "p", label: "l" },
    });
    assert.equal(detail.run.state, "running");

    const last = await record(store, T0 + 7, done(send, id));
    assert.equal(last.queues, undefined);
    detail = await detailOf(store, id);
    assert.deepEqual(
      [detail.run.state, detail.run.error, detail.run.finishedAt, detail.run.updatedAt],
      ["completed", null, T0 + 7, T0 + 7],
    );
    // A step that returned nothing completed with null.
    assert.equal(detail.steps.find((s) => s.step === "send")?.result, "null");
    assert.deepEqual(await store.workflowsCount(), [
      { workflow: "parcel", state: "completed", count: 1 },
    ]);
  });

  test("a step's completion that names its run and no occurrence advances it too, recorded or carried by a claim", async ({ store }) => {
    // The executor sends a step job's occurrence with its result; the result
    // type asks only for the run, and the store advances the run from that.
    const { id } = await start(
      store,
      plain("bare", [
        { id: "one" },
        { id: "two", dependsOn: ["one"] },
        { id: "three", dependsOn: ["two"] },
      ]),
    );
    const one = await claimOne(store, { queue: "one" });
    const recorded = await record(store, T0 + 1, completed(one, { workflow: id, value: "1" }));
    assert.deepEqual([recorded.recorded, recorded.queues], [[one.id], ["two"]]);
    const two = await claimOne(store, { queue: "two", now: T0 + 1 });
    const { report } = await store.jobsClaim({
      queue: "three",
      node: NODE,
      limit: 0,
      now: T0 + 2,
      leaseMs: LEASE_MS,
      results: [completed(two, { workflow: id, value: "2" })],
    });
    assert.deepEqual([report.recorded, report.queues], [[two.id], ["three"]]);
    assert.deepEqual(await rowsOf(store, id), [
      ["step", "one", -1, "completed"],
      ["step", "two", -1, "completed"],
      ["step", "three", -1, "running"],
    ]);
  });

  test("a step discarded by jobsRecord() cancels its dependants and fails the run once nothing runs, on the run's trail by that node", async ({ store }) => {
    const definition = plain("pay", [
      { id: "charge" },
      { id: "receipt", dependsOn: ["charge"] },
      { id: "side" },
    ]);
    const { id } = await start(store, definition);
    const charge = await claimOne(store, { queue: "charge" });
    await record(store, T0 + 1, failed(charge, id, "card declined\n  at charge (pay.ts:1)"));
    let detail = await detailOf(store, id);
    // The step still running keeps the run going; the failure is its error already.
    assert.deepEqual([detail.run.state, detail.run.finishedAt], ["running", null]);
    assert.equal(
      detail.run.error,
      'step "charge" discarded: card declined\n  at charge (pay.ts:1)',
    );
    const receipt = detail.steps.find((s) => s.step === "receipt")!;
    assert.deepEqual(
      [receipt.state, receipt.jobId, receipt.error],
      ["cancelled", null, "upstream failed: charge"],
    );

    const side = await claimOne(store, { queue: "side", now: T0 + 2 });
    await record(store, T0 + 3, done(side, id, 1));
    detail = await detailOf(store, id);
    assert.deepEqual([detail.run.state, detail.run.finishedAt], ["failed", T0 + 3]);
    assert.match(detail.run.error!, /^step "charge" discarded: card declined/);
    const trail = await store.auditList({ target: `workflow:${id}` });
    assert.deepEqual(
      trail.map((a) => [a.at, a.actor, a.action, a.reason, a.details]),
      [[
        T0 + 1,
        NODE,
        "step.discard",
        'step "charge" discarded: card declined\n  at charge (pay.ts:1)',
        { step: "charge", job: charge.id, run: "running" },
      ]],
    );
  });

  test("a step's job ended by jobsCancel(), jobsDiscard() or jobsRescue() advances its run, on the trail by who ended it", async ({ store }) => {
    const cancelled = await start(store, plain("c", [{ id: "c1" }]));
    const discarded = await start(store, plain("d", [{ id: "d1" }]));
    const rescued = await start(store, plain("r", [{ id: "r1" }]));
    const [c1] = await claim(store, { queue: "c1" });
    const [r1] = await claim(store, { queue: "r1" });
    const [d1] = await store.jobsList({ queue: "d1" });
    // An executing step's job and a waiting one are stopped alike.
    await store.jobsCancel({ ids: [c1!.id], now: T0 + 1, reason: "not today", actor: "ops" });
    await store.jobsDiscard({ ids: [d1!.id], now: T0 + 2, reason: "poison", actor: "ann" });
    const later = T0 + LEASE_MS + 1;
    const rescue = await store.jobsRescue({ now: later, limit: 10 });
    assert.deepEqual([rescue.rescued, rescue.discarded], [0, 1]);

    const ends: [number, number, string, string, string][] = [
      [cancelled.id, T0 + 1, "ops", "step.cancel", 'step "c1" cancelled: not today'],
      [discarded.id, T0 + 2, "ann", "step.discard", 'step "d1" discarded: poison'],
      [
        rescued.id,
        later,
        "jobs",
        "step.discard",
        `step "r1" discarded: orphaned: lease of ${NODE} expired`,
      ],
    ];
    for (const [run, at, actor, action, reason] of ends) {
      const detail = await detailOf(store, run);
      assert.deepEqual(
        [detail.run.state, detail.run.error, detail.run.finishedAt],
        ["failed", reason, at],
      );
      const trail = await store.auditList({ target: `workflow:${run}` });
      assert.deepEqual(trail.map((a) => [a.at, a.actor, a.action, a.reason]), [
        [at, actor, action, reason],
      ]);
    }
    assert.equal(r1?.id, (await detailOf(store, rescued.id)).steps[0]?.jobId);
  });

  test("workflowCancel() of a plain run cancels its waiting steps and ends it cancelled once its executing step finishes", async ({ store }) => {
    const definition = plain("cart", [
      { id: "hold" },
      { id: "note" },
      { id: "bill", dependsOn: ["hold"] },
    ]);
    const { id } = await start(store, definition);
    const hold = await claimOne(store, { queue: "hold" });
    const note = (await detailOf(store, id)).steps.find((s) => s.step === "note")!.jobId!;

    const result = await store.workflowCancel({ id, now: T0 + 5, reason: "customer left" });
    assert.deepEqual(result, { was: "running", state: "running", jobs: [note] });
    assert.equal(await stateOf(store, note), "cancelled");
    assert.equal(await stateOf(store, hold.id), "executing");
    let detail = await detailOf(store, id);
    assert.deepEqual(
      [detail.run.state, detail.run.cancelReason, detail.run.error],
      ["running", "customer left", "cancelled: customer left"],
    );
    assert.deepEqual(await rowsOf(store, id), [
      ["step", "hold", -1, "running"],
      ["step", "note", -1, "cancelled"],
    ]);

    // The executing step finishes; its dependant never starts.
    const report = await record(store, T0 + 6, done(hold, id, "held"));
    assert.equal(report.queues, undefined);
    detail = await detailOf(store, id);
    assert.deepEqual(
      [detail.run.state, detail.run.finishedAt, detail.run.error],
      ["cancelled", T0 + 6, "cancelled: customer left"],
    );
    assert.ok(!detail.steps.some((s) => s.step === "bill"));
    // A final run is left as it is; an unknown one is null.
    assert.deepEqual(await store.workflowCancel({ id, now: T0 + 7, reason: "again" }), {
      was: "cancelled",
      state: "cancelled",
      jobs: [],
    });
    assert.equal((await detailOf(store, id)).run.cancelReason, "customer left");
    assert.equal(await store.workflowCancel({ id: id + 99, now: T0, reason: "x" }), null);
  });

  test("workflowRetry() of a failed run runs its failed step again, drops the steps it cancelled, and the run completes", async ({ store }) => {
    const { id } = await start(store, PAIR);
    const first = await claimOne(store, { queue: "first" });
    await record(store, T0 + 1, failed(first, id, "flaky"));
    assert.deepEqual(await rowsOf(store, id), [
      ["step", "first", -1, "discarded"],
      ["step", "second", -1, "cancelled"],
    ]);
    assert.equal((await detailOf(store, id)).run.state, "failed");

    const retried = await store.workflowRetry({ id, now: T0 + 10 });
    assert.deepEqual(retried, { was: "failed", state: "running", jobs: [first.id] });
    const job = await store.jobGet({ id: first.id });
    assert.deepEqual([job?.state, job?.scheduledAt], ["available", T0 + 10]);
    let detail = await detailOf(store, id);
    // The error of the last failure stays while the run goes again.
    assert.deepEqual(
      [detail.run.state, detail.run.finishedAt, detail.run.error],
      ["running", null, 'step "first" discarded: flaky'],
    );
    assert.deepEqual(await rowsOf(store, id), [["step", "first", -1, "running"]]);
    // Only a failed run is retried.
    assert.deepEqual(await store.workflowRetry({ id, now: T0 + 11 }), {
      was: "running",
      state: "running",
      jobs: [],
    });
    assert.equal(await store.workflowRetry({ id: id + 99, now: T0 }), null);

    const again = await claimOne(store, { queue: "first", now: T0 + 10 });
    await record(store, T0 + 12, done(again, id, 1));
    const second = await claimOne(store, { queue: "second", now: T0 + 12 });
    await record(store, T0 + 13, done(second, id, 2));
    detail = await detailOf(store, id);
    assert.deepEqual([detail.run.state, detail.run.error], ["completed", null]);
  });

  test("a saga's failed step runs the compensations of the completed ones, newest first, one at a time", async ({ store }) => {
    const definition = compileWorkflow({
      id: "lend",
      carriedBy: "workflow",
      queue: "undo",
      useCases: {
        "uc/hold": "w.hold",
        "uc/charge": "w.charge",
        "uc/notify": "w.notify",
        "uc/unhold": "w.unhold",
        "uc/refund": "w.refund",
      },
      steps: [
        {
          id: "hold",
          useCase: "uc/hold",
          queue: "hold",
          compensation: { mode: "use-case", useCase: "uc/unhold" },
        },
        {
          id: "charge",
          useCase: "uc/charge",
          queue: "charge",
          dependsOn: ["hold"],
          compensation: { mode: "use-case", useCase: "uc/refund" },
        },
        {
          id: "notify",
          useCase: "uc/notify",
          queue: "notify",
          dependsOn: ["charge"],
          compensation: { mode: "none", reason: "a sent notice cannot be recalled" },
        },
      ],
    });
    const { id } = await start(store, definition, { input: { book: 3 } });
    await record(store, T0 + 1, done(await claimOne(store, { queue: "hold" }), id, "h"));
    await record(
      store,
      T0 + 2,
      done(await claimOne(store, { queue: "charge", now: T0 + 1 }), id, "c"),
    );
    const notify = await claimOne(store, { queue: "notify", now: T0 + 2 });
    await record(store, T0 + 3, failed(notify, id, "mail down"));
    let detail = await detailOf(store, id);
    assert.deepEqual(
      [detail.run.state, detail.run.error],
      ["compensating", 'step "notify" discarded: mail down'],
    );

    const refund = await claimOne(store, { queue: "undo", now: T0 + 4 });
    assert.deepEqual(await claim(store, { queue: "undo", now: T0 + 4 }), [], "one at a time");
    assert.equal((await store.jobGet({ id: refund.id }))?.occurrence, `${id}/charge:compensate`);
    assert.deepEqual(argsOf(refund), {
      input: { book: 3 },
      results: { hold: "h", charge: "c", notify: null },
      compensates: { step: "charge", result: "c" },
    });
    await record(store, T0 + 5, done(refund, id));
    const unhold = await claimOne(store, { queue: "undo", now: T0 + 5 });
    assert.equal((await store.jobGet({ id: unhold.id }))?.occurrence, `${id}/hold:compensate`);
    await record(store, T0 + 6, done(unhold, id));

    detail = await detailOf(store, id);
    assert.deepEqual(
      [detail.run.state, detail.run.error, detail.run.finishedAt],
      ["compensated", 'step "notify" discarded: mail down', T0 + 6],
    );
    assert.deepEqual(await rowsOf(store, id), [
      ["step", "hold", -1, "completed"],
      ["step", "charge", -1, "completed"],
      ["step", "notify", -1, "discarded"],
      ["compensation", "charge", -1, "completed"],
      ["compensation", "hold", -1, "completed"],
    ]);
    assert.deepEqual(await store.workflowCompensationsCount(), [
      { workflow: "lend", state: "completed", count: 2 },
    ]);
    assert.deepEqual(await store.workflowsCount(), [
      { workflow: "lend", state: "compensated", count: 1 },
    ]);
  });

  test("a fanned-out step's items end in batches: the count of those left falls, and the fan-in starts once, after the last", async ({ store }) => {
    const definition = plain("squares", [
      { id: "list" },
      { id: "square", forEach: "list" },
      { id: "sum", dependsOn: ["square"] },
    ]);
    const { id } = await start(store, definition, { input: { n: 3 } });
    const list = await claimOne(store, { queue: "list" });
    const listed = await record(store, T0 + 1, done(list, id, [1, 2, 3]));
    assert.deepEqual(listed.queues, ["square"]);
    let detail = await detailOf(store, id);
    const step = detail.steps.find((s) => s.step === "square" && s.item === -1)!;
    assert.deepEqual([step.state, step.jobId, step.items, step.remaining], ["running", null, 3, 3]);
    const items = detail.steps.filter((s) => s.step === "square" && s.item >= 0);
    assert.deepEqual(items.map((s) => [s.item, s.state]), [[0, "running"], [1, "running"], [
      2,
      "running",
    ]]);
    const jobs = await claim(store, { queue: "square", now: T0 + 2 });
    assert.deepEqual(
      jobs.map((j) => j.id).sort((a, b) => a - b),
      items.map((s) => s.jobId).sort((a, b) => a! - b!),
    );
    const byItem = new Map(jobs.map((j) => [(argsOf(j) as { item: number }).item, j]));
    assert.deepEqual(argsOf(byItem.get(2)!), { input: { n: 3 }, results: {}, item: 2 });
    assert.equal((await store.jobGet({ id: byItem.get(2)!.id }))?.occurrence, `${id}/square#1`);

    // Two items in one batch: one less each, no fan-in yet.
    const two = await record(
      store,
      T0 + 3,
      done(byItem.get(3)!, id, 9),
      done(byItem.get(1)!, id, 1),
    );
    assert.equal(two.queues, undefined);
    detail = await detailOf(store, id);
    assert.equal(detail.steps.find((s) => s.step === "square" && s.item === -1)?.remaining, 1);
    assert.ok(!detail.steps.some((s) => s.step === "sum"));

    const last = await record(store, T0 + 4, done(byItem.get(2)!, id, 4));
    assert.deepEqual(last.queues, ["sum"]);
    detail = await detailOf(store, id);
    const square = detail.steps.find((s) => s.step === "square" && s.item === -1)!;
    assert.deepEqual(
      [square.state, square.remaining, square.result, square.seq],
      ["completed", 0, "[1,4,9]", 2],
    );
    const sum = await claimOne(store, { queue: "sum", now: T0 + 4 });
    assert.deepEqual(argsOf(sum), { input: { n: 3 }, results: { square: [1, 4, 9] } });
  });

  test("workflowCancel() during a fan-out cancels the waiting items and lets the executing one finish", async ({ store }) => {
    const definition = plain("fan", [
      { id: "list" },
      { id: "each", forEach: "list" },
      { id: "after", dependsOn: ["each"] },
    ]);
    const { id } = await start(store, definition);
    await record(
      store,
      T0 + 1,
      done(await claimOne(store, { queue: "list" }), id, ["a", "b", "c"]),
    );
    const running = await claimOne(store, { queue: "each", now: T0 + 2 });
    assert.deepEqual(argsOf(running), { input: {}, results: {}, item: "a" });
    const result = await store.workflowCancel({ id, now: T0 + 3, reason: "enough" });
    const waiting = (await detailOf(store, id)).steps
      .filter((s) => s.step === "each" && s.item >= 0 && s.jobId !== running.id)
      .map((s) => s.jobId!);
    assert.deepEqual(result?.was, "running");
    assert.deepEqual([...result!.jobs].sort((a, b) => a - b), waiting.sort((a, b) => a - b));
    for (const job of waiting) assert.equal(await stateOf(store, job), "cancelled");
    assert.deepEqual(await rowsOf(store, id), [
      ["step", "list", -1, "completed"],
      ["step", "each", -1, "cancelled"],
      ["step", "each", 0, "running"],
      ["step", "each", 1, "cancelled"],
      ["step", "each", 2, "cancelled"],
    ]);
    assert.equal(result?.state, "cancelled");

    await record(store, T0 + 4, done(running, id, "late"));
    const detail = await detailOf(store, id);
    assert.deepEqual([detail.run.state, detail.run.error], ["cancelled", "cancelled: enough"]);
    const item = detail.steps.find((s) => s.jobId === running.id)!;
    assert.deepEqual([item.state, item.result], ["completed", '"late"']);
    assert.ok(!detail.steps.some((s) => s.step === "after"));
  });

  test("workflowsList() filters by state and definition, newest first unless told, and pages with after", async ({ store }) => {
    const ids: number[] = [];
    for (let n = 0; n < 7; n++) {
      ids.push(
        n % 3 === 0
          ? await failSolo(store, T0 + n)
          : (await start(store, PAIR, { now: T0 + n })).id,
      );
    }
    const list = async (filter: Parameters<Store["workflowsList"]>[0]) =>
      (await store.workflowsList(filter)).map((r) => r.id);
    assert.deepEqual(await list({}), [...ids].reverse());
    assert.deepEqual(await list({ desc: false }), ids);
    assert.deepEqual(await list({ state: "failed" }), [ids[6], ids[3], ids[0]]);
    assert.deepEqual(await list({ state: ["failed", "completed"], desc: false }), [
      ids[0],
      ids[3],
      ids[6],
    ]);
    assert.deepEqual(await list({ state: [] }), []);
    assert.deepEqual(await list({ workflow: "pair", limit: 2 }), [ids[5], ids[4]]);
    assert.deepEqual(await list({ workflow: "pair", limit: 2, after: ids[4] }), [ids[2], ids[1]]);
    assert.deepEqual(await list({ workflow: "pair", desc: false, after: ids[2] }), [
      ids[4],
      ids[5],
    ]);
    assert.deepEqual(await list({ workflow: "none" }), []);
    const [newest] = await store.workflowsList({ limit: 1 });
    assert.deepEqual([newest?.workflow, newest?.state, newest?.startedAt], [
      "solo",
      "failed",
      T0 + 6,
    ]);
    assert.deepEqual(await store.workflowsCount(), [
      { workflow: "pair", state: "running", count: 4 },
      { workflow: "solo", state: "failed", count: 3 },
    ]);
    await assert.rejects(
      store.workflowsList({ state: "done" as "completed" }),
      (e: Error) => e instanceof RangeError && /"done"/.test(e.message),
    );
    await assert.rejects(
      store.workflowsList({ limit: 0 }),
      (e: Error) =>
        e instanceof RangeError && /limit must be a whole number >= 1, got 0/.test(e.message),
    );
    await assert.rejects(
      store.workflowsList({ after: 1.5 }),
      (e: Error) => e instanceof RangeError && /after must be a run id .* got 1\.5/.test(e.message),
    );
  });

  test("workflowsList() and workflowGet() with a tenant see only that tenant's runs", async ({ store }) => {
    const acme = (await start(store, SOLO, { tenant: "acme", now: T0 })).id;
    const globex = (await start(store, PAIR, { tenant: "globex", now: T0 + 1 })).id;
    const none = (await start(store, SOLO, { now: T0 + 2 })).id;
    const acme2 = (await start(store, PAIR, { tenant: "acme", now: T0 + 3 })).id;
    const list = async (filter: Parameters<Store["workflowsList"]>[0]) =>
      (await store.workflowsList(filter)).map((r) => r.id);
    assert.deepEqual(await list({}), [acme2, none, globex, acme]);
    assert.deepEqual(await list({ tenant: "acme" }), [acme2, acme]);
    assert.deepEqual(await list({ tenant: "acme", workflow: "solo" }), [acme]);
    assert.deepEqual(await list({ tenant: "acme", after: acme2 }), [acme]);
    assert.deepEqual(await list({ tenant: "globex", state: "running" }), [globex]);
    assert.deepEqual(await list({ tenant: "initech" }), []);
    assert.equal((await store.workflowGet({ id: acme, tenant: "acme" }))?.run.tenant, "acme");
    assert.equal(await store.workflowGet({ id: globex, tenant: "acme" }), null);
    assert.equal(await store.workflowGet({ id: none, tenant: "acme" }), null);
    assert.equal((await store.workflowGet({ id: none }))?.run.tenant, null);
    assert.equal((await store.workflowGet({ id: globex }))?.steps.length, 1);
  });

  test("workflowsPrune() deletes final runs that ended before their kind's cutoff, at most limit, with their step rows", async ({ store }) => {
    const completedRun = await completeSolo(store, T0 + 10);
    const failedRun = await failSolo(store, T0 + 20);
    const { id: cancelledRun } = await start(store, SOLO, { now: T0 + 30 });
    await store.workflowCancel({ id: cancelledRun, now: T0 + 30, reason: "stop" });
    const { id: runningRun } = await start(store, SOLO, { now: T0 });
    const stepJob = (await detailOf(store, completedRun)).steps[0]!.jobId!;
    assert.equal((await detailOf(store, cancelledRun)).run.state, "cancelled");

    const all = { completed: T0 + 1000, cancelled: T0 + 1000, discarded: T0 + 1000 };
    // A cutoff at the instant a run ended keeps it; a missing cutoff keeps its kind.
    assert.equal(
      await store.workflowsPrune({
        before: { completed: T0 + 10, cancelled: T0 + 30, discarded: T0 + 20 },
        limit: 10,
      }),
      0,
    );
    assert.equal(await store.workflowsPrune({ before: { completed: T0 + 11 }, limit: 10 }), 1);
    assert.equal(await store.workflowGet({ id: completedRun }), null);
    assert.equal(await store.workflowCursorGet({ jobId: stepJob }), null);
    // The step's job is a job like any other: the jobs' own retention removes it.
    assert.equal(await stateOf(store, stepJob), "completed");
    assert.equal(await store.workflowsPrune({ before: all, limit: 1 }), 1);
    assert.equal(await store.workflowGet({ id: failedRun }), null, "oldest first");
    assert.equal(await store.workflowsPrune({ before: all, limit: 10 }), 1);
    assert.equal(await store.workflowGet({ id: cancelledRun }), null);
    assert.equal(await store.workflowsPrune({ before: all, limit: 10 }), 0);
    assert.deepEqual((await store.workflowsList({})).map((r) => r.id), [runningRun]);
    assert.equal((await detailOf(store, runningRun)).steps.length, 1);
  });

  test("workflowCursorSet() writes only under the step job's lease; workflowCursorGet() reads it back as written", async ({ store }) => {
    const { id } = await start(store, SOLO);
    const job = await claimOne(store, { queue: "only" });
    assert.equal(await store.workflowCursorGet({ jobId: job.id }), null);
    const odd = JSON.stringify({ at: 600, note: 'nul \u0000, quote ", snow ☃, line\nbreak' });
    const set = (fence: number, value: string, now = T0 + 1) =>
      store.workflowCursorSet({ jobId: job.id, fence, value, now });
    assert.equal(await set(job.fence + 1, '"stale"'), false);
    assert.equal(await set(job.fence - 1, '"stale"'), false);
    assert.equal(await store.workflowCursorGet({ jobId: job.id }), null);
    assert.equal(await set(job.fence, '{"at":1}'), true);
    assert.equal(await set(job.fence, odd), true);
    assert.equal(await store.workflowCursorGet({ jobId: job.id }), odd);
    assert.deepEqual(
      JSON.parse((await store.workflowCursorGet({ jobId: job.id }))!).note,
      'nul \u0000, quote ", snow ☃, line\nbreak',
    );
    assert.equal((await detailOf(store, id)).steps[0]?.cursor, odd);

    // A job that is no step's has no cursor; an ended lease writes none.
    const [plainJob] = await insert(store, [newJob({ queue: "plain" })]);
    const other = await claimOne(store, { queue: "plain" });
    assert.equal(other.id, plainJob);
    assert.equal(
      await store.workflowCursorSet({ jobId: other.id, fence: other.fence, value: "1", now: T0 }),
      false,
    );
    assert.equal(await store.workflowCursorGet({ jobId: other.id }), null);
    await record(store, T0 + 2, done(job, id));
    assert.equal(await set(job.fence, '"after"', T0 + 3), false);
    assert.equal(await store.workflowCursorGet({ jobId: job.id }), odd);
  });

  test("transaction() commits or rolls back a workflow's start, cancel, retry and cursor with the rest", async ({ store }) => {
    const failedRun = await failSolo(store, T0);
    const { id: runningRun } = await start(store, PAIR);
    const first = await claimOne(store, { queue: "first" });
    const work = (tx: Parameters<Parameters<Store["transaction"]>[0]>[0]) => async () => {
      const started = await start(tx, SOLO, { key: "in-tx", now: T0 + 1 });
      assert.equal((await tx.workflowGet({ id: started.id }))?.run.state, "running");
      assert.equal((await tx.workflowRetry({ id: failedRun, now: T0 + 1 }))?.state, "running");
      assert.equal(
        await tx.workflowCursorSet({
          jobId: first.id,
          fence: first.fence,
          value: "7",
          now: T0 + 1,
        }),
        true,
      );
      assert.equal(
        (await tx.workflowCancel({ id: runningRun, now: T0 + 1, reason: "tx" }))?.was,
        "running",
      );
      await tx.settingSet({ key: "tx.wf", value: started.id, now: T0 + 1 });
      return started.id;
    };
    await assert.rejects(
      store.transaction(async (tx) => {
        await work(tx)();
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    assert.deepEqual(
      (await store.workflowsList({ desc: false })).map((r) => [r.id, r.state, r.cancelReason]),
      [[failedRun, "failed", null], [runningRun, "running", null]],
    );
    assert.equal(await store.workflowCursorGet({ jobId: first.id }), null);
    assert.equal(await store.settingGet({ key: "tx.wf" }), null);
    assert.equal(await store.jobsCountMatching({ queue: "only", state: "available" }), 0);

    const made = await store.transaction((tx) => work(tx)());
    assert.equal(await store.settingGet({ key: "tx.wf" }), made);
    assert.deepEqual(
      (await store.workflowsList({ desc: false })).map((r) => [r.id, r.state, r.cancelReason]),
      [[failedRun, "running", null], [runningRun, "running", "tx"], [made, "running", null]],
    );
    assert.equal(await store.workflowCursorGet({ jobId: first.id }), "7");
    assert.equal(await store.jobsCountMatching({ queue: "only", state: "available" }), 2);
  });

  test("a run's input, results, tenant and reasons keep quotes, newlines, escaped U+0000 and any script as given", async ({ store }) => {
    const odd = { text: 'a "quoted"\nline, nul \u0000, tab\t, ☃ 😀 ğ', list: ["\\", "%_"] };
    const definition = plain("odd", [{ id: "one" }, { id: "two", dependsOn: ["one"] }]);
    const { id } = await start(store, definition, {
      input: odd,
      tenant: "société ☃",
      key: 'clé "1"',
    });
    let detail = await detailOf(store, id);
    assert.deepEqual([detail.run.input, detail.run.tenant, detail.run.key], [
      odd,
      "société ☃",
      'clé "1"',
    ]);
    const one = await claimOne(store, { queue: "one" });
    assert.deepEqual(argsOf(one), { input: odd, results: {} });
    await record(store, T0 + 1, done(one, id, odd));
    const two = await claimOne(store, { queue: "two", now: T0 + 1 });
    assert.deepEqual(argsOf(two), { input: odd, results: { one: odd } });
    assert.equal((await store.jobGet({ id: two.id }))?.tenant, "société ☃");
    const reason = 'operator said "stop"\nbecause ☃';
    await store.workflowCancel({ id, now: T0 + 2, reason });
    detail = await detailOf(store, id);
    assert.deepEqual(
      [detail.run.cancelReason, detail.run.error],
      [reason, `cancelled: ${reason}`],
    );
    assert.deepEqual(JSON.parse(detail.steps.find((s) => s.step === "one")!.result!), odd);
  });
}
