/**
 * A person's whole flow through a work queue in Chromium, against a real
 * daemon on SQLite and on PostgreSQL whose schedules file declares the
 * issue's `disputes` queue: sign in, open the queue from the nav, see each
 * score with its inputs, press Next, see the item, refund it with a reason,
 * see the outcome (its job, linked) and the history. Meanwhile a second
 * person's tab on the same listing sees the claim arrive live (the claimed
 * count and the "changed" notice, from the tab's one event stream), with
 * no CSP violation on any page.
 */

import assert from "node:assert/strict";
import { addWorkItem, type WorkActor } from "../../src/admin/work.ts";
import { waitUntil } from "../../src/testing.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { consoleFixture } from "./console_support.ts";
import type { Locator } from "playwright-core";

/** The attribute `name` of every element `locator` finds, in order. */
async function attributes(locator: Locator, name: string): Promise<(string | null)[]> {
  return await Promise.all((await locator.all()).map((l) => l.getAttribute(name)));
}

const DAY = 86_400_000;

const SCHEDULES = [
  "version: 1",
  "work_queues:",
  "  - id: disputes",
  "    claim: required",
  "    lease: 1h",
  "    score:",
  "      rule: rule/dispute.urgency-score",
  "      inputs: [amount, age, evidence_missing]",
  "      weights: { amount: 0.01, age: 2/day, evidence_missing: 30 }",
  "    show: [amount, currency, age, evidence_missing]",
  "    actions:",
  "      - id: refund",
  "        run: { worker: refund_dispute }",
  "",
].join("\n");

/** The same queue as the file's, to add items through the door. */
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
});

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name:
      `${backend}: a person works a dispute from Next to refund; another's tab sees the claim live`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await using c = await consoleFixture(backend, { config: SCHEDULES });
      await c.addPerson("ada", ["admin"], "correct horse");
      await c.addPerson("bob", ["admin"], "correct horse");
      const host: WorkActor = {
        person: "e2e",
        roles: ["admin"],
        tenant: null,
        door: "library",
        reason: null,
        now: Date.now(),
      };
      const add = (key: string, data: Record<string, unknown>, daysAgo: number) =>
        addWorkItem(c.store, DISPUTES, { key, data }, { ...host, now: Date.now() - daysAgo * DAY });
      await add("dispute-1900", { amount: 1900, currency: "EUR", evidence_missing: true }, 6);
      await add("dispute-120", { amount: 120, currency: "USD", evidence_missing: false }, 1);

      // Bob watches the listing.
      const bob = await c.signedIn("bob", "correct horse");
      await bob.page.goto(`${c.url}/work/disputes`);
      const claimed = bob.page.locator(
        `.work-summary [data-live='${JSON.stringify(["work", "disputes", "claimed"])}']`,
      );
      assert.equal((await claimed.textContent())?.trim(), "0");
      const notice = bob.page.locator("p.live-changed");
      assert.equal(await notice.isVisible(), false);
      await waitUntil("bob's stream to deliver its first snapshot", async () => {
        return Number(await bob.page.locator("body").getAttribute("data-live-snapshots")) > 0;
      }, { timeoutMs: 30_000, intervalMs: 100 });

      // Ada opens the queue from the nav.
      const ada = await c.signedIn("ada", "correct horse");
      await Promise.all([
        ada.page.waitForURL(`${c.url}/work`),
        ada.page.click(`nav a[href="/work"]`),
      ]);
      await Promise.all([
        ada.page.waitForURL(`${c.url}/work/disputes`),
        ada.page.click("table[data-table=work-queues] a >> text=disputes"),
      ]);
      const rows = await attributes(
        ada.page.locator("table[data-table=work-items] tbody tr"),
        "data-item",
      );
      assert.deepEqual(rows, ["dispute-1900", "dispute-120"]);
      const first = await ada.page.locator(`tr[data-item="dispute-1900"] td[data-score]`)
        .textContent();
      assert.match(first ?? "", /^urgency 61: EUR 1,900, 6 days old, evidence missing$/);
      await c.screenshot(ada, "work-listing");

      // Next: the best item, claimed, and its page.
      await Promise.all([
        ada.page.waitForURL(`${c.url}/work/disputes/dispute-1900`),
        ada.page.click("button[data-action=next]"),
      ]);
      assert.equal(
        await ada.page.locator("dd[data-claim] [data-claim-owner]").getAttribute(
          "data-claim-owner",
        ),
        "ada",
      );
      assert.match((await ada.page.locator("pre.work-data").textContent()) ?? "", /"EUR"/);

      // Bob's tab sees the claim without a reload.
      await waitUntil("bob's tab to show the claim", async () => {
        return (await claimed.textContent())?.trim() === "1" && await notice.isVisible();
      }, { timeoutMs: 30_000, intervalMs: 100 });
      await c.screenshot(bob, "work-listing-live-claim");

      // The refund, with a reason: its outcome and the history.
      await c.screenshot(ada, "work-item-claimed");
      await ada.page.fill("#reason-do-refund", "the customer proved the charge was not theirs");
      await Promise.all([
        ada.page.waitForURL(/\/work\/disputes\/dispute-1900\?done=\d+$/),
        ada.page.click("button[data-action=do-refund]"),
      ]);
      const outcome = ada.page.locator("p[data-outcome]");
      assert.match((await outcome.textContent()) ?? "", /Done: refund runs as job/);
      const link = await outcome.locator("a").getAttribute("href");
      const row = await c.store.workItemGet({ queue: "disputes", key: "dispute-1900" });
      assert.equal(row?.state, "done");
      assert.equal(link, `/jobs/${row!.actionJobId}`);
      const events = ada.page.locator("table[data-table=work-history] tbody tr");
      const history = [];
      for (const row of await events.all()) {
        history.push([
          await row.getAttribute("data-event"),
          await row.locator("td").nth(1).textContent(),
        ]);
      }
      assert.deepEqual(history, [["added", "e2e"], ["claimed", "ada"], ["done", "ada"]]);
      assert.match(
        (await ada.page.locator("table[data-table=work-history]").textContent()) ?? "",
        /the customer proved the charge was not theirs/,
      );
      await c.screenshot(ada, "work-item-done");
      const audit = await c.store.auditList({ target: "work:disputes/dispute-1900" });
      assert.deepEqual(
        audit.map((r) => [r.action, r.actor, r.details.door]),
        [["work.add", "e2e", "library"], ["work.claim", "ada", "console"], [
          "work.do",
          "ada",
          "console",
        ]],
      );

      // The job page the outcome links to opens.
      await Promise.all([
        ada.page.waitForURL(`${c.url}/jobs/${row!.actionJobId}`),
        ada.page.click("p[data-outcome] a"),
      ]);
      assert.deepEqual(ada.problems(), []);
      assert.deepEqual(bob.problems(), []);
    },
  });
}
