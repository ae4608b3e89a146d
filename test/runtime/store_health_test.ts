/**
 * StoreHealth on a FakeClock: degraded while any step's last call failed,
 * one line when an outage begins, at most one per interval while it lasts,
 * one when the last failing step succeeds again.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { StoreHealth } from "../../src/runtime/store_health.ts";

function setUp() {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const health = new StoreHealth(
    { clock, logger: (event, fields) => events.push({ event, fields }) },
    { logEveryMs: 30_000 },
  );
  return { clock, events, health };
}

Deno.test("StoreHealth logs a thousand failures over two minutes in at most five lines", () => {
  const { clock, events, health } = setUp();
  const start = clock.now();
  for (let i = 0; i < 1000; i++) {
    health.failed(i % 2 ? "heartbeat" : "producer:default", new Error("database is locked\nstack"));
    clock.advance(120);
  }
  assert.equal(events[0]?.event, "store.degraded");
  assert.deepEqual(events[0]?.fields, { source: "producer:default", error: "database is locked" });
  const errors = events.filter((e) => e.event === "store.error");
  assert.ok(errors.length >= 3 && errors.length <= 4, JSON.stringify(events));
  assert.ok(errors.every((e) => Number(e.fields.failures) > 100));
  assert.deepEqual(health.status(), {
    ok: false,
    since: start,
    source: "producer:default",
    error: "database is locked",
  });
  assert.deepEqual(health.errors(), [
    { source: "producer:default", count: 500 },
    { source: "heartbeat", count: 500 },
  ]);
});

Deno.test("StoreHealth stays degraded until every failing step has succeeded", () => {
  const { clock, events, health } = setUp();
  health.succeeded("heartbeat");
  assert.equal(events.length, 0, "a success while healthy says nothing");
  health.failed("heartbeat", new Error("attempt to write a readonly database"));
  clock.advance(1000);
  health.failed("planner", new Error("attempt to write a readonly database"));
  health.succeeded("heartbeat");
  assert.ok(health.degraded, "the planner still fails");
  const status = health.status();
  assert.ok(!status.ok && status.source === "planner");
  clock.advance(2000);
  health.succeeded("planner");
  assert.ok(!health.degraded);
  assert.deepEqual(health.status(), { ok: true });
  assert.deepEqual(events.map((e) => e.event), ["store.degraded", "store.recovered"]);
  assert.deepEqual(events[1]?.fields, { failures: 2, downMs: 3000 });
});
