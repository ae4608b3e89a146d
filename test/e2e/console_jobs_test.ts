/**
 * The console's Jobs and Job pages in a real browser (Debian's Chromium,
 * driven by playwright-core) against a real `jobs daemon`, on SQLite and
 * on PostgreSQL: the filters (state, queue, search) narrow the list and
 * stay in the URL; the keyboard moves (`/`, `j`, `r`); a retry from the
 * job page lands and its audit row names the person; a bulk retry of a
 * selection changes the selected jobs; a viewer sees no action and a
 * hand-made POST with its session gets 403; a person of tenant `acme`
 * never sees `globex`'s job, in the list nor at its address (404); hostile
 * text in args, errors, output, queue, worker and tenant renders inert (no
 * dialog, no CSP violation). Screenshots `jobs` and `job` at 1280x800 under
 * `test/e2e/output/console/<backend>/`.
 */

import assert from "node:assert/strict";
import type { Store } from "../../src/store/store.ts";
import { newJob } from "../support/backends.ts";
import { consoleFixture } from "./console_support.ts";

const HOSTILE_QUEUE = `<script>alert(1)</script>`;
const HOSTILE_WORKER = `"onmouseover=alert(2) x="`;
const HOSTILE_TENANT = `<img src=x onerror=alert(3)>\u202eevil`;
const HOSTILE_ERROR = `<script>alert(4)</script> \u001b]0;x\u0007 "onmouseover=alert(5) \u202e`;
const HOSTILE_ARGS = {
  link: "javascript:alert(6)",
  html: "<img src=x onerror=alert(7)>",
  osc: "\u001b]0;x\u0007",
  bidi: "\u202eevil",
};

/** Claims the one job of `queue` on node `n1` and records it discarded with `error` and `output`. */
async function fail(store: Store, queue: string, error: string, output: string): Promise<number> {
  const now = Date.now();
  const { jobs } = await store.jobsClaim({ queue, node: "n1", limit: 1, now, leaseMs: 60_000 });
  const job = jobs[0];
  assert.ok(job, `a job to claim in ${queue}`);
  const report = await store.jobsRecord({
    node: "n1",
    now: now + 10,
    results: [{
      id: job.id,
      fence: job.fence,
      attempt: job.attempt,
      startedAt: now,
      output,
      outcome: "discarded",
      error,
    }],
  });
  assert.deepEqual(report.recorded, [job.id]);
  return job.id;
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: the console's Jobs and Job pages in Chromium`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      await using c = await consoleFixture(backend);
      await c.addPerson("ada", ["operator"], "correct horse");
      await c.addPerson("vic", ["viewer"], "correct horse");
      await c.addPerson("ann", ["operator"], "correct horse", "acme");
      const now = Date.now();
      const later = now + 3_600_000;
      const [mail, report, globex, hostile, ...bulk] = (await c.store.jobsInsert({
        jobs: [
          newJob({ queue: "mail", worker: "mailer", tenant: "acme", scheduledAt: now - 1000 }),
          newJob({ queue: "reports", worker: "monthly", tenant: "acme", scheduledAt: later }),
          newJob({
            queue: "globex-q",
            worker: "globex-worker",
            tenant: "globex",
            scheduledAt: later,
          }),
          newJob({
            queue: HOSTILE_QUEUE,
            worker: HOSTILE_WORKER,
            tenant: HOSTILE_TENANT,
            args: JSON.stringify(HOSTILE_ARGS),
            tags: JSON.stringify([`<b>tag</b>`]),
            scheduledAt: now - 1000,
          }),
          ...Array.from({ length: 3 }, () => newJob({ queue: "bulk", scheduledAt: later })),
        ],
        now: now - 1000,
      })).map((r) => r.id) as number[];
      await fail(c.store, "mail", "connection refused by smtp.example", "sending 3 mails\n");
      await fail(c.store, HOSTILE_QUEUE, HOSTILE_ERROR, `line <script>alert(8)</script>\n`);
      await c.store.jobsCancel({ ids: bulk, now, reason: "seeded", actor: "test" });
      const problems: string[] = [];

      await t.step("filters narrow the list and stay in the URL", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/jobs`);
        assert.equal(await page.textContent("h1"), "Jobs");
        assert.match(await page.textContent("[data-count]") ?? "", /^7 jobs match/);
        const rows = () => page.locator("table[data-table=jobs] tbody tr").count();
        assert.equal(await rows(), 7);

        await page.selectOption("select[name=state]", "discarded");
        await Promise.all([page.waitForURL(/state=discarded/), page.click("text=Filter")]);
        assert.equal(await rows(), 2);
        assert.match(await page.textContent("[data-count]") ?? "", /^2 jobs match/);

        await page.fill("input[name=queue]", "mail");
        await Promise.all([page.waitForURL(/queue=mail/), page.click("text=Filter")]);
        assert.equal(await rows(), 1);
        assert.equal(await page.textContent(`tr[data-row="${mail}"] a`), String(mail));

        await page.goto(`${c.url}/jobs`);
        await page.keyboard.press("/");
        assert.equal(await page.evaluate("document.activeElement.name"), "search");
        await page.keyboard.type("SMTP.EXAMPLE");
        await Promise.all([page.waitForURL(/search=SMTP.EXAMPLE/), page.keyboard.press("Enter")]);
        assert.equal(await rows(), 1, "the search finds the error text");
        assert.equal(await page.inputValue("input[name=search]"), "SMTP.EXAMPLE");

        await page.goto(`${c.url}/jobs`);
        await page.keyboard.press("j");
        await page.keyboard.press("j");
        await page.keyboard.press("k");
        const focused = await page.evaluate("document.activeElement.textContent");
        const first = await page.locator("[data-job-link]").first().textContent();
        assert.equal(focused, first, "j, j, k: back on the first row");
        await c.screenshot(w, "jobs");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step("a retry from the job page lands; its audit row names the person", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/jobs/${mail}`);
        assert.equal(await page.textContent("h1"), `Job ${mail}`);
        assert.match(await page.textContent("[data-error]") ?? "", /connection refused/);
        assert.match(await page.textContent("[data-output]") ?? "", /sending 3 mails/);
        assert.match(await page.textContent("[data-as-planned]") ?? "", /runs as planned/);
        await c.screenshot(w, "job");
        await page.keyboard.press("r");
        assert.equal(await page.evaluate("document.getElementById('retry').open"), true);
        assert.equal(await page.evaluate("document.activeElement.name"), "reason");
        await page.keyboard.type("smtp is back");
        await Promise.all([
          page.waitForURL(/done=retry/),
          page.click("[data-action=retry] button[type=submit]"),
        ]);
        assert.match(await page.textContent("[data-done]") ?? "", /Retried/);
        const audit = page.locator("table[data-table=audit] tbody tr");
        assert.equal(await audit.count(), 1);
        assert.equal(await audit.locator("[data-actor]").textContent(), "ada");
        assert.match(await audit.textContent() ?? "", /job\.retry.*smtp is back/);
        assert.equal((await c.store.jobGet({ id: mail! }))!.state, "available");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step("a bulk retry of a selection changes the selected jobs", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/jobs?queue=bulk`);
        for (const id of bulk.slice(0, 2)) await page.check(`input[name=id][value="${id}"]`);
        await page.fill("#bulk-reason", "seeded by mistake");
        await Promise.all([page.waitForURL(/done=retry/), page.click("[data-bulk=retry]")]);
        assert.match(await page.textContent("[data-done]") ?? "", /^2 jobs retried\./);
        assert.match(page.url(), /queue=bulk/, "the filter kept");
        const states = [];
        for (const id of bulk) states.push((await c.store.jobGet({ id }))!.state);
        assert.deepEqual(states, ["available", "available", "cancelled"]);
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step("a viewer sees no action, and a POST by hand gets 403", async () => {
        const w = await c.signedIn("vic", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/jobs`);
        assert.equal(await page.locator("input[name=id], [data-bulk]").count(), 0);
        await page.goto(`${c.url}/jobs/${report}`);
        assert.equal(await page.locator("[data-action]").count(), 0);
        assert.equal(await page.locator("form[method=post][action^='/jobs']").count(), 0);
        for (const path of [`/jobs/${report}/retry`, "/jobs/cancel"]) {
          const answer = await w.context.request.post(`${c.url}${path}`, {
            headers: { origin: c.url },
            form: { reason: "by hand", id: String(report) },
            maxRedirects: 0,
          });
          assert.equal(answer.status(), 403, path);
        }
        assert.equal((await c.store.jobGet({ id: report! }))!.state, "scheduled");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step("a person of tenant acme never sees globex's job", async () => {
        const w = await c.signedIn("ann", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/jobs?tenant=globex`);
        const text = await page.textContent("main") ?? "";
        assert.ok(!text.includes("globex"), "no globex row");
        assert.equal(await page.locator("input[name=tenant]").count(), 0);
        assert.match(await page.textContent("[data-count]") ?? "", /^2 jobs match/);
        const answer = await page.goto(`${c.url}/jobs/${globex}`);
        assert.equal(answer?.status(), 404);
        assert.ok(!(await page.textContent("body") ?? "").includes("globex"));
        const missing = await page.goto(`${c.url}/jobs/99999999`);
        assert.equal(missing?.status(), 404);
        // Chromium logs each 404 document it loads as a console error: these two were asked for.
        const expected = "console error: Failed to load resource: the server responded with a " +
          "status of 404 (Not Found)";
        assert.deepEqual(w.problems(), [expected, expected]);
        await w.context.close();
      });

      await t.step("hostile text renders inert", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/jobs`);
        const row = page.locator(`tr[data-row="${hostile}"]`);
        const cells = await row.locator("td").allTextContents();
        assert.ok(cells.includes(HOSTILE_QUEUE), cells.join(" | "));
        assert.ok(cells.includes(HOSTILE_WORKER));
        assert.ok(cells.includes("<img src=x onerror=alert(3)>\\u202eevil"), "bidi made visible");
        await row.hover();
        await page.goto(`${c.url}/jobs/${hostile}`);
        const error = await page.textContent("[data-error]") ?? "";
        assert.ok(error.includes("<script>alert(4)</script> \\x1b]0;x\\x07"), error);
        assert.ok(error.endsWith("\\u202e"), error);
        assert.match(await page.textContent("[data-args]") ?? "", /javascript:alert\(6\)/);
        assert.match(await page.textContent("[data-output]") ?? "", /<script>alert\(8\)/);
        assert.equal(await page.locator("a[href^='javascript:']").count(), 0);
        assert.equal(await page.locator("main script, main img").count(), 1, "only jobs.js");
        for (const selector of ["[data-fields]", "[data-args]", "[data-error]"]) {
          await page.hover(selector);
        }
        assert.equal(await page.title(), `Job ${hostile} · jobs`, "no OSC retitled the page");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step(
        "no page reported a console error, a page error, a dialog or a CSP violation",
        () => {
          assert.deepEqual(problems, []);
        },
      );
    },
  });
}
