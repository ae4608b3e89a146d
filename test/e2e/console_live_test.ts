/**
 * The console's live stream in Chromium, against a real daemon on SQLite
 * and on PostgreSQL: the overview's counts follow the store without a
 * reload (one `/events` stream per tab, fed by the daemon's shared poller),
 * a tenant's person gets its tenant's counts only, and a tab that is hidden
 * closes its stream. The Queues page's counts and the Jobs page's line of
 * jobs by state follow the same stream.
 */

import assert from "node:assert/strict";
import { enqueueJob } from "../../src/admin/jobs.ts";
import { waitUntil } from "../../src/testing.ts";
import { consoleFixture } from "./console_support.ts";

/** Makes the page's document hidden, as a tab in the background is. */
const HIDE = `Object.defineProperty(document, "hidden", { value: true, configurable: true });
document.dispatchEvent(new Event("visibilitychange"));`;
/** Makes it visible again. */
const SHOW = HIDE.replace("value: true", "value: false");

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: the overview's counts follow the store live, in each person's scope`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await using c = await consoleFixture(backend);
      await c.addPerson("ada", ["viewer"], "correct horse");
      await c.addPerson("acme-ann", ["viewer"], "correct horse", "acme");
      const who = { actor: "root", reason: null, now: Date.now() };
      const later = { queue: "mail", in: 3_600_000 };
      await enqueueJob(c.store, "send", {}, { ...later, tenant: "acme" }, who);

      const w = await c.signedIn("ada", "correct horse");
      const cell = w.page.locator(
        `td[data-live='${JSON.stringify(["queues", "mail", "scheduled"])}']`,
      );
      assert.equal((await cell.textContent())?.trim(), "1");
      const streams: string[] = [];
      w.page.on("request", (r) => {
        if (new URL(r.url()).pathname === "/events") streams.push(r.url());
      });

      const acme = await c.signedIn("acme-ann", "correct horse");
      const acmeCell = acme.page.locator(
        `td[data-live='${JSON.stringify(["jobs", "scheduled"])}']`,
      );
      assert.equal((await acmeCell.textContent())?.trim(), "1");

      // Two more jobs, one of globex's: the installation sees 3, acme still 1 then 2.
      await enqueueJob(c.store, "send", {}, { ...later, tenant: "globex" }, who);
      await enqueueJob(c.store, "send", {}, { ...later, tenant: "acme" }, who);
      await waitUntil("the overview to show 3 without a reload", async () => {
        return (await cell.textContent())?.trim() === "3";
      }, { timeoutMs: 30_000, intervalMs: 100 });
      await waitUntil("acme's overview to show 2", async () => {
        return (await acmeCell.textContent())?.trim() === "2";
      }, { timeoutMs: 30_000, intervalMs: 100 });
      assert.ok(!(await acme.page.content()).includes("globex"));
      assert.ok(streams.length <= 1, `one stream per tab: ${streams.length}`);

      // A hidden tab closes its stream: a change while hidden shows only once it is visible.
      await w.page.evaluate(HIDE);
      await enqueueJob(c.store, "send", {}, later, who);
      // Two more changes acme's (visible) tab shows, one after the other: by then the poller
      // has read twice since the hidden tab's change, and would have sent it, had it listened.
      for (const expected of ["3", "4"]) {
        await enqueueJob(c.store, "send", {}, { ...later, tenant: "acme" }, who);
        await waitUntil(`acme's overview to show ${expected}`, async () => {
          return (await acmeCell.textContent())?.trim() === expected;
        }, { timeoutMs: 30_000, intervalMs: 100 });
      }
      assert.equal((await cell.textContent())?.trim(), "3", "hidden: not updated");
      await w.page.evaluate(SHOW);
      await waitUntil("the shown tab to catch up", async () => {
        return (await cell.textContent())?.trim() === "6";
      }, { timeoutMs: 30_000, intervalMs: 100 });

      await c.screenshot(w, "overview-live");
      assert.deepEqual(w.problems(), []);
      assert.deepEqual(acme.problems(), []);
    },
  });
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: the Queues page and the Jobs page's states follow the store live`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await using c = await consoleFixture(backend);
      await c.addPerson("ada", ["viewer"], "correct horse");
      await c.addPerson("acme-ann", ["viewer"], "correct horse", "acme");
      const who = { actor: "root", reason: null, now: Date.now() };
      const later = { queue: "mail", in: 3_600_000 };
      await enqueueJob(c.store, "send", {}, later, who);

      const w = await c.signedIn("ada", "correct horse");
      await w.page.goto(`${c.url}/queues`);
      const queued = w.page.locator(
        `td[data-live='${JSON.stringify(["queues", "mail", "scheduled"])}']`,
      );
      assert.equal((await queued.textContent())?.trim(), "1");
      await enqueueJob(c.store, "send", {}, later, who);
      await waitUntil("the Queues page to show 2 without a reload", async () => {
        return (await queued.textContent())?.trim() === "2";
      }, { timeoutMs: 30_000, intervalMs: 100 });

      await w.page.goto(`${c.url}/jobs`);
      const scheduled = w.page.locator(
        `[data-states] span[data-live='${JSON.stringify(["jobs", "scheduled"])}']`,
      );
      assert.equal((await scheduled.textContent())?.trim(), "2");

      // acme's person: the line starts empty and fills with acme's count alone.
      const acme = await c.signedIn("acme-ann", "correct horse");
      await acme.page.goto(`${c.url}/jobs`);
      const acmeScheduled = acme.page.locator(
        `[data-states] span[data-live='${JSON.stringify(["jobs", "scheduled"])}']`,
      );
      await waitUntil("acme's line to show its 0 scheduled jobs", async () => {
        return (await acmeScheduled.textContent())?.trim() === "0";
      }, { timeoutMs: 30_000, intervalMs: 100 });

      await enqueueJob(c.store, "send", {}, { ...later, tenant: "acme" }, who);
      await waitUntil("the Jobs page's line to show 3", async () => {
        return (await scheduled.textContent())?.trim() === "3";
      }, { timeoutMs: 30_000, intervalMs: 100 });
      await waitUntil("acme's line to show 1", async () => {
        return (await acmeScheduled.textContent())?.trim() === "1";
      }, { timeoutMs: 30_000, intervalMs: 100 });
      await w.page.click(`[data-states] a[href="/jobs?state=scheduled"]`);
      await w.page.waitForURL(/\/jobs\?state=scheduled$/);
      assert.match(await w.page.textContent("[data-count]") ?? "", /3 jobs match/);
      await c.screenshot(w, "jobs-live-states");
      assert.deepEqual(w.problems(), []);
      assert.deepEqual(acme.problems(), []);
    },
  });
}
