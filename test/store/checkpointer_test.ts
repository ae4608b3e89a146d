/**
 * WAL checkpoints off the store's thread: after enough commits the
 * checkpointer's thread starts, the store's own connection keeps an
 * automatic checkpoint only as a far safety net, and the thread's passive
 * checkpoints move the frames the store writes into the main file. A store
 * that writes a little never starts it. A store's close ends the thread
 * after it closed its connection: no descriptor of the file is left open.
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

/** Where the process's open descriptors lead (Linux: the links of /proc/self/fd). */
function openFiles(): string[] {
  const links: string[] = [];
  for (const entry of Deno.readDirSync("/proc/self/fd")) {
    try {
      links.push(Deno.readLinkSync(`/proc/self/fd/${entry.name}`));
    } catch {
      // The descriptor that read the folder, closed by now.
    }
  }
  return links;
}

/** Opens a store at `path`, writes until its checkpointer's thread has the file open, closes it. */
async function writeUntilTheThreadOpensThenClose(path: string): Promise<void> {
  const onFile = () => openFiles().filter((link) => link.startsWith(path)).length;
  const store = await openSqliteStore(path, { now: NOW });
  try {
    await store.jobsInsert({ jobs: [newJob({ scheduledAt: NOW })], now: NOW });
    const own = onFile();
    for (let i = 1; i < START_AFTER; i++) {
      await store.jobsInsert({ jobs: [newJob({ scheduledAt: NOW })], now: NOW });
    }
    assert.equal(autocheckpoint(store.db), SAFETY_CHECKPOINT_FRAMES, "the thread started");
    await waitUntil("the thread's connection to the file", () => onFile() > own);
  } finally {
    await store.close();
  }
}

Deno.test({
  name:
    "20 stores closed after their checkpointer's thread opened the file leave no descriptor open",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await tempDir();
    try {
      // The first thread of the process loads what every later one shares.
      await writeUntilTheThreadOpensThenClose(`${dir.path}/first.db`);
      const before = openFiles().length;
      const left: string[] = [];
      for (let i = 0; i < 20; i++) {
        const path = `${dir.path}/jobs-${i}.db`;
        await writeUntilTheThreadOpensThenClose(path);
        left.push(...openFiles().filter((link) => link.startsWith(path)));
      }
      const grown = openFiles().length - before;
      assert.deepEqual(left, [], "no store's file is open after its close");
      assert.ok(grown <= 4, `open descriptors grew by ${grown} over 20 stores`);
    } finally {
      await dir.cleanup();
    }
  },
});
