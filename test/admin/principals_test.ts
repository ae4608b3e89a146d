/**
 * The doors of people and tokens (src/admin/people.ts, tokens.ts), on every
 * backend: each change is audited in its transaction (an audit write that
 * fails leaves nothing), what they refuse names the value, a token's
 * secret authenticates until it expires or is revoked, and a password
 * authenticates only its person while enabled.
 */

import assert from "node:assert/strict";
import type { Actor } from "../../src/admin/audit.ts";
import {
  addPerson,
  authenticatePerson,
  listPeople,
  removePerson,
  setPerson,
  setPersonDisabled,
} from "../../src/admin/people.ts";
import { PrincipalRefused } from "../../src/admin/roles.ts";
import { authenticateToken, createToken, listTokens, revokeToken } from "../../src/admin/tokens.ts";
import type { Store, StoreTx } from "../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;
const who: Actor = { actor: "root", reason: null, now: T0 };

/** `store` whose transactions' audit writes fail. */
function auditFails(store: Store): Store {
  const refuse = () => Promise.reject(new Error("audit refused (test)"));
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "transaction") {
        return <T>(fn: (tx: StoreTx) => Promise<T>) =>
          target.transaction((tx) => fn({ ...tx, auditRecord: refuse }));
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function refused(why: PrincipalRefused["why"], message: RegExp) {
  return (error: unknown) =>
    error instanceof PrincipalRefused && error.why === why && message.test(error.message);
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("people: add, set, disable, enable and remove, each audited; a password signs in only while enabled", async ({ store }) => {
    const ada = await addPerson(
      store,
      { name: "ada", roles: ["admin", "viewer", "admin"], password: "s3cret pass" },
      who,
      "host",
    );
    assert.deepEqual([ada.roles, ada.tenant, ada.disabled], [["admin", "viewer"], null, false]);
    await assert.rejects(
      addPerson(store, { name: "ada", roles: ["viewer"], password: "x" }, who, "host"),
      refused("exists", /a person "ada" exists already/),
    );

    const signedIn = await authenticatePerson(store, "ada", "s3cret pass", T0 + 5);
    assert.equal(signedIn?.name, "ada");
    assert.equal((await listPeople(store))[0]?.lastUsedAt, T0 + 5);
    assert.equal(await authenticatePerson(store, "ada", "wrong", T0 + 6), null);
    assert.equal(await authenticatePerson(store, "bob", "s3cret pass", T0 + 6), null);

    const set = await setPerson(
      store,
      "ada",
      { roles: ["operator"], tenant: "acme", displayName: "Ada L." },
      who,
    );
    assert.deepEqual([set.roles, set.tenant, set.displayName], [["operator"], "acme", "Ada L."]);
    const untenanted = await setPerson(store, "ada", { tenant: null }, who);
    assert.equal(untenanted.tenant, null);
    await assert.rejects(setPerson(store, "ada", {}, who), refused("nothing-to-change", /nothing/));
    await assert.rejects(
      setPerson(store, "nobody", { roles: ["viewer"] }, who),
      refused("missing", /no person "nobody"/),
    );

    assert.equal((await setPersonDisabled(store, "ada", true, who)).was, false);
    assert.equal(await authenticatePerson(store, "ada", "s3cret pass", T0 + 20), null);
    assert.equal((await setPersonDisabled(store, "ada", false, who)).was, true);
    assert.equal((await authenticatePerson(store, "ada", "s3cret pass", T0 + 30))?.name, "ada");

    await removePerson(store, "ada", { ...who, reason: "left the team" });
    assert.deepEqual(await listPeople(store), []);
    await assert.rejects(removePerson(store, "ada", who), refused("missing", /no person/));

    const trail = await store.auditList({ target: "user:ada" });
    assert.deepEqual(trail.map((a) => a.action), [
      "user.add",
      "user.set",
      "user.set",
      "user.disable",
      "user.enable",
      "user.remove",
    ]);
    assert.deepEqual(trail[0]?.details, {
      roles: ["admin", "viewer"],
      tenant: null,
      displayName: null,
    });
    assert.equal(trail.at(-1)?.reason, "left the team");
    assert.ok(trail.every((a) => !JSON.stringify(a).includes("s3cret")));
    assert.ok(trail.every((a) => !JSON.stringify(a).includes("scrypt")));
  });

  test("people and tokens refuse a bad role, name or tenant, naming it, and an empty password", async ({ store }) => {
    await assert.rejects(
      addPerson(store, { name: "ada", roles: ["admn"], password: "x" }, who, "host"),
      refused(
        "bad-role",
        /"admn" is not a role \(viewer, operator, approver, admin\); did you mean "admin"\?/,
      ),
    );
    await assert.rejects(
      addPerson(store, { name: "ada", roles: [], password: "x" }, who, "host"),
      refused("no-role", /at least one role/),
    );
    await assert.rejects(
      addPerson(store, { name: "-ada", roles: ["viewer"], password: "x" }, who, "host"),
      refused("bad-name", /"-ada" is not a person's name/),
    );
    await assert.rejects(
      addPerson(
        store,
        { name: "ada", roles: ["viewer"], tenant: "a b", password: "x" },
        who,
        "host",
      ),
      refused("bad-tenant", /"a b" is not a tenant's name/),
    );
    await assert.rejects(
      addPerson(store, { name: "ada", roles: ["viewer"], password: "" }, who, "host"),
      refused("bad-password", /the password is empty/),
    );
    await assert.rejects(
      createToken(store, { name: "ci@x", roles: ["viewer"] }, who, "host"),
      refused("bad-name", /"ci@x" is not a token's name/),
    );
    assert.deepEqual(await store.principalsList({}), []);
  });

  test("tokens: the secret authenticates until it expires or is revoked; only its hash is stored", async ({ store }) => {
    const { token, secret } = await createToken(
      store,
      { name: "ci", roles: ["operator"], tenant: "acme", expiresInMs: 30 * DAY },
      who,
      "host",
    );
    assert.match(secret, /^jobs_[\w-]{43}$/);
    assert.deepEqual([token.roles, token.tenant, token.expiresAt], [
      ["operator"],
      "acme",
      T0 + 30 * DAY,
    ]);
    const held = await store.principalSecretHash({ kind: "token", name: "ci" });
    assert.ok(held && !held.secretHash.includes(secret));

    assert.equal((await authenticateToken(store, secret, T0 + DAY))?.name, "ci");
    assert.equal((await listTokens(store, T0 + DAY))[0]?.lastUsedAt, T0 + DAY);
    // One character changed (the last one may already be an A: 1 in 64).
    const other = `${secret.slice(0, -1)}${secret.endsWith("A") ? "B" : "A"}`;
    assert.equal(await authenticateToken(store, other, T0 + DAY), null);
    assert.equal(await authenticateToken(store, "not a token", T0 + DAY), null);
    assert.equal(await authenticateToken(store, secret, T0 + 30 * DAY), null, "expired");
    assert.equal((await listTokens(store, T0 + 30 * DAY))[0]?.expired, true);

    await assert.rejects(
      createToken(store, { name: "ci", roles: ["viewer"] }, who, "host"),
      refused("exists", /a token "ci" exists already/),
    );
    const forever = await createToken(store, { name: "cron", roles: ["viewer"] }, who, "host");
    assert.equal(forever.token.expiresAt, null);
    assert.notEqual(forever.secret, secret);

    await revokeToken(store, "ci", who);
    assert.equal(await authenticateToken(store, secret, T0 + DAY), null, "revoked");
    await assert.rejects(revokeToken(store, "ci", who), refused("missing", /no token "ci"/));
    assert.deepEqual((await listTokens(store, T0)).map((t) => t.name), ["cron"]);
    const trail = await store.auditList({ target: "token:ci" });
    assert.deepEqual(trail.map((a) => [a.action, a.actor]), [
      ["token.create", "root"],
      ["token.revoke", "root"],
    ]);
    assert.deepEqual(trail[0]?.details, {
      roles: ["operator"],
      tenant: "acme",
      expiresAt: T0 + 30 * DAY,
    });
    assert.ok(trail.every((a) => !JSON.stringify(a).includes(secret)));
  });

  test("a person or token change whose audit write fails stores nothing", async ({ store }) => {
    const broken = auditFails(store);
    await assert.rejects(
      addPerson(broken, { name: "ada", roles: ["admin"], password: "pw" }, who, "host"),
      /audit refused/,
    );
    await assert.rejects(
      createToken(broken, { name: "ci", roles: ["viewer"] }, who, "host"),
      /audit refused/,
    );
    assert.deepEqual(await store.principalsList({}), []);
    await createToken(store, { name: "ci", roles: ["viewer"] }, who, "host");
    await assert.rejects(revokeToken(broken, "ci", who), /audit refused/);
    assert.deepEqual((await store.principalsList({})).map((p) => p.name), ["ci"]);
  });
}
