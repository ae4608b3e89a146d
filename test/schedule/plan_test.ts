/**
 * The planner's pure decision, `decide(schedule, ctx, now)`, and the job row
 * of one occurrence, `occurrenceJob`: no store, no clock, instants as numbers.
 * Schedules are built by the real parser from a one-schedule file (JSON is
 * YAML), so defaults apply exactly as they do for `schedules.yaml`.
 */

import assert from "node:assert/strict";
import type { PlanContext } from "../../src/kernel/types.ts";
import { between, occurrenceId } from "../../src/schedule/occurrences.ts";
import {
  decide,
  definitionHash,
  fanOutRun,
  occurrenceJob,
  OVERLAP_REASON,
  PLAN_WINDOW,
} from "../../src/schedule/plan.ts";
import { FANOUT_WORKER } from "../../src/kernel/runs.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import { scheduleOf } from "../support/schedules.ts";

const T = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Three days of downtime, ending off every grid so no occurrence is on time. */
const GAP = 3 * DAY + 30 * MINUTE + 30_000;

const schedule = scheduleOf;

function ctx(fields: Partial<PlanContext> = {}): PlanContext {
  return { enabled: true, lastPlannedFor: T, executing: 0, waiting: 0, ...fields };
}

const iso = (instant: number) => new Date(instant).toISOString();

Deno.test("decide() with fire_once after 3 days down runs 1 minute occurrence, the latest missed", () => {
  const s = schedule({ id: "m", every: "1m", misfire: "fire_once", grace: "10s" });
  const d = decide(s, ctx(), T + GAP);
  const latest = T + 3 * DAY + 30 * MINUTE;
  assert.deepEqual(d.jobs.map((j) => j.occurrence), [`m@${iso(latest)}`]);
  assert.equal(d.cancelled.length, 0);
  const missed = GAP / MINUTE | 0; // every whole minute in (T, T + GAP]
  assert.equal(d.misfires, missed - 1);
  assert.equal(d.lastMisfireFor, latest - MINUTE);
  assert.equal(d.plannedFor, T + GAP);
});

Deno.test("decide() with cron * * * * * and fire_once after 3 days down runs 1 occurrence", () => {
  const s = schedule({ id: "c", cron: "* * * * *", misfire: "fire_once", grace: "10s" });
  const d = decide(s, ctx(), T + GAP);
  assert.equal(d.jobs.length, 1);
  assert.equal(d.jobs[0]!.scheduledFor, T + 3 * DAY + 30 * MINUTE);
});

Deno.test("decide() with catch_up limit 24 after 3 days down runs the 24 latest hours and counts 48", () => {
  const s = schedule({
    id: "h",
    cron: "0 * * * *",
    misfire: "catch_up",
    catch_up_limit: 24,
    grace: "10s",
  });
  const d = decide(s, ctx(), T + GAP);
  const expected = Array.from({ length: 24 }, (_, i) => T + (49 + i) * HOUR);
  assert.deepEqual(d.jobs.map((j) => j.scheduledFor), expected);
  assert.deepEqual(d.jobs.map((j) => j.occurrence), expected.map((at) => `h@${iso(at)}`));
  assert.equal(d.misfires, 48);
  assert.equal(d.lastMisfireFor, T + 48 * HOUR);
});

Deno.test("decide() with misfire skip after 3 days down runs no daily occurrence and counts 3", () => {
  const s = schedule({ id: "d", cron: "0 0 * * *", misfire: "skip", grace: "10s" });
  const d = decide(s, ctx(), T + GAP);
  assert.deepEqual(d.jobs, []);
  assert.equal(d.misfires, 3);
  assert.equal(d.lastMisfireFor, T + 3 * DAY);
  assert.equal(d.plannedFor, T + GAP);
});

Deno.test("decide() treats an occurrence within grace as on time, not as a misfire", () => {
  const s = schedule({ id: "g", every: "1m", misfire: "skip" }); // grace 60 s by default
  const d = decide(s, ctx(), T + MINUTE + 59_000);
  assert.deepEqual(d.jobs.map((j) => j.scheduledFor), [T + MINUTE]);
  assert.equal(d.misfires, 0);
  assert.equal(d.lastMisfireFor, null);
});

Deno.test("decide() plans an occurrence due exactly at now", () => {
  const s = schedule({ id: "n", every: "1m" });
  const d = decide(s, ctx(), T + MINUTE);
  assert.deepEqual(d.jobs.map((j) => j.occurrence), [`n@${iso(T + MINUTE)}`]);
  assert.equal(d.plannedFor, T + MINUTE);
});

Deno.test("decide() on first start plans nothing in the past and sets the recovery point to now", () => {
  const s = schedule({ id: "f", every: "1m", misfire: "catch_up" });
  const d = decide(s, ctx({ lastPlannedFor: null }), T + GAP);
  assert.deepEqual(d.jobs, []);
  assert.deepEqual(d.cancelled, []);
  assert.equal(d.misfires, 0);
  assert.equal(d.plannedFor, T + GAP);
});

Deno.test("decide() for a disabled schedule plans nothing and keeps the recovery point", () => {
  const s = schedule({ id: "x", every: "1m" });
  const d = decide(s, ctx({ enabled: false }), T + GAP);
  assert.deepEqual(d.jobs, []);
  assert.equal(d.misfires, 0);
  assert.equal(d.plannedFor, null);
});

Deno.test("decide() for a schedule declared enabled: false in the file plans nothing", () => {
  const s = schedule({ id: "off", every: "1m", enabled: false });
  assert.equal(s.enabled, false);
  const d = decide(s, ctx(), T + 5 * MINUTE);
  assert.deepEqual(d.jobs.map((j) => j.occurrence), []);
  assert.equal(d.plannedFor, null);
});

Deno.test("decide() never plans a manual schedule", () => {
  const s = schedule({ id: "man", manual: true, guard: "on-call", runs_where: "staging" });
  assert.deepEqual(decide(s, ctx(), T + GAP).jobs, []);
  assert.equal(decide(s, ctx({ lastPlannedFor: null }), T + GAP).plannedFor, null);
});

Deno.test("decide() plans nothing when the recovery point is at or after now", () => {
  const s = schedule({ id: "r", every: "1m" });
  assert.deepEqual(decide(s, ctx({ lastPlannedFor: T + MINUTE }), T + MINUTE).jobs, []);
  assert.equal(decide(s, ctx({ lastPlannedFor: T + MINUTE }), T + MINUTE).plannedFor, null);
});

Deno.test("decide() never plans an occurrence at the recovery point again", () => {
  const s = schedule({ id: "r", every: "1m" });
  const d = decide(s, ctx({ lastPlannedFor: T + MINUTE }), T + 2 * MINUTE);
  assert.deepEqual(d.jobs.map((j) => j.scheduledFor), [T + 2 * MINUTE]);
});

Deno.test("decide() with a full window moves the recovery point only to the last occurrence looked at", () => {
  const s = schedule({ id: "w", every: "1s", misfire: "skip" });
  const now = T + (PLAN_WINDOW + 500) * 1000;
  const d = decide(s, ctx(), now);
  assert.equal(d.plannedFor, T + PLAN_WINDOW * 1000);
  assert.equal(d.misfires, PLAN_WINDOW);
  const rest = decide(s, ctx({ lastPlannedFor: d.plannedFor }), now);
  assert.equal(rest.plannedFor, now);
  assert.equal(rest.misfires + rest.jobs.length, 500);
});

// ------------------------------------------------------------------ overlap

/** A minute schedule with a long grace: every occurrence in the window is on time. */
function overlapping(policy: string): Schedule {
  return schedule({ id: `o-${policy}`, every: "1m", grace: "1h", overlap_policy: policy });
}

Deno.test("decide() with overlap allow plans every occurrence, whatever runs or waits", () => {
  const s = overlapping("allow");
  for (const c of [ctx(), ctx({ executing: 1 }), ctx({ waiting: 3 })]) {
    const d = decide(s, c, T + 5 * MINUTE);
    assert.equal(d.jobs.length, 5);
    assert.deepEqual(d.cancelled, []);
  }
});

Deno.test("decide() with overlap skip cancels the new occurrence while one is executing", () => {
  const s = overlapping("skip");
  const d = decide(s, ctx({ executing: 1 }), T + MINUTE);
  assert.deepEqual(d.jobs, []);
  assert.deepEqual(
    d.cancelled.map((c) => [c.job.occurrence, c.reason]),
    [[`o-skip@${iso(T + MINUTE)}`, "overlap"]],
  );
  assert.equal(OVERLAP_REASON, "overlap");
});

Deno.test("decide() with overlap skip cancels the new occurrence while one is waiting", () => {
  const s = overlapping("skip");
  const d = decide(s, ctx({ waiting: 1 }), T + MINUTE);
  assert.deepEqual(d.jobs, []);
  assert.deepEqual(d.cancelled.map((c) => c.reason), ["overlap"]);
});

Deno.test("decide() with overlap skip and nothing running runs the first of several and cancels the rest", () => {
  const s = overlapping("skip");
  const d = decide(s, ctx(), T + 3 * MINUTE);
  assert.deepEqual(d.jobs.map((j) => j.scheduledFor), [T + MINUTE]);
  assert.deepEqual(d.cancelled.map((c) => c.job.scheduledFor), [T + 2 * MINUTE, T + 3 * MINUTE]);
});

Deno.test("decide() with overlap queue_one keeps one waiting: the latest, and none while one waits", () => {
  const s = overlapping("queue_one");
  const d = decide(s, ctx(), T + 3 * MINUTE);
  assert.deepEqual(d.jobs.map((j) => j.scheduledFor), [T + 3 * MINUTE]);
  assert.deepEqual(d.cancelled.map((c) => c.job.scheduledFor), [T + MINUTE, T + 2 * MINUTE]);
  assert.ok(d.cancelled.every((c) => c.reason === "overlap"));

  const waiting = decide(s, ctx({ waiting: 1 }), T + MINUTE);
  assert.deepEqual(waiting.jobs, []);
  assert.equal(waiting.cancelled.length, 1);

  // One executing is not waiting: the next may wait behind it.
  const executing = decide(s, ctx({ executing: 1 }), T + MINUTE);
  assert.equal(executing.jobs.length, 1);
});

Deno.test("decide() applies the misfire policy before the overlap policy", () => {
  const s = schedule({
    id: "mo",
    every: "1m",
    misfire: "catch_up",
    catch_up_limit: 2,
    grace: "10s",
    overlap_policy: "skip",
  });
  const d = decide(s, ctx(), T + 5 * MINUTE + 30_000);
  assert.equal(d.misfires, 3);
  assert.deepEqual(d.jobs.map((j) => j.scheduledFor), [T + 4 * MINUTE]);
  assert.deepEqual(d.cancelled.map((c) => c.job.scheduledFor), [T + 5 * MINUTE]);
});

// ------------------------------------------------------------ occurrence jobs

Deno.test("occurrenceJob() of a worker run names the worker and carries its args", () => {
  const s = schedule({ id: "wk", every: "1m", run: { worker: "reports.build", args: { n: 1 } } });
  const [o] = between(s, T, T + 1);
  const job = occurrenceJob(s, o!);
  assert.equal(job.worker, "reports.build");
  assert.deepEqual(JSON.parse(job.args), { n: 1 });
  assert.equal(job.scheduleId, "wk");
  assert.equal(job.scheduledFor, T);
  assert.equal(job.scheduledAt, T);
  assert.equal(job.occurrence, `wk@${iso(T)}`);
  assert.equal(job.occurrence, occurrenceId("wk", T));
  assert.equal(job.queue, "default");
  assert.equal(job.uniqueKey, null);
});

Deno.test("occurrenceJob() of a worker run without args carries {}", () => {
  const s = schedule({ id: "wk", every: "1m", run: { worker: "tick" } });
  const job = occurrenceJob(s, between(s, T, T + 1)[0]!);
  assert.deepEqual(JSON.parse(job.args), {});
});

Deno.test("occurrenceJob() of a command run is a jobs.command job with the run spec as args", () => {
  const s = schedule({ id: "cmd", every: "1m", run: { command: ["echo", "hi"] } });
  const job = occurrenceJob(s, between(s, T, T + 1)[0]!);
  assert.equal(job.worker, "jobs.command");
  assert.deepEqual(JSON.parse(job.args), s.run);
  assert.equal(JSON.parse(job.args).kind, "command");
  assert.deepEqual(JSON.parse(job.args).argv, ["echo", "hi"]);
});

Deno.test("occurrenceJob() of an http run is a jobs.http job with the run spec as args", () => {
  const s = schedule({
    id: "web",
    every: "1m",
    run: { http: { method: "GET", url: "https://example.com/x" } },
  });
  const job = occurrenceJob(s, between(s, T, T + 1)[0]!);
  assert.equal(job.worker, "jobs.http");
  assert.deepEqual(JSON.parse(job.args), s.run);
});

Deno.test("occurrenceJob() of a schedule with a selection is a jobs.fanout job carrying all it needs", () => {
  const s = schedule({
    id: "fan",
    every: "1h",
    queue: "bulk",
    priority: 3,
    max_attempts: 4,
    tags: ["nightly"],
    tenant: "acme",
    timeout: "5m",
    selection: { command: ["list-accounts"] },
    batch_size: 50,
    run: { command: ["reindex", "{item}"] },
  });
  const job = occurrenceJob(s, between(s, T, T + 1)[0]!);
  assert.equal(job.worker, FANOUT_WORKER);
  assert.equal(job.worker, "jobs.fanout");
  assert.equal(job.occurrence, `fan@${iso(T)}`);
  assert.equal(job.scheduleId, "fan");
  assert.equal(job.queue, "bulk");
  assert.deepEqual(JSON.parse(job.meta), {
    schedule: "fan",
    timeoutMs: 300_000,
    definition: definitionHash(s),
  });
  assert.deepEqual(JSON.parse(job.args), {
    kind: "fanout",
    schedule: "fan",
    selection: { kind: "command", argv: ["list-accounts"], shell: false },
    batchSize: 50,
    run: { kind: "command", argv: ["reindex", "{item}"], shell: false },
    item: {
      queue: "bulk",
      priority: 3,
      maxAttempts: 4,
      tags: ["nightly"],
      tenant: "acme",
      meta: { schedule: "fan", timeoutMs: 300_000, definition: definitionHash(s) },
    },
  });
  assert.deepEqual(JSON.parse(job.args), fanOutRun(s));
  assert.throws(
    () => fanOutRun(schedule({ id: "plain", every: "1h" })),
    /schedule "plain" has no selection/,
  );
});

Deno.test("occurrenceJob() puts timeoutMs, backoff, retentionMs and the definition's hash in meta", () => {
  const s = schedule({
    id: "meta",
    every: "1m",
    timeout: "5m",
    backoff: { exponential: { base: "1s", max: "1m" } },
    retention: "7d",
    queue: "reports",
    priority: 2,
    max_attempts: 3,
    tags: ["a", "b"],
    tenant: "acme",
  });
  const job = occurrenceJob(s, between(s, T, T + 1)[0]!);
  assert.deepEqual(JSON.parse(job.meta), {
    schedule: "meta",
    timeoutMs: 5 * MINUTE,
    backoff: { kind: "exponential", baseMs: 1000, maxMs: MINUTE },
    retentionMs: 7 * DAY,
    definition: definitionHash(s),
  });
  assert.equal(job.queue, "reports");
  assert.equal(job.priority, 2);
  assert.equal(job.maxAttempts, 3);
  assert.deepEqual(JSON.parse(job.tags), ["a", "b"]);
  assert.equal(job.tenant, "acme");

  const p = schedule({ id: "p", every: "1m" });
  const plain = occurrenceJob(p, between(s, T, T + 1)[0]!);
  assert.deepEqual(JSON.parse(plain.meta), { schedule: "p", definition: definitionHash(p) });
});

Deno.test("occurrenceJob() with jitter runs later than scheduled_for; the identity keeps the pre-jitter instant", () => {
  const s = schedule({ id: "jit", every: "1m", jitter: "30s", grace: "1h" });
  const d = decide(s, ctx(), T + 10 * MINUTE);
  assert.equal(d.jobs.length, 10);
  let later = 0;
  for (const [i, job] of d.jobs.entries()) {
    const instant = T + (i + 1) * MINUTE;
    assert.equal(job.scheduledFor, instant);
    assert.equal(job.occurrence, `jit@${iso(instant)}`);
    assert.ok(job.scheduledAt >= instant && job.scheduledAt < instant + 30_000);
    if (job.scheduledAt > instant) later++;
  }
  assert.ok(later >= 9, `${later} of 10 jittered later`);
});

Deno.test("decide() with fire_once and the default grace still runs 1 occurrence after 3 days down", () => {
  // The latest minute is within the 60 s grace: it stands for the whole gap.
  const s = schedule({ id: "m", every: "1m", misfire: "fire_once" });
  const d = decide(s, ctx(), T + GAP);
  const latest = T + 3 * DAY + 30 * MINUTE;
  assert.deepEqual(d.jobs.map((j) => j.occurrence), [occurrenceId("m", latest)]);
  assert.equal(d.misfires, (GAP / MINUTE | 0) - 1, "every other minute of the gap is a misfire");
  assert.equal(d.plannedFor, T + GAP);
});
