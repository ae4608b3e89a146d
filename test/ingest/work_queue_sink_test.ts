/**
 * An ingest pipeline whose sink is a work queue (issue 30: "records a
 * pipeline cannot decide become items"), on both stores, from a schedules
 * file's `sink: { work_queue }` to the items: a drop step decides what it
 * can, every other record becomes an item of the queue, scored by its rule,
 * in the transaction of the chunk's commit; running again updates the
 * items (their data and score) and keeps their place, never duplicates;
 * a record the queue cannot take fails alone.
 */

import assert from "node:assert/strict";
import { parseSchedules } from "../../src/config/load.ts";
import { defineStep } from "../../src/ingest/processors.ts";
import type { CompiledPipeline } from "../../src/ingest/types.ts";
import { ingestJob } from "../../src/runners/ingest.ts";
import { drainJobs } from "../../src/testing.ts";
import { backendJobs, BACKENDS } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

function config(dir: string, sink = "{ work_queue: disputes, key: case, tenant: merchant }") {
  const text = [
    "version: 1",
    "pipelines:",
    "  - id: chargebacks",
    "    source: { file: ./chargebacks.ndjson }",
    "    key: id",
    "    steps:",
    "      - drop: auto-refund",
    "        run: { worker: screen }",
    "    drop_reasons: [auto-refunded, poison]",
    `    sink: ${sink}`,
    "work_queues:",
    "  - id: disputes",
    "    claim: required",
    "    score:",
    "      rule: rule/dispute.urgency-score",
    "      inputs: [amount, evidence_missing]",
    "      weights: { amount: 0.01, evidence_missing: 30 }",
    "    actions:",
    "      - id: refund",
    "        run: { worker: refund_dispute }",
  ].join("\n") + "\n";
  const parsed = parseSchedules(text, `${dir}/schedules.yaml`);
  if (!parsed.ok) assert.fail(parsed.errors.map((e) => e.message).join("\n"));
  return parsed.config;
}

/** Small chargebacks are refunded by the pipeline itself; the rest need a person. */
const screen = defineStep({
  name: "screen",
  run: (r) => (r.amount as number) < 50 ? { drop: "auto-refunded" } : { keep: true },
});

const line = (id: number, amount: number, more: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: `cb-${id}`,
    case: `D-${1000 + id}`,
    merchant: id % 2 === 0 ? "acme" : "globex",
    amount,
    evidence_missing: id % 3 === 0,
    ...more,
  });

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a pipeline sinks the records it cannot decide into a work queue, and a re-run updates them in place`, async () => {
    const dir = await tempDir();
    await using bj = await backendJobs(backend, [screen]);
    try {
      const { jobs, store, clock } = bj;
      const pipeline = config(dir.path).pipelines[0]! as CompiledPipeline;
      assert.equal(pipeline.sink.kind, "work_queue");
      const feed = `${dir.path}/chargebacks.ndjson`;
      // 30 records: 10 under 50 are decided (dropped), 20 become items; one has no case.
      const records = Array.from({ length: 30 }, (_, i) => line(i, i < 10 ? 10 + i : 100 * i));
      records.push(JSON.stringify({ id: "cb-nocase", merchant: "acme", amount: 900 }));
      await Deno.writeTextFile(feed, records.join("\n") + "\n");

      const first = await jobs.ingest(pipeline);
      await drainJobs(jobs, { queue: "ingest", withScheduled: true });
      const run1 = (await store.ingestRunByJob({ jobId: first.id }))!;
      assert.equal(run1.state, "completed", run1.error ?? "");
      assert.deepEqual(
        [run1.counts.received, run1.counts.sunk, run1.counts.failed, run1.counts.dropped],
        [31, 20, 1, { "auto-refunded": 10 }],
      );
      const items = await store.workItemsList({ queue: "disputes", limit: 100 });
      assert.equal(items.length, 20);
      // Best first by the queue's rule: cb-29 (2900 * 0.01 = 29) trails cb-27 (27 + 30 evidence).
      assert.equal(items[0]!.key, "D-1027");
      assert.equal(items[0]!.score, 57);
      assert.deepEqual(items[0]!.inputs, { amount: 2700, evidence_missing: true });
      const d1012 = (await store.workItemGet({ queue: "disputes", key: "D-1012" }))!;
      assert.equal(d1012.tenant, "acme");
      assert.deepEqual(d1012.data, JSON.parse(line(12, 1200)));
      assert.equal(
        (await store.workItemGet({ queue: "disputes", key: "D-1013" }))!.tenant,
        "globex",
      );
      const events = await store.workItemEvents({ queue: "disputes", key: "D-1012" });
      assert.deepEqual(events.map((e) => [e.kind, e.actor]), [["added", "pipeline:chargebacks"]]);
      const failures = await store.ingestFailuresGet({
        pipeline: "chargebacks",
        records: ["cb-nocase"],
      });
      assert.equal(failures.get("cb-nocase"), 1);

      // Later, the same feed with one amount changed: an update in place, no new item.
      clock.advance(3_600_000);
      records[12] = line(12, 5000);
      await Deno.writeTextFile(feed, records.join("\n") + "\n");
      const second = await jobs.ingest(pipeline);
      await drainJobs(jobs, { queue: "ingest", withScheduled: true });
      const run2 = (await store.ingestRunByJob({ jobId: second.id }))!;
      assert.equal(run2.state, "completed", run2.error ?? "");
      assert.equal(run2.counts.sunk, 20);
      const again = await store.workItemsList({ queue: "disputes", limit: 100 });
      assert.equal(again.length, 20, "a re-run updates, never duplicates");
      const updated = (await store.workItemGet({ queue: "disputes", key: "D-1012" }))!;
      assert.equal((updated.data as { amount: number }).amount, 5000);
      assert.equal(updated.score, 50 + 30);
      assert.equal(updated.requestedAt, d1012.requestedAt, "it keeps its place in line");
      assert.equal(updated.id, d1012.id);
      assert.equal(again[0]!.key, "D-1012");
    } finally {
      await dir.cleanup();
    }
  });

  Deno.test(`${backend.name}: a work queue sink keys items by the record's identity, gives a tenant's run its tenant, and fails a record whose key is another tenant's`, async () => {
    const dir = await tempDir();
    await using bj = await backendJobs(backend, [screen]);
    try {
      const { jobs, store } = bj;
      const pipeline = config(dir.path, "{ work_queue: disputes }").pipelines[0]!;
      const feed = `${dir.path}/chargebacks.ndjson`;
      // An empty run first: it registers the runner, and sinks nothing.
      await Deno.writeTextFile(feed, "");
      await jobs.ingest(pipeline);
      await drainJobs(jobs, { queue: "ingest", withScheduled: true });
      await Deno.writeTextFile(
        feed,
        [line(1, 700), line(2, 800), line(3, 20), line(4, 900)].join("\n") + "\n",
      );
      // cb-4 is an item of another tenant already: the acme run's record fails alone.
      await store.workItemAdd({
        queue: "disputes",
        key: "cb-4",
        tenant: "globex",
        data: { amount: 1 },
        score: null,
        actor: "ada",
        now: bj.clock.now(),
      });
      const [job] = await store.jobsInsert({
        jobs: [ingestJob(pipeline, { now: bj.clock.now(), tenant: "acme" })],
        now: bj.clock.now(),
      });
      await drainJobs(jobs, { queue: "ingest", withScheduled: true });
      const run = (await store.ingestRunByJob({ jobId: job!.id }))!;
      assert.equal(run.state, "completed", run.error ?? "");
      const items = await store.workItemsList({ queue: "disputes", limit: 10 });
      assert.deepEqual(items.map((i) => [i.key, i.tenant]).sort(), [
        ["cb-1", "acme"],
        ["cb-2", "acme"],
        ["cb-4", "globex"],
      ]);
      assert.deepEqual([run.counts.sunk, run.counts.failed], [2, 1]);
      assert.deepEqual(
        (await store.workItemGet({ queue: "disputes", key: "cb-4" }))!.data,
        { amount: 1 },
        "another tenant's item is untouched",
      );
    } finally {
      await dir.cleanup();
    }
  });
}
