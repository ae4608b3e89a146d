/**
 * `/api/v1`'s doors on every backend: who a credential names (a store token,
 * the old `--token` as an installation-wide admin), what is refused and how
 * (401 for an expired or revoked token, 429 past the failures of an address,
 * JSON errors), and that the role table names every route the router has.
 */

import assert from "node:assert/strict";
import { revokeToken } from "../../src/admin/tokens.ts";
import { ACTIONS } from "../../src/admin/actions.ts";
import { API_ROUTES, refusal, routeKey, routeOf } from "../../src/http/access.ts";
import { registeredRoutes } from "../../src/http/api/app.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

Deno.test("the role table names every /api/v1 route the router registers, and no other", async () => {
  await using api = await apiHarness(BACKENDS[0]!);
  const registered = registeredRoutes(api.app).sort();
  const table = API_ROUTES.map((r) => routeKey(r.method, r.path)).sort();
  assert.ok(registered.length > 0);
  for (const route of registered) assert.ok(table.includes(route), `${route} is not in API_ROUTES`);
  for (const route of table) assert.ok(registered.includes(route), `${route} is not registered`);
});

Deno.test("every route that acts names its action, and takes its roles from the action table", () => {
  for (const route of API_ROUTES) {
    const key = routeKey(route.method, route.path);
    if (route.method === "GET") {
      assert.equal(route.action, undefined, `${key} reads: it names no action`);
      continue;
    }
    assert.ok(route.action, `${key} acts but names no action of ACTIONS`);
    assert.deepEqual(route.roles, ACTIONS[route.action], `${key}: the roles of ${route.action}`);
  }
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: /api/v1 names the principal of the credential only`, async () => {
    await using api = await apiHarness(backend);
    const viewer = await api.token("reader", ["viewer"], "acme");
    const me = await api.call("GET", "/api/v1/me", viewer, undefined, {
      headers: { "x-tenant": "globex" },
    });
    assert.equal(me.status, 200);
    assert.deepEqual(me.json, {
      name: "reader",
      kind: "token",
      roles: ["viewer"],
      tenant: "acme",
      actor: "token:reader",
    });
    const old = await api.call("GET", "/api/v1/me", INSTALL_TOKEN);
    assert.equal(old.status, 200);
    assert.deepEqual(old.json.roles, ["admin"]);
    assert.equal(old.json.tenant, null);
  });

  Deno.test(`${backend.name}: /api/v1 answers 401 without a token, or with an expired or revoked one`, async () => {
    await using api = await apiHarness(backend);
    const none = await api.call("GET", "/api/v1/me", null);
    assert.equal(none.status, 401);
    assert.equal(none.json.error.code, "unauthorized");
    assert.equal(none.headers.get("www-authenticate"), "Bearer");
    const short = await api.token("short", ["operator"], null, 60_000);
    assert.equal((await api.call("GET", "/api/v1/me", short)).status, 200);
    api.clock.advance(60_000);
    const expired = await api.call("GET", "/api/v1/me", short);
    assert.equal(expired.status, 401);
    assert.deepEqual(Object.keys(expired.json), ["error"]);
    const gone = await api.token("gone", ["admin"]);
    await revokeToken(api.store, "gone", { actor: "root", reason: null, now: api.clock.now() });
    assert.equal((await api.call("GET", "/api/v1/me", gone)).status, 401);
    assert.equal((await api.call("GET", "/api/v1/me", "Basic abc")).status, 401);
  });

  Deno.test(`${backend.name}: /api/v1 refuses an address with 429 after 10 failed tokens, until its window ends`, async () => {
    await using api = await apiHarness(backend);
    const good = await api.token("good", ["viewer"]);
    for (let i = 0; i < 10; i++) {
      assert.equal((await api.call("GET", "/api/v1/me", `jobs_wrong${i}`)).status, 401);
    }
    const blocked = await api.call("GET", "/api/v1/me", good);
    assert.equal(blocked.status, 429);
    assert.equal(blocked.json.error.code, "too-many-failures");
    assert.ok(Number(blocked.headers.get("retry-after")) > 0);
    // Another address is not held back by this one's failures.
    assert.equal(
      (await api.call("GET", "/api/v1/me", good, undefined, { remote: "192.0.2.9" })).status,
      200,
    );
    api.clock.advance(60_000);
    assert.equal((await api.call("GET", "/api/v1/me", good)).status, 200);
  });

  Deno.test(`${backend.name}: /api/v1 answers an unknown route 404 in JSON`, async () => {
    await using api = await apiHarness(backend);
    const missing = await api.call("GET", "/api/v1/nothing-here", INSTALL_TOKEN);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json, { error: { code: "not-found", message: "no such route" } });
  });
}

Deno.test("refusal() denies a route the table does not name, even to an admin", () => {
  const admin = { name: "a", kind: "token" as const, roles: ["admin" as const], tenant: null };
  assert.equal(refusal(admin, routeOf("DELETE", "/api/v1/everything"))?.code, "forbidden");
  const viewer = { ...admin, roles: ["viewer" as const] };
  const me = refusal(viewer, routeOf("GET", "/api/v1/me"));
  assert.equal(me, null);
});
