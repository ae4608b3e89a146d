/**
 * `/api/v1/settings` on every backend: every role reads the settings of
 * `jobs settings`; only an admin sets and unsets one (a viewer and an
 * operator get 403 naming the role), through the command line's door,
 * audited as `token:<name>`; a refused value is 400 with the door's
 * message, an unknown key 404, a missing reason 400; a secret the store
 * keeps among its settings (the reports' download secret) is never shown
 * nor changed; a tenant's principal is refused (403).
 */

import assert from "node:assert/strict";
import { DOWNLOAD_SECRET_KEY } from "../../src/admin/reports.ts";
import { BACKENDS } from "../support/backends.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

const KEY = "reports.request_budget";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer reads /api/v1/settings; a viewer and an operator get 403 on set and unset`, async () => {
    await using api = await apiHarness(backend);
    const viewer = await api.token("reader", ["viewer"]);
    const ops = await api.token("ops", ["operator"]);
    const listed = await api.call("GET", "/api/v1/settings", viewer);
    assert.equal(listed.status, 200);
    const budget = listed.json.settings.find((s: { key: string }) => s.key === KEY);
    assert.deepEqual(
      [budget.value, budget.display, budget.source, budget.changed],
      [2000, "2s", "default", null],
    );
    for (const secret of [viewer, ops]) {
      const set = await api.call("PUT", `/api/v1/settings/${KEY}`, secret, {
        value: "5s",
        reason: "slow reports",
      });
      assert.equal(set.status, 403);
      assert.equal(set.json.error.code, "role-required");
      assert.match(set.json.error.message, /"admin"/);
      const unset = await api.call("POST", `/api/v1/settings/${KEY}/unset`, secret, {
        reason: "back",
      });
      assert.equal(unset.status, 403);
      assert.equal(unset.json.error.code, "role-required");
    }
    assert.equal(await api.store.settingGet({ key: KEY }), null);
  });

  Deno.test(`${backend.name}: an admin sets and unsets a setting, audited as the token; bad values, keys and reasons refused`, async () => {
    await using api = await apiHarness(backend, {
      settingReports: () => [{ id: "statement", limits: { max_rows: 1000 } }],
    });
    const admin = await api.token("boss", ["admin"]);
    const set = await api.call("PUT", `/api/v1/settings/${KEY}`, admin, {
      value: "5s",
      reason: "slow reports",
    });
    assert.equal(set.status, 200);
    assert.deepEqual(set.json, {
      key: KEY,
      changed: true,
      value: 5000,
      display: "5s",
      source: "setting",
      was: { value: 2000, display: "2s", source: "default" },
    });
    assert.equal(await api.store.settingGet({ key: KEY }), 5000);
    const listed = await api.call("GET", "/api/v1/settings", admin);
    const budget = listed.json.settings.find((s: { key: string }) => s.key === KEY);
    assert.equal(budget.changed.actor, "token:boss");
    assert.equal(budget.changed.reason, "slow reports");
    assert.equal(typeof budget.changed.at, "string");
    const rows = listed.json.settings.find((s: { key: string }) =>
      s.key === "report.statement.max_rows"
    );
    assert.deepEqual([rows.value, rows.source], [1000, "file"]);
    const count = await api.call("PUT", "/api/v1/settings/report.statement.max_rows", admin, {
      value: 500,
      reason: "statement too big",
    });
    assert.equal(count.status, 200);
    assert.equal(count.json.value, 500);

    const bad = await api.call("PUT", `/api/v1/settings/${KEY}`, admin, {
      value: "soon",
      reason: "x",
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, "value-invalid");
    assert.match(bad.json.error.message, /reports\.request_budget/);
    const noReason = await api.call("PUT", `/api/v1/settings/${KEY}`, admin, { value: "9s" });
    assert.equal(noReason.status, 400);
    assert.equal(noReason.json.error.code, "reason-required");
    const unknown = await api.call("PUT", "/api/v1/settings/reports.request_budgt", admin, {
      value: "9s",
      reason: "typo",
    });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, "setting-not-found");
    assert.match(unknown.json.error.message, /did you mean "reports\.request_budget"/);
    for (
      const body of [{ value: "9s", reason: "x", tenant: "acme" }, { reason: "x" }, {
        value: -3,
        reason: "x",
      }]
    ) {
      const refused = await api.call("PUT", `/api/v1/settings/${KEY}`, admin, body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.json.error.code, "body-invalid");
    }
    assert.equal(await api.store.settingGet({ key: KEY }), 5000);

    const unset = await api.call("POST", `/api/v1/settings/${KEY}/unset`, INSTALL_TOKEN, {
      reason: "back to the default",
    });
    assert.equal(unset.status, 200);
    assert.deepEqual([unset.json.changed, unset.json.value, unset.json.source], [
      true,
      2000,
      "default",
    ]);
    const twice = await api.call("POST", `/api/v1/settings/${KEY}/unset`, admin, {
      reason: "again",
    });
    assert.deepEqual([twice.status, twice.json.changed], [200, false]);
    const noReasonUnset = await api.call("POST", `/api/v1/settings/${KEY}/unset`, admin, {});
    assert.equal(noReasonUnset.status, 400);
    assert.equal(noReasonUnset.json.error.code, "reason-required");
    const audit = await api.store.auditList({ target: `setting:${KEY}` });
    assert.deepEqual(audit.map((r) => [r.action, r.actor, r.reason]), [
      ["setting.set", "token:boss", "slow reports"],
      ["setting.unset", "token:installation", "back to the default"],
    ]);
  });

  Deno.test(`${backend.name}: the reports' download secret is never shown nor changed through /api/v1/settings`, async () => {
    await using api = await apiHarness(backend);
    const value = "c2VjcmV0LWRvd25sb2FkLWtleS1vZi10aGUtcmVwb3J0cw==";
    await api.store.settingSet({ key: DOWNLOAD_SECRET_KEY, value, now: api.clock.now() });
    const admin = await api.token("boss", ["admin"]);
    const listed = await api.call("GET", "/api/v1/settings", admin);
    assert.equal(listed.status, 200);
    assert.ok(!listed.text.includes(value));
    assert.ok(!listed.text.includes(DOWNLOAD_SECRET_KEY));
    const set = await api.call("PUT", `/api/v1/settings/${DOWNLOAD_SECRET_KEY}`, admin, {
      value: "1",
      reason: "steal",
    });
    assert.equal(set.status, 404);
    assert.ok(!set.text.includes(value));
    const unset = await api.call("POST", `/api/v1/settings/${DOWNLOAD_SECRET_KEY}/unset`, admin, {
      reason: "steal",
    });
    assert.equal(unset.status, 404);
    assert.equal(await api.store.settingGet({ key: DOWNLOAD_SECRET_KEY }), value);
  });

  Deno.test(`${backend.name}: a tenant's principal is refused the settings routes (403), nothing changed`, async () => {
    await using api = await apiHarness(backend);
    const acmeAdmin = await api.token("acme-admin", ["admin"], "acme");
    const listed = await api.call("GET", "/api/v1/settings", acmeAdmin);
    assert.equal(listed.status, 403);
    assert.equal(listed.json.error.code, "installation-scope-required");
    const set = await api.call("PUT", `/api/v1/settings/${KEY}`, acmeAdmin, {
      value: "5s",
      reason: "mine",
    });
    assert.equal(set.status, 403);
    assert.equal(set.json.error.code, "installation-scope-required");
    const unset = await api.call("POST", `/api/v1/settings/${KEY}/unset`, acmeAdmin, {
      reason: "mine",
    });
    assert.equal(unset.status, 403);
    assert.equal(await api.store.settingGet({ key: KEY }), null);
  });
}
