/**
 * The occurrence engine: a schedule's timing in, its planned instants out.
 * Pure: no store, no I/O, and it never reads the machine's time or local zone;
 * every instant it needs comes in as an argument.
 *
 * - `cron`: the fields are matched against local wall-clock time in the
 *   schedule's zone (croner, on floating wall times), and each matching wall
 *   time becomes instants by the schedule's `localTime` policy (`Temporal`
 *   zone data). A wall time that does not exist (spring forward) is skipped or
 *   shifted forward by the gap; one that happens twice (fall back) runs at the
 *   first, the second or both instants.
 * - `every`: real elapsed time on the grid `anchor + k * everyMs`; wall
 *   clocks and DST play no part.
 * - `manual`: never planned.
 *
 * Bounds: `next()` takes instants strictly after `after`; `between()` takes
 * `[from, to)`, from inclusive and to exclusive, so consecutive windows
 * neither overlap nor leave holes. `startAt` and `endAt` are both inclusive.
 * All of them apply to the instant before jitter, the one in the identity, so
 * planning can resume from the last planned identity whatever the jitter.
 *
 * @module
 */

import type { GapPolicy, Occurrence, OverlapPolicy, Timing } from "./types.ts";
import { cronFor, nextWall, validateCron } from "./cron_local.ts";
import { OFFSET_REACH_MS, wallClock, wallDate, type ZoneRules, zoneRules } from "./wall_time.ts";

export { validateCron };

/** How far `neverFires()` looks ahead: 8 years of 366 days. */
export const NEVER_FIRES_HORIZON_MS = 8 * 366 * 86_400_000;

/** What `between()` returns at most when no limit is given. @default 10_000 */
export const DEFAULT_BETWEEN_LIMIT = 10_000;

/**
 * The policy used for a zone with transitions when the timing declares none
 * (the config parser requires one outside UTC): RFC 5545's and Temporal's
 * `compatible`, shift forward and run the first.
 */
const DEFAULT_POLICY: { gap: GapPolicy; overlap: OverlapPolicy } = {
  gap: "shift",
  overlap: "first",
};

/** One planned instant before jitter, with its DST note. */
interface Planned {
  instant: number;
  note: string | null;
}

/**
 * The next `count` occurrences strictly after `after` (UTC ms), sorted by
 * `at` and unique by identity. Empty for a manual schedule, for `count <= 0`,
 * and past `endAt`.
 *
 * @param timing the schedule's id, rhythm, zone, policy, bounds and jitter
 * @param after exclusive lower bound, UTC epoch ms (compared with the pre-jitter instant)
 * @param count how many to return at most
 */
export function next(timing: Timing, after: number, count: number): Occurrence[] {
  checkInstant("after", after);
  if (!(count > 0)) return [];
  const out: Planned[] = [];
  for (const planned of plan(timing, after, undefined)) {
    out.push(planned);
    if (out.length >= count) break;
  }
  return finish(timing, out);
}

/**
 * The occurrences whose pre-jitter instant lies in `[from, to)` (from
 * inclusive, to exclusive), at most `limit` of them (the earliest), sorted by
 * `at` and unique by identity.
 *
 * @param timing the schedule's id, rhythm, zone, policy, bounds and jitter
 * @param from inclusive lower bound, UTC epoch ms
 * @param to exclusive upper bound, UTC epoch ms
 * @param limit how many to return at most. @default 10_000
 */
export function between(
  timing: Timing,
  from: number,
  to: number,
  limit: number = DEFAULT_BETWEEN_LIMIT,
): Occurrence[] {
  checkInstant("from", from);
  checkInstant("to", to);
  if (!(limit > 0) || !(from < to)) return [];
  const out: Planned[] = [];
  for (const planned of plan(timing, from - 1, to)) {
    if (planned.instant >= to) break;
    if (planned.instant < from) continue;
    out.push(planned);
    if (out.length >= limit) break;
  }
  return finish(timing, out);
}

/**
 * Whether a schedule has no occurrence in the 8 years from `from` (inclusive),
 * such as `0 0 31 2 *` (February 31st), a local time its gap policy skips on
 * every matching day, or an `endAt` already past. A manual schedule returns
 * false: it is never planned, by design, and runs when an operator runs it.
 *
 * @param timing the schedule's timing, as for `next()`
 * @param from UTC epoch ms where the look-ahead starts
 */
export function neverFires(timing: Timing, from: number): boolean {
  if (timing.rhythm.kind === "manual") return false;
  return between(timing, from, from + NEVER_FIRES_HORIZON_MS, 1).length === 0;
}

/**
 * The pre-jitter instant (UTC ms) of an occurrence, read from its identity
 * (`nightly@2026-03-08T07:00:00.000Z`): what follows the last `@`, NaN when
 * that is no date.
 */
export function occurrenceInstant(occurrence: string): number {
  return Date.parse(occurrence.slice(occurrence.lastIndexOf("@") + 1));
}

/**
 * The identity of a fan-out item of occurrence `parent`: `<parent>#<key>`
 * (`nightly@2026-03-08T07:00:00.000Z#eu-west`).
 */
export function itemOccurrenceId(parent: string, key: string): string {
  return `${parent}#${key}`;
}

/** The occurrence a fan-out item's identity belongs to (an occurrence's own identity is itself). */
export function parentOccurrence(occurrence: string): string {
  return occurrence.replace(/#[^#@]*$/, "");
}

/** The identity of the occurrence of schedule `id` at `instant`: `nightly@2026-03-08T07:00:00.000Z`. */
export function occurrenceId(id: string, instant: number): string {
  return `${id}@${new Date(instant).toISOString()}`;
}

/**
 * The jitter of one occurrence in `[0, jitterMs)`: FNV-1a (32 bit) of its
 * identity, scaled, so every node computes the same value.
 */
export function jitterFor(identity: string, jitterMs: number): number {
  if (!(jitterMs > 0)) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < identity.length; i++) {
    hash ^= identity.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return Math.floor(((hash >>> 0) / 0x1_0000_0000) * Math.floor(jitterMs));
}

function finish(timing: Timing, planned: Planned[]): Occurrence[] {
  const rules = zoneRules(zoneOf(timing));
  const jitterMs = timing.jitterMs ?? 0;
  const out = planned.map(({ instant, note }): Occurrence => {
    const occurrence = occurrenceId(timing.id, instant);
    return {
      at: instant + jitterFor(occurrence, jitterMs),
      occurrence,
      local: rules.format(instant),
      note,
    };
  });
  // Jitter wider than the spacing of occurrences can reorder them.
  if (jitterMs > 0) out.sort((a, b) => a.at - b.at || (a.occurrence < b.occurrence ? -1 : 1));
  return out;
}

/**
 * Pre-jitter instants strictly after `after`, increasing and unique, within
 * `startAt`/`endAt`. `until`, when given, lets the cron search stop once no
 * instant before it can follow.
 */
function* plan(timing: Timing, after: number, until: number | undefined): Generator<Planned> {
  const { startAt, endAt } = timing;
  const lower = startAt === undefined ? after : Math.max(after, startAt - 1);
  let upper = endAt === undefined ? Infinity : endAt + 1;
  if (until !== undefined) upper = Math.min(upper, until);
  if (!(lower < upper)) return;
  const source = timing.rhythm.kind === "cron"
    ? cronInstants(timing.rhythm.expression, timing, lower, upper)
    : timing.rhythm.kind === "every"
    ? everyInstants(timing.rhythm.everyMs, timing.rhythm.anchor, lower)
    : [];
  for (const planned of source) {
    if (planned.instant >= upper) return;
    if (startAt !== undefined && planned.instant < startAt) continue;
    yield planned;
  }
}

function* everyInstants(everyMs: number, anchor: number, after: number): Generator<Planned> {
  if (!(everyMs > 0) || !Number.isFinite(everyMs)) {
    throw new RangeError(`every must be a positive number of ms, got ${everyMs}`);
  }
  const origin = Number.isFinite(anchor) ? anchor : 0;
  for (let k = Math.floor((after - origin) / everyMs);; k++) {
    const instant = origin + k * everyMs;
    if (instant > after) yield { instant, note: null };
  }
}

/**
 * Cron instants strictly after `after`. Wall times come from croner in
 * increasing order, but the instants they become do not: a shifted 02:30 lands
 * after the real 03:00, and a repeated hour runs again. So instants wait in a
 * small sorted buffer until no later wall time can produce an earlier one.
 */
function* cronInstants(
  expression: string,
  timing: Timing,
  after: number,
  upper: number,
): Generator<Planned> {
  const cron = cronFor(expression);
  const rules = zoneRules(zoneOf(timing));
  const policy = timing.localTime ?? DEFAULT_POLICY;
  // Any instant past `after` comes from a wall time at least `after` plus the
  // smallest offset near it: less than `after`'s own offset after a fall back,
  // or, for a shifted wall time, the offset before a gap that `after` is past.
  const near = rules.offsetRange(after - OFFSET_REACH_MS, after + OFFSET_REACH_MS);
  // croner looks strictly after a whole second; one ms back keeps `after + min` itself.
  let wall = after + near.min - 1;
  const stopWall = upper === Infinity ? Infinity : upper + OFFSET_REACH_MS;
  const pending: Planned[] = [];
  for (;;) {
    const found = nextWall(cron, wall);
    if (found === null || found > stopWall) break;
    wall = found;
    for (const planned of resolveWall(rules, wall, policy)) {
      if (planned.instant > after) insertPlanned(pending, planned);
    }
    // A later wall time w' becomes an instant w' - offset > wall - max offset.
    const { max } = rules.offsetRange(wall - OFFSET_REACH_MS, wall + OFFSET_REACH_MS);
    const safe = wall - max;
    while (pending.length > 0 && pending[0]!.instant <= safe) yield pending.shift()!;
  }
  yield* pending;
}

/** The instants one wall time runs at under the policy, with their notes. */
function resolveWall(
  rules: ZoneRules,
  wall: number,
  policy: { gap: GapPolicy; overlap: OverlapPolicy },
): Planned[] {
  const resolution = rules.resolve(wall);
  switch (resolution.kind) {
    case "exact":
      return [{ instant: resolution.at, note: null }];
    case "gap":
      if (policy.gap === "skip") return [];
      return [{
        instant: resolution.shiftedAt,
        note: `shifted: ${wallClock(wall)} does not exist on ${wallDate(wall)}`,
      }];
    case "overlap": {
      const which = policy.overlap === "both" ? "both" : `the ${policy.overlap}`;
      const note = `repeated: ${wallClock(wall)} happens twice, running ${which}`;
      if (policy.overlap === "first") return [{ instant: resolution.first, note }];
      if (policy.overlap === "second") return [{ instant: resolution.second, note }];
      return [{ instant: resolution.first, note }, { instant: resolution.second, note }];
    }
  }
}

/**
 * Inserts into a buffer sorted by instant. Two wall times that a policy makes
 * coincide (a shifted 02:00 and the real 03:00) are one occurrence; it keeps
 * the note that says what happened.
 */
function insertPlanned(pending: Planned[], planned: Planned): void {
  let i = pending.length;
  while (i > 0 && pending[i - 1]!.instant > planned.instant) i--;
  const previous = pending[i - 1];
  if (previous && previous.instant === planned.instant) {
    if (previous.note === null) previous.note = planned.note;
    else if (planned.note !== null && planned.note !== previous.note) {
      previous.note = `${previous.note}; ${planned.note}`;
    }
    return;
  }
  pending.splice(i, 0, planned);
}

function zoneOf(timing: Timing): string {
  return timing.timezone || "UTC";
}

function checkInstant(name: string, value: number): void {
  if (!Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite instant, got ${value}`);
  }
}
