/**
 * A small seeded fuzz of `/api/v1` on every backend: odd paths, methods,
 * headers and bodies against every route, as an operator (so the requests
 * reach the handlers). No answer is a 5xx, every refusal is the JSON error
 * shape, and no answer carries a stack or a file path.
 */

import assert from "node:assert/strict";
import { API_ROUTES } from "../../src/http/access.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, threeTenants } from "./api_support.ts";

/** Where this checkout is: an answer naming it leaks a source path. */
const CHECKOUT = new URL("../../", import.meta.url).pathname;

/** mulberry32: the same requests on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ODD = [
  "",
  "0",
  "-1",
  "1.5",
  "9".repeat(40),
  "%",
  "%zz",
  "%2e%2e",
  "..",
  "../../etc/passwd",
  "%00",
  "é",
  "a".repeat(3000),
  "job:1",
  "null",
  "[]",
  "{}",
  "' OR 1=1 --",
];
const BODIES = [
  "",
  "null",
  "[]",
  "{}",
  '{"worker":1}',
  '{"worker":"send","args":{"a":1e999}}',
  '{"worker":"send","priority":99}',
  '{"reason":"because the vendor is down"}',
  '{"reason":"x","tenant":"globex"}',
  '{"worker":"send","tenant":"globex"}',
  '{"__proto__":{"admin":true},"worker":"send"}',
  '{"worker":"jobs.command","args":{"cmd":[]}}',
  "\u0000",
  '"\\ud800"',
  "[".repeat(5000),
  '{"worker":"' + "w".repeat(500) + '"}',
];

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a fuzz of paths, bodies and headers gets no 5xx and no internals`, async () => {
    await using api = await apiHarness(backend);
    const ids = await threeTenants(api.store, api.clock.now());
    const ops = await api.token("fuzz", ["operator"], "acme");
    const next = random(28);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    for (let i = 0; i < 300; i++) {
      const route = pick(API_ROUTES);
      // Every parameter of the path (`:id`, `:name`, `:key`, `:run`...) gets a value of its own.
      let path = route.path.replace(
        /:\w+/g,
        () => pick([String(ids.acme), String(ids.globex), "mail", "acme", ...ODD]),
      );
      if (next() < 0.3) {
        path += `?${pick(["state", "after", "limit", "tenant", "x", "search"])}=${pick(ODD)}`;
      }
      if (next() < 0.1) path += "/" + pick(ODD);
      const method = next() < 0.8
        ? route.method
        : pick(["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]);
      const headers: Record<string, string> = {};
      if (next() < 0.2) {
        headers["content-type"] = pick(["text/plain", "application/json; charset=latin1", "x"]);
      }
      if (next() < 0.1) headers["content-length"] = pick(["-1", "99999999999", "abc"]);
      const secret = next() < 0.9 ? ops : pick(["", "x", "jobs_" + "a".repeat(60), ops + "x"]);
      const body = method === "GET" || method === "HEAD" ? undefined : pick(BODIES);
      let answer;
      try {
        answer = await api.call(method, path, secret, undefined, {
          headers,
          ...(body === undefined ? {} : { raw: body }),
          remote: `198.51.100.${i % 250}`,
        });
      } catch (error) {
        // The Request itself refused the input (a header the fetch API forbids): not our answer.
        if (error instanceof TypeError) continue;
        throw error;
      }
      const what = `${method} ${path.slice(0, 120)} ${JSON.stringify(body?.slice(0, 60))}`;
      assert.ok(answer.status < 500, `${what}: ${answer.status} ${answer.text.slice(0, 200)}`);
      if (answer.status >= 400 && method !== "HEAD") {
        assert.equal(
          typeof answer.json?.error?.code,
          "string",
          `${what}: ${answer.text.slice(0, 200)}`,
        );
      }
      // No stack frame, source path (this checkout's, wherever it is) or module URL.
      assert.doesNotMatch(answer.text, /\bat .*:\d+:\d+|file:\/\/|node_modules/, what);
      assert.ok(!answer.text.includes(CHECKOUT), `${what}: names the checkout`);
    }
    assert.equal(api.events.filter((e) => e.event === "http.error").length, 0);
    // Nothing of globex's changed.
    assert.equal((await api.store.jobGet({ id: ids.globex }))?.state, "available");
    assert.equal((await api.store.auditList({ target: `job:${ids.globex}` })).length, 1);
  });
}
