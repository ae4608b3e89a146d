/**
 * Confirmation codes (src/workqueue/confirm.ts) on every backend, with the
 * injected clock, through real channels: a command that receives the code
 * in JOBS_CONFIRM_CODE and the summary on stdin, a webhook on a local HTTP
 * server, e-mail through a real local SMTP server (`smtp-server`), and TOTP
 * from an authenticator enrolled with `enrolTotp`. The rules: a code works
 * once; it expires; the fifth wrong code locks the request (and asking again
 * resets nothing); `second_person` refuses self-approval and a confirmer
 * without the approver role; a changed manifest voids the code; a TOTP code
 * is checked one step either side and works once; a failed delivery voids
 * the request. Every step is in the audit trail, and the code is in no row
 * and no error.
 */

import assert from "node:assert/strict";
// @ts-types="@types/smtp-server"
import { SMTPServer } from "smtp-server";
import { enrolTotp } from "../../src/admin/people.ts";
import { FakeClock } from "../../src/clock.ts";
import type { Store } from "../../src/store/store.ts";
import type { ChannelSpec } from "../../src/workqueue/channels.ts";
import {
  BulkRefused,
  bulkRequestJson,
  CODE_TRIES,
  type CodeRequest,
  confirmCode,
  requestCode,
} from "../../src/workqueue/confirm.ts";
import { type Manifest, manifestOf } from "../../src/workqueue/manifest.ts";
import { totpCode } from "../../src/workqueue/totp.ts";
import { ACTIONS } from "../../src/admin/actions.ts";
import { CONFIRM_ACTIONS } from "../../src/workqueue/confirm.ts";
import { BACKENDS, type Harness } from "../support/backends.ts";
import { tempDir } from "../support/stores.ts";

const T0 = Date.UTC(2026, 2, 8, 12, 0, 5);
const MINUTE = 60_000;

const ITEMS = [
  { id: "d-1", amount: "1900.00", currency: "EUR" },
  { id: "d-2", amount: "500", currency: "EUR" },
  { id: "d-3", amount: "42.5", currency: "USD" },
];

/** People: ann asks, bob and dora approve, carl operates. */
async function people(store: Store): Promise<void> {
  const add = (name: string, roles: string[]) =>
    store.principalInsert({
      principal: { kind: "person", name, roles, secretHash: "none", createdBy: "test" },
      now: T0,
    });
  await add("ann", ["operator"]);
  await add("bob", ["approver"]);
  await add("carl", ["operator"]);
  await add("dora", ["approver", "operator"]);
}

/** A command channel that writes the code and its stdin to files of `dir`. */
function commandChannel(dir: string): ChannelSpec {
  return {
    kind: "command",
    argv: [
      "/bin/sh",
      "-c",
      `printf '%s' "$JOBS_CONFIRM_CODE" > "$1/code"; cat > "$1/stdin"`,
      "deliver",
      dir,
    ],
  };
}

interface Fixture {
  h: Harness;
  store: Store;
  clock: FakeClock;
  dir: string;
  manifest: Manifest;
  /** A request of ann's through the command channel (second person unless told otherwise). */
  ask(fields?: Partial<CodeRequest>): ReturnType<typeof requestCode>;
  /** The code the command channel received last. */
  code(): Promise<string>;
  confirm(confirmer: string, code: string, current?: string): ReturnType<typeof confirmCode>;
  /** The audit rows of the manifest: action and why. */
  trail(): Promise<string[]>;
}

async function fixture(backend: (typeof BACKENDS)[number]): Promise<Fixture> {
  const h = await backend.open(T0);
  const clock = new FakeClock(T0);
  const temp = await tempDir();
  const manifest = manifestOf("disputes/release", ITEMS);
  await people(h.store);
  const deps = { clock };
  const f: Fixture = {
    h,
    store: h.store,
    clock,
    dir: temp.path,
    manifest,
    ask: (fields = {}) =>
      requestCode(h.store, deps, {
        manifest,
        queue: "disputes",
        bulk: "release",
        requester: "ann",
        channel: commandChannel(temp.path),
        secondPerson: true,
        via: { door: "cli", osUser: "ann" },
        ...fields,
      }),
    code: () => Deno.readTextFile(`${temp.path}/code`),
    confirm: (confirmer, code, current = manifest.hash) =>
      confirmCode(h.store, deps, { manifest: manifest.hash, current, code, confirmer }),
    trail: async () =>
      (await h.store.auditList({ target: `manifest:${manifest.hash}` })).map((r) => {
        const why = (r.details as Record<string, unknown> | null)?.why;
        return why === undefined ? r.action : `${r.action} ${why}`;
      }),
  };
  const close = h.close.bind(h);
  h.close = async () => {
    await close();
    await temp.cleanup();
  };
  return f;
}

/** A code that is not `code`: the next one round the dial. */
function wrong(code: string): string {
  return String((Number(code) + 1) % 1_000_000).padStart(6, "0");
}

/** `fn` rejects with a BulkRefused of `why`; that refusal. */
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

for (const backend of BACKENDS) {
  const test = (name: string, fn: (f: Fixture) => Promise<void>) =>
    Deno.test(`${backend.name}: ${name}`, async () => {
      const f = await fixture(backend);
      try {
        await fn(f);
      } finally {
        await f.h.close();
      }
    });

  test("the command channel gets the code in JOBS_CONFIRM_CODE and the summary on stdin; the code confirms once, and is in no row", async (f) => {
    const request = await f.ask();
    const code = await f.code();
    assert.match(code, /^\d{6}$/);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${f.dir}/stdin`)), {
      request: request.id,
      manifest: f.manifest.hash,
      queue: "disputes",
      bulk: "release",
      count: 3,
      totals: { EUR: "2400", USD: "42.5" },
      requester: "ann",
      expiresAt: new Date(T0 + 10 * MINUTE).toISOString(),
    });
    assert.equal(request.state, "pending");
    assert.equal(request.expiresAt, T0 + 10 * MINUTE);
    f.clock.advance(MINUTE);
    const confirmed = await f.confirm("bob", code);
    assert.equal(confirmed.state, "confirmed");
    assert.equal(confirmed.confirmer, "bob");
    assert.equal(confirmed.confirmedAt, T0 + MINUTE);
    assert.deepEqual(confirmed.items.map((i) => i.id), ["d-1", "d-2", "d-3"]);
    assert.deepEqual(bulkRequestJson(confirmed), {
      id: request.id,
      manifest: f.manifest.hash,
      queue: "disputes",
      bulk: "release",
      tenant: null,
      count: 3,
      items: [
        { id: "d-1", amount: "1900", currency: "EUR" },
        { id: "d-2", amount: "500", currency: "EUR" },
        { id: "d-3", amount: "42.5", currency: "USD" },
      ],
      totals: { EUR: "2400", USD: "42.5" },
      requester: "ann",
      channel: "command",
      secondPerson: true,
      state: "confirmed",
      triesLeft: CODE_TRIES,
      createdAt: new Date(T0).toISOString(),
      expiresAt: new Date(T0 + 10 * MINUTE).toISOString(),
      endedReason: null,
      confirmer: "bob",
      confirmedAt: new Date(T0 + MINUTE).toISOString(),
    });
    await refused(f.confirm("bob", code), "used");
    await refused(f.confirm("dora", code), "used");
    assert.deepEqual(await f.trail(), [
      "bulk.request",
      "bulk.confirm",
      "bulk.refused used",
      "bulk.refused used",
    ]);
    const rows = await f.store.auditList({ target: `manifest:${f.manifest.hash}` });
    assert.deepEqual(rows[0]!.details?.via, { door: "cli", osUser: "ann" });
    const stored = JSON.stringify([
      rows,
      await f.store.bulkRequestsList({}),
      await f.store.bulkRequestCodeHash({ id: request.id }),
    ]);
    assert.equal(stored.includes(code), false, "the code is stored nowhere");
  });

  test("a code expires: confirming at its expiry is refused and the request is expired", async (f) => {
    await f.ask({ ttlMs: 5 * MINUTE });
    const code = await f.code();
    f.clock.advance(5 * MINUTE);
    const error = await refused(f.confirm("bob", code), "expired");
    assert.equal(error.request?.state, "expired");
    await refused(f.confirm("bob", code), "expired");
    assert.deepEqual(await f.trail(), [
      "bulk.request",
      "bulk.refused expired",
      "bulk.refused expired",
    ]);
  });

  test("the fifth wrong code locks the request: the right one is refused after, and a new code waits for the expiry", async (f) => {
    await f.ask();
    const code = await f.code();
    for (let i = 1; i < CODE_TRIES; i++) {
      const error = await refused(f.confirm("bob", wrong(code)), "wrong-code");
      assert.equal(error.request?.tries, i);
      assert.match(error.message, new RegExp(`${CODE_TRIES - i} tr(y|ies) left`));
    }
    const locked = await refused(f.confirm("bob", "abc"), "locked");
    assert.equal(locked.request?.state, "locked");
    await refused(f.confirm("bob", code), "locked");
    await refused(f.ask(), "locked");
    f.clock.advance(10 * MINUTE);
    const again = await f.ask();
    assert.equal(again.tries, 0);
    assert.equal(await f.confirm("bob", await f.code()).then((r) => r.state), "confirmed");
    assert.deepEqual(await f.trail(), [
      "bulk.request",
      ...Array(CODE_TRIES - 1).fill("bulk.refused wrong-code"),
      "bulk.refused locked",
      "bulk.refused locked",
      "bulk.refused locked",
      "bulk.request",
      "bulk.confirm",
    ]);
  });

  test("asking again supersedes the pending code and carries its wrong tries", async (f) => {
    const first = await f.ask();
    const old = await f.code();
    for (let i = 0; i < 3; i++) await refused(f.confirm("bob", wrong(old)), "wrong-code");
    const second = await f.ask();
    assert.equal(second.tries, 3);
    assert.equal((await f.store.bulkRequestGet({ id: first.id }))?.endedReason, "superseded");
    const asked = (await f.store.auditList({ target: `manifest:${f.manifest.hash}` }))
      .filter((r) => r.action === "bulk.request");
    assert.equal(asked[1]?.details?.supersedes, first.id);
    assert.equal(asked[1]?.details?.tries, 3);
    const code = await f.code();
    if (code !== old) await refused(f.confirm("bob", old), "wrong-code");
    else await refused(f.confirm("bob", wrong(old)), "wrong-code");
    await refused(f.confirm("bob", wrong(code)), "locked");
  });

  test("two approvers racing with the right code: one confirms, the other is refused as used", async (f) => {
    await f.ask();
    const code = await f.code();
    const results = await Promise.allSettled([f.confirm("bob", code), f.confirm("dora", code)]);
    const confirmed = results.filter((r) => r.status === "fulfilled");
    assert.equal(confirmed.length, 1);
    const [lost] = results.filter((r) => r.status === "rejected");
    assert.ok((lost as PromiseRejectedResult).reason instanceof BulkRefused);
    assert.equal((lost as PromiseRejectedResult).reason.why, "used");
    assert.deepEqual((await f.trail()).sort(), [
      "bulk.confirm",
      "bulk.refused used",
      "bulk.request",
    ]);
  });

  test("a code expired unused gives way to a new one with tries of its own", async (f) => {
    const first = await f.ask();
    for (let i = 0; i < 4; i++) {
      await refused(f.confirm("bob", wrong(await f.code())), "wrong-code");
    }
    f.clock.advance(10 * MINUTE);
    const second = await f.ask();
    assert.equal(second.tries, 0);
    assert.equal((await f.store.bulkRequestGet({ id: first.id }))?.state, "expired");
    await refused(f.confirm("bob", wrong(await f.code())), "wrong-code");
    assert.equal((await f.confirm("bob", await f.code())).id, second.id);
  });

  test("tenants: a person of one tenant neither asks for another's items nor confirms another's code", async (f) => {
    await f.store.principalInsert({
      principal: {
        kind: "person",
        name: "tina",
        roles: ["approver", "operator"],
        tenant: "beta",
        secretHash: "none",
        createdBy: "t",
      },
      now: T0,
    });
    await refused(f.ask({ requester: "tina", tenant: "acme" }), "out-of-scope");
    await refused(f.ask({ requester: "tina" }), "out-of-scope");
    await f.ask({ tenant: "acme" });
    const code = await f.code();
    const hidden = await refused(f.confirm("tina", code), "no-request");
    assert.equal(hidden.request, null);
    assert.equal((await f.confirm("bob", code)).tenant, "acme");
  });

  test("second_person: the requester cannot confirm, nor a person without the approver role", async (f) => {
    await f.ask();
    const code = await f.code();
    const self = await refused(f.confirm("ann", code), "self-approval");
    assert.match(self.message, /another person with the approver role/);
    await refused(f.confirm("carl", code), "not-approver");
    await refused(f.confirm("nobody", code), "unknown-person");
    assert.equal((await f.store.bulkRequestLatest({ manifest: f.manifest.hash }))?.tries, 0);
    assert.equal((await f.confirm("dora", code)).confirmer, "dora");

    // Without second_person, the requester confirms with the code from outside the session.
    const other = manifestOf("disputes/release", ITEMS.slice(0, 1));
    const alone = await requestCode(f.store, { clock: f.clock }, {
      manifest: other,
      queue: "disputes",
      bulk: "release",
      requester: "ann",
      channel: commandChannel(f.dir),
      secondPerson: false,
    });
    const confirmed = await confirmCode(f.store, { clock: f.clock }, {
      manifest: other.hash,
      current: other.hash,
      code: await f.code(),
      confirmer: "ann",
    });
    assert.equal(confirmed.id, alone.id);
    assert.equal(confirmed.confirmer, "ann");
  });

  test("a changed manifest voids the code: the right code is refused then and after", async (f) => {
    await f.ask();
    const code = await f.code();
    const changed = manifestOf("disputes/release", [
      { ...ITEMS[0]!, amount: "1901" },
      ...ITEMS.slice(1),
    ]);
    const error = await refused(f.confirm("bob", code, changed.hash), "manifest-changed");
    assert.equal(error.request?.state, "void");
    assert.equal(error.request?.endedReason, "manifest-changed");
    await refused(f.confirm("bob", code), "void");
    assert.deepEqual(await f.trail(), [
      "bulk.request",
      "bulk.refused manifest-changed",
      "bulk.refused void",
    ]);
  });

  test("a failed delivery voids the request; the error names the command, the code masked", async (f) => {
    const error = await refused(
      f.ask({
        channel: {
          kind: "command",
          argv: ["/bin/sh", "-c", `echo "could not text $JOBS_CONFIRM_CODE" >&2; exit 3`],
        },
      }),
      "delivery-failed",
    );
    assert.match(error.message, /"\/bin\/sh" exited with status 3: could not text \[REDACTED\]/);
    assert.equal(error.request?.state, "void");
    assert.equal(error.request?.endedReason, "delivery-failed");
    assert.deepEqual(await f.trail(), ["bulk.request", "bulk.refused delivery-failed"]);
    await refused(f.confirm("bob", "123456"), "void");
  });

  test("the webhook channel POSTs the code and the summary as JSON", async (f) => {
    const got: Record<string, unknown>[] = [];
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      got.push({ ...await req.json(), type: req.headers.get("content-type") });
      return new Response(null, { status: 204 });
    });
    try {
      const request = await f.ask({
        channel: { kind: "webhook", url: `http://127.0.0.1:${server.addr.port}/codes` },
      });
      assert.equal(got.length, 1);
      const code = String(got[0]!.code);
      assert.match(code, /^\d{6}$/);
      assert.equal(got[0]!.type, "application/json");
      assert.equal(got[0]!.request, request.id);
      assert.equal(got[0]!.count, 3);
      assert.equal((await f.confirm("bob", code)).state, "confirmed");
    } finally {
      await server.shutdown();
    }
  });

  test("TOTP: an enrolled approver confirms with the code of their authenticator, once, one step either side", async (f) => {
    const enrolled = await enrolTotp(f.store, "bob", { actor: "root", reason: null, now: T0 });
    assert.equal(enrolled.replaced, false);
    assert.match(enrolled.uri, /^otpauth:\/\/totp\/jobs:bob\?/);
    await enrolTotp(f.store, "dora", { actor: "root", reason: null, now: T0 });
    const seed = async (who: string) => (await f.store.totpSecret({ person: who }))!.secret;
    const totp = { kind: "totp", role: "approver" } as const;
    const request = await f.ask({ channel: totp });
    assert.equal(request.channel, "totp");
    assert.equal((await f.store.bulkRequestCodeHash({ id: request.id }))?.codeHash, null);

    await refused(f.confirm("carl", totpCode("carl", await seed("bob"), T0)), "not-approver");
    await f.store.principalInsert({
      principal: {
        kind: "person",
        name: "eve",
        roles: ["approver"],
        secretHash: "none",
        createdBy: "t",
      },
      now: T0,
    });
    await refused(f.confirm("eve", "123456"), "not-enrolled");
    await refused(
      f.confirm("bob", totpCode("bob", await seed("bob"), T0 - 2 * 30_000)),
      "wrong-code",
    );
    await refused(f.confirm("bob", totpCode("bob", await seed("dora"), T0)), "wrong-code");
    // The code of the step before still works (a code typed as it turned).
    const previous = totpCode("bob", await seed("bob"), T0 - 30_000);
    const confirmed = await f.confirm("bob", previous);
    assert.equal(confirmed.state, "confirmed");
    assert.equal(confirmed.totpStep, Math.floor(T0 / 30_000) - 1);
    assert.equal(confirmed.tries, 2);

    // That code of bob's is spent: it confirms no other request.
    const other = manifestOf("disputes/release", ITEMS.slice(1));
    await requestCode(f.store, { clock: f.clock }, {
      manifest: other,
      queue: "disputes",
      bulk: "release",
      requester: "ann",
      channel: totp,
      secondPerson: true,
    });
    const again = (code: string, who = "bob") =>
      confirmCode(f.store, { clock: f.clock }, {
        manifest: other.hash,
        current: other.hash,
        code,
        confirmer: who,
      });
    const spent = await refused(again(previous), "wrong-code");
    assert.match(spent.message, /used already/);
    f.clock.advance(30_000);
    const fresh = await again(totpCode("bob", await seed("bob"), f.clock.now()));
    assert.equal(fresh.confirmer, "bob");
    assert.equal(fresh.totpStep, Math.floor(f.clock.now() / 30_000));

    // Enrolling again replaces the seed: the old authenticator's codes stop working.
    const old = await seed("bob");
    const replaced = await enrolTotp(f.store, "bob", { actor: "root", reason: null, now: T0 });
    assert.equal(replaced.replaced, true);
    assert.notEqual(await seed("bob"), old);
    const user = await f.store.auditList({ target: "user:bob" });
    assert.deepEqual(user.map((r) => [r.action, r.details]), [
      ["user.totp", { replaced: false }],
      ["user.totp", { replaced: true }],
    ]);
    assert.equal(JSON.stringify(user).includes(old), false, "the seed is not audited");
  });

  Deno.test({
    name: `${backend.name}: e-mail: the code arrives through a real local SMTP server and confirms`,
    async fn() {
      const f = await fixture(backend);
      const messages: string[] = [];
      const server = new SMTPServer({
        authOptional: true,
        disabledCommands: ["STARTTLS"],
        logger: false,
        onData(stream, _session, callback) {
          let text = "";
          stream.on("data", (chunk: Uint8Array) => text += new TextDecoder().decode(chunk));
          stream.on("end", () => {
            messages.push(text);
            callback();
          });
        },
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
      try {
        const port = (server.server.address() as { port: number }).port;
        const smtp = { url: `smtp://127.0.0.1:${port}`, from: "jobs@example.com" };
        const request = await requestCode(f.store, { clock: f.clock, smtp }, {
          manifest: f.manifest,
          queue: "disputes",
          bulk: "release",
          requester: "ann",
          channel: { kind: "email", to: ["finance@example.com"] },
          secondPerson: true,
        });
        assert.equal(messages.length, 1);
        // Quoted-printable: a soft line break is "=" at the end of a line.
        const message = messages[0]!.replace(/=\r?\n/g, "");
        assert.match(message, /^To: finance@example\.com\r?$/m);
        assert.match(message, /^From: jobs@example\.com\r?$/m);
        assert.match(message, /3 items totalling EUR 2400, USD 42\.5/);
        assert.match(message, new RegExp(`Manifest: ${f.manifest.hash}`));
        const code = /Confirmation code: (\d{6})/.exec(message)?.[1];
        assert.ok(code, "the message holds the code");
        assert.equal((await f.confirm("bob", code)).id, request.id);

        const unset = await refused(
          requestCode(f.store, { clock: f.clock, smtp: null }, {
            manifest: manifestOf("disputes/release", ITEMS.slice(2)),
            queue: "disputes",
            bulk: "release",
            requester: "ann",
            channel: { kind: "email", to: ["finance@example.com"] },
            secondPerson: true,
          }),
          "delivery-failed",
        );
        assert.match(unset.message, /JOBS_SMTP_URL is not set/);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await f.h.close();
      }
    },
  });
}

Deno.test("every action the confirmation codes audit is in the action table", () => {
  for (const action of CONFIRM_ACTIONS) {
    assert.deepEqual(ACTIONS[action], ["operator", "approver", "admin"], action);
  }
  assert.deepEqual(ACTIONS["user.totp"], ["admin"]);
});
