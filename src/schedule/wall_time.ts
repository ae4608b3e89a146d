/**
 * Local wall-clock time in an IANA zone, turned into instants with the
 * built-in `Temporal`. A wall time here is "floating": epoch milliseconds read
 * as if the zone were UTC (`2026-03-08T02:30` is `Date.UTC(2026, 2, 8, 2, 30)`),
 * so wall times compare and sort like numbers. Pure: never reads the machine's
 * time or its local zone.
 *
 * @module
 */

const HOUR_MS = 3_600_000;
/**
 * How far from a wall time (read as UTC) its instants can be: no zone has had
 * an offset beyond ±16 h (Samoa moved by 24 h in 2011, from -10 to +14), so
 * 30 h covers every segment a wall time can land in.
 */
export const OFFSET_REACH_MS = 30 * HOUR_MS;

/** A stretch of instants `[start, end)` with one UTC offset. */
export interface Segment {
  start: number;
  end: number;
  offsetMs: number;
}

/** How one wall time maps to instants. */
export type WallResolution =
  /** It happens once. */
  | { kind: "exact"; at: number }
  /** It does not exist; `shiftedAt` is the wall time moved forward by the gap (RFC 5545, Temporal's `compatible`). */
  | { kind: "gap"; shiftedAt: number; gapMs: number }
  /** It happens twice: `first` at the earlier offset's instant, `second` later. */
  | { kind: "overlap"; first: number; second: number };

/** The offsets of one zone, read from `Temporal` a segment at a time and kept. */
export class ZoneRules {
  readonly timeZone: string;
  /** Known segments, sorted by `start`, never overlapping. */
  #segments: Segment[] = [];

  constructor(timeZone: string) {
    // Throws a RangeError for a zone Temporal does not know.
    this.timeZone = Temporal.Instant.fromEpochMilliseconds(0).toZonedDateTimeISO(timeZone)
      .timeZoneId;
  }

  /** The segment holding `instant`. */
  segmentAt(instant: number): Segment {
    const segments = this.#segments;
    let lo = 0;
    let hi = segments.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (segments[mid]!.start <= instant) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    const hit = found >= 0 ? segments[found] : undefined;
    if (hit && instant < hit.end) return hit;
    const segment = this.#readSegment(instant);
    segments.splice(found + 1, 0, segment);
    return segment;
  }

  /** The UTC offset at `instant`, in ms (east positive). */
  offsetAt(instant: number): number {
    return this.segmentAt(instant).offsetMs;
  }

  /** Segments that hold any instant of `[from, to]`, in order. */
  segmentsBetween(from: number, to: number): Segment[] {
    const out: Segment[] = [];
    let segment = this.segmentAt(from);
    out.push(segment);
    while (segment.end <= to) {
      segment = this.segmentAt(segment.end);
      out.push(segment);
    }
    return out;
  }

  /** The smallest and largest offsets over the instants `[from, to]`. */
  offsetRange(from: number, to: number): { min: number; max: number } {
    const first = this.segmentAt(from);
    if (first.end > to) return { min: first.offsetMs, max: first.offsetMs };
    let min = Infinity;
    let max = -Infinity;
    for (const segment of this.segmentsBetween(from, to)) {
      if (segment.offsetMs < min) min = segment.offsetMs;
      if (segment.offsetMs > max) max = segment.offsetMs;
    }
    return { min, max };
  }

  /** The instant(s) of the floating wall time `wall`, or the gap it falls in. */
  resolve(wall: number): WallResolution {
    // Most wall times are far from any transition: one segment, one instant.
    const around = this.segmentAt(wall - OFFSET_REACH_MS);
    if (around.end > wall + OFFSET_REACH_MS) return { kind: "exact", at: wall - around.offsetMs };
    const segments = this.segmentsBetween(wall - OFFSET_REACH_MS, wall + OFFSET_REACH_MS);
    let first: number | undefined;
    let last: number | undefined;
    for (const segment of segments) {
      const at = wall - segment.offsetMs;
      if (at >= segment.start && at < segment.end) {
        if (first === undefined || at < first) first = at;
        if (last === undefined || at > last) last = at;
      }
    }
    if (first !== undefined && last !== undefined) {
      return first === last
        ? { kind: "exact", at: first }
        : { kind: "overlap", first, second: last };
    }
    for (let i = 1; i < segments.length; i++) {
      const before = segments[i - 1]!;
      const after = segments[i]!;
      const transition = after.start;
      if (transition + before.offsetMs <= wall && wall < transition + after.offsetMs) {
        return {
          kind: "gap",
          shiftedAt: wall - before.offsetMs,
          gapMs: after.offsetMs - before.offsetMs,
        };
      }
    }
    // Unreachable with consistent zone data; Temporal decides if it ever is.
    const at = floatingToPlain(wall).toZonedDateTime(this.timeZone, {
      disambiguation: "compatible",
    }).epochMilliseconds;
    return { kind: "exact", at };
  }

  /** `instant` as Temporal writes it in this zone, e.g. `2026-03-08T03:30:00-04:00[America/New_York]`. */
  format(instant: number): string {
    return Temporal.Instant.fromEpochMilliseconds(instant).toZonedDateTimeISO(this.timeZone)
      .toString();
  }

  #readSegment(instant: number): Segment {
    const zoned = Temporal.Instant.fromEpochMilliseconds(instant).toZonedDateTimeISO(
      this.timeZone,
    );
    const next = zoned.getTimeZoneTransition("next");
    // "previous" is strictly before its instant; one ms later makes it "at or before".
    const previous = Temporal.Instant.fromEpochMilliseconds(instant + 1)
      .toZonedDateTimeISO(this.timeZone).getTimeZoneTransition("previous");
    return {
      start: previous ? previous.epochMilliseconds : -Infinity,
      end: next ? next.epochMilliseconds : Infinity,
      offsetMs: zoned.offsetNanoseconds / 1_000_000,
    };
  }
}

const rulesByZone = new Map<string, ZoneRules>();

/**
 * The rules of `timeZone`, shared: zone data does not change while the
 * process runs. Throws a RangeError for an unknown zone.
 */
export function zoneRules(timeZone: string): ZoneRules {
  let rules = rulesByZone.get(timeZone);
  if (!rules) {
    rules = new ZoneRules(timeZone);
    rulesByZone.set(timeZone, rules);
  }
  return rules;
}

/** The floating wall time as a `Temporal.PlainDateTime`. */
export function floatingToPlain(wall: number): Temporal.PlainDateTime {
  return Temporal.Instant.fromEpochMilliseconds(wall).toZonedDateTimeISO("UTC").toPlainDateTime();
}

/** `HH:MM`, or `HH:MM:SS` when the seconds are not zero, of a floating wall time. */
export function wallClock(wall: number): string {
  const iso = new Date(wall).toISOString();
  const seconds = iso.slice(17, 19);
  return seconds === "00" ? iso.slice(11, 16) : iso.slice(11, 19);
}

/** `YYYY-MM-DD` of a floating wall time. */
export function wallDate(wall: number): string {
  return new Date(wall).toISOString().slice(0, 10);
}
