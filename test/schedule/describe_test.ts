/**
 * A schedule described in words: an instant in the schedule's own zone,
 * beside UTC, with the offset of that very instant.
 */

import assert from "node:assert/strict";
import { localBeside } from "../../src/schedule/describe.ts";

Deno.test("localBeside() reads 2026-03-08T07:00Z as 03:00 -04:00 in America/New_York, a second after 01:59:59 -05:00", () => {
  const at = (iso: string, zone: string, named?: boolean) =>
    localBeside(Date.parse(iso), zone, named);
  assert.equal(at("2026-03-08T06:59:59Z", "America/New_York"), "01:59:59 -05:00 America/New_York");
  assert.equal(at("2026-03-08T07:00:00Z", "America/New_York"), "03:00 -04:00 America/New_York");
  // The hour that happens twice on 2026-11-01: the offset tells them apart.
  assert.equal(at("2026-11-01T05:30:00Z", "America/New_York"), "01:30 -04:00 America/New_York");
  assert.equal(at("2026-11-01T06:30:00Z", "America/New_York"), "01:30 -05:00 America/New_York");
  assert.equal(at("2026-12-05T09:00:00Z", "Europe/Berlin"), "10:00 +01:00 Europe/Berlin");
  assert.equal(at("2026-06-02T03:00:00Z", "Asia/Kathmandu", false), "08:45 +05:45");
});

Deno.test("localBeside() names the local date when it is not the UTC date, and says nothing for UTC or an unknown zone", () => {
  assert.equal(
    localBeside(Date.parse("2026-06-02T23:30:00Z"), "Asia/Tokyo"),
    "2026-06-03 08:30 +09:00 Asia/Tokyo",
  );
  assert.equal(
    localBeside(Date.parse("2026-06-02T01:00:00Z"), "America/Los_Angeles"),
    "2026-06-01 18:00 -07:00 America/Los_Angeles",
  );
  for (const zone of ["UTC", "Etc/UTC", "GMT"]) {
    assert.equal(localBeside(Date.parse("2026-06-02T03:00:00Z"), zone), null, zone);
  }
  assert.equal(localBeside(0, "Mars/Olympus_Mons"), null);
});
