/**
 * Where a store lives, parsed in one place: `postgres://` or
 * `postgresql://` URLs (with `?schema=name`) select PostgreSQL, anything
 * else is a SQLite path. {@linkcode describeLocation} is the form every
 * message, log line and `store.location` shows: credentials removed.
 *
 * @module
 */

/** A parsed store location. */
export type StoreLocation =
  | { kind: "sqlite"; path: string }
  | { kind: "postgres"; url: string; schema: string };

/** A schema name the PostgreSQL store accepts (it is spliced into statements). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Query parameters that carry a secret: removed from every described location. */
const SECRET_PARAM = /pass|secret|token|key/i;

/** Whether `location` names a PostgreSQL database (`postgres://` or `postgresql://`). */
export function isPostgresLocation(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * `location` parsed: a PostgreSQL URL with its schema (`?schema=`, else
 * `public`), or a SQLite path. A schema name that is not lowercase letters,
 * digits and underscores is a RangeError naming it (and the location
 * without its credentials).
 */
export function parseLocation(location: string): StoreLocation {
  if (!isPostgresLocation(location)) return { kind: "sqlite", path: location };
  let schema = "public";
  try {
    schema = new URL(location).searchParams.get("schema") ?? "public";
  } catch {
    throw new RangeError(`the store "${describeLocation(location)}" is not a valid URL`);
  }
  if (!SCHEMA_NAME.test(schema)) {
    throw new RangeError(
      `the store "${describeLocation(location)}": schema must be lowercase letters, digits ` +
        `and underscores, got ${JSON.stringify(schema)}`,
    );
  }
  return { kind: "postgres", url: location, schema };
}

/**
 * `location` as messages show it: a SQLite path unchanged, a PostgreSQL
 * URL without its password or any query parameter that carries a secret.
 */
export function describeLocation(location: string): string {
  if (!isPostgresLocation(location)) return location;
  try {
    const url = new URL(location);
    const secrets = [...url.searchParams.keys()].filter((key) => SECRET_PARAM.test(key));
    if (url.password === "" && secrets.length === 0) return location;
    url.password = "";
    for (const key of secrets) url.searchParams.delete(key);
    return url.toString();
  } catch {
    // Not a URL: keep the scheme and the user, drop everything up to the host.
    return location.replace(/^([a-z]+:\/\/)([^:@/]*)(:[^/]*)?@/i, "$1$2@")
      .replace(/([?&])([^=&]*(pass|secret|token|key)[^=&]*)=[^&]*/gi, "$1");
  }
}
