/**
 * The constant-time check of a presented bearer secret against the daemon's
 * single `--token`, shared by the old routes and `/api/v1`.
 *
 * @module
 */

/**
 * Returns a check of an `Authorization` header against `token` that takes
 * the same time whatever the guess: both sides are HMAC'd under a random
 * per-process key and the digests (always 32 bytes) are XOR-compared, so
 * neither the length nor a prefix of the token leaks through timing.
 */
export async function tokenChecker(
  token: string,
): Promise<(header: string | null) => Promise<boolean>> {
  const key = await crypto.subtle.importKey(
    "raw",
    crypto.getRandomValues(new Uint8Array(32)),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const encoder = new TextEncoder();
  const digest = async (value: string) =>
    new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(value)));
  const expected = await digest(token);
  return async (header) => {
    const match = /^Bearer +(.+)$/i.exec(header ?? "");
    const given = await digest(match?.[1] ?? "");
    let diff = match ? 0 : 1;
    for (let i = 0; i < expected.length; i++) diff |= expected[i]! ^ given[i]!;
    return diff === 0;
  };
}
