/**
 * A work queue's roles (`roles: [support]`): a person or a token may hold
 * one beyond the four built-in roles, a typo of a built-in one is refused,
 * and the role lets its holder work (claim, next, release, skip, do) the
 * queues that name it and nothing else, on every backend.
 */

import assert from "node:assert/strict";
import { ACTIONS, type AdminAction, mayTake } from "../../src/admin/actions.ts";
import { addPerson, setPerson } from "../../src/admin/people.ts";
import { checkRoles, PrincipalRefused } from "../../src/admin/roles.ts";
import { createToken } from "../../src/admin/tokens.ts";
import {
  addWorkItem,
  claimWorkItem,
  doWorkItem,
  mayWork,
  nextWorkItem,
  releaseWorkItem,
  skipWorkItem,
  workActor,
  WorkRefused,
} from "../../src/admin/work.ts";
import { FakeClock } from "../../src/clock.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { BACKENDS } from "../support/backends.ts";

function queue(id: string, roles: string[]) {
  return compileWorkQueue({
    id,
    claim: "required",
    leaseMs: 60_000,
    actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
    roles,
  });
}

const root = (now: number) => ({ actor: "root", reason: null, now });

Deno.test("checkRoles() takes a work queue's role by its rule and refuses a built-in role's typo", () => {
  assert.deepEqual(checkRoles(["support", "viewer", "support"]), ["support", "viewer"]);
  assert.deepEqual(checkRoles(["finance-review", "tier_2"]), ["finance-review", "tier_2"]);
  for (
    const [role, message] of [
      [
        "admn",
        /^"admn" is not a role \(viewer, operator, approver, admin\); did you mean "admin"\?$/,
      ],
      ["opertor", /"opertor" is not a role .*did you mean "operator"/],
      ["viewers", /"viewers" is not a role .*did you mean "viewer"/],
      ["Support", /"Support" is not a role \(.*, or a work queue's: a lowercase letter/],
      ["support team", /"support team" is not a role/],
      ["2nd-line", /"2nd-line" is not a role/],
      ["x".repeat(41), /is not a role/],
    ] as const
  ) {
    assert.throws(() => checkRoles([role]), (error: Error) => {
      assert.ok(error instanceof PrincipalRefused);
      assert.equal(error.why, "bad-role");
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("mayWork() lets a queue's role work the queues naming it, and take nothing else", () => {
  const named = queue("disputes", ["support"]);
  const other = queue("payouts", []);
  const working: AdminAction[] = ["work.claim", "work.release", "work.skip", "work.do"];
  for (const action of working) {
    assert.ok(mayWork(named, ["support"], action), action);
    assert.ok(!mayWork(other, ["support"], action), action);
    assert.ok(mayWork(other, ["admin"], action), action);
    assert.ok(!mayWork(named, ["supporter"], action), action);
  }
  for (const action of ["work.add", "work.reassign", "work.rescore"] as const) {
    assert.ok(!mayWork(named, ["support"], action), action);
  }
  // The action table names built-in roles only: a queue's role takes no action of it.
  for (const action of Object.keys(ACTIONS) as AdminAction[]) {
    assert.ok(!mayTake(["support"], action), action);
  }
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a support person works a queue naming support, and no other`, async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 6));
    const h = await backend.open(clock.now());
    try {
      const store = h.store;
      await addPerson(
        store,
        { name: "sam", roles: ["support"], password: "pw" },
        root(clock.now()),
        "host",
      );
      await addPerson(
        store,
        { name: "ada", roles: ["admin"], password: "pw" },
        root(clock.now()),
        "host",
      );
      const token = await createToken(
        store,
        { name: "helpdesk", roles: ["support"], expiresInMs: null },
        root(clock.now()),
        "host",
      );
      assert.deepEqual(token.token.roles, ["support"]);
      const changed = await setPerson(store, "ada", { roles: ["admin", "support"] }, root(0));
      assert.deepEqual(changed.roles, ["admin", "support"]);

      const disputes = queue("disputes", ["support"]);
      const payouts = queue("payouts", []);
      const as = (name: string) => workActor(store, name, { door: "cli", now: clock.now() });
      const sam = await as("sam");
      assert.deepEqual(sam.roles, ["support"]);
      for (const q of [disputes, payouts]) {
        for (const key of ["a", "b", "c"]) {
          await addWorkItem(store, q, { key, data: {} }, await as("ada"));
        }
      }
      // Adding stays with operators and admins.
      await assert.rejects(
        addWorkItem(store, disputes, { key: "z", data: {} }, sam),
        (e: Error) => e instanceof WorkRefused && e.code === "work-forbidden",
      );
      const next = await nextWorkItem(store, disputes, sam);
      assert.equal(next?.claim?.owner, "sam");
      await releaseWorkItem(store, disputes, next!.key, sam);
      await claimWorkItem(store, disputes, "b", sam);
      const done = await doWorkItem(store, disputes, "b", "refund", sam);
      assert.equal(done.item.doneBy, "sam");
      await claimWorkItem(store, disputes, "c", sam);
      await skipWorkItem(store, disputes, "c", sam);

      const refusals = [
        nextWorkItem(store, payouts, sam),
        claimWorkItem(store, payouts, "a", sam),
        releaseWorkItem(store, payouts, "a", sam),
        skipWorkItem(store, payouts, "a", sam),
        doWorkItem(store, payouts, "a", "refund", sam),
      ];
      for (const refusal of refusals) {
        await assert.rejects(refusal, (e: Error) => {
          assert.ok(e instanceof WorkRefused, String(e));
          assert.equal(e.code, "work-forbidden");
          return true;
        });
      }
      const untouched = await store.workItemGet({ queue: "payouts", key: "a" });
      assert.equal(untouched?.claimOwner, null);
      assert.equal(untouched?.state, "open");
    } finally {
      await h.close();
    }
  });
}
