/**
 * A work queue's role opens no route of `/api/v1` outside the work queues:
 * a token holding only `support` is refused (403) on every route the router
 * registers but those of work queues, which read the role against the
 * queue's `roles:` themselves.
 */

import assert from "node:assert/strict";
import { routeKey } from "../../src/http/access.ts";
import { registeredRoutes } from "../../src/http/api/app.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness } from "./api_support.ts";

/** Work queues' routes decide by the queue's roles, not by the route table alone. */
const WORK_ROUTES = /^\S+ \/api\/v1\/work(?:[/-]|$)/;

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
