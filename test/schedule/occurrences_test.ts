/**
 * The occurrence engine away from DST: rhythms, bounds, jitter, identities,
 * croner's syntax, and the helpers the config parser calls. Every instant is
 * fixed; none comes from the machine.
 */

import assert from "node:assert/strict";
import {
  between,
  itemOccurrenceId,
  jitterFor,
  neverFires,
  next,
  occurrenceId,
  occurrenceInstant,
  parentOccurrence,
  validateCron,
} from "../../src/schedule/occurrences.ts";
import type { Timing } from "../../src/schedule/types.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function z(iso: string): number {
  return Date.parse(iso.endsWith("Z") ? iso : `${iso}Z`);
}

function cron(expression: string, extra: Partial<Timing> = {}): Timing {
  return { id: "t", rhythm: { kind: "cron", expression }, timezone: "UTC", ...extra };
}

function every(everyMs: number, anchor: number, extra: Partial<Timing> = {}): Timing {
  return { id: "t", rhythm: { kind: "every", everyMs, anchor }, timezone: "UTC", ...extra };
}

function isos(timing: Timing, after: string, count: number): string[] {
  return next(timing, z(after), count).map((o) => new Date(o.at).toISOString());
}

Deno.test("next() of every 15m anchored at the epoch lands on :00/:15/:30/:45 UTC", () => {
  assert.deepEqual(isos(every(15 * MINUTE, 0), "2026-03-08T06:07:00", 3), [
    "2026-03-08T06:15:00.000Z",
    "2026-03-08T06:30:00.000Z",
    "2026-03-08T06:45:00.000Z",
  ]);
});

Deno.test("next() of every excludes an `after` that is on the grid", () => {
  assert.deepEqual(isos(every(15 * MINUTE, 0), "2026-03-08T06:15:00", 1), [
    "2026-03-08T06:30:00.000Z",
  ]);
});

Deno.test("next() of every follows a custom anchor, before or after `after`", () => {
  const anchor = z("2026-01-01T00:07:00");
  assert.deepEqual(isos(every(HOUR, anchor), "2026-03-08T06:07:00", 2), [
    "2026-03-08T07:07:00.000Z",
    "2026-03-08T08:07:00.000Z",
  ]);
  const future = z("2030-06-01T00:20:00");
  assert.deepEqual(isos(every(HOUR, future), "2026-03-08T06:00:00", 1), [
    "2026-03-08T06:20:00.000Z",
  ]);
});

Deno.test("next() of every keeps elapsed time across 2026-03-08 in America/New_York", () => {
  const found = next(
    every(HOUR, 0, {
      timezone: "America/New_York",
      localTime: { reason: "test", gap: "skip", overlap: "first" },
    }),
    z("2026-03-08T05:30:00"),
    3,
  );
  assert.deepEqual(found.map((o) => [o.occurrence, o.local, o.note]), [
    ["t@2026-03-08T06:00:00.000Z", "2026-03-08T01:00:00-05:00[America/New_York]", null],
    ["t@2026-03-08T07:00:00.000Z", "2026-03-08T03:00:00-04:00[America/New_York]", null],
    ["t@2026-03-08T08:00:00.000Z", "2026-03-08T04:00:00-04:00[America/New_York]", null],
  ]);
});

Deno.test("next() rejects an every rhythm that is not a positive number of ms", () => {
  assert.throws(() => next(every(0, 0), 0, 1), RangeError);
  assert.throws(() => next(every(-5, 0), 0, 1), RangeError);
});

Deno.test("next() and between() of a manual schedule are empty", () => {
  const manual: Timing = { id: "m", rhythm: { kind: "manual" }, timezone: "UTC" };
  assert.deepEqual(next(manual, z("2026-01-01T00:00:00"), 10), []);
  assert.deepEqual(between(manual, z("2026-01-01T00:00:00"), z("2027-01-01T00:00:00"), 10), []);
});

Deno.test("next() returns nothing for a count of zero", () => {
  assert.deepEqual(next(cron("* * * * *"), z("2026-01-01T00:00:00"), 0), []);
});

Deno.test("next() writes the identity with ms and the local time in UTC", () => {
  const [o] = next(cron("0 7 * * *", { id: "nightly" }), z("2026-03-08T00:00:00"), 1);
  assert.deepEqual(o, {
    at: z("2026-03-08T07:00:00"),
    occurrence: "nightly@2026-03-08T07:00:00.000Z",
    local: "2026-03-08T07:00:00+00:00[UTC]",
    note: null,
  });
  assert.equal(occurrenceInstant(o!.occurrence), z("2026-03-08T07:00:00"));
});

Deno.test("occurrenceInstant() reads the instant back from an identity string", () => {
  const t = z("2026-03-08T07:00:00");
  assert.equal(occurrenceInstant(occurrenceId("nightly", t)), t);
  assert.equal(occurrenceInstant("nightly@2026-03-08T07:00Z"), t);
  assert.ok(Number.isNaN(occurrenceInstant("nightly@not a date")));
});

Deno.test("between() includes `from` and excludes `to`", () => {
  const found = between(cron("0 * * * *"), z("2026-03-08T10:00:00"), z("2026-03-08T13:00:00"), 10);
  assert.deepEqual(found.map((o) => o.occurrence), [
    "t@2026-03-08T10:00:00.000Z",
    "t@2026-03-08T11:00:00.000Z",
    "t@2026-03-08T12:00:00.000Z",
  ]);
  assert.deepEqual(
    between(cron("0 * * * *"), z("2026-03-08T13:00:00"), z("2026-03-08T13:00:00")),
    [],
  );
});

Deno.test("between() stops at its limit, keeping the earliest", () => {
  const found = between(cron("* * * * *"), z("2026-03-08T10:00:00"), z("2026-03-09T00:00:00"), 3);
  assert.deepEqual(found.map((o) => o.occurrence), [
    "t@2026-03-08T10:00:00.000Z",
    "t@2026-03-08T10:01:00.000Z",
    "t@2026-03-08T10:02:00.000Z",
  ]);
});

Deno.test("startAt and endAt are inclusive bounds on the instant", () => {
  const bounded = cron("0 * * * *", {
    startAt: z("2026-03-08T10:00:00"),
    endAt: z("2026-03-08T12:00:00"),
  });
  assert.deepEqual(isos(bounded, "2026-03-08T00:00:00", 10), [
    "2026-03-08T10:00:00.000Z",
    "2026-03-08T11:00:00.000Z",
    "2026-03-08T12:00:00.000Z",
  ]);
  assert.deepEqual(isos(bounded, "2026-03-08T12:00:00", 10), []);
  const offGrid = cron("0 * * * *", { startAt: z("2026-03-08T10:30:00") });
  assert.deepEqual(isos(offGrid, "2026-03-08T00:00:00", 2), [
    "2026-03-08T11:00:00.000Z",
    "2026-03-08T12:00:00.000Z",
  ]);
  const everyBounded = every(15 * MINUTE, 0, {
    startAt: z("2026-03-08T10:00:00"),
    endAt: z("2026-03-08T10:30:00"),
  });
  assert.deepEqual(
    between(everyBounded, z("2026-03-08T00:00:00"), z("2026-03-09T00:00:00")).map((o) => o.at),
    [z("2026-03-08T10:00:00"), z("2026-03-08T10:15:00"), z("2026-03-08T10:30:00")],
  );
});

Deno.test("jitter is deterministic, within [0, jitterMs), and leaves the identity alone", () => {
  const plain = next(cron("*/5 * * * *"), z("2026-03-08T00:00:00"), 200);
  const jittered = next(cron("*/5 * * * *", { jitterMs: 60_000 }), z("2026-03-08T00:00:00"), 200);
  const again = next(cron("*/5 * * * *", { jitterMs: 60_000 }), z("2026-03-08T00:00:00"), 200);
  assert.deepEqual(jittered, again);
  assert.deepEqual(jittered.map((o) => o.occurrence), plain.map((o) => o.occurrence));
  const offsets = jittered.map((o) => o.at - occurrenceInstant(o.occurrence));
  for (const offset of offsets) assert.ok(offset >= 0 && offset < 60_000, `jitter ${offset}`);
  assert.ok(new Set(offsets).size > 150, "jitter should vary between occurrences");
  for (let i = 1; i < jittered.length; i++) assert.ok(jittered[i]!.at > jittered[i - 1]!.at);
  // Same identity, same jitter; another schedule id, another jitter.
  assert.equal(
    jitterFor("nightly@2026-03-08T07:00:00.000Z", 1000),
    jitterFor("nightly@2026-03-08T07:00:00.000Z", 1000),
  );
  assert.notEqual(
    jitterFor("a@2026-03-08T07:00:00.000Z", 1e9),
    jitterFor("b@2026-03-08T07:00:00.000Z", 1e9),
  );
  assert.equal(jitterFor("x", 0), 0);
});

Deno.test("jitter wider than the spacing still returns occurrences sorted by at", () => {
  const found = next(cron("* * * * *", { jitterMs: 10 * MINUTE }), z("2026-03-08T00:00:00"), 100);
  for (let i = 1; i < found.length; i++) assert.ok(found[i]!.at >= found[i - 1]!.at);
  assert.equal(new Set(found.map((o) => o.occurrence)).size, 100);
});

Deno.test("cron understands @daily, L, #, W, and 6 fields with seconds", () => {
  assert.deepEqual(isos(cron("@daily"), "2026-01-01T12:00:00", 2), [
    "2026-01-02T00:00:00.000Z",
    "2026-01-03T00:00:00.000Z",
  ]);
  assert.deepEqual(isos(cron("0 0 L * *"), "2026-01-01T00:00:00", 3), [
    "2026-01-31T00:00:00.000Z",
    "2026-02-28T00:00:00.000Z",
    "2026-03-31T00:00:00.000Z",
  ]);
  assert.deepEqual(isos(cron("0 0 L 2 *"), "2027-03-01T00:00:00", 1), [
    "2028-02-29T00:00:00.000Z",
  ]);
  // The second Friday.
  assert.deepEqual(isos(cron("0 9 * * 5#2"), "2026-01-01T00:00:00", 3), [
    "2026-01-09T09:00:00.000Z",
    "2026-02-13T09:00:00.000Z",
    "2026-03-13T09:00:00.000Z",
  ]);
  // The weekday nearest the 15th: Sunday 2026-02-15 -> Monday; Saturday 2026-08-15 -> Friday.
  assert.deepEqual(isos(cron("0 0 15W * *"), "2026-01-20T00:00:00", 2), [
    "2026-02-16T00:00:00.000Z",
    "2026-03-16T00:00:00.000Z",
  ]);
  assert.deepEqual(isos(cron("0 0 15W * *"), "2026-08-01T00:00:00", 1), [
    "2026-08-14T00:00:00.000Z",
  ]);
  assert.deepEqual(isos(cron("0 0 29 2 *"), "2026-01-01T00:00:00", 2), [
    "2028-02-29T00:00:00.000Z",
    "2032-02-29T00:00:00.000Z",
  ]);
  assert.deepEqual(isos(cron("*/20 * * * * *"), "2026-01-01T00:00:00", 3), [
    "2026-01-01T00:00:20.000Z",
    "2026-01-01T00:00:40.000Z",
    "2026-01-01T00:01:00.000Z",
  ]);
});

Deno.test("cron @daily follows local midnight in Asia/Kolkata", () => {
  const found = next(
    cron("@daily", {
      timezone: "Asia/Kolkata",
      localTime: { reason: "test", gap: "skip", overlap: "first" },
    }),
    z("2026-01-01T00:00:00"),
    2,
  );
  assert.deepEqual(found.map((o) => [o.occurrence, o.local]), [
    ["t@2026-01-01T18:30:00.000Z", "2026-01-02T00:00:00+05:30[Asia/Kolkata]"],
    ["t@2026-01-02T18:30:00.000Z", "2026-01-03T00:00:00+05:30[Asia/Kolkata]"],
  ]);
});

Deno.test("validateCron() accepts croner's syntax and explains what it rejects", () => {
  for (
    const ok of [
      "* * * * *",
      "0 0 * * *",
      "*/20 * * * * *",
      "@daily",
      "@hourly",
      "0 0 L * *",
      "0 9 * * FRI#2",
      "0 0 15W * *",
      "0 0 ? * MON-FRI",
    ]
  ) {
    assert.equal(validateCron(ok), null, ok);
  }
  assert.equal(validateCron(""), "cron expression is empty");
  assert.match(
    validateCron("61 * * * *")!,
    /^invalid cron expression "61 \* \* \* \*": .*minute.*61/,
  );
  assert.match(validateCron("bogus")!, /^invalid cron expression "bogus": /);
  assert.match(validateCron("0 0 0 * * * 2026")!, /5 or 6 parts/);
  assert.match(validateCron("@reboot")!, /@reboot/);
  assert.match(validateCron("0 0 32 * *")!, /^invalid cron expression/);
});

Deno.test('neverFires() is true for "0 0 31 2 *" and false for what fires', () => {
  const from = z("2026-01-01T00:00:00");
  assert.equal(neverFires(cron("0 0 31 2 *"), from), true);
  assert.equal(neverFires(cron("0 0 29 2 *"), from), false);
  assert.equal(neverFires(cron("* * * * *"), from), false);
  assert.equal(neverFires(every(HOUR, 0), from), false);
  assert.equal(neverFires(cron("* * * * *", { endAt: from - 1 }), from), true);
  assert.equal(neverFires({ id: "m", rhythm: { kind: "manual" }, timezone: "UTC" }, from), false);
});

Deno.test("neverFires() is true for a time that is always in the gap, when skipped, in Europe/London", () => {
  // 01:30 on the last Sunday of March never exists in London.
  const from = z("2026-01-01T00:00:00");
  const base = cron("30 1 * 3 0L", { timezone: "Europe/London" });
  assert.equal(
    neverFires({ ...base, localTime: { reason: "test", gap: "skip", overlap: "first" } }, from),
    true,
  );
  assert.equal(
    neverFires({ ...base, localTime: { reason: "test", gap: "shift", overlap: "first" } }, from),
    false,
  );
});

Deno.test("next() rejects an unknown time zone", () => {
  assert.throws(() => next(cron("* * * * *", { timezone: "Europe/Berln" }), 0, 1), RangeError);
});

Deno.test("a fan-out item's identity is its occurrence's and its key's, and reads back to its occurrence", () => {
  const parent = occurrenceId("nightly", Date.UTC(2026, 2, 8, 7));
  const item = itemOccurrenceId(parent, "eu-west");
  assert.equal(item, "nightly@2026-03-08T07:00:00.000Z#eu-west");
  assert.equal(parentOccurrence(item), parent);
  assert.equal(parentOccurrence(parent), parent);
  assert.equal(occurrenceInstant(parentOccurrence(item)), Date.UTC(2026, 2, 8, 7));
});
