/**
 * jobsInsert(), on every backend: results in input order, each job
 * `scheduled` when due later; and one insert of many jobs, as a bulk enqueue
 * makes them: runs of jobs alike but for their args, runs that differ in
 * queue, tenant, meta, tags, priority, attempts, schedule and due time, keyed
 * jobs and a duplicate in the middle, across more than one statement's worth
 * of rows. Every result is in input order with the id of its own row, and
 * every row holds what its job said.
 */

import assert from "node:assert/strict";
import type { NewJob } from "../../../src/kernel/types.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { newJob, T0 } from "./helpers.ts";

const NOW = Date.UTC(2026, 11, 3, 8);

/**
 * 120 alike, a keyed job, 30 all different, its duplicate, 99 alike due
 * later, 6 differing only in when they are due, an occurrence.
 */
function mixed(): NewJob[] {
  const jobs: NewJob[] = [];
  for (let i = 0; i < 120; i++) jobs.push(newJob({ scheduledAt: NOW, args: `{"i":${i}}` }));
  jobs.push(
    newJob({ scheduledAt: NOW, args: `{"keyed":1}`, uniqueKey: "k1", uniqueStates: "incomplete" }),
  );
  for (let i = 0; i < 30; i++) {
    jobs.push(newJob({
      scheduledAt: NOW - i,
      queue: `q${i % 3}`,
      worker: i % 2 ? "a" : "b",
      args: `{"d":${i}}`,
      meta: `{"m":${i}}`,
      tags: `["t${i}"]`,
      tenant: i % 4 ? `tenant-${i}` : null,
      priority: i % 10,
      maxAttempts: 1 + i,
      scheduleId: i % 5 ? null : "nightly",
      scheduledFor: i % 5 ? null : NOW - 1000 * i,
    }));
  }
  jobs.push(
    newJob({ scheduledAt: NOW, args: `{"keyed":2}`, uniqueKey: "k1", uniqueStates: "incomplete" }),
  );
  for (let i = 0; i < 99; i++) {
    jobs.push(newJob({ scheduledAt: NOW + 60_000, args: `{"later":${i}}`, tags: `["later"]` }));
  }
  // Alike but for when they are due: not one statement's worth of alike rows.
  for (let i = 0; i < 6; i++) {
    jobs.push(newJob({ scheduledAt: NOW + (i % 2) * 60_000, args: `{"when":${i}}` }));
  }
  jobs.push(newJob({ scheduledAt: NOW, args: `{"o":1}`, occurrence: "nightly@1" }));
  return jobs;
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsInsert() returns ids in input order, scheduled when due later", async ({ store }) => {
    const results = await store.jobsInsert({
      now: T0,
      jobs: [
        newJob({ args: `{"n":0}` }),
        newJob({ args: `{"n":1}`, scheduledAt: T0 + 60_000 }),
        newJob({ args: `{"n":2}`, queue: "mail" }),
        newJob({ args: `{"n":3}`, scheduledAt: T0 - 1 }),
      ],
    });
    assert.equal(results.length, 4);
    assert.deepEqual(results.map((r) => r.state), [
      "available",
      "scheduled",
      "available",
      "available",
    ]);
    assert.deepEqual(results.map((r) => r.queue), ["default", "default", "mail", "default"]);
    assert.ok(results.every((r) => !r.duplicate));
    assert.equal(new Set(results.map((r) => r.id)).size, 4);
    for (const [n, r] of results.entries()) {
      assert.deepEqual((await store.jobGet({ id: r.id }))?.args, { n });
    }
  });
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, NOW);

  test("a mixed batch of 258 jobs: results in order, each row holding its own job", async ({ store }) => {
    const jobs = mixed();
    const results = await store.jobsInsert({ jobs, now: NOW });
    assert.equal(results.length, jobs.length);
    const keyed = results[120]!;
    const duplicate = results[151]!;
    assert.deepEqual([duplicate.duplicate, duplicate.id], [true, keyed.id]);
    const fresh = results.filter((r) => !r.duplicate);
    assert.equal(fresh.length, jobs.length - 1);
    for (let i = 1; i < fresh.length; i++) {
      assert.ok(fresh[i]!.id > fresh[i - 1]!.id, `ids rise in input order (at ${i})`);
    }
    for (const [i, job] of jobs.entries()) {
      if (i === 151) continue;
      const result = results[i]!;
      const row = await store.jobGet({ id: result.id });
      assert.ok(row, `job ${i} has its row`);
      const want = job.scheduledAt > NOW ? "scheduled" : "available";
      assert.deepEqual(
        {
          queue: row.queue,
          worker: row.worker,
          args: row.args,
          meta: row.meta,
          tags: row.tags,
          tenant: row.tenant,
          priority: row.priority,
          maxAttempts: row.maxAttempts,
          scheduledAt: row.scheduledAt,
          scheduleId: row.scheduleId,
          scheduledFor: row.scheduledFor,
          state: row.state,
        },
        {
          queue: job.queue,
          worker: job.worker,
          args: JSON.parse(job.args),
          meta: JSON.parse(job.meta),
          tags: JSON.parse(job.tags),
          tenant: job.tenant,
          priority: job.priority,
          maxAttempts: job.maxAttempts,
          scheduledAt: job.scheduledAt,
          scheduleId: job.scheduleId,
          scheduledFor: job.scheduledFor,
          state: want,
        },
        `job ${i}`,
      );
      assert.deepEqual([result.queue, result.state], [job.queue, want], `result ${i}`);
    }
    // The counts the store keeps took every row in.
    const counted = await store.jobsCount({});
    const total = counted.reduce((n, c) => n + c.count, 0);
    assert.equal(total, jobs.length - 1);
    assert.equal(
      counted.filter((c) => c.state === "scheduled").reduce((n, c) => n + c.count, 0),
      102,
    );
  });
}
