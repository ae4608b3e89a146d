/**
 * Zone names as the time engine reads them: which mean UTC, and a name's
 * own IANA id when Temporal knows it.
 *
 * @module
 */

/** Zone names that mean UTC: no local clock, so no local-time policy needed. */
const UTC_NAMES = new Set([
  "UTC",
  "Etc/UTC",
  "Etc/UCT",
  "UCT",
  "Etc/Universal",
  "Universal",
  "Etc/Zulu",
  "Zulu",
  "GMT",
  "Etc/GMT",
  "Etc/GMT0",
  "Etc/GMT+0",
  "Etc/GMT-0",
  "GMT0",
  "GMT+0",
  "GMT-0",
  "Etc/Greenwich",
  "Greenwich",
]);

/** Whether `zone` is a name of UTC. */
export function isUtc(zone: string): boolean {
  return UTC_NAMES.has(zone);
}

/** The zone's own id if Temporal knows it, else null; offsets such as `+01:00` are not zones. */
export function zoneId(name: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return null;
  try {
    return new Temporal.ZonedDateTime(0n, name).timeZoneId;
  } catch {
    return null;
  }
}
