/**
 * Uniqueness as Oban has it: a key derived from the worker and its args (all
 * of them, chosen keys, or none), optionally bucketed by a period, held while
 * the job is incomplete or for as long as the row exists.
 *
 * @module
 */

import { createHash } from "node:crypto";

/** How a job is unique. */
export interface UniqueOptions {
  /**
   * What makes two jobs the same: `"args"` (worker and all args), `"worker"`
   * (the worker alone), or `{ keys: [...] }` (worker and these top-level args).
   * @default "args"
   */
  by?: "args" | "worker" | { keys: string[] };
  /**
   * Jobs are duplicates only within the same period of this many ms (buckets
   * aligned to the Unix epoch, so every process agrees). Without it, for ever.
   */
  period?: number;
  /**
   * `"incomplete"`: a duplicate is refused only while the first job is not
   * final. `"all"`: refused for as long as the first job's row exists.
   * @default "incomplete"
   */
  states?: "incomplete" | "all";
  /** Whether the queue is part of the identity. @default false */
  byQueue?: boolean;
  /**
   * Debounce: the job waits this many ms (unless `in` or `at` say when),
   * and a later insert of the same key while it still waits replaces its
   * args (and meta, tags, priority) instead of being refused: "re-index
   * this at most once a minute, with the latest args". With `extend`, each
   * such insert also pushes the start out to a full window after it. An
   * insert while the job executes is refused as a duplicate.
   */
  debounce?: number | { window: number; extend?: boolean };
}

/** A unique option's debounce as a window in ms and whether inserts extend it; null without one. */
export function debounceOf(unique: UniqueOptions): { windowMs: number; extend: boolean } | null {
  const d = unique.debounce;
  if (d === undefined) return null;
  return typeof d === "number"
    ? { windowMs: d, extend: false }
    : { windowMs: d.window, extend: d.extend ?? false };
}

/** Validates unique options, naming the bad field and value. */
export function checkUnique(unique: UniqueOptions, where: string): void {
  const by = unique.by ?? "args";
  if (typeof by === "object") {
    if (!Array.isArray(by.keys) || by.keys.length === 0) {
      throw new TypeError(`${where}: unique.by.keys must list at least one arg key`);
    }
  } else if (by !== "args" && by !== "worker") {
    throw new TypeError(`${where}: unique.by must be "args", "worker" or { keys }, got "${by}"`);
  }
  if (unique.period !== undefined && !(Number.isFinite(unique.period) && unique.period > 0)) {
    throw new RangeError(
      `${where}: unique.period must be a positive number of ms, got ${unique.period}`,
    );
  }
  if (unique.debounce !== undefined) {
    const windowMs = typeof unique.debounce === "number"
      ? unique.debounce
      : unique.debounce?.window;
    if (typeof windowMs !== "number" || !(Number.isFinite(windowMs) && windowMs >= 0)) {
      throw new RangeError(
        `${where}: unique.debounce must be a number of ms >= 0 or { window, extend }, got ${
          JSON.stringify(unique.debounce)
        }`,
      );
    }
  }
  const states = unique.states ?? "incomplete";
  if (states !== "incomplete" && states !== "all") {
    throw new TypeError(`${where}: unique.states must be "incomplete" or "all", got "${states}"`);
  }
}

/**
 * The stored key, `worker|queue|period bucket|sha256 of the args part`: the
 * worker stays readable for an operator, the args are hashed so a large
 * payload does not bloat the unique index. Object keys are sorted first, so
 * equal args give equal keys.
 */
export function uniqueKey(
  unique: UniqueOptions,
  job: { worker: string; queue: string; args: unknown },
  now: number,
): string {
  const by = unique.by ?? "args";
  let part: string;
  if (by === "worker") part = "*";
  else if (by === "args") part = canonicalJson(job.args);
  else {
    const args = (job.args ?? {}) as Record<string, unknown>;
    const picked: Record<string, unknown> = {};
    for (const key of by.keys) picked[key] = args[key] ?? null;
    part = canonicalJson(picked);
  }
  const queue = unique.byQueue ? job.queue : "*";
  const bucket = unique.period ? String(Math.floor(now / unique.period)) : "*";
  const digest = createHash("sha256").update(part).digest("base64url");
  return `${job.worker}|${queue}|${bucket}|${digest}`;
}

/** JSON with object keys sorted, so equal values have equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
      return sorted;
    }
    return v;
  });
}
