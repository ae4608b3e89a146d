/**
 * Every operator action commits its change and its `audit` row together: on
 * a store whose audit writes fail (on the store and on its transactions
 * alike), each action fails and changes nothing; on the store itself the
 * same action then writes both. Run on every backend.
 */

import assert from "node:assert/strict";
import type { Actor } from "../../src/admin/audit.ts";
import { applyJobAction, enqueueJob, replayJob } from "../../src/admin/jobs.ts";
import { runScheduleNow, setScheduleEnabled } from "../../src/admin/schedules.ts";
import { setQueuePaused } from "../../src/admin/queues.ts";
import type { Job } from "../../src/kernel/types.ts";
import type { Store, StoreTx } from "../../src/store/store.ts";
import { BACKENDS, harnessTest, newJob } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";

const T0 = Date.UTC(2026, 0, 1);
const who: Actor = { actor: "ops", reason: "testing the audit", now: T0 + 1000 };

/** Why every audit write of {@linkcode auditFails} fails. */
const REFUSED = /audit refused \(test\)/;

function refuse(): Promise<never> {
  return Promise.reject(new Error("audit refused (test)"));
}

/**
 * `store` with every `auditRecord` failing: its own and its transactions'.
 * An action that writes its audit row outside its change's transaction
 * would fail too, but only after committing the change.
 */
function auditFails(store: Store): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "auditRecord") return refuse;
      if (prop === "transaction") {
        return <T>(fn: (tx: StoreTx) => Promise<T>) =>
          target.transaction((tx) => fn({ ...tx, auditRecord: refuse }));
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function jobs(store: Store, ids: number[]): Promise<Job[]> {
  return await store.jobsList({ ids });
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("a cancel, discard or retry whose audit write fails changes no job", async ({ store }) => {
    const broken = auditFails(store);
    const [waiting, other, stopped] = (await store.jobsInsert({
      jobs: [newJob({ scheduledAt: T0 }), newJob({ scheduledAt: T0 }), newJob({ scheduledAt: T0 })],
      now: T0,
    })).map((r) => r.id) as [number, number, number];
    await store.jobsCancel({ ids: [stopped], now: T0, reason: "set up" });
    const before = await jobs(store, [waiting, other, stopped]);

    await assert.rejects(applyJobAction(broken, "cancel", before.slice(0, 2), who), REFUSED);
    await assert.rejects(applyJobAction(broken, "discard", before.slice(0, 2), who), REFUSED);
    await assert.rejects(applyJobAction(broken, "retry", before.slice(2), who), REFUSED);
    assert.deepEqual(await jobs(store, [waiting, other, stopped]), before);
    for (const id of [waiting, other, stopped]) {
      assert.deepEqual(await store.auditList({ target: `job:${id}` }), []);
    }

    // The same actions on the store itself write the change and its row.
    const cancelled = await applyJobAction(store, "cancel", before.slice(0, 1), who);
    assert.deepEqual(cancelled.changed.map((j) => j.id), [waiting]);
    const retried = await applyJobAction(store, "retry", before.slice(2), who);
    assert.deepEqual(retried.changed.map((j) => j.id), [stopped]);
    assert.deepEqual(
      (await jobs(store, [waiting, other, stopped])).map((j) => j.state),
      ["cancelled", "available", "available"],
    );
    assert.deepEqual((await store.auditList({ target: `job:${waiting}` })).map((a) => a.action), [
      "job.cancel",
    ]);
    assert.deepEqual((await store.auditList({ target: `job:${stopped}` })).map((a) => a.action), [
      "job.retry",
    ]);
  });

  test("a replay whose audit write fails leaves the job as it was", async ({ store }) => {
    const [job] = await store.jobsInsert({
      jobs: [newJob({ scheduledAt: T0, queue: "replays" })],
      now: T0,
    });
    const id = job!.id;
    await store.jobsCancel({ ids: [id], now: T0, reason: "set up" });
    const [before] = await jobs(store, [id]);

    await assert.rejects(
      replayJob(auditFails(store), String(id), { ...who, reason: "again" }, false),
      REFUSED,
    );
    assert.deepEqual(await jobs(store, [id]), [before]);
    assert.deepEqual(await store.auditList({ target: `job:${id}` }), []);

    const replayed = await replayJob(store, String(id), { ...who, reason: "again" }, false);
    assert.equal(replayed.replayed, true);
    assert.equal((await store.jobGet({ id }))?.state, "available");
    assert.deepEqual((await store.auditList({ target: `job:${id}` })).map((a) => a.action), [
      "job.replay",
    ]);
  });

  test("a pause, resume, disable or enable whose audit write fails stores nothing", async ({ store }) => {
    const broken = auditFails(store);
    await assert.rejects(setQueuePaused(broken, "mail", true, who), REFUSED);
    assert.deepEqual(await store.queuesList(), []);

    await store.queuePause({ name: "reports", paused: true, now: T0 });
    await assert.rejects(setQueuePaused(broken, "reports", false, who), REFUSED);
    assert.deepEqual((await store.queuesList()).map((q) => [q.name, q.paused]), [
      ["reports", true],
    ]);

    await store.schedulesSync({ schedules: [{ id: "known", hash: "h", tenant: null }], now: T0 });
    await assert.rejects(setScheduleEnabled(broken, "known", false, who, null), REFUSED);
    // A schedule only the file declares is not even added to the store.
    await assert.rejects(
      setScheduleEnabled(broken, "declared", false, who, { hash: "h2", tenant: null }),
      REFUSED,
    );
    assert.deepEqual((await store.schedulesList({})).map((s) => [s.id, s.enabled]), [
      ["known", true],
    ]);
    for (const target of ["queue:mail", "queue:reports", "schedule:known", "schedule:declared"]) {
      assert.deepEqual(await store.auditList({ target }), []);
    }

    await setScheduleEnabled(store, "declared", false, who, { hash: "h2", tenant: null });
    await setQueuePaused(store, "mail", true, who);
    assert.deepEqual((await store.schedulesList({})).map((s) => [s.id, s.enabled]), [
      ["declared", false],
      ["known", true],
    ]);
    assert.deepEqual((await store.queuesList()).map((q) => [q.name, q.paused]), [
      ["mail", true],
      ["reports", true],
    ]);
    assert.equal((await store.auditList({ target: "schedule:declared" })).length, 1);
    assert.equal((await store.auditList({ target: "queue:mail" })).length, 1);
  });

  test("a run-now or enqueue whose audit write fails inserts no job", async ({ store }) => {
    const broken = auditFails(store);
    const schedule = scheduleOf({ id: "nightly", every: "1h" });
    await assert.rejects(runScheduleNow(broken, schedule, who, null), REFUSED);
    await assert.rejects(enqueueJob(broken, "mailer", { to: "a" }, {}, who), REFUSED);
    assert.deepEqual(await store.jobsList({}), []);
    assert.deepEqual(await store.auditList({ target: "schedule:nightly" }), []);

    // The occurrence identity is free: the run that succeeds takes it.
    const run = await runScheduleNow(store, schedule, who, null);
    const enqueued = await enqueueJob(store, "mailer", { to: "a" }, {}, who);
    assert.deepEqual((await store.jobsList({})).map((j) => j.id), [run.id, enqueued.id]);
    assert.equal((await store.auditList({ target: "schedule:nightly" })).length, 1);
    assert.equal((await store.auditList({ target: `job:${enqueued.id}` })).length, 1);
  });
}
