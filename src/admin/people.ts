/**
 * People: adding, listing, changing, disabling, enabling and removing the
 * people who sign in, each change and its `audit` row (`user.add`,
 * `user.set`, `user.disable`, `user.enable`, `user.remove` on
 * `user:<name>`) in one store transaction; and checking a person's
 * password ({@linkcode authenticatePerson}), failed attempts limited per
 * name ({@linkcode SignInLimiter}). No hash or password is ever written to
 * the audit trail or returned. And enrolling a person's TOTP authenticator
 * ({@linkcode enrolTotp}, audited `user.totp`): its seed is shown once, in
 * the `otpauth://` URI handed back to the one who enrols, and never again.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { PrincipalRow, Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import { FailureLimiter, type FailureLimitOptions } from "./failures.ts";
import { iso } from "./job_json.ts";
import {
  type ActingAs,
  checkPrincipalName,
  checkRoles,
  checkTenant,
  PrincipalRefused,
  refuseTokenMinting,
} from "./roles.ts";
import { hashPassword, verifyPassword } from "./secrets.ts";
import { newTotpSecret, totpUri } from "../workqueue/totp.ts";

/** The longest password taken: scrypt reads all of it, and no person types more. */
export const MAX_PASSWORD_LENGTH = 1024;

/** A new person. */
export interface NewPerson {
  name: string;
  roles: readonly string[];
  tenant?: string | null;
  displayName?: string | null;
  password: string;
}

/** What {@linkcode setPerson} changes: only the fields given. */
export interface PersonChange {
  roles?: readonly string[];
  /** A tenant, or null to make the person installation-wide. */
  tenant?: string | null;
  displayName?: string | null;
  password?: string;
}

function checkPassword(password: string): string {
  if (password === "") throw new PrincipalRefused("bad-password", "the password is empty");
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new PrincipalRefused(
      "bad-password",
      `the password is longer than ${MAX_PASSWORD_LENGTH} characters`,
    );
  }
  return password;
}

function missing(name: string): PrincipalRefused {
  return new PrincipalRefused("missing", `no person "${name}"`);
}

/**
 * Adds a person (refused when the name is taken), audited `user.add`. `by`
 * says who acts: a token is refused (`token-cannot-mint`) before anything
 * is checked, hashed or written.
 */
export async function addPerson(
  store: Store,
  person: NewPerson,
  who: Actor,
  by: ActingAs,
): Promise<PrincipalRow> {
  refuseTokenMinting(by, "person");
  const name = checkPrincipalName("person", person.name);
  const roles = checkRoles(person.roles);
  const tenant = checkTenant(person.tenant);
  // Hashed before the transaction: scrypt is slow on purpose, the write lock is not.
  const secretHash = await hashPassword(checkPassword(person.password));
  return await store.transaction(async (tx) => {
    const added = await tx.principalInsert({
      principal: {
        kind: "person",
        name,
        displayName: person.displayName ?? null,
        roles,
        tenant,
        secretHash,
        createdBy: who.actor,
      },
      now: who.now,
    });
    if (!added) throw new PrincipalRefused("exists", `a person "${name}" exists already`);
    await audit(tx, who, "user.add", `user:${name}`, {
      roles,
      tenant,
      displayName: person.displayName ?? null,
    });
    return (await tx.principalGet({ kind: "person", name }))!;
  });
}

/** Every person, by name; a page of them when `page` says so (names after `after`, at most `limit`). */
export async function listPeople(
  store: Store,
  page: { after?: string; limit?: number } = {},
): Promise<PrincipalRow[]> {
  return await store.principalsList({ kind: "person", ...page });
}

/** A person as `jobs users list --json` and the API show them: instants as ISO UTC, never a hash. */
export function personJson(p: PrincipalRow) {
  return {
    name: p.name,
    displayName: p.displayName,
    roles: p.roles,
    tenant: p.tenant,
    disabled: p.disabled,
    lastSignInAt: iso(p.lastUsedAt),
    createdBy: p.createdBy,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
  };
}

/**
 * Changes a person's roles, tenant, display name or password (the fields
 * given; at least one), audited `user.set` with the fields changed (a new
 * password as `password: "changed"`).
 */
export async function setPerson(
  store: Store,
  name: string,
  change: PersonChange,
  who: Actor,
): Promise<PrincipalRow> {
  const roles = change.roles === undefined ? undefined : checkRoles(change.roles);
  const tenant = change.tenant === undefined ? undefined : checkTenant(change.tenant);
  const given = [roles, tenant, change.displayName, change.password].some((v) => v !== undefined);
  if (!given) {
    throw new PrincipalRefused(
      "nothing-to-change",
      "nothing to change: give a role, a tenant, a display name or a password",
    );
  }
  const secretHash = change.password === undefined
    ? undefined
    : await hashPassword(checkPassword(change.password));
  return await store.transaction(async (tx) => {
    const row = await tx.principalUpdate({
      kind: "person",
      name,
      now: who.now,
      ...(roles === undefined ? {} : { roles }),
      ...(tenant === undefined ? {} : { tenant }),
      ...(change.displayName === undefined ? {} : { displayName: change.displayName }),
      ...(secretHash === undefined ? {} : { secretHash }),
    });
    if (!row) throw missing(name);
    // A new password ends the sessions signed in with the old one.
    if (secretHash !== undefined) await tx.sessionsDeleteFor({ person: name });
    await audit(tx, who, "user.set", `user:${name}`, {
      ...(roles === undefined ? {} : { roles }),
      ...(tenant === undefined ? {} : { tenant }),
      ...(change.displayName === undefined ? {} : { displayName: change.displayName }),
      ...(secretHash === undefined ? {} : { password: "changed" }),
    });
    return row;
  });
}

/** Disables (or enables again) a person, a disabled one's sessions ended, audited `user.disable` or `user.enable` with what it was. */
export async function setPersonDisabled(
  store: Store,
  name: string,
  disabled: boolean,
  who: Actor,
): Promise<{ person: PrincipalRow; was: boolean }> {
  return await store.transaction(async (tx) => {
    const before = await tx.principalGet({ kind: "person", name });
    if (!before) throw missing(name);
    const person = (await tx.principalUpdate({ kind: "person", name, disabled, now: who.now }))!;
    // A disabled person has no session: each ends now, not at its timeout.
    if (disabled) await tx.sessionsDeleteFor({ person: name });
    await audit(tx, who, disabled ? "user.disable" : "user.enable", `user:${name}`, {
      was: before.disabled ? "disabled" : "enabled",
    });
    return { person, was: before.disabled };
  });
}

/** Removes a person (and ends their sessions), audited `user.remove` with the roles and tenant they held. */
export async function removePerson(store: Store, name: string, who: Actor): Promise<PrincipalRow> {
  return await store.transaction(async (tx) => {
    const before = await tx.principalGet({ kind: "person", name });
    if (!before) throw missing(name);
    await tx.principalDelete({ kind: "person", name });
    await tx.sessionsDeleteFor({ person: name });
    // A name added again later must enrol anew: the old seed is not theirs.
    await tx.totpDelete({ person: name });
    await audit(tx, who, "user.remove", `user:${name}`, {
      roles: before.roles,
      tenant: before.tenant,
    });
    return before;
  });
}

/**
 * A hash of a password nobody has, verified when the name is unknown, so
 * a wrong name takes as long as a wrong password (made once, on first use).
 */
let decoy: Promise<string> | null = null;

/** Failed sign-ins a name may have in one window of {@linkcode SignInLimiter}, by default. */
export const SIGN_IN_LIMIT = 5;
/** The window of {@linkcode SignInLimiter}, by default, in ms: 15 minutes. */
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

/**
 * Failed sign-ins counted per name, on the injected clock: past the limit in
 * a window, the name is refused ({@linkcode SignInLimited}), even with the
 * right password, until the window ends, so a guesser cannot try one
 * person's passwords faster than that from however many addresses. An
 * unknown name is counted like a known one, so being refused does not tell
 * which names exist. One per process, shared by every sign-in.
 */
export class SignInLimiter {
  readonly #failures: FailureLimiter;

  constructor(clock: Clock, options: FailureLimitOptions = {}) {
    this.#failures = new FailureLimiter(clock, {
      limit: SIGN_IN_LIMIT,
      windowMs: SIGN_IN_WINDOW_MS,
      ...options,
    });
  }

  /** The ms until `name` may try again, or 0 when it may now. */
  blockedFor(name: string): number {
    return this.#failures.blockedFor(key(name));
  }

  /** Records one failed sign-in of `name`. */
  fail(name: string): void {
    this.#failures.fail(key(name));
  }
}

/** A name as the limiter keys it: bounded, so a huge one costs no memory. */
function key(name: string): string {
  return name.slice(0, 256);
}

/** A sign-in refused because its name failed too often: the face answers 429 with the wait. */
export class SignInLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super(
      `too many failed sign-ins for this name: try again in ${Math.ceil(retryAfterMs / 1000)} s`,
    );
    this.name = "SignInLimited";
  }
}

/**
 * The person `name` when `password` is theirs and they are not disabled
 * (their last sign-in recorded at `now`), else null. An unknown name costs
 * a password check too, so the time taken does not tell which it was.
 *
 * With `limiter`, each null is counted against `name`, and a name past its
 * limit is refused before any check.
 *
 * @throws {SignInLimited} when `limiter` refuses `name` for now
 */
export async function authenticatePerson(
  store: Store,
  name: string,
  password: string,
  now: number,
  limiter?: SignInLimiter,
): Promise<PrincipalRow | null> {
  const wait = limiter?.blockedFor(name) ?? 0;
  if (wait > 0) throw new SignInLimited(wait);
  const person = await checkedPassword(store, name, password, now);
  if (person === null) limiter?.fail(name);
  return person;
}

async function checkedPassword(
  store: Store,
  name: string,
  password: string,
  now: number,
): Promise<PrincipalRow | null> {
  const held = await store.principalSecretHash({ kind: "person", name });
  if (!held) {
    await verifyPassword(
      password.slice(0, MAX_PASSWORD_LENGTH),
      await (decoy ??= hashPassword("decoy password")),
    );
    return null;
  }
  const ok = await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), held.secretHash);
  if (!ok || held.principal.disabled) return null;
  await store.principalUsed({ kind: "person", name, now });
  return { ...held.principal, lastUsedAt: now };
}

/** What {@linkcode enrolTotp} hands back, once: the URI an authenticator app scans. */
export interface TotpEnrolled {
  person: string;
  /** `otpauth://totp/jobs:<name>?secret=...`: holds the seed; show it once, never store or log it. */
  uri: string;
  /** Whether an earlier enrolment was replaced (its codes stop working). */
  replaced: boolean;
}

/**
 * Enrols `name`'s TOTP authenticator with a new random seed, replacing
 * the one they had, audited `user.totp` (with `replaced`, never the seed).
 * The seed leaves only in the returned URI: the caller shows it once (as
 * a QR code) to the person, who scans it.
 */
export async function enrolTotp(store: Store, name: string, who: Actor): Promise<TotpEnrolled> {
  const secret = newTotpSecret();
  return await store.transaction(async (tx) => {
    const person = await tx.principalGet({ kind: "person", name });
    if (!person) throw missing(name);
    const before = await tx.totpEnrolment({ person: name });
    await tx.totpEnrol({ person: name, secret, by: who.actor, now: who.now });
    await audit(tx, who, "user.totp", `user:${name}`, { replaced: before !== null });
    return { person: name, uri: totpUri(name, secret), replaced: before !== null };
  });
}
