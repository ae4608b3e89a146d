/**
 * The schedule views and actions of `src/admin/schedules.ts` for a tenant's
 * principal: given a tenant, each reads and acts on that tenant's schedules
 * only (the file's by their `tenant`, the store's in its statement);
 * without one (or null), installation-wide. On every backend.
 */

import assert from "node:assert/strict";
import {
  latestOccurrence,
  runScheduleNow,
  schedulesView,
  setScheduleEnabled,
  storedConfig,
} from "../../src/admin/schedules.ts";
import { parseSchedules } from "../../src/config/load.ts";
import { definitionHash, syncSchedules } from "../../src/runtime/planner.ts";
import { BACKENDS } from "../support/backends.ts";

const NOW = Date.UTC(2026, 11, 5, 9);

const CONFIG = (() => {
  const parsed = parseSchedules(
    [
      "version: 1",
      "schedules:",
      "  - id: nightly",
      '    cron: "0 2 * * *"',
      "    tenants: [acme, globex]",
      '    run: { command: ["true"] }',
      "  - id: shared",
      "    every: 1h",
      '    run: { command: ["true"] }',
    ].join("\n"),
    "schedules.yaml",
  );
  if (!parsed.ok) throw new Error(parsed.errors.map((e) => e.message).join("\n"));
  return parsed.config;
})();

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] the schedule views and actions given a tenant see and touch its schedules only`, async () => {
    const h = await backend.open(NOW);
    try {
      const { store } = h;
      await syncSchedules(store, NOW, CONFIG.schedules);
      const ids = async (tenant?: string | null) =>
        (await schedulesView(store, CONFIG, NOW, tenant)).map((s) => s.id);
      assert.deepEqual(await ids("acme"), ["nightly:acme"]);
      assert.deepEqual(await ids("globex"), ["nightly:globex"]);
      assert.deepEqual(await ids("initech"), []);
      assert.deepEqual(await ids(null), ["nightly:acme", "nightly:globex", "shared"]);
      assert.deepEqual(await ids(), await ids(null));
      // What the store last synced, for a tenant: its own definitions only.
      assert.deepEqual(
        (await storedConfig(store, "globex"))!.schedules.map((s) => [s.id, s.tenant]),
        [["nightly:globex", "globex"]],
      );

      const [acme, globex] = CONFIG.schedules;
      const who = { actor: "ops", reason: "checking", now: NOW };
      const declared = (s: typeof acme) => ({
        hash: definitionHash(s!),
        tenant: s!.tenant ?? null,
      });
      await assert.rejects(
        setScheduleEnabled(store, "nightly:globex", false, who, declared(globex), "acme"),
        /no schedule "nightly:globex" in the file or the store/,
      );
      await assert.rejects(
        runScheduleNow(store, globex!, who, null, "acme"),
        /no schedule "nightly:globex"/,
      );
      assert.deepEqual((await store.schedulesList({})).map((r) => r.enabled), [true, true, true]);

      const ran = await runScheduleNow(store, acme!, who, null, "acme");
      assert.equal(ran.occurrence, `nightly:acme@${new Date(NOW).toISOString()}`);
      assert.equal((await latestOccurrence(store, "nightly:acme", "acme"))?.id, ran.id);
      assert.equal((await latestOccurrence(store, "nightly:acme", "acme"))?.tenant, "acme");
      assert.equal(await latestOccurrence(store, "nightly:acme", "globex"), null);
    } finally {
      await h.close();
    }
  });
}
