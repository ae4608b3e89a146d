/**
 * The rule a report request's tenant is held to, in one place: every door
 * (the daemon's `POST /api/v1/reports/<id>/runs`, with the tenant of the
 * bearer token's principal; `jobs report --tenant`; the
 * library's `jobs.report`) checks it through `checkRequest`, before a run
 * exists. A tenant becomes a segment of the output's storage key
 * (`<prefix>/<tenant>/<report>/<run>.<ext>`), so one that cannot be a file
 * or object name must be refused at the request: found only when the run
 * writes, it failed after its attempts, each holding a `max_concurrent`
 * slot. The storage layer still refuses an unsafe segment on its own
 * (`outputKey`), as defence in depth.
 *
 * @module
 */

/** The longest tenant, in characters (all ASCII, so bytes too). */
export const MAX_TENANT_LENGTH = 64;

/** The rule as a person reads it in an error. */
export const TENANT_RULE =
  `a tenant is 1 to ${MAX_TENANT_LENGTH} characters of A-Z, a-z, 0-9, ".", "_" and "-", ` +
  `starting with a letter or a digit`;

const ALLOWED = /^[A-Za-z0-9._-]*$/;
const FIRST = /^[A-Za-z0-9]/;

/**
 * What `tenant` breaks of {@linkcode TENANT_RULE} (`is longer than 64
 * characters`), or null when it is a tenant. `.`, `..`, `/`, `\`, NUL and
 * every control character are refused by the character set and the first
 * character.
 */
export function tenantProblem(tenant: string): string | null {
  if (tenant.length === 0) return "is empty";
  if (tenant.length > MAX_TENANT_LENGTH) {
    return `is longer than ${MAX_TENANT_LENGTH} characters (${tenant.length})`;
  }
  if (!ALLOWED.test(tenant)) {
    const bad = [...tenant].find((c) => !ALLOWED.test(c))!;
    return `holds ${JSON.stringify(bad)}, which is not one of A-Z, a-z, 0-9, ".", "_", "-"`;
  }
  if (!FIRST.test(tenant)) return `starts with ${JSON.stringify(tenant[0])}`;
  return null;
}
