/**
 * Web console sessions: a person signs in with name and password
 * ({@linkcode signIn}) and gets an opaque id, 32 random bytes the browser
 * keeps in a cookie; the store keeps only the id's SHA-256
 * (`sessions.id_hash`), so neither the store nor a log ever holds a
 * usable id. Each request resolves the id to the person as the store says
 * they are now ({@linkcode resolveSession}): a session idle past
 * {@linkcode SESSION_IDLE_MS} or older than {@linkcode SESSION_ABSOLUTE_MS}
 * ends (and is deleted), and so does every session of a person disabled,
 * removed or given a new password (`people.ts` deletes them in the same
 * transaction).
 *
 * Sign-in and sign-out are audited (`user.sign_in`, `user.sign_out` on
 * `user:<name>`); an admin lists every session ({@linkcode listSessions})
 * and revokes one or all of a person's ({@linkcode revokeSessions},
 * audited `session.revoke`). A session is named, where people see it, by
 * its handle: the first {@linkcode HANDLE_LENGTH} hex digits of its hash.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { SessionRow, Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";
import { authenticatePerson, type SignInLimiter } from "./people.ts";

/** A session ends once idle this long, by default: 30 minutes. */
export const SESSION_IDLE_MS = 30 * 60_000;
/** A session ends this long after sign-in whatever it does, by default: 12 hours. */
export const SESSION_ABSOLUTE_MS = 12 * 3_600_000;
/** A user agent is kept up to this many characters. */
export const MAX_USER_AGENT_LENGTH = 256;
/** Hex digits of a session's hash that name it in lists and `jobs sessions revoke`. */
export const HANDLE_LENGTH = 12;
/** The shortest prefix `jobs sessions revoke` takes. */
export const MIN_HANDLE_PREFIX = 6;

/** How long sessions live: idle and absolute, in ms. */
export interface SessionTimeouts {
  idleMs: number;
  absoluteMs: number;
}

/** The defaults: {@linkcode SESSION_IDLE_MS} and {@linkcode SESSION_ABSOLUTE_MS}. */
export const DEFAULT_TIMEOUTS: SessionTimeouts = Object.freeze({
  idleMs: SESSION_IDLE_MS,
  absoluteMs: SESSION_ABSOLUTE_MS,
});

/**
 * The person a session acts as, as the store says now: the shape of the
 * HTTP faces' `Principal` (`src/http/access.ts`) with kind `person`.
 */
export interface SessionPerson {
  name: string;
  kind: "person";
  /**
   * Every role the person holds, a work queue's (`support`) included: the
   * role tables name built-in roles only, so such a role opens nothing
   * there; the work-queue door (`work.ts`) reads it against a queue's `roles:`.
   */
  roles: readonly string[];
  tenant: string | null;
}

/** Why a session door refused: `why` says which rule, the message names the value. */
export class SessionRefused extends Error {
  constructor(readonly why: "bad-prefix" | "missing" | "ambiguous", message: string) {
    super(message);
    this.name = "SessionRefused";
  }
}

/** The SHA-256 (hex) of a session id: the only form the store keeps. */
export function sessionHash(id: string): string {
  return createHash("sha256").update(id, "utf8").digest("hex");
}

/** A session's handle: the first {@linkcode HANDLE_LENGTH} hex digits of its hash. */
export function sessionHandle(row: Pick<SessionRow, "idHash">): string {
  return row.idHash.slice(0, HANDLE_LENGTH);
}

/** Whether `id` has the shape of a session id (32 bytes, base64url, 43 characters). */
function looksLikeSessionId(id: string): boolean {
  return /^[\w-]{43}$/.test(id);
}

/** Options of {@linkcode signIn}. */
export interface SignInOptions {
  now: number;
  /** Counts failures per name; past its limit the name is refused (`SignInLimited`). */
  limiter?: SignInLimiter;
  /** The source address, kept with the session. */
  address?: string | null;
  /** The browser's user agent, kept up to {@linkcode MAX_USER_AGENT_LENGTH} characters. */
  userAgent?: string | null;
  /** How long sessions live; the defaults when not given. */
  timeouts?: SessionTimeouts;
}

/**
 * Signs `name` in when `password` is theirs and they are not disabled:
 * a new session (audited `user.sign_in`), whose `id` is the secret for the
 * cookie and is returned once; null for a wrong name or password alike.
 * Sessions that have ended are pruned on the way.
 *
 * @throws {SignInLimited} when `limiter` refuses `name` for now
 */
export async function signIn(
  store: Store,
  name: string,
  password: string,
  options: SignInOptions,
): Promise<{ id: string; person: SessionPerson; session: SessionRow } | null> {
  const { now } = options;
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS;
  const row = await authenticatePerson(store, name, password, now, options.limiter);
  if (row === null) return null;
  const id = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const session: SessionRow = {
    idHash: sessionHash(id),
    person: row.name,
    createdAt: now,
    lastSeenAt: now,
    expiresAt: now + timeouts.absoluteMs,
    address: options.address ?? null,
    userAgent: options.userAgent == null ? null : options.userAgent.slice(0, MAX_USER_AGENT_LENGTH),
  };
  await store.transaction(async (tx) => {
    await tx.sessionsPrune({ now, idleBefore: now - timeouts.idleMs });
    await tx.sessionInsert({ session });
    await audit(tx, { actor: row.name, reason: null, now }, "user.sign_in", `user:${row.name}`, {
      session: sessionHandle(session),
      address: session.address,
    });
  });
  return { id, person: personOf(row), session };
}

/**
 * The person session `id` acts as at `now`, or null: no such session, one
 * idle past `timeouts.idleMs` or past its absolute end (deleted then), or
 * one whose person is gone or disabled (deleted too). A session in use has
 * its `last_seen_at` moved, at most once per a tenth of the idle timeout
 * (and at least once a minute), so reading pages does not write each time.
 */
export async function resolveSession(
  store: Store,
  id: string,
  now: number,
  timeouts: SessionTimeouts = DEFAULT_TIMEOUTS,
): Promise<SessionPerson | null> {
  if (!looksLikeSessionId(id)) return null;
  const idHash = sessionHash(id);
  const session = await store.sessionGet({ idHash });
  if (session === null) return null;
  const ended = session.expiresAt <= now || session.lastSeenAt + timeouts.idleMs <= now;
  const row = ended ? null : await store.principalGet({ kind: "person", name: session.person });
  if (row === null || row.disabled) {
    await store.sessionDelete({ idHash });
    return null;
  }
  if (now - session.lastSeenAt >= Math.min(60_000, timeouts.idleMs / 10)) {
    await store.sessionTouch({ idHash, now });
  }
  return personOf(row);
}

/** Ends session `id` (audited `user.sign_out`); false when there was none. */
export async function signOut(store: Store, id: string, now: number): Promise<boolean> {
  if (!looksLikeSessionId(id)) return false;
  const idHash = sessionHash(id);
  return await store.transaction(async (tx) => {
    const session = await tx.sessionGet({ idHash });
    if (session === null) return false;
    await tx.sessionDelete({ idHash });
    await audit(
      tx,
      { actor: session.person, reason: null, now },
      "user.sign_out",
      `user:${session.person}`,
      { session: sessionHandle(session) },
    );
    return true;
  });
}

/** Every session (of `person` when given), newest first. */
export async function listSessions(
  store: Store,
  filter: { person?: string } = {},
): Promise<SessionRow[]> {
  return await store.sessionsList(filter.person === undefined ? {} : { person: filter.person });
}

/** A session as `jobs sessions list --json` shows it: its handle, never its hash or id. */
export function sessionJson(s: SessionRow) {
  return {
    handle: sessionHandle(s),
    person: s.person,
    createdAt: iso(s.createdAt),
    lastSeenAt: iso(s.lastSeenAt),
    expiresAt: iso(s.expiresAt),
    address: s.address,
    userAgent: s.userAgent,
  };
}

/**
 * Revokes the one session whose handle starts with `which.prefix`, or every
 * session of `which.person`, audited `session.revoke` (on `session:<handle>`,
 * or `user:<name>` with the count); the handles revoked.
 *
 * @throws {SessionRefused} for a prefix that is not hex or too short, that
 * matches no session (`missing`) or several (`ambiguous`)
 */
export async function revokeSessions(
  store: Store,
  which: { prefix: string } | { person: string },
  who: Actor,
): Promise<string[]> {
  if ("person" in which) {
    return await store.transaction(async (tx) => {
      const sessions = await tx.sessionsList({ person: which.person });
      await tx.sessionsDeleteFor({ person: which.person });
      const handles = sessions.map(sessionHandle);
      await audit(tx, who, "session.revoke", `user:${which.person}`, { sessions: handles });
      return handles;
    });
  }
  const prefix = which.prefix.toLowerCase();
  if (!/^[0-9a-f]+$/.test(prefix) || prefix.length < MIN_HANDLE_PREFIX) {
    throw new SessionRefused(
      "bad-prefix",
      `session "${
        which.prefix.slice(0, 80)
      }": give at least ${MIN_HANDLE_PREFIX} hex digits of a handle (jobs sessions list)`,
    );
  }
  return await store.transaction(async (tx) => {
    const matching = (await tx.sessionsList({})).filter((s) => s.idHash.startsWith(prefix));
    if (matching.length === 0) {
      throw new SessionRefused("missing", `no session whose handle starts with "${prefix}"`);
    }
    if (matching.length > 1) {
      throw new SessionRefused(
        "ambiguous",
        `${matching.length} sessions' handles start with "${prefix}": give more digits`,
      );
    }
    const session = matching[0]!;
    await tx.sessionDelete({ idHash: session.idHash });
    await audit(tx, who, "session.revoke", `session:${sessionHandle(session)}`, {
      person: session.person,
    });
    return [sessionHandle(session)];
  });
}

function personOf(row: { name: string; roles: readonly string[]; tenant: string | null }) {
  return {
    name: row.name,
    kind: "person" as const,
    roles: [...row.roles],
    tenant: row.tenant,
  };
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
