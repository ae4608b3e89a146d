/**
 * The identities of a tenant's schedule (`nightly:acme`, made by
 * `tenants:`) read back by everything that parses schedule ids and
 * occurrence identities: a tenant's name may hold `:`, `/` and `.`, never
 * `@` or `#`, so the schedule id ends at the first `@` and a fan-out item's
 * key starts at the last `#`.
 */

import assert from "node:assert/strict";
import { tenantScheduleId } from "../../src/config/build.ts";
import {
  itemOccurrenceId,
  occurrenceId,
  occurrenceInstant,
  parentOccurrence,
} from "../../src/schedule/occurrences.ts";
import { readOccurrenceRef } from "../../src/schedule/occurrence_ref.ts";
import { parseSearch, searchText } from "../../src/tui/search.ts";

const AT = Date.UTC(2026, 11, 5, 2);

Deno.test("a tenant's occurrence identity reads back its instant, its parent and its schedule", () => {
  for (const tenant of ["acme", "eu:acme", "acme/eu-west.2"]) {
    const id = tenantScheduleId("nightly", tenant);
    assert.equal(id, `nightly:${tenant}`);
    const occurrence = occurrenceId(id, AT);
    assert.equal(occurrence, `nightly:${tenant}@2026-12-05T02:00:00.000Z`);
    assert.equal(occurrenceInstant(occurrence), AT);
    assert.equal(parentOccurrence(occurrence), occurrence);
    const item = itemOccurrenceId(occurrence, "eu-west");
    assert.equal(parentOccurrence(item), occurrence);
    assert.equal(occurrenceInstant(parentOccurrence(item)), AT);

    const ref = readOccurrenceRef(`${id}@2026-12-05T03:00+01:00`);
    assert.ok(ref && !("why" in ref));
    assert.equal(ref.scheduleId, id);
    assert.deepEqual(ref.ids, [occurrence]);
  }
});

Deno.test("a local time of a tenant's occurrence is read in its schedule's zone, looked up by the whole id", () => {
  const asked: string[] = [];
  const ref = readOccurrenceRef("nightly:acme@2026-12-05T03:00", (id) => {
    asked.push(id);
    return id === "nightly:acme" ? "Europe/Paris" : undefined;
  });
  assert.deepEqual(asked, ["nightly:acme"]);
  assert.deepEqual(ref?.ids, ["nightly:acme@2026-12-05T02:00:00.000Z"]);
});

Deno.test("the TUI's search reads schedule:<id>:<tenant> as that schedule, and writes it back", () => {
  const parsed = parseSearch("schedule:nightly:acme state:discarded");
  assert.ok("filter" in parsed);
  assert.equal(parsed.filter.scheduleId, "nightly:acme");
  assert.deepEqual(parseSearch(searchText(parsed.filter)), parsed);
});
