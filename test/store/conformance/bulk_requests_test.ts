/**
 * Bulk requests and TOTP enrolments, on every backend: a request reads back
 * without its code's hash, which only `bulkRequestCodeHash` hands out; the
 * newest request of a manifest is found; a wrong try counts and the limit
 * locks; a confirmation happens once, never after expiry nor past the tries;
 * ending moves only a pending (or locked, to void) request; a TOTP seed is
 * handed out only by `totpSecret`, a step is used once, enrolling again
 * forgets the last step; writes in a transaction roll back with it.
 */

import assert from "node:assert/strict";
import type { NewBulkRequest } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { T0 } from "./helpers.ts";

const MINUTE = 60_000;

function request(fields: Partial<NewBulkRequest> = {}): NewBulkRequest {
  return {
    manifest: "a".repeat(64),
    queue: "disputes",
    bulk: "release",
    tenant: null,
    items: [
      { id: "d-1", amount: "1900", currency: "EUR" },
      { id: "d-2", amount: "12.5", currency: "EUR" },
    ],
    totals: { EUR: "1912.5" },
    requester: "ann",
    channel: "email",
    approverRole: null,
    secondPerson: true,
    codeHash: "scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA",
    expiresAt: T0 + 10 * MINUTE,
    now: T0,
    ...fields,
  };
}

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("bulkRequestCreate() stores a pending request that reads back without its code's hash", async ({ store }) => {
    const made = await store.bulkRequestCreate(request({ tenant: "acme" }));
    assert.deepEqual(made, {
      id: made.id,
      manifest: "a".repeat(64),
      queue: "disputes",
      bulk: "release",
      tenant: "acme",
      items: request().items,
      totals: { EUR: "1912.5" },
      requester: "ann",
      channel: "email",
      approverRole: null,
      secondPerson: true,
      createdAt: T0,
      expiresAt: T0 + 10 * MINUTE,
      tries: 0,
      state: "pending",
      endedReason: null,
      endedAt: null,
      confirmer: null,
      confirmedAt: null,
      totpStep: null,
    });
    assert.equal("codeHash" in made, false);
    assert.deepEqual(await store.bulkRequestGet({ id: made.id }), made);
    assert.deepEqual(await store.bulkRequestCodeHash({ id: made.id }), {
      request: made,
      codeHash: request().codeHash,
    });
    assert.equal(await store.bulkRequestGet({ id: made.id + 100 }), null);
    assert.equal(await store.bulkRequestCodeHash({ id: made.id + 100 }), null);
    const totp = await store.bulkRequestCreate(
      request({ channel: "totp", approverRole: "approver", codeHash: null, tries: 3 }),
    );
    assert.equal(totp.approverRole, "approver");
    assert.equal(totp.tries, 3);
    assert.equal((await store.bulkRequestCodeHash({ id: totp.id }))?.codeHash, null);
  });

  test("bulkRequestLatest() is the newest of a manifest; bulkRequestsList() newest first", async ({ store }) => {
    const b = "b".repeat(64);
    const first = await store.bulkRequestCreate(request());
    const other = await store.bulkRequestCreate(request({ manifest: b }));
    const second = await store.bulkRequestCreate(request());
    assert.equal((await store.bulkRequestLatest({ manifest: "a".repeat(64) }))?.id, second.id);
    assert.equal((await store.bulkRequestLatest({ manifest: b }))?.id, other.id);
    assert.equal(await store.bulkRequestLatest({ manifest: "c".repeat(64) }), null);
    assert.deepEqual((await store.bulkRequestsList({})).map((r) => r.id), [
      second.id,
      other.id,
      first.id,
    ]);
    assert.deepEqual(
      (await store.bulkRequestsList({ manifest: "a".repeat(64), limit: 1 })).map((r) => r.id),
      [second.id],
    );
  });

  test("bulkRequestTry() counts a wrong code and the limit locks; a locked request counts no more", async ({ store }) => {
    const made = await store.bulkRequestCreate(request());
    for (let i = 1; i <= 4; i++) {
      const after = await store.bulkRequestTry({ id: made.id, limit: 5, now: T0 + i });
      assert.equal(after?.tries, i);
      assert.equal(after?.state, "pending");
    }
    const locked = await store.bulkRequestTry({ id: made.id, limit: 5, now: T0 + 5 });
    assert.equal(locked?.tries, 5);
    assert.equal(locked?.state, "locked");
    assert.equal(locked?.endedReason, "too-many-tries");
    assert.equal(locked?.endedAt, T0 + 5);
    assert.equal(await store.bulkRequestTry({ id: made.id, limit: 5, now: T0 + 6 }), null);
    assert.equal((await store.bulkRequestGet({ id: made.id }))?.tries, 5);
  });

  test("bulkRequestConfirm() confirms once, never once expired nor past the tries", async ({ store }) => {
    const made = await store.bulkRequestCreate(request());
    const params = { id: made.id, confirmer: "bob", totpStep: null, limit: 5 };
    assert.equal(
      await store.bulkRequestConfirm({ ...params, now: T0 + 10 * MINUTE }),
      null,
      "expired at expires_at",
    );
    const confirmed = await store.bulkRequestConfirm({ ...params, totpStep: 42, now: T0 + 1 });
    assert.equal(confirmed?.state, "confirmed");
    assert.equal(confirmed?.confirmer, "bob");
    assert.equal(confirmed?.confirmedAt, T0 + 1);
    assert.equal(confirmed?.totpStep, 42);
    assert.equal(await store.bulkRequestConfirm({ ...params, now: T0 + 2 }), null, "only once");

    const tried = await store.bulkRequestCreate(request({ tries: 5 }));
    assert.equal(
      await store.bulkRequestConfirm({ ...params, id: tried.id, now: T0 + 1 }),
      null,
      "a request with every try spent confirms nothing",
    );
  });

  test("bulkRequestEnd() ends a pending request, voids a locked one, leaves a confirmed one", async ({ store }) => {
    const a = await store.bulkRequestCreate(request());
    assert.equal(
      await store.bulkRequestEnd({ id: a.id, state: "expired", reason: "expired", now: T0 + 1 }),
      true,
    );
    const ended = await store.bulkRequestGet({ id: a.id });
    assert.equal(ended?.state, "expired");
    assert.equal(ended?.endedReason, "expired");
    assert.equal(ended?.endedAt, T0 + 1);
    assert.equal(
      await store.bulkRequestEnd({ id: a.id, state: "void", reason: "superseded", now: T0 + 2 }),
      false,
    );

    const b = await store.bulkRequestCreate(request({ tries: 4 }));
    await store.bulkRequestTry({ id: b.id, limit: 5, now: T0 + 1 });
    assert.equal(
      await store.bulkRequestEnd({ id: b.id, state: "expired", reason: "expired", now: T0 + 2 }),
      false,
      "a locked request stays locked until voided",
    );
    assert.equal(
      await store.bulkRequestEnd({ id: b.id, state: "void", reason: "manifest-changed", now: 3 }),
      true,
    );

    const c = await store.bulkRequestCreate(request());
    await store.bulkRequestConfirm({
      id: c.id,
      confirmer: "bob",
      totpStep: null,
      limit: 5,
      now: T0 + 1,
    });
    assert.equal(
      await store.bulkRequestEnd({ id: c.id, state: "void", reason: "manifest-changed", now: 4 }),
      false,
    );
    assert.equal((await store.bulkRequestGet({ id: c.id }))?.state, "confirmed");
  });

  test("a TOTP seed is handed out by totpSecret() alone; a step is used once; enrolling again forgets it", async ({ store }) => {
    assert.equal(await store.totpEnrolment({ person: "bob" }), null);
    assert.equal(await store.totpSecret({ person: "bob" }), null);
    assert.equal(await store.totpUse({ person: "bob", step: 1 }), false, "not enrolled");
    await store.totpEnrol({ person: "bob", secret: "JBSWY3DPEHPK3PXP", by: "root", now: T0 });
    const enrolment = { person: "bob", lastStep: null, enrolledBy: "root", enrolledAt: T0 };
    assert.deepEqual(await store.totpEnrolment({ person: "bob" }), enrolment);
    assert.deepEqual(await store.totpSecret({ person: "bob" }), {
      enrolment,
      secret: "JBSWY3DPEHPK3PXP",
    });
    assert.equal(await store.totpUse({ person: "bob", step: 100 }), true);
    assert.equal(await store.totpUse({ person: "bob", step: 100 }), false, "the same step again");
    assert.equal(await store.totpUse({ person: "bob", step: 99 }), false, "an older step");
    assert.equal(await store.totpUse({ person: "bob", step: 101 }), true);
    assert.equal((await store.totpEnrolment({ person: "bob" }))?.lastStep, 101);

    await store.totpEnrol({ person: "bob", secret: "KRSXG5CTMVRXEZLU", by: "ada", now: T0 + 1 });
    assert.deepEqual(await store.totpSecret({ person: "bob" }), {
      enrolment: { person: "bob", lastStep: null, enrolledBy: "ada", enrolledAt: T0 + 1 },
      secret: "KRSXG5CTMVRXEZLU",
    });
    assert.equal(await store.totpDelete({ person: "bob" }), true);
    assert.equal(await store.totpDelete({ person: "bob" }), false);
    assert.equal(await store.totpSecret({ person: "bob" }), null);
  });

  test("requests and enrolments written in a transaction roll back with it", async ({ store }) => {
    await assert.rejects(
      store.transaction(async (tx) => {
        const made = await tx.bulkRequestCreate(request());
        await tx.bulkRequestTry({ id: made.id, limit: 5, now: T0 + 1 });
        assert.equal((await tx.bulkRequestGet({ id: made.id }))?.tries, 1);
        await tx.totpEnrol({ person: "bob", secret: "JBSWY3DPEHPK3PXP", by: "root", now: T0 });
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.deepEqual(await store.bulkRequestsList({}), []);
    assert.equal(await store.totpEnrolment({ person: "bob" }), null);
  });
}
