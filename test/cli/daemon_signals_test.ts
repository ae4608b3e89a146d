import assert from "node:assert/strict";
import { ECHO_MS, stopSignals } from "../../src/cli/daemon.ts";
import { FakeClock } from "../../src/clock.ts";

Deno.test("the first stop signal stops, an echo of it is ignored, a later one exits", () => {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const calls: string[] = [];
  const signal = stopSignals({
    clock,
    stop: (s) => calls.push(`stop ${s}`),
    exit: (s) => calls.push(`exit ${s}`),
    echo: (s) => calls.push(`echo ${s}`),
  });
  signal("SIGINT");
  signal("SIGINT"); // the same Ctrl-C, forwarded by `deno task`
  clock.advance(ECHO_MS - 1);
  signal("SIGTERM");
  clock.advance(1);
  signal("SIGINT"); // the operator insists
  assert.deepEqual(calls, ["stop SIGINT", "echo SIGINT", "echo SIGTERM", "exit SIGINT"]);
});
