/**
 * `GET /api/v1/schedules/{id}/next` and `POST /api/v1/schedules/{id}/run`
 * on every backend: the next occurrences as `jobs next --json` shows them
 * (daylight-saving notes included), from the definition the store last
 * synced; a run now through `jobs run`'s door, audited with the token's
 * name, a guarded schedule's refusal a 409 `guard-refused`. A viewer reads
 * and cannot run; unknown schedules are 404, a schedule without a stored
 * definition 409; a tenant's principal is refused (403), as for every
 * schedules route.
 */

import assert from "node:assert/strict";
import { syncSchedules } from "../../src/runtime/planner.ts";
import { BACKENDS } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

type Api = Awaited<ReturnType<typeof apiHarness>>;

/**
 * As a daemon syncs them: `nightly` (02:30 New York time), `reindex`
 * (manual, runs only where the environment is staging), and `legacy`, a row
 * an older daemon synced without its definition.
 */
async function schedules(api: Api): Promise<void> {
  const now = api.clock.now();
  await syncSchedules(api.store, now, [
    scheduleOf({
      id: "nightly",
      cron: "30 2 * * *",
      timezone: "America/New_York",
      local_time: { reason: "the office runs on New York time", gap: "shift", overlap: "first" },
      queue: "reports",
      run: { command: ["true"] },
    }),
    scheduleOf({
      id: "reindex",
      manual: true,
      guard: "on-call only",
      runs_where: "staging",
      run: { command: ["echo", "reindex"] },
    }),
  ]);
  await api.store.schedulesSync({ schedules: [{ id: "legacy", hash: "h0", tenant: null }], now });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: GET /api/v1/schedules/{id}/next answers the next occurrences as jobs next --json, DST notes included`, async () => {
    await using api = await apiHarness(backend);
    await schedules(api);
    const viewer = await api.token("reader", ["viewer"]);
    const three = await api.call(
      "GET",
      "/api/v1/schedules/nightly/next?count=3&from=2026-03-07T12:00:00Z",
      viewer,
    );
    assert.equal(three.status, 200);
    assert.deepEqual(three.json, {
      schedule: "nightly",
      timezone: "America/New_York",
      manual: false,
      occurrences: [
        {
          at: "2026-03-08T07:30:00.000Z",
          occurrence: "nightly@2026-03-08T07:30:00.000Z",
          local: "2026-03-08T03:30:00-04:00[America/New_York]",
          note: "shifted: 02:30 does not exist on 2026-03-08",
        },
        {
          at: "2026-03-09T06:30:00.000Z",
          occurrence: "nightly@2026-03-09T06:30:00.000Z",
          local: "2026-03-09T02:30:00-04:00[America/New_York]",
          note: null,
        },
        {
          at: "2026-03-10T06:30:00.000Z",
          occurrence: "nightly@2026-03-10T06:30:00.000Z",
          local: "2026-03-10T02:30:00-04:00[America/New_York]",
          note: null,
        },
      ],
    });
    // From the clock's now (2026-01-01T00:00Z), five by default.
    const five = await api.call("GET", "/api/v1/schedules/nightly/next", viewer);
    assert.equal(five.status, 200);
    assert.equal(five.json.occurrences.length, 5);
    assert.equal(five.json.occurrences[0].at, "2026-01-01T07:30:00.000Z");
    const hundred = await api.call("GET", "/api/v1/schedules/nightly/next?count=100", viewer);
    assert.equal(hundred.json.occurrences.length, 100);
    const manual = await api.call("GET", "/api/v1/schedules/reindex/next", viewer);
    assert.equal(manual.status, 200);
    assert.equal(manual.json.manual, true);
    assert.deepEqual(manual.json.occurrences, []);
  });

  Deno.test(`${backend.name}: next refuses bad queries (400), unknown schedules (404), stored rows without a definition (409), another tenant's (404)`, async () => {
    await using api = await apiHarness(backend);
    await schedules(api);
    const viewer = await api.token("reader", ["viewer"]);
    for (const query of ["count=0", "count=101", "count=abc", "from=yesterday", "tenant=acme"]) {
      const refused = await api.call("GET", `/api/v1/schedules/nightly/next?${query}`, viewer);
      assert.equal(refused.status, 400, query);
      assert.equal(refused.json.error.code, "query-invalid");
    }
    for (const id of ["nowhere", "x".repeat(300)]) {
      const missing = await api.call("GET", `/api/v1/schedules/${id}/next`, viewer);
      assert.equal(missing.status, 404);
      assert.equal(missing.json.error.code, "schedule-not-found");
    }
    const legacy = await api.call("GET", "/api/v1/schedules/legacy/next", viewer);
    assert.equal(legacy.status, 409);
    assert.equal(legacy.json.error.code, "definition-unavailable");
    const acme = await api.token("acme-reader", ["viewer"], "acme");
    // An installation-wide schedule is not acme's: 404, as one that does not exist.
    const tenant = await api.call("GET", "/api/v1/schedules/nightly/next", acme);
    assert.equal(tenant.status, 404);
    assert.equal(tenant.json.error.code, "schedule-not-found");
  });

  Deno.test(`${backend.name}: an operator runs a schedule now (201, the job id), audited with the token; a viewer gets 403`, async () => {
    await using api = await apiHarness(backend);
    await schedules(api);
    const viewer = await api.token("reader", ["viewer"]);
    const refused = await api.call("POST", "/api/v1/schedules/nightly/run", viewer, {
      reason: "the board meets early",
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, "role-required");
    assert.match(refused.json.error.message, /"operator"/);
    assert.deepEqual(await api.store.jobsList({ limit: 10 }), []);

    const ops = await api.token("night-ops", ["operator"]);
    const ran = await api.call("POST", "/api/v1/schedules/nightly/run", ops, {
      reason: "the board meets early",
    });
    assert.equal(ran.status, 201);
    assert.equal(ran.json.schedule, "nightly");
    assert.deepEqual(ran.json.ids, [ran.json.id]);
    assert.equal(ran.json.occurrence, "nightly@2026-01-01T00:00:00.000Z");
    assert.equal(ran.json.queue, "reports");
    const job = await api.store.jobGet({ id: ran.json.id });
    assert.equal(job?.scheduleId, "nightly");
    assert.equal(job?.occurrence, ran.json.occurrence);
    assert.equal(job?.meta.manual, true);
    const [row] = await api.store.auditList({ target: "schedule:nightly" });
    assert.equal(row?.action, "schedule.run");
    assert.equal(row?.actor, "token:night-ops");
    assert.equal(row?.reason, "the board meets early");

    // The same instant again: the occurrence exists, nothing new.
    const again = await api.call("POST", "/api/v1/schedules/nightly/run", ops, {
      reason: "the board meets early",
    });
    assert.equal(again.status, 409);
    assert.equal(again.json.error.code, "occurrence-exists");
    api.clock.advance(1000);
    const old = await api.call("POST", "/api/v1/schedules/nightly/run", INSTALL_TOKEN, {
      reason: "from the old token",
    });
    assert.equal(old.status, 201);
    assert.equal(
      (await api.store.auditList({ target: "schedule:nightly" })).at(-1)?.actor,
      "token:installation",
    );
    assert.equal((await api.store.jobsList({ limit: 10 })).length, 2);
  });

  Deno.test(`${backend.name}: a guarded schedule's refusal is 409 guard-refused; in its environment it runs`, async () => {
    await using api = await apiHarness(backend);
    await schedules(api);
    const ops = await api.token("ops", ["operator"]);
    const guarded = await api.call("POST", "/api/v1/schedules/reindex/run", ops, {
      reason: "index corrupted",
    });
    assert.equal(guarded.status, 409);
    assert.equal(guarded.json.error.code, "guard-refused");
    assert.match(guarded.json.error.message, /"staging", and this is not set/);
    const elsewhere = await api.call("POST", "/api/v1/schedules/reindex/run", ops, {
      reason: "index corrupted",
      environment: "production",
    });
    assert.equal(elsewhere.status, 409);
    assert.equal(elsewhere.json.error.code, "guard-refused");
    assert.match(elsewhere.json.error.message, /"production"/);
    assert.deepEqual(await api.store.jobsList({ limit: 10 }), []);
    assert.deepEqual(await api.store.auditList({ target: "schedule:reindex" }), []);
    const staging = await api.call("POST", "/api/v1/schedules/reindex/run", ops, {
      reason: "index corrupted",
      environment: "staging",
    });
    assert.equal(staging.status, 201);
    const job = await api.store.jobGet({ id: staging.json.id });
    assert.equal(job?.meta.runsWhere, "staging");
    const [row] = await api.store.auditList({ target: "schedule:reindex" });
    assert.equal(row?.actor, "token:ops");
  });

  Deno.test(`${backend.name}: run refuses bad bodies (400), unknown schedules (404), stored rows without a definition (409), another tenant's (404)`, async () => {
    await using api = await apiHarness(backend);
    await schedules(api);
    const ops = await api.token("ops", ["operator"]);
    const cases: [unknown, string, RegExp][] = [
      [{}, "body-invalid", /"reason"/],
      [{ reason: "n/a" }, "reason-invalid", /not a reason/],
      [{ reason: "a real one", tenant: "acme" }, "body-invalid", /unknown field "tenant"/],
      [{ reason: "a real one", environment: "" }, "body-invalid", /"environment"/],
    ];
    for (const [body, code, message] of cases) {
      const refused = await api.call("POST", "/api/v1/schedules/nightly/run", ops, body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.json.error.code, code);
      assert.match(refused.json.error.message, message);
    }
    const missing = await api.call("POST", "/api/v1/schedules/nowhere/run", ops, {
      reason: "a typo here",
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.code, "schedule-not-found");
    const legacy = await api.call("POST", "/api/v1/schedules/legacy/run", ops, {
      reason: "an old one",
    });
    assert.equal(legacy.status, 409);
    assert.equal(legacy.json.error.code, "definition-unavailable");
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const tenant = await api.call("POST", "/api/v1/schedules/nightly/run", acme, {
      reason: "mine to run",
    });
    assert.equal(tenant.status, 404);
    assert.equal(tenant.json.error.code, "schedule-not-found");
    assert.deepEqual(await api.store.jobsList({ limit: 10 }), []);
  });
}
