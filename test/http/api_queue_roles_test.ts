/**
 * A work queue's role opens no route of `/api/v1` outside the work queues:
 * a token holding only `support` is refused (403) on every route the router
 * registers but those of work queues, which read the role against the
 * queue's `roles:` themselves: such a token lists, takes and acts on the
 * items of a queue naming its role, and is refused (`work-forbidden`) on
 * another's.
 */

import assert from "node:assert/strict";
import { routeKey } from "../../src/http/access.ts";
import { registeredRoutes } from "../../src/http/api/app.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness } from "./api_support.ts";

/**
 * Work queues' routes decide by the queue's roles, not by the route table
 * alone: those of `/api/v1/work`, and the request of a bulk's code (the
 * door finds the queue by the manifest).
 */
const WORK_ROUTES = /^\S+ \/api\/v1\/(?:work(?:[/-]|$)|bulk\/:manifest\/request$)/;

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a support token gets 403 on every /api/v1 route outside work queues`, async () => {
    await using api = await apiHarness(backend);
    const support = await api.token("helpdesk", ["support"]);
    const viewer = await api.token("reader", ["viewer"]);
    const routes = registeredRoutes(api.app).filter((key) => !WORK_ROUTES.test(key));
    assert.ok(routes.length > 30, `only ${routes.length} routes`);
    for (const key of routes) {
      const [method, pattern] = key.split(" ") as [string, string];
      const path = pattern.replaceAll(/:(\w+)/g, "x1");
      const body = method === "GET" ? undefined : {};
      const answer = await api.call(method, path, support, body);
      assert.equal(answer.status, 403, `${key}: ${answer.text}`);
      assert.match(answer.json?.error?.code ?? "", /^(role-required|forbidden)$/, key);
    }
    // The refusals are the role's: a built-in role on the same credential path passes.
    assert.equal((await api.call("GET", "/api/v1/me", viewer)).status, 200);
    assert.ok(routes.includes(routeKey("GET", "/api/v1/me")));
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a support token works the queue whose roles name it, and no other`, async () => {
    const dir = await Deno.makeTempDir();
    const disputes = compileWorkQueue({
      id: "disputes",
      claim: "required",
      leaseMs: 3_600_000,
      actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
      bulk: [{
        id: "refund-all",
        action: "refund",
        money: { amount: "amount", currency: "currency" },
        confirmBy: {
          command: ["/bin/sh", "-c", `printf '%s' "$JOBS_CONFIRM_CODE" > ${dir}/code`],
        },
        secondPerson: true,
      }],
      roles: ["support"],
    });
    const payouts = compileWorkQueue({
      id: "payouts",
      claim: "required",
      leaseMs: 3_600_000,
      actions: [{ id: "pay", run: { kind: "worker", worker: "pay_out" } }],
    });
    await using api = await apiHarness(backend, {
      definitions: () => ({ workflows: [], pipelines: [], workQueues: [disputes, payouts] }),
    });
    const admin = await api.token("ops", ["admin"]);
    const support = await api.token("helpdesk", ["support"]);
    for (const queue of ["disputes", "payouts"]) {
      const added = await api.call("POST", `/api/v1/work/${queue}/items`, admin, { key: "k1" });
      assert.equal(added.status, 200, added.text);
    }
    // Adding stays the operators' and admins'.
    const add = await api.call("POST", "/api/v1/work/disputes/items", support, { key: "k2" });
    assert.equal(add.status, 403, add.text);
    assert.equal(add.json.error.code, "role-required");

    const listed = await api.call("GET", "/api/v1/work/disputes/items", support);
    assert.equal(listed.status, 200, listed.text);
    const next = await api.call("POST", "/api/v1/work/disputes/next", support, {});
    assert.equal(next.status, 200, next.text);
    assert.equal(next.json.item.claim.owner, "token:helpdesk");
    const done = await api.call("POST", "/api/v1/work/disputes/items/k1/actions/refund", support, {
      reason: "charged twice",
    });
    assert.equal(done.status, 200, done.text);

    // Whoever works the queue previews its bulk money and asks for the
    // code; confirming stays an approver's (a person's).
    for (const key of ["k3", "k4"]) {
      const added = await api.call("POST", "/api/v1/work/disputes/items", admin, {
        key,
        data: { amount: "12", currency: "EUR" },
      });
      assert.equal(added.status, 200, added.text);
    }
    const preview = await api.call(
      "POST",
      "/api/v1/work/disputes/bulk/refund-all/preview",
      support,
      { keys: ["k3", "k4"] },
    );
    assert.equal(preview.status, 200, preview.text);
    assert.deepEqual(preview.json.totals, { EUR: "24" });
    const asked = await api.call(
      "POST",
      `/api/v1/bulk/${preview.json.manifest}/request`,
      support,
      {},
    );
    assert.equal(asked.status, 200, asked.text);
    assert.equal(asked.json.requester, "token:helpdesk");
    const code = await Deno.readTextFile(`${dir}/code`);
    const confirm = await api.call(
      "POST",
      `/api/v1/bulk/${preview.json.manifest}/confirm`,
      support,
      { code },
    );
    assert.equal(confirm.status, 403, confirm.text);
    assert.equal(confirm.json.error.code, "role-required");
    await Deno.remove(dir, { recursive: true });

    for (
      const [method, path] of [
        ["GET", "/api/v1/work/payouts/items"],
        ["GET", "/api/v1/work/payouts/items/k1"],
        ["POST", "/api/v1/work/payouts/next"],
        ["POST", "/api/v1/work/payouts/items/k1/claim"],
        ["POST", "/api/v1/work/payouts/bulk/release/preview"],
      ] as const
    ) {
      const refused = await api.call(method, path, support, method === "GET" ? undefined : {});
      assert.equal(refused.status, 403, `${method} ${path}: ${refused.text}`);
      assert.equal(refused.json.error.code, "work-forbidden", path);
    }
  });
}
