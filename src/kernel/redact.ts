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

/** What a secret is replaced with, in text and in args. */
export const REDACTED = "[REDACTED]";
const MASK = REDACTED;

// Every pattern below replaces the secret alone with MASK and keeps the text
// around it as it was (the separators too): what a reader is shown is the
// stored text with secrets cut out, which lets a search of the shown text
// read the stored rows first (src/store/search.ts).

// user:password@ in any scheme://. The userinfo runs to the LAST "@" before
// whitespace, a quote or an angle bracket: a password may hold "@" or "/"
// (unencoded, as people write them), and of the two ways to read
// https://bob:p/x@host this one redacts more. Its cost: a URL with a port
// and an "@" in its path (https://host:8080/a@b) loses "8080/a" too.
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^/\s:"'<>]+):([^\s"'<>]*)@/gi;
// user@ alone (a token used as the user name), to the last "@" as above
const URL_USER = /\b([a-z][a-z0-9+.-]*:\/\/)([^/\s:"'<>]{16,})@/gi;
// key=value, key: value, "key": "value" for names that hold secrets. `pass`
// counts as a word of its own only (DB_PASS, pass.word), not inside bypass
// or passed.
const SECRET_NAMES = String
  .raw`[\w.-]*(?:token|secret|password|passwd|passphrase|(?<![a-z0-9])pass(?![a-z])|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|(?:signing|encryption|master)[_-]?key|client[_-]?secret|session|cookie|credential|signature|sig(?=["']?\s*[=:])|auth|jwt)[\w.-]*`;
// The value of a pair: one already redacted (matched whole, so redacting
// twice changes nothing), a quoted one, or a word up to a separator.
const PAIR_WORD = String.raw`\[REDACTED\]|"[^"]*"|'[^']*'|[^\s&,;"'}\])]+`;
// After a separator and a space (`token: one two`, `password = a b`) the
// value is the rest of the line: up to a double quote (the end of a JSON
// string holding the line; an escaped one, \", is inside the value) or a
// comma or semicolon that starts another pair. Written so that every
// character has one way to match (a run of spaces is taken whole, and only
// when more of the value follows it): a lazy match with a lookahead at each
// character took 26 s on one line of 100,000 spaces.
const PAIR_START = String.raw`[^\S\r\n]*["']?[\w.-]+["']?[^\S\r\n]*[=:]`;
const REST_CHAR = String.raw`\\.|[^\s"\\,;]|[,;](?!${PAIR_START})`;
const PAIR_REST = String
  .raw`(?:${REST_CHAR})(?:${REST_CHAR}|[^\S\r\n]+(?=${REST_CHAR}))*`;
const PAIR = new RegExp(
  String.raw`(["']?\b${SECRET_NAMES}["']?\s*[=:])` +
    String.raw`(?:([^\S\r\n]+)(?!\[REDACTED\]|["'])(${PAIR_REST})|([^\S\r\n]*)(${PAIR_WORD}))`,
  "gi",
);
// Authorization: Bearer xyz / Basic xyz / Proxy-Authorization
const AUTHORIZATION =
  /((?:proxy-)?authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest)\s+)?([^\s"',;]+(?:[^\S\r\n]+[^\s"',;]+)*?)(?=["',;\r\n]|$)/gi;
const AUTH_SCHEME = /^(bearer|basic|token|digest)$/i;
// A value AUTHORIZATION (or BEARER) has already redacted, its scheme kept.
const AUTH_REDACTED = /^(bearer|basic|token|digest)\s+\[REDACTED\]/i;
const BEARER = /\b(bearer\s+)[a-z0-9._~+/=-]{8,}/gi;

// Text none of the patterns above can match lacks all of these: a URL's
// "://" (URL_CREDENTIALS, URL_USER), "auth" (AUTHORIZATION, and the name
// in SECRET_NAMES), "bearer", and a piece of every other name in
// SECRET_NAMES. One scan for them spares the common line (a job's start
// and stop, twice per job in the daemon's log) the five full passes.
const MAY_HOLD_SECRET =
  /:\/\/|auth|bearer|token|secret|pass|pwd|key|session|cookie|credential|sig|jwt/i;

/** Replaces secrets in `text` with `[REDACTED]`, keeping hosts, paths and causes readable. */
export function redact(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  return text
    .replace(URL_CREDENTIALS, (_m, scheme: string, user: string) => `${scheme}${user}:${MASK}@`)
    .replace(URL_USER, (_m, scheme: string) => `${scheme}${MASK}@`)
    .replace(
      AUTHORIZATION,
      (_m, head: string, scheme?: string) => `${head}${scheme ?? ""}${MASK}`,
    )
    .replace(BEARER, (_m, word: string) => `${word}${MASK}`)
    .replace(
      PAIR,
      (_m, head: string, space?: string, rest?: string, gap?: string, word?: string) => {
        const [sep, value] = rest === undefined ? [gap!, word!] : [space!, rest];
        if (value.startsWith(MASK) || AUTH_SCHEME.test(value) || AUTH_REDACTED.test(value)) {
          return `${head}${sep}${value}`;
        }
        const quote = value.startsWith('"') ? '"' : value.startsWith("'") ? "'" : "";
        return `${head}${sep}${quote}${MASK}${quote}`;
      },
    );
}

/**
 * Redacts every string in a JSON value: a string under a key that names a
 * secret (`password`, `API_TOKEN`, `Authorization`) is masked whole, any other
 * string goes through `redact` (URL credentials, `token=` pairs). Redacting
 * the JSON text instead could break its quoting.
 */
export function redactValue(value: unknown, key?: string): unknown {
  if (typeof value === "string") {
    if (key !== undefined && redact(`${key}=x`) !== `${key}=x`) return MASK;
    return redact(value);
  }
  if (Array.isArray(value)) return value.map((v) => redactValue(v));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(v, k)]));
  }
  return value;
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
  return capBytes(redact(storableText(errorText(error))));
}

/** How an attempt's output reads in the store: redacted, its last {@linkcode OUTPUT_CAP_BYTES} kept. */
export function describeOutput(text: string): string {
  return capTailBytes(redact(storableText(text)));
}

/**
 * `text` with U+0000 written as the six characters `\u0000`, its JSON
 * escape. PostgreSQL's `text` and `jsonb` cannot hold U+0000 (the write that
 * records a job's result would fail, and the job would stay executing until
 * its lease ran out), and SQLite hands such text back cut at the NUL: both
 * stores keep it this way instead, alike.
 */
export function storableText(text: string): string {
  return text.includes("\u0000") ? text.replaceAll("\u0000", "\\u0000") : text;
}
