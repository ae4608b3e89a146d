/**
 * Bulk runs, on every backend: a run is created running with its snapshot,
 * read back (in a tenant's scope only that tenant's), listed newest first,
 * moved forward (never backwards, never once ended), asked to abort and
 * ended once; its creation inside a transaction rolls back with it.
 */

import assert from "node:assert/strict";
import type { BulkRunCreateParams } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { T0 } from "./helpers.ts";

function run(fields: Partial<BulkRunCreateParams> = {}): BulkRunCreateParams {
  return {
    action: "retry",
    filter: { state: "discarded", queue: "mail" },
    ids: [3, 1, 2],
    actor: "ada",
    reason: "the mail server is back",
    tenant: null,
    now: T0,
    ...fields,
  };
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("bulkRunCreate() stores a running run with its snapshot; bulkRunGet() scopes by tenant", async ({ store }) => {
    const a = await store.bulkRunCreate(run());
    assert.deepEqual(a, {
      id: a.id,
      action: "retry",
      filter: { state: "discarded", queue: "mail" },
      total: 3,
      done: 0,
      changed: 0,
      skipped: 0,
      state: "running",
      actor: "ada",
      reason: "the mail server is back",
      tenant: null,
      createdAt: T0,
      finishedAt: null,
      abortRequested: false,
    });
    assert.deepEqual(await store.bulkRunGet({ id: a.id }), a);
    assert.deepEqual(await store.bulkRunSnapshot({ id: a.id }), [3, 1, 2]);
    const b = await store.bulkRunCreate(run({ tenant: "acme", action: "cancel", reason: null }));
    assert.equal((await store.bulkRunGet({ id: b.id, tenant: "acme" }))?.id, b.id);
    assert.equal(await store.bulkRunGet({ id: b.id, tenant: "globex" }), null);
    assert.equal(await store.bulkRunGet({ id: a.id, tenant: "acme" }), null);
    assert.equal(await store.bulkRunGet({ id: b.id + 100 }), null);
    assert.equal(await store.bulkRunSnapshot({ id: b.id + 100 }), null);
    assert.deepEqual((await store.bulkRunsList({})).map((r) => r.id), [b.id, a.id]);
    assert.deepEqual((await store.bulkRunsList({ tenant: "acme" })).map((r) => r.id), [b.id]);
    assert.deepEqual((await store.bulkRunsList({ before: b.id })).map((r) => r.id), [a.id]);
    assert.deepEqual((await store.bulkRunsList({ limit: 1 })).map((r) => r.id), [b.id]);
  });

  test("bulkRunProgress() moves forward only while running; abort and finish end it once", async ({ store }) => {
    const a = await store.bulkRunCreate(run({ tenant: "acme" }));
    assert.equal(await store.bulkRunProgress({ id: a.id, done: 2, changed: 1, skipped: 1 }), true);
    assert.equal(await store.bulkRunProgress({ id: a.id, done: 1, changed: 1, skipped: 0 }), false);
    const got = await store.bulkRunGet({ id: a.id });
    assert.deepEqual([got?.done, got?.changed, got?.skipped], [2, 1, 1]);
    assert.equal(await store.bulkRunAbort({ id: a.id, tenant: "globex" }), false);
    assert.equal(await store.bulkRunAbort({ id: a.id, tenant: "acme" }), true);
    assert.equal((await store.bulkRunGet({ id: a.id }))?.abortRequested, true);
    assert.equal(await store.bulkRunFinish({ id: a.id, state: "aborted", now: T0 + 5 }), true);
    assert.equal(await store.bulkRunFinish({ id: a.id, state: "completed", now: T0 + 6 }), false);
    assert.equal(await store.bulkRunProgress({ id: a.id, done: 3, changed: 2, skipped: 1 }), false);
    assert.equal(await store.bulkRunAbort({ id: a.id }), false);
    const ended = await store.bulkRunGet({ id: a.id });
    assert.deepEqual([ended?.state, ended?.finishedAt, ended?.done], ["aborted", T0 + 5, 2]);
  });

  test("bulkRunCreate() on a transaction rolls back with it", async ({ store }) => {
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.bulkRunCreate(run());
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.deepEqual(await store.bulkRunsList({}), []);
    const made = await store.transaction((tx) => tx.bulkRunCreate(run()));
    assert.equal((await store.bulkRunGet({ id: made.id }))?.total, 3);
  });
}
