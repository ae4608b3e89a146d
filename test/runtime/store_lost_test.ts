/**
 * A store whose file is deleted or replaced while open: the SQLite store's
 * identity check (device and inode of the file at its path against the one
 * it opened), the refusal of every call after it, what StoreHealth makes of
 * it, and how a runtime stops on it (no more claims, running jobs finish,
 * their results are given up, nothing is written into the dead file).
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { StoreLostError } from "../../src/store/errors.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { StoreHealth } from "../../src/runtime/store_health.ts";
import { tempDir, tempStore } from "../support/stores.ts";

type Logged = { event: string; fields: Record<string, unknown> };

async function removeStoreFiles(path: string): Promise<void> {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    await Deno.remove(file).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}

Deno.test("checkFile() says nothing while the file at the path is the one opened", async () => {
  await using t = await tempStore();
  await t.store.queuePause({ name: "default", paused: true, now: 1 });
  assert.equal(t.store.checkFile(), null);
  assert.equal(t.store.lost, null);
  assert.deepEqual((await t.store.queuesList()).map((q) => q.name), ["default"]);
});

Deno.test("checkFile() notices a file renamed over the store's path: another inode", async () => {
  await using t = await tempStore();
  const before = (await Deno.stat(t.path)).ino;
  // Another store file, moved into place the way a restore from backup would be.
  const other = await openSqliteStore(`${t.dir}/other.db`);
  await other.close();
  await Deno.rename(`${t.dir}/other.db`, t.path);
  const after = (await Deno.stat(t.path)).ino;
  assert.notEqual(before, after);

  const lost = t.store.checkFile();
  assert.ok(lost instanceof StoreLostError);
  assert.ok(lost.replaced);
  assert.equal(
    lost.message,
    `the database file "${t.path}" was deleted or replaced while open ` +
      `(inode ${before} -> ${after})`,
  );
  assert.equal(t.store.lost, lost);
  // Every call is refused now, reads and writes alike, and the transaction.
  await assert.rejects(() => t.store.queuesList(), (e) => e === lost);
  await assert.rejects(
    () => t.store.queuePause({ name: "default", paused: true, now: 2 }),
    (e) => e === lost,
  );
  await assert.rejects(() => t.store.transaction(() => Promise.resolve(1)), (e) => e === lost);
});

Deno.test("checkFile() notices a deleted file and no call writes into it afterwards", async () => {
  await using t = await tempStore();
  const inode = (await Deno.stat(t.path)).ino;
  await removeStoreFiles(t.path);
  const lost = t.store.checkFile();
  assert.ok(lost instanceof StoreLostError);
  assert.ok(!lost.replaced);
  assert.equal(
    lost.message,
    `the database file "${t.path}" was deleted or replaced while open (inode ${inode} -> missing)`,
  );
  await assert.rejects(
    () => t.store.queuePause({ name: "default", paused: true, now: 1 }),
    (e) => e === lost,
  );
  // Nothing created a file at the path again.
  await assert.rejects(() => Deno.stat(t.path), Deno.errors.NotFound);
});

Deno.test("the change poll finds a deleted file by itself and wakes its listeners once", async () => {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const store = await openSqliteStore(path, { fileCheckMs: 10 });
  try {
    let wakes = 0;
    const off = store.onExternalChange(() => wakes++);
    await removeStoreFiles(path);
    const lost = await waitUntil("the store to notice its file is gone", () => store.lost);
    assert.match(lost.message, /inode \d+ -> missing/);
    assert.equal(wakes, 1, "woken once, so idle callers find out at once");
    off();
  } finally {
    await store.close();
    await dir.cleanup();
  }
});

Deno.test("StoreHealth reports a lost store once, as lost for good, and tells its listeners", () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const events: Logged[] = [];
  const health = new StoreHealth(
    { clock, logger: (event, fields) => events.push({ event, fields }) },
    { logEveryMs: 1000 },
  );
  const told: StoreLostError[] = [];
  health.onLost((error) => told.push(error));
  health.failed("heartbeat", new Error("database is locked"));
  clock.advance(500);
  const lost = new StoreLostError("/x/jobs.db", { dev: 1, ino: 123 }, null);
  for (let i = 0; i < 50; i++) {
    health.failed(i % 2 ? "heartbeat" : "producer:default", lost);
    clock.advance(1000);
  }
  health.succeeded("heartbeat");
  health.succeeded("producer:default");

  assert.deepEqual(events, [
    { event: "store.degraded", fields: { source: "heartbeat", error: "database is locked" } },
    {
      event: "store.degraded",
      fields: {
        source: "producer:default",
        error: `the database file "/x/jobs.db" was deleted or replaced while open ` +
          `(inode 123 -> missing)`,
        lost: true,
      },
    },
  ]);
  assert.deepEqual(told, [lost]);
  assert.equal(health.lost, lost);
  assert.ok(health.degraded, "a lost store does not recover");
  assert.deepEqual(health.status(), {
    ok: false,
    since: Date.UTC(2026, 0, 1) + 500,
    source: "producer:default",
    error: lost.message,
    lost: true,
  });
  const late: StoreLostError[] = [];
  health.onLost((error) => late.push(error));
  assert.deepEqual(late, [lost], "a listener added after the loss hears of it at once");
});

Deno.test("a runtime whose store file is deleted lets the running job finish, gives up its result and stops without waiting out the grace", async () => {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const events: Logged[] = [];
  const logger = (event: string, fields: Record<string, unknown>) =>
    void events.push({ event, fields });
  const started: number[] = [];
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const hold = defineWorker({
    name: "hold",
    perform: async (_args, ctx) => {
      started.push(ctx.job.id);
      await finished;
    },
  });
  const store = await openSqliteStore(path, { now: clock.now(), fileCheckMs: 10 });
  const jobs = new Jobs({ store, workers: [hold], clock, logger });
  try {
    const runtime = await jobs.start({ queues: { default: 1 }, node: "n1" });
    const first = await jobs.enqueue(hold, {});
    await waitUntil("the job to start", () => started.length === 1);

    await removeStoreFiles(path);
    // The producer is full and asks nothing: the next heartbeat's call finds out.
    const lost = await waitUntil("the runtime to find the store lost", () => {
      clock.advance(1000);
      return runtime.health.lost;
    });
    assert.equal(lost, store.lost);
    const degraded = events.filter((e) => e.event === "store.degraded");
    assert.equal(degraded.length, 1, JSON.stringify(events));
    assert.equal(degraded[0]!.fields.lost, true);
    assert.match(String(degraded[0]!.fields.error), new RegExp(`"${path}" was deleted`));

    const later = await jobs.enqueue(hold, {}).catch((error) => error);
    assert.equal(later, lost, "an enqueue is refused too");
    finish();
    await waitUntil("the finished job's result to wait for the store", () => {
      return runtime.running === 0 && runtime.unrecorded === 1;
    });
    // The grace is an hour of a clock nobody advances: stop must not wait
    // for a result that can never be written.
    await runtime.stop({ grace: 3_600_000 });
    const unrecorded = events.filter((e) => e.event === "job.unrecorded");
    assert.deepEqual(unrecorded.map((e) => [e.fields.job, e.fields.outcome]), [
      [first.id, "completed"],
    ]);
    assert.deepEqual(
      events.filter((e) =>
        e.event === "node.deregister_failed" || e.event === "node.shutdown_abort"
      ),
      [],
      "nothing is released into the dead file as if it mattered",
    );
    await assert.rejects(() => Deno.stat(path), Deno.errors.NotFound);
  } finally {
    finish();
    await jobs.close({ grace: 0 });
    await dir.cleanup();
  }
});
