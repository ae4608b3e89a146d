/**
 * Bulk money on work queues end to end (`src/admin/work_bulk.ts`), on both
 * stores with the injected clock: a preview shows the exact set with its
 * amounts and totals; a request sends a code out of band (a real local SMTP
 * server, or the approver's enrolled TOTP authenticator); the confirmation
 * runs one job per item, each item done and audited. A changed amount voids
 * the code, a reused code is refused, the fifth wrong code locks, and with
 * `second_person` the requester may not approve their own request.
 */

import assert from "node:assert/strict";
// @ts-types="@types/smtp-server"
import { SMTPServer } from "smtp-server";
import { enrolTotp } from "../../src/admin/people.ts";
import { addWorkItem, claimWorkItem, type WorkActor, workActor } from "../../src/admin/work.ts";
import { confirmWorkBulk, previewWorkBulk, requestWorkBulk } from "../../src/admin/work_bulk.ts";
import { FakeClock } from "../../src/clock.ts";
import type { Store } from "../../src/store/store.ts";
import type { SmtpSettings } from "../../src/workqueue/channels.ts";
import { BulkRefused } from "../../src/workqueue/confirm.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { totpCode } from "../../src/workqueue/totp.ts";
import type { WorkQueueDefinition } from "../../src/workqueue/types.ts";
import { BACKENDS, type Harness } from "../support/backends.ts";

const T0 = Date.UTC(2026, 11, 6, 9, 0, 0);

function payouts(confirmBy: Record<string, unknown>, secondPerson = true): WorkQueueDefinition {
  return compileWorkQueue({
    id: "payouts",
    claim: "required",
    leaseMs: 3_600_000,
    actions: [{ id: "release", run: { kind: "worker", worker: "release_payout" } }],
    bulk: [{
      id: "release-all",
      action: "release",
      money: { amount: "amount", currency: "currency" },
      confirmBy,
      secondPerson,
    }],
    roles: ["operator"],
  });
}

interface Fixture {
  h: Harness;
  store: Store;
  clock: FakeClock;
  as(name: string): Promise<WorkActor>;
}

async function fixture(backend: (typeof BACKENDS)[number], queue: WorkQueueDefinition) {
  const h = await backend.open(T0);
  const clock = new FakeClock(T0);
  for (
    const [name, roles] of [
      ["ann", ["operator"]],
      ["bob", ["approver"]],
      ["dora", ["approver", "operator"]],
      ["carl", ["operator"]],
    ] as const
  ) {
    await h.store.principalInsert({
      principal: { kind: "person", name, roles: [...roles], secretHash: "x", createdBy: "test" },
      now: T0,
    });
  }
  const f: Fixture = {
    h,
    store: h.store,
    clock,
    as: (name) => workActor(h.store, name, { door: "cli", osUser: "os", now: clock.now() }),
  };
  const ann = await f.as("ann");
  for (
    const [key, amount, currency] of [
      ["p-1", "1900.00", "EUR"],
      ["p-2", 500, "EUR"],
      ["p-3", "42.5", "USD"],
    ] as const
  ) {
    await addWorkItem(h.store, queue, { key, data: { amount, currency } }, ann);
  }
  return f;
}

async function refused(fn: Promise<unknown>, why: string): Promise<BulkRefused> {
  try {
    await fn;
  } catch (error) {
    assert.ok(error instanceof BulkRefused, `a BulkRefused, not ${error}`);
    assert.equal(error.why, why, error.message);
    return error;
  }
  assert.fail(`not refused (${why} expected)`);
}

/** A local SMTP server keeping each message's text. */
async function smtpServer(): Promise<
  { smtp: SmtpSettings; messages: string[]; close(): Promise<void> }
> {
  const messages: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, _session, callback) {
      let text = "";
      stream.on("data", (chunk: Uint8Array) => text += new TextDecoder().decode(chunk));
      stream.on("end", () => {
        messages.push(text.replace(/=\r?\n/g, ""));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    smtp: { url: `smtp://127.0.0.1:${port}`, from: "jobs@example.com" },
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function codeOf(message: string | undefined): string {
  const code = /Confirmation code: (\d{6})/.exec(message ?? "")?.[1];
  assert.ok(code, "the message holds a code");
  return code;
}

for (const backend of BACKENDS) {
  Deno.test({
    name: `${backend.name}: bulk by e-mail: preview, request, confirm runs one job per item`,
    async fn() {
      const queue = payouts({ email: "finance@example.com" });
      const f = await fixture(backend, queue);
      const mail = await smtpServer();
      try {
        const deps = { clock: f.clock, smtp: mail.smtp };
        const preview = await previewWorkBulk(
          f.store,
          [queue],
          { queue: "payouts", bulk: "release-all" },
          await f.as("ann"),
        );
        assert.deepEqual(
          preview.items.map((i) => [i.key, i.amount, i.currency]),
          [["p-1", "1900", "EUR"], ["p-2", "500", "EUR"], ["p-3", "42.5", "USD"]],
        );
        assert.deepEqual(preview.totals, { EUR: "2400", USD: "42.5" });
        const hash = preview.manifest.hash;

        const request = await requestWorkBulk(
          f.store,
          deps,
          [queue],
          { manifest: hash },
          await f.as("ann"),
        );
        assert.equal(request.state, "pending");
        assert.equal(mail.messages.length, 1);
        assert.match(mail.messages[0]!, /3 items totalling EUR 2400, USD 42\.5/);
        const code = codeOf(mail.messages[0]);

        // The requester may not approve their own request (second_person), nor an operator.
        await refused(
          confirmWorkBulk(f.store, f, [queue], { manifest: hash, code }, await f.as("carl")),
          "not-approver",
        );

        const run = await confirmWorkBulk(
          f.store,
          f,
          [queue],
          { manifest: hash, code },
          await f.as("bob"),
        );
        assert.equal(run.request.confirmer, "bob");
        assert.deepEqual(run.outcomes.map((o) => [o.key, o.ok]), [
          ["p-1", true],
          ["p-2", true],
          ["p-3", true],
        ]);
        for (const outcome of run.outcomes) {
          assert.ok(outcome.ok);
          const job = await f.store.jobGet({ id: outcome.jobId });
          assert.equal(job?.uniqueKey, `payouts/${outcome.key}/release`);
          const item = await f.store.workItemGet({ queue: "payouts", key: outcome.key });
          assert.equal(item?.state, "done");
          assert.equal(item?.doneBy, "bob");
          const trail = await f.store.auditList({ target: `work:payouts/${outcome.key}` });
          const done = trail.find((r) => r.action === "work.do");
          assert.equal(done?.actor, "bob");
          assert.equal((done?.details as Record<string, unknown>).manifest, hash);
        }
        // The code worked once.
        await refused(
          confirmWorkBulk(f.store, f, [queue], { manifest: hash, code }, await f.as("bob")),
          "used",
        );
        const trail = (await f.store.auditList({ target: `manifest:${hash}` })).map((r) =>
          `${r.action}${
            (r.details as Record<string, unknown>).why
              ? ` ${(r.details as Record<string, unknown>).why}`
              : ""
          }`
        );
        assert.deepEqual(trail, [
          "bulk.preview",
          "bulk.request",
          "bulk.refused not-approver",
          "bulk.confirm",
          "bulk.refused used",
        ]);
        assert.equal(JSON.stringify(trail).includes(code), false);
      } finally {
        await mail.close();
        await f.h.close();
      }
    },
  });

  Deno.test({
    name: `${backend.name}: bulk: a changed amount voids the code; self-approval refused`,
    async fn() {
      const queue = payouts({ email: "finance@example.com" });
      const f = await fixture(backend, queue);
      const mail = await smtpServer();
      try {
        const deps = { clock: f.clock, smtp: mail.smtp };
        const sel = { queue: "payouts", bulk: "release-all", keys: ["p-1", "p-2"] };
        const preview = await previewWorkBulk(f.store, [queue], sel, await f.as("dora"));
        assert.deepEqual(preview.totals, { EUR: "2400" });
        const hash = preview.manifest.hash;
        await requestWorkBulk(f.store, deps, [queue], { manifest: hash }, await f.as("dora"));
        const code = codeOf(mail.messages[0]);
        await refused(
          confirmWorkBulk(f.store, f, [queue], { manifest: hash, code }, await f.as("dora")),
          "self-approval",
        );
        await addWorkItem(
          f.store,
          queue,
          { key: "p-2", data: { amount: "501", currency: "EUR" } },
          await f.as("ann"),
        );
        await refused(
          confirmWorkBulk(f.store, f, [queue], { manifest: hash, code }, await f.as("bob")),
          "manifest-changed",
        );
        // Void for good: even with the amount back, the code does not work.
        await addWorkItem(
          f.store,
          queue,
          { key: "p-2", data: { amount: "500", currency: "EUR" } },
          await f.as("ann"),
        );
        await refused(
          confirmWorkBulk(f.store, f, [queue], { manifest: hash, code }, await f.as("bob")),
          "void",
        );
        const p2 = await f.store.workItemGet({ queue: "payouts", key: "p-2" });
        assert.equal(p2?.state, "open", "nothing ran");

        // A new item matching an all-open selection voids a code as well.
        const all = await previewWorkBulk(
          f.store,
          [queue],
          { queue: "payouts", bulk: "release-all" },
          await f.as("dora"),
        );
        await requestWorkBulk(
          f.store,
          deps,
          [queue],
          { manifest: all.manifest.hash },
          await f.as("dora"),
        );
        const allCode = codeOf(mail.messages.at(-1));
        await addWorkItem(
          f.store,
          queue,
          { key: "p-4", data: { amount: "1", currency: "EUR" } },
          await f.as("ann"),
        );
        await refused(
          confirmWorkBulk(
            f.store,
            f,
            [queue],
            { manifest: all.manifest.hash, code: allCode },
            await f.as("bob"),
          ),
          "manifest-changed",
        );

        // A claim changes the set too: a request made now is refused.
        f.clock.advance(1000);
        const again = await previewWorkBulk(f.store, [queue], sel, await f.as("dora"));
        await claimWorkItem(f.store, queue, "p-1", await f.as("carl"));
        await assert.rejects(
          requestWorkBulk(
            f.store,
            deps,
            [queue],
            { manifest: again.manifest.hash },
            await f.as("dora"),
          ),
          (e: Error) => e instanceof BulkRefused && e.why === "manifest-changed",
        );
      } finally {
        await mail.close();
        await f.h.close();
      }
    },
  });

  Deno.test({
    name:
      `${backend.name}: bulk by TOTP: the approver's authenticator confirms; five wrong codes lock`,
    async fn() {
      const queue = payouts({ totp: "approver" });
      const f = await fixture(backend, queue);
      try {
        const deps = { clock: f.clock };
        await enrolTotp(f.store, "bob", { actor: "admin", reason: null, now: T0 });
        const preview = await previewWorkBulk(
          f.store,
          [queue],
          { queue: "payouts", bulk: "release-all", keys: ["p-3"] },
          await f.as("ann"),
        );
        const hash = preview.manifest.hash;
        const request = await requestWorkBulk(
          f.store,
          deps,
          [queue],
          { manifest: hash },
          await f.as("ann"),
        );
        assert.equal(request.channel, "totp");
        const seed = await f.store.totpSecret({ person: "bob" });
        assert.ok(seed);
        const code = totpCode("bob", seed.secret, f.clock.now());
        const run = await confirmWorkBulk(
          f.store,
          f,
          [queue],
          { manifest: hash, code },
          await f.as("bob"),
        );
        assert.deepEqual(run.outcomes.map((o) => [o.key, o.ok]), [["p-3", true]]);

        // Five wrong codes lock the next request.
        const next = await previewWorkBulk(
          f.store,
          [queue],
          { queue: "payouts", bulk: "release-all" },
          await f.as("ann"),
        );
        await requestWorkBulk(
          f.store,
          deps,
          [queue],
          { manifest: next.manifest.hash },
          await f.as("ann"),
        );
        const good = totpCode("bob", seed.secret, f.clock.now());
        const bad = String((Number(good) + 500_000) % 1_000_000).padStart(6, "0");
        for (let i = 1; i <= 4; i++) {
          await refused(
            confirmWorkBulk(
              f.store,
              f,
              [queue],
              { manifest: next.manifest.hash, code: bad },
              await f.as("bob"),
            ),
            "wrong-code",
          );
        }
        await refused(
          confirmWorkBulk(
            f.store,
            f,
            [queue],
            { manifest: next.manifest.hash, code: bad },
            await f.as("bob"),
          ),
          "locked",
        );
        await refused(
          confirmWorkBulk(
            f.store,
            f,
            [queue],
            { manifest: next.manifest.hash, code: good },
            await f.as("bob"),
          ),
          "locked",
        );
        for (const key of ["p-1", "p-2"]) {
          assert.equal((await f.store.workItemGet({ queue: "payouts", key }))?.state, "open");
        }
      } finally {
        await f.h.close();
      }
    },
  });
}
