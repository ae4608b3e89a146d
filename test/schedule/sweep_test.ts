/**
 * Wide checks: many zones x many expressions x 1,000 occurrences over
 * 2025-2030, each strictly increasing, unique, resumable, matching its
 * expression, and (for minute-level expressions) equal to a brute-force
 * minute-by-minute oracle. Also: the wall-time resolver agrees with
 * Temporal's own disambiguation, and the results do not depend on `TZ`.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { cronFor } from "../../src/schedule/cron_local.ts";
import { between, next, occurrenceInstant } from "../../src/schedule/occurrences.ts";
import type { GapPolicy, Occurrence, OverlapPolicy, Timing } from "../../src/schedule/types.ts";
import { floatingToPlain, zoneRules } from "../../src/schedule/wall_time.ts";
import { sample } from "./tz_child.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const ZONES = [
  "UTC",
  "America/New_York",
  "Europe/London",
  "Australia/Lord_Howe",
  "Asia/Kolkata",
  "America/Sao_Paulo",
  "America/St_Johns",
  "Pacific/Chatham",
  "Antarctica/Troll",
  "Europe/Dublin",
  "Africa/Casablanca",
  "Pacific/Apia",
  "Asia/Tehran",
  "Australia/Adelaide",
];

const EXPRESSIONS = [
  "* * * * *",
  "*/15 * * * *",
  "0 * * * *",
  "30 1 * * *",
  "30 2 * * *",
  "0 0 L * *",
  "0 9 * * 1-5",
  "*/20 * * * * *",
  "@daily",
  "0 12 * * 5#2",
  "0 0 15W * *",
  "0 0 29 * *",
  "0,30 0-3 * * *",
];

const POLICIES: { gap: GapPolicy; overlap: OverlapPolicy }[] = [
  { gap: "skip", overlap: "first" },
  { gap: "shift", overlap: "second" },
  { gap: "shift", overlap: "both" },
  { gap: "skip", overlap: "both" },
  { gap: "shift", overlap: "first" },
  { gap: "skip", overlap: "second" },
];

function timing(timezone: string, expression: string, policy: typeof POLICIES[number]): Timing {
  return {
    id: "sweep",
    rhythm: { kind: "cron", expression },
    timezone,
    localTime: { reason: "sweep", ...policy },
  };
}

/** Eight hours before the first transition after a date spread over 2025-2030, or that date. */
function startFor(timezone: string, k: number): number {
  const date = Date.UTC(2025 + (k % 6), (k * 5) % 12, 1 + (k % 27));
  const transition = Temporal.Instant.fromEpochMilliseconds(date).toZonedDateTimeISO(timezone)
    .getTimeZoneTransition("next");
  return transition ? transition.epochMilliseconds - 8 * HOUR : date;
}

/** The floating wall time of an occurrence, read from its `local` string. */
function wallOf(occurrence: Occurrence): number {
  return Date.parse(`${occurrence.local.slice(0, 19)}Z`);
}

function checkSeries(label: string, series: Occurrence[]): void {
  for (let i = 1; i < series.length; i++) {
    const a = series[i - 1]!;
    const b = series[i]!;
    if (!(b.at > a.at)) {
      assert.fail(`${label}: ${b.occurrence} does not follow ${a.occurrence}`);
    }
  }
  assert.equal(new Set(series.map((o) => o.occurrence)).size, series.length, `${label}: unique`);
}

/**
 * The same occurrences found the slow way: every minute instant in
 * `[from, to)`, its wall time matched against the expression, and the policy
 * applied with Temporal's own `earlier`/`later` disambiguation.
 */
function oracle(t: Timing, expression: string, from: number, to: number): number[] {
  const cron = cronFor(expression);
  const zone = t.timezone;
  const { gap, overlap } = t.localTime!;
  const out = new Set<number>();
  for (let instant = from; instant < to; instant += MINUTE) {
    // Instants whose wall time matches, run if the overlap policy picks them.
    const zoned = Temporal.Instant.fromEpochMilliseconds(instant).toZonedDateTimeISO(zone);
    const plain = zoned.toPlainDateTime();
    const wall = Date.parse(`${plain.toString().slice(0, 19)}Z`);
    if (cron.match(new Date(wall))) {
      const earlier = plain.toZonedDateTime(zone, { disambiguation: "earlier" }).epochMilliseconds;
      const later = plain.toZonedDateTime(zone, { disambiguation: "later" }).epochMilliseconds;
      const repeated = earlier !== later;
      if (
        !repeated || overlap === "both" || (overlap === "first" && instant === earlier) ||
        (overlap === "second" && instant === later)
      ) out.add(instant);
    }
  }
  if (gap === "shift") {
    // Wall times that do not exist, moved forward by the gap.
    for (let wall = from - 16 * HOUR; wall < to + 16 * HOUR; wall += MINUTE) {
      if (!cron.match(new Date(wall))) continue;
      const plain = floatingToPlain(wall);
      let exists = true;
      try {
        plain.toZonedDateTime(zone, { disambiguation: "reject" });
      } catch {
        exists = plain.toZonedDateTime(zone, { disambiguation: "earlier" }).toPlainDateTime()
          .equals(plain);
      }
      if (exists) continue;
      const shifted = plain.toZonedDateTime(zone, { disambiguation: "later" }).epochMilliseconds;
      if (shifted >= from && shifted < to) out.add(shifted);
    }
  }
  return [...out].sort((a, b) => a - b);
}

Deno.test("next() sweeps zones x expressions x 1,000 occurrences, increasing and unique", () => {
  let total = 0;
  let elapsed = 0;
  let k = 0;
  for (const zone of ZONES) {
    for (const expression of EXPRESSIONS) {
      const policy = POLICIES[k % POLICIES.length]!;
      const t = timing(zone, expression, policy);
      const after = startFor(zone, k++);
      const started = performance.now();
      const series = next(t, after, 1000);
      elapsed += performance.now() - started;
      total += series.length;
      const label = `${expression} in ${zone} (${policy.gap}/${policy.overlap})`;
      assert.ok(
        series.length === 1000,
        `${label}: ${series.length} occurrences`,
      );
      assert.ok(occurrenceInstant(series[0]!.occurrence) > after, `${label}: after is exclusive`);
      checkSeries(label, series);
      // Every occurrence not shifted is on a wall time the expression matches.
      const cron = cronFor(expression);
      for (const o of series) {
        if (o.note?.startsWith("shifted:")) continue;
        assert.ok(cron.match(new Date(wallOf(o))), `${label}: ${o.local} does not match`);
      }
    }
  }
  console.log(
    `sweep: ${total} occurrences (${ZONES.length} zones x ${EXPRESSIONS.length} expressions x 1,000) in ${
      elapsed.toFixed(0)
    } ms, ${(elapsed / (total / 1000)).toFixed(2)} ms per 1,000`,
  );
});

Deno.test("next() resumed from its last occurrence and between() agree with one long next()", () => {
  let k = 0;
  for (const zone of ZONES) {
    for (const expression of ["*/15 * * * *", "0,30 0-3 * * *", "30 1 * * *", "30 2 * * *"]) {
      for (const policy of POLICIES) {
        const t = timing(zone, expression, policy);
        const after = startFor(zone, k++);
        const whole = next(t, after, 300);
        const resumed: Occurrence[] = [];
        let cursor = after;
        while (resumed.length < 300) {
          const chunk = next(t, cursor, 7);
          resumed.push(...chunk);
          cursor = occurrenceInstant(chunk[chunk.length - 1]!.occurrence);
        }
        const label = `${expression} in ${zone} (${policy.gap}/${policy.overlap})`;
        assert.deepEqual(resumed.slice(0, 300), whole, `${label}: resumed`);
        const last = occurrenceInstant(whole[whole.length - 1]!.occurrence);
        assert.deepEqual(between(t, after + 1, last + 1, 1000), whole, `${label}: between`);
      }
    }
  }
});

Deno.test("between() equals a minute-by-minute Temporal oracle around transitions", () => {
  let k = 0;
  for (const zone of ZONES) {
    for (const expression of ["*/15 * * * *", "0,30 0-3 * * *", "30 1 * * *", "30 2 * * *"]) {
      for (const policy of POLICIES) {
        const t = timing(zone, expression, policy);
        const from = startFor(zone, k++);
        const to = from + 20 * HOUR;
        const got = between(t, from, to).map((o) => occurrenceInstant(o.occurrence));
        const label = `${expression} in ${zone} (${policy.gap}/${policy.overlap})`;
        const want = oracle(t, expression, from, to);
        assert.deepEqual(
          got.map((ms) => new Date(ms).toISOString()),
          want.map((ms) => new Date(ms).toISOString()),
          label,
        );
      }
    }
  }
});

Deno.test("the wall-time resolver agrees with Temporal's disambiguation near every transition 2025-2030", () => {
  for (const zone of ZONES) {
    const rules = zoneRules(zone);
    let cursor = Temporal.Instant.fromEpochMilliseconds(Date.UTC(2025, 0, 1)).toZonedDateTimeISO(
      zone,
    );
    for (;;) {
      const transition = cursor.getTimeZoneTransition("next");
      if (!transition || transition.epochMilliseconds > Date.UTC(2031, 0, 1)) break;
      cursor = transition;
      const t = transition.epochMilliseconds;
      for (let wall = t - 4 * HOUR + 16 * HOUR; wall > t - 16 * HOUR; wall -= 5 * MINUTE) {
        const plain = floatingToPlain(wall);
        const earlier = plain.toZonedDateTime(zone, { disambiguation: "earlier" });
        const later = plain.toZonedDateTime(zone, { disambiguation: "later" });
        const got = rules.resolve(wall);
        const where = `${plain} in ${zone}`;
        if (earlier.epochMilliseconds === later.epochMilliseconds) {
          assert.deepEqual(got, { kind: "exact", at: earlier.epochMilliseconds }, where);
        } else if (earlier.toPlainDateTime().equals(plain)) {
          assert.deepEqual(
            got,
            { kind: "overlap", first: earlier.epochMilliseconds, second: later.epochMilliseconds },
            where,
          );
        } else {
          assert.equal(got.kind, "gap", where);
          assert.equal(got.kind === "gap" && got.shiftedAt, later.epochMilliseconds, where);
        }
      }
    }
  }
});

Deno.test("next() and between() give the same results with TZ set to three zones", async () => {
  const child = fileURLToPath(new URL("./tz_child.ts", import.meta.url));
  const here = JSON.parse(JSON.stringify(sample()));
  for (const tz of ["America/Los_Angeles", "Asia/Kathmandu", "Australia/Lord_Howe"]) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", child],
      env: { TZ: tz },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const there = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.deepEqual(there, here, `TZ=${tz}`);
  }
});
