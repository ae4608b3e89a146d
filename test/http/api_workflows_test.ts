/**
 * `/api/v1/workflows` on every backend: a viewer lists and shows runs and is
 * refused (403, the role named) starting, cancelling and retrying; an
 * operator does each through the command line's doors, every audit row
 * naming the principal; a tenant's principal lists, reads and acts on its
 * tenant's runs only (another tenant's run is 404, as a missing one), and a
 * run it starts carries its tenant onto its step jobs; unknown runs and
 * workflows are 404, a server without definitions answers a start 409, and
 * malformed queries and bodies (a tenant named in one included) are 400.
 * Last, a real `jobs daemon` serves a start of its schedules file's workflow.
 */

import assert from "node:assert/strict";
import type { ApiDefinitions } from "../../src/http/api/app.ts";
import { Jobs } from "../../src/jobs.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { drainAllJobs, waitUntil } from "../../src/testing.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { BACKENDS } from "../support/backends.ts";
import { daemonDir, spawnDaemon } from "../support/daemon_process.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

/** `first` then `second`, each on its own queue, once (a failure is final). */
const PAIR = compileWorkflow({
  id: "pair",
  steps: [
    { id: "first", worker: "w.first", queue: "first", maxAttempts: 1 },
    { id: "second", worker: "w.second", queue: "second", maxAttempts: 1, dependsOn: ["first"] },
  ],
});
/** One step. */
const SOLO = compileWorkflow({
  id: "solo",
  steps: [{ id: "only", worker: "w.only", queue: "only", maxAttempts: 1 }],
});

const DEFINITIONS: ApiDefinitions = { workflows: [PAIR, SOLO], pipelines: [] };
const WITH_DEFINITIONS = { definitions: () => DEFINITIONS };

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer lists and shows workflow runs and gets 403 naming the role on start, cancel and retry`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const started = await api.call("POST", "/api/v1/workflows", INSTALL_TOKEN, {
      workflow: "pair",
      input: { order: 7, password: "hunter2" },
    });
    assert.equal(started.status, 201);
    const id = started.json.id;
    const viewer = await api.token("reader", ["viewer"]);
    const listed = await api.call("GET", "/api/v1/workflows", viewer);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.json.workflows.map((r: { id: number }) => r.id), [id]);
    assert.equal(listed.json.next, null);
    assert.deepEqual(listed.json.workflows[0].steps, {
      total: 2,
      completed: 0,
      running: 1,
      failed: 0,
      cancelled: 0,
      waiting: 1,
    });
    const shown = await api.call("GET", `/api/v1/workflows/${id}`, viewer);
    assert.equal(shown.status, 200);
    assert.equal(shown.json.run.workflow, "pair");
    assert.equal(shown.json.run.input.order, 7);
    assert.notEqual(shown.json.run.input.password, "hunter2");
    assert.deepEqual(shown.json.steps.map((s: { id: string; state: string }) => [s.id, s.state]), [
      ["first", "running"],
      ["second", "waiting"],
    ]);
    assert.deepEqual(shown.json.compensations, []);
    assert.deepEqual(shown.json.audit.map((r: { action: string }) => r.action), [
      "workflow.start",
    ]);
    const refusals = [
      ["POST", "/api/v1/workflows", { workflow: "pair" }],
      ["POST", `/api/v1/workflows/${id}/cancel`, { reason: "not needed" }],
      ["POST", `/api/v1/workflows/${id}/retry`, { reason: "try again" }],
    ] as const;
    for (const [method, path, body] of refusals) {
      const refused = await api.call(method, path, viewer, body);
      assert.equal(refused.status, 403, path);
      assert.equal(refused.json.error.code, "role-required");
      assert.match(refused.json.error.message, /"operator"/);
    }
    assert.equal((await api.store.workflowsList({})).length, 1);
    assert.equal((await api.store.workflowGet({ id }))?.run.state, "running");
  });

  Deno.test(`${backend.name}: an operator starts, cancels and lists runs, audited with the token's name`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const ops = await api.token("night-ops", ["operator"]);
    const first = await api.call("POST", "/api/v1/workflows", ops, {
      workflow: "pair",
      key: "order-7",
      reason: "customer asked",
    });
    assert.equal(first.status, 201);
    assert.deepEqual(first.json, { id: first.json.id, workflow: "pair", duplicate: false });
    const again = await api.call("POST", "/api/v1/workflows", ops, {
      workflow: "pair",
      key: "order-7",
    });
    assert.equal(again.status, 201);
    assert.deepEqual(again.json, { id: first.json.id, workflow: "pair", duplicate: true });
    const solo = await api.call("POST", "/api/v1/workflows", ops, { workflow: "solo" });
    assert.equal(solo.status, 201);
    const start = await api.store.auditList({ target: `workflow:${first.json.id}` });
    assert.deepEqual(start.map((r) => [r.action, r.actor, r.reason, r.details.duplicate]), [
      ["workflow.start", "token:night-ops", "customer asked", false],
      ["workflow.start", "token:night-ops", null, true],
    ]);

    const cancelled = await api.call("POST", `/api/v1/workflows/${solo.json.id}/cancel`, ops, {
      reason: "not needed now",
    });
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.json.id, solo.json.id);
    assert.equal(cancelled.json.workflow, "solo");
    assert.equal(cancelled.json.was, "running");
    assert.equal(cancelled.json.state, "cancelled");
    assert.equal(cancelled.json.jobs.length, 1);
    const [row] = (await api.store.auditList({ target: `workflow:${solo.json.id}` }))
      .filter((r) => r.action === "workflow.cancel");
    assert.deepEqual([row?.actor, row?.reason], ["token:night-ops", "not needed now"]);
    const twice = await api.call("POST", `/api/v1/workflows/${solo.json.id}/cancel`, ops, {
      reason: "not needed now",
    });
    assert.equal(twice.status, 409);
    assert.equal(twice.json.error.code, "not-applicable");
    const notFailed = await api.call("POST", `/api/v1/workflows/${first.json.id}/retry`, ops, {
      reason: "once more",
    });
    assert.equal(notFailed.status, 409);
    assert.equal(notFailed.json.error.code, "not-applicable");
    assert.match(notFailed.json.error.message, /not failed/);

    const byState = await api.call("GET", "/api/v1/workflows?state=cancelled,failed", ops);
    assert.deepEqual(byState.json.workflows.map((r: { id: number }) => r.id), [solo.json.id]);
    const byName = await api.call("GET", "/api/v1/workflows?workflow=pair", ops);
    assert.deepEqual(byName.json.workflows.map((r: { id: number }) => r.id), [first.json.id]);
    const page = await api.call("GET", "/api/v1/workflows?limit=1", ops);
    assert.deepEqual(page.json.workflows.map((r: { id: number }) => r.id), [solo.json.id]);
    assert.equal(page.json.next, solo.json.id);
    const next = await api.call("GET", `/api/v1/workflows?limit=1&after=${page.json.next}`, ops);
    assert.deepEqual(next.json.workflows.map((r: { id: number }) => r.id), [first.json.id]);
    assert.equal(next.json.next, null);
  });

  Deno.test(`${backend.name}: an operator retries a failed run through the API; the retried step runs again`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const ops = await api.token("ops", ["operator"], "acme");
    const started = await api.call("POST", "/api/v1/workflows", ops, { workflow: "solo" });
    assert.equal(started.status, 201);
    let fail = true;
    const jobs = new Jobs({
      store: api.store,
      clock: api.clock,
      logger: silentLogger,
      workers: [
        defineWorker({
          name: "w.only",
          maxAttempts: 1,
          perform: () => {
            if (fail) throw new Error("the vendor said no");
            return { result: "ok" };
          },
        }),
      ],
    });
    try {
      await drainAllJobs(jobs);
      const failed = await api.call("GET", `/api/v1/workflows/${started.json.id}`, ops);
      assert.equal(failed.json.run.state, "failed");
      assert.match(failed.json.steps[0].error, /the vendor said no/);
      const retried = await api.call("POST", `/api/v1/workflows/${started.json.id}/retry`, ops, {
        reason: "vendor is back",
      });
      assert.equal(retried.status, 200);
      assert.deepEqual([retried.json.was, retried.json.state], ["failed", "running"]);
      assert.equal(retried.json.jobs.length, 1);
      const [job] = await api.store.jobsList({ ids: retried.json.jobs, limit: 1 });
      assert.equal(job?.tenant, "acme");
      fail = false;
      await drainAllJobs(jobs);
      const done = await api.call("GET", `/api/v1/workflows/${started.json.id}`, ops);
      assert.equal(done.json.run.state, "completed");
      const trail = (await api.store.auditList({ target: `workflow:${started.json.id}` }))
        .filter((r) => r.action === "workflow.retry");
      assert.deepEqual(trail.map((r) => [r.actor, r.reason]), [["token:ops", "vendor is back"]]);
    } finally {
      await jobs.close({ grace: 0 });
    }
  });

  Deno.test(`${backend.name}: a tenant's principal sees and acts on its tenant's runs only; its runs and their step jobs carry its tenant`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const globex = await api.token("globex-ops", ["operator"], "globex");
    const mine = await api.call("POST", "/api/v1/workflows", acme, { workflow: "pair", key: "k1" });
    assert.equal(mine.status, 201);
    const theirs = await api.call("POST", "/api/v1/workflows", globex, {
      workflow: "pair",
      key: "g1",
    });
    const nobody = await api.call("POST", "/api/v1/workflows", INSTALL_TOKEN, { workflow: "solo" });
    assert.equal((await api.store.workflowGet({ id: mine.json.id }))?.run.tenant, "acme");
    assert.equal((await api.store.workflowGet({ id: theirs.json.id }))?.run.tenant, "globex");
    assert.equal((await api.store.workflowGet({ id: nobody.json.id }))?.run.tenant, null);
    const steps = await api.store.jobsList({ queue: "first" });
    assert.deepEqual(steps.map((j) => j.tenant).sort(), ["acme", "globex"]);

    const listed = await api.call("GET", "/api/v1/workflows", acme);
    assert.deepEqual(listed.json.workflows.map((r: { id: number }) => r.id), [mine.json.id]);
    assert.equal(listed.json.workflows[0].tenant, "acme");
    const all = await api.call("GET", "/api/v1/workflows", INSTALL_TOKEN);
    assert.equal(all.json.workflows.length, 3);
    assert.equal((await api.call("GET", `/api/v1/workflows/${mine.json.id}`, acme)).status, 200);
    for (const other of [theirs.json.id, nobody.json.id]) {
      const shown = await api.call("GET", `/api/v1/workflows/${other}`, acme);
      assert.equal(shown.status, 404);
      assert.equal(shown.json.error.code, "workflow-run-not-found");
      for (const action of ["cancel", "retry"]) {
        const refused = await api.call("POST", `/api/v1/workflows/${other}/${action}`, acme, {
          reason: "not mine to touch",
        });
        assert.equal(refused.status, 404, `${action} ${other}`);
        assert.equal(refused.json.error.code, "workflow-run-not-found");
      }
    }
    assert.equal((await api.store.workflowGet({ id: theirs.json.id }))?.run.state, "running");
    assert.deepEqual(
      (await api.store.auditList({ target: `workflow:${theirs.json.id}` })).map((r) => r.action),
      ["workflow.start"],
    );

    // A key globex used is refused to acme without naming globex's run; acme's own key is acme's.
    const taken = await api.call("POST", "/api/v1/workflows", acme, {
      workflow: "pair",
      key: "g1",
    });
    assert.equal(taken.status, 409);
    assert.equal(taken.json.error.code, "key-taken");
    assert.doesNotMatch(taken.text, new RegExp(`\\b${theirs.json.id}\\b|globex`));
    assert.equal((await api.store.auditList({ target: `workflow:${theirs.json.id}` })).length, 1);
    const own = await api.call("POST", "/api/v1/workflows", acme, { workflow: "pair", key: "k1" });
    assert.deepEqual([own.status, own.json.id, own.json.duplicate], [201, mine.json.id, true]);

    const cancelled = await api.call("POST", `/api/v1/workflows/${mine.json.id}/cancel`, acme, {
      reason: "customer cancelled",
    });
    assert.equal(cancelled.status, 200);
    const named = await api.call("GET", "/api/v1/workflows?tenant=globex", acme);
    assert.equal(named.status, 400);
    const bodyTenant = await api.call("POST", "/api/v1/workflows", acme, {
      workflow: "pair",
      tenant: "globex",
    });
    assert.equal(bodyTenant.status, 400);
    assert.equal(bodyTenant.json.error.code, "body-invalid");
  });

  Deno.test(`${backend.name}: unknown runs and workflows are 404, a start without definitions 409, malformed requests 400`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const ops = await api.token("ops", ["operator"]);
    for (const id of ["999", "0", "abc", "1".repeat(20)]) {
      const shown = await api.call("GET", `/api/v1/workflows/${id}`, ops);
      assert.equal(shown.status, 404, id);
      assert.equal(shown.json.error.code, "workflow-run-not-found");
      const cancelled = await api.call("POST", `/api/v1/workflows/${id}/cancel`, ops, {
        reason: "a typo here",
      });
      assert.equal(cancelled.status, 404, id);
    }
    const unknown = await api.call("POST", "/api/v1/workflows", ops, { workflow: "nowhere" });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, "workflow-not-found");
    const bad = [
      ["POST", "/api/v1/workflows", {}],
      ["POST", "/api/v1/workflows", { workflow: "" }],
      ["POST", "/api/v1/workflows", { workflow: "pair", key: 7 }],
      ["POST", "/api/v1/workflows", { workflow: "pair", reason: "TODO" }],
      ["POST", "/api/v1/workflows/1/cancel", {}],
      ["POST", "/api/v1/workflows/1/retry", { reason: "-" }],
      ["POST", "/api/v1/workflows/1/retry", { reason: "ok then", force: true }],
    ] as const;
    for (const [method, path, body] of bad) {
      const refused = await api.call(method, path, ops, body);
      assert.equal(refused.status, 400, `${path} ${JSON.stringify(body)}`);
    }
    for (const query of ["state=done", "after=x", "limit=0", "limit=1000", "color=red"]) {
      const refused = await api.call("GET", `/api/v1/workflows?${query}`, ops);
      assert.equal(refused.status, 400, query);
      assert.equal(refused.json.error.code, "query-invalid");
    }
    assert.deepEqual(await api.store.workflowsList({}), []);

    await using bare = await apiHarness(backend);
    const none = await bare.call("POST", "/api/v1/workflows", INSTALL_TOKEN, { workflow: "pair" });
    assert.equal(none.status, 409);
    assert.equal(none.json.error.code, "definitions-unavailable");
    assert.equal((await bare.call("GET", "/api/v1/workflows", INSTALL_TOKEN)).status, 200);
  });
}

Deno.test({
  name:
    "jobs daemon serves /api/v1/workflows with its schedules file's definitions: a start runs to completion",
  sanitizeResources: false,
  fn: async () => {
    await using dir = await daemonDir();
    await Deno.writeTextFile(
      dir.config,
      `version: 1
use_cases:
  greet: { command: ["sh", "-c", "echo hello"] }
workflows:
  - id: hello
    steps:
      - { id: greet, use_case: greet }
schedules: []
`,
    );
    const token = "daemon-api-token-for-test";
    await using daemon = spawnDaemon(
      ["--db", dir.db, "--config", dir.config, "--node", "d1", "--listen", "127.0.0.1:0"],
      { name: "d1", env: { JOBS_TOKEN: token }, signal: AbortSignal.timeout(60_000) },
    );
    const listening = await daemon.waitFor("http.listening");
    const base = `http://127.0.0.1:${listening.port}/api/v1`;
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, json: await response.json() };
    };
    const started = await call("POST", "/workflows", { workflow: "hello", key: "h-1" });
    assert.equal(started.status, 201, JSON.stringify(started.json));
    const run = await waitUntil("the run completed", async () => {
      const shown = await call("GET", `/workflows/${started.json.id}`);
      return shown.json.run?.state === "completed" ? shown.json : null;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    assert.deepEqual(run.steps.map((s: { state: string }) => s.state), ["completed"]);
    assert.equal(run.audit[0].actor, "token:installation");
    const unknown = await call("POST", "/pipelines/nowhere/runs", {});
    assert.equal(unknown.status, 404, "the daemon hands the API its definitions");
    assert.equal((await daemon.stop("SIGTERM")).code, 0, daemon.log());
  },
});
