/**
 * DST transitions, worked out by hand from the zone rules, under every
 * combination of gap (`skip`, `shift`) and overlap (`first`, `second`,
 * `both`) policy. Instants are written in UTC; the comment beside each says
 * what the local clock shows.
 *
 * - America/New_York 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z.
 *   2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z (01:00-01:59 twice).
 * - Europe/London 2026-03-29: 01:00 GMT -> 02:00 BST at 01:00Z.
 *   2026-10-25: 02:00 BST -> 01:00 GMT at 01:00Z (01:00-01:59 twice).
 * - Australia/Lord_Howe (a 30-minute shift) 2026-04-05: 02:00 +11:00 ->
 *   01:30 +10:30 at 15:00Z on 04-04 (01:30-01:59 twice). 2026-10-04:
 *   02:00 +10:30 -> 02:30 +11:00 at 15:30Z on 10-03 (02:00-02:29 missing).
 * - Asia/Kolkata: +05:30 all year.
 */

import assert from "node:assert/strict";
import { between, next } from "../../src/schedule/occurrences.ts";
import type { GapPolicy, OverlapPolicy, Timing } from "../../src/schedule/types.ts";

const GAPS: GapPolicy[] = ["skip", "shift"];
const OVERLAPS: OverlapPolicy[] = ["first", "second", "both"];

function timing(
  timezone: string,
  expression: string,
  gap: GapPolicy,
  overlap: OverlapPolicy,
): Timing {
  return {
    id: "dst",
    rhythm: { kind: "cron", expression },
    timezone,
    localTime: { reason: "follows the office clock", gap, overlap },
  };
}

/** `2026-03-08T07:30` (UTC) -> epoch ms. */
function z(minute: string): number {
  return Date.parse(`${minute}:00.000Z`);
}

/** One expected occurrence: the UTC minute, and its note (null when none). */
type Row = [string, string | null];

/** `[instant ISO, note]` of each occurrence, for a readable diff. */
function rows(timing: Timing, from: string, to: string): Row[] {
  return between(timing, z(from), z(to)).map((o) => [o.occurrence.slice(4, 20), o.note]);
}

const first = (hhmm: string) => `repeated: ${hhmm} happens twice, running the first`;
const second = (hhmm: string) => `repeated: ${hhmm} happens twice, running the second`;
const both = (hhmm: string) => `repeated: ${hhmm} happens twice, running both`;

interface Case {
  zone: string;
  /** The local date of the transition, for the test name. */
  date: string;
  expression: string;
  /** The UTC window `[from, to)`, to the minute. */
  from: string;
  to: string;
  /** By gap policy (the overlap policy changes nothing), by overlap policy, or one answer for all. */
  expect:
    | { skip: Row[]; shift: Row[] }
    | { first: Row[]; second: Row[]; both: Row[] }
    | { all: Row[] };
}

function expected(c: Case, gap: GapPolicy, overlap: OverlapPolicy): Row[] {
  const e = c.expect;
  if ("all" in e) return e.all;
  if ("skip" in e) return e[gap];
  return e[overlap];
}

const shiftedNY = (hhmm: string) => `shifted: ${hhmm} does not exist on 2026-03-08`;
const shiftedLondon = (hhmm: string) => `shifted: ${hhmm} does not exist on 2026-03-29`;
const shiftedLordHowe = (hhmm: string) => `shifted: ${hhmm} does not exist on 2026-10-04`;

const CASES: Case[] = [
  // America/New_York, spring forward.
  {
    zone: "America/New_York",
    date: "2026-03-08",
    expression: "30 1 * * *",
    from: "2026-03-08T05:00",
    to: "2026-03-09T04:00",
    expect: { all: [["2026-03-08T06:30", null]] }, // 01:30 EST
  },
  {
    zone: "America/New_York",
    date: "2026-03-08",
    expression: "30 2 * * *",
    from: "2026-03-08T05:00",
    to: "2026-03-09T04:00",
    expect: {
      skip: [],
      shift: [["2026-03-08T07:30", shiftedNY("02:30")]], // 03:30 EDT
    },
  },
  {
    zone: "America/New_York",
    date: "2026-03-08",
    expression: "0 * * * *",
    from: "2026-03-08T05:00",
    to: "2026-03-08T09:00",
    expect: {
      skip: [
        ["2026-03-08T05:00", null], // 00:00 EST
        ["2026-03-08T06:00", null], // 01:00 EST
        ["2026-03-08T07:00", null], // 03:00 EDT
        ["2026-03-08T08:00", null], // 04:00 EDT
      ],
      shift: [
        ["2026-03-08T05:00", null],
        ["2026-03-08T06:00", null],
        ["2026-03-08T07:00", shiftedNY("02:00")], // 02:00 -> 03:00 EDT, one run with the real 03:00
        ["2026-03-08T08:00", null],
      ],
    },
  },
  {
    zone: "America/New_York",
    date: "2026-03-08",
    expression: "*/15 * * * *",
    from: "2026-03-08T06:30",
    to: "2026-03-08T08:00",
    expect: {
      skip: [
        ["2026-03-08T06:30", null], // 01:30 EST
        ["2026-03-08T06:45", null], // 01:45 EST
        ["2026-03-08T07:00", null], // 03:00 EDT
        ["2026-03-08T07:15", null],
        ["2026-03-08T07:30", null],
        ["2026-03-08T07:45", null],
      ],
      shift: [
        ["2026-03-08T06:30", null],
        ["2026-03-08T06:45", null],
        ["2026-03-08T07:00", shiftedNY("02:00")],
        ["2026-03-08T07:15", shiftedNY("02:15")],
        ["2026-03-08T07:30", shiftedNY("02:30")],
        ["2026-03-08T07:45", shiftedNY("02:45")],
      ],
    },
  },
  // America/New_York, fall back.
  {
    zone: "America/New_York",
    date: "2026-11-01",
    expression: "30 1 * * *",
    from: "2026-11-01T04:00",
    to: "2026-11-02T05:00",
    expect: {
      first: [["2026-11-01T05:30", first("01:30")]], // 01:30 EDT
      second: [["2026-11-01T06:30", second("01:30")]], // 01:30 EST
      both: [["2026-11-01T05:30", both("01:30")], ["2026-11-01T06:30", both("01:30")]],
    },
  },
  {
    zone: "America/New_York",
    date: "2026-11-01",
    expression: "30 2 * * *",
    from: "2026-11-01T04:00",
    to: "2026-11-02T05:00",
    expect: { all: [["2026-11-01T07:30", null]] }, // 02:30 EST
  },
  {
    zone: "America/New_York",
    date: "2026-11-01",
    expression: "0 * * * *",
    from: "2026-11-01T04:00",
    to: "2026-11-01T08:00",
    expect: {
      first: [
        ["2026-11-01T04:00", null], // 00:00 EDT
        ["2026-11-01T05:00", first("01:00")], // 01:00 EDT
        ["2026-11-01T07:00", null], // 02:00 EST
      ],
      second: [
        ["2026-11-01T04:00", null],
        ["2026-11-01T06:00", second("01:00")], // 01:00 EST
        ["2026-11-01T07:00", null],
      ],
      both: [
        ["2026-11-01T04:00", null],
        ["2026-11-01T05:00", both("01:00")],
        ["2026-11-01T06:00", both("01:00")],
        ["2026-11-01T07:00", null],
      ],
    },
  },
  {
    zone: "America/New_York",
    date: "2026-11-01",
    expression: "*/15 * * * *",
    from: "2026-11-01T05:30",
    to: "2026-11-01T07:15",
    expect: {
      first: [
        ["2026-11-01T05:30", first("01:30")], // 01:30 EDT
        ["2026-11-01T05:45", first("01:45")],
        ["2026-11-01T07:00", null], // 02:00 EST
      ],
      second: [
        ["2026-11-01T06:00", second("01:00")], // 01:00 EST
        ["2026-11-01T06:15", second("01:15")],
        ["2026-11-01T06:30", second("01:30")],
        ["2026-11-01T06:45", second("01:45")],
        ["2026-11-01T07:00", null],
      ],
      both: [
        ["2026-11-01T05:30", both("01:30")],
        ["2026-11-01T05:45", both("01:45")],
        ["2026-11-01T06:00", both("01:00")],
        ["2026-11-01T06:15", both("01:15")],
        ["2026-11-01T06:30", both("01:30")],
        ["2026-11-01T06:45", both("01:45")],
        ["2026-11-01T07:00", null],
      ],
    },
  },
  // Europe/London, spring forward.
  {
    zone: "Europe/London",
    date: "2026-03-29",
    expression: "30 1 * * *",
    from: "2026-03-29T00:00",
    to: "2026-03-29T23:00",
    expect: {
      skip: [],
      shift: [["2026-03-29T01:30", shiftedLondon("01:30")]], // 02:30 BST
    },
  },
  {
    zone: "Europe/London",
    date: "2026-03-29",
    expression: "30 2 * * *",
    from: "2026-03-29T00:00",
    to: "2026-03-29T23:00",
    expect: { all: [["2026-03-29T01:30", null]] }, // 02:30 BST
  },
  {
    zone: "Europe/London",
    date: "2026-03-29",
    expression: "0 * * * *",
    from: "2026-03-29T00:00",
    to: "2026-03-29T03:00",
    expect: {
      skip: [
        ["2026-03-29T00:00", null], // 00:00 GMT
        ["2026-03-29T01:00", null], // 02:00 BST
        ["2026-03-29T02:00", null], // 03:00 BST
      ],
      shift: [
        ["2026-03-29T00:00", null],
        ["2026-03-29T01:00", shiftedLondon("01:00")],
        ["2026-03-29T02:00", null],
      ],
    },
  },
  {
    zone: "Europe/London",
    date: "2026-03-29",
    expression: "*/15 * * * *",
    from: "2026-03-29T00:30",
    to: "2026-03-29T01:30",
    expect: {
      skip: [
        ["2026-03-29T00:30", null], // 00:30 GMT
        ["2026-03-29T00:45", null],
        ["2026-03-29T01:00", null], // 02:00 BST
        ["2026-03-29T01:15", null],
      ],
      shift: [
        ["2026-03-29T00:30", null],
        ["2026-03-29T00:45", null],
        ["2026-03-29T01:00", shiftedLondon("01:00")],
        ["2026-03-29T01:15", shiftedLondon("01:15")],
      ],
    },
  },
  // Europe/London, fall back.
  {
    zone: "Europe/London",
    date: "2026-10-25",
    expression: "30 1 * * *",
    from: "2026-10-24T23:00",
    to: "2026-10-26T00:00",
    expect: {
      first: [["2026-10-25T00:30", first("01:30")]], // 01:30 BST
      second: [["2026-10-25T01:30", second("01:30")]], // 01:30 GMT
      both: [["2026-10-25T00:30", both("01:30")], ["2026-10-25T01:30", both("01:30")]],
    },
  },
  {
    zone: "Europe/London",
    date: "2026-10-25",
    expression: "30 2 * * *",
    from: "2026-10-24T23:00",
    to: "2026-10-26T00:00",
    expect: { all: [["2026-10-25T02:30", null]] }, // 02:30 GMT
  },
  {
    zone: "Europe/London",
    date: "2026-10-25",
    expression: "0 * * * *",
    from: "2026-10-24T23:00",
    to: "2026-10-25T03:00",
    expect: {
      first: [
        ["2026-10-24T23:00", null], // 00:00 BST
        ["2026-10-25T00:00", first("01:00")], // 01:00 BST
        ["2026-10-25T02:00", null], // 02:00 GMT
      ],
      second: [
        ["2026-10-24T23:00", null],
        ["2026-10-25T01:00", second("01:00")], // 01:00 GMT
        ["2026-10-25T02:00", null],
      ],
      both: [
        ["2026-10-24T23:00", null],
        ["2026-10-25T00:00", both("01:00")],
        ["2026-10-25T01:00", both("01:00")],
        ["2026-10-25T02:00", null],
      ],
    },
  },
  {
    zone: "Europe/London",
    date: "2026-10-25",
    expression: "*/15 * * * *",
    from: "2026-10-25T00:30",
    to: "2026-10-25T02:00",
    expect: {
      first: [
        ["2026-10-25T00:30", first("01:30")],
        ["2026-10-25T00:45", first("01:45")],
      ],
      second: [
        ["2026-10-25T01:00", second("01:00")],
        ["2026-10-25T01:15", second("01:15")],
        ["2026-10-25T01:30", second("01:30")],
        ["2026-10-25T01:45", second("01:45")],
      ],
      both: [
        ["2026-10-25T00:30", both("01:30")],
        ["2026-10-25T00:45", both("01:45")],
        ["2026-10-25T01:00", both("01:00")],
        ["2026-10-25T01:15", both("01:15")],
        ["2026-10-25T01:30", both("01:30")],
        ["2026-10-25T01:45", both("01:45")],
      ],
    },
  },
  // Australia/Lord_Howe, fall back by 30 minutes: only 01:30-01:59 repeats.
  {
    zone: "Australia/Lord_Howe",
    date: "2026-04-05",
    expression: "30 1 * * *",
    from: "2026-04-04T13:00",
    to: "2026-04-05T13:00",
    expect: {
      first: [["2026-04-04T14:30", first("01:30")]], // 01:30 +11:00
      second: [["2026-04-04T15:00", second("01:30")]], // 01:30 +10:30
      both: [["2026-04-04T14:30", both("01:30")], ["2026-04-04T15:00", both("01:30")]],
    },
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-04-05",
    expression: "30 2 * * *",
    from: "2026-04-04T13:00",
    to: "2026-04-05T13:00",
    expect: { all: [["2026-04-04T16:00", null]] }, // 02:30 +10:30
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-04-05",
    expression: "0 * * * *",
    from: "2026-04-04T13:00",
    to: "2026-04-04T17:00",
    expect: {
      all: [
        ["2026-04-04T13:00", null], // 00:00 +11:00
        ["2026-04-04T14:00", null], // 01:00 +11:00, happens once
        ["2026-04-04T15:30", null], // 02:00 +10:30
        ["2026-04-04T16:30", null], // 03:00 +10:30
      ],
    },
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-04-05",
    expression: "*/15 * * * *",
    from: "2026-04-04T14:00",
    to: "2026-04-04T15:45",
    expect: {
      first: [
        ["2026-04-04T14:00", null], // 01:00 +11:00
        ["2026-04-04T14:15", null],
        ["2026-04-04T14:30", first("01:30")],
        ["2026-04-04T14:45", first("01:45")],
        ["2026-04-04T15:30", null], // 02:00 +10:30
      ],
      second: [
        ["2026-04-04T14:00", null],
        ["2026-04-04T14:15", null],
        ["2026-04-04T15:00", second("01:30")], // 01:30 +10:30
        ["2026-04-04T15:15", second("01:45")],
        ["2026-04-04T15:30", null],
      ],
      both: [
        ["2026-04-04T14:00", null],
        ["2026-04-04T14:15", null],
        ["2026-04-04T14:30", both("01:30")],
        ["2026-04-04T14:45", both("01:45")],
        ["2026-04-04T15:00", both("01:30")],
        ["2026-04-04T15:15", both("01:45")],
        ["2026-04-04T15:30", null],
      ],
    },
  },
  // Australia/Lord_Howe, spring forward by 30 minutes: only 02:00-02:29 is missing.
  {
    zone: "Australia/Lord_Howe",
    date: "2026-10-04",
    expression: "30 1 * * *",
    from: "2026-10-03T13:00",
    to: "2026-10-04T13:00",
    expect: { all: [["2026-10-03T15:00", null]] }, // 01:30 +10:30
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-10-04",
    expression: "30 2 * * *",
    from: "2026-10-03T13:00",
    to: "2026-10-04T13:00",
    expect: { all: [["2026-10-03T15:30", null]] }, // 02:30 +11:00 exists
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-10-04",
    expression: "15 2 * * *",
    from: "2026-10-03T13:00",
    to: "2026-10-04T13:00",
    expect: {
      skip: [],
      shift: [["2026-10-03T15:45", shiftedLordHowe("02:15")]], // 02:45 +11:00
    },
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-10-04",
    expression: "0 * * * *",
    from: "2026-10-03T13:00",
    to: "2026-10-03T17:00",
    expect: {
      skip: [
        ["2026-10-03T13:30", null], // 00:00 +10:30
        ["2026-10-03T14:30", null], // 01:00 +10:30
        ["2026-10-03T16:00", null], // 03:00 +11:00
      ],
      shift: [
        ["2026-10-03T13:30", null],
        ["2026-10-03T14:30", null],
        ["2026-10-03T15:30", shiftedLordHowe("02:00")], // 02:30 +11:00
        ["2026-10-03T16:00", null],
      ],
    },
  },
  {
    zone: "Australia/Lord_Howe",
    date: "2026-10-04",
    expression: "*/15 * * * *",
    from: "2026-10-03T15:00",
    to: "2026-10-03T16:00",
    expect: {
      skip: [
        ["2026-10-03T15:00", null], // 01:30 +10:30
        ["2026-10-03T15:15", null], // 01:45 +10:30
        ["2026-10-03T15:30", null], // 02:30 +11:00
        ["2026-10-03T15:45", null], // 02:45 +11:00
      ],
      shift: [
        ["2026-10-03T15:00", null],
        ["2026-10-03T15:15", null],
        ["2026-10-03T15:30", shiftedLordHowe("02:00")], // and the real 02:30
        ["2026-10-03T15:45", shiftedLordHowe("02:15")], // and the real 02:45
      ],
    },
  },
  // Asia/Kolkata: no DST, so no policy changes anything.
  {
    zone: "Asia/Kolkata",
    date: "2026-03-08",
    expression: "30 1 * * *",
    from: "2026-03-07T18:30",
    to: "2026-03-08T18:30",
    expect: { all: [["2026-03-07T20:00", null]] },
  },
  {
    zone: "Asia/Kolkata",
    date: "2026-03-08",
    expression: "30 2 * * *",
    from: "2026-03-07T18:30",
    to: "2026-03-08T18:30",
    expect: { all: [["2026-03-07T21:00", null]] },
  },
  {
    zone: "Asia/Kolkata",
    date: "2026-03-08",
    expression: "0 * * * *",
    from: "2026-03-07T18:30",
    to: "2026-03-07T22:30",
    expect: {
      all: [
        ["2026-03-07T18:30", null],
        ["2026-03-07T19:30", null],
        ["2026-03-07T20:30", null],
        ["2026-03-07T21:30", null],
      ],
    },
  },
  {
    zone: "Asia/Kolkata",
    date: "2026-11-01",
    expression: "*/15 * * * *",
    from: "2026-10-31T20:00",
    to: "2026-10-31T21:00",
    expect: {
      all: [
        ["2026-10-31T20:00", null],
        ["2026-10-31T20:15", null],
        ["2026-10-31T20:30", null],
        ["2026-10-31T20:45", null],
      ],
    },
  },
];

for (const c of CASES) {
  Deno.test(`between() runs "${c.expression}" on ${c.date} in ${c.zone} by each policy`, async (t) => {
    for (const gap of GAPS) {
      for (const overlap of OVERLAPS) {
        await t.step(`gap ${gap}, overlap ${overlap}`, () => {
          assert.deepEqual(
            rows(timing(c.zone, c.expression, gap, overlap), c.from, c.to),
            expected(c, gap, overlap),
          );
        });
      }
    }
  });
}

Deno.test("next() shifts 02:30 to 03:30 on 2026-03-08 in America/New_York", () => {
  const [o] = next(
    timing("America/New_York", "30 2 * * *", "shift", "first"),
    z("2026-03-07T08:00"),
    1,
  );
  assert.deepEqual(o, {
    at: z("2026-03-08T07:30"),
    occurrence: "dst@2026-03-08T07:30:00.000Z",
    local: "2026-03-08T03:30:00-04:00[America/New_York]",
    note: "shifted: 02:30 does not exist on 2026-03-08",
  });
});

Deno.test("next() skips 02:30 on 2026-03-08 in America/New_York", () => {
  const found = next(
    timing("America/New_York", "30 2 * * *", "skip", "first"),
    z("2026-03-07T08:00"),
    1,
  );
  // The next 02:30 is 2026-03-09, at EDT.
  assert.deepEqual(found.map((o) => [o.occurrence, o.local, o.note]), [
    ["dst@2026-03-09T06:30:00.000Z", "2026-03-09T02:30:00-04:00[America/New_York]", null],
  ]);
});

Deno.test("next() runs 01:30 at EDT then EST with overlap both on 2026-11-01 in America/New_York", () => {
  const found = next(
    timing("America/New_York", "30 1 * * *", "shift", "both"),
    z("2026-11-01T00:00"),
    3,
  );
  assert.deepEqual(found.map((o) => [o.occurrence, o.local, o.note]), [
    [
      "dst@2026-11-01T05:30:00.000Z",
      "2026-11-01T01:30:00-04:00[America/New_York]",
      "repeated: 01:30 happens twice, running both",
    ],
    [
      "dst@2026-11-01T06:30:00.000Z",
      "2026-11-01T01:30:00-05:00[America/New_York]",
      "repeated: 01:30 happens twice, running both",
    ],
    ["dst@2026-11-02T06:30:00.000Z", "2026-11-02T01:30:00-05:00[America/New_York]", null],
  ]);
});

Deno.test("next() after the first 01:30 finds the second on 2026-11-01 in America/New_York", () => {
  // `after` falls between the two 01:30s: the wall clock went back, the search must too.
  const found = next(
    timing("America/New_York", "30 1 * * *", "shift", "both"),
    z("2026-11-01T05:30"),
    1,
  );
  assert.deepEqual(found.map((o) => o.occurrence), ["dst@2026-11-01T06:30:00.000Z"]);
  const hourly = next(
    timing("America/New_York", "0,30 * * * *", "skip", "both"),
    z("2026-11-01T05:45"),
    3,
  );
  assert.deepEqual(hourly.map((o) => o.occurrence), [
    "dst@2026-11-01T06:00:00.000Z",
    "dst@2026-11-01T06:30:00.000Z",
    "dst@2026-11-01T07:00:00.000Z",
  ]);
});

Deno.test("next() shifts 02:00 onto the real 03:00 once on 2026-03-08 in America/New_York", () => {
  const found = next(
    timing("America/New_York", "0 2,3 * * *", "shift", "first"),
    z("2026-03-08T05:00"),
    2,
  );
  assert.deepEqual(found.map((o) => [o.occurrence, o.note]), [
    ["dst@2026-03-08T07:00:00.000Z", "shifted: 02:00 does not exist on 2026-03-08"],
    ["dst@2026-03-09T06:00:00.000Z", null],
  ]);
});

Deno.test("next() shifts 02:00 by 30 minutes on 2026-10-04 in Australia/Lord_Howe", () => {
  const [o] = next(
    timing("Australia/Lord_Howe", "0 2 * * *", "shift", "first"),
    z("2026-10-03T12:00"),
    1,
  );
  assert.equal(o?.occurrence, "dst@2026-10-03T15:30:00.000Z");
  assert.equal(o?.local, "2026-10-04T02:30:00+11:00[Australia/Lord_Howe]");
  assert.equal(o?.note, "shifted: 02:00 does not exist on 2026-10-04");
});

Deno.test("next() notes the seconds of a shifted 6-field time on 2026-03-29 in Europe/London", () => {
  const [o] = next(
    timing("Europe/London", "15 30 1 * * *", "shift", "first"),
    z("2026-03-28T23:00"),
    1,
  );
  assert.equal(o?.occurrence, "dst@2026-03-29T01:30:15.000Z");
  assert.equal(o?.note, "shifted: 01:30:15 does not exist on 2026-03-29");
});

Deno.test("next() without a localTime policy shifts and runs the first, as Temporal's compatible", () => {
  const base = { id: "dst", rhythm: { kind: "cron", expression: "30 1,2 * * *" } } as const;
  const spring = next({ ...base, timezone: "America/New_York" }, z("2026-03-08T05:00"), 2);
  assert.deepEqual(spring.map((o) => o.occurrence), [
    "dst@2026-03-08T06:30:00.000Z",
    "dst@2026-03-08T07:30:00.000Z",
  ]);
  const fall = next({ ...base, timezone: "America/New_York" }, z("2026-11-01T04:00"), 2);
  assert.deepEqual(fall.map((o) => o.occurrence), [
    "dst@2026-11-01T05:30:00.000Z",
    "dst@2026-11-01T07:30:00.000Z",
  ]);
});
