/**
 * The console's Work pages in process, on every backend (the browser test
 * is `test/e2e/console_work_test.ts`): the listing shows each score with
 * the inputs that set it, in the store's order; "Next" claims a different
 * item for each of two people; a viewer sees no button and a hand-made
 * POST is 403; a `required` queue refuses an unclaimed action (no button,
 * and 409 when posted anyway); an action with a reason lands as the
 * person through the console's door, its job linked on the item with its
 * history; a tenant's person sees and claims no other tenant's item; a
 * cross-site POST is refused. An admin enrols a person's TOTP
 * authenticator: the QR code of the stored seed is drawn once, as the
 * page's own SVG, audited `user.totp`.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { addWorkItem, type WorkActor } from "../../src/admin/work.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { totpQrSvg, totpUri } from "../../src/workqueue/totp.ts";
import { qrDrawing } from "../../src/console/people.tsx";
import { type Backend, BACKENDS } from "../support/backends.ts";

const ORIGIN = "http://127.0.0.1:9464";
const DAY = 86_400_000;
const HOSTILE = `<img src=x onerror=alert(1)>`;

const DISPUTES = compileWorkQueue({
  id: "disputes",
  claim: "required",
  leaseMs: 3_600_000,
  score: {
    rule: "rule/dispute.urgency-score",
    inputs: ["amount", "age", "evidence_missing"],
    weights: { amount: 0.01, age: "2/day", evidence_missing: 30 },
  },
  show: ["amount", "currency", "age", "evidence_missing"],
  actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
  roles: ["support"],
});

/** A queue no queue role works: admins only. */
const PAYOUTS = compileWorkQueue({
  id: "payouts",
  claim: "required",
  leaseMs: 3_600_000,
  actions: [{ id: "pay", run: { kind: "worker", worker: "pay_out" } }],
});

async function harness(backend: Backend) {
  const clock = new FakeClock();
  const h = await backend.open(clock.now());
  const app = consoleApp({
    store: h.store,
    clock,
    logger: () => {},
    workQueues: () => [DISPUTES, PAYOUTS],
    // Sessions outlive the days the tests move the clock by.
    timeouts: { idleMs: 30 * DAY, absoluteMs: 30 * DAY },
  });
  const root = { actor: "root", reason: null, now: clock.now() };
  for (
    const [name, roles, tenant] of [
      ["ada", ["admin"], null],
      ["bob", ["admin"], null],
      ["vera", ["viewer"], null],
      ["sam", ["support"], null],
      ["acme-ann", ["admin"], "acme"],
    ] as const
  ) {
    await addPerson(h.store, { name, roles: [...roles], tenant, password: "pw" }, root, "host");
  }
  const cookies = new Map<string, string>();
  const call = async (
    who: string,
    method: string,
    path: string,
    body?: Record<string, string>,
    site = "same-origin",
  ) => {
    const headers: Record<string, string> = { "sec-fetch-site": site };
    const cookie = cookies.get(who);
    if (cookie) headers.cookie = `${SESSION_COOKIE}=${cookie}`;
    if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await app.fetch(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers,
        redirect: "manual",
        ...(body === undefined ? {} : { body: new URLSearchParams(body).toString() }),
      }),
      { remote: "127.0.0.1" },
    );
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  for (const name of ["ada", "bob", "vera", "sam", "acme-ann"]) {
    const answer = await call(name, "POST", "/login", { name, password: "pw" });
    cookies.set(
      name,
      /^__Host-jobs_session=([\w-]+);/.exec(answer.headers.get("set-cookie")!)![1]!,
    );
  }
  const host: WorkActor = {
    person: "root",
    roles: ["admin"],
    tenant: null,
    door: "library",
    reason: null,
    now: clock.now(),
  };
  /** Adds an item requested `daysAgo` days before now. */
  const add = async (
    key: string,
    data: Record<string, unknown>,
    daysAgo: number,
    tenant?: string,
    queue = DISPUTES,
  ) =>
    await addWorkItem(h.store, queue, { key, data, ...(tenant ? { tenant } : {}) }, {
      ...host,
      now: clock.now() - daysAgo * DAY,
    });
  return {
    ...h,
    clock,
    call,
    add,
    async [Symbol.asyncDispose]() {
      await h.close();
    },
  };
}

/** The item keys of a listing, in the order drawn. */
function rows(html: string): string[] {
  return [...html.matchAll(/<tr data-item="([^"]*)"/g)].map((m) => m[1]!);
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the work listing shows each score with its inputs, in the store's order`, async () => {
    await using c = await harness(backend);
    await c.add("d-big", { amount: 1900, currency: "EUR", evidence_missing: true }, 6);
    await c.add("d-small", { amount: 120, currency: "USD", evidence_missing: false }, 1);
    await c.add(HOSTILE, { amount: 500, currency: "EUR", evidence_missing: false }, 0);

    const index = await c.call("ada", "GET", "/work");
    assert.equal(index.status, 200);
    assert.match(index.text, /<tr data-work-queue="disputes">/);
    assert.match(
      index.text,
      /data-live="\[&quot;work&quot;,&quot;disputes&quot;,&quot;open&quot;\]">3</,
    );
    assert.match(index.text, /6 days old/);

    const listing = await c.call("ada", "GET", "/work/disputes");
    assert.equal(listing.status, 200);
    assert.deepEqual(rows(listing.text), [
      "d-big",
      "&lt;img src=x onerror=alert(1)&gt;",
      "d-small",
    ]);
    // 1900 × 0.01 + 6 days × 2 + 30 = 61
    assert.match(listing.text, /urgency 61: EUR 1,900, 6 days old, evidence missing/);
    assert.match(listing.text, /urgency 3: USD 120, 1 day old, no evidence missing/);
    assert.ok(!listing.text.includes(HOSTILE), "a hostile key is escaped");
    assert.ok(!/ style=/.test(listing.text), "no inline style");
    assert.match(listing.text, /data-action="next"/);
    assert.match(listing.text, /data-live-changed=/);

    // The age moves the score as time passes.
    c.clock.advance(2 * DAY);
    const later = await c.call("ada", "GET", "/work/disputes");
    assert.match(later.text, /urgency 65: EUR 1,900, 8 days old, evidence missing/);
  });

  Deno.test(`${backend.name}: Next claims a different item for each of two people; the listing shows the claims`, async () => {
    await using c = await harness(backend);
    await c.add("d1", { amount: 1000, currency: "EUR", evidence_missing: true }, 2);
    await c.add("d2", { amount: 500, currency: "EUR", evidence_missing: false }, 1);

    const first = await c.call("ada", "POST", "/work/disputes/next", {});
    const second = await c.call("bob", "POST", "/work/disputes/next", {});
    assert.equal(first.status, 303);
    assert.equal(second.status, 303);
    assert.equal(first.headers.get("location"), "/work/disputes/d1");
    assert.equal(second.headers.get("location"), "/work/disputes/d2");
    const none = await c.call("ada", "POST", "/work/disputes/next", {});
    assert.equal(none.status, 409);
    assert.match(none.text, /No free item is left/);

    const listing = await c.call("vera", "GET", "/work/disputes");
    assert.match(listing.text, /data-claim-owner="ada"/);
    assert.match(listing.text, /data-claim-owner="bob"/);

    // A claim whose lease ran out shows as expired, not as held.
    c.clock.advance(DISPUTES.leaseMs + 1);
    const lapsed = await c.call("vera", "GET", "/work/disputes");
    assert.match(lapsed.text, /data-claim-expired="ada"/);
    assert.ok(!lapsed.text.includes(`data-claim-owner="ada"`));
  });

  Deno.test(`${backend.name}: a viewer sees no button and a hand-made POST is 403; a cross-site POST is refused`, async () => {
    await using c = await harness(backend);
    await c.add("d1", { amount: 1000, currency: "EUR", evidence_missing: true }, 2);
    const listing = await c.call("vera", "GET", "/work/disputes");
    assert.equal(listing.status, 200);
    assert.ok(!listing.text.includes("data-action="), "no button for a viewer");
    const item = await c.call("vera", "GET", "/work/disputes/d1");
    assert.equal(item.status, 200);
    assert.ok(!item.text.includes("data-action="), "no button on the item for a viewer");
    for (
      const path of [
        "/work/disputes/next",
        "/work/disputes/d1/claim",
        "/work/disputes/d1/release",
        "/work/disputes/d1/skip",
        "/work/disputes/d1/reassign",
        "/work/disputes/d1/do/refund",
      ]
    ) {
      const posted = await c.call("vera", "POST", path, { reason: "hand-made", to: "vera" });
      assert.equal(posted.status, 403, path);
    }
    const crossSite = await c.call("ada", "POST", "/work/disputes/next", {}, "cross-site");
    assert.equal(crossSite.status, 403);
    const row = await c.store.workItemGet({ queue: "disputes", key: "d1" });
    assert.equal(row?.claimOwner, null, "nothing claimed");
  });

  Deno.test(`${backend.name}: required refuses an unclaimed action; with the claim it runs, audited through the console`, async () => {
    await using c = await harness(backend);
    await c.add("d1", { amount: 1000, currency: "EUR", evidence_missing: true }, 2);

    const unclaimed = await c.call("ada", "GET", "/work/disputes/d1");
    assert.ok(!unclaimed.text.includes(`data-action="do-refund"`), "no action button unclaimed");
    assert.match(unclaimed.text, /data-action="claim"/);
    const refused = await c.call("ada", "POST", "/work/disputes/d1/do/refund", {
      reason: "customer proved the charge",
    });
    assert.equal(refused.status, 409);
    assert.match(refused.text, /needs your claim first/);

    assert.equal((await c.call("bob", "POST", "/work/disputes/d1/claim", {})).status, 303);
    const notMine = await c.call("ada", "GET", "/work/disputes/d1");
    assert.ok(!notMine.text.includes(`data-action="do-refund"`), "no action on bob's claim");
    const stolen = await c.call("ada", "POST", "/work/disputes/d1/do/refund", {
      reason: "customer proved the charge",
    });
    assert.equal(stolen.status, 409);

    const mine = await c.call("bob", "GET", "/work/disputes/d1");
    assert.match(mine.text, /data-action="do-refund"/);
    assert.match(mine.text, /data-action="release"/);
    const placeholder = await c.call("bob", "POST", "/work/disputes/d1/do/refund", {
      reason: "TODO",
    });
    assert.equal(placeholder.status, 400);
    const done = await c.call("bob", "POST", "/work/disputes/d1/do/refund", {
      reason: "customer proved the charge",
    });
    assert.equal(done.status, 303);
    const row = await c.store.workItemGet({ queue: "disputes", key: "d1" });
    assert.equal(row?.state, "done");
    assert.equal(done.headers.get("location"), `/work/disputes/d1?done=${row!.actionJobId}`);
    const outcome = await c.call("bob", "GET", done.headers.get("location")!);
    assert.match(outcome.text, /data-outcome/);
    assert.ok(outcome.text.includes(`href="/jobs/${row!.actionJobId}"`), "the job is linked");
    assert.match(outcome.text, /customer proved the charge/);
    assert.deepEqual(
      [...outcome.text.matchAll(/<tr data-event="(\w+)"/g)].map((m) => m[1]),
      ["added", "claimed", "done"],
    );
    const audit = await c.store.auditList({ target: "work:disputes/d1" });
    const did = audit.find((r) => r.action === "work.do");
    assert.equal(did?.actor, "bob");
    assert.equal(did?.reason, "customer proved the charge");
    assert.equal((did?.details as Record<string, unknown>).door, "console");
  });

  Deno.test(`${backend.name}: a tenant's person sees and claims no other tenant's item`, async () => {
    await using c = await harness(backend);
    await c.add("globex-d", { amount: 9000, currency: "EUR", evidence_missing: true }, 9, "globex");
    await c.add("acme-d", { amount: 10, currency: "EUR", evidence_missing: false }, 0, "acme");

    const listing = await c.call("acme-ann", "GET", "/work/disputes");
    assert.deepEqual(rows(listing.text), ["acme-d"]);
    assert.ok(!listing.text.includes("globex"));
    const index = await c.call("acme-ann", "GET", "/work");
    assert.match(
      index.text,
      /data-live="\[&quot;work&quot;,&quot;disputes&quot;,&quot;open&quot;\]">1</,
    );
    assert.equal((await c.call("acme-ann", "GET", "/work/disputes/globex-d")).status, 404);
    assert.equal(
      (await c.call("acme-ann", "POST", "/work/disputes/globex-d/claim", {})).status,
      404,
    );
    const next = await c.call("acme-ann", "POST", "/work/disputes/next", {});
    assert.equal(next.headers.get("location"), "/work/disputes/acme-d", "the best of acme's");
    assert.equal((await c.call("acme-ann", "POST", "/work/disputes/next", {})).status, 409);
    const globex = await c.store.workItemGet({ queue: "disputes", key: "globex-d" });
    assert.equal(globex?.claimOwner, null);
  });

  Deno.test(`${backend.name}: an admin enrols a person's authenticator: its QR code drawn once, audited`, async () => {
    await using c = await harness(backend);
    const refused = await c.call("vera", "POST", "/people/bob/totp", { reason: "new phone" });
    assert.equal(refused.status, 403);
    const noReason = await c.call("ada", "POST", "/people/bob/totp", {});
    assert.equal(noReason.status, 400);
    assert.equal(await c.store.totpEnrolment({ person: "bob" }), null, "nothing enrolled");
    assert.equal(
      (await c.call("ada", "POST", "/people/nobody/totp", { reason: "new phone" })).status,
      404,
    );

    const people = await c.call("ada", "GET", "/people");
    assert.match(people.text, /action="\/people\/bob\/totp"/);
    const enrolled = await c.call("ada", "POST", "/people/bob/totp", { reason: "new phone" });
    assert.equal(enrolled.status, 200);
    assert.match(enrolled.text, /data-totp-enrolled="bob"/);
    assert.match(enrolled.text, /<svg class="totp-qr"/);
    assert.ok(!/ style=/.test(enrolled.text), "no inline style");
    assert.ok(!enrolled.text.includes("data:"), "no data: URL (the CSP refuses them)");
    const stored = await c.store.totpSecret({ person: "bob" });
    assert.ok(stored);
    assert.ok(!enrolled.text.includes(stored.secret), "the seed is not shown as text");
    assert.ok(!enrolled.text.includes("otpauth"), "nor the URI");
    const qr = qrDrawing(await totpQrSvg(totpUri("bob", stored.secret)));
    assert.ok(enrolled.text.includes(`d="${qr.dark}"`), "the QR code is the stored seed's");
    const again = await c.call("ada", "GET", "/people");
    assert.ok(!again.text.includes("totp-qr"), "shown once");
    const [row] = await c.store.auditList({ target: "user:bob" }).then((rows) =>
      rows.filter((r) => r.action === "user.totp")
    );
    assert.equal(row?.actor, "ada");
    assert.equal(row?.reason, "new phone");
    assert.equal(row?.details.replaced, false);
  });

  Deno.test(`${backend.name}: release, expiry, reassign and skip each show in the history as what they were`, async () => {
    await using c = await harness(backend);
    await c.add("d1", { amount: 1000, currency: "EUR", evidence_missing: true }, 2);
    await c.add("d2", { amount: 10, currency: "EUR", evidence_missing: false }, 1);

    assert.equal((await c.call("ada", "POST", "/work/disputes/d1/claim", {})).status, 303);
    assert.equal(
      (await c.call("ada", "POST", "/work/disputes/d1/release", { reason: "lunch" })).status,
      303,
    );
    assert.equal((await c.call("ada", "POST", "/work/disputes/next", {})).status, 303);
    c.clock.advance(DISPUTES.leaseMs + 1);
    // Bob's Next clears ada's lapsed claim: the history says expired, not released by ada.
    const bobs = await c.call("bob", "POST", "/work/disputes/next", {});
    assert.equal(bobs.headers.get("location"), "/work/disputes/d1");
    const reassign = await c.call("ada", "POST", "/work/disputes/d1/reassign", {
      to: "ada",
      reason: "bob is off today",
    });
    assert.equal(reassign.status, 303);
    const page = await c.call("ada", "GET", "/work/disputes/d1");
    const events = [...page.text.matchAll(/<tr data-event="(\w+)"><td>.*?<\/td><td>([^<]*)<\/td>/g)]
      .map((m) => [m[1], m[2]]);
    assert.deepEqual(events, [
      ["added", "root"],
      ["claimed", "ada"],
      ["released", "ada"],
      ["claimed", "ada"],
      ["expired", "jobs"],
      ["claimed", "bob"],
      ["reassigned", "ada"],
    ]);
    assert.match(page.text, /claim expired \(returned to the queue\)/);
    assert.match(page.text, /bob is off today/);
    assert.match(page.text, /data-claim-owner="ada"/);

    const skipped = await c.call("ada", "POST", "/work/disputes/d1/skip", {});
    assert.equal(skipped.status, 303);
    const next = await c.call("ada", "POST", "/work/disputes/next", {});
    assert.equal(next.headers.get("location"), "/work/disputes/d2", "the skipped item is not next");
    const empty = await c.call("ada", "POST", "/work/disputes/d1/reassign", { reason: "x y z" });
    assert.equal(empty.status, 400, "reassign names someone");
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a support person works the queue whose roles name it, and no other`, async () => {
    await using c = await harness(backend);
    await c.add("d1", { amount: 1000, currency: "EUR", evidence_missing: true }, 2);
    await c.add("p1", {}, 1, undefined, PAYOUTS);

    const index = await c.call("sam", "GET", "/work");
    assert.equal(index.status, 200, index.text);
    assert.match(index.text, /<tr data-work-queue="disputes">/);
    const listing = await c.call("sam", "GET", "/work/disputes");
    assert.equal(listing.status, 200);
    assert.match(listing.text, /data-action="next"/);
    const next = await c.call("sam", "POST", "/work/disputes/next", {});
    assert.equal(next.status, 303, next.text);
    assert.equal(next.headers.get("location"), "/work/disputes/d1");
    const item = await c.call("sam", "GET", "/work/disputes/d1");
    assert.match(item.text, /data-action="do-refund"/);
    const done = await c.call("sam", "POST", "/work/disputes/d1/do/refund", {
      reason: "charged twice",
    });
    assert.equal(done.status, 303, done.text);
    assert.equal((await c.store.workItemGet({ queue: "disputes", key: "d1" }))?.state, "done");

    for (
      const [method, path] of [
        ["GET", "/work/payouts"],
        ["GET", "/work/payouts/p1"],
        ["POST", "/work/payouts/next"],
        ["POST", "/work/payouts/p1/claim"],
      ] as const
    ) {
      const refused = await c.call("sam", method, path, method === "GET" ? undefined : {});
      assert.equal(refused.status, 403, `${method} ${path}: ${refused.text}`);
    }
    // Nothing outside the work queues opens to the role.
    assert.equal((await c.call("sam", "GET", "/jobs")).status, 403);
  });
}
