/**
 * The console's audit and admin pages in process, on every backend (the
 * browser tests are `test/e2e/console_admin_test.ts`): the audit page
 * filters by actor, action and target and pages by id, a tenant's person
 * seeing only their tenant's jobs' rows; people are added, disabled,
 * given roles and removed, each audited with the admin's name; a token's
 * secret is shown once; a session is revoked; placeholders are refused as
 * reasons; an operator is refused every admin page and action (403) and
 * sees no admin link; a tenant's admin sees a note and is refused every
 * action; hostile names render escaped.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { sessionHash } from "../../src/admin/sessions.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { type Backend, BACKENDS, newJob } from "../support/backends.ts";

const ORIGIN = "http://127.0.0.1:9464";
const HOSTILE = `<script>alert(1)</script>"onmouseover=alert(2)`;

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
  const call = async (method: string, path: string, cookie: string, body?: string) => {
    const headers: Record<string, string> = {
      cookie: `${SESSION_COOKIE}=${cookie}`,
      "sec-fetch-site": "same-origin",
    };
    if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await app.fetch(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers,
        redirect: "manual",
        ...(body === undefined ? {} : { body }),
      }),
      { remote: "127.0.0.1" },
    );
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const signIn = async (name: string, password = "pw") => {
    const response = await app.fetch(
      new Request(`${ORIGIN}/login`, {
        method: "POST",
        headers: {
          "sec-fetch-site": "same-origin",
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ name, password }).toString(),
        redirect: "manual",
      }),
      { remote: "127.0.0.1" },
    );
    assert.equal(response.status, 303, await response.text());
    const cookie = response.headers.get("set-cookie") ?? "";
    return /^__Host-jobs_session=([\w-]+);/.exec(cookie)?.[1] ?? "";
  };
  return {
    ...h,
    clock,
    call,
    signIn,
    form: (fields: Record<string, string | string[]>) => {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(fields)) {
        for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
      }
      return q.toString();
    },
    addPerson: (
      name: string,
      roles: string[],
      tenant: string | null = null,
      displayName?: string,
    ) => addPerson(h.store, { name, roles, tenant, password: "pw", displayName }, root, "host"),
    async [Symbol.asyncDispose]() {
      await h.close();
    },
  };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console's admin pages act through the doors, audited by name`, async () => {
    await using c = await harness(backend);
    await c.addPerson("ada", ["admin"], null, HOSTILE);
    const ada = await c.signIn("ada");

    const people = await c.call("GET", "/people", ada);
    assert.equal(people.status, 200);
    assert.ok(!people.text.includes("<script>alert"), "the display name is escaped");
    assert.ok(people.text.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    for (const link of ["/audit", "/people", "/tokens", "/sessions"]) {
      assert.ok(people.text.includes(`href="${link}"`), link);
    }

    const mismatch = await c.call(
      "POST",
      "/people",
      ada,
      c.form({ name: "bob", role: "operator", password: "a", password_again: "b" }),
    );
    assert.equal(mismatch.status, 400);
    assert.match(mismatch.text, /the two passwords differ/);
    assert.match(mismatch.text, /value="bob"/, "the form keeps what was typed");
    const added = await c.call(
      "POST",
      "/people",
      ada,
      c.form({ name: "bob", role: ["operator", "viewer"], password: "pw", password_again: "pw" }),
    );
    assert.equal(added.status, 303, added.text);
    assert.equal(added.headers.get("location"), "/people?done=added&name=bob");
    const again = await c.call(
      "POST",
      "/people",
      ada,
      c.form({ name: "bob", role: "operator", password: "pw", password_again: "pw" }),
    );
    assert.equal(again.status, 409);
    const bob = await c.signIn("bob");

    const placeholder = await c.call("POST", "/people/bob/disable", ada, "reason=TODO");
    assert.equal(placeholder.status, 400);
    assert.match(placeholder.text, /is not a reason/);
    const disabled = await c.call("POST", "/people/bob/disable", ada, "reason=left+the+team");
    assert.equal(disabled.status, 303);
    assert.equal((await c.call("GET", "/", bob)).headers.get("location"), "/login?ended");
    assert.equal(
      (await c.call("POST", "/people/bob/enable", ada, "reason=back+again")).status,
      303,
    );
    const roles = await c.call("POST", "/people/bob/roles", ada, "role=viewer&tenant=acme");
    assert.equal(roles.status, 303);
    const row = await c.store.principalGet({ kind: "person", name: "bob" });
    assert.deepEqual([row?.roles, row?.tenant], [["viewer"], "acme"]);
    assert.equal((await c.call("POST", "/people/bob/remove", ada, "")).status, 400);
    assert.equal((await c.call("POST", "/people/bob/remove", ada, "confirm=bob")).status, 303);
    assert.equal(await c.store.principalGet({ kind: "person", name: "bob" }), null);
    assert.equal(
      (await c.call("POST", "/people/nobody/remove", ada, "confirm=nobody")).status,
      404,
    );
    await c.addPerson("ops/eu.1@x", ["viewer"]);
    const odd = await c.call("GET", "/people", ada);
    assert.ok(odd.text.includes('action="/people/ops%2Feu.1%40x/disable"'), "the name is encoded");
    const slash = await c.call("POST", "/people/ops%2Feu.1%40x/disable", ada, "reason=moved+on");
    assert.equal(slash.status, 303, slash.text);
    assert.equal(slash.headers.get("location"), "/people?done=disabled&name=ops%2Feu.1%40x");
    assert.equal(
      (await c.store.principalGet({ kind: "person", name: "ops/eu.1@x" }))?.disabled,
      true,
    );

    const created = await c.call(
      "POST",
      "/tokens",
      ada,
      c.form({ name: "ci", role: "operator", expires: "30d" }),
    );
    assert.equal(created.status, 200);
    assert.equal(created.headers.get("cache-control"), "no-store");
    const secret = /<code class="token-secret" data-secret[^>]*>([^<]+)</.exec(created.text)?.[1];
    assert.ok(secret, "the secret is on the answer");
    const tokens = await c.call("GET", "/tokens", ada);
    assert.ok(tokens.text.includes(">ci<"), "the token is listed");
    assert.ok(!tokens.text.includes(secret), "never its secret again");
    const badExpiry = await c.call(
      "POST",
      "/tokens",
      ada,
      c.form({ name: "x", role: "viewer", expires: "soon" }),
    );
    assert.equal(badExpiry.status, 400);
    assert.equal((await c.call("POST", "/tokens/ci/revoke", ada, "reason=rotated")).status, 303);
    assert.equal(await c.store.principalGet({ kind: "token", name: "ci" }), null);

    await c.addPerson("cy", ["viewer"]);
    const cy = await c.signIn("cy");
    const sessions = await c.call("GET", "/sessions", ada);
    assert.equal(sessions.text.match(/data-current/g)?.length, 1, "ada's own session is marked");
    const handle = sessionHash(cy).slice(0, 12);
    assert.ok(sessions.text.includes(handle));
    assert.equal((await c.call("POST", `/sessions/${handle}/revoke`, ada, "")).status, 303);
    assert.equal((await c.call("GET", "/", cy)).headers.get("location"), "/login?ended");
    assert.equal((await c.call("POST", "/sessions/abcdef/revoke", ada, "")).status, 404);

    const audit = await c.call(
      "GET",
      "/audit?actor=ada&action=user.disable&target=user%3Abob",
      ada,
    );
    assert.equal(audit.status, 200);
    assert.equal(audit.text.match(/data-audit=/g)?.length, 1);
    assert.match(audit.text, /left the team/);
    const trail = (await c.store.auditPage({ limit: 100, actor: "ada" })).map((r) => r.action);
    for (const action of ["user.add", "user.disable", "user.enable", "user.set", "user.remove"]) {
      assert.ok(trail.includes(action), action);
    }
    assert.ok(trail.includes("token.create") && trail.includes("token.revoke"));
    assert.ok(trail.includes("session.revoke"));
  });

  Deno.test(`${backend.name}: the audit page filters and pages; others are refused the admin pages`, async () => {
    await using c = await harness(backend);
    await c.addPerson("ada", ["admin"]);
    await c.addPerson("olga", ["operator"]);
    await c.addPerson("tina", ["admin"], "acme");
    const at = c.clock.now() + 3_600_000;
    const [acme, globex] = (await c.store.jobsInsert({
      jobs: [
        newJob({ tenant: "acme", scheduledAt: at }),
        newJob({ tenant: "globex", scheduledAt: at }),
      ],
      now: c.clock.now(),
    })).map((r) => r.id);
    for (let i = 0; i < 60; i++) {
      await c.store.auditRecord({
        at: c.clock.now() + i,
        actor: i % 2 ? "ada" : HOSTILE,
        action: "job.retry",
        target: `job:${i % 3 ? acme : globex}`,
        reason: i === 59 ? HOSTILE : null,
      });
    }
    const ada = await c.signIn("ada");
    const first = await c.call("GET", "/audit", ada);
    assert.equal(first.text.match(/data-audit=/g)?.length, 50);
    assert.ok(!first.text.includes("<script>alert"));
    const older = /href="(\/audit\?after=\d+)"/.exec(first.text)?.[1];
    assert.ok(older, "a link to the older rows");
    const second = await c.call("GET", older, ada);
    assert.ok((second.text.match(/data-audit=/g)?.length ?? 0) >= 10);
    const filtered = await c.call("GET", `/audit?actor=ada&target=job%3A${globex}`, ada);
    assert.equal(filtered.text.match(/data-audit=/g)?.length, 10);
    assert.match(filtered.text, /name="actor" value="ada"/);

    const tina = await c.signIn("tina");
    const scoped = await c.call("GET", "/audit?action=job.retry", tina);
    assert.ok(!scoped.text.includes(`job:${globex}`), "no globex row for acme's admin");
    assert.ok(scoped.text.includes(`job:${acme}`));
    const note = await c.call("GET", "/people", tina);
    assert.equal(note.status, 200);
    assert.match(note.text, /data-tenant-note/);
    assert.ok(!note.text.includes('data-table="people"'));
    const refused = await c.call(
      "POST",
      "/tokens",
      tina,
      c.form({ name: "t", role: "viewer" }),
    );
    assert.equal(refused.status, 403);
    assert.equal(await c.store.principalGet({ kind: "token", name: "t" }), null);

    const olga = await c.signIn("olga");
    const overview = await c.call("GET", "/", olga);
    assert.ok(!overview.text.includes('href="/people"'), "no admin link for an operator");
    assert.ok(overview.text.includes('href="/audit"'));
    for (const path of ["/people", "/tokens", "/sessions"]) {
      assert.equal((await c.call("GET", path, olga)).status, 403, path);
    }
    const byHand = await c.call("POST", "/tokens", olga, c.form({ name: "t", role: "admin" }));
    assert.equal(byHand.status, 403);
    assert.equal((await c.call("POST", "/people/ada/disable", olga, "reason=coup")).status, 403);
    assert.equal(await c.store.principalGet({ kind: "token", name: "t" }), null);
  });
}
