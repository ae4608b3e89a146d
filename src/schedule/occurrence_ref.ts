/**
 * An occurrence as a person types it, read leniently: the identity is
 * `<schedule id>@<ISO instant with ms>` (`nightly@2026-03-08T07:00:00.000Z`),
 * but an operator copies the instant from a log, a calendar or the schedule's
 * own local time. Any spelling of the same instant names the same
 * occurrence: without milliseconds or seconds, with `Z` or an offset
 * (`+01:00`), or a local date-time without offset read in the schedule's
 * zone (given in brackets, `2026-12-04T18:16[Europe/Paris]`, or the zone the
 * schedules file declares). Local wall time lives only under `src/schedule/`,
 * so the reading happens here.
 *
 * @module
 */

import { occurrenceId } from "./occurrences.ts";

/** What {@linkcode readOccurrenceRef} made of a reference. */
export type OccurrenceRef =
  /**
   * The canonical identities the reference may name, with their instants:
   * one, or two for a local time that happens twice (fall back) or does not
   * exist (spring forward: before and after the gap).
   */
  | { scheduleId: string; ids: string[]; instants: number[] }
  /** Shaped like an occurrence, but its instant cannot be read; `why` says so. */
  | { scheduleId: string; ids: []; instants: []; why: string };

/** A date and a time of day (seconds and fraction optional), `T` or a space between them. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}([.,]\d{1,9})?)?$/i;
/** A local date-time with an optional bracketed IANA zone at its end. */
const LOCAL = /^(?<wall>[^[\]]+?)(\[(?<zone>[^[\]]+)\])?$/;

/**
 * Reads `ref` as an occurrence of a schedule, or returns null when it is not
 * shaped like one (no `@`, or an empty side: a job id, a typo). Schedule ids
 * never hold `@`, so the first one splits.
 *
 * @param ref what the person typed, e.g. `hello@2026-12-04T17:16Z`
 * @param zoneOf the IANA zone of a schedule the schedules file declares,
 *   for a local time given without offset or bracketed zone
 */
export function readOccurrenceRef(
  ref: string,
  zoneOf: (scheduleId: string) => string | undefined = () => undefined,
): OccurrenceRef | null {
  const at = ref.indexOf("@");
  if (at <= 0 || at === ref.length - 1) return null;
  const scheduleId = ref.slice(0, at);
  const text = ref.slice(at + 1).trim();
  const found = (instants: number[]): OccurrenceRef => {
    const unique = [...new Set(instants)];
    return { scheduleId, ids: unique.map((i) => occurrenceId(scheduleId, i)), instants: unique };
  };
  const refused = (why: string): OccurrenceRef => ({ scheduleId, ids: [], instants: [], why });
  // An instant with its offset (or Z) is the same instant whatever the zone.
  try {
    return found([Temporal.Instant.from(text).epochMilliseconds]);
  } catch {
    // Not an instant with an offset; perhaps a local time.
  }
  const local = LOCAL.exec(text)?.groups;
  if (!local || !DATE_TIME.test(local.wall!)) {
    return refused(
      `its instant is not one such as 2026-03-08T07:00Z, 2026-03-08T08:00+01:00 or a ` +
        `local time such as 2026-03-08T08:00[Europe/Paris]`,
    );
  }
  const zone = local.zone ?? zoneOf(scheduleId);
  if (zone === undefined) {
    return refused(
      `its local time has no offset, and the schedules file declares no schedule of that id ` +
        `whose zone would read it: add the offset (Z, +01:00) or the zone ([Europe/Paris])`,
    );
  }
  let wall: Temporal.PlainDateTime;
  try {
    wall = Temporal.PlainDateTime.from(local.wall!.replace(" ", "T"));
  } catch {
    return refused(`its instant is not a date and time of day`);
  }
  try {
    // Both readings: a repeated local time (fall back) names two instants,
    // a missing one (spring forward) the instants either side of the gap.
    return found(
      (["earlier", "later"] as const).map((disambiguation) =>
        wall.toZonedDateTime(zone, { disambiguation }).epochMilliseconds
      ),
    );
  } catch {
    return refused(`"${zone}" is not a time zone`);
  }
}
