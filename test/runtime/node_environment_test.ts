/**
 * A node says where it runs: the runtime's `environment` (the daemon's
 * `--environment`) is stored with its registration and every heartbeat, so
 * `jobs status` and `jobs run` can tell which environments the live nodes
 * serve.
 */

import assert from "node:assert/strict";
import { beat } from "../../src/runtime/heartbeat.ts";
import { tempJobs } from "../support/stores.ts";

Deno.test("a runtime registers its node with its environment, and each heartbeat keeps it", async () => {
  await using t = await tempJobs();
  const runtime = await t.jobs.start({
    queues: { default: 1 },
    node: "stage-1",
    environment: "staging",
  });
  assert.deepEqual((await t.store.nodesList()).map((n) => [n.node, n.environment]), [
    ["stage-1", "staging"],
  ]);
  await runtime.stop({ grace: 0 });

  await beat(t.store, t.clock.now(), {
    node: "plain",
    queues: {},
    inflight: [],
    leaseMs: 30_000,
    renew: false,
  });
  await beat(t.store, t.clock.now(), {
    node: "prod-1",
    queues: {},
    environment: "production",
    inflight: [],
    leaseMs: 30_000,
    renew: false,
  });
  assert.deepEqual((await t.store.nodesList()).map((n) => [n.node, n.environment]), [
    ["plain", null],
    ["prod-1", "production"],
  ]);
});
