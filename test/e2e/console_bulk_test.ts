/**
 * A bulk retry over everything a filter matches, in a real browser
 * (Debian's Chromium, driven by playwright-core) against a real `jobs
 * daemon`, on SQLite and on PostgreSQL: 20,000 discarded jobs, the list
 * offers `Retry all 20,000 matching…`, the confirmation shows the count
 * before anything changes, the start leads to the run's progress page,
 * which refreshes itself until the daemon's `jobs.bulk` job has retried
 * every one; a second run of another 20,000 aborted from its page stops
 * with done < total and its jobs untouched. The `jobs.bulk` queue is paused
 * while each run starts, so the page is seen running whatever the
 * machine's speed, then resumed. Screenshots `bulk-preview` and
 * `bulk-progress` at 1280x800 under `test/e2e/output/console/<backend>/`;
 * no CSP violation, no page error.
 */

import assert from "node:assert/strict";
import { BULK_QUEUE } from "../../src/admin/bulk.ts";
import type { Store } from "../../src/store/store.ts";
import { newJob } from "../support/backends.ts";
import { consoleFixture } from "./console_support.ts";

/** Inserts `count` discarded jobs of `queue` through the store's API, in batches. */
async function seedDiscarded(store: Store, queue: string, count: number): Promise<void> {
  const now = Date.now();
  for (let at = 0; at < count; at += 5000) {
    const jobs = Array.from(
      { length: Math.min(5000, count - at) },
      () => newJob({ queue, worker: "mailer", scheduledAt: now }),
    );
    const ids = (await store.jobsInsert({ jobs, now })).map((r) => r.id);
    await store.jobsDiscard({ ids, now, reason: "smtp down", actor: "test" });
  }
}

/** Polls `read` until `ok` holds of its answer, or fails after `ms` (real time). */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms: ${String(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name:
      `${backend}: a bulk retry of 20,000 matching jobs shows progress and completes; abort stops it`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await using c = await consoleFixture(backend);
      await c.addPerson("ada", ["operator"], "correct horse");
      await seedDiscarded(c.store, "mail", 20_000);
      await seedDiscarded(c.store, "mail2", 20_000);
      const w = await c.signedIn("ada", "correct horse");
      const { page } = w;

      // The list offers the action over everything matching; the confirmation counts first.
      await page.goto(`${c.url}/jobs?state=discarded&queue=mail`);
      await Promise.all([
        page.waitForURL(/\/jobs\/bulk\?/),
        page.click("[data-bulk-all-action=retry]"),
      ]);
      assert.equal(await page.getAttribute("[data-preview-count]", "data-preview-count"), "20000");
      assert.match(await page.textContent("[data-preview-count]") ?? "", /20,000 jobs match/);
      assert.equal(await c.store.jobsCountMatching({ state: "discarded", queue: "mail" }), 20_000);
      await c.screenshot(w, "bulk-preview");

      // Started while the bulk queue is paused: the page is seen running, then follows the run.
      await c.store.queuePause({ name: BULK_QUEUE, paused: true, now: Date.now() });
      await page.fill("input[name=reason]", "smtp is back");
      await Promise.all([page.waitForURL(/\/bulk\/\d+$/), page.click("text=Retry all 20,000")]);
      const first = Number(page.url().split("/").at(-1));
      assert.equal(await page.getAttribute("[data-bulk-state]", "data-bulk-state"), "running");
      assert.match(await page.textContent("[data-bulk-done]") ?? "", /of 20,000/);
      await c.screenshot(w, "bulk-progress");
      await c.store.queuePause({ name: BULK_QUEUE, paused: false, now: Date.now() });
      // The page refreshes itself: nothing here navigates while it runs.
      const seen = new Set<string>();
      await until(
        async () => {
          const state = await page.getAttribute("[data-bulk-state]", "data-bulk-state")
            .catch(() => null);
          const done = await page.textContent("[data-bulk-done]").catch(() => null);
          if (done) seen.add(done);
          return state;
        },
        (state) => state === "completed",
        120_000,
      );
      assert.match(await page.textContent("[data-bulk-done]") ?? "", /^20,000 of 20,000/);
      assert.equal(await page.textContent("[data-bulk-changed]"), "20,000");
      assert.ok(seen.size >= 2, `the page showed the run move: ${[...seen].join(" | ")}`);
      const run = await c.store.bulkRunGet({ id: first });
      assert.deepEqual([run?.state, run?.changed, run?.actor], ["completed", 20_000, "ada"]);
      assert.equal(await c.store.jobsCountMatching({ state: "discarded", queue: "mail" }), 0);
      const [audit] = await c.store.auditPage({ action: "job.retry", limit: 1 });
      assert.deepEqual([audit?.actor, audit?.reason], ["ada", "smtp is back"]);

      // A second run, aborted from its page before its job gets a chunk in.
      await c.store.queuePause({ name: BULK_QUEUE, paused: true, now: Date.now() });
      await page.goto(`${c.url}/jobs/bulk?action=retry&state=discarded&queue=mail2`);
      await page.fill("input[name=reason]", "smtp is back");
      await Promise.all([page.waitForURL(/\/bulk\/\d+$/), page.click("text=Retry all 20,000")]);
      const second = Number(page.url().split("/").at(-1));
      assert.notEqual(second, first);
      await Promise.all([
        page.waitForURL(new RegExp(`/bulk/${second}$`)),
        page.click("[data-bulk-abort]"),
      ]);
      await c.store.queuePause({ name: BULK_QUEUE, paused: false, now: Date.now() });
      await until(
        () => page.getAttribute("[data-bulk-state]", "data-bulk-state").catch(() => null),
        (state) => state === "aborted",
        120_000,
      );
      const aborted = await c.store.bulkRunGet({ id: second });
      assert.equal(aborted?.state, "aborted");
      assert.ok(aborted!.done < aborted!.total, `done ${aborted?.done} < ${aborted?.total}`);
      assert.equal(await c.store.jobsCountMatching({ state: "discarded", queue: "mail2" }), 20_000);
      const [abort] = await c.store.auditPage({ action: "bulk.abort", limit: 1 });
      assert.equal(abort?.actor, "ada");

      await page.goto(`${c.url}/bulk`);
      assert.equal(await page.locator("table[data-table=bulk] tbody tr").count(), 2);
      assert.deepEqual(w.problems(), []);
      await w.context.close();
    },
  });
}
