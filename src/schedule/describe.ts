/**
 * A schedule described in a few words, the same in the CLI and the TUI,
 * and an instant as both show it ({@linkcode when}: UTC, the schedule's
 * wall clock, how long ago). The text is as the file has it, unescaped:
 * callers escape for their screen.
 *
 * @module
 */

import { isUtc } from "./zones.ts";
import { ago, formatDuration } from "../text/durations.ts";
import type { Schedule } from "./types.ts";
import { wallClock, wallDate, zoneRules } from "./wall_time.ts";

/** `cron "0 3 * * *"`, `every 15s` or `manual`. */
export function rhythmText(schedule: Schedule): string {
  const rhythm = schedule.rhythm;
  return rhythm.kind === "cron"
    ? `cron "${rhythm.expression}"`
    : rhythm.kind === "every"
    ? `every ${formatDuration(rhythm.everyMs)}`
    : "manual";
}

/** The misfire policy, with its limit for `catch_up`. */
export function misfireText(schedule: Schedule): string {
  return schedule.misfire.policy === "catch_up"
    ? `catch_up (limit ${schedule.misfire.catchUpLimit})`
    : schedule.misfire.policy;
}

/**
 * `instant` as the wall clock of `zone` reads it, with the zone's offset
 * then (DST-exact, from the zone's rules, never the machine's), to stand
 * beside the same instant in UTC: `05:00 +02:00 Europe/Berlin`, the local
 * date first when it is not the UTC date (`2026-06-03 01:00 +09:00
 * Asia/Tokyo`), seconds when they are not zero; without the zone's name
 * unless `named` (where it is named nearby). Null for UTC, where it would
 * say the same again, and for a zone this runtime does not know.
 */
export function localBeside(instant: number, zone: string, named = true): string | null {
  if (isUtc(zone)) return null;
  let offsetMs: number;
  try {
    offsetMs = zoneRules(zone).offsetAt(instant);
  } catch {
    return null;
  }
  const wall = instant + offsetMs;
  const date = wallDate(wall) === wallDate(instant) ? "" : `${wallDate(wall)} `;
  return `${date}${wallClock(wall)} ${offsetText(offsetMs)}${named ? ` ${zone}` : ""}`;
}

/**
 * An instant for a person, the same in the CLI and the TUI:
 * `2026-03-08T07:00:00.000Z (12s ago)`, `... (in 3m)`, or `-` for none;
 * with a `zone` other than UTC (a schedule's), its wall clock and offset
 * first: `2026-03-08T07:00:00.000Z (03:00 -04:00 America/New_York, in 3m)`,
 * without the zone's name unless `named`. Safe for a terminal as it is:
 * {@linkcode localBeside} names only a zone Temporal knows, whose name has
 * no control characters.
 */
export function when(
  ms: number | null,
  now: number,
  zone: string | null = null,
  named = true,
): string {
  if (ms === null) return "-";
  const local = zone === null ? null : localBeside(ms, zone, named);
  return `${new Date(ms).toISOString()} (${local === null ? "" : `${local}, `}${ago(ms, now)})`;
}

/** `+02:00`, `-03:30`, `+00:00`; `+00:53:28` for an offset with seconds (old local mean times). */
function offsetText(offsetMs: number): string {
  const total = Math.round(Math.abs(offsetMs) / 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  const seconds = total % 60;
  return `${offsetMs < 0 ? "-" : "+"}${pad(Math.floor(total / 3600))}:${
    pad(Math.floor(total / 60) % 60)
  }${seconds === 0 ? "" : `:${pad(seconds)}`}`;
}
