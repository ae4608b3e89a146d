/**
 * Secrets, hashed once and compared in constant time: people's passwords
 * and programs' token secrets. Nothing here logs or returns a secret; the
 * only secret that leaves is a new token's, which its creator prints once.
 *
 * - A password is hashed with scrypt from `node:crypto`: the runtime's own,
 *   well-kept implementation of a memory-hard function made for this. No
 *   homemade hash: a password is low-entropy, so the hash must be slow and
 *   costly in memory to guess against, which only such a function gives.
 *   The parameters and the salt are stored with the hash in one
 *   self-describing string (`scrypt$ln=17,r=8,p=1$<salt>$<hash>`, base64url),
 *   so the cost can be raised later and old hashes still verify.
 * - A token secret is 32 random bytes from `crypto.getRandomValues`,
 *   written `jobs_<base64url>` (the prefix lets secret scanners find one
 *   pasted where it should not be). It is stored as its SHA-256
 *   (`sha256$<hex>`): a secret of 256 random bits cannot be guessed, so a
 *   slow hash would add nothing but cost to every request. A token is looked
 *   up by that hash, so the database compares hashes, never the secret, and
 *   timing a lookup tells nothing about the secret.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash, scrypt, timingSafeEqual } from "node:crypto";

/** The prefix of every token secret: recognisable in a leak. */
export const TOKEN_PREFIX = "jobs_";

/** scrypt's cost as log2(N) (OWASP's minimum: N = 2^17, r = 8, p = 1). */
const COST_LOG2 = 17;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** The largest cost a stored hash may ask for: a row cannot make a check take minutes. */
const MAX_COST_LOG2 = 20;

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

function derive(
  password: string,
  salt: Uint8Array,
  params: { ln: number; r: number; p: number },
  bytes: number,
): Promise<Buffer> {
  const maxmem = 256 * params.r * (2 ** params.ln) + 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(
      password.normalize("NFC"),
      salt,
      bytes,
      { N: 2 ** params.ln, r: params.r, p: params.p, maxmem },
      (error, key) => error ? reject(error) : resolve(key),
    )
  );
}

/** The self-describing scrypt hash of `password`, with a new random salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  const params = { ln: COST_LOG2, r: BLOCK_SIZE, p: PARALLELISM };
  const key = await derive(password, salt, params, KEY_BYTES);
  return `scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${base64url(salt)}$${base64url(key)}`;
}

const SCRYPT_HASH = /^scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([\w-]+)\$([\w-]+)$/;

/**
 * Whether `password` is the one `stored` ({@linkcode hashPassword}'s
 * string) was made from, compared in constant time. A string of another
 * form, or asking for an outlandish cost, verifies nothing.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = SCRYPT_HASH.exec(stored);
  if (!match) return false;
  const [ln, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (ln < 1 || ln > MAX_COST_LOG2 || r < 1 || p < 1) return false;
  const salt = Buffer.from(match[4]!, "base64url");
  const expected = Buffer.from(match[5]!, "base64url");
  if (expected.length < 16) return false;
  const key = await derive(password, salt, { ln, r, p }, expected.length);
  return timingSafeEqual(key, expected);
}

/** A new token secret: {@linkcode TOKEN_PREFIX} and 32 random bytes, base64url. */
export function newTokenSecret(): string {
  return TOKEN_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The stored form of a token secret: its SHA-256, hex (see the module's note). */
export function hashTokenSecret(secret: string): string {
  return `sha256$${createHash("sha256").update(secret, "utf8").digest("hex")}`;
}

/** Whether `text` has the shape of a token secret (the prefix and 43 base64url characters). */
export function looksLikeTokenSecret(text: string): boolean {
  return /^jobs_[\w-]{43}$/.test(text);
}
