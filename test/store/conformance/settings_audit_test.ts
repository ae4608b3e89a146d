/**
 * Settings, on every backend: settingGet() reads what settingSet() last
 * wrote, and settingDelete() removes one key. (The audit rows an action
 * writes are checked with the action: transactions_test.ts, workflows_test.ts.)
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { insert, newJob, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("settingGet() returns null until settingSet() writes, then the latest value", async ({ store }) => {
    assert.equal(await store.settingGet({ key: "retention" }), null);
    await store.settingSet({ key: "retention", value: { completed: 7 }, now: T0 });
    await store.settingSet({ key: "limit", value: 3, now: T0 });
    assert.deepEqual(await store.settingGet({ key: "retention" }), { completed: 7 });
    await store.settingSet({ key: "retention", value: { completed: 1, tags: ["a"] }, now: T0 });
    assert.deepEqual(await store.settingGet({ key: "retention" }), { completed: 1, tags: ["a"] });
    assert.equal(await store.settingGet({ key: "limit" }), 3);
  });

  test("settingDelete() removes one setting and ignores an absent key", async ({ store }) => {
    await store.settingSet({ key: "fanout.cursor:a", value: { cursor: 1 }, now: T0 });
    await store.settingSet({ key: "fanout.cursor:b", value: { cursor: 2 }, now: T0 });
    await store.settingDelete({ key: "fanout.cursor:a" });
    await store.settingDelete({ key: "fanout.cursor:a" });
    await store.settingDelete({ key: "never" });
    assert.equal(await store.settingGet({ key: "fanout.cursor:a" }), null);
    assert.deepEqual(await store.settingGet({ key: "fanout.cursor:b" }), { cursor: 2 });
  });

  test("auditPage() pages newest first, by target, and keeps to one tenant's jobs in the statement", async ({ store }) => {
    const [acme, globex] = await insert(store, [
      newJob({ tenant: "acme" }),
      newJob({ tenant: "globex" }),
    ]);
    const record = (target: string, at: number) =>
      store.auditRecord({ at, actor: "root", action: "x", target, reason: null });
    await record(`job:${acme}`, T0);
    await record(`job:${globex}`, T0 + 1);
    await record("queue:mail", T0 + 2);
    await record(`job:${acme}`, T0 + 3);
    await record(`job:${acme}x`, T0 + 4);
    const targets = async (params: Parameters<typeof store.auditPage>[0]) =>
      (await store.auditPage(params)).map((r) => `${r.target}@${r.at - T0}`);
    assert.deepEqual(await targets({ limit: 10 }), [
      `job:${acme}x@4`,
      `job:${acme}@3`,
      "queue:mail@2",
      `job:${globex}@1`,
      `job:${acme}@0`,
    ]);
    const first = await store.auditPage({ limit: 2 });
    assert.deepEqual(await targets({ limit: 2, after: first.at(-1)!.id }), [
      "queue:mail@2",
      `job:${globex}@1`,
    ]);
    assert.deepEqual(await targets({ limit: 10, target: `job:${acme}` }), [
      `job:${acme}@3`,
      `job:${acme}@0`,
    ]);
    assert.deepEqual(await targets({ limit: 10, tenant: "acme" }), [
      `job:${acme}@3`,
      `job:${acme}@0`,
    ]);
    assert.deepEqual(await targets({ limit: 10, tenant: "globex", target: `job:${acme}` }), []);
    assert.deepEqual(await targets({ limit: 10, tenant: "umbrella" }), []);
  });

  test("auditPage() filters by actor and by action in the statement, with the others", async ({ store }) => {
    const record = (actor: string, action: string, target: string, at: number) =>
      store.auditRecord({ at, actor, action, target, reason: null });
    await record("ada", "queue.pause", "queue:mail", T0);
    await record("bob", "queue.pause", "queue:mail", T0 + 1);
    await record("ada", "token.create", "token:ci", T0 + 2);
    await record("ada", "queue.pause", "queue:sms", T0 + 3);
    await record("ada%", "queue.pause", "queue:mail", T0 + 4);
    const seen = async (params: Parameters<typeof store.auditPage>[0]) =>
      (await store.auditPage(params)).map((r) => `${r.actor} ${r.action} ${r.target}`);
    assert.deepEqual(await seen({ limit: 10, actor: "ada" }), [
      "ada queue.pause queue:sms",
      "ada token.create token:ci",
      "ada queue.pause queue:mail",
    ]);
    assert.deepEqual(await seen({ limit: 10, action: "queue.pause", actor: "ada" }), [
      "ada queue.pause queue:sms",
      "ada queue.pause queue:mail",
    ]);
    assert.deepEqual(
      await seen({ limit: 10, action: "queue.pause", target: "queue:mail", actor: "bob" }),
      ["bob queue.pause queue:mail"],
    );
    const first = await store.auditPage({ limit: 1, action: "queue.pause" });
    assert.deepEqual(await seen({ limit: 2, action: "queue.pause", after: first[0]!.id }), [
      "ada queue.pause queue:sms",
      "bob queue.pause queue:mail",
    ]);
    assert.deepEqual(await seen({ limit: 10, actor: "nobody" }), []);
  });
}
