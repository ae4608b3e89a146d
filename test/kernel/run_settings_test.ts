import assert from "node:assert/strict";
import { runSettingsMeta, runSettingsOf } from "../../src/kernel/run_settings.ts";
import { defineWorker, JobTimeoutError } from "../../src/mod.ts";
import { definitionHash, occurrenceJob } from "../../src/schedule/plan.ts";
import { drainQueue, waitUntil } from "../../src/testing.ts";
import { scheduleOf } from "../support/schedules.ts";
import { tempJobs } from "../support/stores.ts";

Deno.test("runSettingsOf() reads what runSettingsMeta() writes and drops values of the wrong shape", () => {
  const settings = {
    timeoutMs: 5_000,
    backoff: { kind: "exponential" as const, baseMs: 1_000, maxMs: 60_000 },
    retentionMs: 86_400_000,
    definition: "abc",
  };
  assert.deepEqual(runSettingsOf(JSON.stringify(runSettingsMeta(settings))), settings);
  assert.deepEqual(
    runSettingsOf({ timeoutMs: -1, backoff: { kind: "fixed" }, retentionMs: "1d", definition: 7 }),
    {},
  );
  assert.deepEqual(runSettingsOf("not json"), {});
});

Deno.test("a schedule's timeout on a run: worker aborts the worker, which has no timeout of its own", async () => {
  let reason: unknown;
  let started = false;
  const tick = defineWorker({
    name: "tick",
    perform: async (_args, ctx) => {
      started = true;
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      reason = ctx.signal.reason;
    },
  });
  await using t = await tempJobs([tick]);
  const schedule = scheduleOf({ id: "nightly", every: "1h", timeout: "3s" });
  const planned = occurrenceJob(schedule, {
    at: t.clock.now(),
    occurrence: `nightly@${new Date(t.clock.now()).toISOString()}`,
    local: "",
    note: "",
  });
  const [row] = await t.store.jobsInsert({ jobs: [planned], now: t.clock.now() });
  const draining = drainQueue(t.jobs, "default");
  await waitUntil("the job to start and its timer to park", () => started && t.clock.sleepers > 0);
  t.clock.advance(3_000);
  assert.equal((await draining).retryable, 1);
  assert.ok(reason instanceof JobTimeoutError);
  assert.equal((reason as JobTimeoutError).ms, 3_000);
  const [attempt] = await t.store.attemptsList({ jobId: row!.id });
  assert.match(attempt!.error!, /timed out after 3000 ms/);
  assert.equal(attempt!.definition, definitionHash(schedule), "the attempt records its definition");
});
