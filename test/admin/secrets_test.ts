/**
 * src/admin/secrets.ts: a password hash describes itself and verifies only
 * its password; a token secret has its prefix and 32 random bytes, and is
 * stored as its SHA-256.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  hashPassword,
  hashTokenSecret,
  looksLikeTokenSecret,
  newTokenSecret,
  verifyPassword,
} from "../../src/admin/secrets.ts";

Deno.test("hashPassword() writes scrypt with its parameters and a fresh salt; verifyPassword() takes only the password", async () => {
  const [one, two] = await Promise.all([
    hashPassword("correct horse"),
    hashPassword("correct horse"),
  ]);
  assert.match(one, /^scrypt\$ln=17,r=8,p=1\$[\w-]{22}\$[\w-]{43}$/);
  assert.notEqual(one, two, "each hash has its own salt");
  assert.equal(await verifyPassword("correct horse", one), true);
  assert.equal(await verifyPassword("correct horse", two), true);
  assert.equal(await verifyPassword("correct horsf", one), false);
  assert.equal(await verifyPassword("", one), false);
  assert.ok(!one.includes("correct"));
});

Deno.test("verifyPassword() refuses a stored string of another form or an outlandish cost", async () => {
  assert.equal(await verifyPassword("x", "sha256$00"), false);
  assert.equal(await verifyPassword("x", "plain"), false);
  assert.equal(
    await verifyPassword("x", "scrypt$ln=30,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"),
    false,
  );
});

Deno.test("a token secret is jobs_ and 32 random bytes; it is stored as its SHA-256", () => {
  const a = newTokenSecret();
  const b = newTokenSecret();
  assert.match(a, /^jobs_[\w-]{43}$/);
  assert.notEqual(a, b);
  assert.equal(looksLikeTokenSecret(a), true);
  assert.equal(looksLikeTokenSecret("jobs_short"), false);
  assert.equal(
    hashTokenSecret(a),
    `sha256$${createHash("sha256").update(a).digest("hex")}`,
  );
});
