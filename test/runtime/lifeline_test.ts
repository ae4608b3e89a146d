/**
 * The lifeline as an operator reads it (issue 26.9): every job it takes
 * from a node whose lease ran out is logged as `job.rescued`, naming the
 * job, the node that had it and what happens next, on every backend.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { waitUntil } from "../../src/testing.ts";
import type { Logger } from "../../src/kernel/logger.ts";
import { rescueOrphans, returnExpiredClaims } from "../../src/runtime/lifeline.ts";
import { BACKENDS, newJob } from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const LEASE_MS = 30_000;

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] rescueOrphans() says which jobs it took from which node`, async () => {
    const h = await backend.open(T0);
    try {
      const [again, last] = (await h.store.jobsInsert({
        now: T0,
        jobs: [
          newJob({ queue: "mail", maxAttempts: 3, scheduledAt: T0 }),
          newJob({ queue: "mail", maxAttempts: 1, scheduledAt: T0 }),
        ],
      })).map((r) => r.id);
      await h.store.jobsClaim({
        queue: "mail",
        node: "dead:1",
        limit: 2,
        now: T0,
        leaseMs: LEASE_MS,
      });
      const report = await rescueOrphans(h.store, T0 + LEASE_MS + 1);
      assert.deepEqual(report.jobs.sort((a, b) => a.id - b.id), [
        {
          id: again,
          queue: "mail",
          node: "dead:1",
          attempt: 1,
          maxAttempts: 3,
          state: "available",
        },
        { id: last, queue: "mail", node: "dead:1", attempt: 1, maxAttempts: 1, state: "discarded" },
      ]);
    } finally {
      await h.close();
    }
  });

  Deno.test(`[${backend.name}] a runtime logs job.rescued with the job, the dead node and the next attempt`, async () => {
    const h = await backend.open(T0);
    const clock = new FakeClock(T0);
    const events: { event: string; fields: Record<string, unknown> }[] = [];
    const log: Logger = (event, fields) => void events.push({ event, fields });
    try {
      const [id] = (await h.store.jobsInsert({
        now: T0,
        jobs: [newJob({ queue: "mail", maxAttempts: 3, scheduledAt: T0 })],
      })).map((r) => r.id);
      // The node that claimed it dies (kill -9): its lease is never renewed.
      await h.store.jobsClaim({
        queue: "mail",
        node: "dead:1",
        limit: 1,
        now: T0,
        leaseMs: LEASE_MS,
      });
      // The survivor runs other queues, so the rescued job waits for us to read it.
      const runtime = await new Jobs({ store: h.store, clock, logger: log }).start({
        queues: { default: 1 },
        node: "survivor:2",
        rescueMs: 1000,
      });
      try {
        await waitUntil("the survivor rescued the job", () => {
          if (events.some((e) => e.event === "job.rescued")) return true;
          clock.advance(1000);
          return false;
        }, { intervalMs: 10 });
      } finally {
        await runtime.stop({ grace: 0 });
      }
      const rescued = events.filter((e) => e.event === "job.rescued");
      assert.equal(rescued.length, 1, JSON.stringify(rescued));
      assert.deepEqual(rescued[0]!.fields, {
        queue: "mail",
        job: id,
        deadNode: "dead:1",
        node: "survivor:2",
        attempt: 1,
        maxAttempts: 3,
        state: "available",
        nextAttempt: 2,
      });
      assert.equal((await h.store.jobGet({ id: id! }))?.state, "available");
    } finally {
      await h.close();
    }
  });
}

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] returnExpiredClaims() returns work items whose claim ran out, recorded expired`, async () => {
    const h = await backend.open(T0);
    try {
      for (const key of ["a", "b"]) {
        await h.store.workItemAdd({
          queue: "payouts",
          key,
          tenant: null,
          data: {},
          score: null,
          actor: "ada",
          now: T0,
        });
      }
      await h.store.workItemClaim({
        queue: "payouts",
        key: "a",
        person: "ada",
        now: T0,
        leaseMs: LEASE_MS,
      });
      await h.store.workItemClaim({
        queue: "payouts",
        key: "b",
        person: "bob",
        now: T0,
        leaseMs: 2 * LEASE_MS,
      });
      assert.equal(await returnExpiredClaims(h.store, T0 + LEASE_MS), 1);
      assert.equal((await h.store.workItemGet({ queue: "payouts", key: "a" }))?.claimOwner, null);
      assert.equal((await h.store.workItemGet({ queue: "payouts", key: "b" }))?.claimOwner, "bob");
      const history = await h.store.workItemEvents({ queue: "payouts", key: "a" });
      assert.deepEqual(history.at(-1) && [history.at(-1)!.kind, history.at(-1)!.detail.owner], [
        "expired",
        "ada",
      ]);
      assert.equal(await returnExpiredClaims(h.store, T0 + LEASE_MS), 0);
    } finally {
      await h.close();
    }
  });
}
