/**
 * Download tokens: the short-lived, signed claim that lets one person
 * fetch one run's output from the daemon without a session. A token is
 * `base64url(JSON claims) "." base64url(HMAC-SHA256(secret, first part))`,
 * url-safe with no padding, so it fits in a link's query string.
 *
 * {@linkcode checkToken} verifies the MAC (WebCrypto's `verify`, which
 * compares in constant time) before it reads a single claim: a tampered
 * or unsigned payload is `forged` and never reaches the expiry or tenant
 * checks, so no claim of an attacker's choosing is ever acted on.
 *
 * @module
 */

/** What a download token grants: one run's output, to one actor of one tenant, until `expires`. */
export interface DownloadClaims {
  run: number;
  tenant: string;
  actor: string;
  /** The instant the token stops working, UTC epoch ms. */
  expires: number;
}

/** The result of {@linkcode checkToken}: the claims, or why not, with the HTTP status to answer. */
export type TokenCheck =
  | { ok: true; claims: DownloadClaims }
  | { ok: false; status: 403 | 410; reason: "forged" | "malformed" | "expired" | "tenant" };

/** The longest token read: a link longer than this was not made by {@linkcode mintToken}. */
export const MAX_TOKEN_CHARS = 2048;

/** The shortest secret accepted: as long as the HMAC-SHA256 output, as RFC 2104 advises. */
export const MIN_SECRET_BYTES = 32;

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const encoder = new TextEncoder();

const encode = (bytes: Uint8Array): string =>
  bytes.toBase64({ alphabet: "base64url", omitPadding: true });

/** The bytes of `text`, or null unless it is the canonical unpadded base64url of them. */
function decode(text: string): Uint8Array<ArrayBuffer> | null {
  if (!BASE64URL.test(text)) return null;
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = Uint8Array.fromBase64(text, { alphabet: "base64url" });
  } catch {
    return null;
  }
  // Two texts can decode to the same bytes (the spare bits of the last character): accept one.
  return encode(bytes) === text ? bytes : null;
}

function hmacKey(secret: Uint8Array, use: "sign" | "verify"): Promise<CryptoKey> {
  if (!(secret instanceof Uint8Array) || secret.length < MIN_SECRET_BYTES) {
    throw new RangeError(
      `download token secret must be at least ${MIN_SECRET_BYTES} bytes, not ${
        secret instanceof Uint8Array ? secret.length : typeof secret
      }`,
    );
  }
  return crypto.subtle.importKey(
    "raw",
    new Uint8Array(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [use],
  );
}

/** The claims in `value` when it has exactly their shape and types, otherwise null. */
function asClaims(value: unknown): DownloadClaims | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { run, tenant, actor, expires, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return null;
  if (typeof run !== "number" || !Number.isSafeInteger(run) || run < 0) return null;
  if (typeof tenant !== "string" || typeof actor !== "string") return null;
  if (typeof expires !== "number" || !Number.isFinite(expires)) return null;
  return { run, tenant, actor, expires };
}

/**
 * A token for `claims`, signed with `secret`.
 *
 * @throws RangeError when `secret` is shorter than {@linkcode MIN_SECRET_BYTES},
 * the claims are not of their types (a non-negative integer run, text tenant
 * and actor, a finite expiry), or the token would be longer than
 * {@linkcode MAX_TOKEN_CHARS} (and so refused by {@linkcode checkToken})
 */
export async function mintToken(secret: Uint8Array, claims: DownloadClaims): Promise<string> {
  const { run, tenant, actor, expires } = claims;
  const checked = asClaims({ run, tenant, actor, expires });
  if (!checked) {
    throw new RangeError(`download token claims are malformed: ${JSON.stringify(claims)}`);
  }
  const payload = encode(encoder.encode(JSON.stringify(checked)));
  const key = await hmacKey(secret, "sign");
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(payload)));
  const token = `${payload}.${encode(mac)}`;
  if (token.length > MAX_TOKEN_CHARS) {
    throw new RangeError(
      `download token would be ${token.length} characters, over ${MAX_TOKEN_CHARS}: shorten tenant or actor`,
    );
  }
  return token;
}

/**
 * What `token` grants at `now` (UTC epoch ms), checked in this order:
 * malformed or forged (403), then expired (410: the link was good and is
 * old; `now >= expires`), then, when `tenant` is given, another tenant's
 * (403).
 *
 * @throws RangeError when `secret` is shorter than {@linkcode MIN_SECRET_BYTES}
 */
export async function checkToken(
  secret: Uint8Array,
  token: string,
  now: number,
  tenant?: string,
): Promise<TokenCheck> {
  const key = await hmacKey(secret, "verify");
  const malformed = { ok: false, status: 403, reason: "malformed" } as const;
  if (typeof token !== "string" || token.length > MAX_TOKEN_CHARS) return malformed;
  const parts = token.split(".");
  if (parts.length !== 2) return malformed;
  const [payload, signature] = parts as [string, string];
  const body = decode(payload);
  const mac = decode(signature);
  if (!body || !mac || mac.length !== 32) return malformed;

  if (!await crypto.subtle.verify("HMAC", key, mac, encoder.encode(payload))) {
    return { ok: false, status: 403, reason: "forged" };
  }

  // Signed by us from here on; what follows guards against our own bugs, not an attacker.
  let claims: DownloadClaims | null;
  try {
    claims = asClaims(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body)));
  } catch {
    claims = null;
  }
  if (!claims) return malformed;
  if (now >= claims.expires) return { ok: false, status: 410, reason: "expired" };
  if (tenant !== undefined && claims.tenant !== tenant) {
    return { ok: false, status: 403, reason: "tenant" };
  }
  return { ok: true, claims };
}

/** A fresh token secret: 32 random bytes from `crypto.getRandomValues`. */
export function newSecret(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(32));
}
