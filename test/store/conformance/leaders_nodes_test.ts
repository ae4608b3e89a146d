/**
 * Leaders and nodes, on every backend: leadersList() reads every role's
 * holder, and a node's heartbeats register, refresh and expire it, with the
 * environment it states.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("leadersList() reads every role's holder, released ones included", async ({ store }) => {
    assert.deepEqual(await store.leadersList(), []);
    const held = await store.leaderTake({ name: "maintenance", node: "a", now: T0, ttlMs: 5000 });
    assert.deepEqual(await store.leadersList(), [
      { name: "maintenance", node: "a", fence: held.fence, expiresAt: T0 + 5000, acquiredAt: T0 },
    ]);
    await store.leaderRelease({ name: "maintenance", node: "a", fence: held.fence });
    assert.deepEqual((await store.leadersList()).map((l) => l.node), [null]);
  });

  test("nodeBeat() registers and refreshes, nodesExpire() and nodeDelete() delete", async ({ store }) => {
    await store.nodeBeat({ node: "n1", queues: { default: 2 }, now: T0 });
    await store.nodeBeat({ node: "n2", queues: { mail: 1 }, now: T0 + 1000 });
    await store.nodeBeat({ node: "n1", queues: { default: 3 }, now: T0 + 5000 });
    assert.deepEqual(await store.nodesList(), [
      {
        node: "n1",
        queues: { default: 3 },
        startedAt: T0,
        heartbeatAt: T0 + 5000,
        environment: null,
      },
      {
        node: "n2",
        queues: { mail: 1 },
        startedAt: T0 + 1000,
        heartbeatAt: T0 + 1000,
        environment: null,
      },
    ]);
    assert.equal(await store.nodesExpire({ before: T0 + 3000 }), 1);
    assert.deepEqual((await store.nodesList()).map((n) => n.node), ["n1"]);
    await store.nodeDelete({ node: "n1" });
    await store.nodeDelete({ node: "never-registered" });
    assert.deepEqual(await store.nodesList(), []);
  });

  test("nodeBeat() stores the node's environment with each beat, null when not stated", async ({ store }) => {
    await store.nodeBeat({ node: "n1", queues: {}, environment: "staging", now: T0 });
    await store.nodeBeat({ node: "n2", queues: {}, now: T0 });
    assert.deepEqual((await store.nodesList()).map((n) => [n.node, n.environment]), [
      ["n1", "staging"],
      ["n2", null],
    ]);
    // A restarted daemon with another --environment replaces it at its next beat.
    await store.nodeBeat({ node: "n1", queues: {}, environment: "production", now: T0 + 1000 });
    await store.nodeBeat({ node: "n2", queues: {}, environment: "staging", now: T0 + 1000 });
    assert.deepEqual((await store.nodesList()).map((n) => [n.node, n.environment]), [
      ["n1", "production"],
      ["n2", "staging"],
    ]);
  });
}
