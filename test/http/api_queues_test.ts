/**
 * `/api/v1/queues` on every backend: a viewer reads the queues view and is
 * refused (403, the role named) pausing or resuming; an operator pauses and
 * resumes through the command line's door, each audit row naming the
 * principal; an unknown queue is 404; and a tenant's principal is refused
 * (403 `installation-scope-required`), since a queue holds every tenant's jobs.
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN, threeTenants } from "./api_support.ts";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer reads /api/v1/queues and gets 403 naming the role on pause and resume`, async () => {
    await using api = await apiHarness(backend);
    await threeTenants(api.store, api.clock.now());
    const viewer = await api.token("reader", ["viewer"]);
    const listed = await api.call("GET", "/api/v1/queues", viewer);
    assert.equal(listed.status, 200);
    const names = listed.json.queues.map((q: { name: string }) => q.name);
    assert.deepEqual(names, ["default", "money"]);
    const money = listed.json.queues.find((q: { name: string }) => q.name === "money");
    assert.equal(money.counts.available, 1);
    assert.equal(money.paused, false);
    assert.equal(money.pause, null);
    for (const action of ["pause", "resume"]) {
      const refused = await api.call("POST", `/api/v1/queues/money/${action}`, viewer, {
        reason: "vendor outage",
      });
      assert.equal(refused.status, 403, action);
      assert.equal(refused.json.error.code, "role-required");
      assert.match(refused.json.error.message, /"operator"/);
    }
    assert.deepEqual(await api.store.queuesList(), []);
  });

  Deno.test(`${backend.name}: an operator pauses and resumes a queue, audited with the token's name`, async () => {
    await using api = await apiHarness(backend);
    await threeTenants(api.store, api.clock.now());
    const ops = await api.token("night-ops", ["operator"]);
    const paused = await api.call("POST", "/api/v1/queues/money/pause", ops, {
      reason: "bank maintenance",
    });
    assert.equal(paused.status, 200);
    assert.deepEqual(paused.json, { queue: "money", paused: true, was: false });
    assert.equal((await api.store.queuesList()).find((q) => q.name === "money")?.paused, true);
    const view = await api.call("GET", "/api/v1/queues", ops);
    const money = view.json.queues.find((q: { name: string }) => q.name === "money");
    assert.equal(money.paused, true);
    assert.equal(money.pause.actor, "token:night-ops");
    assert.equal(money.pause.reason, "bank maintenance");
    assert.equal(typeof money.pause.at, "string");
    const resumed = await api.call("POST", "/api/v1/queues/money/resume", ops, {});
    assert.equal(resumed.status, 200);
    assert.deepEqual(resumed.json, { queue: "money", paused: false, was: true });
    const old = await api.call("POST", "/api/v1/queues/default/pause", INSTALL_TOKEN, {});
    assert.equal(old.status, 200);
    const rows = await api.store.auditList({ target: "queue:money" });
    assert.deepEqual(
      rows.map((r) => [r.action, r.actor, r.reason]),
      [
        ["queue.pause", "token:night-ops", "bank maintenance"],
        ["queue.resume", "token:night-ops", null],
      ],
    );
    const [oldRow] = await api.store.auditList({ target: "queue:default" });
    assert.equal(oldRow?.actor, "token:installation");
    const placeholder = await api.call("POST", "/api/v1/queues/money/pause", ops, {
      reason: "TODO",
    });
    assert.equal(placeholder.status, 400);
    assert.equal(placeholder.json.error.code, "reason-invalid");
    const named = await api.call("POST", "/api/v1/queues/money/pause", ops, {
      tenant: "acme",
    });
    assert.equal(named.status, 400);
  });

  Deno.test(`${backend.name}: pausing an unknown queue is 404 and stores nothing`, async () => {
    await using api = await apiHarness(backend);
    await threeTenants(api.store, api.clock.now());
    const ops = await api.token("ops", ["operator"]);
    for (const action of ["pause", "resume"]) {
      const missing = await api.call("POST", `/api/v1/queues/nowhere/${action}`, ops, {
        reason: "typo",
      });
      assert.equal(missing.status, 404, action);
      assert.equal(missing.json.error.code, "queue-not-found");
    }
    assert.deepEqual(await api.store.queuesList(), []);
    assert.deepEqual(await api.store.auditList({ target: "queue:nowhere" }), []);
  });

  Deno.test(`${backend.name}: a tenant's principal is refused the queues routes (403), nothing changed`, async () => {
    await using api = await apiHarness(backend);
    await threeTenants(api.store, api.clock.now());
    const acmeOps = await api.token("acme-ops", ["operator"], "acme");
    const acmeAdmin = await api.token("acme-admin", ["admin"], "acme");
    for (const secret of [acmeOps, acmeAdmin]) {
      const listed = await api.call("GET", "/api/v1/queues", secret);
      assert.equal(listed.status, 403);
      assert.equal(listed.json.error.code, "installation-scope-required");
      assert.match(listed.json.error.message, /"acme"/);
      for (const action of ["pause", "resume"]) {
        const refused = await api.call("POST", `/api/v1/queues/default/${action}`, secret, {
          reason: "mine",
        });
        assert.equal(refused.status, 403);
        assert.equal(refused.json.error.code, "installation-scope-required");
      }
    }
    assert.deepEqual(await api.store.queuesList(), []);
    assert.deepEqual(await api.store.auditList({ target: "queue:default" }), []);
  });
}
