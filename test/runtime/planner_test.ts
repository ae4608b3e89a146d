/**
 * The planner against a real SQLite store on a FakeClock: misfire recovery
 * after downtime, first start, racing planners, disabled and removed
 * schedules, overlap policies, occurrence rows, run bookkeeping, and the
 * planner loop of the runtime. Every pass is `planSchedules(store, now, ...)`
 * called directly, except in the runtime tests, which only advance the clock.
 */

import assert from "node:assert/strict";
import type { Job } from "../../src/kernel/types.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { Store } from "../../src/store/store.ts";
import { drainQueue, waitUntil } from "../../src/testing.ts";
import { definitionHash, planSchedules, syncSchedules } from "../../src/runtime/planner.ts";
import { type Backend, backendJobs, BACKENDS } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";

const T = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Three days of downtime, ending off every grid: with a 10 s grace, nothing in it is on time. */
const GAP = 3 * DAY + 30 * MINUTE + 30_000;

const schedule = scheduleOf;

const iso = (instant: number) => new Date(instant).toISOString();

/** One test body, run on every backend of BACKENDS. */
function test(name: string, fn: (backend: Backend) => Promise<void>): void {
  for (const backend of BACKENDS) Deno.test(`[${backend.name}] ${name}`, () => fn(backend));
}

/** How many jobs each occurrence of schedule `id` has, by occurrence. */
async function occurrenceCounts(store: Store, id: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const job of await store.jobsList({ scheduleId: id, limit: 1_000_000 })) {
    counts.set(job.occurrence!, (counts.get(job.occurrence!) ?? 0) + 1);
  }
  return counts;
}

async function jobsOf(store: Store, id: string): Promise<Job[]> {
  const all = await store.jobsList({ limit: 1_000_000 });
  return all.filter((j) => j.scheduleId === id).sort((a, b) => a.scheduledFor! - b.scheduledFor!);
}

async function row(store: Store, id: string) {
  const [found] = await store.schedulesList({ ids: [id] });
  assert.ok(found, `schedule row ${id}`);
  return found;
}

/** Syncs and plans once at the clock's now: the recovery point of a first start. */
async function firstStart(store: Store, now: number, schedules: Schedule[]) {
  await syncSchedules(store, now, schedules);
  const report = await planSchedules(store, now, schedules);
  assert.equal(report.planned, 0);
}

// ------------------------------------------------------------------ misfire

test("planSchedules() after 3 days down: a minute fire_once schedule makes exactly 1 job", async (backend) => {
  for (const rhythm of [{ every: "1m" }, { cron: "* * * * *" }]) {
    await using t = await backendJobs(backend);
    const s = schedule({ id: "minute", ...rhythm, misfire: "fire_once", grace: "10s" });
    await firstStart(t.store, t.clock.now(), [s]);
    t.clock.advance(GAP);

    const report = await planSchedules(t.store, t.clock.now(), [s]);
    const latest = T + 3 * DAY + 30 * MINUTE;
    assert.equal(report.planned, 1);
    assert.deepEqual((await jobsOf(t.store, "minute")).map((j) => j.occurrence), [
      `minute@${iso(latest)}`,
    ]);
    const r = await row(t.store, "minute");
    assert.equal(r.misfires, GAP / MINUTE - 1 | 0);
    assert.equal(r.lastMisfireFor, latest - MINUTE);
    assert.equal(r.lastPlannedFor, T + GAP);

    // The next regular occurrence is planned on time, at its instant.
    const nextAt = latest + MINUTE;
    assert.equal(report.nextAt, nextAt);
    t.clock.set(nextAt);
    assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);
    const last = (await jobsOf(t.store, "minute")).at(-1)!;
    assert.equal(last.occurrence, `minute@${iso(nextAt)}`);
    assert.equal(last.scheduledAt, nextAt);
    assert.equal(last.scheduledFor, nextAt);
    assert.equal(last.state, "available");
    assert.equal((await row(t.store, "minute")).misfires, GAP / MINUTE - 1 | 0);
  }
});

test("planSchedules() after 3 days down: an hourly catch_up schedule with limit 24 makes the 24 latest hours", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({
    id: "hourly",
    cron: "0 * * * *",
    misfire: "catch_up",
    catch_up_limit: 24,
    grace: "10s",
  });
  await firstStart(t.store, t.clock.now(), [s]);
  t.clock.advance(GAP);

  const report = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(report.planned, 24);
  assert.equal(report.misfires, 48);
  const expected = Array.from({ length: 24 }, (_, i) => T + (49 + i) * HOUR);
  const jobs = await jobsOf(t.store, "hourly");
  assert.deepEqual(jobs.map((j) => j.scheduledFor), expected);
  assert.deepEqual(jobs.map((j) => j.occurrence), expected.map((at) => `hourly@${iso(at)}`));
  const r = await row(t.store, "hourly");
  assert.equal(r.misfires, 48);
  assert.equal(r.lastMisfireFor, T + 48 * HOUR);

  const nextAt = T + 73 * HOUR;
  assert.equal(report.nextAt, nextAt);
  t.clock.set(nextAt);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);
  const last = (await jobsOf(t.store, "hourly")).at(-1)!;
  assert.equal(last.occurrence, `hourly@${iso(nextAt)}`);
  assert.equal(last.scheduledAt, nextAt);
  assert.equal((await row(t.store, "hourly")).misfires, 48);
});

test("planSchedules() after 3 days down: a daily skip schedule makes 0 jobs and counts 3 misfires", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({ id: "daily", cron: "0 0 * * *", misfire: "skip", grace: "10s" });
  await firstStart(t.store, t.clock.now(), [s]);
  t.clock.advance(GAP);

  const report = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(report.planned, 0);
  assert.deepEqual(await jobsOf(t.store, "daily"), []);
  const r = await row(t.store, "daily");
  assert.equal(r.misfires, 3);
  assert.equal(r.lastMisfireFor, T + 3 * DAY);
  assert.equal(r.lastPlannedFor, T + GAP);

  const nextAt = T + 4 * DAY;
  assert.equal(report.nextAt, nextAt);
  t.clock.set(nextAt);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);
  const [job] = await jobsOf(t.store, "daily");
  assert.equal(job!.occurrence, `daily@${iso(nextAt)}`);
  assert.equal(job!.scheduledAt, nextAt);
});

// -------------------------------------------------------------- first start

test("planSchedules() on first start inserts nothing for the past and sets last_planned_for = now", async (backend) => {
  await using t = await backendJobs(backend);
  t.clock.advance(GAP);
  const s = schedule({ id: "fresh", every: "1m", misfire: "catch_up", start_at: iso(T - DAY) });
  await syncSchedules(t.store, t.clock.now(), [s]);
  assert.equal((await row(t.store, "fresh")).lastPlannedFor, null);

  const report = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(report.planned, 0);
  assert.equal(report.misfires, 0);
  assert.deepEqual(await jobsOf(t.store, "fresh"), []);
  const r = await row(t.store, "fresh");
  assert.equal(r.lastPlannedFor, T + GAP);
  assert.equal(r.misfires, 0);

  t.clock.advance(30_000); // the next minute
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);
});

test("planSchedules() plans nothing for a schedule without a synced row", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({ id: "unsynced", every: "1m" });
  t.clock.advance(5 * MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 0);
  assert.deepEqual(await t.store.schedulesList({}), []);
});

// ------------------------------------------------------------------- racing

test("planSchedules() on two connections racing over one gap makes each occurrence once and counts misfires once", async (backend) => {
  await using t = await backendJobs(backend);
  const other = await t.connect();
  {
    const s = schedule({ id: "race", every: "1m", misfire: "catch_up", grace: "10s" });
    await firstStart(t.store, t.clock.now(), [s]);
    t.clock.advance(GAP);
    const now = t.clock.now();

    const [a, b] = await Promise.all([
      planSchedules(t.store, now, [s]),
      planSchedules(other, now, [s]),
    ]);
    assert.equal(a.planned + b.planned, 100); // catch_up_limit defaults to 100
    assert.equal(a.misfires + b.misfires, (GAP / MINUTE | 0) - 100);

    const counts = await occurrenceCounts(t.store, "race");
    assert.equal(counts.size, 100);
    assert.ok([...counts.values()].every((n) => n === 1), "every occurrence exactly once");
    const latest = T + 3 * DAY + 30 * MINUTE;
    assert.deepEqual(
      [...counts.keys()].sort(),
      Array.from({ length: 100 }, (_, i) => `race@${iso(latest - (99 - i) * MINUTE)}`),
    );
    const r = await row(t.store, "race");
    assert.equal(r.misfires, (GAP / MINUTE | 0) - 100);
    assert.equal(r.lastPlannedFor, now);
  }
});

test("planSchedules() in two OS processes racing over one gap makes each occurrence once", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({ id: "procs", every: "1m", misfire: "catch_up", grace: "10s" });
  await firstStart(t.store, t.clock.now(), [s]);
  const now = t.clock.now() + GAP;
  const script = `
    import { openStore } from ${JSON.stringify(import.meta.resolve("../../src/store/open.ts"))};
    import { planSchedules } from ${
    JSON.stringify(import.meta.resolve("../../src/runtime/planner.ts"))
  };
    const [location, schedule, now] = JSON.parse(Deno.args[0]);
    const { store } = await openStore(location, { mode: "write" });
    const report = await planSchedules(store, now, [schedule]);
    await store.close();
    console.log(JSON.stringify(report));
  `;
  const deno = Deno.execPath();
  const arg = JSON.stringify([t.location, s, now]);
  const outputs = await Promise.all([1, 2].map(() =>
    new Deno.Command(deno, {
      args: ["eval", "--config", new URL("../../deno.json", import.meta.url).pathname, script, arg],
      stdout: "piped",
      stderr: "piped",
    }).output()
  ));
  const reports = outputs.map((o) => {
    assert.ok(o.success, new TextDecoder().decode(o.stderr));
    return JSON.parse(new TextDecoder().decode(o.stdout).trim().split("\n").at(-1)!);
  });
  assert.equal(reports[0].planned + reports[1].planned, 100);
  const counts = await occurrenceCounts(t.store, "procs");
  assert.equal(counts.size, 100);
  assert.ok([...counts.values()].every((n) => n === 1));
  assert.equal((await row(t.store, "procs")).misfires, (GAP / MINUTE | 0) - 100);
});

// -------------------------------------------------------- disabled, removed

test("planSchedules() for a disabled schedule plans nothing and keeps its recovery point; re-enabled, fire_once makes 1 job for the gap", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({ id: "paused", every: "1m", misfire: "fire_once", grace: "10s" });
  await firstStart(t.store, t.clock.now(), [s]);
  assert.equal(
    await t.store.scheduleSetEnabled({
      id: "paused",
      enabled: false,
      reason: "maintenance",
      actor: "ops",
      now: t.clock.now(),
    }),
    true,
  );
  t.clock.advance(GAP);

  const report = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(report.planned, 0);
  assert.deepEqual(await jobsOf(t.store, "paused"), []);
  let r = await row(t.store, "paused");
  assert.equal(r.lastPlannedFor, T);
  assert.equal(r.misfires, 0);
  assert.equal(r.enabled, false);

  await t.store.scheduleSetEnabled({
    id: "paused",
    enabled: true,
    reason: null,
    actor: "ops",
    now: t.clock.now(),
  });
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);
  const jobs = await jobsOf(t.store, "paused");
  assert.deepEqual(jobs.map((j) => j.scheduledFor), [T + 3 * DAY + 30 * MINUTE]);
  r = await row(t.store, "paused");
  assert.equal(r.lastPlannedFor, T + GAP);
  assert.equal(r.misfires, (GAP / MINUTE | 0) - 1);
});

test("planSchedules() for a schedule declared enabled: false in the file plans nothing", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({ id: "off", every: "1m", enabled: false });
  await firstStart(t.store, t.clock.now(), [s]);
  t.clock.advance(5 * MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 0);
  assert.deepEqual(await jobsOf(t.store, "off"), []);
});

test("planSchedules() stops planning a removed schedule; its rows and occurrences stay", async (backend) => {
  await using t = await backendJobs(backend);
  const kept = schedule({ id: "kept", every: "1m" });
  const gone = schedule({ id: "gone", every: "1m" });
  await firstStart(t.store, t.clock.now(), [kept, gone]);
  t.clock.advance(MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [kept, gone])).planned, 2);

  t.clock.advance(MINUTE);
  await syncSchedules(t.store, t.clock.now(), [kept]);
  assert.equal((await planSchedules(t.store, t.clock.now(), [kept])).planned, 1);
  t.clock.advance(DAY);
  await planSchedules(t.store, t.clock.now(), [kept]);

  const goneJobs = await jobsOf(t.store, "gone");
  assert.deepEqual(goneJobs.map((j) => j.occurrence), [`gone@${iso(T + MINUTE)}`]);
  assert.deepEqual((await t.store.schedulesList({})).map((r) => r.id), ["gone", "kept"]);
  const r = await row(t.store, "gone");
  assert.equal(r.lastPlannedFor, T + MINUTE);
  assert.equal(r.definitionHash, definitionHash(gone));
});

// ------------------------------------------------------------------ overlap

async function overlapSetup(backend: Backend, policy: string) {
  const t = await backendJobs(backend);
  const s = schedule({ id: policy, every: "1m", grace: "1h", overlap_policy: policy });
  await firstStart(t.store, t.clock.now(), [s]);
  return { t, s };
}

test("planSchedules() with overlap skip records an occurrence as cancelled (overlap) while one waits or executes", async (backend) => {
  const { t, s } = await overlapSetup(backend, "skip");
  await using _ = t;
  t.clock.advance(MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);

  // The first still waits (available): the next is cancelled.
  t.clock.advance(MINUTE);
  const waiting = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(waiting.planned, 0);
  assert.equal(waiting.cancelled, 1);

  // The first now executes: the next is cancelled too.
  const { jobs: claimed } = await t.store.jobsClaim({
    queue: "default",
    node: "n1",
    limit: 10,
    now: t.clock.now(),
    leaseMs: HOUR,
  });
  assert.equal(claimed.length, 1);
  t.clock.advance(MINUTE);
  const executing = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(executing.cancelled, 1);

  const jobs = await jobsOf(t.store, "skip");
  assert.deepEqual(jobs.map((j) => [j.scheduledFor, j.state]), [
    [T + MINUTE, "executing"],
    [T + 2 * MINUTE, "cancelled"],
    [T + 3 * MINUTE, "cancelled"],
  ]);
  for (const j of jobs.slice(1)) {
    assert.equal(j.errors.at(-1)?.error, "overlap");
    assert.equal(j.occurrence, `skip@${iso(j.scheduledFor!)}`);
  }
});

test("planSchedules() with overlap queue_one keeps at most one occurrence waiting", async (backend) => {
  const { t, s } = await overlapSetup(backend, "queue_one");
  await using _ = t;
  t.clock.advance(5 * MINUTE);
  const first = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(first.planned, 1);
  assert.equal(first.cancelled, 4);
  t.clock.advance(MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 0);

  const waitingOf = async () =>
    (await jobsOf(t.store, "queue_one")).filter((j) =>
      ["scheduled", "available", "retryable"].includes(j.state)
    );
  assert.deepEqual((await waitingOf()).map((j) => j.scheduledFor), [T + 5 * MINUTE]);

  // Once it runs, one more may wait behind it.
  await t.store.jobsClaim({
    queue: "default",
    node: "n1",
    limit: 10,
    now: t.clock.now(),
    leaseMs: HOUR,
  });
  t.clock.advance(2 * MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 1);
  assert.deepEqual((await waitingOf()).map((j) => j.scheduledFor), [T + 8 * MINUTE]);
  const cancelled = (await jobsOf(t.store, "queue_one")).filter((j) => j.state === "cancelled");
  assert.equal(cancelled.length, 6);
  assert.ok(cancelled.every((j) => j.errors.at(-1)?.error === "overlap"));
});

test("planSchedules() with overlap allow plans every occurrence while others wait", async (backend) => {
  const { t, s } = await overlapSetup(backend, "allow");
  await using _ = t;
  t.clock.advance(5 * MINUTE);
  assert.equal((await planSchedules(t.store, t.clock.now(), [s])).planned, 5);
  t.clock.advance(MINUTE);
  const report = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(report.planned, 1);
  assert.equal(report.cancelled, 0);
  const jobs = await jobsOf(t.store, "allow");
  assert.equal(jobs.length, 6);
  assert.ok(jobs.every((j) => j.state === "available"));
});

// --------------------------------------------------------- occurrence rows

test("an occurrence of a worker run is a job of that worker with its args, schedule id, instant and identity", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({
    id: "build",
    every: "1m",
    run: { worker: "reports.build", args: { region: "eu" } },
    timeout: "5m",
    backoff: { fixed: "30s" },
  });
  await firstStart(t.store, t.clock.now(), [s]);
  t.clock.advance(MINUTE);
  await planSchedules(t.store, t.clock.now(), [s]);
  const [job] = await jobsOf(t.store, "build");
  assert.ok(job);
  assert.equal(job.worker, "reports.build");
  assert.deepEqual(job.args, { region: "eu" });
  assert.equal(job.scheduleId, "build");
  assert.equal(job.scheduledFor, T + MINUTE);
  assert.equal(job.scheduledAt, T + MINUTE);
  assert.equal(job.occurrence, `build@${iso(T + MINUTE)}`);
  assert.deepEqual(job.meta, {
    schedule: "build",
    timeoutMs: 5 * MINUTE,
    backoff: { kind: "fixed", delayMs: 30_000 },
    definition: definitionHash(s),
  });
});

test("an occurrence of a command run is a jobs.command job with the run spec as args", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({
    id: "df",
    every: "1m",
    run: { command: ["df", "-h"], env: { LC_ALL: "C" } },
  });
  await firstStart(t.store, t.clock.now(), [s]);
  t.clock.advance(MINUTE);
  await planSchedules(t.store, t.clock.now(), [s]);
  const [job] = await jobsOf(t.store, "df");
  assert.ok(job);
  assert.equal(job.worker, "jobs.command");
  assert.deepEqual(job.args, s.run);
  assert.deepEqual(job.args, {
    kind: "command",
    argv: ["df", "-h"],
    shell: false,
    env: { LC_ALL: "C" },
  });
});

test("a jittered occurrence is scheduled after scheduled_for; its identity uses the pre-jitter instant", async (backend) => {
  await using t = await backendJobs(backend);
  const s = schedule({ id: "jit", every: "1m", jitter: "50s" });
  await firstStart(t.store, t.clock.now(), [s]);
  t.clock.advance(MINUTE);
  const report = await planSchedules(t.store, t.clock.now(), [s]);
  assert.equal(report.planned, 1);
  const [job] = await jobsOf(t.store, "jit");
  assert.ok(job);
  assert.equal(job.scheduledFor, T + MINUTE);
  assert.ok(job.scheduledAt > T + MINUTE && job.scheduledAt < T + MINUTE + 50_000);
  assert.equal(job.occurrence, `jit@${iso(T + MINUTE)}`);
  assert.equal(job.state, "scheduled");
  assert.equal(report.scheduled, 1);
  assert.deepEqual(report.queues, []);
});

// -------------------------------------------------------- run bookkeeping

test("last_started_at and last_completed_at are recorded as occurrences run", async (backend) => {
  const clockRef: { advance(ms: number): void }[] = [];
  const tick = defineWorker({
    name: "tick",
    perform: () => clockRef[0]!.advance(5_000), // the run takes 5 s of fake time
  });
  await using t = await backendJobs(backend, [tick]);
  clockRef.push(t.clock);
  const s = schedule({ id: "ticker", every: "1m", run: { worker: "tick" } });
  await firstStart(t.store, t.clock.now(), [s]);
  let r = await row(t.store, "ticker");
  assert.equal(r.lastStartedAt, null);
  assert.equal(r.lastCompletedAt, null);

  t.clock.advance(MINUTE);
  await planSchedules(t.store, t.clock.now(), [s]);
  const started = t.clock.now();
  const drained = await drainQueue(t.jobs, "default");
  assert.equal(drained.completed, 1);
  r = await row(t.store, "ticker");
  assert.equal(r.lastStartedAt, started);
  assert.equal(r.lastCompletedAt, started + 5_000);

  t.clock.set(T + 2 * MINUTE);
  await planSchedules(t.store, t.clock.now(), [s]);
  await drainQueue(t.jobs, "default");
  r = await row(t.store, "ticker");
  assert.equal(r.lastStartedAt, T + 2 * MINUTE);
  assert.equal(r.lastCompletedAt, T + 2 * MINUTE + 5_000);
});

// ----------------------------------------------------------------- runtime

test("the runtime plans and runs an occurrence when the fake clock reaches it, and plans a reloaded schedule", async (backend) => {
  const ran: { id: string | null; args: unknown }[] = [];
  const tick = defineWorker({
    name: "tick",
    perform: (args, ctx) => void ran.push({ id: ctx.job.occurrence, args }),
  });
  await using t = await backendJobs(backend, [tick]);
  const a = schedule({ id: "a", every: "1m", run: { worker: "tick", args: { from: "a" } } });
  const b = schedule({ id: "b", every: "2m", run: { worker: "tick", args: { from: "b" } } });
  let current: Schedule[] = [a];
  const runtime = await t.jobs.start({
    queues: { default: 2 },
    node: "n1",
    schedules: () => current,
  });

  await waitUntil("a's first start", async () => (await row(t.store, "a")).lastPlannedFor !== null);
  assert.equal((await row(t.store, "a")).lastPlannedFor, T);

  /** Sets the clock to `instant`, then advances by planMs until `done` holds. */
  const reach = async (instant: number, what: string, done: () => Promise<boolean>) => {
    t.clock.set(instant);
    await waitUntil(what, async () => {
      if (await done()) return true;
      t.clock.advance(1000); // planMs: the planner wakes at the latest after one sleep
      return false;
    }, { intervalMs: 20 });
  };

  const aFirst = `a@${iso(T + MINUTE)}`;
  await reach(T + MINUTE, "a's occurrence ran", async () => {
    const jobs = await jobsOf(t.store, "a");
    return jobs.some((j) => j.occurrence === aFirst && j.state === "completed");
  });
  const [aJob] = await jobsOf(t.store, "a");
  assert.equal(aJob!.scheduledAt, T + MINUTE);
  assert.deepEqual(ran[0], { id: aFirst, args: { from: "a" } });

  current = [a, b];
  await runtime.reloadSchedules();
  await waitUntil("b's first start", async () => {
    const rows = await t.store.schedulesList({ ids: ["b"] });
    return rows[0]?.lastPlannedFor != null;
  });
  const bFirst = T + 2 * MINUTE;
  await reach(bFirst, "b's occurrence ran", async () => {
    const jobs = await jobsOf(t.store, "b");
    return jobs.some((j) => j.occurrence === `b@${iso(bFirst)}` && j.state === "completed");
  });
  assert.ok(
    ran.some((r) => r.id === `b@${iso(bFirst)}` && (r.args as { from: string }).from === "b"),
  );
  assert.ok(ran.some((r) => r.id === `a@${iso(bFirst)}`));
});
