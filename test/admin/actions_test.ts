/**
 * The action table (`src/admin/actions.ts`): every action the code audits
 * is in it (the doors' by type, `audit` taking only its actions; the raw
 * statements of `migrate-store` by this test's reading of the source), and
 * who may take what.
 */

import assert from "node:assert/strict";
import { ACTIONS, type AdminAction, mayTake } from "../../src/admin/actions.ts";
import { ROLES } from "../../src/admin/roles.ts";

Deno.test("every action a statement audits directly is in the action table", async () => {
  const found = new Set<string>();
  for (const file of ["transfer.ts"]) {
    const text = await Deno.readTextFile(new URL(`../../src/store/${file}`, import.meta.url));
    for (const m of text.matchAll(/INSERT INTO audit[^;`]*?'([a-z_]+\.[a-z_]+)'/g)) {
      found.add(m[1]!);
    }
  }
  assert.deepEqual([...found], ["store.moved"]);
  for (const action of found) assert.ok(action in ACTIONS, `${action} is not in ACTIONS`);
});

Deno.test("who may take what: a viewer reads, an operator acts, an admin manages, the host alone migrates", () => {
  const may = (roles: string[], action: AdminAction) => mayTake(roles, action);
  assert.equal(may(["viewer"], "job.retry"), false);
  assert.equal(may(["operator"], "job.retry"), true);
  assert.equal(may(["operator"], "token.create"), false);
  assert.equal(may(["admin"], "token.create"), true);
  assert.equal(may(["approver"], "queue.pause"), false);
  for (const action of ["store.migrate", "store.prune", "store.moved"] as const) {
    assert.equal(may([...ROLES], action), false, `${action} is the host's alone`);
  }
  assert.equal(
    may(["finance"], "job.retry"),
    false,
    "a role this code does not know grants nothing",
  );
  for (const [action, roles] of Object.entries(ACTIONS)) {
    for (const role of roles) assert.ok((ROLES as readonly string[]).includes(role), action);
  }
});
