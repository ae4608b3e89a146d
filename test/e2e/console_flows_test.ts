/**
 * The console's Workflows, Pipelines and Reports pages in a real browser
 * (Debian's Chromium, driven by playwright-core) against a real `jobs
 * daemon`, on SQLite and on PostgreSQL. The daemon's schedules file is the
 * catalog example's (a pipeline whose first run drops records as
 * `duplicate` and `below-threshold`), with a two-step workflow whose second
 * step is a worker of the workers module (`defineWorker`) that fails, with
 * hostile text, until a file exists; a workflow whose first step waits on
 * a queue paused in the file; and the statement report (tenant-isolated).
 *
 * - An operator of tenant `acme` lists acme's runs (never globex's: its
 *   run is a 404 page), opens the failed run as a tree of its steps, retries
 *   it with a reason (the audit row names the person, and the run
 *   completes), cancels the waiting run; runs the pipeline now and sees its
 *   counts and the drops chart, replays one drop; requests the statement
 *   from the form (date fields) and downloads its CSV through the link.
 * - A viewer of acme sees no button on any of these pages, and a POST made
 *   by hand with the viewer's session is refused 403.
 * - Hostile text (a step's error, a run's key) renders inert; no page
 *   reports a console error, a page error, a dialog or a CSP violation.
 *   Screenshots `workflows`, `workflow`, `pipelines`, `reports` (1280x800).
 */

import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { workflowRunView } from "../../src/admin/workflows.ts";
import { waitUntil } from "../../src/testing.ts";
import { jobsCommand } from "../support/daemon_process.ts";
import { MARCH, STATEMENT_SCHEDULES, writeStatementSources } from "../support/statement_report.ts";
import { type ConsoleFixture, consoleFixture, type Watched } from "./console_support.ts";

const EXAMPLE = fileURLToPath(new URL("../../examples/catalog", import.meta.url));
const SRC = new URL("../../src/", import.meta.url).href;
const HOSTILE = `<script>alert(1)</script>"onmouseover=alert(2) javascript:alert(3) \u202e`;
const PASSWORD = "correct horse battery";
const SLOW = { timeoutMs: 60_000, intervalMs: 250 };

/** The ship worker fails until `go` exists in its folder. */
const WORKERS_TAIL = `
import { defineWorker } from "${SRC}mod.ts";

export const ship = defineWorker({
  name: "ship",
  maxAttempts: 1,
  perform: async () => {
    const go = new URL("./go", import.meta.url);
    try {
      await Deno.stat(go);
    } catch {
      throw new Error(${JSON.stringify(`carrier down: ${HOSTILE}`)});
    }
    return { result: { shipped: true } };
  },
});
`;

const FLOWS = `use_cases:
  pack: { command: ["sh", "-c", "echo packed"] }
  ship: { worker: ship }
  parked: { command: ["sh", "-c", "echo never"], queue: parked }
workflows:
  - id: deliver
    steps:
      - { id: pack, use_case: pack }
      - { id: ship, depends_on: [pack], use_case: ship }
  - id: hold
    steps:
      - { id: wait, use_case: parked }
      - { id: after, depends_on: [wait], use_case: pack }
`;

/** Copies the catalog example into `dir` and extends its schedules file; returns its path. */
async function writeConfig(dir: string): Promise<string> {
  const folder = `${dir}/catalog`;
  await cp(EXAMPLE, folder, { recursive: true, filter: (src: string) => !src.includes("/out") });
  const workers = await Deno.readTextFile(`${folder}/workers.ts`);
  await Deno.writeTextFile(
    `${folder}/workers.ts`,
    workers.replace(/from "\.\.\/\.\.\/src\//g, `from "${SRC}`) + WORKERS_TAIL,
  );
  await writeStatementSources(folder);
  const reports = STATEMENT_SCHEDULES.slice(STATEMENT_SCHEDULES.indexOf("reports:\n"))
    .replace("authorize: { roles: [finance],", "authorize: { roles: [finance, operator],");
  const file = `${folder}/schedules.yaml`;
  const yaml = (await Deno.readTextFile(file))
    .replace("every: 15m", "every: 1000d")
    .replace(
      "  ingest: { concurrency: 1 }\n",
      "  ingest: { concurrency: 1 }\n  parked: { paused: true }\n  default: { concurrency: 4 }\n",
    )
    .replace("\nschedules:\n", `\n${FLOWS}\nschedules:\n`);
  await Deno.writeTextFile(file, `${yaml}\n${reports}`);
  const check = await jobsCommand(["check", "--config", file]);
  assert.equal(check.code, 0, check.stderr);
  return file;
}

/** Starts a run of `workflow` with `jobs start`; its id. */
async function start(c: ConsoleFixture, workflow: string, tenant: string, key: string) {
  const ran = await jobsCommand([
    "start",
    workflow,
    "--tenant",
    tenant,
    "--key",
    key,
    "--json",
    "--db",
    c.db,
    "--config",
    c.config,
  ]);
  assert.equal(ran.code, 0, ran.stderr);
  return JSON.parse(ran.stdout).id as number;
}

async function runState(c: ConsoleFixture, id: number): Promise<string | undefined> {
  return (await workflowRunView(c.store, id))?.run.state;
}

/** Submits the form matching `selector` after filling its reason; waits for the next page. */
async function submit(w: Watched, selector: string, reason?: string): Promise<void> {
  const form = w.page.locator(selector).first();
  if (reason !== undefined) await form.locator("input[name=reason]").fill(reason);
  await Promise.all([w.page.waitForNavigation(), form.locator("button[type=submit]").click()]);
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: the console's Workflows, Pipelines and Reports pages in Chromium`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      await using c = await consoleFixture(backend, { config: writeConfig });
      await c.addPerson("otto", ["operator"], PASSWORD, "acme");
      await c.addPerson("vera", ["viewer"], PASSWORD, "acme");
      await c.addPerson("ada", ["admin"], PASSWORD);
      await c.addPerson("gil", ["operator"], PASSWORD, "globex");
      const failing = await start(c, "deliver", "acme", `acme-${HOSTILE}`);
      const waiting = await start(c, "hold", "acme", "acme-hold");
      const globex = await start(c, "deliver", "globex", "globex-secret-run");
      await waitUntil(
        "both deliver runs failed",
        async () =>
          (await runState(c, failing)) === "failed" && (await runState(c, globex)) === "failed",
        SLOW,
      );
      const problems: string[] = [];
      const otto = await c.signedIn("otto", PASSWORD);
      const { page } = otto;

      await t.step("workflows: acme's runs only, filtered by state", async () => {
        await page.goto(`${c.url}/workflows`);
        const ids = await page.locator("table[data-table=workflow-runs] tbody th")
          .allTextContents();
        assert.deepEqual(ids.map(Number).sort(), [failing, waiting].sort());
        assert.ok(!(await page.content()).includes("globex"), "no globex row");
        await c.screenshot(otto, "workflows");
        await page.goto(`${c.url}/workflows?state=failed`);
        assert.deepEqual(
          await page.locator("table[data-table=workflow-runs] tbody th").allTextContents(),
          [String(failing)],
        );
        // Asked beside the page: a 404 document would log a console error there.
        const other = await otto.context.request.get(`${c.url}/workflows/${globex}`);
        assert.equal(other.status(), 404, "globex's run is not found for acme");
        assert.ok(!(await other.text()).includes("globex-secret-run"));
      });

      await t.step(
        "a failed run as a tree; Retry with a reason lands with the person",
        async () => {
          await page.goto(`${c.url}/workflows/${failing}`);
          assert.equal(await page.locator("[data-step=pack] [data-step=ship]").count(), 1);
          assert.match(
            await page.textContent("[data-step=ship] .error-text") ?? "",
            /carrier down/,
          );
          assert.ok((await page.textContent("main"))!.includes("<script>alert(1)</script>"));
          assert.equal(await page.locator("main script").count(), 0, "hostile text is inert");
          const main = (await page.textContent("main"))!;
          assert.ok(main.includes("\\u202e") && !main.includes("\u202e"), "bidi override shown");
          assert.ok(!main.includes("at Object.perform"), "no stack frame on the page");
          await c.screenshot(otto, "workflow");
          await Deno.writeTextFile(`${c.config.replace(/schedules\.yaml$/, "")}go`, "");
          await submit(otto, "form[data-action=retry]", "carrier is back up");
          assert.match(await page.textContent("[role=status]") ?? "", /Retried/);
          const trail = await c.store.auditList({ target: `workflow:${failing}` });
          const retry = trail.find((r) => r.action === "workflow.retry");
          assert.equal(retry?.actor, "otto");
          assert.equal(retry?.reason, "carrier is back up");
          await waitUntil(
            "the retried run completed",
            async () => (await runState(c, failing)) === "completed",
            SLOW,
          );
        },
      );

      await t.step("cancel a waiting run with a reason", async () => {
        await page.goto(`${c.url}/workflows/${waiting}`);
        await submit(otto, "form[data-action=cancel]", "not needed any more");
        const trail = await c.store.auditList({ target: `workflow:${waiting}` });
        assert.equal(trail.find((r) => r.action === "workflow.cancel")?.actor, "otto");
      });

      await t.step("pipelines: run now, counts, the drops chart, replay of a drop", async () => {
        await page.goto(`${c.url}/pipelines`);
        assert.equal(await page.locator("[data-pipeline=catalog]").count(), 1);
        await submit(otto, "form[data-action=run]", "refresh for the console test");
        assert.match(await page.textContent("[role=status]") ?? "", /run was queued/);
        assert.equal(
          (await c.store.auditList({ target: "pipeline:catalog" }))[0]?.actor,
          "otto",
        );
        // The page reads freshness and runs one after the other: a run that ends between the two
        // reads shows completed beside "no run completed". Wait until a read sees both.
        await waitUntil("the run completed, on the page", async () => {
          await page.goto(`${c.url}/pipelines`);
          return (await page.locator("[data-ingest-run] .badge.good").count()) === 1 &&
            /fresh/.test(await page.textContent("[data-freshness]") ?? "");
        }, SLOW);
        const cells = await page.locator("[data-ingest-run] td.num").allTextContents();
        assert.deepEqual(cells.slice(0, 3), ["40", "29", "9"], "received, sunk, dropped");
        assert.equal(await page.locator("svg.drops-chart g[data-reason]").count(), 2);
        assert.match(await page.textContent("[data-freshness]") ?? "", /fresh/);
        await c.screenshot(otto, "pipelines");
        await Promise.all([page.waitForNavigation(), page.click("text=Dropped records")]);
        assert.equal(await page.locator("table[data-table=drops] tbody tr").count(), 9);
        const first = await page.locator("[data-drop]").first().getAttribute("data-drop");
        await submit(otto, `[data-drop="${first}"] form[data-action=replay]`, "threshold fixed");
        assert.match(await page.textContent("[role=status]") ?? "", /replayed/);
        const trail = await c.store.auditList({ target: `drop:${first}` });
        assert.equal(trail[0]?.actor, "otto");
      });

      await t.step("reports: requested from the form, downloaded through its link", async () => {
        await page.goto(`${c.url}/reports`);
        const form = page.locator("[data-report=statement] form[data-action=request]");
        assert.equal(await form.locator("input[type=date]").count(), 2, "date params as dates");
        await form.locator("input[name='param.from']").fill(MARCH.from);
        await form.locator("input[name='param.to']").fill(MARCH.to);
        await submit(otto, "[data-report=statement] form[data-action=request]");
        assert.match(await page.textContent("[role=status]") ?? "", /requested/);
        await waitUntil("the run completed, on the page", async () => {
          await page.goto(`${c.url}/reports`);
          return (await page.locator("[data-report-run] form[data-action=link]").count()) === 1;
        }, SLOW);
        await c.screenshot(otto, "reports");
        await submit(otto, "[data-report-run] form[data-action=link]");
        const href = await page.locator("[data-link] a").getAttribute("href");
        assert.match(href ?? "", /^\/downloads\/[^/]+$/);
        const got = await otto.context.request.get(`${c.url}${href}`);
        assert.equal(got.status(), 200);
        const csv = await got.text();
        assert.match(csv, /^id,booked_at,description,amount/);
        assert.ok(!csv.includes("globex"), "acme's rows only");
      });

      await t.step("globex's pipeline and report runs never reach acme's pages", async () => {
        const gil = await c.signedIn("gil", PASSWORD);
        await gil.page.goto(`${c.url}/pipelines`);
        await submit(gil, "form[data-action=run]", "globex refresh");
        await gil.page.goto(`${c.url}/reports`);
        const form = gil.page.locator("[data-report=statement] form[data-action=request]");
        await form.locator("input[name='param.from']").fill(MARCH.from);
        await form.locator("input[name='param.to']").fill(MARCH.to);
        await submit(gil, "[data-report=statement] form[data-action=request]");
        await waitUntil("globex's ingest run and report run ended", async () => {
          const runs = await c.store.ingestRunsList({ pipeline: "catalog", tenant: "globex" });
          const reports = await c.store.reportRunsList({ tenant: "globex" });
          return runs[0]?.finishedAt != null && reports[0]?.state === "completed";
        }, SLOW);
        await page.goto(`${c.url}/pipelines`);
        assert.equal(await page.locator("[data-ingest-run]").count(), 2, "acme's run and replay");
        await page.goto(`${c.url}/reports`);
        assert.equal(await page.locator("[data-report-run]").count(), 1);
        assert.ok(!(await page.content()).includes("gil"), "no globex actor on acme's page");
        await gil.page.goto(`${c.url}/reports`);
        assert.equal(await gil.page.locator("[data-report-run]").count(), 1, "globex's own");
        problems.push(...gil.problems());
        await gil.context.close();
      });

      await t.step("a viewer sees no buttons; a hand-made POST is 403", async () => {
        const vera = await c.signedIn("vera", PASSWORD);
        for (const path of [`/workflows/${waiting}`, "/pipelines", "/reports"]) {
          await vera.page.goto(`${c.url}${path}`);
          assert.equal(await vera.page.locator("main form").count(), 0, path);
        }
        await vera.page.goto(`${c.url}/pipelines/catalog/drops`);
        assert.equal(await vera.page.locator("main form[method=post]").count(), 0);
        for (const path of [`/workflows/${waiting}/cancel`, "/pipelines/catalog/runs"]) {
          const refused = await vera.context.request.post(`${c.url}${path}`, {
            form: { reason: "by hand" },
            headers: { origin: c.url },
            maxRedirects: 0,
          });
          assert.equal(refused.status(), 403, path);
        }
        problems.push(...vera.problems());
        await vera.context.close();
      });

      await t.step("an installation-wide admin sees every tenant's runs", async () => {
        const ada = await c.signedIn("ada", PASSWORD);
        await ada.page.goto(`${c.url}/workflows`);
        const ids = await ada.page.locator("table[data-table=workflow-runs] tbody th")
          .allTextContents();
        assert.ok(ids.includes(String(globex)));
        await ada.page.goto(`${c.url}/reports`);
        assert.match(
          await ada.page.textContent("[data-report=statement]") ?? "",
          /tenant-isolated/,
        );
        problems.push(...ada.problems());
        await ada.context.close();
      });

      await t.step("no page reported a problem", async () => {
        problems.push(...otto.problems());
        await otto.context.close();
        assert.deepEqual(problems, []);
      });
    },
  });
}
