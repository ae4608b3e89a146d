/**
 * The web console's doors, in process on every backend (the browser tests
 * are `test/e2e/console_test.ts`): the role table names every route the
 * console registers; every answer carries the exact Content-Security-Policy;
 * a page without a session leads to `/login`, a bearer token is ignored; a
 * sign-in sets the `__Host-` cookie and the overview renders, hostile names
 * escaped; a tenant's person sees only their tenant's counts; a
 * cross-origin POST is refused; sign-out ends the session; assets are
 * hashed and immutable.
 */

import assert from "node:assert/strict";
import { ACTIONS } from "../../src/admin/actions.ts";
import { addPerson } from "../../src/admin/people.ts";
import { FakeClock } from "../../src/clock.ts";
import { CONSOLE_ROUTES, consoleRouteKey } from "../../src/console/access.ts";
import { consoleApp, consoleRoutes } from "../../src/console/app.ts";
import { assetPath } from "../../src/console/assets.ts";
import { CONTENT_SECURITY_POLICY, SESSION_COOKIE } from "../../src/console/security.ts";
import { type Backend, BACKENDS, newJob } from "../support/backends.ts";

const ORIGIN = "http://127.0.0.1:9464";

async function harness(backend: Backend) {
  const clock = new FakeClock();
  const h = await backend.open(clock.now());
  const app = consoleApp({
    store: h.store,
    clock,
    logger: () => {},
    timeouts: { idleMs: 60_000, absoluteMs: 3_600_000 },
  });
  const root = { actor: "root", reason: null, now: clock.now() };
  const call = async (
    method: string,
    path: string,
    init: { cookie?: string; headers?: Record<string, string>; body?: string } = {},
  ) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.cookie) headers.cookie = `${SESSION_COOKIE}=${init.cookie}`;
    if (init.body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await app.fetch(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers,
        redirect: "manual",
        ...(init.body === undefined ? {} : { body: init.body }),
      }),
      { remote: "127.0.0.1" },
    );
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  /** Signs `name` in; the session id from the cookie. */
  const signIn = async (name: string, password: string) => {
    const answer = await call("POST", "/login", {
      headers: { "sec-fetch-site": "same-origin" },
      body: new URLSearchParams({ name, password }).toString(),
    });
    assert.equal(answer.status, 303, answer.text);
    const cookie = answer.headers.get("set-cookie") ?? "";
    return /^__Host-jobs_session=([\w-]+);/.exec(cookie)?.[1] ?? "";
  };
  return {
    ...h,
    clock,
    app,
    call,
    signIn,
    addPerson: (name: string, roles: string[], tenant: string | null = null) =>
      addPerson(h.store, { name, roles, tenant, password: "pw" }, root, "host"),
    async [Symbol.asyncDispose]() {
      await h.close();
    },
  };
}

Deno.test("the console's role table names every route it registers behind a session, and no other", async () => {
  await using c = await harness(BACKENDS[0]!);
  const routes = consoleRoutes(c.app);
  const table = CONSOLE_ROUTES.map((r) => consoleRouteKey(r.method, r.path));
  for (const { key, isPublic } of routes) {
    assert.ok(isPublic || table.includes(key), `${key} is neither public nor in CONSOLE_ROUTES`);
  }
  for (const key of table) assert.ok(routes.some((r) => r.key === key), `${key} is not registered`);
  for (const route of CONSOLE_ROUTES) {
    const key = consoleRouteKey(route.method, route.path);
    if (route.method === "GET") {
      assert.equal(route.action, undefined, `${key} reads: it names no action`);
      continue;
    }
    assert.ok(route.action, `${key} acts but names no action of ACTIONS`);
    assert.deepEqual(route.roles, ACTIONS[route.action], `${key}: the roles of ${route.action}`);
  }
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console signs people in and out, and guards every answer`, async () => {
    await using c = await harness(backend);
    await c.addPerson("ada", ["admin"]);

    const anonymous = await c.call("GET", "/", { headers: { authorization: "Bearer anything" } });
    assert.equal(anonymous.status, 303);
    assert.equal(anonymous.headers.get("location"), "/login");
    assert.equal(anonymous.headers.get("content-security-policy"), CONTENT_SECURITY_POLICY);
    const login = await c.call("GET", "/login");
    assert.equal(login.status, 200);
    assert.match(login.text, /name="name"/);
    assert.match(login.text, /name="password"/);
    assert.equal(login.headers.get("cache-control"), "no-store");
    assert.equal(login.headers.get("x-content-type-options"), "nosniff");
    assert.equal(login.headers.get("referrer-policy"), "no-referrer");
    assert.ok(!/<script>|style=/.test(login.text), "no inline script or style");

    const wrong = await c.call("POST", "/login", {
      headers: { "sec-fetch-site": "same-origin" },
      body: "name=ada&password=nope",
    });
    assert.equal(wrong.status, 200);
    assert.equal(wrong.text.match(/role="alert"/g)?.length, 1);
    const unknown = await c.call("POST", "/login", {
      headers: { origin: ORIGIN },
      body: "name=nobody&password=nope",
    });
    assert.equal(unknown.status, 200);
    assert.equal(
      unknown.text.replace(/value="nobody"/, ""),
      wrong.text.replace(/value="ada"/, ""),
      "an unknown name and a wrong password get the same answer",
    );

    const answer = await c.call("POST", "/login", {
      headers: { "sec-fetch-site": "same-origin" },
      body: "name=ada&password=pw",
    });
    assert.equal(answer.status, 303);
    assert.match(
      answer.headers.get("set-cookie") ?? "",
      /^__Host-jobs_session=[\w-]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict$/,
    );
    const id = /=([\w-]+);/.exec(answer.headers.get("set-cookie")!)![1]!;

    await c.store.jobsInsert({
      jobs: [newJob({ queue: "<script>alert(1)</script>", scheduledAt: c.clock.now() })],
      now: c.clock.now(),
    });
    const overview = await c.call("GET", "/", { cookie: id });
    assert.equal(overview.status, 200, overview.text);
    assert.match(overview.text, /^<!doctype html>/);
    assert.match(overview.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.ok(!overview.text.includes("<script>alert"));
    assert.match(overview.text, /Signed in as <strong data-person="true">ada<\/strong>/);
    assert.ok(overview.text.includes(assetPath("app.css")));
    assert.equal(overview.headers.get("content-security-policy"), CONTENT_SECURITY_POLICY);

    const foreign = await c.call("POST", "/logout", {
      cookie: id,
      headers: { "sec-fetch-site": "cross-site" },
    });
    assert.equal(foreign.status, 403);
    const foreignOrigin = await c.call("POST", "/logout", {
      cookie: id,
      headers: { origin: "http://evil.test" },
    });
    assert.equal(foreignOrigin.status, 403);
    assert.equal(foreignOrigin.headers.get("content-security-policy"), CONTENT_SECURITY_POLICY);
    const unsaid = await c.call("POST", "/logout", { cookie: id });
    assert.equal(unsaid.status, 403, "neither Sec-Fetch-Site nor Origin: refused");
    assert.equal((await c.call("GET", "/", { cookie: id })).status, 200, "still signed in");

    const out = await c.call("POST", "/logout", {
      cookie: id,
      headers: { "sec-fetch-site": "same-origin" },
    });
    assert.equal(out.status, 303);
    assert.equal(out.headers.get("location"), "/login");
    assert.match(out.headers.get("set-cookie") ?? "", /Max-Age=0/);
    const after = await c.call("GET", "/", { cookie: id });
    assert.equal(after.status, 303);
    assert.equal(after.headers.get("location"), "/login?ended");

    const css = await c.call("GET", assetPath("app.css"));
    assert.equal(css.status, 200);
    assert.equal(css.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.match(assetPath("app.css"), /^\/assets\/app\.[0-9a-f]{16}\.css$/);
    assert.equal((await c.call("GET", "/assets/app.0000.css")).status, 404);
  });

  Deno.test(`${backend.name}: an idle session is sent to sign-in; a tenant's person sees only their tenant`, async () => {
    await using c = await harness(backend);
    await c.addPerson("ann", ["viewer"], "acme");
    await c.store.jobsInsert({
      jobs: [
        newJob({ tenant: "acme", queue: "mail", scheduledAt: c.clock.now() }),
        newJob({ tenant: "globex", queue: "globex-secret-queue", scheduledAt: c.clock.now() }),
      ],
      now: c.clock.now(),
    });
    const id = await c.signIn("ann", "pw");
    const page = await c.call("GET", "/", { cookie: id });
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes("globex"), "no other tenant's data");
    assert.match(page.text, /data-tenant="true">acme</);
    assert.match(page.text, /shared by every tenant/);
    c.clock.advance(60_000);
    const idle = await c.call("GET", "/", { cookie: id });
    assert.equal(idle.headers.get("location"), "/login?ended");
  });
}
