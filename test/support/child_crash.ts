/**
 * A node that is about to crash: opens the SQLite file given on the command
 * line, runs a runtime named by the second argument whose `hang` jobs never
 * finish, prints `running <n>` once n jobs run, and waits to be killed.
 *
 * Usage: child_crash.ts <dbpath> <node> <n>
 */

import { defineWorker, openJobs, silentLogger } from "../../src/mod.ts";

const [path, node, countText] = Deno.args;
if (!path || !node || !countText) {
  console.error("usage: child_crash.ts <dbpath> <node> <n>");
  Deno.exit(2);
}
let running = 0;
const hang = defineWorker({
  name: "hang",
  perform: () => {
    running++;
    if (running === Number(countText)) console.log(`running ${running}`);
    return new Promise<void>(() => {});
  },
});
const jobs = await openJobs(path, { workers: [hang], logger: silentLogger });
await jobs.start({ queues: { default: Number(countText) }, node, leaseMs: 60_000 });
