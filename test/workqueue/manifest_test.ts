/**
 * Manifests (src/workqueue/manifest.ts): amounts normalized as decimals,
 * totals summed exactly per currency, and a hash that names the set (any
 * order of the same items, one hash; any change of an id, an amount, a
 * currency or the action, another); bad items refused naming them. And the
 * TOTP helpers (src/workqueue/totp.ts) against otpauth's own codes.
 */

import assert from "node:assert/strict";
import * as OTPAuth from "otpauth";
import {
  decimalAmount,
  looksLikeManifest,
  ManifestError,
  manifestHash,
  manifestOf,
} from "../../src/workqueue/manifest.ts";
import {
  newTotpSecret,
  totpCode,
  totpMatch,
  totpQrSvg,
  totpQrTerminal,
  totpStep,
  totpUri,
} from "../../src/workqueue/totp.ts";

const ITEMS = [
  { id: "d-1", amount: "1900.00", currency: "EUR" },
  { id: "d-2", amount: 0.1, currency: "EUR" },
  { id: "d-3", amount: "0.2", currency: "EUR" },
  { id: "d-4", amount: 250n, currency: "USD" },
];

Deno.test("decimalAmount() writes one amount one way and refuses what is not a decimal", () => {
  assert.equal(decimalAmount("1900.00"), "1900");
  assert.equal(decimalAmount("001900.50"), "1900.5");
  assert.equal(decimalAmount(12.25), "12.25");
  assert.equal(decimalAmount(7n), "7");
  assert.equal(decimalAmount("-0.00"), "0");
  assert.equal(decimalAmount("-3.10"), "-3.1");
  for (const bad of ["", "1e3", "1,5", "NaN", "1.", ".5", "12 EUR"]) {
    assert.throws(() => decimalAmount(bad), ManifestError, bad);
  }
  assert.throws(() => decimalAmount(Infinity), ManifestError);
  assert.throws(() => decimalAmount(1e21), ManifestError, "a number in exponent form");
});

Deno.test("manifestOf() totals each currency exactly: 0.1 + 0.2 is 0.3", () => {
  const manifest = manifestOf("disputes/release", ITEMS);
  assert.deepEqual(manifest.totals, { EUR: "1900.3", USD: "250" });
  assert.deepEqual(manifest.items.map((i) => i.amount), ["1900", "0.1", "0.2", "250"]);
  assert.ok(looksLikeManifest(manifest.hash));
  assert.equal(manifest.hash, manifestHash("disputes/release", ITEMS));
  const negative = manifestOf("x", [
    { id: "a", amount: "-5.25", currency: "EUR" },
    { id: "b", amount: "2", currency: "EUR" },
  ]);
  assert.deepEqual(negative.totals, { EUR: "-3.25" });
});

Deno.test("manifestHash() is one hash for the set in any order, another for any change", () => {
  const hash = manifestHash("disputes/release", ITEMS);
  assert.equal(manifestHash("disputes/release", [...ITEMS].reverse()), hash);
  assert.equal(
    manifestHash("disputes/release", ITEMS.map((i) => ({ ...i, amount: `${i.amount}` }))),
    hash,
    "1900.00 and 1900 are one amount",
  );
  const changed = [
    manifestHash("disputes/reject", ITEMS),
    manifestHash("disputes/release", ITEMS.slice(1)),
    manifestHash("disputes/release", [{ ...ITEMS[0]!, amount: "1900.01" }, ...ITEMS.slice(1)]),
    manifestHash("disputes/release", [{ ...ITEMS[0]!, currency: "USD" }, ...ITEMS.slice(1)]),
    manifestHash("disputes/release", [{ ...ITEMS[0]!, id: "d-9" }, ...ITEMS.slice(1)]),
  ];
  assert.equal(new Set([hash, ...changed]).size, 6);
});

Deno.test("manifestOf() refuses an empty id, a repeated id, a bad amount or currency, naming the item", () => {
  const one = (item: Record<string, unknown>) => () =>
    manifestOf("a", [item as unknown as (typeof ITEMS)[0]]);
  assert.throws(one({ id: "", amount: "1", currency: "EUR" }), /item 1: the id is empty/);
  assert.throws(
    () => manifestOf("a", [ITEMS[0]!, ITEMS[0]!]),
    /item "d-1" appears twice/,
  );
  assert.throws(one({ id: "x", amount: "1,5", currency: "EUR" }), /item "x": "1,5" is not a/);
  assert.throws(one({ id: "x", amount: "1", currency: "" }), /item "x": "" is not a currency/);
  assert.throws(() => manifestOf("", ITEMS), /the action is empty/);
});

Deno.test("totpMatch() accepts otpauth's code of the step and one either side, nothing further", async () => {
  const secret = newTotpSecret();
  assert.match(secret, /^[A-Z2-7]{32}$/);
  const uri = totpUri("bob", secret);
  const parsed = OTPAuth.URI.parse(uri) as OTPAuth.TOTP;
  assert.equal(parsed.secret.base32, secret);
  assert.equal(parsed.issuer, "jobs");
  assert.equal(parsed.label, "bob");
  const now = Date.UTC(2026, 2, 8, 12, 0, 10);
  const step = totpStep(now);
  const at = (offset: number) => parsed.generate({ timestamp: now + offset * 30_000 });
  assert.equal(totpCode("bob", secret, now), at(0));
  assert.equal(totpMatch("bob", secret, at(0), now), step);
  assert.equal(totpMatch("bob", secret, at(-1), now), step - 1);
  assert.equal(totpMatch("bob", secret, at(1), now), step + 1);
  assert.equal(totpMatch("bob", secret, at(-2), now), null);
  assert.equal(totpMatch("bob", secret, at(2), now), null);
  assert.equal(totpMatch("bob", secret, "12345", now), null);
  assert.match(await totpQrSvg(uri), /^<svg[^>]*>/);
  assert.ok((await totpQrTerminal(uri)).split("\n").length > 10);
});
