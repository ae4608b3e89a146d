/**
 * `/api/v1/jobs` on every backend: listing with the filters of `jobs ls`
 * and keyset pages, one job as `jobs show --json` gives it, args redacted,
 * and a tenant's principal kept to its tenant's jobs (another tenant's job
 * is 404, a tenant in the query is refused).
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, threeTenants } from "./api_support.ts";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: GET /api/v1/jobs lists with filters and keyset pages, args redacted`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const viewer = await api.token("reader", ["viewer"]);
    const all = await api.call("GET", "/api/v1/jobs", viewer);
    assert.equal(all.status, 200);
    assert.deepEqual(all.json.jobs.map((j: { id: number }) => j.id), [
      ids.none,
      ids.globex,
      ids.acme,
    ]);
    assert.equal(all.json.next, null);
    const acme = all.json.jobs.find((j: { id: number }) => j.id === ids.acme);
    assert.equal(acme.args.password, "[REDACTED]");
    assert.equal(acme.tenant, "acme");
    assert.match(acme.insertedAt, /^\d{4}-\d\d-\d\dT/);
    assert.ok(!all.text.includes("hunter2"));

    const first = await api.call("GET", "/api/v1/jobs?limit=2", viewer);
    assert.deepEqual(first.json.jobs.map((j: { id: number }) => j.id), [ids.none, ids.globex]);
    assert.equal(first.json.next, ids.globex);
    const second = await api.call("GET", `/api/v1/jobs?limit=2&after=${first.json.next}`, viewer);
    assert.deepEqual(second.json.jobs.map((j: { id: number }) => j.id), [ids.acme]);
    assert.equal(second.json.next, null);

    const q = async (query: string) =>
      (await api.call("GET", `/api/v1/jobs?${query}`, viewer)).json.jobs.map((j: { id: number }) =>
        j.id
      );
    assert.deepEqual(await q("worker=send"), [ids.globex, ids.acme]);
    assert.deepEqual(await q("queue=money"), [ids.none]);
    assert.deepEqual(await q("tag=mail"), [ids.acme]);
    assert.deepEqual(await q("search=GLOBEX"), [ids.globex]);
    assert.deepEqual(await q("state=available,scheduled"), [ids.none, ids.globex, ids.acme]);
    assert.deepEqual(await q("state=completed"), []);

    const bad = await api.call("GET", "/api/v1/jobs?state=finished", viewer);
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, "query-invalid");
    assert.match(bad.json.error.message, /"state"/);
    assert.equal((await api.call("GET", "/api/v1/jobs?limit=0", viewer)).status, 400);
    assert.equal((await api.call("GET", "/api/v1/jobs?after=-1", viewer)).status, 400);
  });

  Deno.test(`${backend.name}: GET /api/v1/jobs/{id} answers the job with attempts and audit, as jobs show --json`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const viewer = await api.token("reader", ["viewer"]);
    const one = await api.call("GET", `/api/v1/jobs/${ids.acme}`, viewer);
    assert.equal(one.status, 200);
    assert.equal(one.json.job.id, ids.acme);
    assert.equal(one.json.job.args.password, "[REDACTED]");
    assert.deepEqual(one.json.attempts, []);
    assert.deepEqual(one.json.audit.map((a: { action: string }) => a.action), ["job.enqueue"]);
    for (const path of ["/api/v1/jobs/999999", "/api/v1/jobs/abc", "/api/v1/jobs/1e3"]) {
      const missing = await api.call("GET", path, viewer);
      assert.equal(missing.status, 404, path);
      assert.equal(missing.json.error.code, "job-not-found");
    }
  });

  Deno.test(`${backend.name}: an acme principal sees acme's jobs only; globex's are 404, a tenant in the query 400`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const list = await api.call("GET", "/api/v1/jobs", acme);
    assert.deepEqual(list.json.jobs.map((j: { id: number }) => j.id), [ids.acme]);
    assert.deepEqual(
      (await api.call("GET", "/api/v1/jobs?worker=send&search=globex", acme)).json.jobs,
      [],
    );
    assert.equal((await api.call("GET", `/api/v1/jobs/${ids.acme}`, acme)).status, 200);
    for (const id of [ids.globex, ids.none]) {
      const other = await api.call("GET", `/api/v1/jobs/${id}`, acme);
      assert.equal(other.status, 404);
      assert.deepEqual(other.json, {
        error: { code: "job-not-found", message: `no job "${id}"` },
      });
    }
    const named = await api.call("GET", "/api/v1/jobs?tenant=globex", acme);
    assert.equal(named.status, 400);
    assert.match(named.json.error.message, /unknown field "tenant"/);
  });
}
