/**
 * Bulk money on a work queue in Chromium, against a real daemon on SQLite
 * and on PostgreSQL whose schedules file declares a `payouts` queue with a
 * bulk release confirmed by a code a command delivers (it writes
 * JOBS_CONFIRM_CODE to a file): an operator opens the queue, previews the
 * bulk (every item with its amount, the totals), sends the code (the page
 * says where it went, never the code, and draws her no confirmation form);
 * a second person with the approver role opens the request, types the code
 * read from the file and confirms: one job per item, each item done. No
 * CSP violation on any page; screenshots of the preview and the
 * confirmation.
 */

import assert from "node:assert/strict";
import { addWorkItem, type WorkActor } from "../../src/admin/work.ts";
import { waitUntil } from "../../src/testing.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";
import { consoleFixture } from "./console_support.ts";
import type { Locator } from "playwright-core";

async function texts(locator: Locator): Promise<string[]> {
  return (await locator.allTextContents()).map((t) => t.trim());
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name:
      `${backend}: an operator previews a bulk release and sends the code; an approver confirms it`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      let codeFile = "";
      await using c = await consoleFixture(backend, {
        config: async (dir) => {
          codeFile = `${dir}/code`;
          const path = `${dir}/schedules.yaml`;
          await Deno.writeTextFile(
            path,
            [
              "version: 1",
              "work_queues:",
              "  - id: payouts",
              "    claim: required",
              "    lease: 1h",
              "    show: [amount, currency]",
              "    actions:",
              "      - id: release",
              "        run: { worker: release_payout }",
              "    bulk:",
              "      - id: release-all",
              "        action: release",
              "        money: { amount: amount, currency: currency }",
              "        confirm_by:",
              `          command: ["/bin/sh", "-c", "printf '%s' \\"$JOBS_CONFIRM_CODE\\" > ${codeFile}; cat >/dev/null"]`,
              "        second_person: true",
              "    roles: [operator]",
              "",
            ].join("\n"),
          );
          return path;
        },
      });
      const queue = compileWorkQueue({
        id: "payouts",
        claim: "required",
        leaseMs: 3_600_000,
        show: ["amount", "currency"],
        actions: [{ id: "release", run: { kind: "worker", worker: "release_payout" } }],
        roles: ["operator"],
      });
      await c.addPerson("ann", ["operator"], "correct horse");
      await c.addPerson("bob", ["approver"], "correct horse");
      const host: WorkActor = {
        person: "e2e",
        roles: ["admin"],
        tenant: null,
        door: "library",
        reason: null,
        now: Date.now(),
      };
      for (
        const [key, amount, currency] of [
          ["payout-1", "1900.00", "EUR"],
          ["payout-2", "500", "EUR"],
          ["payout-3", "42.50", "USD"],
        ] as const
      ) {
        await addWorkItem(c.store, queue, { key, data: { amount, currency } }, {
          ...host,
          now: Date.now(),
        });
      }

      // Ann opens the queue and the bulk, and previews it.
      const ann = await c.signedIn("ann", "correct horse");
      await ann.page.goto(`${c.url}/work/payouts`);
      await Promise.all([
        ann.page.waitForURL(/\/work\/payouts\/bulk\/release-all\??$/),
        ann.page.click("button[data-action=bulk-release-all]"),
      ]);
      await Promise.all([
        ann.page.waitForURL(`${c.url}/work/payouts/bulk/release-all/preview`),
        ann.page.click("button[data-action=bulk-preview]"),
      ]);
      assert.deepEqual(
        await texts(ann.page.locator("table[data-table=bulk-items] tbody th")),
        ["payout-1", "payout-2", "payout-3"],
      );
      assert.deepEqual(
        await texts(ann.page.locator("table[data-table=bulk-items] td[data-amount]")),
        ["1,900", "500", "42.5"],
      );
      assert.match(
        (await ann.page.locator("p[data-bulk-summary]").textContent()) ?? "",
        /^3 items totalling EUR 2,400 and USD 42\.5, each by release as one job/,
      );
      const manifest = await ann.page.locator("p.bulk-manifest code").getAttribute(
        "data-manifest",
      );
      assert.match(manifest ?? "", /^[0-9a-f]{64}$/);
      assert.equal(
        (await ann.page.locator("p.bulk-manifest code").textContent())?.trim(),
        manifest!.slice(0, 12),
      );
      await c.screenshot(ann, "work-bulk-preview");

      // She sends the code: the page says where it went, never the code.
      await Promise.all([
        ann.page.waitForURL(`${c.url}/bulk-money/${manifest}/request`),
        ann.page.click("button[data-action=bulk-request]"),
      ]);
      assert.match(
        (await ann.page.locator("p[data-sent]").textContent()) ?? "",
        /A code was sent by the configured command/,
      );
      let code = "";
      await waitUntil("the command to write the code", async () => {
        code = await Deno.readTextFile(codeFile).catch(() => "");
        return code.length > 0;
      }, { timeoutMs: 30_000, intervalMs: 100 });
      assert.ok(!(await ann.page.content()).includes(code), "the page shows no code");
      assert.equal(await ann.page.locator("input[name=code]").count(), 0);
      await c.screenshot(ann, "work-bulk-code-sent");

      // Bob, the second person, confirms with the code.
      const bob = await c.signedIn("bob", "correct horse");
      await bob.page.goto(`${c.url}/bulk-money/${manifest}`);
      const input = bob.page.locator("input#bulk-code");
      assert.equal(await input.getAttribute("autocomplete"), "one-time-code");
      assert.equal(await input.getAttribute("inputmode"), "numeric");
      await input.fill(code);
      await c.screenshot(bob, "work-bulk-confirm");
      await Promise.all([
        bob.page.waitForURL(`${c.url}/bulk-money/${manifest}/confirm`),
        bob.page.click("button[data-action=bulk-confirm]"),
      ]);
      assert.match(
        (await bob.page.locator("section[data-bulk-outcome] p").textContent()) ?? "",
        /Confirmed: 3 of 3 items run, one job each\./,
      );
      assert.ok(!(await bob.page.content()).includes(code), "the page shows no code");
      await c.screenshot(bob, "work-bulk-confirmed");
      for (const key of ["payout-1", "payout-2", "payout-3"]) {
        const item = await c.store.workItemGet({ queue: "payouts", key });
        assert.equal(item?.state, "done", key);
        assert.equal(item?.doneBy, "bob");
        assert.equal(
          await bob.page.locator(
            `tr[data-outcome-item="${key}"] a[href="/jobs/${item!.actionJobId}"]`,
          )
            .count(),
          1,
        );
      }
      assert.deepEqual(ann.problems(), []);
      assert.deepEqual(bob.problems(), []);
    },
  });
}
