/**
 * `GET /api/v1/audit` on every backend: newest first with keyset pages, one
 * target, actor or action, and a tenant's principal reading its own jobs' rows only.
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, threeTenants } from "./api_support.ts";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: GET /api/v1/audit pages newest first; a tenant's principal reads its jobs' rows only`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const viewer = await api.token("reader", ["viewer"]);
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const all = await api.call("GET", "/api/v1/audit", viewer);
    assert.equal(all.status, 200);
    // Two token.create rows, then the three enqueues, newest first.
    assert.deepEqual(all.json.audit.map((r: { target: string }) => r.target), [
      "token:acme-ops",
      "token:reader",
      `job:${ids.none}`,
      `job:${ids.globex}`,
      `job:${ids.acme}`,
    ]);
    assert.match(all.json.audit[0].at, /^\d{4}-/);
    const first = await api.call("GET", "/api/v1/audit?limit=2", viewer);
    assert.equal(first.json.audit.length, 2);
    const rest = await api.call("GET", `/api/v1/audit?limit=10&after=${first.json.next}`, viewer);
    assert.equal(rest.json.audit.length, 3);
    assert.equal(rest.json.next, null);
    const one = await api.call("GET", `/api/v1/audit?target=job:${ids.globex}`, viewer);
    assert.deepEqual(one.json.audit.map((r: { action: string }) => r.action), ["job.enqueue"]);
    const created = await api.call("GET", "/api/v1/audit?action=token.create", viewer);
    assert.deepEqual(created.json.audit.map((r: { target: string }) => r.target), [
      "token:acme-ops",
      "token:reader",
    ]);
    const actor = all.json.audit[0].actor;
    const byActor = await api.call(
      "GET",
      `/api/v1/audit?${new URLSearchParams({ actor, action: "token.create", limit: "1" })}`,
      viewer,
    );
    assert.deepEqual(byActor.json.audit.map((r: { target: string }) => r.target), [
      "token:acme-ops",
    ]);
    const nobody = await api.call("GET", "/api/v1/audit?actor=nobody", viewer);
    assert.deepEqual(nobody.json.audit, []);

    const scoped = await api.call("GET", "/api/v1/audit", acme);
    assert.deepEqual(scoped.json.audit.map((r: { target: string }) => r.target), [
      `job:${ids.acme}`,
    ]);
    const other = await api.call("GET", `/api/v1/audit?target=job:${ids.globex}`, acme);
    assert.deepEqual(other.json.audit, []);
    assert.equal((await api.call("GET", "/api/v1/audit?tenant=globex", acme)).status, 400);
  });
}
