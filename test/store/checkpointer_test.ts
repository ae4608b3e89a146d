/**
 * WAL checkpoints off the store's thread: after enough commits the
 * checkpointer's thread starts, the store's own connection keeps an
 * automatic checkpoint only as a far safety net, and the thread's passive
 * checkpoints move the frames the store writes into the main file. A store
 * that writes a little never starts it.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  Checkpointer,
  INLINE_CHECKPOINT_FRAMES,
  SAFETY_CHECKPOINT_FRAMES,
  START_AFTER,
} from "../../src/store/sqlite/checkpointer.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { newJob } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 11, 3, 8);

function autocheckpoint(db: DatabaseSync): number {
  return Number(
    (db.prepare("PRAGMA wal_autocheckpoint").get() as Record<string, number>)
      .wal_autocheckpoint,
  );
}

Deno.test("the checkpointer's thread starts after its commits and checkpoints what others write", async () => {
  const dir = await tempDir();
  const path = `${dir.path}/wal.db`;
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(`PRAGMA wal_autocheckpoint = ${INLINE_CHECKPOINT_FRAMES}`);
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  const checkpointer = new Checkpointer(path, db, { startAfter: 3, everyMs: 10 });
  try {
    const write = () => {
      db.exec("BEGIN IMMEDIATE");
      db.prepare("INSERT INTO t (v) VALUES (?)").run("x".repeat(3000));
      db.exec("COMMIT");
      checkpointer.committed();
    };
    write();
    write();
    assert.equal(checkpointer.running, false, "not before its third commit");
    assert.equal(autocheckpoint(db), INLINE_CHECKPOINT_FRAMES);
    write();
    assert.equal(checkpointer.running, true);
    assert.equal(autocheckpoint(db), SAFETY_CHECKPOINT_FRAMES);
    for (let i = 0; i < 50; i++) write();
    await waitUntil("the thread checkpointed the frames", () => checkpointer.checkpointed >= 50);
  } finally {
    await checkpointer.close();
    db.close();
    await dir.cleanup();
  }
});

Deno.test("a store hands its checkpoints to the thread after START_AFTER writes, not for a few", async () => {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const store = await openSqliteStore(path, { now: NOW });
  try {
    for (let i = 0; i < 10; i++) {
      await store.jobsInsert({ jobs: [newJob({ scheduledAt: NOW })], now: NOW });
    }
    assert.equal(autocheckpoint(store.db), INLINE_CHECKPOINT_FRAMES, "a few writes: inline");
    for (let i = 0; i < START_AFTER; i++) {
      await store.jobsInsert({
        jobs: [newJob({ scheduledAt: NOW, args: `{"i":${i}}` })],
        now: NOW,
      });
    }
    assert.equal(autocheckpoint(store.db), SAFETY_CHECKPOINT_FRAMES, "the thread has them");
  } finally {
    await store.close();
    await dir.cleanup();
  }
});
