/** The built-in runners' args, checked at enqueue by the library as the runners check them at run. */

import assert from "node:assert/strict";
import { EnqueueError } from "../../src/kernel/enqueue.ts";
import { checkRunnerArgs, RUNNER_ARGS } from "../../src/runners/builtin_args.ts";
import { tempJobs } from "../support/stores.ts";

Deno.test("Jobs.enqueue refuses a built-in runner's args its runner would discard, storing nothing", async () => {
  await using t = await tempJobs([]);
  await assert.rejects(
    t.jobs.enqueue("jobs.command", { argv: ["sleep", "40"] }),
    (error: Error) =>
      error instanceof EnqueueError &&
      error.message.startsWith(
        `jobs.command args: command run kind must be "command", got undefined; expected ` +
          `{"kind":"command","argv":["prog","arg"]`,
      ),
  );
  await assert.rejects(
    t.jobs.enqueueMany([
      { worker: "jobs.command", args: { kind: "command", argv: ["true"] } },
      { worker: "jobs.http", args: { kind: "http", method: "GET", url: "" } },
    ]),
    /jobs\.http args: http run: url must be a non-empty string, got string ""; expected /,
  );
  assert.deepEqual(await t.store.jobsList({}), []);
  const ok = await t.jobs.enqueue("jobs.command", { kind: "command", argv: ["sleep", "40"] });
  assert.equal((await t.store.jobGet({ id: ok.id }))?.worker, "jobs.command");
});

Deno.test("each built-in runner's example shape is args its own schema accepts", () => {
  for (const [worker, { shape }] of RUNNER_ARGS) {
    checkRunnerArgs(worker, shape);
  }
  checkRunnerArgs("anything-else", "{}");
});
