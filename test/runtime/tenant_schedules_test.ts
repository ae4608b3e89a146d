/**
 * Issue 28's test of tenants on the work itself: two tenants' per-minute
 * schedules (one `tenants: [acme, globex]` entry) run by the runtime on a
 * FakeClock for 3 minutes give each tenant its occurrences once each, in
 * rows and leases of its own; disabling one tenant's schedule through the
 * admin door leaves the other's running. On every backend.
 */

import assert from "node:assert/strict";
import { schedulesView, setScheduleEnabled } from "../../src/admin/schedules.ts";
import { parseSchedules } from "../../src/config/load.ts";
import type { Job } from "../../src/kernel/types.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { definitionHash } from "../../src/runtime/planner.ts";
import { waitUntil } from "../../src/testing.ts";
import { backendJobs, BACKENDS } from "../support/backends.ts";

const MINUTE = 60_000;
const TENANTS = ["acme", "globex"] as const;

const iso = (instant: number) => new Date(instant).toISOString();

const CONFIG = (() => {
  const result = parseSchedules(
    [
      "version: 1",
      "schedules:",
      "  - id: sched",
      "    every: 1m",
      "    tenants: [acme, globex]",
      "    run: { worker: tick }",
    ].join("\n"),
    "schedules.yaml",
  );
  if (!result.ok) throw new Error(result.errors.map((e) => e.message).join("\n"));
  return result.config;
})();

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] two tenants' per-minute schedules for 3 minutes: each tenant's occurrences once each, no shared rows or leases; disabling one tenant's leaves the other's running`, async () => {
    /** Each run: the job and the occurrence the worker saw, and its attempt's fence (its lease). */
    const ran: { occurrence: string | null; id: number; fence: number; tenant: string | null }[] =
      [];
    const tick = defineWorker({
      name: "tick",
      perform: (_args, ctx) =>
        void ran.push({
          occurrence: ctx.job.occurrence,
          id: ctx.job.id,
          fence: ctx.fence,
          tenant: ctx.job.tenant,
        }),
    });
    await using t = await backendJobs(backend, [tick]);
    const T = t.clock.now();
    const schedules = CONFIG.schedules;
    assert.deepEqual(schedules.map((s) => s.id), ["sched:acme", "sched:globex"]);
    await t.jobs.start({ queues: { default: 4 }, node: "n1", schedules: () => schedules });

    await waitUntil("each tenant's first start", async () => {
      const rows = await t.store.schedulesList({});
      return rows.length === 2 && rows.every((r) => r.lastPlannedFor !== null);
    });

    const occurrencesOf = (tenant: string, minutes: number[]) =>
      minutes.map((m) => `sched:${tenant}@${iso(T + m * MINUTE)}`);
    const all = async (): Promise<Job[]> =>
      (await t.store.jobsList({ limit: 1000 })).sort((a, b) => a.id - b.id);
    /**
     * Sets the clock to minute `m`, then advances by the planner's sleep
     * until `done` holds, never into the next minute (whose occurrences
     * would then be planned early for this test's counts).
     */
    const reach = async (m: number, done: (jobs: Job[]) => boolean) => {
      t.clock.set(T + m * MINUTE);
      await waitUntil(`minute ${m}`, async () => {
        if (done(await all())) return true;
        if (t.clock.now() + 1000 < T + (m + 1) * MINUTE - 1000) t.clock.advance(1000);
        return false;
      }, { intervalMs: 20 });
    };
    const completed = (jobs: Job[], occurrences: string[]) =>
      occurrences.every((o) => jobs.some((j) => j.occurrence === o && j.state === "completed"));

    for (const m of [1, 2, 3]) {
      await reach(m, (jobs) => completed(jobs, TENANTS.flatMap((x) => occurrencesOf(x, [m]))));
    }
    // The clock went past minute 3 by at most a few planner sleeps: nothing of minute 4 yet.
    assert.ok(t.clock.now() < T + 4 * MINUTE);

    const jobs = await all();
    for (const tenant of TENANTS) {
      const own = jobs.filter((j) => j.scheduleId === `sched:${tenant}`);
      assert.deepEqual(own.map((j) => j.occurrence), occurrencesOf(tenant, [1, 2, 3]));
      assert.deepEqual(own.map((j) => j.tenant), [tenant, tenant, tenant]);
      assert.deepEqual(own.map((j) => j.scheduledFor), [1, 2, 3].map((m) => T + m * MINUTE));
    }
    assert.equal(jobs.length, 6, "no other job: every row is one tenant's occurrence");
    assert.equal(new Set(jobs.map((j) => j.occurrence)).size, 6);
    // Each occurrence ran once, as its own job (its own row, its own lease), for its tenant.
    assert.equal(ran.length, 6);
    assert.equal(new Set(ran.map((r) => r.id)).size, 6);
    for (const run of ran) {
      const job = jobs.find((j) => j.id === run.id)!;
      assert.equal(run.occurrence, job.occurrence);
      assert.equal(run.fence, 1);
      assert.ok(run.occurrence!.startsWith(`sched:${job.tenant}@`));
      // The lease carries the tenant: the worker is told whose work it does.
      assert.equal(run.tenant, job.tenant);
    }
    for (const job of jobs) {
      const attempts = await t.store.attemptsList({ jobId: job.id });
      assert.deepEqual(attempts.map((a) => [a.kind, a.node, a.outcome]), [
        ["run", "n1", "completed"],
      ]);
    }
    const rows = await t.store.schedulesList({});
    assert.deepEqual(rows.map((r) => [r.id, r.tenant, r.enabled, r.misfires]), [
      ["sched:acme", "acme", true, 0],
      ["sched:globex", "globex", true, 0],
    ]);
    for (const row of rows) assert.ok(row.lastPlannedFor! >= T + 3 * MINUTE);

    // acme's principal disables acme's schedule through the admin door; globex's stays.
    const acme = schedules[0]!;
    const who = { actor: "ops@acme", reason: "acme pauses its reports", now: t.clock.now() };
    const declared = { hash: definitionHash(acme), tenant: acme.tenant ?? null };
    await assert.rejects(
      setScheduleEnabled(t.store, "sched:globex", false, who, null, "acme"),
      /no schedule "sched:globex"/,
    );
    assert.deepEqual(
      await setScheduleEnabled(t.store, "sched:acme", false, who, declared, "acme"),
      { id: "sched:acme", enabled: false, was: true },
    );
    const views = async (tenant: string) =>
      (await schedulesView(t.store, CONFIG, t.clock.now(), tenant)).map((s) => [s.id, s.enabled]);
    assert.deepEqual(await views("acme"), [["sched:acme", false]]);
    assert.deepEqual(await views("globex"), [["sched:globex", true]]);

    for (const m of [4, 5]) {
      await reach(m, (jobs) => completed(jobs, occurrencesOf("globex", [m])));
    }
    const after = await all();
    assert.deepEqual(
      after.filter((j) => j.scheduleId === "sched:globex").map((j) => j.occurrence),
      occurrencesOf("globex", [1, 2, 3, 4, 5]),
    );
    assert.deepEqual(
      after.filter((j) => j.scheduleId === "sched:acme").map((j) => j.occurrence),
      occurrencesOf("acme", [1, 2, 3]),
    );
    assert.equal(after.length, 8);
    assert.ok(after.every((j) => j.occurrence!.startsWith(`sched:${j.tenant}@`)));
    const [acmeRow] = await t.store.schedulesList({ ids: ["sched:acme"], tenant: "acme" });
    assert.equal(acmeRow?.enabled, false);
    assert.equal(acmeRow?.disabledBy, "ops@acme");
  });
}
