/**
 * The console's bulk actions over a filter, in process, on every backend
 * (the browser test is `test/e2e/console_bulk_test.ts`): the confirmation
 * shows the count before anything changes, the start snapshots in the
 * person's scope and leads to the run's progress page (refreshing itself
 * while running), the worker completes it, an abort is audited; a
 * tenant's person neither sees nor aborts another tenant's run (404); a
 * viewer gets no form and a 403 when posting by hand; a placeholder
 * reason is refused.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { bulkWorker } from "../../src/admin/bulk_worker.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { performJob } from "../../src/testing.ts";
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
  return { ...h, clock, call, signIn, [Symbol.asyncDispose]: () => h.close() };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console's bulk actions preview, start, progress and abort`, async () => {
    await using c = await harness(backend);
    const now = c.clock.now();
    const jobs = [
      ...Array.from(
        { length: 30 },
        () => newJob({ queue: "mail", tenant: "acme", scheduledAt: now }),
      ),
      ...Array.from(
        { length: 5 },
        () => newJob({ queue: "mail", tenant: "globex", scheduledAt: now }),
      ),
    ];
    const ids = (await c.store.jobsInsert({ jobs, now })).map((r) => r.id);
    await c.store.jobsDiscard({ ids, now, reason: "smtp down" });
    const ann = await c.signIn("ann", ["operator"], "acme");
    const gil = await c.signIn("gil", ["operator"], "globex");
    const vic = await c.signIn("vic", ["viewer"]);

    const list = await c.call("GET", "/jobs?state=discarded&queue=mail", ann);
    assert.match(list.text, /Retry all 30\s+matching/);
    assert.doesNotMatch((await c.call("GET", "/jobs?state=discarded", vic)).text, /all 35/);

    const preview = await c.call("GET", "/jobs/bulk?action=retry&state=discarded&queue=mail", ann);
    assert.equal(preview.status, 200, preview.text);
    assert.match(preview.text, /data-preview-count="30"/);
    assert.equal(await c.store.jobsCountMatching({ state: "discarded" }), 35, "nothing changed");
    const viewerPreview = await c.call("GET", "/jobs/bulk?action=retry&state=discarded", vic);
    assert.match(viewerPreview.text, /data-preview-count="35"/);
    assert.doesNotMatch(viewerPreview.text, /data-bulk-confirm/);

    const form = "action=retry&filter=state%3Ddiscarded%26queue%3Dmail&reason=";
    assert.equal((await c.call("POST", "/jobs/bulk", vic, `${form}smtp+back`)).status, 403);
    assert.equal((await c.call("POST", "/jobs/bulk", ann, `${form}TODO`)).status, 400);
    const started = await c.call("POST", "/jobs/bulk", ann, `${form}smtp+back`);
    assert.equal(started.status, 303, started.text);
    const where = started.headers.get("location")!;
    const id = Number(/^\/bulk\/(\d+)$/.exec(where)![1]);
    const running = await c.call("GET", where, ann);
    assert.match(running.text, /http-equiv="refresh"/);
    assert.match(running.text, /data-bulk-state="running"/);
    assert.match(running.text, /0 of 30/);
    assert.match(running.text, /data-bulk-abort/);
    assert.equal((await c.call("GET", where, gil)).status, 404);
    assert.equal((await c.call("POST", `${where}/abort`, gil, "")).status, 404);
    assert.equal((await c.call("POST", `${where}/abort`, vic, "")).status, 403);
    assert.doesNotMatch((await c.call("GET", "/bulk", gil)).text, new RegExp(`href="/bulk/${id}"`));
    assert.match((await c.call("GET", "/bulk", ann)).text, new RegExp(`href="/bulk/${id}"`));

    await performJob(bulkWorker({ store: () => c.store, clock: c.clock }), {
      kind: "bulk",
      run: id,
    });
    const done = await c.call("GET", where, ann);
    assert.match(done.text, /data-bulk-state="completed"/);
    assert.match(done.text, /30 of 30/);
    assert.doesNotMatch(done.text, /http-equiv="refresh"/);
    assert.equal(await c.store.jobsCountMatching({ state: "discarded", tenant: "globex" }), 5);
    const audits = await c.store.auditPage({ action: "job.retry", limit: 100 });
    assert.equal(audits.length, 30);
    assert.ok(audits.every((a) => a.actor === "ann" && a.reason === "smtp back"));

    const none = "action=cancel&filter=queue%3Dnone&reason=stop+it";
    assert.equal((await c.call("POST", "/jobs/bulk", gil, none)).status, 400, "nothing matches");
    const second = await c.call("POST", "/jobs/bulk", gil, "action=retry&filter=&reason=again");
    const other = second.headers.get("location")!;
    assert.equal((await c.call("POST", `${other}/abort`, gil, "")).status, 303);
    assert.doesNotMatch((await c.call("GET", other, gil)).text, /data-bulk-abort/);
    await performJob(bulkWorker({ store: () => c.store, clock: c.clock }), {
      kind: "bulk",
      run: Number(other.split("/").at(-1)),
    });
    assert.match((await c.call("GET", other, gil)).text, /data-bulk-state="aborted"/);
    assert.equal(await c.store.jobsCountMatching({ state: "discarded", tenant: "globex" }), 5);
    const aborts = await c.store.auditPage({ action: "bulk.abort", limit: 10 });
    assert.deepEqual(aborts.map((a) => a.actor), ["gil"]);
  });
}
