/**
 * The console's Queues and Schedules routes in process, on every backend
 * (the browser tests are `test/e2e/console_schedules_test.ts`): hostile
 * names and reasons are escaped; a tenant's person sees no queue and their
 * queue POST is 403, another tenant's schedule is a 404 on its page and its
 * actions; a placeholder reason is refused (400) with nothing written; a
 * guard that refuses is a 409 naming why; a viewer's POST is 403.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { BACKENDS, newJob } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";

const ORIGIN = "http://127.0.0.1:9464";
const HOSTILE = `<img src=x onerror=alert(1)>`;

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the console's queues and schedules keep to the person's scope and roles`, async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 7, 12));
    const h = await backend.open(clock.now());
    try {
      const app = consoleApp({ store: h.store, clock, logger: () => {} });
      const root = { actor: "root", reason: null, now: clock.now() };
      for (
        const [name, roles, tenant] of [
          ["ada", ["admin"], null],
          ["vic", ["viewer"], null],
          ["amy", ["operator"], "acme"],
        ] as const
      ) {
        await addPerson(h.store, { name, roles: [...roles], tenant, password: "pw" }, root, "host");
      }
      await h.store.jobsInsert({
        jobs: [newJob({ queue: HOSTILE, scheduledAt: clock.now() })],
        now: clock.now(),
      });
      await syncSchedules(h.store, clock.now(), [
        scheduleOf({
          id: "nightly",
          cron: "30 2 * * *",
          timezone: "America/New_York",
          local_time: { reason: HOSTILE, gap: "shift", overlap: "first" },
        }),
        { ...scheduleOf({ id: "tick", every: "1m" }), id: "tick:acme", tenant: "acme" },
        { ...scheduleOf({ id: "tick", every: "1m" }), id: "tick:globex", tenant: "globex" },
        scheduleOf({ id: "reindex", manual: true, guard: "on-call", runs_where: "staging" }),
      ]);
      const call = async (method: string, path: string, cookie: string, body?: string) => {
        const response = await app.fetch(
          new Request(`${ORIGIN}${path}`, {
            method,
            redirect: "manual",
            headers: {
              cookie: `${SESSION_COOKIE}=${cookie}`,
              "sec-fetch-site": "same-origin",
              ...(body === undefined
                ? {}
                : { "content-type": "application/x-www-form-urlencoded" }),
            },
            ...(body === undefined ? {} : { body }),
          }),
          { remote: "127.0.0.1" },
        );
        return { status: response.status, text: await response.text() };
      };
      const signIn = async (name: string) => {
        const response = await app.fetch(
          new Request(`${ORIGIN}/login`, {
            method: "POST",
            headers: {
              "sec-fetch-site": "same-origin",
              "content-type": "application/x-www-form-urlencoded",
            },
            body: `name=${name}&password=pw`,
          }),
          { remote: "127.0.0.1" },
        );
        return /=([\w-]+);/.exec(response.headers.get("set-cookie") ?? "")![1]!;
      };
      const ada = await signIn("ada");
      const vic = await signIn("vic");
      const amy = await signIn("amy");

      const queues = await call("GET", "/queues", ada);
      assert.equal(queues.status, 200);
      assert.ok(!queues.text.includes(HOSTILE), "the hostile queue name is escaped");
      assert.ok(queues.text.includes("&lt;img src=x onerror=alert(1)&gt;"));
      assert.ok(queues.text.includes(`action="/queues/${encodeURIComponent(HOSTILE)}/pause"`));

      const list = await call("GET", "/schedules", ada);
      assert.equal(list.status, 200);
      assert.ok(!list.text.includes(HOSTILE));
      assert.match(list.text, /shifted: 02:30 does not exist on 2026-03-08/);

      const placeholder = await call("POST", "/schedules/nightly/disable", ada, "reason=TODO");
      assert.equal(placeholder.status, 400);
      assert.match(placeholder.text, /is not a reason/);
      assert.equal((await h.store.schedulesList({ ids: ["nightly"] }))[0]?.enabled, true);
      const disabled = await call("POST", "/schedules/nightly/disable", ada, "reason=outage");
      assert.equal(disabled.status, 303);
      assert.equal((await h.store.schedulesList({ ids: ["nightly"] }))[0]?.enabled, false);

      const guard = await call(
        "POST",
        "/schedules/reindex/run",
        ada,
        "reason=reindex+now&environment=production",
      );
      assert.equal(guard.status, 409);
      assert.match(guard.text, /runs only where the environment is &quot;staging&quot;/);

      assert.equal((await call("POST", "/queues/x/pause", vic, "reason=outage")).status, 403);
      assert.equal((await call("POST", "/schedules/nightly/enable", vic, "reason=ok")).status, 403);
      const viewerPage = await call("GET", "/schedules/nightly", vic);
      assert.equal(viewerPage.status, 200);
      assert.ok(!viewerPage.text.includes('method="post" action="/schedules'));

      const tenantQueues = await call("GET", "/queues", amy);
      assert.equal(tenantQueues.status, 200);
      assert.ok(!tenantQueues.text.includes("alert(1)"), "no queue shown to a tenant's person");
      const tenantPause = await call(
        "POST",
        `/queues/${encodeURIComponent(HOSTILE)}/pause`,
        amy,
        "reason=outage",
      );
      assert.equal(tenantPause.status, 403);
      const own = await call("GET", "/schedules", amy);
      assert.ok(own.text.includes("tick:acme"));
      assert.ok(!own.text.includes("globex") && !own.text.includes("nightly"));
      assert.equal((await call("GET", "/schedules/tick%3Aacme", amy)).status, 200);
      assert.equal((await call("GET", "/schedules/tick%3Aglobex", amy)).status, 404);
      assert.equal(
        (await call("POST", "/schedules/tick%3Aglobex/disable", amy, "reason=outage")).status,
        404,
      );
      assert.equal((await h.store.schedulesList({ ids: ["tick:globex"] }))[0]?.enabled, true);
    } finally {
      await h.close();
    }
  });
}
