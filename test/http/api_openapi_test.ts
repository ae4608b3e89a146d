/**
 * `GET /api/v1/openapi.json`: generated from the role table and the request
 * schemas, valid by a real OpenAPI validator, and naming every route.
 */

import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { API_ROUTES } from "../../src/http/access.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness } from "./api_support.ts";

Deno.test("GET /api/v1/openapi.json is a valid OpenAPI 3.1 document naming every route", async () => {
  await using api = await apiHarness(BACKENDS[0]!);
  const viewer = await api.token("reader", ["viewer"]);
  const answer = await api.call("GET", "/api/v1/openapi.json", viewer);
  assert.equal(answer.status, 200);
  const result = await new Validator().validate(answer.json);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  assert.equal(answer.json.openapi, "3.1.0");
  // The validator does refuse: the same document with a response missing its description.
  const broken = structuredClone(answer.json);
  delete broken.paths["/api/v1/jobs"].get.responses["200"].description;
  assert.equal((await new Validator().validate(broken)).valid, false);
  for (const route of API_ROUTES) {
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    assert.ok(answer.json.paths[path]?.[route.method.toLowerCase()], `${route.method} ${path}`);
  }
  const list = answer.json.paths["/api/v1/jobs"].get;
  const state = list.parameters.find((p: { name: string }) => p.name === "state");
  assert.equal(state.in, "query");
  assert.ok(state.schema.pattern.includes("available"));
  const enqueue = answer.json.paths["/api/v1/jobs"].post;
  const body = enqueue.requestBody.content["application/json"].schema;
  assert.deepEqual(body.required, ["worker"]);
  assert.equal(body.additionalProperties, false);
  assert.ok(enqueue.responses["201"] && enqueue.responses["403"]);
  assert.match(enqueue.description, /operator, admin/);
  assert.equal((await api.call("GET", "/api/v1/openapi.json", null)).status, 401);
});
