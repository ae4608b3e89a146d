/**
 * People and tokens, on every backend: a principal inserted reads back
 * without its secret's hash, names are unique per kind, an update changes
 * only what it names, a deletion and a use are reported, the hash comes out
 * only through the method named for it, a token is found by its hash, and
 * every write inside a transaction rolls back with it.
 */

import assert from "node:assert/strict";
import type { NewPrincipal } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { T0 } from "./helpers.ts";

const ADA: NewPrincipal = {
  kind: "person",
  name: "ada",
  displayName: "Ada Lovelace",
  roles: ["admin", "operator"],
  secretHash: "scrypt$ln=17,r=8,p=1$c2FsdA$aGFzaA",
  createdBy: "root",
};

const CI: NewPrincipal = {
  kind: "token",
  name: "ci",
  roles: ["operator"],
  tenant: "acme",
  secretHash: "sha256$00ff",
  expiresAt: T0 + 86_400_000,
  createdBy: "root",
};

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("principalInsert() stores a person and a token; principalGet() reads them back without a hash", async ({ store }) => {
    assert.equal(await store.principalInsert({ principal: ADA, now: T0 }), true);
    assert.equal(await store.principalInsert({ principal: CI, now: T0 + 1 }), true);
    const ada = await store.principalGet({ kind: "person", name: "ada" });
    assert.deepEqual(ada, {
      kind: "person",
      name: "ada",
      displayName: "Ada Lovelace",
      roles: ["admin", "operator"],
      tenant: null,
      disabled: false,
      expiresAt: null,
      createdBy: "root",
      createdAt: T0,
      updatedAt: T0,
      lastUsedAt: null,
    });
    const ci = await store.principalGet({ kind: "token", name: "ci" });
    assert.equal(ci?.tenant, "acme");
    assert.equal(ci?.expiresAt, T0 + 86_400_000);
    assert.equal(ci?.displayName, null);
    for (const row of [ada, ci, ...await store.principalsList({})]) {
      assert.ok(!JSON.stringify(row).includes("sha256") && !JSON.stringify(row).includes("scrypt"));
    }
    assert.equal(await store.principalGet({ kind: "token", name: "ada" }), null);
  });

  test("a name is unique per kind: a second insert of it writes nothing, the other kind may use it", async ({ store }) => {
    await store.principalInsert({ principal: ADA, now: T0 });
    const again = { ...ADA, roles: ["viewer"], secretHash: "other" };
    assert.equal(await store.principalInsert({ principal: again, now: T0 + 5 }), false);
    assert.deepEqual((await store.principalGet({ kind: "person", name: "ada" }))?.roles, [
      "admin",
      "operator",
    ]);
    const token = { ...CI, name: "ada", secretHash: "sha256$01" };
    assert.equal(await store.principalInsert({ principal: token, now: T0 }), true);
    assert.deepEqual(
      (await store.principalsList({})).map((p) => [p.kind, p.name]),
      [["person", "ada"], ["token", "ada"]],
    );
    assert.deepEqual((await store.principalsList({ kind: "token" })).map((p) => p.name), ["ada"]);
  });

  test("principalsList() pages by name in byte order: after a name, at most limit", async ({ store }) => {
    for (const name of ["b", "a", "Z", "c.d", "c"]) {
      const secretHash = `sha256$${name}`;
      await store.principalInsert({ principal: { ...CI, name, secretHash }, now: T0 });
    }
    await store.principalInsert({ principal: ADA, now: T0 });
    const names = async (params: { after?: string; limit?: number }) =>
      (await store.principalsList({ kind: "token", ...params })).map((p) => p.name);
    assert.deepEqual(await names({}), ["Z", "a", "b", "c", "c.d"]);
    assert.deepEqual(await names({ limit: 2 }), ["Z", "a"]);
    assert.deepEqual(await names({ after: "a", limit: 2 }), ["b", "c"]);
    assert.deepEqual(await names({ after: "c" }), ["c.d"]);
    assert.deepEqual(await names({ after: "c.d", limit: 2 }), []);
    assert.deepEqual(
      (await store.principalsList({ kind: "person", after: "Z" })).map((p) => p.name),
      ["ada"],
    );
  });

  test("principalUpdate() changes only the fields given and updated_at; null for nobody", async ({ store }) => {
    await store.principalInsert({ principal: { ...ADA, tenant: "acme" }, now: T0 });
    const roles = await store.principalUpdate({
      kind: "person",
      name: "ada",
      roles: ["viewer"],
      now: T0 + 10,
    });
    assert.deepEqual(
      [roles?.roles, roles?.tenant, roles?.displayName, roles?.disabled, roles?.updatedAt],
      [["viewer"], "acme", "Ada Lovelace", false, T0 + 10],
    );
    const cleared = await store.principalUpdate({
      kind: "person",
      name: "ada",
      tenant: null,
      displayName: null,
      disabled: true,
      secretHash: "scrypt$new",
      now: T0 + 20,
    });
    assert.deepEqual(
      [cleared?.roles, cleared?.tenant, cleared?.displayName, cleared?.disabled],
      [["viewer"], null, null, true],
    );
    assert.equal(
      (await store.principalSecretHash({ kind: "person", name: "ada" }))?.secretHash,
      "scrypt$new",
    );
    assert.equal(
      await store.principalUpdate({ kind: "person", name: "nobody", disabled: true, now: T0 }),
      null,
    );
  });

  test("principalDelete() and principalUsed() say whether the principal was there", async ({ store }) => {
    await store.principalInsert({ principal: ADA, now: T0 });
    assert.equal(await store.principalUsed({ kind: "person", name: "ada", now: T0 + 7 }), true);
    assert.equal((await store.principalGet({ kind: "person", name: "ada" }))?.lastUsedAt, T0 + 7);
    assert.equal(await store.principalUsed({ kind: "token", name: "ada", now: T0 }), false);
    assert.equal(await store.principalDelete({ kind: "person", name: "ada" }), true);
    assert.equal(await store.principalDelete({ kind: "person", name: "ada" }), false);
    assert.deepEqual(await store.principalsList({}), []);
  });

  test("principalSecretHash() gives the hash with its row; principalBySecretHash() finds a token by it", async ({ store }) => {
    await store.principalInsert({ principal: ADA, now: T0 });
    await store.principalInsert({ principal: CI, now: T0 });
    const held = await store.principalSecretHash({ kind: "person", name: "ada" });
    assert.equal(held?.secretHash, ADA.secretHash);
    assert.equal(held?.principal.name, "ada");
    assert.equal(await store.principalSecretHash({ kind: "person", name: "bob" }), null);
    const found = await store.principalBySecretHash({ kind: "token", secretHash: "sha256$00ff" });
    assert.equal(found?.name, "ci");
    assert.equal(
      await store.principalBySecretHash({ kind: "token", secretHash: "sha256$00fe" }),
      null,
    );
    assert.equal(
      await store.principalBySecretHash({ kind: "person", secretHash: "sha256$00ff" }),
      null,
    );
  });

  test("the principals' writes on a transaction commit or roll back with its audit row", async ({ store }) => {
    await store.principalInsert({ principal: CI, now: T0 });
    const writes = async (tx: Parameters<Parameters<typeof store.transaction>[0]>[0]) => {
      assert.equal(await tx.principalInsert({ principal: ADA, now: T0 + 1 }), true);
      await tx.principalUpdate({ kind: "person", name: "ada", disabled: true, now: T0 + 2 });
      assert.equal(await tx.principalDelete({ kind: "token", name: "ci" }), true);
      assert.deepEqual((await tx.principalsList({})).map((p) => p.name), ["ada"]);
      assert.equal((await tx.principalGet({ kind: "person", name: "ada" }))?.disabled, true);
      await tx.auditRecord({
        at: T0 + 2,
        actor: "root",
        action: "user.add",
        target: "user:ada",
        reason: null,
      });
    };
    await assert.rejects(
      store.transaction(async (tx) => {
        await writes(tx);
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    assert.deepEqual((await store.principalsList({})).map((p) => p.name), ["ci"]);
    assert.deepEqual(await store.auditList({ target: "user:ada" }), []);
    await store.transaction(writes);
    assert.deepEqual((await store.principalsList({})).map((p) => [p.name, p.disabled]), [[
      "ada",
      true,
    ]]);
    assert.equal((await store.auditList({ target: "user:ada" })).length, 1);
  });
}
