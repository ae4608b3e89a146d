/**
 * Prints, as JSON, a fixed sample of occurrences. `sweep_test.ts` runs it
 * under several `TZ` values and compares with the same sample computed in its
 * own process: the engine must not depend on the machine's zone.
 */

import { between, next } from "../../src/schedule/occurrences.ts";
import type { Occurrence, Timing } from "../../src/schedule/types.ts";

const ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"];
const EXPRESSIONS = ["30 1 * * *", "30 2 * * *", "*/15 * * * *", "0 0 L * *", "*/20 * * * * *"];

/** The sample: every zone and expression, across the 2026 transitions. */
export function sample(): Record<string, Occurrence[]> {
  const out: Record<string, Occurrence[]> = {};
  for (const timezone of ZONES) {
    for (const expression of EXPRESSIONS) {
      const timing: Timing = {
        id: "tz",
        rhythm: { kind: "cron", expression },
        timezone,
        localTime: { reason: "sample", gap: "shift", overlap: "both" },
        jitterMs: 30_000,
      };
      out[`${timezone} ${expression} next`] = next(timing, Date.UTC(2026, 2, 7), 40);
      out[`${timezone} ${expression} between`] = between(
        timing,
        Date.UTC(2026, 9, 24, 20),
        Date.UTC(2026, 10, 2),
        200,
      );
    }
    out[`${timezone} every`] = next(
      {
        id: "tz",
        rhythm: { kind: "every", everyMs: 37 * 60_000, anchor: Date.UTC(2026, 0, 1, 0, 5) },
        timezone,
      },
      Date.UTC(2026, 2, 8),
      20,
    );
  }
  return out;
}

if (import.meta.main) {
  console.log(JSON.stringify(sample()));
}
