/**
 * Store transactions, on every backend: every method of STORE_TX_METHODS
 * inside `transaction()` commits or rolls back with it, its reads see its own
 * writes, and a transaction object used after its end is refused.
 */

import assert from "node:assert/strict";
import type { Store, StoreTx } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, completed, insert, newJob, stateOf, T0 } from "./helpers.ts";

/** The rows {@linkcode writeEverything} changes, as they are before it. */
interface TxFixture {
  cancel: number;
  discard: number;
  retry: number;
  replay: number;
}

/**
 * Two waiting jobs (to cancel and discard), two cancelled ones (to retry
 * and replay), a schedule `tx-s`, and the settings `tx.kept` = 1 and
 * `tx.gone` = "gone soon".
 */
async function txFixture(store: Store): Promise<TxFixture> {
  const [cancel, discard, retry, replay] = await insert(store, [
    newJob(),
    newJob(),
    newJob({ queue: "tx-retry" }),
    newJob({ queue: "tx-replay" }),
  ]);
  await store.jobsCancel({ ids: [retry!, replay!], now: T0, reason: "set up" });
  await store.schedulesSync({ schedules: [{ id: "tx-s", hash: "h1", tenant: null }], now: T0 });
  await store.settingSet({ key: "tx.kept", value: 1, now: T0 });
  await store.settingSet({ key: "tx.gone", value: "gone soon", now: T0 });
  return { cancel: cancel!, discard: discard!, retry: retry!, replay: replay! };
}

/**
 * Every write of {@linkcode STORE_TX_METHODS} through `tx`, each checked to
 * have done its work, and what the reads inside `tx` then see.
 */
async function writeEverything(tx: StoreTx, f: TxFixture) {
  const now = T0 + 10;
  const [fresh] = await tx.jobsInsert({ jobs: [newJob({ worker: "tx-new" })], now });
  assert.equal(fresh?.duplicate, false);
  assert.deepEqual(await tx.jobsCancel({ ids: [f.cancel], now, reason: "tx" }), [f.cancel]);
  assert.deepEqual(await tx.jobsDiscard({ ids: [f.discard], now, reason: "tx" }), [f.discard]);
  assert.deepEqual(await tx.jobsRetry({ ids: [f.retry], now }), [f.retry]);
  assert.deepEqual(
    await tx.jobReplay({ id: f.replay, now, actor: "ops", reason: "tx", force: false }),
    { replayed: true, was: "cancelled" },
  );
  await tx.queuePause({ name: "tx-q", paused: true, now });
  assert.equal(
    await tx.scheduleSetEnabled({ id: "tx-s", enabled: false, reason: "tx", actor: "ops", now }),
    true,
  );
  await tx.schedulesSync({ schedules: [{ id: "tx-new", hash: "h2", tenant: null }], now });
  await tx.settingSet({ key: "tx.kept", value: 2, now });
  await tx.settingDelete({ key: "tx.gone" });
  await tx.auditRecord({
    at: now,
    actor: "ops",
    action: "tx.test",
    target: "tx:target",
    reason: "in the transaction",
  });
  return {
    cancelled: (await tx.jobGet({ id: f.cancel }))?.state,
    retried: (await tx.jobsList({ ids: [f.retry] })).map((j) => j.state),
    setting: await tx.settingGet({ key: "tx.kept" }),
    paused: (await tx.queuesList()).find((q) => q.name === "tx-q")?.paused,
    enabled: (await tx.schedulesList({ ids: ["tx-s"] }))[0]?.enabled,
  };
}

/** What {@linkcode writeEverything} touched, as the store now holds it. */
async function txSnapshot(store: Store, f: TxFixture) {
  const ids = [f.cancel, f.discard, f.retry, f.replay];
  return {
    states: await Promise.all(ids.map((id) => stateOf(store, id))),
    inserted: (await store.jobsList({ worker: "tx-new" })).length,
    audit: (await store.auditList({ target: "tx:target" })).map((a) => [a.action, a.reason]),
    paused: (await store.queuesList()).find((q) => q.name === "tx-q")?.paused ?? false,
    schedules: (await store.schedulesList({})).map((s) => [s.id, s.enabled]),
    settings: [
      await store.settingGet({ key: "tx.kept" }),
      await store.settingGet({ key: "tx.gone" }),
    ],
  };
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("transaction() runs every StoreTx write inside it: a throw after them leaves nothing", async ({ store }) => {
    const before = await txFixture(store);
    await assert.rejects(
      store.transaction(async (tx) => {
        await writeEverything(tx, before);
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    const s = await txSnapshot(store, before);
    assert.deepEqual(s.states, ["available", "available", "cancelled", "cancelled"]);
    assert.equal(s.inserted, 0);
    assert.deepEqual(s.audit, []);
    assert.equal(s.paused, false);
    assert.deepEqual(s.schedules, [["tx-s", true]]);
    assert.deepEqual(s.settings, [1, "gone soon"]);
  });

  test("transaction() commits every StoreTx write together when it resolves", async ({ store }) => {
    const before = await txFixture(store);
    const inside = await store.transaction((tx) => writeEverything(tx, before));
    // Reads inside the transaction saw its own writes.
    assert.deepEqual(inside, {
      cancelled: "cancelled",
      retried: ["available"],
      setting: 2,
      paused: true,
      enabled: false,
    });
    const s = await txSnapshot(store, before);
    assert.deepEqual(s.states, ["cancelled", "discarded", "available", "available"]);
    assert.equal(s.inserted, 1);
    assert.deepEqual(s.audit, [["tx.test", "in the transaction"]]);
    assert.equal(s.paused, true);
    assert.deepEqual(s.schedules, [["tx-new", true], ["tx-s", false]]);
    assert.deepEqual(s.settings, [2, null]);
    // The replay's pending attempt row is the replay's once it runs.
    const [replayed] = await claim(store, { queue: "tx-replay", now: T0 + 20 });
    assert.equal(replayed?.id, before.replay);
    await store.jobsRecord({ node: "node-a", now: T0 + 20, results: [completed(replayed!)] });
    const attempts = await store.attemptsList({ jobId: before.replay });
    assert.deepEqual(attempts.map((a) => [a.kind, a.actor]), [["replay", "ops"]]);
  });

  test("a StoreTx call after its transaction ended is refused and joins no other", async ({ store }) => {
    let leaked: StoreTx | null = null;
    await store.transaction((tx) => {
      leaked = tx;
      return Promise.resolve();
    });
    const tx = leaked as unknown as StoreTx;
    await assert.rejects(
      tx.settingSet({ key: "late", value: 1, now: T0 }),
      /transaction has ended/,
    );
    await assert.rejects(tx.jobsInsert({ jobs: [newJob()], now: T0 }), /transaction has ended/);
    // Not even while another transaction is open.
    await assert.rejects(
      store.transaction(async (other) => {
        await other.settingSet({ key: "other", value: 1, now: T0 });
        await assert.rejects(
          tx.auditRecord({ at: T0, actor: "x", action: "late", target: "t", reason: null }),
          /transaction has ended/,
        );
        throw new Error("rolled back on purpose");
      }),
      /rolled back on purpose/,
    );
    assert.equal(await store.settingGet({ key: "late" }), null);
    assert.equal(await store.settingGet({ key: "other" }), null);
    assert.deepEqual(await store.auditList({ target: "t" }), []);
  });
}
