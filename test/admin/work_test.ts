/**
 * The door of work queues (`src/admin/work.ts`) by claim mode: on an
 * `optional` queue a hold refuses another's action until it is broken with
 * a reason (audited, in the history); on `disabled` no claim is taken and
 * actions need none; a role the queue names may work it, another may not;
 * an expired claim lets the next person act. Each change has its audit row
 * naming the person and the door.
 */

import assert from "node:assert/strict";
import {
  claimWorkItem,
  doWorkItem,
  nextWorkItem,
  type WorkActor,
  workActor,
  WorkRefused,
} from "../../src/admin/work.ts";
import { addWorkItem } from "../../src/admin/work.ts";
import { FakeClock } from "../../src/clock.ts";
import type { Store } from "../../src/store/store.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import type { ClaimMode } from "../../src/workqueue/types.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";

const T0 = Date.UTC(2026, 11, 6);

function queue(claim: ClaimMode, roles: string[] = []) {
  return compileWorkQueue({
    id: `reviews-${claim}`,
    claim,
    leaseMs: 60_000,
    actions: [{ id: "approve", run: { kind: "worker", worker: "approve_review" } }],
    roles,
  });
}

async function people(store: Store, clock: FakeClock) {
  for (
    const [name, roles] of [["ada", ["admin"]], ["bob", ["admin"]], ["val", ["viewer"]], [
      "apu",
      ["approver"],
    ]] as const
  ) {
    await store.principalInsert({
      principal: { kind: "person", name, roles: [...roles], secretHash: "x", createdBy: "test" },
      now: clock.now(),
    });
  }
  return (name: string, reason: string | null = null): Promise<WorkActor> =>
    workActor(store, name, { door: "console", reason, now: clock.now() });
}

async function refusedWith(promise: Promise<unknown>, code: WorkRefused["code"]) {
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof WorkRefused, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  });
}

Deno.test("optional: a hold refuses another's action until broken with a reason, audited", async () => {
  const clock = new FakeClock(T0);
  const store = await openSqliteStore(":memory:", { now: T0 });
  try {
    const as = await people(store, clock);
    const q = queue("optional");
    await addWorkItem(store, q, { key: "r1", data: {} }, await as("ada"));
    const held = await claimWorkItem(store, q, "r1", await as("ada"));
    assert.equal(held.claim?.owner, "ada");
    await refusedWith(doWorkItem(store, q, "r1", "approve", await as("bob")), "work-item-held");
    const done = await doWorkItem(store, q, "r1", "approve", await as("bob", "ada is on leave"), {
      breakReason: "ada is on leave",
    });
    assert.equal(done.item.state, "done");
    assert.equal(done.item.doneBy, "bob");
    const history = await store.workItemEvents({ queue: q.id, key: "r1" });
    assert.deepEqual(history.map((e) => [e.kind, e.actor]), [
      ["added", "ada"],
      ["claimed", "ada"],
      ["broken", "bob"],
      ["done", "bob"],
    ]);
    const trail = await store.auditList({ target: `work:${q.id}/r1` });
    assert.deepEqual(trail.map((a) => [a.action, a.actor, a.details.door]), [
      ["work.add", "ada", "console"],
      ["work.claim", "ada", "console"],
      ["work.do", "bob", "console"],
    ]);
  } finally {
    await store.close();
  }
});

Deno.test("disabled: no claims; an action needs none", async () => {
  const clock = new FakeClock(T0);
  const store = await openSqliteStore(":memory:", { now: T0 });
  try {
    const as = await people(store, clock);
    const q = queue("disabled");
    await addWorkItem(store, q, { key: "r1", data: {} }, await as("ada"));
    await refusedWith(claimWorkItem(store, q, "r1", await as("ada")), "work-claims-disabled");
    await refusedWith(nextWorkItem(store, q, await as("ada")), "work-claims-disabled");
    const done = await doWorkItem(store, q, "r1", "approve", await as("bob"));
    assert.equal(done.item.outcome, "approve");
  } finally {
    await store.close();
  }
});

Deno.test("required: a role the queue names may work it; an expired claim lets the next person act", async () => {
  const clock = new FakeClock(T0);
  const store = await openSqliteStore(":memory:", { now: T0 });
  try {
    const as = await people(store, clock);
    const q = queue("required", ["approver"]);
    await addWorkItem(store, q, { key: "r1", data: {} }, await as("ada"));
    await refusedWith(nextWorkItem(store, q, await as("val")), "work-forbidden");
    const mine = await nextWorkItem(store, q, await as("apu"));
    assert.equal(mine?.key, "r1");
    await refusedWith(doWorkItem(store, q, "r1", "approve", await as("ada")), "work-item-held");
    clock.advance(60_001);
    await refusedWith(
      doWorkItem(store, q, "r1", "approve", await as("apu"), { fence: mine!.claim!.fence }),
      "work-claim-stale",
    );
    const taken = await claimWorkItem(store, q, "r1", await as("ada"));
    const done = await doWorkItem(store, q, "r1", "approve", await as("ada"));
    assert.equal(done.item.doneBy, "ada");
    assert.equal(taken.claim!.fence, mine!.claim!.fence + 1);
    await refusedWith(
      doWorkItem(store, q, "r1", "reject", await as("ada")),
      "work-action-unknown",
    );
    await refusedWith(
      workActor(store, "nobody", { door: "api", now: clock.now() }),
      "work-person-unknown",
    );
  } finally {
    await store.close();
  }
});
