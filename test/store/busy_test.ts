/**
 * A write transaction whose BEGIN finds another connection holding the
 * write lock waits for it (within the busy timeout) and then runs: it must
 * not wait on its own hold.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { newJob } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

Deno.test("transaction() waits out another connection's write lock, then commits", async () => {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const store = await openSqliteStore(path, { busyTimeoutMs: 10_000 });
  const other = new DatabaseSync(path);
  try {
    other.exec("BEGIN IMMEDIATE");
    const committed = store.transaction((tx) =>
      tx.jobsInsert({ jobs: [newJob({ scheduledAt: 0 })], now: 0 })
    );
    // Released only once the transaction has tried BEGIN and met the lock.
    await new Promise((resolve) => setTimeout(resolve, 20));
    other.exec("COMMIT");
    const [result] = await committed;
    assert.ok(result && !result.duplicate);
    assert.equal((await store.jobsList({})).length, 1);
  } finally {
    other.close();
    await store.close();
    await dir.cleanup();
  }
});
