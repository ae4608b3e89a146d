/**
 * What the doors of people and tokens refuse whoever acts: a token mints
 * neither tokens nor people (`token-cannot-mint`, before anything is checked
 * or written), while the host and a person may; and failed sign-ins are
 * limited per name (`SignInLimiter`): past the limit the name is refused,
 * even with the right password, until its window ends, an unknown name
 * counted like a known one. scrypt is slow on purpose: few hashes here.
 */

import assert from "node:assert/strict";
import type { Actor } from "../../src/admin/audit.ts";
import {
  addPerson,
  authenticatePerson,
  SignInLimited,
  SignInLimiter,
} from "../../src/admin/people.ts";
import { PrincipalRefused } from "../../src/admin/roles.ts";
import { createToken } from "../../src/admin/tokens.ts";
import { FakeClock } from "../../src/clock.ts";
import { BACKENDS, harnessTest } from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const who: Actor = { actor: "token:ci", reason: null, now: T0 };

function cannotMint(what: RegExp) {
  return (error: unknown) =>
    error instanceof PrincipalRefused && error.why === "token-cannot-mint" &&
    what.test(error.message);
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("a token cannot create tokens or people: refused first, nothing stored or audited", async ({ store }) => {
    await assert.rejects(
      createToken(store, { name: "more", roles: ["admin"] }, who, "token"),
      cannotMint(/cannot create tokens: .*`jobs tokens create` on the host/),
    );
    // Refused before the body is checked: a bad role says nothing about the rule.
    await assert.rejects(
      createToken(store, { name: "more", roles: ["admn"] }, who, "token"),
      cannotMint(/tokens/),
    );
    await assert.rejects(
      addPerson(store, { name: "eve", roles: ["admin"], password: "pw" }, who, "token"),
      cannotMint(/cannot create people: .*`jobs users add` on the host/),
    );
    assert.deepEqual(await store.principalsList({}), []);
    assert.deepEqual(await store.auditPage({ limit: 10 }), []);
    const made = await createToken(store, { name: "ci", roles: ["viewer"] }, who, "person");
    assert.equal(made.token.createdBy, "token:ci");
  });
}

Deno.test("SignInLimiter: past the limit a name is refused even with the right password until its window ends", async () => {
  const backend = BACKENDS[0]!;
  const clock = new FakeClock(T0);
  const h = await backend.open(clock.now());
  try {
    const store = h.store;
    await addPerson(
      store,
      { name: "ada", roles: ["viewer"], password: "right" },
      { actor: "root", reason: null, now: T0 },
      "host",
    );
    const limiter = new SignInLimiter(clock, { limit: 2, windowMs: 60_000 });
    const signIn = (name: string, password: string) =>
      authenticatePerson(store, name, password, clock.now(), limiter);
    assert.equal(await signIn("ada", "wrong"), null);
    assert.equal(await signIn("ada", "wrong again"), null);
    assert.equal(limiter.blockedFor("ada"), 60_000);
    await assert.rejects(
      signIn("ada", "right"),
      (e) => e instanceof SignInLimited && e.retryAfterMs === 60_000 && /60 s/.test(e.message),
    );
    clock.advance(30_000);
    await assert.rejects(signIn("ada", "right"), SignInLimited);
    // Another name is not held back by ada's failures.
    assert.equal(limiter.blockedFor("bob"), 0);
    clock.advance(30_000);
    assert.equal((await signIn("ada", "right"))?.name, "ada");

    // An unknown name is counted like a known one (and still costs a password check).
    assert.equal(await signIn("nobody", "x"), null);
    assert.equal(await signIn("nobody", "y"), null);
    await assert.rejects(signIn("nobody", "z"), SignInLimited);
  } finally {
    await h.close();
  }
});
