/**
 * The workflow views and actions the command line and the TUI share: runs
 * listed with their step counts, one run as a view and as a tree of text,
 * and the audited start, cancel and retry, each refusing what it cannot do
 * without writing. Run on every backend; the steps are driven through the
 * real claim -> perform -> record path (`drainAllJobs`) on a FakeClock.
 */

import assert from "node:assert/strict";
import {
  cancelWorkflowRun,
  listWorkflowRuns,
  retryWorkflowRun,
  startWorkflowRun,
  WorkflowActionRefused,
  workflowRunView,
  workflowTreeText,
} from "../../src/admin/workflows.ts";
import { FakeClock } from "../../src/clock.ts";
import { defineWorker, type Worker } from "../../src/kernel/worker.ts";
import type { Store, StoreTx } from "../../src/store/store.ts";
import { drainAllJobs } from "../../src/testing.ts";
import { compileWorkflow, type WorkflowOptions } from "../../src/workflow/definition.ts";
import type { CompiledWorkflow } from "../../src/workflow/types.ts";
import { backendJobs, BACKENDS } from "../support/backends.ts";

const T0 = Date.UTC(2026, 5, 1, 9);

/** A worker that returns `result(args)`; it throws while `fails` says so (by attempt). */
function worker(
  name: string,
  result: (args: { input: unknown; results: Record<string, unknown>; item?: unknown }) => unknown,
  options: { maxAttempts?: number; fails?: (attempt: number) => boolean } = {},
  // deno-lint-ignore no-explicit-any
): Worker<any> {
  return defineWorker<{ input: unknown; results: Record<string, unknown>; item?: unknown }>({
    name,
    maxAttempts: options.maxAttempts ?? 3,
    backoff: () => 0,
    perform: (args, ctx) => {
      if (options.fails?.(ctx.attempt)) throw new Error(`${name} failed on attempt ${ctx.attempt}`);
      return { result: result(args) };
    },
  });
}

// deno-lint-ignore no-explicit-any
function compiled(options: WorkflowOptions, workers: Worker<any>[]): CompiledWorkflow {
  return compileWorkflow(options, { workers: new Map(workers.map((w) => [w.name, w])) });
}

/** A plain DAG: split -> each item -> sum, and a flaky step after split that fails once. */
function fanOut(flakyFails: (attempt: number) => boolean = (a) => a === 1) {
  const workers = [
    worker("split", () => [1, 2, 3]),
    worker("double", (args) => (args.item as number) * 2),
    worker("sum", (args) => (args.results.each as number[]).reduce((a, b) => a + b, 0)),
    worker("flaky", () => "ok", { fails: flakyFails }),
  ];
  const definition = compiled({
    id: "tally",
    steps: [
      { id: "split", worker: "split" },
      { id: "each", worker: "double", forEach: "split" },
      { id: "sum", worker: "sum", dependsOn: ["each", "flaky"] },
      { id: "flaky", worker: "flaky", dependsOn: ["split"] },
    ],
  }, workers);
  return { workers, definition };
}

/** A saga of three steps whose third is discarded at its first attempt. */
function lending(refundFails = false) {
  const workers = [
    worker("hold", () => ({ hold: "h-1" })),
    worker("charge", () => ({ charge: "c-1" })),
    worker("notify", () => null, { maxAttempts: 1, fails: () => true }),
    worker("unhold", () => "unheld"),
    worker("refund", () => "refunded", { maxAttempts: 1, fails: () => refundFails }),
  ];
  const definition = compiled({
    id: "lend-copy",
    carriedBy: "workflow",
    useCases: {
      "use-case/lending.place-hold": "hold",
      "use-case/billing.charge-fee": "charge",
      "use-case/lending.notify": "notify",
      "use-case/lending.cancel-hold": "unhold",
      "use-case/billing.refund-fee": "refund",
    },
    steps: [
      {
        id: "place-hold",
        useCase: "use-case/lending.place-hold",
        compensation: { mode: "use-case", useCase: "use-case/lending.cancel-hold" },
      },
      {
        id: "charge-fee",
        dependsOn: ["place-hold"],
        useCase: "use-case/billing.charge-fee",
        compensation: { mode: "use-case", useCase: "use-case/billing.refund-fee" },
      },
      {
        id: "notify",
        dependsOn: ["charge-fee"],
        useCase: "use-case/lending.notify",
        compensation: { mode: "none", reason: "a sent notice cannot be recalled" },
      },
    ],
  }, workers);
  return { workers, definition };
}

const OPS = { actor: "ops", reason: "testing" };

/** `store` with every `auditRecord` failing, on the store and on its transactions. */
function auditFails(store: Store): Store {
  const refuse = () => Promise.reject(new Error("audit refused (test)"));
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "auditRecord") return refuse;
      if (prop === "transaction") {
        return <T>(fn: (tx: StoreTx) => Promise<T>) =>
          target.transaction((tx) => fn({ ...tx, auditRecord: refuse }));
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

for (const backend of BACKENDS) {
  const test = (name: string, fn: () => Promise<void>) => Deno.test(`${backend.name}: ${name}`, fn);

  test("startWorkflowRun starts a run with its audit row; the same key again starts nothing", async () => {
    const { workers, definition } = fanOut();
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const first = await startWorkflowRun(t.store, {
      definition,
      input: { batch: 7 },
      key: "batch-7",
      tenant: "acme",
      ...OPS,
      now: T0,
    });
    assert.deepEqual(first.duplicate, false);
    const again = await startWorkflowRun(t.store, {
      definition,
      input: { batch: 7 },
      key: "batch-7",
      actor: "grace",
      now: T0 + 1,
    });
    assert.deepEqual(again, { id: first.id, duplicate: true });
    const [run, ...rest] = await listWorkflowRuns(t.store);
    assert.deepEqual(rest, []);
    assert.deepEqual(run, {
      id: first.id,
      workflow: "tally",
      state: "running",
      tenant: "acme",
      key: "batch-7",
      startedAt: T0,
      finishedAt: null,
      error: null,
      steps: { total: 4, completed: 0, running: 1, failed: 0, cancelled: 0, waiting: 3 },
    });
    const audit = await t.store.auditList({ target: `workflow:${first.id}` });
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.reason, a.details.duplicate, a.details.key]),
      [
        ["workflow.start", "ops", "testing", false, "batch-7"],
        ["workflow.start", "grace", null, true, "batch-7"],
      ],
    );
    await assert.rejects(
      () => startWorkflowRun(t.store, { definition, input: { n: 1n }, ...OPS, now: T0 }),
      /^EnqueueError: workflow "tally" input: args cannot be serialized/,
    );
    assert.equal((await listWorkflowRuns(t.store)).length, 1);
  });

  test("workflowRunView shows every step in order, waiting ones too, with attempts, result size and items", async () => {
    const { workers, definition } = fanOut();
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const { id } = await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 });

    const before = (await workflowRunView(t.store, id))!;
    // In the definition's order: each step after its dependencies.
    assert.deepEqual(
      before.steps.map((s) => [s.id, s.state, s.attempts, s.resultBytes, s.items]),
      [
        ["split", "running", 0, null, null],
        ["each", "waiting", 0, null, null],
        ["flaky", "waiting", 0, null, null],
        ["sum", "waiting", 0, null, null],
      ],
    );
    assert.equal(await workflowRunView(t.store, id + 1000), null);

    await drainAllJobs(t.jobs);
    const view = (await workflowRunView(t.store, id))!;
    assert.equal(view.run.state, "completed");
    assert.equal(view.saga, false);
    assert.equal(view.hash, definition.hash);
    const step = (name: string) => view.steps.find((s) => s.id === name)!;
    assert.deepEqual(view.steps.map((s) => s.id), definition.steps.map((s) => s.id));
    assert.deepEqual(
      [step("split").state, step("split").attempts, step("split").resultBytes],
      ["completed", 1, JSON.stringify([1, 2, 3]).length],
    );
    assert.deepEqual([step("flaky").attempts, step("flaky").maxAttempts], [2, 3]);
    assert.deepEqual(step("each").items, { done: 3, total: 3 });
    assert.equal(step("each").attempts, 1);
    assert.deepEqual(step("sum").dependsOn, ["each", "flaky"]);
    assert.equal(step("sum").resultBytes, String(12).length);
    assert.deepEqual(view.compensations, []);

    const lines = workflowTreeText(view);
    assert.equal(lines[0], `run ${id}  tally  completed`);
    // Each step under the dependency it waits on last in the definition's order.
    const tree = lines.slice(lines.indexOf("steps:") + 1);
    const depth = (name: string) => {
      const line = tree.find((l) => l.trimStart().startsWith(`${name}  `))!;
      return line.length - line.trimStart().length;
    };
    assert.equal(depth("split"), 2);
    assert.equal(depth("each"), 4);
    assert.equal(depth("flaky"), 4);
    assert.equal(depth("sum"), 6);
    assert.ok(
      tree.some((l) => /^ +each {2}completed {2}items 3\/3 {2}1\/3 attempt {2}result 7 B/.test(l)),
      lines.join("\n"),
    );
    assert.ok(tree.some((l) => /^ +flaky {2}completed {2}2\/3 attempts/.test(l)), lines.join("\n"));
    assert.ok(
      tree.some((l) => /^ +sum {2}completed .*\(after (each|flaky)\)$/.test(l)),
      lines.join("\n"),
    );
  });

  test("a saga's view carries its compensation trail in the order it ran", async () => {
    const { workers, definition } = lending();
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const { id } = await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 });
    await drainAllJobs(t.jobs);
    const view = (await workflowRunView(t.store, id))!;
    assert.equal(view.run.state, "compensated");
    assert.equal(view.saga, true);
    assert.deepEqual(
      view.steps.map((s) => [s.id, s.state, s.useCase, s.compensation]),
      [
        ["place-hold", "completed", "use-case/lending.place-hold", {
          mode: "use-case",
          useCase: "use-case/lending.cancel-hold",
        }],
        ["charge-fee", "completed", "use-case/billing.charge-fee", {
          mode: "use-case",
          useCase: "use-case/billing.refund-fee",
        }],
        ["notify", "discarded", "use-case/lending.notify", {
          mode: "none",
          reason: "a sent notice cannot be recalled",
        }],
      ],
    );
    assert.match(view.steps[2]!.error!, /notify failed on attempt 1/);
    assert.deepEqual(
      view.compensations.map((c) => [c.step, c.useCase, c.state, c.attempts]),
      [
        ["charge-fee", "use-case/billing.refund-fee", "completed", 1],
        ["place-hold", "use-case/lending.cancel-hold", "completed", 1],
      ],
    );
    const lines = workflowTreeText(view);
    assert.equal(lines[0], `run ${id}  lend-copy (saga)  compensated`);
    const trail = lines.slice(lines.indexOf("compensations, in the order they ran:") + 1);
    assert.match(
      trail[0]!,
      /^ {2}1\. undo charge-fee with use-case\/billing\.refund-fee {2}completed {2}1\/1 attempt/,
    );
    assert.match(
      trail[1]!,
      /^ {2}2\. undo place-hold with use-case\/lending\.cancel-hold {2}completed/,
    );
    assert.ok(
      lines.some((l) => /^ +notify {2}discarded {2}1\/1 attempt .*no undo: a sent notice/.test(l)),
      lines.join("\n"),
    );
    assert.ok(
      lines.some((l) => /^ +error: .*notify failed on attempt 1/.test(l)),
      lines.join("\n"),
    );

    const [summary] = await listWorkflowRuns(t.store, { state: "compensated" });
    assert.deepEqual(summary!.steps, {
      total: 3,
      completed: 2,
      running: 0,
      failed: 1,
      cancelled: 0,
      waiting: 0,
    });
  });

  test("the compensation trail is in the order the compensations ran, not by step id", async () => {
    const workers = [
      worker("alpha", () => 1),
      worker("beta", () => 2),
      worker("gamma", () => 3, { maxAttempts: 1, fails: () => true }),
      worker("undo", () => null),
    ];
    const definition = compiled({
      id: "abc",
      carriedBy: "workflow",
      useCases: { "uc/alpha": "alpha", "uc/beta": "beta", "uc/gamma": "gamma", "uc/undo": "undo" },
      steps: [
        {
          id: "alpha",
          useCase: "uc/alpha",
          compensation: { mode: "use-case", useCase: "uc/undo" },
        },
        {
          id: "beta",
          dependsOn: ["alpha"],
          useCase: "uc/beta",
          compensation: { mode: "use-case", useCase: "uc/undo" },
        },
        {
          id: "gamma",
          dependsOn: ["beta"],
          useCase: "uc/gamma",
          compensation: { mode: "none", reason: "it never did anything" },
        },
      ],
    }, workers);
    // The clock stands still: every row is created in the same ms.
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const { id } = await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 });
    await drainAllJobs(t.jobs);
    const view = (await workflowRunView(t.store, id))!;
    assert.equal(view.run.state, "compensated");
    assert.deepEqual(view.compensations.map((c) => c.step), ["beta", "alpha"]);
  });

  test("cancelWorkflowRun cancels the waiting steps with its audit row; a final run or no run is refused, writing nothing", async () => {
    const { workers, definition } = fanOut();
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const { id } = await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 });
    const waiting = (await workflowRunView(t.store, id))!.steps[0]!.jobId!;

    // The action and its audit row commit together, or neither does.
    await assert.rejects(
      () => cancelWorkflowRun(auditFails(t.store), { id, ...OPS, now: T0 + 1 }),
      /audit refused/,
    );
    assert.equal((await t.store.workflowGet({ id }))!.run.state, "running");
    assert.equal((await t.store.jobGet({ id: waiting }))!.state, "available");

    const done = await cancelWorkflowRun(t.store, {
      id,
      reason: "wrong batch",
      actor: "ada",
      now: T0 + 2,
    });
    assert.deepEqual(done, {
      id,
      workflow: "tally",
      was: "running",
      state: "cancelled",
      jobs: [waiting],
    });
    assert.equal((await t.store.jobGet({ id: waiting }))!.state, "cancelled");
    const view = (await workflowRunView(t.store, id))!;
    assert.equal(view.run.cancelReason, "wrong batch");
    assert.ok(workflowTreeText(view).includes("  cancelled: wrong batch"));

    const refused = await cancelWorkflowRun(t.store, { id, ...OPS, now: T0 + 3 }).catch((e) => e);
    assert.ok(refused instanceof WorkflowActionRefused);
    assert.equal(
      refused.message,
      `workflow run ${id} (tally) is already cancelled: nothing to cancel`,
    );
    assert.deepEqual([refused.id, refused.state], [id, "cancelled"]);
    await assert.rejects(
      () => cancelWorkflowRun(t.store, { id: id + 1000, ...OPS, now: T0 + 3 }),
      new RegExp(`^WorkflowActionRefused: no workflow run ${id + 1000}: nothing to cancel$`),
    );
    const audit = await t.store.auditList({ target: `workflow:${id}` });
    assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason]), [
      ["workflow.start", "ops", "testing"],
      ["workflow.cancel", "ada", "wrong batch"],
    ]);
    assert.deepEqual(audit[1]!.details, {
      workflow: "tally",
      was: "running",
      state: "cancelled",
      jobs: [waiting],
    });
  });

  test("a saga cancelled by an operator runs its compensations and ends cancelled", async () => {
    const { workers, definition } = lending();
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const { id } = await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 });
    // Only the first step runs: the hold is placed, then the operator cancels.
    await drainAllJobs(t.jobs, { withRecursion: false });
    const done = await cancelWorkflowRun(t.store, { id, ...OPS, now: T0 + 1 });
    assert.equal(done.was, "running");
    assert.equal(done.state, "compensating");
    await drainAllJobs(t.jobs);
    const view = (await workflowRunView(t.store, id))!;
    assert.equal(view.run.state, "cancelled");
    assert.deepEqual(view.compensations.map((c) => [c.step, c.state]), [[
      "place-hold",
      "completed",
    ]]);
  });

  test("retryWorkflowRun resumes a failed run with its audit row; a run that is not failed is refused", async () => {
    let broken = true;
    const { workers, definition } = fanOut(() => broken);
    await using t = await backendJobs(backend, workers, { clock: new FakeClock(T0) });
    const { id } = await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 });

    const early = await retryWorkflowRun(t.store, { id, ...OPS, now: T0 + 1 }).catch((e) => e);
    assert.ok(early instanceof WorkflowActionRefused);
    assert.equal(
      early.message,
      `workflow run ${id} (tally) is running, not failed: only a failed run can be retried`,
    );

    await drainAllJobs(t.jobs);
    const failed = (await workflowRunView(t.store, id))!;
    assert.equal(failed.run.state, "failed");
    const flaky = failed.steps.find((s) => s.id === "flaky")!;
    assert.deepEqual([flaky.state, flaky.attempts], ["discarded", 3]);
    assert.equal(failed.steps.find((s) => s.id === "sum")!.state, "cancelled");

    broken = false;
    const done = await retryWorkflowRun(t.store, {
      id,
      reason: "the dependency is back",
      actor: "ada",
      now: T0 + 2,
    });
    assert.deepEqual([done.was, done.state], ["failed", "running"]);
    assert.ok(done.jobs.includes(flaky.jobId!), JSON.stringify(done));
    await drainAllJobs(t.jobs);
    const view = (await workflowRunView(t.store, id))!;
    assert.equal(view.run.state, "completed");
    assert.equal(view.steps.find((s) => s.id === "flaky")!.attempts, 4);
    const audit = await t.store.auditList({ target: `workflow:${id}` });
    assert.deepEqual(audit.map((a) => [a.action, a.reason?.split("\n", 1)[0]]), [
      ["workflow.start", "testing"],
      ["step.discard", 'step "flaky" discarded: flaky failed on attempt 3'],
      ["workflow.retry", "the dependency is back"],
    ]);
  });

  test("listWorkflowRuns filters by state and workflow, newest first, and pages with after", async () => {
    const tally = fanOut();
    const lend = lending();
    await using t = await backendJobs(backend, [...tally.workers, ...lend.workers], {
      clock: new FakeClock(T0),
    });
    const ids: number[] = [];
    for (const definition of [tally.definition, lend.definition, tally.definition]) {
      ids.push((await startWorkflowRun(t.store, { definition, input: {}, ...OPS, now: T0 })).id);
    }
    const all = await listWorkflowRuns(t.store);
    assert.deepEqual(all.map((r) => r.id), [...ids].reverse());
    assert.deepEqual(
      (await listWorkflowRuns(t.store, { workflow: "tally" })).map((r) => r.id),
      [ids[2], ids[0]],
    );
    assert.deepEqual(
      (await listWorkflowRuns(t.store, { limit: 2 })).map((r) => r.id),
      [ids[2], ids[1]],
    );
    assert.deepEqual(
      (await listWorkflowRuns(t.store, { limit: 2, after: ids[1] })).map((r) => r.id),
      [ids[0]],
    );
    await cancelWorkflowRun(t.store, { id: ids[0]!, ...OPS, now: T0 + 1 });
    assert.deepEqual(
      (await listWorkflowRuns(t.store, { state: ["cancelled", "failed"] })).map((r) => r.id),
      [ids[0]],
    );
  });
}

Deno.test("workflowTreeText escapes stored text and shows each error by its first line", () => {
  const lines = workflowTreeText({
    run: {
      id: 9,
      workflow: "w",
      hash: "h",
      state: "failed",
      input: {},
      tenant: null,
      key: "k\x1b]0;owned\x07",
      error: 'step "a" discarded: boom \x1b[2J\n    at perform (x.ts:1:1)',
      cancelReason: null,
      startedAt: T0,
      finishedAt: T0 + 1000,
      updatedAt: T0 + 1000,
    },
    saga: false,
    hash: "h",
    steps: [{
      id: "a",
      state: "discarded",
      jobId: 3,
      attempts: 2,
      maxAttempts: 2,
      nextAttemptAt: null,
      resultBytes: null,
      error: "boom \x1b[2J\n    at perform (x.ts:1:1)",
      items: null,
      dependsOn: [],
      forEach: null,
      optional: false,
      useCase: null,
      worker: "a",
      compensation: null,
      createdAt: T0,
      finishedAt: T0 + 1000,
    }],
    compensations: [],
  });
  assert.deepEqual(lines, [
    "run 9  w  failed",
    "  started 2026-06-01T09:00:00.000Z, finished 2026-06-01T09:00:01.000Z, key k\\x1b]0;owned\\x07",
    '  error: step "a" discarded: boom \\x1b[2J',
    "steps:",
    "  a  discarded  2/2 attempts  job 3",
    "    error: boom \\x1b[2J",
  ]);
});
