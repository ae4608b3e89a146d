import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { COMMAND_WORKER } from "../../src/kernel/runs.ts";
import {
  WORKFLOW_START_WORKER,
  type WorkflowStartRun,
  workflowStartRunSchema,
  workflowStartWorker,
} from "../../src/runners/workflow_start.ts";
import type { Store } from "../../src/store/store.ts";
import { performJob } from "../../src/testing.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { tempStore } from "../support/stores.ts";

/** A two-step plain workflow of command steps on queue `imports`. */
function definition() {
  return compileWorkflow({
    id: "nightly-import",
    queue: "imports",
    steps: [
      { id: "fetch", run: { kind: "command", argv: ["true"], shell: false } },
      { id: "load", dependsOn: ["fetch"], run: { kind: "command", argv: ["true"], shell: false } },
    ],
  });
}

function start(input: unknown = { day: "2026-05-01" }): WorkflowStartRun {
  return { kind: "workflow", definition: definition(), input };
}

function worker(store: Store, clock: FakeClock, woken: string[][] = []) {
  return workflowStartWorker({ store: () => store, clock, onEnqueued: (q) => woken.push(q) });
}

Deno.test("a workflow start begins the run once per occurrence: a retried occurrence finds its run", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  const woken: string[][] = [];
  const occurrence = "nightly@2026-05-01T02:00:00.000Z";
  const first = await performJob(worker(t.store, clock, woken), start(), { clock, occurrence });
  assert.equal(first.outcome, "completed");
  const [run] = await t.store.workflowsList({});
  assert.equal(run?.workflow, "nightly-import");
  assert.equal(run?.state, "running");
  assert.equal(run?.key, occurrence);
  assert.deepEqual(run?.input, { day: "2026-05-01" });
  assert.deepEqual(woken, [["imports"]]);
  assert.match(first.output!, new RegExp(`^started run ${run!.id} of workflow "nightly-import"$`));

  // The same occurrence again (its completion was lost, say): no second run, nothing woken.
  const again = await performJob(worker(t.store, clock, woken), start(), {
    clock,
    occurrence,
    attempt: 2,
  });
  assert.equal(again.outcome, "completed");
  assert.equal((await t.store.workflowsList({})).length, 1);
  assert.deepEqual(woken, [["imports"]]);
  assert.match(again.output!, /was already started for "nightly@2026-05-01T02:00:00\.000Z"/);

  // The first step's job is there, once: the second waits for it.
  const jobs = await t.store.jobsList({ queue: "imports" });
  assert.deepEqual(jobs.map((j) => [j.worker, j.occurrence]), [
    [COMMAND_WORKER, `${run!.id}/fetch`],
  ]);

  // Another occurrence is another run.
  await performJob(worker(t.store, clock, woken), start(), {
    clock,
    occurrence: "nightly@2026-05-02T02:00:00.000Z",
  });
  assert.equal((await t.store.workflowsList({})).length, 2);
});

Deno.test("a tenant's occurrence starts a run of that tenant, whose step jobs carry it", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  const done = await performJob(worker(t.store, clock), start(), {
    clock,
    occurrence: "nightly:acme@2026-05-01T02:00:00.000Z",
    tenant: "acme",
  });
  assert.equal(done.outcome, "completed");
  const [run] = await t.store.workflowsList({});
  assert.equal(run?.tenant, "acme");
  assert.deepEqual((await t.store.workflowsList({ tenant: "globex" })).map((r) => r.id), []);
  const jobs = await t.store.jobsList({ queue: "imports" });
  assert.deepEqual(jobs.map((j) => j.tenant), ["acme"]);
});

Deno.test("a workflow start ends with the run's id as its result", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  const w = worker(t.store, clock);
  const outcome = await w.perform(
    start(),
    {
      job: { occurrence: "once@2026-05-01T00:00:00.000Z" },
      idempotencyKey: "once@2026-05-01T00:00:00.000Z",
      output: () => {},
    } as unknown as Parameters<typeof w.perform>[1],
  );
  const [run] = await t.store.workflowsList({});
  assert.deepEqual(outcome, { result: { run: run!.id } });
});

Deno.test("a job that is no occurrence starts its run once by its idempotency key", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  await performJob(worker(t.store, clock), start(), { clock });
  await performJob(worker(t.store, clock), start(), { clock, attempt: 2 });
  const runs = await t.store.workflowsList({});
  assert.equal(runs.length, 1);
  assert.equal(runs[0]!.key, "job:1");
});

Deno.test("a start that is not one is discarded at once, naming what is wrong", async () => {
  const store = {} as Store;
  const w = worker(store, new FakeClock());
  assert.equal(w.name, WORKFLOW_START_WORKER);
  const good = start();
  const cases: [unknown, RegExp][] = [
    [{ kind: "fanout" }, /kind "workflow"/],
    [{ kind: "workflow", definition: "nightly-import" }, /definition must be an object/],
    [{ ...good, definition: { ...good.definition, steps: [] } }, /steps must be a non-empty list/],
    [
      {
        ...good,
        definition: { ...good.definition, steps: [...good.definition.steps].reverse() },
      },
      /step "load": depends on "fetch", which is not a step before it/,
    ],
    [
      {
        ...good,
        definition: {
          ...good.definition,
          steps: [{ ...good.definition.steps[0]!, job: { worker: "" } }],
        },
      },
      /step "fetch": job worker must be a non-empty string/,
    ],
  ];
  for (const [args, error] of cases) {
    assert.throws(() => workflowStartRunSchema.parse(args), error);
    const result = await performJob(w, args as WorkflowStartRun);
    assert.equal(result.outcome, "discarded");
    assert.match(result.error!, /^invalid args: /);
  }
  assert.deepEqual(workflowStartRunSchema.parse(good), good);
});
