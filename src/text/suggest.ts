/**
 * "Did you mean" for names a person typed: queues, workers, commands,
 * options, keys and time zones. The nearest names by edit distance, close
 * enough to be a typo of the input, best first.
 *
 * @module
 */

/** Edit distance (insert, delete, substitute, swap two neighbours), case-insensitive. */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidates close enough to `input` to be a typo of it, nearest first
 * (at most `limit`). Close enough: within a third of the longer name's length
 * (at least 1, at most 4 edits), or one contains the other.
 */
export function nearest(input: string, candidates: Iterable<string>, limit = 3): string[] {
  const scored: { name: string; distance: number }[] = [];
  const lower = input.toLowerCase();
  for (const name of new Set(candidates)) {
    if (name === input) continue;
    // The distance is at least the difference in length (exactly it when one
    // contains the other), so a long input is never compared letter by letter.
    const gap = Math.abs(input.length - name.length);
    const distance = gap > 4 ? gap : editDistance(input, name);
    const allowed = Math.min(4, Math.max(1, Math.floor(Math.max(input.length, name.length) / 3)));
    const contains = lower.length >= 3 &&
      (name.toLowerCase().includes(lower) || lower.includes(name.toLowerCase()));
    if (distance <= allowed || contains) scored.push({ name, distance });
  }
  scored.sort((x, y) => x.distance - y.distance || x.name.localeCompare(y.name));
  return scored.slice(0, limit).map((s) => s.name);
}

/**
 * `; did you mean "mail"?` (or `"mail" or "email"`), or "" when nothing is
 * close: appended to an error that names an unknown value. Names are quoted
 * with JSON rules, so a name holding control characters stays visible.
 */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const names = nearest(input, candidates).map((name) => JSON.stringify(name));
  if (names.length === 0) return "";
  const last = names.pop()!;
  return `; did you mean ${names.length ? `${names.join(", ")} or ${last}` : last}?`;
}
