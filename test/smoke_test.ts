import assert from "node:assert/strict";
import { defineWorker } from "../src/mod.ts";
import { drainQueue } from "../src/testing.ts";
import { tempJobs } from "./support/stores.ts";

Deno.test("a job enqueued and drained is completed with one attempt row", async () => {
  const seen: number[] = [];
  const add = defineWorker<{ n: number }>({
    name: "add",
    perform: (args) => void seen.push(args.n),
  });
  await using t = await tempJobs([add]);
  const { id, duplicate } = await t.jobs.enqueue(add, { n: 1 });
  assert.equal(duplicate, false);
  const result = await drainQueue(t.jobs, "default");
  assert.equal(result.completed, 1);
  assert.deepEqual(seen, [1]);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "completed");
  assert.equal(job?.fence, 1);
  const attempts = await t.store.attemptsList({ jobId: id });
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0]?.outcome, "completed");
});
