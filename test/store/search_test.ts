import assert from "node:assert/strict";
import { rawSearch, shownMatches } from "../../src/store/search.ts";
import type { Job } from "../../src/kernel/types.ts";

Deno.test("rawSearch() keeps the part of a search a [REDACTED] cannot hold", () => {
  const cases: [string, string | null][] = [
    ["PASS-2", "PASS-2"],
    ["password", "password"],
    ["password=[REDACTED]", "password="],
    ['"password":"[REDACTED]"', '"password":"'],
    ["d=[red", "d="],
    ["ED] next", " next"],
    ["a [REDACTED] longer tail [RE", " longer tail "],
    // Wholly inside a mask (case aside): no stored text is needed.
    ["[REDACTED]", null],
    ["act", null],
    ["D]", null],
    ["][", null],
    ["[redacted][REDACTED]", null],
  ];
  for (const [search, raw] of cases) assert.equal(rawSearch(search), raw, search);
});

Deno.test("shownMatches() reads args redacted and errors redacted again, case aside", () => {
  const job = {
    worker: "deploy",
    args: { argv: ["password=PASS-222"], token: "TOK-1" },
    occurrence: null,
    tags: ["Billing"],
    errors: [{ at: "2026-01-01T00:00:00.000Z", attempt: 1, error: "login with pass=PASS-444" }],
  } as unknown as Job;
  for (const hit of ["DEPLOY", "password=[redacted]", '"token":"[REDACTED]"', "billing", "pass="]) {
    assert.ok(shownMatches(job, hit), hit);
  }
  for (const miss of ["PASS-2", "TOK-1", "PASS-444"]) assert.ok(!shownMatches(job, miss), miss);
});
