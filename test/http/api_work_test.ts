/**
 * `/api/v1/work` and `/api/v1/bulk` on both stores: a token works a queue
 * as itself (its claim is `token:<name>`'s, the audit rows name it), an
 * action enqueues its job keyed `<queue>/<item>/<action>`, a held item is
 * 409 with the door's code; a token previews a bulk and asks for its code
 * (which the answer never holds), may not confirm it (403
 * `bulk-confirm-person-only`), and a person holding `approver` confirms
 * what the token asked for.
 */

import assert from "node:assert/strict";
import { confirmWorkBulk } from "../../src/admin/work_bulk.ts";
import { workActor } from "../../src/admin/work.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness } from "./api_support.ts";

function payouts(dir: string) {
  return compileWorkQueue({
    id: "payouts",
    claim: "required",
    leaseMs: 3_600_000,
    actions: [{ id: "pay", run: { kind: "worker", worker: "pay_out" } }],
    bulk: [{
      id: "release",
      action: "pay",
      money: { amount: "amount", currency: "currency" },
      confirmBy: {
        command: ["/bin/sh", "-c", `printf '%s' "$JOBS_CONFIRM_CODE" > ${dir}/code`],
      },
      secondPerson: true,
    }],
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a token works a queue and asks for a bulk code; a person confirms`, async () => {
    const dir = await Deno.makeTempDir();
    const queue = payouts(dir);
    try {
      await using api = await apiHarness(backend, {
        definitions: () => ({ workflows: [], pipelines: [], workQueues: [queue] }),
      });
      const ci = await api.token("ci", ["admin"]);
      const viewer = await api.token("watch", ["viewer"]);
      for (const [key, amount] of [["p1", "10.50"], ["p2", "4"], ["p3", "7"]]) {
        const added = await api.call("POST", "/api/v1/work/payouts/items", ci, {
          key,
          data: { amount, currency: "EUR" },
        });
        assert.equal(added.status, 200, added.text);
        assert.equal(added.json.created, true);
      }
      const listed = await api.call("GET", "/api/v1/work/payouts/items", viewer);
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.json.items.map((i: { key: string }) => i.key), ["p1", "p2", "p3"]);
      assert.equal(
        (await api.call("POST", "/api/v1/work/payouts/next", viewer, {})).json.error.code,
        "role-required",
      );
      const next = await api.call("POST", "/api/v1/work/payouts/next", ci, {});
      assert.equal(next.status, 200, next.text);
      assert.equal(next.json.item.key, "p1");
      assert.equal(next.json.item.claim.owner, "token:ci");
      const ops = await api.token("ops", ["admin"]);
      const held = await api.call("POST", "/api/v1/work/payouts/items/p1/actions/pay", ops, {});
      assert.equal(held.status, 409);
      assert.equal(held.json.error.code, "work-item-held");
      const done = await api.call("POST", "/api/v1/work/payouts/items/p1/actions/pay", ci, {
        reason: "checked the invoice",
      });
      assert.equal(done.status, 200, done.text);
      const job = await api.store.jobGet({ id: done.json.jobId });
      assert.equal(job?.uniqueKey, "payouts/p1/pay");
      const trail = await api.store.auditList({ target: "work:payouts/p1" });
      assert.deepEqual(trail.map((r) => [r.action, r.actor, r.details.door]), [
        ["work.add", "token:ci", "api"],
        ["work.claim", "token:ci", "api"],
        ["work.do", "token:ci", "api"],
      ]);
      const detail = await api.call("GET", "/api/v1/work/payouts/items/p1", viewer);
      assert.deepEqual(detail.json.history.map((e: { kind: string }) => e.kind), [
        "added",
        "claimed",
        "done",
      ]);
      assert.equal(
        (await api.call("GET", "/api/v1/work/nope/items", viewer)).json.error.code,
        "work-queue-unknown",
      );

      const preview = await api.call("POST", "/api/v1/work/payouts/bulk/release/preview", ci, {});
      assert.equal(preview.status, 200, preview.text);
      assert.deepEqual(preview.json.totals, { EUR: "11" });
      const manifest = preview.json.manifest as string;
      const asked = await api.call("POST", `/api/v1/bulk/${manifest}/request`, ci, {});
      assert.equal(asked.status, 200, asked.text);
      assert.equal(asked.json.requester, "token:ci");
      const code = await Deno.readTextFile(`${dir}/code`);
      assert.match(code, /^\d{6}$/);
      assert.equal(asked.text.includes(code), false, "the code is never in an answer");
      const refused = await api.call("POST", `/api/v1/bulk/${manifest}/confirm`, ci, { code });
      assert.equal(refused.status, 403);
      assert.equal(refused.json.error.code, "bulk-confirm-person-only");

      await api.store.principalInsert({
        principal: {
          kind: "person",
          name: "bob",
          roles: ["approver"],
          secretHash: "x",
          createdBy: "t",
        },
        now: api.clock.now(),
      });
      const bob = await workActor(api.store, "bob", { door: "console", now: api.clock.now() });
      const run = await confirmWorkBulk(api.store, api, [queue], { manifest, code }, bob);
      assert.deepEqual(run.outcomes.map((o) => [o.key, o.ok]), [["p2", true], ["p3", true]]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
