/**
 * Redaction of secrets from text that is stored or shown: errors, outputs,
 * log lines. Applied before anything reaches the store.
 *
 * @module
 */

import { errorText } from "./error_text.ts";

/** An attempt keeps at most this many bytes of output, the last ones. */
export const OUTPUT_CAP_BYTES = 64 * 1024;

/** Each stored error is capped at this many bytes of UTF-8. */
export const ERROR_CAP_BYTES = 4096;
/** How many errors a job keeps (the most recent). */
export const ERRORS_KEPT = 20;

const MASK = "[REDACTED]";

// user:password@ in any scheme://
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]+):([^/\s@]*)@/gi;
// user@ alone (a token used as the user name)
const URL_USER = /\b([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]{16,})@/gi;
// key=value, key: value, "key": "value" for names that hold secrets
const SECRET_NAMES = String
  .raw`[\w.-]*(?:token|secret|password|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|session|cookie|credential|signature|sig(?=["']?\s*[=:])|auth)[\w.-]*`;
const PAIR = new RegExp(
  // An already redacted value is matched whole, so redacting twice changes nothing.
  String.raw`(["']?\b${SECRET_NAMES}["']?\s*[=:]\s*)(\[REDACTED\]|"[^"]*"|'[^']*'|[^\s&,;"'}\])]+)`,
  "gi",
);
// Authorization: Bearer xyz / Basic xyz / Proxy-Authorization
const AUTHORIZATION =
  /((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(bearer|basic|token|digest)\s+)?([^\s"',;]+(?:[^\S\r\n]+[^\s"',;]+)*?)(?=["',;\r\n]|$)/gi;
const AUTH_SCHEME = /^(bearer|basic|token|digest)$/i;
const BEARER = /\b(bearer)\s+[a-z0-9._~+/=-]{8,}/gi;

// Text none of the patterns above can match lacks all of these: a URL's
// "://" (URL_CREDENTIALS, URL_USER), "auth" (AUTHORIZATION, and the name
// in SECRET_NAMES), "bearer", and a piece of every other name in
// SECRET_NAMES. One scan for them spares the common line (a job's start
// and stop, twice per job in the daemon's log) the five full passes.
const MAY_HOLD_SECRET =
  /:\/\/|auth|bearer|token|secret|passw|pwd|key|session|cookie|credential|sig/i;

/** Replaces secrets in `text` with `[REDACTED]`, keeping hosts, paths and causes readable. */
export function redact(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  return text
    .replace(URL_CREDENTIALS, (_m, scheme: string, user: string) => `${scheme}${user}:${MASK}@`)
    .replace(URL_USER, (_m, scheme: string) => `${scheme}${MASK}@`)
    .replace(
      AUTHORIZATION,
      (_m, head: string, scheme?: string) => `${head}${scheme ? `${scheme} ` : ""}${MASK}`,
    )
    .replace(BEARER, (_m, word: string) => `${word} ${MASK}`)
    .replace(PAIR, (_m, head: string, value: string) => {
      if (value.startsWith(MASK) || AUTH_SCHEME.test(value)) return `${head}${value}`;
      const quote = value.startsWith('"') ? '"' : value.startsWith("'") ? "'" : "";
      return `${head}${quote}${MASK}${quote}`;
    });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Cuts `text` to at most `maxBytes` of UTF-8, marking the cut, never splitting a character. */
export function capBytes(text: string, maxBytes: number = ERROR_CAP_BYTES): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  const marker = `… [truncated ${bytes.length - maxBytes} bytes]`;
  const keep = Math.max(0, maxBytes - encoder.encode(marker).length);
  // A lone continuation byte at the cut decodes to U+FFFD; drop it.
  const head = decoder.decode(bytes.subarray(0, keep)).replace(/\uFFFD+$/, "");
  return head + marker;
}

/** Keeps the last `maxBytes` of UTF-8 of `text`, marking the cut at the start. */
export function capTailBytes(text: string, maxBytes: number = OUTPUT_CAP_BYTES): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  const marker = `[truncated ${bytes.length - maxBytes} bytes] …`;
  const keep = Math.max(0, maxBytes - encoder.encode(marker).length);
  // A cut inside a character leaves continuation bytes: they decode to U+FFFD, dropped.
  const tail = decoder.decode(bytes.subarray(bytes.length - keep)).replace(/^\uFFFD+/, "");
  return marker + tail;
}

/**
 * How an error reads in the store: its text (see error_text.ts: an expected
 * `JobFailure`'s message; another error's message, cause chain and
 * the first frames of the code that threw it), redacted and capped.
 */
export function describeError(error: unknown): string {
  return capBytes(redact(errorText(error)));
}
