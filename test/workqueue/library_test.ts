/**
 * `jobs.workItems.add(queue, { key, data, tenant }, { tx })`: an item added
 * inside the caller's transaction commits or rolls back with the caller's
 * own writes; outside one it is written at once; a re-add keeps its place;
 * an unregistered queue and a key of another tenant are refused. On every
 * backend.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { BACKENDS, harnessTest } from "../support/backends.ts";

const T0 = Date.UTC(2026, 11, 6);

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobs.workItems.add commits and rolls back with the caller's transaction", async ({ store }) => {
    const clock = new FakeClock(T0);
    const jobs = new Jobs({
      store,
      clock,
      logger: silentLogger,
      workQueues: [{
        id: "disputes",
        claim: "required",
        score: {
          rule: "rule/dispute.urgency-score",
          inputs: ["amount", "age"],
          weights: { amount: 0.01, age: "2/day" },
        },
        actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
      }],
    });
    await assert.rejects(
      jobs.transaction(async (tx) => {
        const added = await jobs.workItems.add("disputes", { key: "d1", data: { amount: 100 } }, {
          tx,
        });
        assert.equal(added.created, true);
        throw new Error("the caller's own write failed");
      }),
      /own write failed/,
    );
    assert.equal(await store.workItemGet({ queue: "disputes", key: "d1" }), null);

    const inside = await jobs.transaction((tx) =>
      jobs.workItems.add("disputes", { key: "d1", data: { amount: 1900 }, tenant: "acme" }, { tx })
    );
    assert.equal(inside.item.score, 19);
    assert.equal(inside.item.tenant, "acme");
    clock.advance(86_400_000);
    const again = await jobs.workItems.add("disputes", {
      key: "d1",
      data: { amount: 2900 },
      tenant: "acme",
    });
    assert.equal(again.created, false);
    assert.equal(again.item.requestedAt, T0);
    assert.equal(again.item.score, 29 + 2);
    assert.deepEqual(
      (await store.workItemEvents({ queue: "disputes", key: "d1" })).map((e) => [e.kind, e.actor]),
      [["added", "library"], ["updated", "library"]],
    );
    await assert.rejects(
      jobs.workItems.add("disputes", { key: "d1", data: {}, tenant: "globex" }),
      /belongs to another tenant/,
    );
    await assert.rejects(
      jobs.workItems.add("payouts", { key: "p1", data: {} }),
      /no work queue "payouts" is registered \(disputes\)/,
    );
    await assert.rejects(
      jobs.workItems.add("disputes", { key: "", data: {} }),
      /an item's key must be 1-256 characters/,
    );
  });
}
