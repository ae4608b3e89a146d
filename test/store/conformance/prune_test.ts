/**
 * Retention, on every backend: jobsPrunable() counts exactly what jobsPrune()
 * then deletes, per state and per schedule's own cutoff.
 */

import assert from "node:assert/strict";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, completed, insert, newJob, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsPrunable() counts what jobsPrune() and jobsPruneSchedule() then delete", async ({ store }) => {
    const ids = await insert(store, [
      newJob(),
      newJob(),
      newJob({ occurrence: "keep@x", scheduleId: "keep" }),
      newJob({ occurrence: "other@x", scheduleId: "other" }),
      newJob({ priority: 9 }),
    ]);
    const claimed = await claim(store, { limit: 4 });
    await store.jobsRecord({
      node: "node-a",
      now: T0 + 1,
      results: claimed.map((j) => completed(j)),
    });
    await store.jobsCancel({ ids: [ids[4]!], now: T0 + 2, reason: "no" });

    const byState = { completed: T0 + 2, cancelled: T0 + 2 };
    assert.equal(await store.jobsPrunable({ before: byState }), 4);
    assert.equal(await store.jobsPrunable({ before: { ...byState, cancelled: T0 + 3 } }), 5);
    assert.equal(await store.jobsPrunable({ before: { discarded: T0 + 9 } }), 0);
    // A schedule with its own retention: kept while younger than its cutoff.
    const keep = [{ scheduleId: "keep", before: T0 + 1 }];
    assert.equal(await store.jobsPrunable({ before: byState, schedules: keep }), 3);
    const older = [{ scheduleId: "keep", before: T0 + 5 }];
    assert.equal(await store.jobsPrunable({ before: byState, schedules: older }), 4);

    assert.equal(await store.jobsPrune({ before: byState, limit: 100, except: ["keep"] }), 3);
    assert.equal(await store.jobsPrunable({ before: byState, schedules: keep }), 0);
    assert.equal(await store.jobsPrunable({ before: byState, schedules: older }), 1);
  });
}
