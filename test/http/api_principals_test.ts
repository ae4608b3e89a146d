/**
 * `/api/v1/users` and `/api/v1/tokens` on every backend: only admins list,
 * revoke, disable and enable (a viewer and an operator get 403 naming the
 * role); the lists never hold a hash or a secret; a token (the daemon's
 * `--token` included) cannot create tokens or people (403
 * `token-cannot-mint`, nothing stored or audited) while a malformed body is
 * still 400; each action is audited as `token:<name>`; unknown names are
 * 404; a tenant's principal is refused (403 `installation-scope-required`).
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

const ACTIONS = [
  ["POST", "/api/v1/tokens/ci/revoke"],
  ["POST", "/api/v1/users/ada/disable"],
  ["POST", "/api/v1/users/ada/enable"],
] as const;

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: only an admin lists people and tokens, and the lists hold no hash or secret`, async () => {
    await using api = await apiHarness(backend);
    const root = { actor: "root", reason: null, now: api.clock.now() };
    await addPerson(
      api.store,
      {
        name: "ada",
        roles: ["admin"],
        displayName: "Ada",
        password: "pw",
      },
      root,
      "host",
    );
    const viewer = await api.token("reader", ["viewer"]);
    const ops = await api.token("ops", ["operator", "approver"]);
    const admin = await api.token("boss", ["admin"]);
    const ci = await api.token("ci", ["operator"], "acme", 86_400_000);
    for (const secret of [viewer, ops]) {
      for (const path of ["/api/v1/users", "/api/v1/tokens"]) {
        const refused = await api.call("GET", path, secret);
        assert.equal(refused.status, 403, path);
        assert.equal(refused.json.error.code, "role-required");
        assert.match(refused.json.error.message, /"admin"/);
      }
      for (const [method, path] of ACTIONS) {
        const refused = await api.call(method, path, secret, {});
        assert.equal(refused.status, 403, path);
        assert.equal(refused.json.error.code, "role-required");
      }
    }
    const users = await api.call("GET", "/api/v1/users", admin);
    assert.equal(users.status, 200);
    assert.deepEqual(users.json.next, null);
    assert.deepEqual(
      users.json.users.map((u: Record<string, unknown>) => [u.name, u.displayName, u.roles]),
      [["ada", "Ada", ["admin"]]],
    );
    assert.deepEqual(Object.keys(users.json.users[0]).sort(), [
      "createdAt",
      "createdBy",
      "disabled",
      "displayName",
      "lastSignInAt",
      "name",
      "roles",
      "tenant",
      "updatedAt",
    ]);
    const tokens = await api.call("GET", "/api/v1/tokens", INSTALL_TOKEN);
    assert.equal(tokens.status, 200);
    assert.deepEqual(
      tokens.json.tokens.map((t: Record<string, unknown>) => [t.name, t.tenant, t.expired]),
      [["boss", null, false], ["ci", "acme", false], ["ops", null, false], [
        "reader",
        null,
        false,
      ]],
    );
    const text = users.text + tokens.text;
    for (const secret of [viewer, ops, admin, ci]) assert.ok(!text.includes(secret));
    assert.ok(!/scrypt|sha256|secret|hash/i.test(text), text);

    const first = await api.call("GET", "/api/v1/tokens?limit=2", admin);
    assert.deepEqual(first.json.tokens.map((t: { name: string }) => t.name), ["boss", "ci"]);
    assert.equal(first.json.next, "ci");
    const second = await api.call("GET", "/api/v1/tokens?limit=2&after=ci", admin);
    assert.deepEqual(second.json.tokens.map((t: { name: string }) => t.name), ["ops", "reader"]);
    assert.equal(second.json.next, null);
    for (const query of ["tenant=acme", "limit=0", "limit=1000", "after="]) {
      const bad = await api.call("GET", `/api/v1/tokens?${query}`, admin);
      assert.equal(bad.status, 400, query);
      assert.equal(bad.json.error.code, "query-invalid");
    }
  });

  Deno.test(`${backend.name}: a token cannot create tokens or people (403 token-cannot-mint), nothing stored or audited; a malformed body is 400`, async () => {
    await using api = await apiHarness(backend);
    const admin = await api.token("boss", ["admin"]);
    const before = await api.call("GET", "/api/v1/tokens", admin);
    for (const secret of [INSTALL_TOKEN, admin]) {
      const token = await api.call("POST", "/api/v1/tokens", secret, {
        name: "minted",
        roles: ["admin"],
        expires: "30d",
      });
      assert.equal(token.status, 403);
      assert.equal(token.json.error.code, "token-cannot-mint");
      assert.match(token.json.error.message, /`jobs tokens create` on the host/);
      const person = await api.call("POST", "/api/v1/users", secret, {
        name: "eve",
        roles: ["admin"],
        tenant: "acme",
        displayName: "Eve",
        password: "let me in",
      });
      assert.equal(person.status, 403);
      assert.equal(person.json.error.code, "token-cannot-mint");
      assert.match(person.json.error.message, /`jobs users add` on the host/);
      for (
        const body of [
          { name: "minted", roles: ["admin"], secret: "mine" },
          { name: "minted" },
          { name: "minted", roles: [] },
          { name: "minted", roles: ["admin"], expires: 30 },
        ]
      ) {
        const bad = await api.call("POST", "/api/v1/tokens", secret, body);
        assert.equal(bad.status, 400, JSON.stringify(body));
        assert.equal(bad.json.error.code, "body-invalid");
      }
      for (
        const body of [
          { name: "eve", roles: ["admin"] },
          { name: "eve", roles: ["admin"], password: "" },
          { name: "eve", roles: ["admin"], password: "pw", kind: "token" },
        ]
      ) {
        const bad = await api.call("POST", "/api/v1/users", secret, body);
        assert.equal(bad.status, 400, JSON.stringify(body));
        assert.equal(bad.json.error.code, "body-invalid");
      }
    }
    const after = await api.call("GET", "/api/v1/tokens", admin);
    assert.deepEqual(after.json.tokens.map((t: { name: string }) => t.name), ["boss"]);
    assert.deepEqual(
      after.json.tokens.map((t: { name: string }) => t.name),
      before.json.tokens.map((t: { name: string }) => t.name),
    );
    assert.deepEqual((await api.call("GET", "/api/v1/users", admin)).json.users, []);
    assert.deepEqual(await api.store.auditList({ target: "token:minted" }), []);
    assert.deepEqual(await api.store.auditList({ target: "user:eve" }), []);
  });

  Deno.test(`${backend.name}: an admin revokes a token (itself too), audited as the token; unknown names are 404`, async () => {
    await using api = await apiHarness(backend);
    const admin = await api.token("boss", ["admin"]);
    const ci = await api.token("ci", ["operator"]);
    assert.equal((await api.call("GET", "/api/v1/me", ci)).status, 200);
    const revoked = await api.call("POST", "/api/v1/tokens/ci/revoke", admin, {
      reason: "leaked in a build log",
    });
    assert.equal(revoked.status, 200);
    assert.deepEqual(revoked.json, { name: "ci", revoked: true });
    assert.equal((await api.call("GET", "/api/v1/me", ci)).status, 401);
    const [row] = await api.store.auditList({ target: "token:ci" }).then((rows) =>
      rows.filter((r) => r.action === "token.revoke")
    );
    assert.deepEqual([row?.actor, row?.reason], ["token:boss", "leaked in a build log"]);

    const again = await api.call("POST", "/api/v1/tokens/ci/revoke", admin, {});
    assert.equal(again.status, 404);
    assert.equal(again.json.error.code, "token-not-found");
    assert.match(again.json.error.message, /"ci"/);
    const placeholder = await api.call("POST", "/api/v1/tokens/boss/revoke", admin, {
      reason: "TODO",
    });
    assert.equal(placeholder.status, 400);
    assert.equal(placeholder.json.error.code, "reason-invalid");
    const unknownField = await api.call("POST", "/api/v1/tokens/boss/revoke", admin, {
      tenant: "acme",
    });
    assert.equal(unknownField.status, 400);

    const self = await api.call("POST", "/api/v1/tokens/boss/revoke", admin, {});
    assert.equal(self.status, 200);
    assert.equal((await api.call("GET", "/api/v1/tokens", admin)).status, 401);
    const [own] = await api.store.auditList({ target: "token:boss" }).then((rows) =>
      rows.filter((r) => r.action === "token.revoke")
    );
    assert.equal(own?.actor, "token:boss");
  });

  Deno.test(`${backend.name}: an admin disables and enables a person, audited as the token; an unknown person is 404`, async () => {
    await using api = await apiHarness(backend);
    await addPerson(api.store, { name: "ada", roles: ["operator"], password: "pw" }, {
      actor: "root",
      reason: null,
      now: api.clock.now(),
    }, "host");
    const admin = await api.token("boss", ["admin"]);
    const disabled = await api.call("POST", "/api/v1/users/ada/disable", admin, {
      reason: "left the company",
    });
    assert.equal(disabled.status, 200);
    assert.deepEqual(disabled.json, { name: "ada", disabled: true, was: false });
    const listed = await api.call("GET", "/api/v1/users", admin);
    assert.equal(listed.json.users[0].disabled, true);
    const enabled = await api.call("POST", "/api/v1/users/ada/enable", INSTALL_TOKEN, {});
    assert.deepEqual(enabled.json, { name: "ada", disabled: false, was: true });
    const rows = await api.store.auditList({ target: "user:ada" });
    assert.deepEqual(
      rows.filter((r) => r.action !== "user.add").map((r) => [r.action, r.actor, r.reason]),
      [
        ["user.disable", "token:boss", "left the company"],
        ["user.enable", "token:installation", null],
      ],
    );
    for (const action of ["disable", "enable"]) {
      const missing = await api.call("POST", `/api/v1/users/bob/${action}`, admin, {});
      assert.equal(missing.status, 404);
      assert.equal(missing.json.error.code, "user-not-found");
    }
    assert.deepEqual(await api.store.auditList({ target: "user:bob" }), []);
  });

  Deno.test(`${backend.name}: a tenant's admin is refused every people and tokens route (403), nothing changed`, async () => {
    await using api = await apiHarness(backend);
    const acmeAdmin = await api.token("acme-admin", ["admin"], "acme");
    await api.token("ci", ["operator"]);
    const reads = ["/api/v1/users", "/api/v1/tokens"];
    for (const path of reads) {
      const refused = await api.call("GET", path, acmeAdmin);
      assert.equal(refused.status, 403, path);
      assert.equal(refused.json.error.code, "installation-scope-required");
    }
    for (const [method, path] of ACTIONS) {
      const refused = await api.call(method, path, acmeAdmin, {});
      assert.equal(refused.status, 403, path);
      assert.equal(refused.json.error.code, "installation-scope-required");
    }
    const mint = await api.call("POST", "/api/v1/tokens", acmeAdmin, {
      name: "more",
      roles: ["viewer"],
    });
    assert.equal(mint.status, 403);
    assert.deepEqual(
      (await api.store.principalsList({ kind: "token" })).map((t) => t.name),
      ["acme-admin", "ci"],
    );
  });
}
