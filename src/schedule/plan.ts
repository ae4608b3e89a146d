/**
 * What the planner does with one schedule at one instant, as a pure
 * function: which occurrences since the recovery point become jobs, which
 * the misfire policy skips, which the overlap policy records as cancelled,
 * and where the recovery point moves. The store runs it inside the write
 * transaction that applies it, so racing planners act on a gap once.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { serializeArgs } from "../kernel/enqueue.ts";
import { runSettingsMeta } from "../kernel/run_settings.ts";
import type { NewJob, PlanContext, PlanDecision } from "../kernel/types.ts";
import { canonicalJson } from "../kernel/unique.ts";
import { between, occurrenceInstant } from "./occurrences.ts";
import type { FanOutRun, Occurrence, Schedule } from "./types.ts";
import { FANOUT_WORKER } from "../kernel/runs.ts";

/** At most this many occurrences are looked at per schedule and pass; the rest wait for the next. */
export const PLAN_WINDOW = 100_000;

/** The reason stored on an occurrence the overlap policy cancelled. */
export const OVERLAP_REASON = "overlap";

const NOTHING: PlanDecision = {
  jobs: [],
  cancelled: [],
  misfires: 0,
  lastMisfireFor: null,
  plannedFor: null,
};

/**
 * Decides one schedule's planning at `now`.
 *
 * - A manual schedule is never planned. A disabled one (in the file, or
 *   by an operator in the store) plans nothing and keeps its recovery point,
 *   so re-enabling applies the misfire policy to the gap.
 * - On first start (no recovery point) nothing in the past is planned: the
 *   recovery point becomes `now`.
 * - Occurrences whose instant plus `grace` is before `now` are misfires:
 *   `skip` runs none of them, `fire_once` runs one occurrence for the whole
 *   gap (the latest due, so the run after a long outage is one run), and
 *   `catch_up` runs the latest `catchUpLimit`. The others are counted as
 *   skipped.
 * - The overlap policy then looks at the occurrences still running or
 *   waiting: `allow` runs everything, `skip` runs one only when none is
 *   running or waiting (the first), `queue_one` keeps at most one waiting
 *   (the latest). The rest are recorded as cancelled with reason `overlap`.
 */
export function decide(schedule: Schedule, ctx: PlanContext, now: number): PlanDecision {
  if (schedule.rhythm.kind === "manual" || !schedule.enabled || !ctx.enabled) return NOTHING;
  if (ctx.lastPlannedFor === null) return { ...NOTHING, plannedFor: now };
  if (ctx.lastPlannedFor >= now) return NOTHING;

  const found = between(schedule, ctx.lastPlannedFor + 1, now + 1, PLAN_WINDOW);
  // By identity instant: with a jitter wider than the interval, jittered
  // order differs, and the policies below speak of the instants.
  const instant = (o: Occurrence) => occurrenceInstant(o.occurrence);
  const due = found.slice().sort((a, b) => instant(a) - instant(b));
  // A full window leaves the rest for the next pass, from the last one looked at.
  const plannedFor = found.length === PLAN_WINDOW ? instant(due.at(-1)!) : now;

  const late = (o: Occurrence) => instant(o) + schedule.misfire.graceMs < now;
  const missed = due.filter(late);
  let runs: Occurrence[];
  switch (schedule.misfire.policy) {
    case "skip":
      runs = due.filter((o) => !late(o));
      break;
    case "fire_once":
      // One run for the whole gap: the latest occurrence, even when it is
      // itself still on time (a minute schedule after hours down runs once).
      runs = missed.length > 0 ? due.slice(-1) : due;
      break;
    case "catch_up": {
      const onTime = due.filter((o) => !late(o));
      runs = missed.slice(-schedule.misfire.catchUpLimit).concat(onTime);
      break;
    }
  }
  const ran = new Set(runs);
  const skippedList = due.filter((o) => !ran.has(o));
  const skipped = skippedList.length;
  const lastSkipped = skipped > 0 ? instant(skippedList.at(-1)!) : null;

  let allowed: Occurrence[];
  switch (schedule.overlapPolicy) {
    case "allow":
      allowed = runs;
      break;
    case "skip":
      allowed = ctx.executing + ctx.waiting === 0 ? runs.slice(0, 1) : [];
      break;
    case "queue_one":
      allowed = ctx.waiting === 0 ? runs.slice(-1) : [];
      break;
  }
  const allowedSet = new Set(allowed);
  return {
    jobs: allowed.map((o) => occurrenceJob(schedule, o)),
    cancelled: runs.filter((o) => !allowedSet.has(o)).map((o) => ({
      job: occurrenceJob(schedule, o),
      reason: OVERLAP_REASON,
    })),
    misfires: skipped,
    lastMisfireFor: lastSkipped,
    plannedFor,
  };
}

/**
 * The job row of one occurrence. A `worker` run becomes a job of that
 * worker with its args; `command` and `http` runs become jobs of the
 * `jobs.command` / `jobs.http` runners with the run spec as args. A schedule
 * with a selection becomes a `jobs.fanout` job whose args are its
 * {@linkcode fanOutRun}. Timeout, backoff, retention and the definition's
 * hash travel as the job's run settings (`src/kernel/run_settings.ts`),
 * which the executor applies.
 */
export function occurrenceJob(schedule: Schedule, occurrence: Occurrence): NewJob {
  const run = schedule.run;
  const where = `schedule "${schedule.id}"`;
  const meta = occurrenceMeta(schedule);
  let worker = run.kind === "worker" ? run.worker : `jobs.${run.kind}`;
  let args = run.kind === "worker" ? run.args ?? {} : run;
  if (schedule.fanOut) {
    worker = FANOUT_WORKER;
    args = fanOutRun(schedule);
  }
  return {
    queue: schedule.queue,
    worker,
    args: serializeArgs(args, where),
    meta: JSON.stringify(meta),
    tags: JSON.stringify(schedule.tags),
    tenant: schedule.tenant ?? null,
    priority: schedule.priority,
    maxAttempts: schedule.maxAttempts,
    scheduledAt: occurrence.at,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: occurrence.occurrence,
    scheduleId: schedule.id,
    scheduledFor: occurrenceInstant(occurrence.occurrence),
  };
}

/** The meta of a schedule's occurrences: its id, and its run settings. */
function occurrenceMeta(schedule: Schedule): Record<string, unknown> {
  return {
    schedule: schedule.id,
    ...runSettingsMeta({
      timeoutMs: schedule.timeoutMs,
      backoff: schedule.backoff,
      retentionMs: schedule.retentionMs,
      definition: definitionHash(schedule),
    }),
  };
}

const HASHES = new WeakMap<Schedule, string>();

/**
 * A stable hash of a schedule's definition: stored with the schedule's row
 * to tell when it changed, and with each occurrence (and each attempt) to
 * tell which definition it ran. Computed once per schedule object.
 */
export function definitionHash(schedule: Schedule): string {
  let hash = HASHES.get(schedule);
  if (hash === undefined) {
    hash = createHash("sha256").update(canonicalJson(schedule)).digest("base64url");
    HASHES.set(schedule, hash);
  }
  return hash;
}

/**
 * The args of a fan-out schedule's occurrence: the selection, the batch
 * size, the run, and what each item's job takes from the schedule (queue,
 * priority, attempts, tags, tenant, and the occurrence meta), so the run
 * needs nothing from the configuration when it executes.
 */
export function fanOutRun(schedule: Schedule): FanOutRun {
  if (!schedule.fanOut) throw new TypeError(`schedule "${schedule.id}" has no selection`);
  return {
    kind: "fanout",
    schedule: schedule.id,
    selection: schedule.fanOut.selection,
    batchSize: schedule.fanOut.batchSize,
    run: schedule.run,
    item: {
      queue: schedule.queue,
      priority: schedule.priority,
      maxAttempts: schedule.maxAttempts,
      tags: [...schedule.tags],
      tenant: schedule.tenant ?? null,
      meta: occurrenceMeta(schedule),
    },
  };
}
