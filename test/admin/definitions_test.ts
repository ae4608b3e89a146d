import assert from "node:assert/strict";
import { applyJobAction, replayJob } from "../../src/admin/jobs.ts";
import { definitionText } from "../../src/admin/definitions.ts";
import { defineWorker } from "../../src/mod.ts";
import { definitionHash, occurrenceJob } from "../../src/schedule/plan.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import { drainQueue } from "../../src/testing.ts";
import { scheduleOf } from "../support/schedules.ts";
import { tempJobs } from "../support/stores.ts";

const FILE = "schedules.yaml";

/** A `tick` worker that fails while its args say `fail`, and the args of every attempt. */
function tick() {
  const seen: unknown[] = [];
  const worker = defineWorker<{ fail: boolean }>({
    name: "tick",
    maxAttempts: 1,
    perform: (args) => {
      seen.push(args);
      if (args.fail) throw new Error("the feed is broken");
    },
  });
  return { worker, seen };
}

async function failedOccurrence(t: Awaited<ReturnType<typeof tempJobs>>, schedule: Schedule) {
  const at = t.clock.now();
  const occurrence = `${schedule.id}@${new Date(at).toISOString()}`;
  const [row] = await t.store.jobsInsert({
    jobs: [occurrenceJob(schedule, { at, occurrence, local: "", note: "" })],
    now: at,
  });
  await drainQueue(t.jobs, "default");
  assert.equal((await t.store.jobGet({ id: row!.id }))?.state, "discarded");
  return { id: row!.id, occurrence };
}

const who = (now: number) => ({ actor: "ops", reason: "fixed the feed", now });

Deno.test("replay of a failed occurrence runs the schedule's fixed definition and records its hash", async () => {
  const { worker, seen } = tick();
  await using t = await tempJobs([worker]);
  const planned = scheduleOf({
    id: "feed",
    every: "1h",
    max_attempts: 1,
    run: { worker: "tick", args: { fail: true } },
  });
  const fixed = scheduleOf({
    id: "feed",
    every: "1h",
    max_attempts: 1,
    run: { worker: "tick", args: { fail: false } },
  });
  const { id, occurrence } = await failedOccurrence(t, planned);

  const result = await replayJob(t.store, occurrence, who(t.clock.now()), false, {
    live: { file: FILE, schedules: [fixed] },
    asPlanned: false,
  });
  assert.equal(result.replayed, true);
  assert.equal(result.definition.runs, "live");
  assert.equal(result.definition.planned, definitionHash(planned));
  assert.equal(result.definition.hash, definitionHash(fixed));
  assert.deepEqual(result.definition.differences, ["args.fail: true -> false"]);
  assert.match(
    definitionText(result.definition),
    /runs the live definition .*args\.fail: true -> false/,
  );

  await drainQueue(t.jobs, "default");
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "completed");
  assert.equal(job?.occurrence, occurrence, "the same occurrence identity");
  assert.deepEqual(seen, [{ fail: true }, { fail: false }]);
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.deepEqual(
    attempts.map((a) => [a.kind, a.outcome, a.definition]),
    [
      ["run", "discarded", definitionHash(planned)],
      ["replay", "completed", definitionHash(fixed)],
    ],
  );
});

Deno.test("replay --as-planned, and replay of a schedule no longer in the file, run the stored definition and say why", async () => {
  const { worker, seen } = tick();
  await using t = await tempJobs([worker]);
  const planned = scheduleOf({
    id: "feed",
    every: "1h",
    max_attempts: 1,
    run: { worker: "tick", args: { fail: true } },
  });
  const fixed = scheduleOf({
    id: "feed",
    every: "1h",
    max_attempts: 1,
    run: { worker: "tick", args: { fail: false } },
  });
  const { occurrence } = await failedOccurrence(t, planned);

  const kept = await replayJob(t.store, occurrence, who(t.clock.now()), false, {
    live: { file: FILE, schedules: [fixed] },
    asPlanned: true,
  });
  assert.equal(kept.definition.runs, "as-planned");
  assert.equal(kept.definition.why, "--as-planned");
  await drainQueue(t.jobs, "default");

  const gone = await replayJob(t.store, occurrence, who(t.clock.now()), false, {
    live: { file: FILE, schedules: [] },
    asPlanned: false,
  });
  assert.equal(gone.definition.runs, "as-planned");
  assert.equal(gone.definition.why, `schedule "feed" is no longer in ${FILE}`);
  await drainQueue(t.jobs, "default");
  assert.deepEqual(seen, [{ fail: true }, { fail: true }, { fail: true }]);
});

Deno.test("bulk retry runs each schedule's live definition; a job of no schedule runs its own", async () => {
  const { worker, seen } = tick();
  await using t = await tempJobs([worker]);
  const planned = scheduleOf({
    id: "feed",
    every: "1h",
    max_attempts: 1,
    run: { worker: "tick", args: { fail: true } },
  });
  const fixed = scheduleOf({
    id: "feed",
    every: "1h",
    max_attempts: 1,
    run: { worker: "tick", args: { fail: false } },
  });
  const { id } = await failedOccurrence(t, planned);
  const plain = await t.jobs.enqueue("tick", { fail: true });
  await drainQueue(t.jobs, "default");

  const jobs = [(await t.store.jobGet({ id }))!, (await t.store.jobGet({ id: plain.id }))!];
  const done = await applyJobAction(t.store, "retry", jobs, who(t.clock.now()), {
    live: { file: FILE, schedules: [fixed] },
    asPlanned: false,
  });
  assert.equal(done.changed.length, 2);
  assert.equal(done.definitions.get(id)?.runs, "live");
  assert.equal(done.definitions.has(plain.id), false, "a job of no schedule runs its own");
  await drainQueue(t.jobs, "default");
  assert.equal((await t.store.jobGet({ id }))?.state, "completed");
  assert.equal((await t.store.jobGet({ id: plain.id }))?.state, "discarded");
  assert.equal(seen.length, 4);
});
