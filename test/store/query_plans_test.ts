/**
 * The SQLite store's reads for the dashboard walk indexes, never the whole
 * table: checked on the plans SQLite reports (EXPLAIN QUERY PLAN) for the
 * statements the store prepares.
 */

import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { SQL as COUNTS_SQL } from "../../src/store/sqlite/counts.ts";
import { SQL as JOBS_SQL } from "../../src/store/sqlite/jobs.ts";
import { jobsListSql, type ListShape } from "../../src/store/sqlite/jobs_list.ts";
import { tempStore } from "../support/stores.ts";

/** The statements of the concern files these plans are read for. */
const SQL = { ...JOBS_SQL, ...COUNTS_SQL };

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

Deno.test("jobsCount(), jobsStage(), jobsThroughput() and jobsDeadLetters() read indexes, not the table", async () => {
  await using t = await tempStore();
  // The overview's count reads the counts kept beside the jobs, and of the
  // jobs only those above the counts' watermark: a range of the primary key.
  const counts = plan(t.store.db, SQL.counts);
  assert.ok(counts.includes("SCAN job_counts"), counts.join(" | "));
  assert.ok(counts.includes("SEARCH jobs USING INTEGER PRIMARY KEY (rowid>?)"), counts.join(" | "));
  assert.ok(!counts.some((l) => /^SCAN jobs/.test(l)), counts.join(" | "));
  assert.deepEqual(plan(t.store.db, SQL.countsFold), [
    "SEARCH jobs USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
    "USE TEMP B-TREE FOR GROUP BY",
  ]);
  // The stager finds the due jobs and the state they leave in jobs_due alone.
  assert.deepEqual(plan(t.store.db, SQL.stageDue), [
    "SEARCH jobs USING COVERING INDEX jobs_due (scheduled_at<?)",
  ]);
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

Deno.test("jobsLeaseExpired() walks the index of executing jobs by lease expiry, no sort", async () => {
  await using t = await tempStore();
  const lines = plan(t.store.db, SQL.leaseExpired);
  assert.ok(
    lines.some((l) => /SEARCH jobs USING INDEX jobs_executing \(lease_expires_at<\?\)/.test(l)),
    lines.join(" | "),
  );
  assert.ok(!lines.some((l) => l.includes("TEMP B-TREE")), lines.join(" | "));
});
