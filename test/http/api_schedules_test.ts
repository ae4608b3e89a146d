/**
 * `/api/v1/schedules` on every backend: a viewer reads the schedules view
 * and is refused (403, the role named) disabling or enabling; an operator
 * disables and enables through the command line's door, each audit row
 * naming the principal; an unknown schedule is 404; and a tenant's
 * principal is refused (403 `installation-scope-required`), since the
 * schedules are read and changed installation-wide.
 */

import assert from "node:assert/strict";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

/** Two schedules as a daemon syncs them: one of acme's, one installation-wide. */
async function twoSchedules(store: Store, now: number): Promise<void> {
  await store.schedulesSync({
    schedules: [
      { id: "acme-report", hash: "h1", tenant: "acme" },
      { id: "nightly", hash: "h2", tenant: null },
    ],
    now,
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer reads /api/v1/schedules and gets 403 naming the role on disable and enable`, async () => {
    await using api = await apiHarness(backend);
    await twoSchedules(api.store, api.clock.now());
    const viewer = await api.token("reader", ["viewer"]);
    const listed = await api.call("GET", "/api/v1/schedules", viewer);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.json.schedules.map((s: { id: string }) => s.id), [
      "acme-report",
      "nightly",
    ]);
    assert.equal(listed.json.schedules[1].definitionHash, "h2");
    for (const action of ["disable", "enable"]) {
      const refused = await api.call("POST", `/api/v1/schedules/nightly/${action}`, viewer, {
        reason: "vendor outage",
      });
      assert.equal(refused.status, 403, action);
      assert.equal(refused.json.error.code, "role-required");
      assert.match(refused.json.error.message, /"operator"/);
    }
    assert.equal((await api.store.schedulesList({ ids: ["nightly"] }))[0]?.enabled, true);
  });

  Deno.test(`${backend.name}: an operator disables and enables a schedule, audited with the token's name`, async () => {
    await using api = await apiHarness(backend);
    await twoSchedules(api.store, api.clock.now());
    const ops = await api.token("night-ops", ["operator"]);
    const disabled = await api.call("POST", "/api/v1/schedules/nightly/disable", ops, {
      reason: "vendor outage",
    });
    assert.equal(disabled.status, 200);
    assert.deepEqual(disabled.json, { schedule: "nightly", enabled: false, was: true });
    const [row] = await api.store.schedulesList({ ids: ["nightly"] });
    assert.equal(row?.enabled, false);
    assert.equal(row?.disabledBy, "token:night-ops");
    const view = await api.call("GET", "/api/v1/schedules", ops);
    const nightly = view.json.schedules.find((s: { id: string }) => s.id === "nightly");
    assert.equal(nightly.enabled, false);
    assert.equal(nightly.disabledIn, "store");
    assert.equal(nightly.disabledBy, "token:night-ops");
    assert.equal(typeof nightly.disabledAt, "string");
    const enabled = await api.call("POST", "/api/v1/schedules/nightly/enable", ops, {
      reason: "vendor back",
    });
    assert.equal(enabled.status, 200);
    assert.deepEqual(enabled.json, { schedule: "nightly", enabled: true, was: false });
    const old = await api.call("POST", "/api/v1/schedules/acme-report/disable", INSTALL_TOKEN, {
      reason: "customer paused",
    });
    assert.equal(old.status, 200);
    const rows = await api.store.auditList({ target: "schedule:nightly" });
    assert.deepEqual(
      rows.map((r) => [r.action, r.actor, r.reason]),
      [
        ["schedule.disable", "token:night-ops", "vendor outage"],
        ["schedule.enable", "token:night-ops", "vendor back"],
      ],
    );
    const [oldRow] = await api.store.auditList({ target: "schedule:acme-report" });
    assert.equal(oldRow?.actor, "token:installation");
    const placeholder = await api.call("POST", "/api/v1/schedules/nightly/disable", ops, {
      reason: "TODO",
    });
    assert.equal(placeholder.status, 400);
    assert.equal(placeholder.json.error.code, "reason-invalid");
    const noReason = await api.call("POST", "/api/v1/schedules/nightly/disable", ops, {});
    assert.equal(noReason.status, 400);
    const named = await api.call("POST", "/api/v1/schedules/nightly/disable", ops, {
      reason: "x y z",
      tenant: "acme",
    });
    assert.equal(named.status, 400);
  });

  Deno.test(`${backend.name}: disabling an unknown schedule is 404 and stores nothing`, async () => {
    await using api = await apiHarness(backend);
    await twoSchedules(api.store, api.clock.now());
    const ops = await api.token("ops", ["operator"]);
    for (const action of ["disable", "enable"]) {
      const missing = await api.call("POST", `/api/v1/schedules/nowhere/${action}`, ops, {
        reason: "a typo here",
      });
      assert.equal(missing.status, 404, action);
      assert.equal(missing.json.error.code, "schedule-not-found");
    }
    assert.deepEqual(await api.store.schedulesList({ ids: ["nowhere"] }), []);
    assert.deepEqual(await api.store.auditList({ target: "schedule:nowhere" }), []);
  });

  Deno.test(`${backend.name}: a tenant's principal sees and switches its tenant's schedules only`, async () => {
    await using api = await apiHarness(backend);
    await twoSchedules(api.store, api.clock.now());
    const acmeOps = await api.token("acme-ops", ["operator"], "acme");
    const acmeViewer = await api.token("acme-reader", ["viewer"], "acme");
    for (const secret of [acmeOps, acmeViewer]) {
      const listed = await api.call("GET", "/api/v1/schedules", secret);
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.json.schedules.map((s: { id: string }) => s.id), ["acme-report"]);
    }
    // The installation-wide schedule is not acme's: 404, as one that does not exist.
    for (const action of ["disable", "enable"]) {
      const refused = await api.call("POST", `/api/v1/schedules/nightly/${action}`, acmeOps, {
        reason: "not mine to change",
      });
      assert.equal(refused.status, 404, `${action} nightly: ${refused.text}`);
      assert.equal(refused.json.error.code, "schedule-not-found");
    }
    const off = await api.call("POST", "/api/v1/schedules/acme-report/disable", acmeOps, {
      reason: "acme's month-end freeze",
    });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual(off.json, { schedule: "acme-report", enabled: false, was: true });
    const viewerOff = await api.call("POST", "/api/v1/schedules/acme-report/enable", acmeViewer, {
      reason: "a viewer may not",
    });
    assert.equal(viewerOff.status, 403);
    const rows = await api.store.schedulesList({});
    assert.deepEqual(rows.map((r) => [r.id, r.enabled]), [["acme-report", false], [
      "nightly",
      true,
    ]]);
    const [row] = await api.store.auditList({ target: "schedule:acme-report" });
    assert.equal(row?.actor, "token:acme-ops");
    assert.deepEqual(await api.store.auditList({ target: "schedule:nightly" }), []);
  });
}
