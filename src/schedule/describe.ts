/**
 * A schedule described in a few words, the same in the CLI and the TUI.
 * The text is as the file has it, unescaped: callers escape for their screen.
 *
 * @module
 */

import { formatDuration } from "./durations.ts";
import type { Schedule } from "./types.ts";

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
