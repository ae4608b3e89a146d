import assert from "node:assert/strict";
import { readOccurrenceRef } from "../../src/schedule/occurrence_ref.ts";

Deno.test("readOccurrenceRef() reads a repeated local time (fall back) as both instants, 2026-11-01 America/New_York", () => {
  assert.deepEqual(readOccurrenceRef("nightly@2026-11-01T01:30", () => "America/New_York")?.ids, [
    "nightly@2026-11-01T05:30:00.000Z",
    "nightly@2026-11-01T06:30:00.000Z",
  ]);
});

Deno.test("readOccurrenceRef() reads a missing local time (spring forward) as the instants either side, 2026-03-08 America/New_York", () => {
  assert.deepEqual(readOccurrenceRef("nightly@2026-03-08T02:30[America/New_York]")?.ids, [
    "nightly@2026-03-08T06:30:00.000Z",
    "nightly@2026-03-08T07:30:00.000Z",
  ]);
});

Deno.test("readOccurrenceRef() leaves what is not an occurrence alone and says why an instant is unreadable", () => {
  assert.equal(readOccurrenceRef("42"), null);
  assert.equal(readOccurrenceRef("@2026-03-08T07:00Z"), null);
  const bad = readOccurrenceRef("nightly@2026-03-08T07:00[Mars/Olympus]");
  assert.ok(bad && "why" in bad);
  assert.match(bad.why, /"Mars\/Olympus" is not a time zone/);
});
