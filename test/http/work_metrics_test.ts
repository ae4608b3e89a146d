/**
 * `/metrics` for human work queues, on every backend with the injected
 * clock: open items and the oldest one's age per queue, claims expired per
 * queue (from the items' histories), items done per queue and outcome; a
 * declared queue has its series while it holds nothing; one store read per
 * scrape, and no item's data on the page.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { renderMetrics } from "../../src/http/metrics.ts";
import type { Store } from "../../src/store/store.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { actionJob } from "../../src/workqueue/items.ts";
import { BACKENDS } from "../support/backends.ts";
import { parseProm, value } from "./prom.ts";

const HOUR = 3_600_000;

const disputes = compileWorkQueue({
  id: "disputes",
  claim: "required",
  leaseMs: HOUR,
  actions: [
    { id: "refund", run: { kind: "worker", worker: "refund_dispute" } },
    { id: "reject", run: { kind: "worker", worker: "reject_dispute" } },
  ],
});
const payouts = compileWorkQueue({
  id: "payouts",
  claim: "optional",
  leaseMs: HOUR,
  actions: [{ id: "release", run: { kind: "worker", worker: "release_payout" } }],
});

/** `store` with a count of its calls by name. */
function counted(store: Store): { store: Store; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const got = Reflect.get(target, name, receiver);
      if (typeof got !== "function" || typeof name !== "string") return got;
      return (...args: unknown[]) => {
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return got.apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: /metrics shows each work queue's open items, oldest age, expired claims and actions by outcome`, async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 6));
    const h = await backend.open(clock.now());
    try {
      const store = h.store;
      const t0 = clock.now();
      for (const key of ["D-1", "D-2", "D-3", "D-4"]) {
        await store.workItemAdd({
          queue: "disputes",
          key,
          tenant: null,
          data: { secret_note: "card 4111-1111" },
          score: null,
          actor: "ada",
          now: clock.now(),
        });
        clock.advance(60_000);
      }
      // D-1 claimed and left to expire; bob's next takes it again, recording the expiry.
      const next = (person: string) =>
        store.workItemNext({ queue: "disputes", person, now: clock.now(), leaseMs: HOUR });
      assert.equal((await next("ada"))?.key, "D-1");
      clock.advance(HOUR + 1);
      assert.equal((await next("bob"))?.key, "D-1");
      for (const [key, action] of [["D-2", "refund"], ["D-3", "refund"]] as const) {
        const item = (await store.workItemGet({ queue: "disputes", key }))!;
        const done = await store.workItemDo({
          queue: "disputes",
          key,
          person: "ada",
          action,
          job: actionJob(
            disputes,
            disputes.actions.find((a) => a.id === action)!,
            item,
            clock.now(),
          ),
          needClaim: false,
          fence: null,
          reason: null,
          now: clock.now(),
        });
        assert.ok(done.ok, key);
      }
      // A queue the file no longer declares still shows what the store holds.
      await store.workItemAdd({
        queue: "retired",
        key: "x",
        tenant: null,
        data: {},
        score: null,
        actor: "ada",
        now: clock.now(),
      });
      clock.advance(30_000);

      const { store: watched, calls } = counted(store);
      const page = await renderMetrics(watched, undefined, undefined, undefined, {
        queues: [disputes, payouts],
        now: clock.now(),
      });
      assert.equal(calls.get("workItemsStats"), 1, "one read of the work queues per scrape");
      assert.deepEqual(
        [...calls.keys()].filter((name) => name.startsWith("workItem")),
        ["workItemsStats"],
      );
      const samples = parseProm(page);
      const at = (name: string, labels: Record<string, string>) => value(samples, name, labels);
      assert.equal(at("jobs_work_items_open", { queue: "disputes" }), 2);
      assert.equal(at("jobs_work_items_open", { queue: "payouts" }), 0);
      assert.equal(at("jobs_work_items_open", { queue: "retired" }), 1);
      assert.equal(
        at("jobs_work_oldest_open_age_seconds", { queue: "disputes" }),
        (clock.now() - t0) / 1000,
      );
      assert.equal(at("jobs_work_oldest_open_age_seconds", { queue: "payouts" }), 0);
      assert.equal(at("jobs_work_oldest_open_age_seconds", { queue: "retired" }), 30);
      assert.equal(at("jobs_work_claims_expired_total", { queue: "disputes" }), 1);
      assert.equal(at("jobs_work_claims_expired_total", { queue: "payouts" }), 0);
      assert.equal(at("jobs_work_actions_total", { queue: "disputes", outcome: "refund" }), 2);
      assert.equal(at("jobs_work_actions_total", { queue: "disputes", outcome: "reject" }), 0);
      assert.equal(at("jobs_work_actions_total", { queue: "payouts", outcome: "release" }), 0);
      assert.match(page, /# TYPE jobs_work_claims_expired_total counter/);
      assert.match(page, /# TYPE jobs_work_items_open gauge/);
      assert.doesNotMatch(page, /4111|secret_note|D-1/);

      // Without the file's queues, the page reads no work item at all.
      const bare = counted(store);
      const without = await renderMetrics(bare.store);
      assert.equal(bare.calls.get("workItemsStats"), undefined);
      assert.doesNotMatch(without, /jobs_work_/);
    } finally {
      await h.close();
    }
  });
}
