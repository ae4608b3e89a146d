/**
 * Cron fields matched against local wall-clock time. croner only ever sees
 * floating wall times (see `wall_time.ts`) at UTC offset 0, so its own zone
 * and DST rules never apply: which instants a wall time becomes is decided by
 * the schedule's declared policy, in `occurrences.ts`.
 *
 * @module
 */

import { Cron } from "npm:croner@11.0.1";

/** 5 fields, or 6 with seconds first; no year field. */
const MODE = "5-or-6-parts" as const;

function compile(expression: string): Cron {
  // `utcOffset: 0` rather than `timezone: "UTC"`: the same wall times, without
  // croner going through Intl for every step (about five times faster).
  return new Cron(expression, { paused: true, utcOffset: 0, mode: MODE });
}

const compiled = new Map<string, Cron>();

/** A compiled expression, shared between calls. Throws for an invalid one. */
export function cronFor(expression: string): Cron {
  let cron = compiled.get(expression);
  if (!cron) {
    cron = compile(expression);
    if (compiled.size >= 1_000) compiled.clear();
    compiled.set(expression, cron);
  }
  return cron;
}

/**
 * The first floating wall time (whole seconds) that matches `cron` and is
 * strictly after `wall`, or null when there is none before the year 10000.
 */
export function nextWall(cron: Cron, wall: number): number | null {
  const next = cron.nextRun(new Date(wall));
  return next ? next.getTime() : null;
}

/**
 * Checks a cron expression: 5 fields (minute hour day-of-month month
 * day-of-week), 6 with seconds first, or a nickname such as `@daily`; croner's
 * syntax, including `L`, `W`, `#` and names.
 *
 * @returns null when it is valid, else one sentence saying why not
 */
export function validateCron(expression: string): string | null {
  if (typeof expression !== "string" || expression.trim() === "") {
    return "cron expression is empty";
  }
  try {
    compile(expression);
    return null;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `invalid cron expression "${expression}": ${reason.replace(/^CronPattern: /, "")}`;
  }
}
