/**
 * The schedule methods of the `Store` interface (schedulesSync,
 * schedulesList, schedulePlan, scheduleSetEnabled, the run bookkeeping of
 * jobsClaim/jobsRecord, and schedulesOutcomes), run for every backend.
 *
 * The tests moved here from test/store/schedules_store_test.ts keep their
 * names, `[<backend>] <name>`, beside this suite's `<backend>: <name>`.
 */

import assert from "node:assert/strict";
import type { NewJob, PlanContext, PlanDecision } from "../../../src/kernel/types.ts";
import { BACKENDS, type Harness, harnessTest } from "../../support/backends.ts";
import { claimOne, completed, insert, newJob, retryable, T0 } from "./helpers.ts";

const MINUTE = 60_000;

function occurrenceJob(id: string, at: number, fields: Partial<NewJob> = {}): NewJob {
  return newJob({
    scheduledAt: at,
    occurrence: `${id}@${new Date(at).toISOString()}`,
    scheduleId: id,
    scheduledFor: at,
    ...fields,
  });
}

function decision(fields: Partial<PlanDecision> = {}): PlanDecision {
  return {
    jobs: [],
    cancelled: [],
    misfires: 0,
    lastMisfireFor: null,
    plannedFor: null,
    ...fields,
  };
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("schedulesOutcomes() gives each schedule's last outcome and its discarded occurrences since the last completed one", async ({ store }) => {
    await store.schedulesSync({
      schedules: ["nightly", "quiet"].map((id) => ({ id, hash: "h", tenant: null })),
      now: T0,
    });
    const occurrence = (i: number) =>
      newJob({
        scheduleId: "nightly",
        occurrence: `nightly@${new Date(T0 + i * 1000).toISOString()}`,
        scheduledFor: T0 + i * 1000,
        maxAttempts: 1,
      });
    await insert(store, [0, 1, 2, 3, 4].map(occurrence));
    let now = T0;
    const end = async (outcome: "completed" | "discarded" | "cancelled", queue = "default") => {
      const job = await claimOne(store, { queue, now });
      now += 1000;
      await store.jobsRecord({
        node: "node-a",
        now,
        results: [
          outcome === "completed"
            ? completed(job)
            : { ...retryable(job, now), outcome, error: "boom" },
        ],
      });
    };
    assert.deepEqual(await store.schedulesOutcomes({}), []);
    await end("completed");
    assert.deepEqual(await store.schedulesOutcomes({}), [
      { scheduleId: "nightly", lastOutcome: "completed", lastOutcomeAt: now, failures: 0 },
    ]);
    await end("discarded");
    await end("cancelled"); // neither a failure nor a success: the run goes on
    await end("discarded");
    const failed = now;
    // A fan-out item of the schedule is not an occurrence: it counts for nothing.
    await insert(store, [newJob({ queue: "fan", scheduleId: "nightly", maxAttempts: 1 })], now);
    await end("discarded", "fan");
    assert.deepEqual(await store.schedulesOutcomes({}), [
      { scheduleId: "nightly", lastOutcome: "discarded", lastOutcomeAt: failed, failures: 2 },
    ]);
    assert.deepEqual(await store.schedulesOutcomes({ ids: ["quiet"] }), []);
    await end("completed");
    assert.deepEqual(await store.schedulesOutcomes({ ids: ["nightly", "quiet"] }), [
      { scheduleId: "nightly", lastOutcome: "completed", lastOutcomeAt: now, failures: 0 },
    ]);
  });
}

for (const backend of BACKENDS) {
  const test = (name: string, body: (h: Harness) => Promise<void>) =>
    Deno.test(`[${backend.name}] ${name}`, async () => {
      const h = await backend.open(T0);
      try {
        await body(h);
      } finally {
        await h.close();
      }
    });

  test("schedulesSync() inserts new ids enabled, with no recovery point and the given hash", async ({ store }) => {
    await store.schedulesSync({
      schedules: [{ id: "a", hash: "h1", tenant: null }, { id: "b", hash: "h2", tenant: "acme" }],
      now: T0,
    });
    const rows = await store.schedulesList({});
    assert.deepEqual(rows, [
      {
        id: "a",
        tenant: null,
        enabled: true,
        disabledReason: null,
        disabledBy: null,
        disabledAt: null,
        definitionHash: "h1",
        definition: null,
        lastPlannedFor: null,
        lastStartedAt: null,
        lastCompletedAt: null,
        misfires: 0,
        lastMisfireFor: null,
        createdAt: T0,
        updatedAt: T0,
      },
      {
        id: "b",
        tenant: "acme",
        enabled: true,
        disabledReason: null,
        disabledBy: null,
        disabledAt: null,
        definitionHash: "h2",
        definition: null,
        lastPlannedFor: null,
        lastStartedAt: null,
        lastCompletedAt: null,
        misfires: 0,
        lastMisfireFor: null,
        createdAt: T0,
        updatedAt: T0,
      },
    ]);
  });

  test("schedulesSync() keeps each definition given, and a stored one only while its hash stays", async ({ store }) => {
    const def = (cron: string) =>
      JSON.stringify({ id: "a", rhythm: { kind: "cron", expression: cron } });
    await store.schedulesSync({
      schedules: [{ id: "a", hash: "h1", tenant: null, definition: def("0 3 * * *") }],
      now: T0,
    });
    const definitionOf = async () => (await store.schedulesList({ ids: ["a"] }))[0]!.definition;
    assert.equal(await definitionOf(), def("0 3 * * *"));
    // A sync without a definition (an operator's action) keeps the stored one for the same hash.
    await store.schedulesSync({ schedules: [{ id: "a", hash: "h1", tenant: null }], now: T0 + 1 });
    assert.equal(await definitionOf(), def("0 3 * * *"));
    await store.schedulesSync({
      schedules: [{ id: "a", hash: "h2", tenant: null, definition: def("0 4 * * *") }],
      now: T0 + 2,
    });
    assert.equal(await definitionOf(), def("0 4 * * *"));
    // Another hash without a definition: the stored one no longer describes it.
    await store.schedulesSync({ schedules: [{ id: "a", hash: "h3", tenant: null }], now: T0 + 3 });
    assert.equal(await definitionOf(), null);
  });

  test("schedulesSync({ complete }) clears the definitions of the ids not given, keeping their rows", async ({ store }) => {
    const def = (id: string) => JSON.stringify({ id, rhythm: { kind: "manual" } });
    await store.schedulesSync({
      schedules: ["a", "b"].map((id) => ({ id, hash: id, tenant: null, definition: def(id) })),
      complete: true,
      now: T0,
    });
    await store.schedulesSync({
      schedules: [{ id: "a", hash: "a", tenant: null, definition: def("a") }],
      complete: true,
      now: T0 + 1,
    });
    const rows = await store.schedulesList({});
    assert.deepEqual(rows.map((r) => [r.id, r.definition]), [["a", def("a")], ["b", null]]);
    await store.schedulesSync({ schedules: [], complete: true, now: T0 + 2 });
    assert.deepEqual((await store.schedulesList({})).map((r) => r.definition), [null, null]);
  });

  test("schedulesSync() updates definition_hash, keeps state, and never deletes rows", async ({ store }) => {
    await store.schedulesSync({
      schedules: [{ id: "a", hash: "h1", tenant: null }, { id: "b", hash: "h2", tenant: null }],
      now: T0,
    });
    await store.schedulePlan({ id: "a", now: T0, plan: () => decision({ plannedFor: T0 }) });
    await store.scheduleSetEnabled({ id: "a", enabled: false, reason: "r", actor: "x", now: T0 });

    await store.schedulesSync({ schedules: [{ id: "a", hash: "h1b", tenant: null }], now: T0 + 5 });
    const [a, b] = await store.schedulesList({});
    assert.equal(a!.definitionHash, "h1b");
    assert.equal(a!.updatedAt, T0 + 5);
    assert.equal(a!.createdAt, T0);
    assert.equal(a!.lastPlannedFor, T0);
    assert.equal(a!.enabled, false);
    assert.equal(b!.id, "b");
    assert.equal(b!.definitionHash, "h2");

    // The same hash again changes nothing.
    await store.schedulesSync({ schedules: [{ id: "a", hash: "h1b", tenant: null }], now: T0 + 9 });
    assert.equal((await store.schedulesList({ ids: ["a"] }))[0]!.updatedAt, T0 + 5);
    await store.schedulesSync({ schedules: [], now: T0 + 10 });
    assert.equal((await store.schedulesList({})).length, 2);
  });

  test("schedulesList() filters by ids, sorted by id", async ({ store }) => {
    await store.schedulesSync({
      schedules: ["c", "a", "b"].map((id) => ({ id, hash: id, tenant: null })),
      now: T0,
    });
    assert.deepEqual((await store.schedulesList({})).map((r) => r.id), ["a", "b", "c"]);
    assert.deepEqual((await store.schedulesList({ ids: ["c", "a"] })).map((r) => r.id), ["a", "c"]);
    assert.deepEqual(await store.schedulesList({ ids: ["zzz"] }), []);
    assert.deepEqual(await store.schedulesList({ ids: [] }), []);
  });

  test("schedulesList() and schedulesOutcomes() with a tenant give that tenant's schedules only", async ({ store }) => {
    const tenants = { "nightly:acme": "acme", "nightly:globex": "globex", "shared": null };
    await store.schedulesSync({
      schedules: Object.entries(tenants).map(([id, tenant]) => ({ id, hash: "h", tenant })),
      now: T0,
    });
    const ids = async (params: { ids?: string[]; tenant?: string }) =>
      (await store.schedulesList(params)).map((r) => r.id);
    assert.deepEqual(await ids({ tenant: "acme" }), ["nightly:acme"]);
    assert.deepEqual(await ids({ tenant: "globex" }), ["nightly:globex"]);
    assert.deepEqual(await ids({ tenant: "initech" }), []);
    assert.deepEqual(await ids({ ids: ["nightly:globex", "shared"], tenant: "acme" }), []);
    assert.deepEqual(await ids({ ids: ["nightly:acme", "shared"], tenant: "acme" }), [
      "nightly:acme",
    ]);
    assert.deepEqual(await ids({}), ["nightly:acme", "nightly:globex", "shared"]);

    // One completed occurrence each: the outcomes of the other tenant's are not read.
    await insert(store, [
      occurrenceJob("nightly:acme", T0, { tenant: "acme" }),
      occurrenceJob("nightly:globex", T0, { tenant: "globex" }),
      occurrenceJob("shared", T0),
    ]);
    for (let i = 0; i < 3; i++) {
      const job = await claimOne(store, { now: T0 });
      await store.jobsRecord({ node: "node-a", now: T0 + 1, results: [completed(job)] });
    }
    const outcomes = async (params: { ids?: string[]; tenant?: string }) =>
      (await store.schedulesOutcomes(params)).map((o) => o.scheduleId);
    assert.deepEqual(await outcomes({ tenant: "globex" }), ["nightly:globex"]);
    assert.deepEqual(await outcomes({ ids: ["nightly:acme"], tenant: "globex" }), []);
    assert.deepEqual(await outcomes({ tenant: "initech" }), []);
    assert.deepEqual(await outcomes({}), ["nightly:acme", "nightly:globex", "shared"]);
  });

  test("scheduleSetEnabled() records who and why on disable, clears them on enable, false for an unknown id", async ({ store }) => {
    await store.schedulesSync({ schedules: [{ id: "a", hash: "h", tenant: null }], now: T0 });
    assert.equal(
      await store.scheduleSetEnabled({
        id: "a",
        enabled: false,
        reason: "maintenance",
        actor: "ops",
        now: T0 + 1,
      }),
      true,
    );
    let [a] = await store.schedulesList({ ids: ["a"] });
    assert.equal(a!.enabled, false);
    assert.equal(a!.disabledReason, "maintenance");
    assert.equal(a!.disabledBy, "ops");
    assert.equal(a!.disabledAt, T0 + 1);
    await store.scheduleSetEnabled({
      id: "a",
      enabled: true,
      reason: null,
      actor: "ops",
      now: T0 + 2,
    });
    [a] = await store.schedulesList({ ids: ["a"] });
    assert.equal(a!.enabled, true);
    assert.equal(a!.disabledReason, null);
    assert.equal(a!.disabledBy, null);
    assert.equal(a!.disabledAt, null);
    assert.equal(
      await store.scheduleSetEnabled({
        id: "nope",
        enabled: false,
        reason: null,
        actor: null,
        now: T0,
      }),
      false,
    );
  });

  test("schedulePlan() for an unknown id does not call plan and returns no decision", async ({ store }) => {
    let called = false;
    const result = await store.schedulePlan({
      id: "nope",
      now: T0,
      plan: () => {
        called = true;
        return decision();
      },
    });
    assert.equal(called, false);
    assert.deepEqual(result, { inserted: [], cancelled: 0, decision: null });
  });

  test("schedulePlan() passes enabled, recovery point and running/waiting counts, and writes the decision", async ({ store }) => {
    await store.schedulesSync({ schedules: [{ id: "s", hash: "h", tenant: null }], now: T0 });
    const seen: PlanContext[] = [];
    const first = await store.schedulePlan({
      id: "s",
      now: T0 + 3 * MINUTE,
      plan: (ctx) => {
        seen.push(ctx);
        return decision({
          jobs: [occurrenceJob("s", T0 + 2 * MINUTE), occurrenceJob("s", T0 + 5 * MINUTE)],
          cancelled: [{ job: occurrenceJob("s", T0 + 3 * MINUTE), reason: "overlap" }],
          misfires: 7,
          lastMisfireFor: T0 + MINUTE,
          plannedFor: T0 + 3 * MINUTE,
        });
      },
    });
    assert.deepEqual([...seen], [{
      enabled: true,
      lastPlannedFor: null,
      executing: 0,
      waiting: 0,
    }]);
    assert.deepEqual(first.inserted.map((i) => [i.duplicate, i.state]), [
      [false, "available"],
      [false, "scheduled"],
    ]);
    assert.equal(first.cancelled, 1);
    let [row] = await store.schedulesList({ ids: ["s"] });
    assert.equal(row!.lastPlannedFor, T0 + 3 * MINUTE);
    assert.equal(row!.misfires, 7);
    assert.equal(row!.lastMisfireFor, T0 + MINUTE);
    const cancelled = (await store.jobsList({ state: "cancelled" }))[0]!;
    assert.equal(cancelled.occurrence, `s@${new Date(T0 + 3 * MINUTE).toISOString()}`);
    assert.equal(cancelled.errors.at(-1)?.error, "overlap");

    // Claim one: one executing, one waiting (scheduled); a null recovery point keeps the old one.
    await store.jobsClaim({
      queue: "default",
      node: "n1",
      limit: 1,
      now: T0 + 3 * MINUTE,
      leaseMs: MINUTE,
    });
    await store.scheduleSetEnabled({ id: "s", enabled: false, reason: null, actor: null, now: T0 });
    const second = await store.schedulePlan({
      id: "s",
      now: T0 + 4 * MINUTE,
      plan: (ctx) => {
        seen.push(ctx);
        return decision({ jobs: [occurrenceJob("s", T0 + 2 * MINUTE)], misfires: 2 });
      },
    });
    assert.deepEqual(seen[1], {
      enabled: false,
      lastPlannedFor: T0 + 3 * MINUTE,
      executing: 1,
      waiting: 1,
    });
    assert.deepEqual(second.inserted.map((i) => i.duplicate), [true]);
    [row] = await store.schedulesList({ ids: ["s"] });
    assert.equal(row!.lastPlannedFor, T0 + 3 * MINUTE);
    assert.equal(row!.misfires, 9);
    assert.equal(row!.lastMisfireFor, T0 + MINUTE);
    assert.equal((await store.jobsList({})).length, 3);
  });

  test("schedulePlan() on two connections at once acts on one gap once", async ({ store, connect }) => {
    const other = await connect();
    await store.schedulesSync({ schedules: [{ id: "s", hash: "h", tenant: null }], now: T0 });
    await store.schedulePlan({ id: "s", now: T0, plan: () => decision({ plannedFor: T0 }) });
    const now = T0 + 10 * MINUTE;
    // Like decide(): plans the gap after the recovery point it reads.
    const plan = (ctx: PlanContext) => {
      if (ctx.lastPlannedFor! >= now) return decision();
      const jobs = [];
      for (let at = ctx.lastPlannedFor! + MINUTE; at <= now; at += MINUTE) {
        jobs.push(occurrenceJob("s", at));
      }
      return decision({ jobs: jobs.slice(-3), misfires: jobs.length - 3, plannedFor: now });
    };
    const results = await Promise.all([
      store.schedulePlan({ id: "s", now, plan }),
      other.schedulePlan({ id: "s", now, plan }),
      store.schedulePlan({ id: "s", now, plan }),
      other.schedulePlan({ id: "s", now, plan }),
    ]);
    const fresh = results.flatMap((r) => r.inserted).filter((i) => !i.duplicate);
    assert.equal(fresh.length, 3);
    assert.equal(new Set(fresh.map((i) => i.id)).size, 3);
    const jobs = await store.jobsList({});
    assert.equal(jobs.length, 3);
    assert.equal(new Set(jobs.map((j) => j.occurrence)).size, 3);
    const [row] = await other.schedulesList({ ids: ["s"] });
    assert.equal(row!.misfires, 7);
    assert.equal(row!.lastPlannedFor, now);
  });

  test("claiming an occurrence sets last_started_at; completing it sets last_completed_at", async ({ store }) => {
    await store.schedulesSync({ schedules: [{ id: "s", hash: "h", tenant: null }], now: T0 });
    await store.schedulePlan({
      id: "s",
      now: T0,
      plan: () => decision({ jobs: [occurrenceJob("s", T0)], plannedFor: T0 }),
    });
    const { jobs: [job] } = await store.jobsClaim({
      queue: "default",
      node: "n1",
      limit: 1,
      now: T0 + 100,
      leaseMs: MINUTE,
    });
    assert.ok(job);
    let [row] = await store.schedulesList({ ids: ["s"] });
    assert.equal(row!.lastStartedAt, T0 + 100);
    assert.equal(row!.lastCompletedAt, null);
    await store.jobsRecord({
      node: "n1",
      now: T0 + 900,
      results: [{
        id: job.id,
        fence: job.fence,
        attempt: job.attempt,
        startedAt: T0 + 100,
        outcome: "completed",
        occurrence: job.occurrence,
      }],
    });
    [row] = await store.schedulesList({ ids: ["s"] });
    assert.equal(row!.lastStartedAt, T0 + 100);
    assert.equal(row!.lastCompletedAt, T0 + 900);
  });
}
