/**
 * A process that exits while its fan-out's selection command runs: performs
 * a fan-out whose selection starts a grandchild that ignores SIGTERM and
 * waits for it, prints `running <leader> <grandchild>` once both are up, then
 * calls `Deno.exit(0)` with the selection's group still alive.
 *
 * Usage: child_selection.ts <dir>
 */

import { SystemClock } from "../../src/clock.ts";
import { fanoutWorker } from "../../src/runners/fanout.ts";
import { fanOutRun } from "../../src/schedule/plan.ts";
import { performJob } from "../../src/testing.ts";
import { scheduleOf } from "../support/schedules.ts";
import { readPid } from "./processes.ts";

const [dir] = Deno.args;
if (!dir) {
  console.error("usage: child_selection.ts <dir>");
  Deno.exit(2);
}
const schedule = scheduleOf({
  id: "exits",
  every: "1h",
  selection: {
    command: `(trap '' TERM; exec sleep 60) & echo $! > "${dir}/grandchild"; ` +
      `echo $$ > "${dir}/leader"; wait`,
    shell: true,
  },
  run: { worker: "visit" },
});
const worker = fanoutWorker({
  store: () => {
    throw new Error("the selection never ends, so no item is enqueued");
  },
  env: (name) => Deno.env.get(name),
  clock: new SystemClock(),
});
performJob(worker, fanOutRun(schedule)).then((result) => {
  console.error(`the selection ended before the exit: ${JSON.stringify(result)}`);
  Deno.exit(3);
});
const leader = await readPid(`${dir}/leader`);
const grandchild = await readPid(`${dir}/grandchild`);
console.log(`running ${leader} ${grandchild}`);
Deno.exit(0);
