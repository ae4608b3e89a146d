/**
 * How deep a parsed JSON value nests, checked without recursion: an ingest
 * record and an API request body are refused past a depth before anything
 * walks them recursively.
 *
 * @module
 */

/**
 * Whether `value` nests deeper than `limit` levels (`value` itself is level
 * 1). A loop over an explicit stack, so a record of any depth cannot
 * overflow the call stack here; it stops at the first level past the limit.
 * A flat record (the common one) allocates nothing. `value` is plain data
 * as parsed (JSON, CSV): no cycles.
 */
export function nestedDeeper(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  let pending: unknown[] | null = null;
  let levels: number[] | null = null;
  let current = value as Record<string, unknown> | unknown[];
  let level = 1;
  for (;;) {
    if (level > limit) return true;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const child = current[i];
        if (child !== null && typeof child === "object") {
          (pending ??= []).push(child);
          (levels ??= []).push(level + 1);
        }
      }
    } else {
      for (const name in current) {
        const child = current[name];
        if (child !== null && typeof child === "object") {
          (pending ??= []).push(child);
          (levels ??= []).push(level + 1);
        }
      }
    }
    if (pending === null || pending.length === 0) return false;
    current = pending.pop() as Record<string, unknown> | unknown[];
    level = levels!.pop()!;
  }
}
