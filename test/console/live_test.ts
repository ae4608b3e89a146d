/**
 * The console's shared poller (`src/console/live.ts`) on every backend: ten
 * viewers of one scope cost the store what one does, each watched scope is
 * read once a tick, nothing is read without a viewer, an unchanged snapshot
 * is not sent again, and a tenant's scope holds its tenant's counts only.
 * The work queues' claims cost one store call per scope a tick, whoever
 * watches, and a claim by someone else reaches every viewer.
 */

import assert from "node:assert/strict";
import { enqueueJob } from "../../src/admin/jobs.ts";
import { FakeClock } from "../../src/clock.ts";
import { LiveFeed, type LiveSnapshot } from "../../src/console/live.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { waitUntil } from "../../src/testing.ts";
import { BACKENDS } from "../support/backends.ts";
import type { Store } from "../../src/store/store.ts";
import { compileWorkQueue } from "../../src/workqueue/definition.ts";

const DISPUTES = compileWorkQueue({
  id: "disputes",
  claim: "required",
  leaseMs: 3_600_000,
  actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: ten viewers of a scope cost one read a tick; a tenant's scope is its own`, async () => {
    const clock = new FakeClock();
    const h = await backend.open(clock.now());
    const who = { actor: "root", reason: null, now: clock.now() };
    await enqueueJob(h.store, "send", {}, { queue: "mail", tenant: "acme" }, who);
    await enqueueJob(h.store, "send", {}, { queue: "mail", tenant: "globex" }, who);
    const feed = new LiveFeed(h.store, clock, silentLogger, 1000);
    /** Waits until the poller is parked in its sleep (its reads done): a tick can start. */
    const parked = () => waitUntil("the poller parked", () => clock.sleepers === 1);
    /** One tick of the poller: the reads it made. */
    const tick = async () => {
      await parked();
      const before = feed.reads;
      clock.advance(1000);
      await waitUntil("the tick's reads", () => feed.reads > before);
      await parked();
      return feed.reads - before;
    };
    try {
      // No viewer: nothing is read, however long.
      clock.advance(5000);
      assert.equal(feed.reads, 0);

      const one: LiveSnapshot[] = [];
      const stopOne = feed.subscribe(null, (s) => one.push(s));
      await waitUntil("the first snapshot", () => one.length === 1);
      assert.deepEqual(one[0]!.queues, { mail: { available: 2 } });
      assert.equal(one[0]!.jobs!.available, 2, "the installation's totals by state");
      assert.equal(one[0]!.jobs!.failed ?? one[0]!.jobs!.discarded, 0);
      assert.equal(await tick(), 1);
      // Nothing changed: nothing is sent again.
      assert.equal(one.length, 1);

      // Nine more viewers of the same scope: still one read a tick.
      const many: LiveSnapshot[][] = [];
      const stops = Array.from({ length: 9 }, () => {
        const got: LiveSnapshot[] = [];
        many.push(got);
        return feed.subscribe(null, (s) => got.push(s));
      });
      await waitUntil("the newcomers' first snapshot", () => many.every((g) => g.length === 1));
      for (let n = 1; n <= 5; n++) assert.equal(await tick(), 1, "ten viewers: one read a tick");

      // A change reaches every viewer once.
      await enqueueJob(h.store, "send", {}, { queue: "mail" }, who);
      await tick();
      await waitUntil("the change", () => many.every((g) => g.length === 2) && one.length === 2);
      assert.deepEqual(one[1]!.queues, { mail: { available: 3 } });

      // A tenant's viewer: its own scope, one more read a tick, its counts only.
      const acme: LiveSnapshot[] = [];
      const stopAcme = feed.subscribe("acme", (s) => acme.push(s));
      await waitUntil("acme's snapshot", () => acme.length === 1);
      assert.equal(acme[0]!.jobs!.available, 1);
      assert.equal(acme[0]!.queues, undefined);
      assert.equal(acme[0]!.nodes, undefined);
      assert.equal(await tick(), 2, "two scopes: two reads a tick");

      // Everyone leaves: the poller stops reading.
      stopOne();
      for (const stop of stops) stop();
      stopAcme();
      await parked();
      clock.advance(1000);
      await waitUntil("the poller to stop", () => clock.sleepers === 0);
      const last = feed.reads;
      clock.advance(10_000);
      assert.equal(feed.reads, last, "nobody watches: nothing is read");
    } finally {
      await feed.close();
      await h.close();
    }
  });

  Deno.test(`${backend.name}: work queues' claims cost one store call per scope a tick, and a claim reaches every viewer`, async () => {
    const clock = new FakeClock();
    const h = await backend.open(clock.now());
    let summaries = 0;
    const counted = new Proxy(h.store, {
      get(target, name, receiver) {
        if (name === "workItemsSummary") {
          return (params: Parameters<Store["workItemsSummary"]>[0]) => {
            summaries++;
            return target.workItemsSummary(params);
          };
        }
        const value = Reflect.get(target, name, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    for (const [key, tenant] of [["a", null], ["b", null], ["t", "acme"]] as const) {
      await h.store.workItemAdd({
        queue: "disputes",
        key,
        tenant,
        data: {},
        score: null,
        actor: "root",
        now: clock.now(),
      });
    }
    const feed = new LiveFeed(counted, clock, silentLogger, 1000, () => [DISPUTES]);
    const parked = () => waitUntil("the poller parked", () => clock.sleepers === 1);
    const tick = async () => {
      await parked();
      const before = summaries;
      clock.advance(1000);
      await waitUntil("the tick's reads", () => summaries > before);
      await parked();
      return summaries - before;
    };
    try {
      const viewers = Array.from({ length: 10 }, () => [] as LiveSnapshot[]);
      const stops = viewers.map((got) => feed.subscribe(null, (s) => got.push(s)));
      await waitUntil("every first snapshot", () => viewers.every((g) => g.length === 1));
      assert.equal(viewers[0]![0]!.work!.disputes!.open, 3);
      assert.equal(viewers[0]![0]!.work!.disputes!.claimed, 0);
      for (let n = 1; n <= 3; n++) assert.equal(await tick(), 1, "ten viewers: one call a tick");

      // Someone claims: every viewer gets the new count and a new marker.
      const marker = viewers[0]![0]!.work!.disputes!.marker;
      await h.store.workItemNext({
        queue: "disputes",
        person: "bob",
        now: clock.now(),
        leaseMs: 3_600_000,
      });
      await tick();
      await waitUntil("the claim", () => viewers.every((g) => g.length === 2));
      assert.equal(viewers[3]![1]!.work!.disputes!.claimed, 1);
      assert.notEqual(viewers[3]![1]!.work!.disputes!.marker, marker);

      // A tenant's viewer: its own scope's items, one more call a tick.
      const acme: LiveSnapshot[] = [];
      const stopAcme = feed.subscribe("acme", (s) => acme.push(s));
      await waitUntil("acme's snapshot", () => acme.length === 1);
      assert.equal(acme[0]!.work!.disputes!.open, 1);
      assert.equal(await tick(), 2, "two scopes: two calls a tick");
      for (const stop of stops) stop();
      stopAcme();
    } finally {
      await feed.close();
      await h.close();
    }
  });
}
