/**
 * The console's bulk money pages in process, on every backend, with the
 * injected clock (the browser test is `test/e2e/console_work_bulk_test.ts`):
 * the preview lists every item with its amount and the totals per
 * currency; "Send the code" sends it through a `confirm_by: { command }`
 * channel (the command writes JOBS_CONFIRM_CODE to a file) and the page
 * says where it went, never the code; with `second_person` the requester
 * sees no confirmation form and a hand-made confirmation is refused; an
 * approver confirms with the code and each item runs as one job; a wrong
 * code says the tries left; an amount changed between the preview and the
 * confirmation voids the code (the page says preview again); a viewer sees
 * no bulk button and a hand-made POST is 403.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { addWorkItem, type WorkActor } from "../../src/admin/work.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { money, summary } from "../../src/console/work_bulk.tsx";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import type { WorkQueueDefinition } from "../../src/workqueue/types.ts";
import { type Backend, BACKENDS } from "../support/backends.ts";

const ORIGIN = "http://127.0.0.1:9464";
const DAY = 86_400_000;

function payouts(dir: string): WorkQueueDefinition {
  return compileWorkQueue({
    id: "payouts",
    claim: "required",
    leaseMs: 3_600_000,
    show: ["amount", "currency"],
    actions: [{ id: "release", run: { kind: "worker", worker: "release_payout" } }],
    bulk: [{
      id: "release-all",
      action: "release",
      money: { amount: "amount", currency: "currency" },
      confirmBy: {
        command: [
          "/bin/sh",
          "-c",
          `printf '%s' "$JOBS_CONFIRM_CODE" > ${dir}/code; cat >/dev/null`,
        ],
      },
      secondPerson: true,
    }],
    roles: ["operator", "support"],
  });
}

async function harness(backend: Backend) {
  const clock = new FakeClock();
  const h = await backend.open(clock.now());
  const dir = await Deno.makeTempDir({ prefix: "jobs-console-bulk-" });
  const queue = payouts(dir);
  const app = consoleApp({
    store: h.store,
    clock,
    logger: () => {},
    workQueues: () => [queue],
    timeouts: { idleMs: 30 * DAY, absoluteMs: 30 * DAY },
  });
  const root = { actor: "root", reason: null, now: clock.now() };
  const people = [
    ["ann", ["operator"]],
    ["bob", ["approver"]],
    ["dora", ["approver", "operator"]],
    ["vera", ["viewer"]],
    ["sam", ["support"]],
  ] as const;
  for (const [name, roles] of people) {
    await addPerson(
      h.store,
      { name, roles: [...roles], tenant: null, password: "pw" },
      root,
      "host",
    );
  }
  const cookies = new Map<string, string>();
  const call = async (who: string, method: string, path: string, body?: string[][]) => {
    const headers: Record<string, string> = { "sec-fetch-site": "same-origin" };
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
    return { status: response.status, text: await response.text() };
  };
  for (const [name] of people) {
    const response = await app.fetch(
      new Request(`${ORIGIN}/login`, {
        method: "POST",
        headers: {
          "sec-fetch-site": "same-origin",
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ name, password: "pw" }).toString(),
        redirect: "manual",
      }),
      { remote: "127.0.0.1" },
    );
    await response.text();
    cookies.set(
      name,
      /^__Host-jobs_session=([\w-]+);/.exec(response.headers.get("set-cookie")!)![1]!,
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
  const add = async (key: string, amount: string | number, currency: string) =>
    await addWorkItem(h.store, queue, { key, data: { amount, currency } }, {
      ...host,
      now: clock.now(),
    });
  for (
    const [key, amount, currency] of [
      ["p-1", "1900.00", "EUR"],
      ["p-2", 500, "EUR"],
      ["p-3", "42.5", "USD"],
    ] as const
  ) {
    await add(key, amount, currency);
  }
  /** The code the command channel wrote. */
  const code = async () => (await Deno.readTextFile(`${dir}/code`)).trim();
  return {
    ...h,
    clock,
    call,
    add,
    code,
    async [Symbol.asyncDispose]() {
      await h.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** The manifest hash a page carries. */
function manifestIn(html: string): string {
  const match = /data-manifest="([0-9a-f]{64})"/.exec(html);
  assert.ok(match, "the page names its manifest");
  return match[1]!;
}

/** The text of an HTML fragment, without its tags and with entities read. */
function textOf(html: string): string {
  return html.replace(/<[^>]*>/g, "").replace(/&amp;/g, "&").replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"').replace(/\s+/g, " ").trim();
}

const PREVIEW = "/work/payouts/bulk/release-all/preview";

Deno.test("a bulk's amounts and totals read as people write them", () => {
  assert.equal(money("18400"), "18,400");
  assert.equal(money("1900.00"), "1,900.00");
  assert.equal(money("-1234567.5"), "-1,234,567.5");
  assert.equal(summary(42, { EUR: "18400" }), "42 items totalling EUR 18,400");
  assert.equal(
    summary(3, { USD: "42.5", EUR: "2400.00" }),
    "3 items totalling EUR 2,400.00 and USD 42.5",
  );
  assert.equal(summary(1, { EUR: "5" }), "1 item totalling EUR 5");
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the preview lists every item with its amount and the totals; a second person confirms with the code sent by the command, one job per item`, async () => {
    await using h = await harness(backend);
    // The listing offers the bulk to ann, with a box per free item.
    const listing = await h.call("ann", "GET", "/work/payouts");
    assert.equal(listing.status, 200);
    assert.match(listing.text, /data-action="bulk-release-all"/);
    assert.match(listing.text, /formaction="\/work\/payouts\/bulk\/release-all"/);
    assert.equal([...listing.text.matchAll(/form="work-bulk-select"/g)].length, 3);

    // The bulk's page draws the selection; the preview is a POST (audited).
    const page = await h.call("ann", "GET", "/work/payouts/bulk/release-all?key=p-1&key=p-3");
    assert.equal(page.status, 200);
    assert.match(page.text, /Selected: 2 items: p-1, p-3\./);
    assert.match(page.text, /<input type="hidden" name="key" value="p-1"/);
    assert.equal(
      (await h.store.auditPage({ limit: 100 })).filter((r) => r.action === "bulk.preview").length,
      0,
    );

    const preview = await h.call("ann", "POST", PREVIEW, []);
    assert.equal(preview.status, 200, preview.text);
    const rows = [...preview.text.matchAll(
      /<tr data-bulk-item="([^"]+)">[\s\S]*?<td class="num" data-amount="true">([^<]*)<\/td><td data-currency="true">([^<]*)</g,
    )].map((m) => [m[1], m[2], m[3]]);
    assert.deepEqual(rows, [["p-1", "1,900", "EUR"], ["p-2", "500", "EUR"], [
      "p-3",
      "42.5",
      "USD",
    ]]);
    assert.match(
      textOf(/<p class="bulk-summary"[^>]*>([\s\S]*?)<\/p>/.exec(preview.text)![1]!),
      /^3 items totalling EUR 2,400 and USD 42\.5, each by release as one job/,
    );
    const totals = [...preview.text.matchAll(
      /<tr data-total="([A-Z]+)">[\s\S]*?<td class="num">(\d+)<\/td><td class="num" data-amount="true">([^<]*)</g,
    )].map((m) => [m[1], m[2], m[3]]);
    assert.deepEqual(totals, [["EUR", "2", "2,400"], ["USD", "1", "42.5"]]);
    const manifest = manifestIn(preview.text);
    assert.match(preview.text, new RegExp(`>${manifest.slice(0, 12)}</code>`));
    assert.match(preview.text, /data-action="bulk-request">Send the code</);
    const [audited] = await h.store.auditList({ target: `manifest:${manifest}` });
    assert.deepEqual([audited?.action, audited?.actor, audited?.details.door], [
      "bulk.preview",
      "ann",
      "console",
    ]);

    // Ann asks for the code: the page says where it went, never the code.
    const sent = await h.call("ann", "POST", `/bulk-money/${manifest}/request`, []);
    assert.equal(sent.status, 200, sent.text);
    assert.match(sent.text, /data-sent="command"/);
    assert.match(sent.text, /A code was sent by the configured command/);
    const code = await h.code();
    assert.match(code, /^\d{6,}$/);
    assert.ok(!sent.text.includes(code), "the page shows no code");
    // The requester draws no confirmation form: another approver confirms.
    assert.doesNotMatch(sent.text, /name="code"/);
    assert.match(sent.text, /another person with the approver role confirms it/);

    // Dora (approver and operator) asked nothing, but ann did: a hand-made
    // confirmation by ann (no approver role) is refused; dora's form shows.
    const byAnn = await h.call("ann", "POST", `/bulk-money/${manifest}/confirm`, [["code", code]]);
    assert.equal(byAnn.status, 403);
    assert.match(byAnn.text, /data-refusal="bulk-not-approver"/);
    assert.ok(!byAnn.text.includes(code));

    const bobsPage = await h.call("bob", "GET", `/bulk-money/${manifest}`);
    assert.equal(bobsPage.status, 200);
    assert.match(bobsPage.text, /autocomplete="one-time-code"/);
    assert.match(bobsPage.text, /inputmode="numeric"/);
    assert.match(bobsPage.text, /<span data-tries-left="true">5<\/span>/);

    // A wrong code: refused with the tries left, never echoed.
    const wrong = code === "000000" ? "111111" : "000000";
    const missed = await h.call("bob", "POST", `/bulk-money/${manifest}/confirm`, [[
      "code",
      wrong,
    ]]);
    assert.equal(missed.status, 409);
    assert.match(missed.text, /data-refusal="bulk-wrong-code"/);
    assert.match(missed.text, /<span data-tries-left="true">4<\/span>/);
    assert.ok(!missed.text.includes(`value="${wrong}"`));

    // Bob confirms: one job per item, each item done.
    const done = await h.call("bob", "POST", `/bulk-money/${manifest}/confirm`, [["code", code]]);
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /Confirmed: 3 of 3 items run, one job each\./);
    assert.ok(!done.text.includes(code));
    const jobs = new Set<number>();
    for (const key of ["p-1", "p-2", "p-3"]) {
      const item = await h.store.workItemGet({ queue: "payouts", key });
      assert.equal(item?.state, "done", key);
      assert.equal(item?.doneBy, "bob");
      assert.match(done.text, new RegExp(`href="/jobs/${item!.actionJobId}"`));
      const job = await h.store.jobGet({ id: item!.actionJobId! });
      assert.equal(job?.uniqueKey, `payouts/${key}/release`);
      jobs.add(item!.actionJobId!);
    }
    assert.equal(jobs.size, 3);
    const confirmed = await h.store.auditList({ target: `manifest:${manifest}` })
      .then((rows) => rows.filter((r) => r.action === "bulk.confirm"));
    assert.deepEqual(
      confirmed.map((r) => [r.actor, (r.details.via as { door?: string } | undefined)?.door]),
      [["bob", "console"]],
    );
    // The code works once.
    const again = await h.call("dora", "POST", `/bulk-money/${manifest}/confirm`, [["code", code]]);
    assert.equal(again.status, 409);
    assert.match(again.text, /data-refusal="bulk-used"/);
  });

  Deno.test(`${backend.name}: the requester may not confirm their own request; a changed amount voids the code and the page says preview again`, async () => {
    await using h = await harness(backend);
    const preview = await h.call("dora", "POST", PREVIEW, [["key", "p-1"], ["key", "p-2"]]);
    assert.equal(preview.status, 200, preview.text);
    assert.match(preview.text, /2 items totalling EUR 2,400,/);
    const manifest = manifestIn(preview.text);
    const sent = await h.call("dora", "POST", `/bulk-money/${manifest}/request`, []);
    assert.equal(sent.status, 200, sent.text);
    const code = await h.code();
    // Dora holds the approver role, yet asked: no form, and a hand-made POST is refused.
    assert.doesNotMatch(sent.text, /name="code"/);
    const self = await h.call("dora", "POST", `/bulk-money/${manifest}/confirm`, [["code", code]]);
    assert.equal(self.status, 409);
    assert.match(self.text, /data-refusal="bulk-self-approval"/);
    assert.ok(!self.text.includes(code));

    // An amount changes after the preview: the code is void.
    await h.add("p-2", "5000", "EUR");
    const changed = await h.call("bob", "POST", `/bulk-money/${manifest}/confirm`, [[
      "code",
      code,
    ]]);
    assert.equal(changed.status, 409);
    assert.match(changed.text, /data-refusal="bulk-manifest-changed"/);
    assert.match(changed.text, /preview again/);
    assert.match(
      changed.text,
      /data-note="preview-again"[\s\S]*?href="\/work\/payouts\/bulk\/release-all"/,
    );
    assert.ok(!changed.text.includes(code));
    for (const key of ["p-1", "p-2"]) {
      assert.equal((await h.store.workItemGet({ queue: "payouts", key }))?.state, "open");
    }
    // The request is void: even the right code no longer works, nor is the form drawn.
    const page = await h.call("bob", "GET", `/bulk-money/${manifest}`);
    assert.match(page.text, /data-request-state="void"/);
    assert.doesNotMatch(page.text, /name="code"/);
  });

  Deno.test(`${backend.name}: a queue's own role previews and asks for the code, as at the command line; it never confirms`, async () => {
    await using h = await harness(backend);
    const listing = await h.call("sam", "GET", "/work/payouts");
    assert.equal(listing.status, 200);
    assert.match(listing.text, /bulk-release-all/);
    const page = await h.call("sam", "GET", "/work/payouts/bulk/release-all");
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /data-action="bulk-preview"/);
    const preview = await h.call("sam", "POST", PREVIEW, []);
    assert.equal(preview.status, 200, preview.text);
    const manifest = manifestIn(preview.text);
    const asked = await h.call("sam", "POST", `/bulk-money/${manifest}/request`, []);
    assert.equal(asked.status, 200, asked.text);
    assert.equal((await h.store.bulkRequestLatest({ manifest }))?.requester, "sam");
    assert.doesNotMatch(asked.text, /name="code"/, "no confirmation form for a non-approver");
    const refused = await h.call("sam", "POST", `/bulk-money/${manifest}/confirm`, [[
      "code",
      await h.code(),
    ]]);
    assert.equal(refused.status, 403);
  });

  Deno.test(`${backend.name}: a viewer sees no bulk button and a hand-made bulk POST is 403; no preview, no request`, async () => {
    await using h = await harness(backend);
    const listing = await h.call("vera", "GET", "/work/payouts");
    assert.equal(listing.status, 200);
    assert.doesNotMatch(listing.text, /bulk-release-all|work-bulk-select/);
    assert.equal((await h.call("vera", "GET", "/work/payouts/bulk/release-all")).status, 403);
    assert.equal((await h.call("vera", "POST", PREVIEW, [])).status, 403);
    // Bob (approver only) may not work the queue: no button; the door refuses a preview.
    const bobs = await h.call("bob", "GET", "/work/payouts");
    assert.doesNotMatch(bobs.text, /bulk-release-all/);
    const refused = await h.call("bob", "POST", PREVIEW, []);
    assert.equal(refused.status, 403);
    assert.match(refused.text, /data-refusal="work-forbidden"/);
    const preview = await h.call("ann", "POST", PREVIEW, []);
    const manifest = manifestIn(preview.text);
    assert.equal((await h.call("vera", "POST", `/bulk-money/${manifest}/request`, [])).status, 403);
    assert.equal(
      (await h.call("vera", "POST", `/bulk-money/${manifest}/confirm`, [["code", "1"]])).status,
      403,
    );
    assert.equal(await h.store.bulkRequestLatest({ manifest }), null);
    // An unknown manifest, or none at all.
    const unknown = "0".repeat(64);
    assert.equal((await h.call("ann", "POST", `/bulk-money/${unknown}/request`, [])).status, 404);
    assert.equal((await h.call("bob", "GET", `/bulk-money/${unknown}`)).status, 404);
    assert.equal((await h.call("bob", "GET", "/bulk-money/not-a-manifest")).status, 404);
  });
}
