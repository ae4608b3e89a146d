/**
 * `POST /api/v1/jobs/batch` on every backend: 1 to 1000 jobs in one
 * transaction, ids in request order, every job in the principal's tenant
 * and audited with its name; one bad job refuses the whole batch (400
 * naming its index) and nothing is inserted; a viewer is refused (403).
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: POST /api/v1/jobs/batch enqueues all in the principal's tenant, ids in order, audited`, async () => {
    await using api = await apiHarness(backend);
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const made = await api.call("POST", "/api/v1/jobs/batch", acme, {
      jobs: [
        { worker: "send", args: { to: "a@acme.test" }, queue: "mail", tags: ["api"] },
        { worker: "bill", priority: 3 },
        { worker: "send", args: { to: "b@acme.test" }, inMs: 60_000 },
      ],
    });
    assert.equal(made.status, 201);
    assert.equal(made.json.duplicates, 0);
    assert.equal(made.json.ids.length, 3);
    const jobs = await Promise.all(
      made.json.ids.map((id: number) => api.store.jobGet({ id })),
    );
    assert.deepEqual(jobs.map((j) => j?.worker), ["send", "bill", "send"]);
    assert.deepEqual(jobs.map((j) => j?.tenant), ["acme", "acme", "acme"]);
    assert.equal(jobs[0]?.queue, "mail");
    assert.deepEqual(jobs[0]?.tags, ["api"]);
    assert.equal(jobs[1]?.priority, 3);
    assert.equal(jobs[2]?.state, "scheduled");
    for (const id of made.json.ids) {
      const [row] = await api.store.auditList({ target: `job:${id}` });
      assert.equal(row?.action, "job.enqueue");
      assert.equal(row?.actor, "token:acme-ops");
    }
    // The jobs are acme's: listed to acme, and the installation token's are nobody's.
    const listed = await api.call("GET", "/api/v1/jobs", acme);
    assert.deepEqual(
      listed.json.jobs.map((j: { id: number }) => j.id).sort((a: number, b: number) => a - b),
      [...made.json.ids].sort((a: number, b: number) => a - b),
    );
    const old = await api.call("POST", "/api/v1/jobs/batch", INSTALL_TOKEN, {
      jobs: [{ worker: "send" }],
    });
    assert.equal(old.status, 201);
    assert.equal((await api.store.jobGet({ id: old.json.ids[0] }))?.tenant, null);
    const [oldRow] = await api.store.auditList({ target: `job:${old.json.ids[0]}` });
    assert.equal(oldRow?.actor, "token:installation");
  });

  Deno.test(`${backend.name}: one bad job refuses the whole batch (400 naming its index) and inserts nothing`, async () => {
    await using api = await apiHarness(backend);
    const ops = await api.token("ops", ["operator"]);
    const good = { worker: "send", args: { n: 1 } };
    const count = async () => (await api.store.jobsList({ limit: 100 })).length;

    const schema = await api.call("POST", "/api/v1/jobs/batch", ops, {
      jobs: [good, good, good, { worker: "" }],
    });
    assert.equal(schema.status, 400);
    assert.equal(schema.json.error.code, "body-invalid");
    assert.match(schema.json.error.message, /body field "jobs\.3\.worker"/);

    // Refused by the library's checks, past the schema: a bad queue name, a built-in runner's args.
    const queue = await api.call("POST", "/api/v1/jobs/batch", ops, {
      jobs: [good, { worker: "send", queue: "no spaces allowed" }, good],
    });
    assert.equal(queue.status, 400);
    assert.equal(queue.json.error.code, "enqueue-refused");
    assert.match(queue.json.error.message, /^body field "jobs\.1": /);
    const runner = await api.call("POST", "/api/v1/jobs/batch", ops, {
      jobs: [good, good, { worker: "jobs.command", args: { nothing: true } }],
    });
    assert.equal(runner.status, 403);
    assert.equal(runner.json.error.code, "worker-reserved");
    assert.match(runner.json.error.message, /^body field "jobs\.2\.worker": /);

    const tenant = await api.call("POST", "/api/v1/jobs/batch", ops, {
      jobs: [good, { worker: "send", tenant: "globex" }],
    });
    assert.equal(tenant.status, 400);
    assert.match(tenant.json.error.message, /unknown field "tenant"/);
    const outer = await api.call("POST", "/api/v1/jobs/batch", ops, { jobs: [good], tenant: "x" });
    assert.equal(outer.status, 400);
    const empty = await api.call("POST", "/api/v1/jobs/batch", ops, { jobs: [] });
    assert.equal(empty.status, 400);
    assert.match(empty.json.error.message, /"jobs"/);
    const many = await api.call("POST", "/api/v1/jobs/batch", ops, {
      jobs: Array.from({ length: 1001 }, () => ({ worker: "w" })),
    });
    assert.equal(many.status, 400);
    assert.equal((await api.call("POST", "/api/v1/jobs/batch", ops, [good])).status, 400);
    assert.equal(await count(), 0);
    assert.equal(
      (await api.store.auditPage({ limit: 100 })).filter((r) => r.action === "job.enqueue").length,
      0,
    );
  });

  Deno.test(`${backend.name}: the built-in workers (jobs.command, jobs.http, ...) are refused over the API, 403 worker-reserved`, async () => {
    await using api = await apiHarness(backend);
    const ops = await api.token("ops", ["operator"]);
    const command = { kind: "command", argv: ["sh", "-c", "id > /tmp/owned"] };
    for (const secret of [ops, INSTALL_TOKEN]) {
      const one = await api.call("POST", "/api/v1/jobs", secret, {
        worker: "jobs.command",
        args: command,
      });
      assert.equal(one.status, 403, one.text);
      assert.equal(one.json.error.code, "worker-reserved");
      assert.match(one.json.error.message, /body field "worker": "jobs.command" is a built-in/);
      const many = await api.call("POST", "/api/v1/jobs/batch", secret, {
        jobs: [{ worker: "send" }, { worker: "jobs.http", args: { kind: "http" } }],
      });
      assert.equal(many.status, 403, many.text);
      assert.match(many.json.error.message, /"jobs.1.worker"/);
    }
    for (const worker of ["jobs.report", "jobs.ingest", "jobs.workflow", "jobs.fanout"]) {
      const refused = await api.call("POST", "/api/v1/jobs", ops, { worker });
      assert.equal(refused.status, 403, `${worker}: ${refused.text}`);
    }
    assert.deepEqual(await api.store.jobsList({ limit: 10 }), []);
  });

  Deno.test(`${backend.name}: a batch of 1000 goes in one request, ids in order`, async () => {
    await using api = await apiHarness(backend);
    const ops = await api.token("ops", ["operator"]);
    const made = await api.call("POST", "/api/v1/jobs/batch", ops, {
      jobs: Array.from({ length: 1000 }, (_, i) => ({ worker: "w", args: { i } })),
    });
    assert.equal(made.status, 201);
    assert.equal(made.json.ids.length, 1000);
    assert.equal(new Set(made.json.ids).size, 1000);
    const first = await api.store.jobGet({ id: made.json.ids[0] });
    const last = await api.store.jobGet({ id: made.json.ids[999] });
    assert.deepEqual(first?.args, { i: 0 });
    assert.deepEqual(last?.args, { i: 999 });
  });

  Deno.test(`${backend.name}: a viewer gets 403 naming the role on POST /api/v1/jobs/batch`, async () => {
    await using api = await apiHarness(backend);
    const viewer = await api.token("reader", ["viewer"]);
    const refused = await api.call("POST", "/api/v1/jobs/batch", viewer, {
      jobs: [{ worker: "send" }],
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, "role-required");
    assert.match(refused.json.error.message, /"operator"/);
    assert.deepEqual(await api.store.jobsList({ limit: 10 }), []);
  });
}
