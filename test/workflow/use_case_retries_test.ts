/**
 * Issue 26.2: a saga of command use cases retries as its use cases say
 * (`max_attempts`, `backoff`, `timeout` in `use_cases:`), not 20 times on
 * the default backoff, so a failed step reaches compensation when the file
 * says it does. Driven on the injected clock through a real store.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { startWorkflowRun } from "../../src/admin/workflows.ts";
import { commandWorker } from "../../src/runners/command.ts";
import { parseSchedules } from "../../src/config/load.ts";
import { drainJobs, waitUntil } from "../../src/testing.ts";
import type { Store } from "../../src/store/store.ts";
import type { CompiledWorkflow } from "../../src/workflow/types.ts";
import { tempDir, tempJobs } from "../support/stores.ts";

const T0 = Date.UTC(2026, 11, 4, 17, 19, 30);

/**
 * The saga `s` of a file: `place` (runs `true`, undone by `release`), then
 * `hold`, whose use case is `hold` (lines of YAML) and which nothing undoes.
 */
function sagaOf(...hold: string[]): CompiledWorkflow {
  const text = [
    "version: 1",
    "use_cases:",
    '  place: { command: ["true"] }',
    '  release: { command: ["true"] }',
    "  hold:",
    ...hold,
    "workflows:",
    "  - id: s",
    "    carried_by: workflow",
    "    steps:",
    "      - { id: place, use_case: place, compensation: { mode: use-case, use_case: release } }",
    "      - id: hold",
    "        depends_on: [place]",
    "        use_case: hold",
    "        compensation: { mode: none, reason: it holds nothing when it fails }",
  ].join("\n");
  const result = parseSchedules(text, "schedules.yaml");
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  return result.config.workflows[0]!;
}

/** The row of step `step` (not its compensation) of run `id`. */
async function stepRow(store: Store, id: number, step: string) {
  const detail = await store.workflowGet({ id });
  const row = detail?.steps.find((s) => s.step === step && s.kind === "step");
  if (!row) assert.fail(`run ${id} has no step "${step}": ${JSON.stringify(detail)}`);
  return row;
}

Deno.test("a saga whose command use case exits 1 with max_attempts: 2 compensates after 2 attempts, 10 s apart", async () => {
  const clock = new FakeClock(T0);
  await using t = await tempJobs([commandWorker({ clock, env: () => undefined })], { clock });
  const definition = sagaOf(
    '    command: ["sh", "-c", "exit 1"]',
    "    max_attempts: 2",
    "    backoff: { fixed: 10s }",
  );
  const { id } = await startWorkflowRun(t.store, {
    definition,
    input: {},
    actor: "test",
    now: clock.now(),
  });
  // Due jobs only: a retry waits for the clock.
  await drainJobs(t.jobs);
  assert.equal((await t.store.workflowGet({ id }))?.run.state, "running");
  const hold = await stepRow(t.store, id, "hold");
  const job = await t.store.jobGet({ id: hold.jobId! });
  assert.equal(job?.state, "retryable");
  assert.equal(job?.attempt, 1);
  assert.equal(job?.maxAttempts, 2);
  // The declared backoff, not the default's.
  assert.equal(job?.scheduledAt, T0 + 10_000);

  clock.advance(9_999);
  await drainJobs(t.jobs);
  assert.equal((await t.store.jobGet({ id: hold.jobId! }))?.attempt, 1, "not before the backoff");
  clock.advance(1);
  await drainJobs(t.jobs);
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "compensated", JSON.stringify(detail?.run));
  assert.equal((await t.store.jobGet({ id: hold.jobId! }))?.state, "discarded");
  assert.equal((await t.store.attemptsList({ jobId: hold.jobId! })).length, 2);
  assert.match(detail!.run.error!, /step "hold" discarded: command "sh" exited with code 1/);
  const undo = detail!.steps.find((s) => s.step === "place" && s.kind === "compensation");
  assert.equal(undo?.state, "completed");
});

Deno.test("a command use case's timeout stops an attempt that runs too long", async () => {
  const clock = new FakeClock(T0);
  const dir = await tempDir();
  await using _cleanup = { [Symbol.asyncDispose]: dir.cleanup };
  await using t = await tempJobs([commandWorker({ clock, env: () => undefined })], { clock });
  const started = `${dir.path}/started`;
  const definition = sagaOf(
    `    command: ["sh", "-c", "echo $$ > '${started}'; exec sleep 60"]`,
    "    max_attempts: 1",
    "    timeout: 30s",
  );
  const { id } = await startWorkflowRun(t.store, {
    definition,
    input: {},
    actor: "test",
    now: clock.now(),
  });
  await drainJobs(t.jobs, { withRecursion: false }); // `place` completes; `hold` becomes due
  const drained = drainJobs(t.jobs);
  // The attempt's timer is set before the command starts: once it has written, it is armed.
  await waitUntil(
    "the hold command started",
    () => Deno.stat(started).then(() => true, () => false),
    {
      timeoutMs: 30_000,
    },
  );
  clock.advance(30_000);
  await drained;
  const jobId = (await stepRow(t.store, id, "hold")).jobId!;
  const [attempt] = await t.store.attemptsList({ jobId });
  assert.match(attempt!.error!, /timed out after 30000 ms/);
  await drainJobs(t.jobs);
  assert.equal((await t.store.workflowGet({ id }))?.run.state, "compensated");
});
