/**
 * Console sessions (`src/admin/sessions.ts`) on every backend: a sign-in
 * makes a session whose id is never stored (only its hash), audited; the
 * id resolves to the person as the store says now; idle and absolute
 * timeouts end a session (and delete it); a disabled, removed or re-keyed
 * person has no session; sign-out ends one; an admin lists and revokes
 * them, audited. scrypt is slow on purpose: few people here.
 */

import assert from "node:assert/strict";
import type { Actor } from "../../src/admin/audit.ts";
import {
  addPerson,
  removePerson,
  setPerson,
  setPersonDisabled,
  SignInLimited,
  SignInLimiter,
} from "../../src/admin/people.ts";
import {
  resolveSession,
  revokeSessions,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  sessionHandle,
  sessionHash,
  SessionRefused,
  signIn,
  signOut,
} from "../../src/admin/sessions.ts";
import { FakeClock } from "../../src/clock.ts";
import { BACKENDS, harnessTest } from "../support/backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const root: Actor = { actor: "root", reason: null, now: T0 };

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("a sign-in makes a session: its id is returned once, only its hash stored, audited", async ({ store }) => {
    await addPerson(
      store,
      { name: "ada", roles: ["operator"], tenant: "acme", password: "pw" },
      root,
      "host",
    );
    assert.equal(await signIn(store, "ada", "wrong", { now: T0 }), null);
    assert.equal(await signIn(store, "nobody", "pw", { now: T0 }), null);
    const signed = await signIn(store, "ada", "pw", {
      now: T0,
      address: "10.0.0.1",
      userAgent: "x".repeat(1000),
    });
    assert.ok(signed);
    assert.match(signed.id, /^[\w-]{43}$/);
    assert.deepEqual(signed.person, {
      name: "ada",
      kind: "person",
      roles: ["operator"],
      tenant: "acme",
    });
    const [row] = await store.sessionsList({});
    assert.equal(row?.idHash, sessionHash(signed.id));
    assert.equal(row?.userAgent?.length, 256);
    assert.equal(row?.expiresAt, T0 + SESSION_ABSOLUTE_MS);
    assert.ok(!JSON.stringify(await store.sessionsList({})).includes(signed.id));
    const audit = await store.auditList({ target: "user:ada" });
    assert.deepEqual(audit.map((a) => a.action), ["user.add", "user.sign_in"]);
    assert.ok(!JSON.stringify(audit).includes(signed.id));
  });

  test("a session resolves to the person as they are now, until idle or past its end", async ({ store }) => {
    await addPerson(store, { name: "ada", roles: ["viewer"], password: "pw" }, root, "host");
    const { id } = (await signIn(store, "ada", "pw", { now: T0 }))!;
    assert.equal((await resolveSession(store, id, T0 + 1000))?.name, "ada");
    await setPerson(store, "ada", { roles: ["admin"] }, root);
    assert.deepEqual((await resolveSession(store, id, T0 + 2000))?.roles, ["admin"]);
    // Used within the idle timeout each time: it lives until its absolute end.
    let now = T0;
    while (now + SESSION_IDLE_MS - 1 < T0 + SESSION_ABSOLUTE_MS) {
      now += SESSION_IDLE_MS - 1;
      assert.ok(await resolveSession(store, id, now), `alive at +${now - T0} ms`);
    }
    assert.equal(await resolveSession(store, id, T0 + SESSION_ABSOLUTE_MS), null);
    assert.deepEqual(await store.sessionsList({}), [], "an ended session is deleted");
    const again = (await signIn(store, "ada", "pw", { now: T0 }))!;
    const idle = { idleMs: 2000, absoluteMs: SESSION_ABSOLUTE_MS };
    assert.ok(await resolveSession(store, again.id, T0 + 1999, idle));
    assert.equal(await resolveSession(store, again.id, T0 + 1999 + 2000, idle), null);
    assert.equal(await resolveSession(store, "not an id", T0), null);
  });

  test("disabling, removing or re-keying a person ends their sessions; sign-out ends one", async ({ store }) => {
    await addPerson(store, { name: "ada", roles: ["viewer"], password: "pw" }, root, "host");
    const one = (await signIn(store, "ada", "pw", { now: T0 }))!;
    await setPersonDisabled(store, "ada", true, root);
    assert.equal(await resolveSession(store, one.id, T0), null);
    assert.deepEqual(await store.sessionsList({}), []);
    await setPersonDisabled(store, "ada", false, root);
    const two = (await signIn(store, "ada", "pw", { now: T0 }))!;
    await setPerson(store, "ada", { password: "new" }, root);
    assert.equal(await resolveSession(store, two.id, T0), null);
    const three = (await signIn(store, "ada", "new", { now: T0 }))!;
    assert.equal(await signOut(store, three.id, T0 + 5), true);
    assert.equal(await signOut(store, three.id, T0 + 6), false);
    assert.equal(await resolveSession(store, three.id, T0 + 7), null);
    const four = (await signIn(store, "ada", "new", { now: T0 }))!;
    await removePerson(store, "ada", root);
    assert.equal(await resolveSession(store, four.id, T0), null);
    assert.deepEqual(await store.sessionsList({}), []);
    const actions = (await store.auditList({ target: "user:ada" })).map((a) => a.action);
    assert.ok(actions.includes("user.sign_out"));
  });

  test("an admin revokes one session by its handle's prefix, or all of a person's, audited", async ({ store }) => {
    await addPerson(store, { name: "ada", roles: ["viewer"], password: "pw" }, root, "host");
    const a = (await signIn(store, "ada", "pw", { now: T0 }))!;
    const b = (await signIn(store, "ada", "pw", { now: T0 + 1 }))!;
    await assert.rejects(
      revokeSessions(store, { prefix: "zz" }, root),
      (e) => e instanceof SessionRefused && e.why === "bad-prefix",
    );
    await assert.rejects(
      revokeSessions(store, { prefix: "000000" + "0".repeat(6) }, root),
      (e) => e instanceof SessionRefused && (e.why === "missing" || e.why === "ambiguous"),
    );
    const handle = sessionHandle(a.session);
    assert.deepEqual(await revokeSessions(store, { prefix: handle.slice(0, 8) }, root), [handle]);
    assert.equal(await resolveSession(store, a.id, T0 + 2), null);
    assert.ok(await resolveSession(store, b.id, T0 + 2));
    assert.deepEqual(await revokeSessions(store, { person: "ada" }, root), [
      sessionHandle(b.session),
    ]);
    assert.equal(await resolveSession(store, b.id, T0 + 3), null);
    assert.equal(
      (await store.auditList({ target: `session:${handle}` }))[0]?.action,
      "session.revoke",
    );
  });

  test("failed sign-ins are limited per name", async ({ store }) => {
    const clock = new FakeClock(T0);
    const limiter = new SignInLimiter(clock, { limit: 2 });
    assert.equal(await signIn(store, "eve", "x", { now: T0, limiter }), null);
    assert.equal(await signIn(store, "eve", "x", { now: T0, limiter }), null);
    await assert.rejects(signIn(store, "eve", "x", { now: T0, limiter }), SignInLimited);
  });
}
