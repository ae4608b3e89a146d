/**
 * The SQLite store's reads for the dashboard walk indexes, never the whole
 * table: checked on the plans SQLite reports (EXPLAIN QUERY PLAN) for the
 * statements the store prepares.
 */

import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import {
  COUNT_ALL,
  COUNT_STATE,
  jobsListSql,
  type ListShape,
  SQL,
} from "../../src/store/sqlite/sql.ts";
import { tempStore } from "../support/stores.ts";

/** The plan's lines, e.g. `SEARCH jobs USING INTEGER PRIMARY KEY (rowid<?)`. */
function plan(db: DatabaseSync, sql: string): string[] {
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[])
    .map((r) => r.detail);
}

const list = (shape: Partial<ListShape>) =>
  jobsListSql({ filters: [], states: null, desc: true, after: false, ...shape });

Deno.test("jobsList() pages newest first by the primary key, with after as a range on it", async () => {
  await using t = await tempStore();
  assert.deepEqual(plan(t.store.db, list({})), ["SCAN jobs"]);
  assert.deepEqual(plan(t.store.db, list({ after: true })), [
    "SEARCH jobs USING INTEGER PRIMARY KEY (rowid<?)",
  ]);
  assert.deepEqual(plan(t.store.db, list({ after: true, desc: false })), [
    "SEARCH jobs USING INTEGER PRIMARY KEY (rowid>?)",
  ]);
  // A filter without an index of its own filters the same walk: no sort.
  for (const filters of [["queue"], ["search"], ["queue", "worker", "tag"]] as const) {
    const lines = plan(t.store.db, list({ filters, states: ["completed"], after: true }));
    assert.equal(lines[0], "SEARCH jobs USING INTEGER PRIMARY KEY (rowid<?)", filters.join());
    assert.ok(!lines.some((l) => l.includes("TEMP B-TREE")), lines.join(" | "));
  }
});

Deno.test("jobsList() of discarded jobs reads the ids from jobs_discarded", async () => {
  await using t = await tempStore();
  for (const after of [false, true]) {
    const lines = plan(t.store.db, list({ states: ["discarded"], after }));
    assert.equal(lines[0], "SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)");
    assert.ok(lines.includes("SCAN jobs USING COVERING INDEX jobs_discarded"), lines.join(" | "));
  }
  const lines = plan(t.store.db, list({ states: ["discarded"], filters: ["queue"], after: true }));
  assert.ok(lines.includes("SCAN jobs USING COVERING INDEX jobs_discarded"), lines.join(" | "));
  const schedule = plan(t.store.db, list({ filters: ["schedule"], after: true }));
  assert.ok(
    schedule.includes("SEARCH jobs USING COVERING INDEX jobs_schedule (schedule_id=?)"),
    schedule.join(" | "),
  );
});

Deno.test("jobsCount(), jobsThroughput() and jobsDeadLetters() read indexes, not the table", async () => {
  await using t = await tempStore();
  for (const [state, sql] of Object.entries(COUNT_STATE)) {
    const lines = plan(t.store.db, sql);
    assert.match(lines[0]!, /^SCAN jobs USING (COVERING )?INDEX jobs_/, `${state}: ${lines}`);
  }
  // The overview's count: one pass per index, the big ones covering.
  const all = COUNT_ALL.map((sql) => plan(t.store.db, sql)[0]!);
  assert.equal(all.length, 6);
  for (const index of ["available", "completed", "cancelled", "discarded", "due"]) {
    assert.ok(all.includes(`SCAN jobs USING COVERING INDEX jobs_${index}`), `${index}: ${all}`);
  }
  const throughput = plan(t.store.db, SQL.jobsThroughput);
  assert.ok(
    throughput.some((l) =>
      /SEARCH jobs USING COVERING INDEX jobs_completed \(completed_at>/.test(l)
    ),
    throughput.join(" | "),
  );
  assert.ok(
    throughput.some((l) => /SEARCH a USING COVERING INDEX attempts_failed \(finished_at>/.test(l)),
    throughput.join(" | "),
  );
  assert.ok(!throughput.some((l) => /^SCAN (jobs|a|j)$/.test(l)), throughput.join(" | "));
  const dead = plan(t.store.db, SQL.jobsDeadLetters);
  assert.ok(dead.includes("SCAN jobs USING INDEX jobs_discarded"), dead.join(" | "));
});
