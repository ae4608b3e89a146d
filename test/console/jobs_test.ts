/**
 * The console's Jobs and Job pages in process, on every backend (the
 * browser tests are `test/e2e/console_jobs_test.ts`): filters narrow the
 * list and stay in the next page's link; the count is capped; a tenant's
 * person neither lists nor opens another tenant's job (404, as a missing
 * one) nor acts on it in bulk; a bulk retry of a selection audits each job
 * with the person; a viewer gets no action and a 403 when posting by hand;
 * a placeholder reason is refused; a replay runs and names its definition.
 */

import assert from "node:assert/strict";
import { searchWindowAbove } from "../../src/admin/jobs.ts";
import { runScheduleNow } from "../../src/admin/schedules.ts";
import { addPerson } from "../../src/admin/people.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { scheduleOf } from "../support/schedules.ts";
import { type Backend, BACKENDS, newJob } from "../support/backends.ts";

const ORIGIN = "http://127.0.0.1:9464";

async function harness(backend: Backend) {
  const clock = new FakeClock();
  const h = await backend.open(clock.now());
  const app = consoleApp({ store: h.store, clock, logger: () => {} });
  const root = { actor: "root", reason: null, now: clock.now() };
  const call = async (method: string, path: string, cookie: string, body?: string) => {
    const headers: Record<string, string> = {
      cookie: `${SESSION_COOKIE}=${cookie}`,
      "sec-fetch-site": "same-origin",
    };
    if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await app.fetch(
      new Request(`${ORIGIN}${path}`, { method, headers, redirect: "manual", body }),
      { remote: "127.0.0.1" },
    );
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const signIn = async (name: string, roles: string[], tenant: string | null = null) => {
    await addPerson(h.store, { name, roles, tenant, password: "pw" }, root, "host");
    const answer = await call("POST", "/login", "", `name=${name}&password=pw`);
    assert.equal(answer.status, 303, answer.text);
    return /^__Host-jobs_session=([\w-]+);/.exec(answer.headers.get("set-cookie") ?? "")![1]!;
  };
  return {
    ...h,
    clock,
    call,
    signIn,
    async [Symbol.asyncDispose]() {
      await h.close();
    },
  };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console's jobs pages filter, scope, act and refuse`, async () => {
    await using c = await harness(backend);
    const now = c.clock.now();
    const [mail, report, globex, hostile] = (await c.store.jobsInsert({
      jobs: [
        newJob({ queue: "mail", worker: "mailer", tenant: "acme", scheduledAt: now + 3_600_000 }),
        newJob({ queue: "reports", worker: "monthly", tenant: "acme", scheduledAt: now }),
        newJob({ queue: "globex-q", worker: "gx", tenant: "globex", scheduledAt: now + 1 }),
        newJob({
          queue: `<script>alert(1)</script>`,
          worker: `"onmouseover=alert(2) \u001b]0;x\u0007 \u202eevil`,
          args: JSON.stringify({
            link: "javascript:alert(3)",
            text: "<img src=x onerror=alert(4)>",
          }),
          scheduledAt: now + 1,
        }),
      ],
      now,
    })).map((r) => r.id) as [number, number, number, number];
    const ada = await c.signIn("ada", ["operator"]);
    const ann = await c.signIn("ann", ["operator"], "acme");
    const vic = await c.signIn("vic", ["viewer"]);

    const all = await c.call("GET", "/jobs", ada);
    assert.equal(all.status, 200, all.text);
    assert.match(all.text, /data-count="true">4 jobs match/);
    assert.ok(!all.text.includes("<script>alert"), "the hostile queue is escaped");
    assert.ok(!all.text.includes("\u202e") && !all.text.includes("\u001b"), "controls shown");
    assert.match(all.text, /\\u202eevil/);
    assert.match(all.text, /data-bulk="retry"/);

    const mailOnly = await c.call("GET", "/jobs?queue=mail&state=", ada);
    assert.match(mailOnly.text, /1 job matches/);
    assert.match(mailOnly.text, new RegExp(`href="/jobs/${mail}"`));
    assert.ok(!mailOnly.text.includes(`href="/jobs/${report}"`));
    const searched = await c.call("GET", "/jobs?search=JAVASCRIPT", ada);
    assert.match(searched.text, /1 job matches/);
    assert.match(searched.text, new RegExp(`href="/jobs/${hostile}"`));
    const byTenant = await c.call("GET", "/jobs?tenant=globex", ada);
    assert.match(byTenant.text, /1 job matches/);
    assert.equal((await c.call("GET", "/jobs?state=nope", ada)).status, 400);
    assert.equal(await searchWindowAbove(c.store, 10), null, "4 jobs: a search reads them all");
    assert.equal(await searchWindowAbove(c.store, 2), hostile - 2);

    // Keyset paging: 50 a page, the filter kept in the next page's link.
    await c.store.jobsInsert({
      jobs: Array.from({ length: 60 }, () => newJob({ queue: "bulk", scheduledAt: now + 1 })),
      now,
    });
    const first = await c.call("GET", "/jobs?queue=bulk", ada);
    assert.match(first.text, /60 jobs match/);
    const next = /href="(\/jobs\?queue=bulk&amp;after=\d+)"/.exec(first.text)?.[1];
    assert.ok(next, "a next page link keeping the filter");
    const second = await c.call("GET", next.replaceAll("&amp;", "&"), ada);
    assert.equal(second.text.match(/data-row=/g)?.length, 10);
    assert.ok(!second.text.includes("Next page"));

    // A tenant's person: its tenant only, the tenant filter ignored, another's job a 404.
    const annList = await c.call("GET", "/jobs?tenant=globex", ann);
    assert.match(annList.text, /2 jobs match/);
    assert.ok(!annList.text.includes("globex"), "no globex row, no tenant field");
    assert.equal((await c.call("GET", `/jobs/${globex}`, ann)).status, 404);
    assert.equal((await c.call("GET", "/jobs/999999", ann)).status, 404);
    const annBulk = await c.call(
      "POST",
      "/jobs/cancel",
      ann,
      `reason=tidy+up&id=${globex}&id=${mail}`,
    );
    assert.equal(annBulk.status, 303);
    assert.match(annBulk.headers.get("location")!, /done=cancel&changed=1&skipped=1/);
    assert.equal((await c.store.jobGet({ id: globex }))!.state, "scheduled");
    assert.equal((await c.store.jobGet({ id: mail }))!.state, "cancelled");

    // A bulk retry of a selection: each changed job audited with the person.
    const retried = await c.call(
      "POST",
      "/jobs/retry",
      ada,
      `reason=mail+is+back&back=queue%3Dmail&id=${mail}&id=${report}`,
    );
    assert.equal(retried.status, 303);
    assert.equal(
      retried.headers.get("location"),
      "/jobs?queue=mail&done=retry&changed=1&skipped=1",
    );
    const after = await c.call("GET", retried.headers.get("location")!, ada);
    assert.match(after.text, /1 job retried; 1 skipped/);
    const page = await c.call("GET", `/jobs/${mail}`, ada);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /data-actor="true">ada</);
    assert.match(page.text, /mail is back/);
    assert.match(page.text, /data-action="cancel"/, "an available job may be cancelled");
    assert.ok(!page.text.includes('data-action="retry"'), "nor retried: it is available");

    // Refusals: a placeholder reason; a viewer, who sees no action.
    const placeholder = await c.call("POST", `/jobs/${report}/cancel`, ada, "reason=TODO");
    assert.equal(placeholder.status, 400);
    const viewed = await c.call("GET", `/jobs/${report}`, vic);
    assert.ok(!/data-action=|data-bulk=/.test(viewed.text), "a viewer gets no action");
    assert.ok(!(await c.call("GET", "/jobs", vic)).text.includes("data-bulk"));
    const byHand = await c.call("POST", `/jobs/${report}/retry`, vic, "reason=by+hand");
    assert.equal(byHand.status, 403);
    assert.equal((await c.call("POST", "/jobs/retry", vic, `reason=x+y&id=${report}`)).status, 403);

    // One job's actions and its replay, as planned (no schedule).
    const cancel = await c.call("POST", `/jobs/${report}/cancel`, ada, "reason=not+needed");
    assert.equal(cancel.status, 303);
    assert.equal(cancel.headers.get("location"), `/jobs/${report}?done=cancel`);
    const again = await c.call("POST", `/jobs/${report}/cancel`, ada, "reason=not+needed");
    assert.equal(again.status, 409);
    const replayed = await c.call(
      "POST",
      `/jobs/${report}/replay`,
      ada,
      "reason=run+it+again&definition=as-planned",
    );
    assert.equal(replayed.status, 303, replayed.text);
    const shown = await c.call("GET", `/jobs/${report}`, ada);
    assert.match(shown.text, /job\.replay/);
    assert.match(shown.text, /runs as planned: it is not a schedule&#39;s occurrence/);
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the job page previews a replay live vs as planned and replays live`, async () => {
    await using c = await harness(backend);
    const now = c.clock.now();
    const nightly = (command: string[]) =>
      scheduleOf({ id: "nightly", cron: "0 3 * * *", queue: "reports", run: { command } });
    const broken = nightly(["sh", "-c", "exit 1"]);
    await syncSchedules(c.store, now, [broken]);
    const run = await runScheduleNow(c.store, broken, { actor: "root", reason: null, now }, null);
    await syncSchedules(c.store, now, [nightly(["true"])]);
    const ada = await c.signIn("ada", ["operator"]);

    const page = await c.call("GET", `/jobs/${run.id}`, ada);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /data-live="true">runs the live definition \w+ \(planned \w+\)/);
    assert.match(page.text, /data-as-planned="true">runs as planned/);
    assert.match(page.text, /<code>args\.argv: .* -&gt; \[&quot;true&quot;\]<\/code>/);
    assert.match(page.text, /data-action="replay"/);

    const replayed = await c.call(
      "POST",
      `/jobs/${run.id}/replay`,
      ada,
      "reason=vendor+fixed+the+feed&definition=live",
    );
    assert.equal(replayed.status, 303, replayed.text);
    const job = await c.store.jobGet({ id: run.id });
    assert.deepEqual((job?.args as { argv: string[] }).argv, ["true"]);
    const rows = await c.store.auditList({ target: `job:${run.id}` });
    assert.deepEqual(rows.map((r) => [r.action, r.actor, r.reason, r.details.runs]), [
      ["job.replay", "ada", "vendor fixed the feed", "live"],
    ]);
  });
}
