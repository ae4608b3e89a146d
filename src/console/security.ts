/**
 * The console's guards that do not depend on who is signed in: the headers
 * every answer carries ({@linkcode SECURITY_HEADERS}: a strict
 * Content-Security-Policy with no inline script or style, no sniffing, no
 * referrer), the CSRF check of every state change ({@linkcode crossSite}),
 * and the session cookie ({@linkcode SESSION_COOKIE}).
 *
 * The cookie is `__Host-` prefixed (the browser keeps it only when set
 * with `Secure`, `Path=/` and no `Domain`), `HttpOnly` (no script reads
 * it) and `SameSite=Strict` (no other site's page sends it). `Secure`
 * cookies work over `http://127.0.0.1` and `http://localhost`: browsers
 * count loopback as a secure context. Over plain HTTP to any other host
 * the browser drops the cookie, so sign-in there needs HTTPS in front.
 *
 * @module
 */

/** The Content-Security-Policy of every answer. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; " +
  "base-uri 'none'; form-action 'self'";

/** The headers every console answer carries. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
});

/** The session cookie's name. */
export const SESSION_COOKIE = "__Host-jobs_session";

/** The `Set-Cookie` that hands the browser session `id`. */
export function sessionCookie(id: string): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; Secure; SameSite=Strict`;
}

/** The `Set-Cookie` that makes the browser forget the session. */
export function clearedCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0`;
}

/** The session id the request's cookie holds, or null. */
export function sessionIdOf(request: Request): string | null {
  const header = request.headers.get("cookie");
  if (header === null) return null;
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    if (part.slice(0, at).trim() === SESSION_COOKIE) return part.slice(at + 1).trim();
  }
  return null;
}

/**
 * Why a request that changes state must be refused as cross-site, or null
 * when it may go on. GET and HEAD change nothing and pass. Others need
 * `Sec-Fetch-Site: same-origin` (or `none`: typed or bookmarked by the
 * person), which every current browser sends; without that header, an
 * `Origin` equal to the request's own origin; with neither, refused.
 */
export function crossSite(request: Request): string | null {
  if (request.method === "GET" || request.method === "HEAD") return null;
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) {
    return site === "same-origin" || site === "none"
      ? null
      : `a ${site} request may not change anything here`;
  }
  const origin = request.headers.get("origin");
  if (origin === null) return "a request that changes something must say where it comes from";
  return origin === new URL(request.url).origin
    ? null
    : "a request from another origin may not change anything here";
}
