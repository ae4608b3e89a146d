/**
 * The route table of docs/operating.md ("HTTP API") is the role table of the
 * code: every route of `API_ROUTES` is a row with exactly its roles, and no
 * row names a route the code does not have.
 */

import assert from "node:assert/strict";
import { API_ROUTES, routeKey } from "../../src/http/access.ts";

Deno.test("docs/operating.md's route table lists every /api/v1 route with its roles", async () => {
  const page = await Deno.readTextFile(new URL("../../docs/operating.md", import.meta.url));
  const rows = new Map<string, string>();
  for (const line of page.split("\n")) {
    const match = /^\| `(GET|POST|PUT|DELETE) (\/api\/v1\/\S*)` +\| ([a-z, ]+?) +\|/.exec(line);
    if (!match) continue;
    const key = routeKey(match[1]!, match[2]!.replace(/\{(\w+)\}/g, ":$1"));
    assert.ok(!rows.has(key), `${key} is in the table twice`);
    rows.set(key, match[3]!);
  }
  for (const route of API_ROUTES) {
    const key = routeKey(route.method, route.path);
    assert.equal(rows.get(key), route.roles.join(", "), `${key}: the docs' roles`);
  }
  const inCode = new Set(API_ROUTES.map((r) => routeKey(r.method, r.path)));
  for (const key of rows.keys()) assert.ok(inCode.has(key), `${key} is documented, not routed`);
});
