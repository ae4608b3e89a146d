import assert from "node:assert/strict";
import { rawSearch, SearchPaging, shownMatches } from "../../src/store/search.ts";
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

Deno.test("SearchPaging reads raw pages until a page of matches is full, and no further", () => {
  const job = (id: number, note: string) =>
    ({ id, worker: "w", args: { note }, occurrence: null, tags: [], errors: [] }) as unknown as Job;
  const paging = new SearchPaging({ search: "needle", desc: true, limit: 2 });
  assert.deepEqual(paging.next, { search: "needle", desc: true, limit: 100 });
  // 100 raw rows, one of them shown with the needle: one more read, past the last row.
  paging.take(Array.from({ length: 100 }, (_, n) => job(500 - n, n === 7 ? "needle" : "hay")));
  assert.deepEqual(paging.next, { search: "needle", desc: true, limit: 200, after: 401 });
  paging.take([job(400, "hay"), job(399, "a NEEDLE"), job(398, "needle")]);
  assert.equal(paging.next, null);
  assert.deepEqual(paging.found.map((j) => j.id), [493, 399]);
  // A limit it cannot page with is the store's to judge; the rows are still matched.
  const odd = new SearchPaging({ search: "[REDACTED]", limit: -1 });
  assert.deepEqual(odd.next, { limit: -1 });
  odd.take([job(1, "password=[REDACTED]"), job(2, "hay"), job(3, "[redacted]")]);
  assert.deepEqual(odd.found.map((j) => j.id), [1, 3]);
  assert.equal(odd.next, null);
});
