import assert from "node:assert/strict";
import { defineWorker, FakeClock, Jobs, silentLogger } from "../../src/mod.ts";
import {
  compileWorkflow,
  defineWorkflow,
  withWorkerDefaults,
  WorkflowDefinitionError,
  type WorkflowOptions,
} from "../../src/workflow/definition.ts";
import { tempStore } from "../support/stores.ts";

const hold = defineWorker({ name: "hold", maxAttempts: 3, perform: () => {} });
const unhold = defineWorker({ name: "unhold", maxAttempts: 7, perform: () => {} });

/** A two-step saga of `hold` use cases, changed by `edit`. */
function saga(edit: (o: WorkflowOptions) => void = () => {}): WorkflowOptions {
  const options: WorkflowOptions = {
    id: "lend",
    carriedBy: "workflow",
    useCases: { "uc/hold": "hold", "uc/unhold": "unhold", "uc/notify": "hold" },
    steps: [
      {
        id: "hold",
        useCase: "uc/hold",
        compensation: { mode: "use-case", useCase: "uc/unhold" },
      },
      {
        id: "notify",
        dependsOn: ["hold"],
        useCase: "uc/notify",
        compensation: { mode: "none", reason: "a sent notice cannot be recalled" },
      },
    ],
  };
  edit(options);
  return options;
}

/** The codes `defineWorkflow` refuses `options` with. */
function codes(options: WorkflowOptions): string[] {
  try {
    defineWorkflow(options);
  } catch (error) {
    assert.ok(error instanceof WorkflowDefinitionError, String(error));
    return error.problems.map((p) => p.code);
  }
  return [];
}

Deno.test("a library-registered saga with a step that runs a worker directly is behavior-unrecorded, and nothing is registered", async () => {
  await using t = await tempStore();
  const jobs = new Jobs({ store: t.store, workers: [hold], logger: silentLogger });
  const unmapped = saga((o) => {
    o.steps[1] = { ...o.steps[1]!, useCase: undefined, worker: hold };
  });
  assert.throws(
    () => jobs.registerWorkflow(unmapped),
    (error: Error) => {
      assert.ok(error instanceof WorkflowDefinitionError);
      assert.deepEqual(error.problems.map((p) => [p.code, p.path.join(".")]), [
        ["behavior-unrecorded", "steps.1.worker"],
      ]);
      assert.match(error.message, /saga step "notify" runs its worker directly/);
      return true;
    },
  );
  assert.equal(jobs.workflows.size, 0);
  await assert.rejects(jobs.startWorkflow("lend", {}), /no workflow "lend" is registered/);
  assert.deepEqual(await t.store.workflowsList({}), []);
});

Deno.test("defineWorkflow enforces each record rule of a saga with its code", () => {
  assert.deepEqual(codes(saga()), []);
  assert.deepEqual(
    codes(saga((o) => (o.steps[0] = { id: "hold", compensation: o.steps[0]!.compensation }))),
    ["behavior-unrecorded"],
  );
  assert.deepEqual(codes(saga((o) => (o.steps[1]!.useCase = "uc/hold"))), ["use-case-shared"]);
  assert.deepEqual(codes(saga((o) => (o.steps[1]!.useCase = "uc/nope"))), ["use-case-unknown"]);
  assert.deepEqual(
    codes(saga((o) => (o.steps[1]!.useCase = ["uc/hold", "uc/notify"] as unknown as string))),
    ["use-case-ambiguous"],
  );
  assert.deepEqual(codes(saga((o) => delete o.steps[1]!.compensation)), ["compensation-missing"]);
  assert.deepEqual(
    codes(saga((o) => (o.steps[1]!.compensation = { mode: "none", reason: " " }))),
    ["compensation-invalid"],
  );
  assert.deepEqual(
    codes(saga((o) => {
      o.steps[0]!.maxAttempts = 5;
      o.steps[1]!.timeoutMs = 1000;
    })),
    ["engine-config-in-record", "engine-config-in-record"],
  );
  assert.deepEqual(codes(saga((o) => (o.steps[0]!.dependsOn = ["notify"]))), ["workflow-cycle"]);
  assert.deepEqual(codes(saga((o) => (o.steps[1]!.dependsOn = ["hlod"]))), ["step-unknown"]);
});

Deno.test("a saga compiled without its workers takes their attempts once they are known, hashed anew", () => {
  const compiled = compileWorkflow(saga());
  assert.equal(compiled.steps[0]!.job.maxAttempts, 20);
  assert.equal(compiled.steps[0]!.job.attemptsFromWorker, true);
  const workers = new Map([[hold.name, hold], [unhold.name, unhold]]);
  const resolved = withWorkerDefaults(compiled, workers);
  assert.equal(resolved.steps[0]!.job.maxAttempts, 3);
  assert.equal(resolved.steps[0]!.job.attemptsFromWorker, undefined);
  const undo = resolved.steps[0]!.compensation;
  assert.ok(undo?.mode === "use-case");
  assert.equal(undo.job.maxAttempts, 7);
  assert.notEqual(resolved.hash, compiled.hash);
  // Compiled with the workers, the same definition comes out at once.
  assert.deepEqual(compileWorkflow(saga(), { workers }), resolved);
  assert.equal(withWorkerDefaults(resolved, workers), resolved, "nothing left to fill in");
});

Deno.test("startWorkflow runs a saga's steps with its workers' attempts", async () => {
  await using t = await tempStore();
  const jobs = new Jobs({
    store: t.store,
    workers: [hold, unhold],
    logger: silentLogger,
    clock: new FakeClock(),
  });
  const { id } = await jobs.startWorkflow(saga(), { order: 1 });
  const [job] = await t.store.jobsList({ occurrence: `${id}/hold` });
  assert.equal(job?.maxAttempts, 3);
});
