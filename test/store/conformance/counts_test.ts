/**
 * Counts and summaries, on every backend: jobs by queue and state, each
 * queue's oldest available job, jobsCountMatching() against what jobsList()
 * holds, throughput per bucket, and dead letters grouped by their first error
 * line.
 */

import assert from "node:assert/strict";
import type { JobResult, JobState } from "../../../src/kernel/types.ts";
import type { JobMatch } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, completed, insert, newJob, retryable, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsCount() counts by queue and state, optionally for one queue", async ({ store }) => {
    await insert(store, [
      newJob(),
      newJob(),
      newJob(),
      newJob({ queue: "mail" }),
      newJob({ queue: "mail", scheduledAt: T0 + 1000 }),
    ]);
    await claimOne(store);
    const key = (rows: { queue: string; state: string; count: number }[]) =>
      rows.map((r) => `${r.queue}/${r.state}=${r.count}`).sort();
    assert.deepEqual(key(await store.jobsCount({})), [
      "default/available=2",
      "default/executing=1",
      "mail/available=1",
      "mail/scheduled=1",
    ]);
    assert.deepEqual(key(await store.jobsCount({ queue: "mail" })), [
      "mail/available=1",
      "mail/scheduled=1",
    ]);
    assert.deepEqual(await store.jobsCount({ queue: "none" }), []);
  });

  test("queuesOldestAvailable() gives each queue's earliest available job, at any priority", async ({ store }) => {
    await insert(store, [
      newJob({ scheduledAt: T0 - 5000, priority: 9 }),
      newJob({ scheduledAt: T0 - 1000, priority: 0 }),
      newJob({ queue: "mail", scheduledAt: T0 - 3000, priority: 4 }),
      newJob({ queue: "mail", scheduledAt: T0 - 7000, priority: 4 }),
      // Not available: neither counts.
      newJob({ queue: "late", scheduledAt: T0 + 60_000 }),
    ]);
    await claimOne(store, { queue: "mail", now: T0 });
    assert.deepEqual(
      await store.queuesOldestAvailable({ queues: ["default", "mail", "late", "none"] }),
      [{ queue: "default", scheduledAt: T0 - 5000 }, { queue: "mail", scheduledAt: T0 - 3000 }],
    );
    assert.deepEqual(await store.queuesOldestAvailable({ queues: [] }), []);
  });

  test("jobsCountMatching() counts what every page of jobsList() holds, for any filter", async ({ store }) => {
    const queues = ["default", "mail", "reports"];
    const ids = await insert(
      store,
      Array.from({ length: 23 }, (_, n) =>
        newJob({
          queue: queues[n % 3],
          worker: n % 2 === 0 ? "send" : "build",
          tags: JSON.stringify(n % 5 === 0 ? ["vip"] : []),
          args: JSON.stringify({ n, note: n % 4 === 0 ? "needle" : "hay" }),
          scheduleId: n % 6 === 0 ? "nightly" : null,
          occurrence: n % 6 === 0 ? `nightly@${new Date(T0 + n * 60_000).toISOString()}` : null,
        })),
    );
    await store.jobsDiscard({ ids: ids.filter((_, n) => n % 4 === 1), now: T0, reason: "poison" });
    await store.jobsCancel({ ids: ids.filter((_, n) => n % 7 === 2), now: T0, reason: "stop" });
    await claim(store, { queue: "mail", limit: 2 });
    const all = await store.jobsList({});
    type Keep = (j: (typeof all)[number]) => boolean;
    const note = (j: (typeof all)[number]) => (j.args as { note: string }).note;
    const cases: [JobMatch, Keep][] = [
      [{}, () => true],
      [{ state: "discarded" }, (j) => j.state === "discarded"],
      [{ state: "executing" }, (j) => j.state === "executing"],
      [{ state: ["available", "cancelled"] }, (j) => ["available", "cancelled"].includes(j.state)],
      [{ state: [] }, () => false],
      [{ queue: "mail", state: "cancelled" }, (j) => j.queue === "mail" && j.state === "cancelled"],
      [{ worker: "build" }, (j) => j.worker === "build"],
      [{ tag: "vip" }, (j) => j.tags.includes("vip")],
      [{ scheduleId: "nightly" }, (j) => j.scheduleId === "nightly"],
      [{ search: "NEEDLE" }, (j) => note(j) === "needle"],
      [{ search: "poison" }, (j) => j.errors.some((e) => e.error.includes("poison"))],
      [
        { state: "discarded", queue: "reports", search: "needle" },
        (j) => j.state === "discarded" && j.queue === "reports" && note(j) === "needle",
      ],
      [{ ids: [ids[0]!, ids[5]!, 99_999] }, (j) => j.id === ids[0] || j.id === ids[5]],
    ];
    for (const [filter, keep] of cases) {
      const expected = all.filter(keep).length;
      const what = JSON.stringify(filter);
      assert.equal(await store.jobsCountMatching(filter), expected, what);
      assert.equal((await store.jobsList(filter)).length, expected, `${what} listed`);
    }
    assert.ok(all.some((j) => j.state === "discarded") && all.some((j) => j.state === "executing"));
    await assert.rejects(
      store.jobsCountMatching({ state: "finished" as JobState }),
      (e: Error) => e instanceof RangeError && /state must be one of .*"finished"/.test(e.message),
    );
  });

  test("jobsThroughput() counts completions and failed attempts per queue and bucket", async ({ store }) => {
    const MIN = 60_000;
    await insert(store, [newJob(), newJob(), newJob(), newJob(), newJob({ queue: "mail" })]);
    await insert(store, [newJob({ queue: "mail" })]);
    const [a, b, c, d] = await claim(store, { limit: 4 });
    const [m1, m2] = await claim(store, { queue: "mail", limit: 2 });
    const record = (now: number, results: JobResult[]) =>
      store.jobsRecord({ node: "node-a", now, results });
    await record(T0 - 1, [completed(d!)]); // before the window
    await record(T0 + 10_000, [completed(a!)]);
    await record(T0 + 5_000, [completed(m1!)]);
    await record(T0 + MIN + 10_000, [completed(b!)]);
    await record(T0 + MIN + 15_000, [retryable(c!, T0 + MIN + 15_000)]);
    await record(T0 + 2 * MIN + 1, [{ ...retryable(m2!, 0), outcome: "discarded", error: "x" }]);
    // The failed job's next attempt succeeds later: it counts where it completes.
    await store.jobsStage({ now: T0 + MIN + 15_000, limit: 10 });
    const [again] = await claim(store, { limit: 1, now: T0 + MIN + 15_000 + 1 });
    assert.equal(again?.id, c!.id);
    await record(T0 + 3 * MIN + 1, [completed(again!)]); // after the window

    const rows = await store.jobsThroughput({ since: T0, until: T0 + 3 * MIN, bucketMs: MIN });
    assert.deepEqual(rows, [
      { queue: "default", bucket: T0, completed: 1, failed: 0 },
      { queue: "default", bucket: T0 + MIN, completed: 1, failed: 1 },
      { queue: "mail", bucket: T0, completed: 1, failed: 0 },
      { queue: "mail", bucket: T0 + 2 * MIN, completed: 0, failed: 1 },
    ]);
    assert.deepEqual(
      await store.jobsThroughput({ since: T0 - MIN, until: T0 + 4 * MIN, bucketMs: 4 * MIN }),
      [
        { queue: "default", bucket: T0 - MIN, completed: 3, failed: 1 },
        // The last bucket starts at T0 + 3 min and is cut short by until.
        { queue: "default", bucket: T0 + 3 * MIN, completed: 1, failed: 0 },
        { queue: "mail", bucket: T0 - MIN, completed: 1, failed: 1 },
      ],
    );
    assert.deepEqual(await store.jobsThroughput({ since: T0, until: T0, bucketMs: MIN }), []);
    await assert.rejects(
      store.jobsThroughput({ since: T0, until: T0 + MIN, bucketMs: 0 }),
      /bucketMs must be at least 1, got 0/,
    );
    await assert.rejects(
      store.jobsThroughput({ since: T0, until: T0 - 1, bucketMs: MIN }),
      /until must not be before since/,
    );
  });

  test("jobsDeadLetters() groups discarded jobs by worker, schedule and first error line", async ({ store }) => {
    const ids = await insert(store, [
      newJob({ worker: "mail" }),
      newJob({ worker: "mail" }),
      newJob({ worker: "mail" }),
      newJob({ worker: "mail", scheduleId: "nightly" }),
      newJob({ worker: "report" }),
      newJob({ worker: "report" }),
    ]);
    const discard = (n: number[], now: number, reason: string) =>
      store.jobsDiscard({ ids: n.map((i) => ids[i]!), now, reason });
    await discard([0], T0 + 1, "smtp refused\n  at send (mail.ts:1)");
    await discard([1], T0 + 3, "smtp refused\n  at send (mail.ts:9)");
    await discard([2], T0 + 2, "bad address");
    await discard([3], T0 + 4, "smtp refused");
    // Only the last error counts: an earlier failure of this job is history.
    const [r] = await claim(store, { limit: 1 });
    assert.equal(r?.id, ids[4]);
    await store.jobsRecord({ node: "node-a", now: T0, results: [retryable(r!, T0)] });
    await discard([4], T0 + 5, "report gone");
    await discard([5], T0 + 6, "report gone");
    assert.deepEqual(await store.jobsDeadLetters({ limit: 10 }), [
      {
        worker: "report",
        scheduleId: null,
        error: "report gone",
        count: 2,
        latestId: ids[5],
        latestAt: T0 + 6,
      },
      {
        worker: "mail",
        scheduleId: null,
        error: "smtp refused",
        count: 2,
        latestId: ids[1],
        latestAt: T0 + 3,
      },
      {
        worker: "mail",
        scheduleId: "nightly",
        error: "smtp refused",
        count: 1,
        latestId: ids[3],
        latestAt: T0 + 4,
      },
      {
        worker: "mail",
        scheduleId: null,
        error: "bad address",
        count: 1,
        latestId: ids[2],
        latestAt: T0 + 2,
      },
    ]);
    assert.deepEqual((await store.jobsDeadLetters({ limit: 1 })).map((g) => g.count), [2]);
    // A retried dead letter leaves its group.
    await store.jobsRetry({ ids: [ids[5]!], now: T0 + 7 });
    const [top] = await store.jobsDeadLetters({ limit: 1 });
    assert.deepEqual([top?.worker, top?.count, top?.latestId], ["mail", 2, ids[1]]);
    await assert.rejects(store.jobsDeadLetters({ limit: 0 }), /limit must be .* got 0/);
  });
}
