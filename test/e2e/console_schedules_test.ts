/**
 * The console's Queues and Schedules pages in a real browser (Debian's
 * Chromium, driven by playwright-core) against a real `jobs daemon`, on
 * SQLite and on PostgreSQL. The daemon runs a schedules file with a
 * per-minute schedule for `tenants: [acme, globex]`, a daily Europe/Berlin
 * schedule whose next runs cross the spring-forward of 2027-03-28, and a
 * guarded manual one; its node serves `production`.
 *
 * - `/queues` shows each queue's jobs by state; pausing one with a reason
 *   shows who paused it and why, and its audit row names the person; it
 *   resumes.
 * - `/schedules` lists every schedule with its rhythm in words, its zone and
 *   DST policy and its next runs, the DST note visible; a schedule's page
 *   shows its next 10 runs, the runbook's commands, and takes Disable /
 *   Enable (audited as the person) and Run now (the new occurrence listed,
 *   linking to its job); a guard that refuses shows its message.
 * - A viewer sees no action and a hand-made POST is 403; a person of tenant
 *   acme sees `tick:acme` and never `tick:globex` (whose page is a 404), no
 *   queue, and their queue POSTs are 403.
 * - Hostile text (queue names, reasons, a guard, a DST reason) renders inert:
 *   no dialog, no CSP violation. Screenshots `queues`, `schedules` and
 *   `schedule` at 1280x800.
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { waitUntil } from "../../src/testing.ts";
import { newJob } from "../support/backends.ts";
import { consoleFixture } from "./console_support.ts";

const HOSTILE = `<img src=x onerror=alert(1)>"onmouseover=alert(2) \u202e`;
const HOSTILE_QUEUE = `<script>alert(3)</script>`;

const SCHEDULES = `version: 1
schedules:
  - id: tick
    cron: "* * * * *"
    tenants: [acme, globex]
    run: { command: ["true"] }
  - id: berlin
    cron: "30 2 * * *"
    timezone: Europe/Berlin
    start_at: "2027-03-27T00:00:00Z"
    local_time:
      reason: ${JSON.stringify(`the office's clock ${HOSTILE}`)}
      gap: shift
      overlap: first
    queue: reports
    run: { command: ["true"] }
  - id: reindex
    manual: true
    guard: ${JSON.stringify(`on-call only ${HOSTILE}`)}
    runs_where: staging
    run: { command: ["true"] }
`;

/** The texts of the rows' header cells of `table`. */
async function rowNames(page: Page, table: string): Promise<string[]> {
  return await page.locator(`table[data-table=${table}] tbody th`).allTextContents();
}

/**
 * `w`'s problems but the line Chromium logs for a page answered with one of
 * `statuses` on purpose (a refusal shown with its status).
 */
function problemsBut(w: { problems(): string[] }, ...statuses: number[]): string[] {
  return w.problems().filter((line) =>
    !statuses.some((status) =>
      line ===
        `console error: Failed to load resource: the server responded with a status of ${status} ${
          STATUS_TEXT[status]
        }`
    )
  );
}

const STATUS_TEXT: Record<number, string> = {
  400: "(Bad Request)",
  404: "(Not Found)",
  409: "(Conflict)",
};

/** Submits the form holding `button` and waits for the page it leads to. */
async function submit(page: Page, button: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(button)]);
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: the console's Queues and Schedules pages in Chromium`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      await using c = await consoleFixture(backend, {
        config: SCHEDULES,
        args: ["--environment", "production"],
      });
      await c.addPerson("ada", ["admin"], "correct horse");
      await c.addPerson("vic", ["viewer"], "battery staple");
      await c.addPerson("amy", ["operator"], "acme secret", "acme");
      const now = Date.now();
      await c.store.jobsInsert({
        jobs: [
          newJob({ queue: "mail", scheduledAt: now + 3_600_000 }),
          newJob({ queue: HOSTILE_QUEUE, scheduledAt: now + 3_600_000 }),
        ],
        now,
      });
      await waitUntil(
        "the daemon to sync the schedules",
        async () => (await c.store.schedulesList({})).length === 4,
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      const problems: string[] = [];

      await t.step("queues: pause with a reason shows who and why, audited; resume", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const { page } = w;
        await page.goto(`${c.url}/queues`);
        assert.equal(await page.textContent("h1"), "Queues");
        const names = await rowNames(page, "queues");
        assert.ok(names.includes("mail"), names.join(", "));
        assert.ok(names.includes(HOSTILE_QUEUE), "the hostile name shows as text");
        assert.ok(names.includes("reports"), "a schedule's queue is listed");
        const mail = page.locator("tr[data-queue=mail]");
        await mail.locator("input[name=reason]").fill(`vendor down ${HOSTILE}`);
        await submit(page, "tr[data-queue=mail] button[data-action=pause]");
        assert.equal(new URL(page.url()).pathname, "/queues");
        assert.equal(await mail.locator("[data-paused-by]").textContent(), "by ada");
        assert.equal(
          await mail.locator("[data-paused-why]").textContent(),
          `vendor down ${HOSTILE}`,
        );
        const trail = await c.store.auditList({ target: "queue:mail" });
        assert.deepEqual(
          trail.map((a) => [a.action, a.actor, a.reason]),
          [["queue.pause", "ada", `vendor down ${HOSTILE}`]],
        );
        assert.ok((await c.store.queuesList()).find((q) => q.name === "mail")?.paused);
        await c.screenshot(w, "queues");

        // A placeholder is not a reason: refused, nothing written.
        await mail.locator("input[name=reason]").fill("TODO");
        await submit(page, "tr[data-queue=mail] button[data-action=resume]");
        assert.match(await page.textContent("[role=alert]") ?? "", /is not a reason/);
        assert.equal((await c.store.auditList({ target: "queue:mail" })).length, 1);

        await mail.locator("input[name=reason]").fill("vendor back");
        await submit(page, "tr[data-queue=mail] button[data-action=resume]");
        assert.equal(await mail.locator("[data-paused-by]").count(), 0);
        assert.ok(!(await c.store.queuesList()).find((q) => q.name === "mail")?.paused);
        const last = (await c.store.auditList({ target: "queue:mail" })).at(-1)!;
        assert.deepEqual([last.action, last.actor, last.reason], [
          "queue.resume",
          "ada",
          "vendor back",
        ]);
        problems.push(...problemsBut(w, 400));
        await w.context.close();
      });

      await t.step(
        "schedules: rhythm, zone and DST policy, next runs with a DST note",
        async () => {
          const w = await c.signedIn("ada", "correct horse");
          const { page } = w;
          await page.goto(`${c.url}/schedules`);
          assert.equal(await page.textContent("h1"), "Schedules");
          assert.deepEqual(await rowNames(page, "schedules"), [
            "berlin",
            "reindex",
            "tick:acme",
            "tick:globex",
          ]);
          const berlin = page.locator("tr[data-schedule=berlin]");
          const text = await berlin.textContent() ?? "";
          assert.match(text, /cron "30 2 \* \* \*"/);
          assert.match(text, /Europe\/Berlin/);
          assert.match(text, /gap shift, overlap first/);
          assert.ok(text.includes(HOSTILE), "the DST reason shows as text");
          assert.match(text, /2027-03-27T01:30:00\.000Z/);
          assert.equal(
            await berlin.locator("[data-dst-note]").first().textContent(),
            "shifted: 02:30 does not exist on 2027-03-28",
          );
          assert.match(
            await page.locator("tr[data-schedule='tick:acme']").textContent() ?? "",
            /cron "\* \* \* \* \*"/,
          );
          assert.match(
            await page.locator("tr[data-schedule=reindex]").textContent() ?? "",
            /only when someone runs it/,
          );
          await c.screenshot(w, "schedules");
          problems.push(...w.problems());
          await w.context.close();
        },
      );

      await t.step(
        "a schedule's page: next 10 runs, runbook, disable and enable, run now",
        async () => {
          const w = await c.signedIn("ada", "correct horse");
          const { page } = w;
          await page.goto(`${c.url}/schedules/berlin`);
          assert.equal(await page.textContent("h1"), "Schedule berlin");
          assert.equal(await page.locator("table[data-table=next] tbody tr").count(), 10);
          assert.equal(
            await page.locator("table[data-table=next] [data-dst-note]").textContent(),
            "shifted: 02:30 does not exist on 2027-03-28",
          );
          const runbook = await page.locator("pre.paste").allTextContents();
          assert.ok(
            runbook.some((r) =>
              r.includes("jobs disable berlin --reason '<why you are disabling it>'")
            ),
            runbook.join("\n"),
          );

          await page.fill("#toggle-reason", `maintenance ${HOSTILE}`);
          await submit(page, "button[data-action=disable]");
          assert.equal(new URL(page.url()).pathname, "/schedules/berlin");
          assert.equal(await page.locator("[data-state]").first().textContent(), "disabled");
          assert.equal(await page.locator("[data-disabled-by]").first().textContent(), "by ada");
          assert.equal(
            await page.locator("[data-disabled-why]").first().textContent(),
            `maintenance ${HOSTILE}`,
          );
          await page.fill("#toggle-reason", "maintenance over");
          await submit(page, "button[data-action=enable]");
          assert.equal(await page.locator("[data-state]").first().textContent(), "enabled");
          const trail = await c.store.auditList({ target: "schedule:berlin" });
          assert.deepEqual(trail.map((a) => [a.action, a.actor, a.reason]), [
            ["schedule.disable", "ada", `maintenance ${HOSTILE}`],
            ["schedule.enable", "ada", "maintenance over"],
          ]);

          await page.fill("#run-reason", "a rerun for finance");
          await submit(page, "button[data-action=run]");
          const ran = new URL(page.url()).searchParams.get("ran");
          assert.ok(ran, page.url());
          assert.match(await page.textContent("[role=status]") ?? "", new RegExp(`job ${ran}`));
          assert.deepEqual(await rowNames(page, "occurrences"), [ran]);
          assert.equal(
            await page.locator("table[data-table=occurrences] a[data-replay]").getAttribute("href"),
            `/jobs/${ran}`,
          );
          const [run] = (await c.store.auditList({ target: "schedule:berlin" })).slice(-1);
          assert.deepEqual([run!.action, run!.actor], ["schedule.run", "ada"]);
          await c.screenshot(w, "schedule");

          await page.goto(`${c.url}/schedules/reindex`);
          assert.equal(await page.textContent("[data-guard]"), `on-call only ${HOSTILE}`);
          assert.equal(await page.textContent("[data-runs-where]"), "staging");
          assert.equal(await page.textContent("[data-environments]"), "production");
          await page.fill("#run-reason", "reindex after the import");
          await page.fill("#run-environment", "production");
          await submit(page, "button[data-action=run]");
          assert.match(
            await page.textContent("[role=alert]") ?? "",
            /runs only where the environment is "staging"/,
          );
          assert.equal((await c.store.auditList({ target: "schedule:reindex" })).length, 0);
          await c.screenshot(w, "schedule-guard-refused");
          problems.push(...problemsBut(w, 409));
          await w.context.close();
        },
      );

      await t.step("a viewer sees no action; a hand-made POST is 403", async () => {
        const w = await c.signedIn("vic", "battery staple");
        const { page } = w;
        await page.goto(`${c.url}/queues`);
        assert.ok((await rowNames(page, "queues")).includes("mail"));
        assert.equal(await page.locator("main form, main button").count(), 0);
        await page.goto(`${c.url}/schedules/berlin`);
        assert.equal(await page.locator("main form[method=post], button[data-action]").count(), 0);
        for (
          const path of ["/queues/mail/pause", "/schedules/berlin/disable", "/schedules/berlin/run"]
        ) {
          const answer = await w.context.request.post(`${c.url}${path}`, {
            headers: { origin: c.url },
            form: { reason: "viewer was here" },
            maxRedirects: 0,
          });
          assert.equal(answer.status(), 403, path);
        }
        assert.ok(!(await c.store.queuesList()).find((q) => q.name === "mail")?.paused);
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step("a person of tenant acme sees acme's schedules only, and no queue", async () => {
        const w = await c.signedIn("amy", "acme secret");
        const { page } = w;
        await page.goto(`${c.url}/schedules`);
        assert.deepEqual(await rowNames(page, "schedules"), ["tick:acme"]);
        assert.ok(!(await page.content()).includes("globex"));
        await page.goto(`${c.url}/schedules/tick:acme`);
        assert.equal(await page.textContent("h1"), "Schedule tick:acme");
        assert.ok(!(await page.content()).includes("globex"));
        const other = await page.goto(`${c.url}/schedules/tick:globex`);
        assert.equal(other?.status(), 404);
        assert.ok(!(await page.content()).includes("Schedule tick:globex"));
        const disable = await w.context.request.post(`${c.url}/schedules/tick:globex/disable`, {
          headers: { origin: c.url },
          form: { reason: "not mine to stop" },
          maxRedirects: 0,
        });
        assert.equal(disable.status(), 404);
        const [globex] = await c.store.schedulesList({ ids: ["tick:globex"] });
        assert.equal(globex?.enabled, true);

        await page.goto(`${c.url}/queues`);
        assert.equal(await page.locator("table[data-table=queues]").count(), 0);
        assert.equal(await page.locator("[data-note=installation-wide]").count(), 1);
        const pause = await w.context.request.post(`${c.url}/queues/mail/pause`, {
          headers: { origin: c.url },
          form: { reason: "acme wants it" },
          maxRedirects: 0,
        });
        assert.equal(pause.status(), 403);
        problems.push(...problemsBut(w, 404));
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
