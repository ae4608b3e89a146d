/**
 * `GET /api/v1/nodes` and `GET /api/v1/status` on every backend: every role
 * reads them, in the shapes of `jobs status --json` (nodes with their
 * heartbeat age, the maintenance leader, the store's health, queues with
 * their counts); a tenant's principal is refused (403
 * `installation-scope-required`), since both show every tenant's work.
 */

import assert from "node:assert/strict";
import { MAINTENANCE_ROLE } from "../../src/runtime/leadership.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, threeTenants } from "./api_support.ts";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer reads /api/v1/nodes: each node's heartbeat, stale ones flagged, and the leader`, async () => {
    await using api = await apiHarness(backend);
    const now = api.clock.now();
    await api.store.nodeBeat({ node: "node-a", queues: { mail: 2 }, now: now - 1_000 });
    await api.store.nodeBeat({
      node: "node-b",
      queues: {},
      environment: "prod",
      now: now - 60_000,
    });
    await api.store.leaderTake({ name: MAINTENANCE_ROLE, node: "node-a", now, ttlMs: 30_000 });
    const viewer = await api.token("reader", ["viewer"]);
    const nodes = await api.call("GET", "/api/v1/nodes", viewer);
    assert.equal(nodes.status, 200);
    assert.deepEqual(
      nodes.json.nodes.map((n: Record<string, unknown>) => [
        n.node,
        n.queues,
        n.environment,
        n.heartbeatAgeMs,
        n.stale,
      ]),
      [["node-a", { mail: 2 }, null, 1_000, false], ["node-b", {}, "prod", 60_000, true]],
    );
    assert.equal(nodes.json.nodes[0].heartbeatAt, new Date(now - 1_000).toISOString());
    assert.deepEqual(nodes.json.leader, {
      node: "node-a",
      acquiredAt: new Date(now).toISOString(),
      expiresAt: new Date(now + 30_000).toISOString(),
      expired: false,
    });
  });

  Deno.test(`${backend.name}: a viewer reads /api/v1/status as jobs status --json shows it`, async () => {
    await using api = await apiHarness(backend);
    await threeTenants(api.store, api.clock.now());
    await api.store.nodeBeat({ node: "node-a", queues: { money: 1 }, now: api.clock.now() });
    const viewer = await api.token("reader", ["viewer"]);
    const status = await api.call("GET", "/api/v1/status", viewer);
    assert.equal(status.status, 200);
    assert.deepEqual(Object.keys(status.json), [
      "now",
      "store",
      "queues",
      "nodes",
      "schedules",
      "pipelines",
      "leader",
    ]);
    assert.equal(status.json.now, new Date(api.clock.now()).toISOString());
    assert.equal(status.json.store.kind, backend.name);
    assert.equal(status.json.store.reachable, true);
    assert.equal(status.json.store.schemaVersion, status.json.store.knownVersion);
    assert.equal(status.json.store.error, null);
    assert.ok(!/postgres:\/\/[^@/]*:[^@/]*@/.test(status.text), "no credentials");
    const money = status.json.queues.find((q: { name: string }) => q.name === "money");
    assert.equal(money.counts.available, 1);
    assert.deepEqual(money.nodes, { "node-a": 1 });
    assert.deepEqual(status.json.nodes.map((n: { node: string }) => n.node), ["node-a"]);
    assert.deepEqual(status.json.schedules, []);
    assert.deepEqual(status.json.pipelines, []);
    assert.equal(status.json.leader, null);
  });

  Deno.test(`${backend.name}: a tenant's principal is refused /api/v1/nodes and /api/v1/status (403)`, async () => {
    await using api = await apiHarness(backend);
    await threeTenants(api.store, api.clock.now());
    const acme = await api.token("acme-admin", ["admin"], "acme");
    for (const path of ["/api/v1/nodes", "/api/v1/status"]) {
      const refused = await api.call("GET", path, acme);
      assert.equal(refused.status, 403, path);
      assert.equal(refused.json.error.code, "installation-scope-required");
      assert.match(refused.json.error.message, /"acme"/);
    }
  });
}
