/**
 * The web console's sessions, on every backend: a session inserted reads
 * back by its hash, a hash is unique, a touch moves `last_seen_at` forward
 * only, the list is newest first and per person, a person's sessions are
 * deleted together, pruning removes the expired and the idle, and every
 * write inside a transaction rolls back with it.
 */

import assert from "node:assert/strict";
import type { SessionRow } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { T0 } from "./helpers.ts";

function session(idHash: string, person: string, fields: Partial<SessionRow> = {}): SessionRow {
  return {
    idHash,
    person,
    createdAt: T0,
    lastSeenAt: T0,
    expiresAt: T0 + 12 * 3_600_000,
    address: "127.0.0.1",
    userAgent: "Mozilla/5.0",
    ...fields,
  };
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("sessionInsert() stores a session; sessionGet() reads it back by its hash", async ({ store }) => {
    const a = session("a".repeat(64), "ada");
    assert.equal(await store.sessionInsert({ session: a }), true);
    assert.equal(await store.sessionInsert({ session: { ...a, person: "eve" } }), false);
    assert.deepEqual(await store.sessionGet({ idHash: a.idHash }), a);
    const bare = session("b".repeat(64), "bob", { address: null, userAgent: null });
    await store.sessionInsert({ session: bare });
    assert.deepEqual(await store.sessionGet({ idHash: bare.idHash }), bare);
    assert.equal(await store.sessionGet({ idHash: "c".repeat(64) }), null);
  });

  test("sessionTouch() moves last_seen_at forward only; sessionDelete() says whether it deleted", async ({ store }) => {
    const a = session("a".repeat(64), "ada");
    await store.sessionInsert({ session: a });
    assert.equal(await store.sessionTouch({ idHash: a.idHash, now: T0 + 5000 }), true);
    assert.equal(await store.sessionTouch({ idHash: a.idHash, now: T0 + 1000 }), true);
    assert.equal((await store.sessionGet({ idHash: a.idHash }))?.lastSeenAt, T0 + 5000);
    assert.equal(await store.sessionTouch({ idHash: "f".repeat(64), now: T0 }), false);
    assert.equal(await store.sessionDelete({ idHash: a.idHash }), true);
    assert.equal(await store.sessionDelete({ idHash: a.idHash }), false);
    assert.equal(await store.sessionGet({ idHash: a.idHash }), null);
  });

  test("sessionsList() is newest first, per person when asked; sessionsDeleteFor() ends a person's", async ({ store }) => {
    await store.sessionInsert({ session: session("1".repeat(64), "ada", { createdAt: T0 }) });
    await store.sessionInsert({ session: session("2".repeat(64), "bob", { createdAt: T0 + 1 }) });
    await store.sessionInsert({ session: session("3".repeat(64), "ada", { createdAt: T0 + 2 }) });
    assert.deepEqual((await store.sessionsList({})).map((s) => s.idHash[0]), ["3", "2", "1"]);
    assert.deepEqual((await store.sessionsList({ limit: 1 })).map((s) => s.idHash[0]), ["3"]);
    assert.deepEqual(
      (await store.sessionsList({ person: "ada" })).map((s) => s.idHash[0]),
      ["3", "1"],
    );
    assert.equal(await store.sessionsDeleteFor({ person: "ada" }), 2);
    assert.equal(await store.sessionsDeleteFor({ person: "ada" }), 0);
    assert.deepEqual((await store.sessionsList({})).map((s) => s.person), ["bob"]);
  });

  test("sessionsPrune() deletes the expired, and the idle when given a bound", async ({ store }) => {
    await store.sessionInsert({ session: session("1".repeat(64), "ada", { expiresAt: T0 + 10 }) });
    await store.sessionInsert({ session: session("2".repeat(64), "ada", { lastSeenAt: T0 + 1 }) });
    await store.sessionInsert({ session: session("3".repeat(64), "ada", { lastSeenAt: T0 + 50 }) });
    assert.equal(await store.sessionsPrune({ now: T0 + 10 }), 1);
    assert.equal(await store.sessionsPrune({ now: T0 + 10, idleBefore: T0 + 20 }), 1);
    assert.deepEqual((await store.sessionsList({})).map((s) => s.idHash[0]), ["3"]);
  });

  test("the sessions' writes on a transaction commit or roll back with it", async ({ store }) => {
    await store.sessionInsert({ session: session("1".repeat(64), "ada") });
    const writes = async (tx: Parameters<Parameters<typeof store.transaction>[0]>[0]) => {
      assert.equal(await tx.sessionInsert({ session: session("2".repeat(64), "bob") }), true);
      assert.equal(await tx.sessionsDeleteFor({ person: "ada" }), 1);
      assert.equal(await tx.sessionTouch({ idHash: "2".repeat(64), now: T0 + 9 }), true);
      assert.deepEqual((await tx.sessionsList({})).map((s) => s.person), ["bob"]);
      assert.equal((await tx.sessionGet({ idHash: "2".repeat(64) }))?.lastSeenAt, T0 + 9);
    };
    await assert.rejects(
      store.transaction(async (tx) => {
        await writes(tx);
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    assert.deepEqual((await store.sessionsList({})).map((s) => s.person), ["ada"]);
    await store.transaction(writes);
    assert.deepEqual((await store.sessionsList({})).map((s) => s.person), ["bob"]);
  });
}
