import assert from "node:assert/strict";
import { defineWorker } from "../../src/mod.ts";
import { drainAllJobs } from "../../src/testing.ts";
import { pruneWorkflowRuns } from "../../src/runtime/pruner.ts";
import { defineWorkflow } from "../../src/workflow/definition.ts";
import { type Backend, backendJobs, BACKENDS } from "../support/backends.ts";
import { LEND_SAGA } from "../support/workflows.ts";

/** One test body, run on every backend of BACKENDS. */
function test(name: string, fn: (backend: Backend) => Promise<void>): void {
  for (const backend of BACKENDS) Deno.test(`[${backend.name}] ${name}`, () => fn(backend));
}

interface Payload {
  input: { order: number };
  results: Record<string, unknown>;
  item?: unknown;
  compensates?: { step: string; result: unknown };
}

/** Workers that record what they ran, by idempotency key, in `log`. */
function recorder(log: string[], failing: Set<string> = new Set()) {
  const make = (name: string) =>
    defineWorker<Payload>({
      name,
      maxAttempts: 2,
      backoff: () => 0,
      perform: (args, ctx) => {
        log.push(ctx.idempotencyKey);
        if (failing.has(name)) throw new Error(`${name} failed`);
        return { result: { by: name, order: args.input.order, saw: Object.keys(args.results) } };
      },
    });
  return make;
}

test("a 3-step run hands each step its dependencies' results and completes", async (backend) => {
  const log: string[] = [];
  const make = recorder(log);
  const [a, b, c] = [make("a"), make("b"), make("c")];
  const wf = defineWorkflow({
    id: "linear",
    steps: [
      { id: "one", worker: a },
      { id: "two", worker: b, dependsOn: ["one"] },
      { id: "three", worker: c, dependsOn: ["two", "one"] },
    ],
  });
  await using t = await backendJobs(backend, [a, b, c]);
  t.jobs.registerWorkflow(wf);
  const { id } = await t.jobs.startWorkflow("linear", { order: 7 });
  await drainAllJobs(t.jobs);
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "completed");
  assert.deepEqual(log, [`${id}/one`, `${id}/two`, `${id}/three`]);
  const three = detail!.steps.find((s) => s.step === "three")!;
  assert.deepEqual(JSON.parse(three.result!), { by: "c", order: 7, saw: ["two", "one"] });
  assert.ok(detail!.run.finishedAt !== null);
});

test("a saga whose third step fails runs the compensations of steps 2 then 1, once each, and ends compensated", async (backend) => {
  const log: string[] = [];
  const make = recorder(log, new Set(["notify"]));
  const workers = ["hold", "charge", "notify", "unhold", "refund"].map(make);
  await using t = await backendJobs(backend, workers);
  const { id } = await t.jobs.startWorkflow(LEND_SAGA, { order: 1 });
  await drainAllJobs(t.jobs);
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "compensated");
  assert.deepEqual(log, [
    `${id}/hold`,
    `${id}/charge`,
    `${id}/notify`,
    `${id}/notify`,
    `${id}/charge:compensate`,
    `${id}/hold:compensate`,
  ]);
  assert.match(detail!.run.error!, /step "notify" discarded: notify failed/);
});

test("a compensation that fails leaves the saga failed, saying which, and a retry finishes it", async (backend) => {
  const log: string[] = [];
  const failing = new Set(["notify", "refund"]);
  const make = recorder(log, failing);
  const workers = ["hold", "charge", "notify", "unhold", "refund"].map(make);
  await using t = await backendJobs(backend, workers);
  const { id } = await t.jobs.startWorkflow(
    {
      id: "lend",
      carriedBy: "workflow",
      useCases: Object.fromEntries(workers.map((w) => [`uc/${w.name}`, w.name])),
      steps: [
        {
          id: "hold",
          useCase: "uc/hold",
          compensation: { mode: "use-case", useCase: "uc/unhold" },
        },
        {
          id: "charge",
          dependsOn: ["hold"],
          useCase: "uc/charge",
          compensation: { mode: "use-case", useCase: "uc/refund" },
        },
        {
          id: "notify",
          dependsOn: ["charge"],
          useCase: "uc/notify",
          compensation: { mode: "none", reason: "sent" },
        },
      ],
    },
    { order: 2 },
  );
  await drainAllJobs(t.jobs);
  let detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "failed");
  assert.match(detail!.run.error!, /compensation of step "charge" discarded: refund failed/);
  assert.ok(
    !log.includes(`${id}/hold:compensate`),
    "the next compensation waits for the failed one",
  );

  failing.delete("refund");
  const retried = await t.store.workflowRetry({ id, now: t.clock.now() });
  assert.equal(retried?.was, "failed");
  assert.equal(retried?.state, "compensating");
  await drainAllJobs(t.jobs);
  detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "compensated");
  assert.deepEqual(log.slice(-2), [`${id}/charge:compensate`, `${id}/hold:compensate`]);
});

test("a fan-out of 200 items and a fan-in: the fan-in runs once, after the last item, with every result", async (backend) => {
  const seen: unknown[] = [];
  const list = defineWorker({
    name: "list",
    perform: () => ({ result: Array.from({ length: 200 }, (_, i) => i) }),
  });
  const square = defineWorker<{ item: number }>({
    name: "square",
    perform: (args) => ({ result: args.item * args.item }),
  });
  const sum = defineWorker<Payload>({
    name: "sum",
    perform: (args, ctx) => {
      seen.push(ctx.idempotencyKey);
      const squares = args.results.square as number[];
      return { result: { count: squares.length, total: squares.reduce((a, b) => a + b, 0) } };
    },
  });
  await using t = await backendJobs(backend, [list, square, sum]);
  const { id } = await t.jobs.startWorkflow({
    id: "squares",
    steps: [
      { id: "list", worker: list },
      { id: "square", worker: square, forEach: "list" },
      { id: "sum", worker: sum, dependsOn: ["square"] },
    ],
  });
  await drainAllJobs(t.jobs, { batch: 37 });
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "completed");
  assert.deepEqual(seen, [`${id}/sum`]);
  const total = Array.from({ length: 200 }, (_, i) => i * i).reduce((a, b) => a + b, 0);
  const result = JSON.parse(detail!.steps.find((s) => s.step === "sum" && s.item === -1)!.result!);
  assert.deepEqual(result, { count: 200, total });
  assert.equal(detail!.steps.filter((s) => s.step === "square" && s.item >= 0).length, 200);
});

test("a step that writes its cursor, fails at item 600 of 1,000, resumes at 600 on retry", async (backend) => {
  const done: number[] = [];
  let failAt: number | null = 600;
  const starts: unknown[] = [];
  const importer = defineWorker({
    name: "import",
    backoff: () => 0,
    perform: async (_args, ctx) => {
      const from = (await ctx.cursor.get<number>()) ?? 0;
      starts.push(from);
      for (let i = from; i < 1000; i++) {
        if (i === failAt) {
          failAt = null;
          throw new Error(`item ${i} failed`);
        }
        done.push(i);
        if ((i + 1) % 100 === 0) await ctx.cursor.set(i + 1);
      }
      return { result: done.length };
    },
  });
  await using t = await backendJobs(backend, [importer]);
  const { id } = await t.jobs.startWorkflow({
    id: "imp",
    steps: [{ id: "load", worker: importer }],
  });
  await drainAllJobs(t.jobs);
  assert.deepEqual(starts, [0, 600]);
  assert.equal(done.length, 1000);
  assert.deepEqual(done.slice(595, 606), [595, 596, 597, 598, 599, 600, 601, 602, 603, 604, 605]);
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "completed");
  assert.equal(detail!.steps[0]!.cursor, "1000");
});

test("a discarded step cancels its dependants (upstream failed), fails the run, and a retry resumes it", async (backend) => {
  const log: string[] = [];
  const failing = new Set(["b"]);
  const make = recorder(log, failing);
  const [a, b, c, d] = [make("a"), make("b"), make("c"), make("d")];
  await using t = await backendJobs(backend, [a, b, c, d]);
  const { id } = await t.jobs.startWorkflow({
    id: "dag",
    steps: [
      { id: "a", worker: a },
      { id: "b", worker: b, dependsOn: ["a"] },
      { id: "c", worker: c, dependsOn: ["b"] },
      { id: "d", worker: d, dependsOn: ["a"] },
    ],
  }, { order: 3 });
  await drainAllJobs(t.jobs);
  let detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "failed");
  const c1 = detail!.steps.find((s) => s.step === "c")!;
  assert.equal(c1.state, "cancelled");
  assert.match(c1.error!, /^upstream failed: b/);
  assert.equal(detail!.steps.find((s) => s.step === "d")!.state, "completed");

  failing.clear();
  const retried = await t.store.workflowRetry({ id, now: t.clock.now() });
  assert.equal(retried?.state, "running");
  assert.equal(retried?.jobs.length, 1);
  await drainAllJobs(t.jobs);
  detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "completed");
  assert.equal(log.filter((k) => k === `${id}/c`).length, 1);
  assert.equal(log.filter((k) => k === `${id}/d`).length, 1);
});

test("a retried run keeps its error while it goes again, says its new failure if it fails anew, and audits each (issue 26.12)", async (backend) => {
  const log: string[] = [];
  const failing = new Set(["a"]);
  const make = recorder(log, failing);
  const [a, b] = [make("a"), make("b")];
  await using t = await backendJobs(backend, [a, b]);
  const { id } = await t.jobs.startWorkflow({
    id: "pair",
    steps: [{ id: "one", worker: a }, { id: "two", worker: b, dependsOn: ["one"] }],
  }, { order: 4 });
  await drainAllJobs(t.jobs, { node: "node-a" });
  const error = async () => (await t.store.workflowGet({ id }))?.run.error?.split("\n", 1)[0];
  assert.equal(await error(), 'step "one" discarded: a failed');

  failing.clear();
  failing.add("b");
  assert.equal((await t.store.workflowRetry({ id, now: t.clock.now() }))?.state, "running");
  assert.equal(await error(), 'step "one" discarded: a failed');
  await drainAllJobs(t.jobs, { node: "node-b" });
  assert.equal((await t.store.workflowGet({ id }))?.run.state, "failed");
  assert.equal(await error(), 'step "two" discarded: b failed');
  const trail = await t.store.auditList({ target: `workflow:${id}` });
  assert.deepEqual(trail.map((r) => [r.action, r.actor, r.reason?.split("\n", 1)[0], r.details]), [
    ["step.discard", "node-a", 'step "one" discarded: a failed', {
      step: "one",
      job: trail[0]?.details.job,
      run: "failed",
    }],
    ["step.discard", "node-b", 'step "two" discarded: b failed', {
      step: "two",
      job: trail[1]?.details.job,
      run: "failed",
    }],
  ]);
  assert.ok(typeof trail[0]?.details.job === "number");
});

test("an optional step's failure lets its dependants run with null for it", async (backend) => {
  const log: string[] = [];
  const make = recorder(log, new Set(["b"]));
  const [a, b, c] = [make("a"), make("b"), make("c")];
  await using t = await backendJobs(backend, [a, b, c]);
  const { id } = await t.jobs.startWorkflow({
    id: "opt",
    steps: [
      { id: "a", worker: a },
      { id: "b", worker: b, dependsOn: ["a"], optional: true },
      { id: "c", worker: c, dependsOn: ["b"] },
    ],
  }, { order: 4 });
  await drainAllJobs(t.jobs);
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "completed");
  assert.equal(detail!.steps.find((s) => s.step === "b")!.state, "discarded");
});

test("cancelling a plain run cancels its waiting steps and ends it cancelled", async (backend) => {
  const log: string[] = [];
  const make = recorder(log);
  const [a, b] = [make("a"), make("b")];
  await using t = await backendJobs(backend, [a, b]);
  const { id } = await t.jobs.startWorkflow({
    id: "cx",
    steps: [{ id: "a", worker: a }, { id: "b", worker: b, dependsOn: ["a"] }],
  }, { order: 5 });
  const cancelled = await t.store.workflowCancel({ id, now: t.clock.now(), reason: "wrong order" });
  assert.equal(cancelled?.was, "running");
  assert.equal(cancelled?.state, "cancelled");
  assert.equal(cancelled?.jobs.length, 1);
  await drainAllJobs(t.jobs);
  assert.deepEqual(log, []);
  const detail = await t.store.workflowGet({ id });
  assert.match(detail!.run.error!, /cancelled: wrong order/);
});

test("a start with a used key returns the first run, and a start in a rolled-back transaction leaves nothing", async (backend) => {
  const make = recorder([]);
  const a = make("a");
  await using t = await backendJobs(backend, [a]);
  t.jobs.registerWorkflow({ id: "k", steps: [{ id: "a", worker: a }] });
  const first = await t.jobs.startWorkflow("k", { order: 1 }, { key: "order-1" });
  const again = await t.jobs.startWorkflow("k", { order: 1 }, { key: "order-1" });
  assert.equal(again.id, first.id);
  assert.equal(again.duplicate, true);
  await assert.rejects(
    t.jobs.transaction(async () => {
      await t.jobs.startWorkflow("k", { order: 2 });
      throw new Error("rolled back");
    }),
    /rolled back/,
  );
  const runs = await t.store.workflowsList({});
  assert.deepEqual(runs.map((r) => r.id), [first.id]);
  const counts = await t.store.jobsCount({});
  assert.equal(counts.reduce((n, c) => n + c.count, 0), 1);
});

test("pruneWorkflowRuns deletes final runs past their retention, with their steps, and keeps the rest", async (backend) => {
  const make = recorder([], new Set(["b"]));
  const [a, b] = [make("a"), make("b")];
  await using t = await backendJobs(backend, [a, b]);
  const done = await t.jobs.startWorkflow({ id: "ok", steps: [{ id: "a", worker: a }] }, {
    order: 1,
  });
  const failed = await t.jobs.startWorkflow({ id: "bad", steps: [{ id: "b", worker: b }] }, {
    order: 2,
  });
  await drainAllJobs(t.jobs);
  const waiting = await t.jobs.startWorkflow("ok", { order: 3 });
  const DAY = 86_400_000;
  // Eight days on: past the completed runs' week, not the failed runs' month.
  let pruned = await pruneWorkflowRuns(t.store, t.clock.now() + 8 * DAY);
  assert.deepEqual(pruned, { runs: 1 });
  assert.equal(await t.store.workflowGet({ id: done.id }), null);
  assert.equal((await t.store.workflowGet({ id: failed.id }))?.run.state, "failed");
  assert.equal((await t.store.workflowGet({ id: waiting.id }))?.run.state, "running");
  pruned = await pruneWorkflowRuns(t.store, t.clock.now() + 31 * DAY, { batch: 1 });
  assert.deepEqual(pruned, { runs: 1 });
  assert.equal(await t.store.workflowGet({ id: failed.id }), null);
  assert.ok(await t.store.workflowGet({ id: waiting.id }), "a running run is never pruned");
});
