/**
 * Named parameters (`:tenant`) in SQL text written by an operator: found
 * outside strings, quoted identifiers and comments, and turned into the
 * `$1..$n` PostgreSQL drivers bind. Reports and ingest query sources both
 * take their queries this way; every value is bound, never spliced.
 *
 * @module
 */

/**
 * The tokens of SQL a named parameter is found among: strings, quoted
 * identifiers and comments first, so a `:x` inside them is not one; `::` is
 * a PostgreSQL cast. Group 1 is a parameter's name.
 */
const SQL_TOKENS = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|::|:([A-Za-z_]\w*)/g;

/** The named parameters a query uses (`:name`), in order of first use, outside strings and comments. */
export function queryParams(sql: string): string[] {
  const names: string[] = [];
  for (const match of sql.matchAll(SQL_TOKENS)) {
    const name = match[1];
    if (name !== undefined && !names.includes(name)) names.push(name);
  }
  return names;
}

/**
 * `sql` with each `:name` replaced by `$n` (one number per distinct name,
 * in order of first use), and the names in that order: the form postgres.js
 * binds. Text inside strings, quoted identifiers and comments is left.
 */
export function positional(sql: string): { text: string; names: string[] } {
  const names: string[] = [];
  const text = sql.replace(SQL_TOKENS, (match, name: string | undefined) => {
    if (name === undefined) return match;
    let i = names.indexOf(name);
    if (i < 0) i = names.push(name) - 1;
    return `$${i + 1}`;
  });
  return { text, names };
}
