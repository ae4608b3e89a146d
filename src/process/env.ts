/**
 * `${NAME}` references in runner settings (a command's env, an HTTP
 * request's headers and URL), filled from the daemon's environment when a
 * job runs, so secrets live neither in schedules.yaml nor in the store.
 *
 * @module
 */

/** Raised when a referenced variable is not set: the job cannot run as written. */
export class MissingVariableError extends Error {
  constructor(readonly variable: string, readonly where: string) {
    super(`${where}: environment variable "${variable}" is not set`);
    this.name = "MissingVariableError";
  }
}

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\$/g;

/**
 * Replaces each `${NAME}` in `text` with the variable's value; `$$` stands
 * for a literal `$`. An unset variable throws {@linkcode MissingVariableError}
 * naming it and `where`.
 */
export function expandVariables(
  text: string,
  env: (name: string) => string | undefined,
  where: string,
): string {
  return text.replace(REFERENCE, (match, name: string | undefined) => {
    if (match === "$$") return "$";
    const value = env(name!);
    if (value === undefined) throw new MissingVariableError(name!, where);
    return value;
  });
}

/** The names referenced in `text`, for validation and for redacting their values. */
export function referencedVariables(text: string): string[] {
  return [...text.matchAll(REFERENCE)].flatMap((m) => (m[1] ? [m[1]] : []));
}

/** Values shorter than this are not masked: they are too likely to match ordinary text. */
export const MIN_MASKED_LENGTH = 4;

/**
 * Replaces each of `secrets` (values filled in from the environment) in
 * `text` with `[REDACTED]`, longest first so a value containing another is
 * masked whole. Values shorter than {@linkcode MIN_MASKED_LENGTH} are left.
 */
export function maskValues(text: string, secrets: Iterable<string>): string {
  const masked = [...new Set(secrets)]
    .filter((s) => s.length >= MIN_MASKED_LENGTH)
    .sort((a, b) => b.length - a.length);
  for (const secret of masked) text = text.split(secret).join("[REDACTED]");
  return text;
}

/**
 * An HTTP request's URL (an ingest source's) and header values with each `${NAME}` replaced from
 * `env` (`Authorization: Bearer ${VENDOR_TOKEN}`); an unset one throws
 * naming `where` and the variable. Errors keep naming the URL as written,
 * so a secret it carries is never printed.
 */
export function expandHttp(
  spec: { url: string; headers?: Record<string, string> },
  env: (name: string) => string | undefined,
  where: string,
): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(spec.headers ?? {})) {
    headers[name] = expandVariables(value, env, `${where} header "${name}"`);
  }
  return { url: expandVariables(spec.url, env, `${where} url`), headers };
}
