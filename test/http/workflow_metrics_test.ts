/**
 * `/metrics` for workflows: runs by definition and state and compensations
 * by definition and state, read from the store on every backend, and the
 * step duration histogram fed by the `job.stop` events of step jobs.
 */

import assert from "node:assert/strict";
import { MetricsRegistry, renderMetrics } from "../../src/http/metrics.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { drainAllJobs } from "../../src/testing.ts";
import { defineWorkflow } from "../../src/workflow/definition.ts";
import { RUN_STATES } from "../../src/workflow/types.ts";
import { type Backend, backendJobs, BACKENDS } from "../support/backends.ts";
import { LEND_SAGA } from "../support/workflows.ts";
import { parseProm, value } from "./prom.ts";

function test(name: string, fn: (backend: Backend) => Promise<void>): void {
  for (const backend of BACKENDS) Deno.test(`[${backend.name}] ${name}`, () => fn(backend));
}

test("/metrics counts workflow runs by definition and state, and compensations by state", async (backend) => {
  const worker = (name: string, fails = false) =>
    defineWorker({
      name,
      maxAttempts: 1,
      perform: () => {
        if (fails) throw new Error(`${name} failed with token=hunter2`);
        return { result: { by: name } };
      },
    });
  const workers = [worker("fetch"), worker("hold"), worker("charge"), worker("notify", true)];
  workers.push(worker("unhold"), worker("refund"));
  const imports = defineWorkflow({
    id: "imports",
    steps: [{ id: "fetch", worker: "fetch" }, {
      id: "load",
      worker: "fetch",
      dependsOn: ["fetch"],
    }],
  });
  await using t = await backendJobs(backend, workers);
  t.jobs.registerWorkflow(imports);
  t.jobs.registerWorkflow(LEND_SAGA);
  await t.jobs.startWorkflow("imports", { day: 1 });
  await t.jobs.startWorkflow("lend", { copy: "c-1" });
  await drainAllJobs(t.jobs);
  // Two more imports: one left running, one cancelled by an operator.
  await t.jobs.startWorkflow("imports", { day: 2 });
  const cancelled = await t.jobs.startWorkflow("imports", { day: 3 });
  await t.store.workflowCancel({ id: cancelled.id, now: t.clock.now(), reason: "wrong day" });

  const page = await renderMetrics(t.store, new MetricsRegistry().snapshot());
  const samples = parseProm(page);
  const runs = (workflow: string, state: string) =>
    value(samples, "jobs_workflow_runs", { workflow, state });
  assert.equal(runs("imports", "completed"), 1);
  assert.equal(runs("imports", "running"), 1);
  assert.equal(runs("imports", "cancelled"), 1);
  assert.equal(runs("lend", "compensated"), 1);
  // Every state of a known definition is a series, zeros included.
  for (const state of RUN_STATES) {
    assert.notEqual(runs("imports", state), undefined, state);
    assert.notEqual(runs("lend", state), undefined, state);
  }
  assert.equal(runs("imports", "failed"), 0);
  const compensations = (state: string) =>
    value(samples, "jobs_workflow_compensations", { workflow: "lend", state });
  assert.equal(compensations("completed"), 2);
  assert.equal(compensations("discarded"), 0);
  assert.doesNotMatch(page, /hunter2|c-1|wrong day/);
});

Deno.test("job.stop of a step job feeds jobs_workflow_step_duration_seconds by workflow and step", async () => {
  const registry = new MetricsRegistry();
  const stop = (fields: Record<string, unknown>) =>
    registry.record("job.stop", {
      queue: "default",
      worker: "hold",
      outcome: "completed",
      ...fields,
    });
  stop({ durationMs: 40, workflow: "lend", step: "hold", stepKind: "step" });
  stop({ durationMs: 2_000, workflow: "lend", step: "hold" });
  stop({ durationMs: 10, workflow: "lend", step: "charge", outcome: "retryable" });
  // Not steps: a plain job, a compensation, a run id where a definition would be, an abandoned attempt.
  stop({ durationMs: 10 });
  stop({ durationMs: 10, workflow: "lend", step: "hold", stepKind: "compensation" });
  stop({ durationMs: 10, workflow: 12, step: "hold" });
  stop({ durationMs: 10, workflow: "lend", step: "hold", outcome: "abandoned" });

  const store = {
    jobsCount: () => Promise.resolve([]),
    queuesList: () => Promise.resolve([]),
    nodesList: () => Promise.resolve([]),
    schedulesList: () => Promise.resolve([]),
    schedulesOutcomes: () => Promise.resolve([]),
    workflowsCount: () => Promise.resolve([]),
    workflowCompensationsCount: () => Promise.resolve([]),
  } as unknown as Parameters<typeof renderMetrics>[0];
  const samples = parseProm(await renderMetrics(store, registry.snapshot()));
  const name = "jobs_workflow_step_duration_seconds";
  const hold = { workflow: "lend", step: "hold" };
  assert.equal(value(samples, `${name}_count`, hold), 2);
  assert.equal(value(samples, `${name}_sum`, hold), 2.04);
  assert.equal(value(samples, `${name}_bucket`, { ...hold, le: "0.05" }), 1);
  assert.equal(value(samples, `${name}_bucket`, { ...hold, le: "2.5" }), 2);
  assert.equal(value(samples, `${name}_bucket`, { ...hold, le: "+Inf" }), 2);
  assert.equal(value(samples, `${name}_count`, { workflow: "lend", step: "charge" }), 1);
  assert.equal(samples.filter((s) => s.name === `${name}_count`).length, 2);
  // The attempts histogram still counts every attempt but the abandoned one.
  assert.equal(
    value(samples, "jobs_attempt_duration_seconds_count", { queue: "default", worker: "hold" }),
    6,
  );
});
