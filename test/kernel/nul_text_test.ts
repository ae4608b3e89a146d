import assert from "node:assert/strict";
import { defineWorker } from "../../src/mod.ts";
import { drainQueue } from "../../src/testing.ts";
import { backendJobs, BACKENDS } from "../support/backends.ts";

// PostgreSQL's text and jsonb cannot hold U+0000: a job whose error or output
// held one could not be recorded there (the write failed, the result waited
// and the job stayed executing until its lease ran out), while SQLite took
// it. Both stores keep such text the same way: NUL written as `\u0000`.
const throwsNul = defineWorker({
  name: "throws-nul",
  perform(_args: unknown, ctx) {
    ctx.output("out\u0000put");
    throw new Error("bad\u0000byte");
  },
  maxAttempts: 1,
});
const discardsNul = defineWorker({
  name: "discards-nul",
  perform: () => ({ discard: "why\u0000not" }),
});

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] a job whose error and output hold U+0000 is recorded, the NUL kept as \\u0000`, async () => {
    await using t = await backendJobs(backend, [throwsNul, discardsNul]);
    const failing = await t.jobs.enqueue(throwsNul, {});
    const discarding = await t.jobs.enqueue(discardsNul, {});
    const drained = await drainQueue(t.jobs, "default");
    assert.equal(drained.discarded, 2, JSON.stringify(drained));
    const job = (await t.store.jobGet({ id: failing.id }))!;
    assert.equal(job.state, "discarded");
    assert.match(job.errors.at(-1)!.error, /^bad\\u0000byte/);
    const attempts = await t.store.attemptsList({ jobId: failing.id });
    assert.match(attempts[0]!.error!, /^bad\\u0000byte/);
    assert.equal(attempts[0]!.output, "out\\u0000put");
    const other = (await t.store.jobGet({ id: discarding.id }))!;
    assert.equal(other.errors.at(-1)!.error, "why\\u0000not");
  });
}
