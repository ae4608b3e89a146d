/**
 * Work items, on every backend, with the injected clock: twenty racing
 * "next" each get a different item; an expired claim returns the item (its
 * history says `expired`, not released) and a late action with the stale
 * fence is refused; a `required` action without the claim is refused; an
 * `optional` hold is visible and breakable with a reason; the order is by
 * score, ties and unscored items oldest first; a score moves with the age;
 * a re-added key keeps its place; acting inserts the action's job with the
 * key `<queue>/<item>/<action>` in the transaction that marks it done.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../../src/clock.ts";
import type { NewJob } from "../../../src/kernel/types.ts";
import type { Store, WorkItemScore } from "../../../src/store/store.ts";
import { compileScore, scoreAt, scoreItem } from "../../../src/workqueue/definition.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { newJob, T0 } from "./helpers.ts";

const HOUR = 3_600_000;
const DAY = 86_400_000;

const RULE = compileScore({
  rule: "rule/dispute.urgency-score",
  inputs: ["amount", "age", "evidence_missing"],
  weights: { amount: 0.01, age: "2/day", evidence_missing: 30 },
});

function scored(data: Record<string, unknown>): WorkItemScore {
  const s = scoreItem(RULE, data);
  return { score: s.score, rate: s.rate, inputs: s.inputs, version: s.version };
}

async function add(
  store: Store,
  queue: string,
  key: string,
  now: number,
  data: Record<string, unknown> = {},
  score: WorkItemScore | null = null,
) {
  const added = await store.workItemAdd({
    queue,
    key,
    tenant: null,
    data,
    score,
    actor: "ada",
    now,
  });
  assert.ok(added, `added ${key}`);
  return added;
}

function actionJob(queue: string, key: string, action: string, now: number): NewJob {
  return newJob({
    worker: "refund_dispute",
    args: JSON.stringify({ queue, key, action }),
    uniqueKey: `${queue}/${key}/${action}`,
    uniqueStates: "all",
    scheduledAt: now,
  });
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("twenty racing next() each claim a different item", async ({ store, connect }) => {
    const clock = new FakeClock(T0);
    for (let i = 0; i < 25; i++) await add(store, "disputes", `d${i}`, clock.now() + i);
    const other = await connect();
    const people = Array.from({ length: 20 }, (_, i) => `person${i}`);
    const got = await Promise.all(
      people.map((person, i) =>
        (i % 2 === 0 ? store : other).workItemNext({
          queue: "disputes",
          person,
          now: clock.now() + 100,
          leaseMs: HOUR,
        })
      ),
    );
    const keys = got.map((item) => item?.key);
    assert.ok(keys.every((k) => k !== undefined), `every person got one: ${keys}`);
    assert.equal(new Set(keys).size, 20, `twenty different items: ${keys}`);
    for (const [i, item] of got.entries()) {
      assert.equal(item!.claimOwner, people[i]);
      assert.equal(item!.claimFence, 1);
    }
    const open = await store.workItemsList({ queue: "disputes" });
    assert.equal(open.filter((item) => item.claimOwner === null).length, 5);
  });

  test("next writes its audit row with the claim, and takes a lapsed claim's item when it is the best", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "payouts", "p1", clock.now());
    await add(store, "payouts", "p2", clock.now() + 10);
    const audit = {
      actor: "ada",
      action: "work.claim",
      reason: null,
      details: { door: "cli", via: "next" },
    };
    const ada = await store.workItemNext({
      queue: "payouts",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
      audit,
    });
    assert.equal(ada?.key, "p1");
    assert.deepEqual(await store.auditList({ target: "work:payouts/p1" }), [{
      id: (await store.auditList({ target: "work:payouts/p1" }))[0]!.id,
      at: T0,
      actor: "ada",
      action: "work.claim",
      target: "work:payouts/p1",
      reason: null,
      details: { door: "cli", via: "next", key: "p1", fence: 1, expiresAt: T0 + HOUR },
    }]);
    // Ada's claim lapses: p1, the oldest, is bob's next, not p2; its history
    // says expired (for ada) before claimed (by bob).
    clock.advance(HOUR + 1);
    const bob = await store.workItemNext({
      queue: "payouts",
      person: "bob",
      now: clock.now(),
      leaseMs: HOUR,
      audit: { ...audit, actor: "bob" },
    });
    assert.equal(bob?.key, "p1");
    assert.equal(bob?.claimFence, 2);
    const history = await store.workItemEvents({ queue: "payouts", key: "p1" });
    assert.deepEqual(history.map((e) => [e.kind, e.actor, e.fence, e.detail]), [
      ["added", "ada", null, {}],
      ["claimed", "ada", 1, { expiresAt: T0 + HOUR, by: "next" }],
      ["expired", "jobs", 1, { owner: "ada", expiredAt: T0 + HOUR }],
      ["claimed", "bob", 2, { expiresAt: clock.now() + HOUR, by: "next" }],
    ]);
    assert.deepEqual((await store.auditList({ target: "work:payouts/p1" })).map((a) => a.actor), [
      "ada",
      "bob",
    ]);
    // Nothing taken, nothing audited.
    await store.workItemNext({ queue: "payouts", person: "cy", now: clock.now(), leaseMs: HOUR });
    assert.equal(
      await store.workItemNext({
        queue: "payouts",
        person: "dee",
        now: clock.now(),
        leaseMs: HOUR,
        audit: { ...audit, actor: "dee" },
      }),
      null,
    );
    assert.deepEqual(await store.auditList({ target: "work:payouts/p2" }), []);
  });

  test("an expired claim returns the item, shows expired, and a late action with its fence is refused", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "payouts", "p1", clock.now());
    const first = await store.workItemNext({
      queue: "payouts",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(first?.key, "p1");
    // Nobody else gets it while the lease holds.
    assert.equal(
      await store.workItemNext({
        queue: "payouts",
        person: "bob",
        now: clock.now(),
        leaseMs: HOUR,
      }),
      null,
    );
    clock.advance(HOUR + 1);
    const second = await store.workItemNext({
      queue: "payouts",
      person: "bob",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(second?.key, "p1");
    assert.equal(second?.claimFence, first!.claimFence + 1);
    const late = await store.workItemDo({
      queue: "payouts",
      key: "p1",
      person: "ada",
      action: "release",
      job: actionJob("payouts", "p1", "release", clock.now()),
      needClaim: true,
      fence: first!.claimFence,
      reason: null,
      now: clock.now(),
    });
    assert.equal(late.ok, false);
    assert.equal(!late.ok && late.why, "held");
    assert.equal(late.item?.state, "open");
    // Even the same person's late action with the old fence is refused once the claim moved on.
    clock.advance(HOUR + 1);
    const again = await store.workItemClaim({
      queue: "payouts",
      key: "p1",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.ok(again.ok);
    const stale = await store.workItemDo({
      queue: "payouts",
      key: "p1",
      person: "ada",
      action: "release",
      job: actionJob("payouts", "p1", "release", clock.now()),
      needClaim: true,
      fence: first!.claimFence,
      reason: null,
      now: clock.now(),
    });
    assert.equal(!stale.ok && stale.why, "stale");
    const history = await store.workItemEvents({ queue: "payouts", key: "p1" });
    assert.deepEqual(history.map((e) => [e.kind, e.actor]), [
      ["added", "ada"],
      ["claimed", "ada"],
      ["expired", "jobs"],
      ["claimed", "bob"],
      ["expired", "jobs"],
      ["claimed", "ada"],
    ]);
    assert.equal(history[2]!.detail.owner, "ada");
    assert.equal(history[4]!.detail.owner, "bob");
    assert.equal(history.some((e) => e.kind === "released"), false);
    // No job was inserted by a refused action.
    assert.equal((await store.jobsList({})).length, 0);
  });

  test("required: an action without the claim is refused; with it, done and its job inserted together", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "payouts", "p1", clock.now(), { amount: 100 });
    const job = actionJob("payouts", "p1", "release", clock.now());
    const unclaimed = await store.workItemDo({
      queue: "payouts",
      key: "p1",
      person: "ada",
      action: "release",
      job,
      needClaim: true,
      fence: null,
      reason: null,
      now: clock.now(),
    });
    assert.equal(!unclaimed.ok && unclaimed.why, "unclaimed");
    assert.equal((await store.jobsList({})).length, 0);
    const claim = await store.workItemClaim({
      queue: "payouts",
      key: "p1",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.ok(claim.ok);
    const done = await store.workItemDo({
      queue: "payouts",
      key: "p1",
      person: "ada",
      action: "release",
      job,
      needClaim: true,
      fence: claim.item.claimFence,
      reason: "checked the bank details",
      now: clock.now(),
    });
    assert.ok(done.ok);
    assert.equal(done.item.state, "done");
    assert.equal(done.item.outcome, "release");
    assert.equal(done.item.doneBy, "ada");
    assert.equal(done.item.actionJobId, done.jobId);
    assert.equal(done.item.actionState, "available");
    const [inserted] = await store.jobsList({});
    assert.equal(inserted?.id, done.jobId);
    assert.equal(inserted?.uniqueKey, "payouts/p1/release");
    const twice = await store.workItemDo({
      queue: "payouts",
      key: "p1",
      person: "ada",
      action: "release",
      job,
      needClaim: true,
      fence: claim.item.claimFence,
      reason: null,
      now: clock.now(),
    });
    assert.equal(!twice.ok && twice.why, "done");
    const history = await store.workItemEvents({ queue: "payouts", key: "p1" });
    assert.deepEqual(history.map((e) => e.kind), ["added", "claimed", "done"]);
    assert.equal(history[2]!.detail.jobId, done.jobId);
    assert.equal(history[2]!.reason, "checked the bank details");
  });

  test("the action's job commits with the item: a caller's transaction that rolls back keeps neither", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "reviews", "r1", clock.now());
    await assert.rejects(
      store.transaction(async (tx) => {
        const done = await tx.workItemDo({
          queue: "reviews",
          key: "r1",
          person: "ada",
          action: "approve",
          job: actionJob("reviews", "r1", "approve", clock.now()),
          needClaim: false,
          fence: null,
          reason: null,
          now: clock.now(),
        });
        assert.ok(done.ok);
        throw new Error("the caller changed their mind");
      }),
      /changed their mind/,
    );
    assert.equal((await store.workItemGet({ queue: "reviews", key: "r1" }))?.state, "open");
    assert.equal((await store.jobsList({})).length, 0);
  });

  test("optional: a hold is visible, refuses another's action, and is broken with a reason", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "reviews", "r1", clock.now());
    const hold = await store.workItemClaim({
      queue: "reviews",
      key: "r1",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.ok(hold.ok);
    const seen = await store.workItemsList({ queue: "reviews" });
    assert.equal(seen[0]?.claimOwner, "ada");
    assert.equal(seen[0]?.claimExpiresAt, clock.now() + HOUR);
    const taken = await store.workItemClaim({
      queue: "reviews",
      key: "r1",
      person: "bob",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(!taken.ok && taken.why, "held");
    const acted = await store.workItemDo({
      queue: "reviews",
      key: "r1",
      person: "bob",
      action: "approve",
      job: actionJob("reviews", "r1", "approve", clock.now()),
      needClaim: false,
      fence: null,
      reason: null,
      now: clock.now(),
    });
    assert.equal(!acted.ok && acted.why, "held");
    const broken = await store.workItemClaim({
      queue: "reviews",
      key: "r1",
      person: "bob",
      now: clock.now(),
      leaseMs: HOUR,
      breakReason: "ada is out today",
    });
    assert.ok(broken.ok);
    assert.equal(broken.item.claimOwner, "bob");
    assert.equal(broken.item.claimFence, hold.item.claimFence + 1);
    const history = await store.workItemEvents({ queue: "reviews", key: "r1" });
    const event = history.find((e) => e.kind === "broken");
    assert.equal(event?.actor, "bob");
    assert.equal(event?.reason, "ada is out today");
    assert.equal(event?.detail.owner, "ada");
    // Ada's release of the claim she lost changes nothing.
    const release = await store.workItemRelease({
      queue: "reviews",
      key: "r1",
      person: "ada",
      now: clock.now(),
    });
    assert.equal(!release.ok && release.why, "held");
    const mine = await store.workItemRelease({
      queue: "reviews",
      key: "r1",
      person: "bob",
      now: clock.now(),
    });
    assert.ok(mine.ok);
    assert.equal(mine.item.claimOwner, null);
  });

  test("a scored queue lists highest first, ties oldest first; an unscored queue oldest first", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "disputes", "small", clock.now(), {}, scored({ amount: 100 }));
    clock.advance(1000);
    await add(store, "disputes", "big", clock.now(), {}, scored({ amount: 5000 }));
    clock.advance(1000);
    await add(store, "disputes", "tie-new", clock.now(), {}, scored({ amount: 100 }));
    clock.advance(1000);
    await add(
      store,
      "disputes",
      "gap",
      clock.now(),
      {},
      scored({ amount: 100, evidence_missing: true }),
    );
    const keys = (await store.workItemsList({ queue: "disputes" })).map((i) => i.key);
    // The older "small" has aged 2 s more than "tie-new": 2 s of 2/day keeps it ahead.
    assert.deepEqual(keys, ["big", "gap", "small", "tie-new"]);
    const next = await store.workItemNext({
      queue: "disputes",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(next?.key, "big");

    for (const key of ["c", "a", "b"]) {
      await add(store, "plain", key, clock.now());
      clock.advance(10);
    }
    assert.deepEqual((await store.workItemsList({ queue: "plain" })).map((i) => i.key), [
      "c",
      "a",
      "b",
    ]);
    assert.equal(
      (await store.workItemNext({ queue: "plain", person: "ada", now: clock.now(), leaseMs: HOUR }))
        ?.key,
      "c",
    );
  });

  test("a score moves with the age, and an aged item ranks above a newer one of a higher base", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "disputes", "old", clock.now(), {}, scored({ amount: 100 }));
    const [before] = await store.workItemsList({ queue: "disputes" });
    assert.equal(scoreAt(before!, clock.now(), RULE)?.score, 1);
    clock.advance(6 * DAY);
    const [after] = await store.workItemsList({ queue: "disputes" });
    const at = scoreAt(after!, clock.now(), RULE);
    assert.equal(at?.score, 1 + 12);
    assert.deepEqual(at?.terms.find((t) => t.input === "age"), {
      input: "age",
      value: 6 * DAY,
      weight: "2/day",
      adds: 12,
    });
    // A new item of amount 1000 (score 10) ranks below the old one (13 now).
    await add(store, "disputes", "new", clock.now(), {}, scored({ amount: 1000 }));
    assert.deepEqual((await store.workItemsList({ queue: "disputes" })).map((i) => i.key), [
      "old",
      "new",
    ]);
  });

  test("re-adding a key updates its data and score and keeps its place in line", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "plain", "first", clock.now(), { v: 1 });
    clock.advance(1000);
    await add(store, "plain", "second", clock.now(), { v: 1 });
    clock.advance(1000);
    const again = await add(store, "plain", "first", clock.now(), { v: 2 });
    assert.equal(again.created, false);
    assert.equal(again.item.requestedAt, T0);
    assert.deepEqual(again.item.data, { v: 2 });
    assert.deepEqual((await store.workItemsList({ queue: "plain" })).map((i) => i.key), [
      "first",
      "second",
    ]);
    // A scored re-add recomputes the score from the new inputs.
    await add(store, "disputes", "d", T0, {}, scored({ amount: 100 }));
    const rescored = await add(store, "disputes", "d", clock.now(), {}, scored({ amount: 900 }));
    assert.equal(rescored.item.score, 9);
    assert.deepEqual(rescored.item.inputs, { amount: 900, evidence_missing: null });
    assert.equal(rescored.item.ruleVersion, RULE.version);
    const history = await store.workItemEvents({ queue: "plain", key: "first" });
    assert.deepEqual(history.map((e) => e.kind), ["added", "updated"]);
    // Another tenant's key is not updated.
    const foreign = await store.workItemAdd({
      queue: "plain",
      key: "first",
      tenant: "acme",
      data: { v: 3 },
      score: null,
      actor: "eve",
      now: clock.now(),
    });
    assert.equal(foreign, null);
  });

  test("nexts pressed together go in order: a skip holds for its person only, a double press gets two items, a tenant its own", async ({ store }) => {
    const clock = new FakeClock(T0);
    for (const key of ["a", "b", "c", "d", "e"]) {
      await add(store, "q", key, clock.now());
      clock.advance(10);
    }
    await store.workItemAdd({
      queue: "q",
      key: "t",
      tenant: "acme",
      data: {},
      score: null,
      actor: "ada",
      now: clock.now() + 1000,
    });
    const held = await store.workItemClaim({
      queue: "q",
      key: "a",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.ok(held.ok);
    assert.ok(
      (await store.workItemSkip({
        queue: "q",
        key: "a",
        person: "ada",
        now: clock.now(),
        until: clock.now() + HOUR,
      })).ok,
    );
    // All at the same instant (on PostgreSQL, presses that meet one in
    // flight go together in one statement).
    const press = (person: string, tenant?: string) =>
      store.workItemNext({
        queue: "q",
        person,
        now: clock.now(),
        leaseMs: HOUR,
        ...(tenant === undefined ? {} : { tenant }),
      });
    const got = await Promise.all([
      press("ada"),
      press("bob"),
      press("ada"),
      press("cyd", "acme"),
      press("dee"),
      press("eve", "acme"),
    ]);
    const keys = got.map((item) => item?.key ?? null);
    // The tenant's presses see only its item (the newest: the store-wide
    // presses take older ones first), the first one takes it.
    assert.deepEqual([keys[3], keys[5]], ["t", null]);
    const store_wide = [keys[0], keys[1], keys[2], keys[4]];
    // Every press of the whole store got one of a..e, each a different one,
    // and ada never the item she skipped.
    assert.ok(
      store_wide.every((k) => k != null && ["a", "b", "c", "d", "e"].includes(k)),
      `${keys}`,
    );
    assert.equal(new Set(store_wide).size, 4, `${keys}`);
    assert.notEqual(keys[0], "a");
    assert.notEqual(keys[2], "a");
    for (const [i, person] of ["ada", "bob", "ada", "cyd", "dee"].entries()) {
      if (got[i]) assert.equal(got[i]!.claimOwner, person, `${keys}`);
    }
    const free = (await store.workItemsList({ queue: "q" })).filter((i) => i.claimOwner === null);
    assert.equal(free.length, 1, `one of a..e is left: ${free.map((i) => i.key)}`);
  });

  test("skip hides an item from one person for a while; reassign hands the claim over", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "q", "a", clock.now());
    clock.advance(10);
    await add(store, "q", "b", clock.now());
    const mine = await store.workItemNext({
      queue: "q",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(mine?.key, "a");
    const skipped = await store.workItemSkip({
      queue: "q",
      key: "a",
      person: "ada",
      now: clock.now(),
      until: clock.now() + HOUR,
    });
    assert.ok(skipped.ok);
    assert.equal(skipped.item.claimOwner, null);
    const next = await store.workItemNext({
      queue: "q",
      person: "ada",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(next?.key, "b");
    // Bob still gets the item Ada skipped.
    const bobs = await store.workItemNext({
      queue: "q",
      person: "bob",
      now: clock.now(),
      leaseMs: HOUR,
    });
    assert.equal(bobs?.key, "a");
    const handed = await store.workItemReassign({
      queue: "q",
      key: "a",
      actor: "lead",
      to: "cyd",
      now: clock.now(),
      leaseMs: HOUR,
      reason: "cyd knows this merchant",
    });
    assert.ok(handed.ok);
    assert.equal(handed.item.claimOwner, "cyd");
    assert.equal(handed.item.claimFence, bobs!.claimFence + 1);
    const history = await store.workItemEvents({ queue: "q", key: "a" });
    assert.deepEqual(history.map((e) => [e.kind, e.actor]), [
      ["added", "ada"],
      ["claimed", "ada"],
      ["skipped", "ada"],
      ["claimed", "bob"],
      ["reassigned", "lead"],
    ]);
    assert.deepEqual(history[4]!.detail.from, "bob");
    assert.equal(
      await store.workItemsExpire({ queue: "q", now: clock.now() + HOUR + 1 }),
      2,
    );
  });

  test("items left by another rule version are listed and rescored, unless an add changed them since", async ({ store }) => {
    const clock = new FakeClock(T0);
    const old = compileScore({
      rule: "rule/dispute.urgency-score",
      inputs: ["amount"],
      weights: { amount: 0.01 },
    });
    const oldScore = (data: Record<string, unknown>) => {
      const s = scoreItem(old, data);
      return { score: s.score, rate: s.rate, inputs: s.inputs, version: s.version };
    };
    await add(store, "disputes", "a", clock.now(), { amount: 100 }, oldScore({ amount: 100 }));
    clock.advance(10);
    await add(store, "disputes", "b", clock.now(), { amount: 200 }, oldScore({ amount: 200 }));
    clock.advance(10);
    await add(store, "disputes", "c", clock.now(), { amount: 300 }, scored({ amount: 300 }));
    const stale = await store.workItemsStale({
      queue: "disputes",
      ruleVersion: RULE.version,
      limit: 10,
    });
    assert.deepEqual(stale.map((i) => i.key), ["a", "b"]);
    // "b" is re-added under the new rule between the read and the rescore: the add wins.
    await add(store, "disputes", "b", clock.now(), { amount: 250 }, scored({ amount: 250 }));
    const results = [];
    for (const item of stale) {
      results.push(
        await store.workItemRescore({
          queue: "disputes",
          key: item.key,
          fromVersion: item.ruleVersion,
          score: scored(item.data as Record<string, unknown>),
          now: clock.now(),
        }),
      );
    }
    assert.deepEqual(results, [true, false]);
    const a = await store.workItemGet({ queue: "disputes", key: "a" });
    assert.equal(a?.ruleVersion, RULE.version);
    assert.equal(a?.requestedAt, T0);
    assert.equal((await store.workItemGet({ queue: "disputes", key: "b" }))?.score, 2.5);
    assert.deepEqual(
      await store.workItemsStale({ queue: "disputes", ruleVersion: RULE.version, limit: 10 }),
      [],
    );
    const history = await store.workItemEvents({ queue: "disputes", key: "a" });
    assert.deepEqual(history.map((e) => [e.kind, e.actor]), [["added", "ada"], [
      "rescored",
      "jobs",
    ]]);
    assert.equal(history[1]!.detail.from, old.version);
  });

  test("workItemsStats() gives each queue its open items, oldest request, expired claims and done by outcome", async ({ store }) => {
    const clock = new FakeClock(T0);
    assert.deepEqual(await store.workItemsStats(), []);
    for (const key of ["p1", "p2", "p3", "p4"]) {
      await add(store, "payouts", key, clock.now());
      clock.advance(HOUR);
    }
    await add(store, "reviews", "r1", clock.now());
    const reviewsAt = clock.now();
    const next = (person: string) =>
      store.workItemNext({ queue: "payouts", person, now: clock.now(), leaseMs: HOUR });
    assert.equal((await next("ada"))?.key, "p1");
    clock.advance(HOUR + 1);
    // The lapsed claim is cleared (recorded expired) by the next write that meets it.
    assert.equal((await next("bob"))?.key, "p1");
    for (const [key, action] of [["p2", "refund"], ["p3", "refund"], ["p4", "reject"]]) {
      const done = await store.workItemDo({
        queue: "payouts",
        key: key!,
        person: "ada",
        action: action!,
        job: actionJob("payouts", key!, action!, clock.now()),
        needClaim: false,
        fence: null,
        reason: null,
        now: clock.now(),
      });
      assert.ok(done.ok, key);
    }
    assert.deepEqual(await store.workItemsStats(), [
      {
        queue: "payouts",
        open: 1,
        oldestOpenAt: T0,
        claimsExpired: 1,
        done: { refund: 2, reject: 1 },
      },
      { queue: "reviews", open: 1, oldestOpenAt: reviewsAt, claimsExpired: 0, done: {} },
    ]);
  });

  test("the summary counts each queue's open and claimed items, and its marker moves with a claim", async ({ store }) => {
    const clock = new FakeClock(T0);
    await add(store, "disputes", "a", clock.now());
    await add(store, "disputes", "b", clock.now() + 10);
    await add(store, "payouts", "p", clock.now() + 20);
    await store.workItemAdd({
      queue: "disputes",
      key: "t",
      tenant: "acme",
      data: {},
      score: null,
      actor: "ada",
      now: clock.now() + 30,
    });
    const before = await store.workItemsSummary({ now: clock.now() + 100 });
    assert.deepEqual(
      before.map((s) => [s.queue, s.open, s.claimed, s.oldestRequestedAt]),
      [["disputes", 3, 0, T0], ["payouts", 1, 0, T0 + 20]],
    );
    const acme = await store.workItemsSummary({ tenant: "acme", now: clock.now() + 100 });
    assert.deepEqual(acme.map((s) => [s.queue, s.open, s.oldestRequestedAt]), [[
      "disputes",
      1,
      T0 + 30,
    ]]);
    await store.workItemNext({ queue: "disputes", person: "ada", now: T0 + 100, leaseMs: HOUR });
    const claimed = await store.workItemsSummary({ now: T0 + 200 });
    assert.equal(claimed[0]!.claimed, 1);
    assert.notEqual(claimed[0]!.marker, before[0]!.marker, "a claim moves the marker");
    assert.equal(claimed[1]!.marker, before[1]!.marker, "another queue's marker stays");
    const expired = await store.workItemsSummary({ now: T0 + 100 + HOUR });
    assert.equal(expired[0]!.claimed, 0, "an expired claim is not counted, cleared or not");
    await store.workItemRelease({ queue: "disputes", key: "a", person: "ada", now: T0 + 300 });
    await store.workItemNext({ queue: "disputes", person: "bob", now: T0 + 400, leaseMs: HOUR });
    const moved = await store.workItemsSummary({ now: T0 + 500 });
    assert.equal(moved[0]!.claimed, 1);
    assert.notEqual(moved[0]!.marker, claimed[0]!.marker, "a claim handed on moves the marker");
  });

  test("a queue's stats: open, claimed, expired claims, the oldest open, and the median lead time of the last day", async ({ store }) => {
    const now = T0 + 2 * DAY;
    const empty = await store.workQueueStanding({ queue: "disputes", now, since: now - DAY });
    assert.deepEqual(empty, {
      open: 0,
      claimed: 0,
      expired: 0,
      oldestRequestedAt: null,
      done: 0,
      leadMedianMs: null,
    });
    // Four done with lead times 1h, 2h, 4h and 10h, the last three in the last day;
    // one done two days ago does not count.
    const leads = [[0, 1], [DAY + 1, 2], [DAY + 2, 4], [DAY + 3, 10]];
    for (const [i, [at, hours]] of leads.entries()) {
      const key = `done${i}`;
      await add(store, "disputes", key, T0 + at!);
      const done = await store.workItemDo({
        queue: "disputes",
        key,
        person: "ada",
        action: "refund",
        job: actionJob("disputes", key, "refund", T0 + at! + hours! * HOUR),
        needClaim: false,
        fence: null,
        reason: null,
        now: T0 + at! + hours! * HOUR,
      });
      assert.ok(done.ok, key);
    }
    // Open: one claimed and current, one whose claim expired, one free; another queue's item.
    await add(store, "disputes", "held", now - 3 * HOUR);
    await add(store, "disputes", "lapsed", now - 5 * HOUR);
    await add(store, "disputes", "free", now - HOUR);
    await add(store, "reviews", "elsewhere", T0);
    const claim = (key: string, at: number) =>
      store.workItemClaim({ queue: "disputes", key, person: "bo", now: at, leaseMs: HOUR });
    assert.ok((await claim("held", now - 10 * 60_000)).ok);
    assert.ok((await claim("lapsed", now - 2 * HOUR)).ok);
    const stats = await store.workQueueStanding({ queue: "disputes", now, since: now - DAY });
    assert.deepEqual(stats, {
      open: 3,
      claimed: 1,
      expired: 1,
      oldestRequestedAt: now - 5 * HOUR,
      done: 3,
      leadMedianMs: 4 * HOUR,
    });
    // An even count: the mean of the middle two.
    const wider = await store.workQueueStanding({ queue: "disputes", now, since: 0 });
    assert.equal(wider.done, 4);
    assert.equal(wider.leadMedianMs, 3 * HOUR);
    assert.equal(
      (await store.workQueueStanding({ queue: "disputes", tenant: "acme", now, since: 0 })).open,
      0,
      "another tenant's scope sees none",
    );
  });
}
