/**
 * A node killed with SIGKILL in the middle of its jobs loses none of them:
 * their leases expire, the lifeline on another node rescues them, and they
 * run to completion there, each exactly once more.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Jobs, SystemClock } from "../../src/mod.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { drainQueue } from "../../src/testing.ts";
import { rescueOrphans } from "../../src/runtime/lifeline.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { denoScript, lines } from "../support/processes.ts";
import { tempStore } from "../support/stores.ts";
import { counts } from "../support/rescue.ts";

const CHILD = fileURLToPath(new URL("../support/child_crash.ts", import.meta.url));

Deno.test({
  name: "a node killed mid-job loses nothing: the lifeline rescues its jobs and they run once more",
  sanitizeResources: false,
  fn: async () => {
    await using t = await tempStore();
    const clock = new SystemClock();
    const setup = new Jobs({ store: t.store, clock, logger: silentLogger });
    const { length: total } = await setup.enqueueMany(
      Array.from({ length: 5 }, (_, n) => ({ worker: "hang", args: { n } })),
    );

    const child = denoScript(CHILD, [t.path, "doomed", String(total)], {
      stdout: "piped",
      stderr: "inherit",
      signal: AbortSignal.timeout(60_000),
    }).spawn();
    const out = lines(child.stdout);
    assert.equal((await out.next()).value, `running ${total}`);
    child.kill("SIGKILL");
    await child.status;

    const held = await t.store.jobsList({ state: "executing" });
    assert.equal(held.length, total, "the dead node still holds every lease");
    assert.ok(held.every((j) => j.attemptedBy === "doomed" && j.fence === 1));

    // Before the leases expire, nothing is touched; after, everything is rescued.
    assert.deepEqual(counts(await rescueOrphans(t.store, clock.now())), {
      rescued: 0,
      discarded: 0,
      queues: [],
    });
    const later = Math.max(...held.map((j) => j.leaseExpiresAt!)) + 1;
    const report = await rescueOrphans(t.store, later);
    assert.equal(report.rescued, total);

    const ran: number[] = [];
    const survivor = new Jobs({
      store: t.store,
      clock,
      logger: silentLogger,
      workers: [defineWorker({ name: "hang", perform: (_args, ctx) => void ran.push(ctx.job.id) })],
    });
    assert.equal((await drainQueue(survivor, "default")).completed, total);
    assert.deepEqual(ran.sort((a, b) => a - b), held.map((j) => j.id).sort((a, b) => a - b));
    for (const job of held) {
      const attempts = await t.store.attemptsList({ jobId: job.id });
      assert.deepEqual(
        attempts.map((a) => [a.node, a.fence, a.outcome]),
        [["doomed", 1, "orphaned"], [attempts[1]?.node, 2, "completed"]],
      );
    }
  },
});
