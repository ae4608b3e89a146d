/**
 * Time-based one-time passwords (RFC 6238) for approvers, through `otpauth`:
 * a new seed, its `otpauth://` URI for an authenticator app (and the QR
 * code of it, for a terminal or a page), and checking a code at an instant
 * of the injected clock, one 30-second step either side.
 *
 * The parameters are the authenticator apps' defaults (SHA-1, 6 digits,
 * 30 s), which every app reads from the URI.
 *
 * @module
 */

import * as OTPAuth from "otpauth";
// @ts-types="@types/qrcode"
import QRCode from "qrcode";

/** The issuer shown in an authenticator app. */
export const TOTP_ISSUER = "jobs";
/** Seconds per step. */
export const TOTP_PERIOD_S = 30;
/** Digits per code. */
export const TOTP_DIGITS = 6;
/** Steps accepted either side of the current one (clock drift, a code typed as it turns). */
export const TOTP_WINDOW = 1;

function totpOf(person: string, secret: string): OTPAuth.TOTP {
  return new OTPAuth.TOTP({
    issuer: TOTP_ISSUER,
    label: person,
    algorithm: "SHA1",
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
    secret: OTPAuth.Secret.fromBase32(secret),
  });
}

/** A new seed: 20 random bytes (160 bits, RFC 4226's recommendation), base32. */
export function newTotpSecret(): string {
  return new OTPAuth.Secret({ size: 20 }).base32;
}

/** The `otpauth://totp/...` URI of `person`'s seed: what an authenticator app scans. */
export function totpUri(person: string, secret: string): string {
  return totpOf(person, secret).toString();
}

/** The QR code of `uri` for a terminal (half-block characters). */
export function totpQrTerminal(uri: string): Promise<string> {
  return QRCode.toString(uri, { type: "terminal", small: true });
}

/** The QR code of `uri` as an SVG document, for a page. */
export function totpQrSvg(uri: string): Promise<string> {
  return QRCode.toString(uri, { type: "svg", margin: 2 });
}

/** The 30-second step an instant (UTC ms) falls in. */
export function totpStep(now: number): number {
  return Math.floor(now / 1000 / TOTP_PERIOD_S);
}

/**
 * The step whose code `code` is for `person`'s seed at `now`, within
 * {@linkcode TOTP_WINDOW} steps either side, or null when it is none of them.
 */
export function totpMatch(
  person: string,
  secret: string,
  code: string,
  now: number,
): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totpOf(person, secret).validate({
    token: code,
    timestamp: now,
    window: TOTP_WINDOW,
  });
  return delta === null ? null : totpStep(now) + delta;
}

/** The code of `secret` at `now` (what the approver's app shows): for tests and checks. */
export function totpCode(person: string, secret: string, now: number): string {
  return totpOf(person, secret).generate({ timestamp: now });
}
