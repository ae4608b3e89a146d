/**
 * `/api/v1`'s actions on jobs on every backend: enqueue, retry, cancel and
 * discard through the doors the command line uses, each audit row naming
 * the principal; a viewer refused with the role named; a tenant's operator
 * unable to touch another tenant's job (404) or to name a tenant (400); and
 * bodies refused when too large, too deep or not JSON.
 */

import assert from "node:assert/strict";
import { MAX_BODY_BYTES } from "../../src/http/api/app.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN, threeTenants } from "./api_support.ts";

const ACTIONS = ["retry", "cancel", "discard"] as const;

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer reads and gets 403 naming the role on every action`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const viewer = await api.token("reader", ["viewer"]);
    assert.equal((await api.call("GET", `/api/v1/jobs/${ids.acme}`, viewer)).status, 200);
    const enqueue = await api.call("POST", "/api/v1/jobs", viewer, { worker: "send" });
    assert.equal(enqueue.status, 403);
    assert.equal(enqueue.json.error.code, "role-required");
    assert.match(enqueue.json.error.message, /"operator"/);
    for (const action of ACTIONS) {
      const refused = await api.call("POST", `/api/v1/jobs/${ids.acme}/${action}`, viewer, {
        reason: "vendor outage",
      });
      assert.equal(refused.status, 403, action);
      assert.match(refused.json.error.message, /"operator"/);
    }
    assert.equal((await api.store.jobGet({ id: ids.acme }))?.state, "available");
  });

  Deno.test(`${backend.name}: POST /api/v1/jobs enqueues in the principal's tenant, audited with its name`, async () => {
    await using api = await apiHarness(backend);
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const made = await api.call("POST", "/api/v1/jobs", acme, {
      worker: "send",
      args: { to: "x@acme.test" },
      queue: "mail",
      tags: ["api"],
    });
    assert.equal(made.status, 201);
    const job = await api.store.jobGet({ id: made.json.id });
    assert.equal(job?.tenant, "acme");
    assert.equal(job?.queue, "mail");
    const [row] = await api.store.auditList({ target: `job:${made.json.id}` });
    assert.equal(row?.actor, "token:acme-ops");
    assert.equal(row?.action, "job.enqueue");

    const named = await api.call("POST", "/api/v1/jobs", acme, {
      worker: "send",
      tenant: "globex",
    });
    assert.equal(named.status, 400);
    assert.match(named.json.error.message, /unknown field "tenant"/);
    const bad = await api.call("POST", "/api/v1/jobs", acme, { worker: "" });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, "body-invalid");
    const old = await api.call("POST", "/api/v1/jobs", INSTALL_TOKEN, { worker: "send" });
    assert.equal(old.status, 201);
    assert.equal((await api.store.jobGet({ id: old.json.id }))?.tenant, null);
    const [oldRow] = await api.store.auditList({ target: `job:${old.json.id}` });
    assert.equal(oldRow?.actor, "token:installation");
  });

  Deno.test(`${backend.name}: retry, cancel and discard act through the CLI's doors, audited with the principal`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const ops = await api.token("night-ops", ["operator"]);
    const cancel = await api.call("POST", `/api/v1/jobs/${ids.acme}/cancel`, ops, {
      reason: "customer asked",
    });
    assert.equal(cancel.status, 200);
    assert.deepEqual(cancel.json, { id: ids.acme, action: "cancel", was: "available" });
    assert.equal((await api.store.jobGet({ id: ids.acme }))?.state, "cancelled");
    const again = await api.call("POST", `/api/v1/jobs/${ids.acme}/cancel`, ops, {
      reason: "customer asked",
    });
    assert.equal(again.status, 409);
    assert.equal(again.json.error.code, "not-applicable");
    const retry = await api.call("POST", `/api/v1/jobs/${ids.acme}/retry`, ops, {
      reason: "customer changed their mind",
    });
    assert.equal(retry.status, 200);
    assert.equal((await api.store.jobGet({ id: ids.acme }))?.state, "available");
    const discard = await api.call("POST", `/api/v1/jobs/${ids.none}/discard`, ops, {
      reason: "duplicate bill",
    });
    assert.equal(discard.status, 200);
    const rows = await api.store.auditList({ target: `job:${ids.acme}` });
    assert.deepEqual(
      rows.map((r) => [r.action, r.actor, r.reason]),
      [
        ["job.enqueue", "root", null],
        ["job.cancel", "token:night-ops", "customer asked"],
        ["job.retry", "token:night-ops", "customer changed their mind"],
      ],
    );
    const placeholder = await api.call("POST", `/api/v1/jobs/${ids.none}/retry`, ops, {
      reason: "TODO",
    });
    assert.equal(placeholder.status, 400);
    assert.equal(placeholder.json.error.code, "reason-invalid");
    assert.equal((await api.call("POST", `/api/v1/jobs/${ids.none}/retry`, ops, {})).status, 400);
  });

  Deno.test(`${backend.name}: an acme operator cannot see or act on globex's job through any jobs route`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const acme = await api.token("acme-ops", ["operator"], "acme");
    for (const id of [ids.globex, ids.none]) {
      assert.equal((await api.call("GET", `/api/v1/jobs/${id}`, acme)).status, 404);
      for (const action of ACTIONS) {
        const refused = await api.call("POST", `/api/v1/jobs/${id}/${action}`, acme, {
          reason: "not mine",
        });
        assert.equal(refused.status, 404, `${action} ${id}`);
        assert.equal(refused.json.error.code, "job-not-found");
      }
    }
    const listed = await api.call("GET", "/api/v1/jobs?state=available", acme);
    assert.deepEqual(listed.json.jobs.map((j: { id: number }) => j.id), [ids.acme]);
    assert.equal((await api.store.jobGet({ id: ids.globex }))?.state, "available");
    assert.equal((await api.store.auditList({ target: `job:${ids.globex}` })).length, 1);
    const mine = await api.call("POST", `/api/v1/jobs/${ids.acme}/discard`, acme, {
      reason: "wrong address",
    });
    assert.equal(mine.status, 200);
  });

  Deno.test(`${backend.name}: bodies too large, too deep or not JSON are refused before any change`, async () => {
    await using api = await apiHarness(backend);
    const ops = await api.token("ops", ["operator"]);
    const huge = await api.call("POST", "/api/v1/jobs", ops, undefined, {
      raw: JSON.stringify({ worker: "send", args: { blob: "x".repeat(MAX_BODY_BYTES) } }),
    });
    assert.equal(huge.status, 413);
    assert.equal(huge.json.error.code, "body-too-large");
    const deep = await api.call("POST", "/api/v1/jobs", ops, undefined, {
      raw: `{"worker":"send","args":${"[".repeat(100)}${"]".repeat(100)}}`,
    });
    assert.equal(deep.status, 400);
    assert.equal(deep.json.error.code, "body-too-deep");
    for (const raw of ["", "{", "nul", "\xff"]) {
      const broken = await api.call("POST", "/api/v1/jobs", ops, undefined, { raw });
      assert.equal(broken.status, 400, JSON.stringify(raw));
    }
    assert.deepEqual(await api.store.jobsList({}), []);
  });
}
