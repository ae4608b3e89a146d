/**
 * Settings, on every backend: settingGet() reads what settingSet() last
 * wrote, and settingDelete() removes one key. (The audit rows an action
 * writes are checked with the action: transactions_test.ts, workflows_test.ts.)
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { T0 } from "./helpers.ts";

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
}
