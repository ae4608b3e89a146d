/** Test support: schedules made the way `schedules.yaml` makes them. */

import { parseSchedules } from "../../src/config/load.ts";
import type { Schedule } from "../../src/schedule/types.ts";

/** One schedule as `schedules.yaml` would declare it (a `tick` worker run unless given), validated. */
export function scheduleOf(fields: Record<string, unknown>): Schedule {
  const result = parseSchedules(
    JSON.stringify({ version: 1, schedules: [{ run: { worker: "tick" }, ...fields }] }),
    "schedules.yaml",
  );
  if (!result.ok) throw new Error(result.errors.map((e) => e.message).join("\n"));
  return result.config.schedules[0]!;
}
