/**
 * `/api/v1/pipelines` and `/api/v1/drops` on every backend: a viewer reads
 * the pipelines view and the drops and is refused (403, the role named)
 * running a pipeline and replaying a drop; an operator does both through
 * the command line's doors, each audit row naming the principal; unknown
 * pipelines and drops are 404, a server without definitions answers the
 * actions 409, malformed queries and bodies are 400; and a tenant's
 * principal sees its tenant's runs and drops only (another tenant's drop
 * is 404), and the runs and replays it starts carry its tenant.
 */

import assert from "node:assert/strict";
import type { ApiDefinitions } from "../../src/http/api/app.ts";
import { definePipeline } from "../../src/ingest/definition.ts";
import type { CompiledPipeline } from "../../src/ingest/types.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN, runWithDrops } from "./api_support.ts";

/** A pipeline of the schedules file, fresh within an hour. */
function pipeline(id: string): CompiledPipeline {
  return definePipeline({
    id,
    source: { file: "/dev/null" },
    key: "sku",
    steps: [],
    dropReasons: ["duplicate", "poison"],
    sink: { worker: "sink" },
    freshness: { mode: "bounded", withinMs: 3_600_000 },
  });
}

const CATALOG = pipeline("catalog");
const DEFINITIONS: ApiDefinitions = { workflows: [], pipelines: [CATALOG] };
const WITH_DEFINITIONS = { definitions: () => DEFINITIONS };

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer reads /api/v1/pipelines and /api/v1/drops and gets 403 naming the role on runs and replays`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const now = api.clock.now();
    const [drop] = await runWithDrops(api.store, "catalog", now, [["duplicate", "a-1"]]);
    await runWithDrops(api.store, "legacy", now, []);
    const viewer = await api.token("reader", ["viewer"]);
    const viewed = await api.call("GET", "/api/v1/pipelines", viewer);
    assert.equal(viewed.status, 200);
    const [catalog, legacy] = viewed.json.pipelines;
    assert.deepEqual([catalog.id, catalog.declared, catalog.hash], ["catalog", true, CATALOG.hash]);
    assert.deepEqual([legacy.id, legacy.declared], ["legacy", false]);
    assert.equal(catalog.runs, 1);
    assert.equal(catalog.recent[0].state, "completed");
    assert.equal(catalog.recent[0].received, 2);
    assert.equal(catalog.recent[0].cursor, undefined);
    assert.deepEqual(catalog.droppedLastHour, { duplicate: 1 });
    assert.equal(catalog.freshness.stale, false);
    assert.equal(catalog.freshness.lastCompletedAt, new Date(now).toISOString());
    const drops = await api.call("GET", "/api/v1/drops", viewer);
    assert.equal(drops.status, 200);
    assert.deepEqual(drops.json.drops.map((d: { id: number }) => d.id), [drop]);
    assert.equal(drops.json.drops[0].excerpt, '{"sku":"a-1"}');
    assert.equal(drops.json.drops[0].record, undefined);
    for (
      const [path, body] of [
        ["/api/v1/pipelines/catalog/runs", {}],
        [`/api/v1/drops/${drop}/replay`, { reason: "fixed the dedupe" }],
      ] as const
    ) {
      const refused = await api.call("POST", path, viewer, body);
      assert.equal(refused.status, 403, path);
      assert.equal(refused.json.error.code, "role-required");
      assert.match(refused.json.error.message, /"operator"/);
    }
    assert.deepEqual(await api.store.jobsList({ queue: "ingest" }), []);
  });

  Deno.test(`${backend.name}: an operator runs a pipeline and replays a drop, audited with the token's name`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const ops = await api.token("data-ops", ["operator"]);
    const ran = await api.call("POST", "/api/v1/pipelines/catalog/runs", ops, {
      reason: "vendor resent the file",
    });
    assert.equal(ran.status, 201);
    assert.deepEqual(ran.json, { job: ran.json.job, pipeline: "catalog", queue: CATALOG.queue });
    const [job] = await api.store.jobsList({ ids: [ran.json.job], limit: 1 });
    assert.deepEqual([job?.worker, job?.state, job?.tenant], ["jobs.ingest", "available", null]);
    const runs = await api.store.auditList({ target: "pipeline:catalog" });
    assert.deepEqual(runs.map((r) => [r.action, r.actor, r.reason, r.details.job]), [
      ["ingest.run", "token:data-ops", "vendor resent the file", ran.json.job],
    ]);
    const bare = await api.call("POST", "/api/v1/pipelines/catalog/runs", ops, {});
    assert.equal(bare.status, 201);

    const [drop] = await runWithDrops(api.store, "catalog", api.clock.now(), [["poison", "p-1"]]);
    const replayed = await api.call("POST", `/api/v1/drops/${drop}/replay`, ops, {
      reason: "fixed the parser",
    });
    assert.equal(replayed.status, 201);
    assert.deepEqual(replayed.json, { drop, job: replayed.json.job, pipeline: "catalog" });
    const trail = await api.store.auditList({ target: `drop:${drop}` });
    assert.deepEqual(trail.map((r) => [r.action, r.actor, r.reason]), [
      ["ingest.replay", "token:data-ops", "fixed the parser"],
    ]);
    const listed = await api.call("GET", "/api/v1/drops?pipeline=catalog", ops);
    assert.equal(listed.json.drops[0].replayedJob, replayed.json.job);
    const twice = await api.call("POST", `/api/v1/drops/${drop}/replay`, ops, {
      reason: "fixed the parser",
    });
    assert.equal(twice.status, 409);
    assert.equal(twice.json.error.code, "not-applicable");
    assert.match(twice.json.error.message, /"again": true/);
    const again = await api.call("POST", `/api/v1/drops/${drop}/replay`, ops, {
      reason: "fixed it again",
      again: true,
    });
    assert.equal(again.status, 201);
    assert.notEqual(again.json.job, replayed.json.job);
  });

  Deno.test(`${backend.name}: drops filter by pipeline and reason and page with after`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const now = api.clock.now();
    const catalog = await runWithDrops(api.store, "catalog", now, [
      ["duplicate", "a"],
      ["poison", "b"],
      ["duplicate", "c"],
    ]);
    const legacy = await runWithDrops(api.store, "legacy", now, [["duplicate", "z"]]);
    const ops = await api.token("ops", ["operator"]);
    const ids = async (query: string) => {
      const answer = await api.call("GET", `/api/v1/drops${query}`, ops);
      assert.equal(answer.status, 200, query);
      return { ids: answer.json.drops.map((d: { id: number }) => d.id), next: answer.json.next };
    };
    assert.deepEqual((await ids("")).ids, [...legacy, ...catalog]);
    assert.deepEqual((await ids("?pipeline=catalog")).ids, catalog);
    assert.deepEqual(
      (await ids("?pipeline=catalog&reason=duplicate")).ids,
      catalog.filter((_, i) => i !== 1),
    );
    assert.deepEqual((await ids("?reason=poison")).ids, [catalog[1]]);
    assert.deepEqual((await ids("?pipeline=nowhere")).ids, []);
    const first = await ids("?pipeline=catalog&limit=2");
    assert.deepEqual(first, { ids: catalog.slice(0, 2), next: catalog[1] });
    const second = await ids(`?pipeline=catalog&limit=2&after=${first.next}`);
    assert.deepEqual(second, { ids: catalog.slice(2), next: null });
    const runs = await api.call("GET", "/api/v1/pipelines?runs=1", ops);
    assert.equal(runs.json.pipelines[0].recent.length, 1);
  });

  Deno.test(`${backend.name}: unknown pipelines and drops are 404, actions without definitions 409, malformed requests 400`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const ops = await api.token("ops", ["operator"]);
    const unknown = await api.call("POST", "/api/v1/pipelines/nowhere/runs", ops, {});
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, "pipeline-not-found");
    for (const id of ["999", "0", "abc"]) {
      const missing = await api.call("POST", `/api/v1/drops/${id}/replay`, ops, {
        reason: "a typo here",
      });
      assert.equal(missing.status, 404, id);
      assert.equal(missing.json.error.code, "drop-not-found");
    }
    const [orphan] = await runWithDrops(api.store, "legacy", api.clock.now(), [["poison", "x"]]);
    const undeclared = await api.call("POST", `/api/v1/drops/${orphan}/replay`, ops, {
      reason: "give it a go",
    });
    assert.equal(undeclared.status, 409);
    assert.equal(undeclared.json.error.code, "pipeline-not-declared");
    const bad = [
      ["/api/v1/pipelines/catalog/runs", { tenant: "acme" }],
      ["/api/v1/pipelines/catalog/runs", { reason: "TODO" }],
      [`/api/v1/drops/${orphan}/replay`, {}],
      [`/api/v1/drops/${orphan}/replay`, { reason: "fine", again: "yes" }],
      [`/api/v1/drops/${orphan}/replay`, { reason: "fine", pipeline: "catalog" }],
    ] as const;
    for (const [path, body] of bad) {
      const refused = await api.call("POST", path, ops, body);
      assert.equal(refused.status, 400, `${path} ${JSON.stringify(body)}`);
    }
    for (
      const path of [
        "/api/v1/drops?after=x",
        "/api/v1/drops?tenant=acme",
        "/api/v1/drops?limit=0",
        "/api/v1/pipelines?runs=0",
        "/api/v1/pipelines?runs=51",
      ]
    ) {
      const refused = await api.call("GET", path, ops);
      assert.equal(refused.status, 400, path);
      assert.equal(refused.json.error.code, "query-invalid");
    }
    assert.deepEqual(await api.store.jobsList({ queue: CATALOG.queue }), []);

    await using bare = await apiHarness(backend);
    const [drop] = await runWithDrops(bare.store, "catalog", bare.clock.now(), [["poison", "y"]]);
    const viewed = await bare.call("GET", "/api/v1/pipelines", INSTALL_TOKEN);
    assert.deepEqual(viewed.json.pipelines.map((p: { id: string }) => p.id), ["catalog"]);
    assert.equal(viewed.json.pipelines[0].declared, false);
    for (
      const [path, body] of [
        ["/api/v1/pipelines/catalog/runs", {}],
        [`/api/v1/drops/${drop}/replay`, { reason: "fixed the parser" }],
      ] as const
    ) {
      const refused = await bare.call("POST", path, INSTALL_TOKEN, body);
      assert.equal(refused.status, 409, path);
      assert.equal(refused.json.error.code, "definitions-unavailable");
    }
  });

  Deno.test(`${backend.name}: a tenant's principal sees its tenant's runs and drops only, and its runs and replays carry its tenant`, async () => {
    await using api = await apiHarness(backend, WITH_DEFINITIONS);
    const now = api.clock.now();
    const [acmeDrop] = await runWithDrops(api.store, "catalog", now, [["poison", "a"]], "acme");
    const [globexDrop] = await runWithDrops(api.store, "catalog", now, [["poison", "g"]], "globex");
    const [sharedDrop] = await runWithDrops(api.store, "catalog", now, [["poison", "s"]]);
    const acmeOps = await api.token("acme-ops", ["operator"], "acme");
    const acmeViewer = await api.token("acme-reader", ["viewer"], "acme");

    const all = await api.call("GET", "/api/v1/pipelines", INSTALL_TOKEN);
    assert.equal(all.json.pipelines[0].runs, 3);
    for (const secret of [acmeOps, acmeViewer]) {
      const viewed = await api.call("GET", "/api/v1/pipelines", secret);
      assert.equal(viewed.status, 200);
      assert.deepEqual(viewed.json.pipelines.map((p: { id: string }) => p.id), ["catalog"]);
      assert.equal(viewed.json.pipelines[0].runs, 1);
      assert.deepEqual(
        viewed.json.pipelines[0].recent.map((r: { tenant: string }) => r.tenant),
        ["acme"],
      );
      assert.deepEqual(viewed.json.pipelines[0].droppedLastDay, { poison: 1 });
      const drops = await api.call("GET", "/api/v1/drops", secret);
      assert.deepEqual(drops.json.drops.map((d: { id: number }) => d.id), [acmeDrop]);
      const named = await api.call("GET", "/api/v1/drops?tenant=globex", secret);
      assert.equal(named.status, 400);
    }
    const everyone = await api.call("GET", "/api/v1/drops", INSTALL_TOKEN);
    assert.equal(everyone.json.drops.length, 3);

    for (const other of [globexDrop, sharedDrop]) {
      const refused = await api.call("POST", `/api/v1/drops/${other}/replay`, acmeOps, {
        reason: "not mine to replay",
      });
      assert.equal(refused.status, 404, String(other));
      assert.equal(refused.json.error.code, "drop-not-found");
      assert.deepEqual(await api.store.auditList({ target: `drop:${other}` }), []);
    }
    const replayed = await api.call("POST", `/api/v1/drops/${acmeDrop}/replay`, acmeOps, {
      reason: "fixed the parser",
    });
    assert.equal(replayed.status, 201);
    const ran = await api.call("POST", "/api/v1/pipelines/catalog/runs", acmeOps, {});
    assert.equal(ran.status, 201);
    const jobs = await api.store.jobsList({ ids: [replayed.json.job, ran.json.job], limit: 2 });
    assert.deepEqual(jobs.map((j) => j.tenant), ["acme", "acme"]);
    const [audited] = await api.store.auditList({ target: "pipeline:catalog" });
    assert.deepEqual([audited?.actor, audited?.details.tenant], ["token:acme-ops", "acme"]);
    // An installation-wide replay of acme's drop is acme's run too.
    const again = await api.call("POST", `/api/v1/drops/${acmeDrop}/replay`, INSTALL_TOKEN, {
      reason: "once more",
      again: true,
    });
    assert.equal(again.status, 201);
    const [replay] = await api.store.jobsList({ ids: [again.json.job], limit: 1 });
    assert.equal(replay?.tenant, "acme");

    const viewerRun = await api.call("POST", "/api/v1/pipelines/catalog/runs", acmeViewer, {});
    assert.equal(viewerRun.status, 403);
    assert.equal(viewerRun.json.error.code, "role-required");
  });
}
