/**
 * Download tokens: a minted token reads back its claims; a flipped byte
 * in either part, another secret or garbage is refused with 403 before
 * any claim is read; an old token is 410; another tenant's is 403.
 */

import assert from "node:assert/strict";
import {
  checkToken,
  type DownloadClaims,
  MAX_TOKEN_CHARS,
  mintToken,
  newSecret,
} from "../../src/report/tokens.ts";

const NOW = Date.UTC(2026, 0, 1);
const CLAIMS: DownloadClaims = {
  run: 42,
  tenant: "acme",
  actor: "ana@acme.test",
  expires: NOW + 60_000,
};

const b64 = (bytes: Uint8Array) => bytes.toBase64({ alphabet: "base64url", omitPadding: true });
const unb64 = (text: string) => Uint8Array.fromBase64(text, { alphabet: "base64url" });

/** `token` with byte `at` of part `part` (0 payload, 1 signature) flipped, still well-formed base64url. */
function flip(token: string, part: 0 | 1, at: number): string {
  const parts = token.split(".");
  const bytes = unb64(parts[part]!);
  bytes[at]! ^= 0x01;
  parts[part] = b64(bytes);
  return parts.join(".");
}

Deno.test("checkToken() reads back the claims mintToken() signed, for their tenant", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  assert.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  assert.deepEqual(await checkToken(secret, token, NOW, "acme"), { ok: true, claims: CLAIMS });
  assert.deepEqual(await checkToken(secret, token, NOW), { ok: true, claims: CLAIMS });
});

Deno.test("checkToken() calls a flipped byte in the payload or the signature forged (403)", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  const payloadBytes = unb64(token.split(".")[0]!).length;
  for (const [part, at] of [[0, 0], [0, 10], [0, payloadBytes - 1], [1, 0], [1, 31]] as const) {
    assert.deepEqual(
      await checkToken(secret, flip(token, part, at), NOW, "acme"),
      { ok: false, status: 403, reason: "forged" },
      `part ${part} byte ${at}`,
    );
  }
});

Deno.test("checkToken() calls a forged payload forged even when it is expired and another tenant's", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  const [, signature] = token.split(".");
  const payload = new TextEncoder().encode(
    JSON.stringify({ ...CLAIMS, tenant: "other", expires: 0 }),
  );
  const result = await checkToken(secret, `${b64(payload)}.${signature}`, NOW, "acme");
  assert.deepEqual(result, { ok: false, status: 403, reason: "forged" });
});

Deno.test("checkToken() calls a token from the instant it expires expired (410)", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  assert.equal((await checkToken(secret, token, CLAIMS.expires - 1, "acme")).ok, true);
  for (const now of [CLAIMS.expires, CLAIMS.expires + 86_400_000]) {
    assert.deepEqual(await checkToken(secret, token, now, "acme"), {
      ok: false,
      status: 410,
      reason: "expired",
    });
  }
});

Deno.test("checkToken() refuses another tenant's token (403 tenant), after expiry", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  assert.deepEqual(await checkToken(secret, token, NOW, "globex"), {
    ok: false,
    status: 403,
    reason: "tenant",
  });
  // Expired and another tenant's: the link is old, whoever asks.
  assert.deepEqual(await checkToken(secret, token, CLAIMS.expires, "globex"), {
    ok: false,
    status: 410,
    reason: "expired",
  });
});

Deno.test("checkToken() calls a token minted with another secret forged (403)", async () => {
  const token = await mintToken(newSecret(), CLAIMS);
  assert.deepEqual(await checkToken(newSecret(), token, NOW, "acme"), {
    ok: false,
    status: 403,
    reason: "forged",
  });
});

Deno.test("checkToken() calls garbage malformed (403)", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  const [payload, signature] = token.split(".") as [string, string];
  const garbage = [
    "",
    ".",
    "garbage",
    "a.b.c",
    `${payload}.`,
    `.${signature}`,
    `${payload}.${signature}.${signature}`,
    `${payload}=.${signature}`,
    `${payload}.${signature}==`,
    `${payload} .${signature}`,
    `${payload}.${signature.slice(0, -2)}`, // a signature of the wrong length
    `${payload.slice(0, -1)}!.${signature}`,
    "x".repeat(MAX_TOKEN_CHARS + 1),
    `${"A".repeat(MAX_TOKEN_CHARS)}.${signature}`,
  ];
  for (const text of garbage) {
    assert.deepEqual(
      await checkToken(secret, text, NOW, "acme"),
      { ok: false, status: 403, reason: "malformed" },
      JSON.stringify(text.slice(0, 40)),
    );
  }
});

Deno.test("checkToken() calls a second spelling of the same signature bytes malformed", async () => {
  const secret = newSecret();
  const token = await mintToken(secret, CLAIMS);
  const [payload, signature] = token.split(".") as [string, string];
  // 32 bytes are 43 characters, the last carrying 2 spare bits: set one and the bytes are the same.
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = alphabet.indexOf(signature.at(-1)!);
  const respelled = signature.slice(0, -1) + alphabet[last ^ 0b01]!;
  assert.deepEqual(unb64(respelled), unb64(signature));
  assert.deepEqual(await checkToken(secret, `${payload}.${respelled}`, NOW), {
    ok: false,
    status: 403,
    reason: "malformed",
  });
});

Deno.test("mintToken() refuses a short secret and malformed claims", async () => {
  await assert.rejects(mintToken(new Uint8Array(16), CLAIMS), /at least 32 bytes, not 16/);
  await assert.rejects(checkToken(new Uint8Array(0), "a.b", NOW), /at least 32 bytes, not 0/);
  for (
    const claims of [{ ...CLAIMS, run: -1 }, { ...CLAIMS, run: 1.5 }, { ...CLAIMS, expires: NaN }]
  ) {
    await assert.rejects(mintToken(newSecret(), claims), /claims are malformed/);
  }
  await assert.rejects(
    mintToken(newSecret(), { ...CLAIMS, actor: "a".repeat(MAX_TOKEN_CHARS) }),
    /over 2048/,
  );
});

Deno.test("newSecret() makes 32 bytes, different each time", () => {
  const a = newSecret();
  assert.equal(a.length, 32);
  assert.notDeepEqual(a, newSecret());
});
