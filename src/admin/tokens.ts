/**
 * Tokens, the credentials of programs: creating one (its secret returned
 * once, for its creator to print; only its hash is stored), listing them
 * (never a secret or a hash), revoking one, each change and its `audit`
 * row (`token.create`, `token.revoke` on `token:<name>`) in one store
 * transaction; and finding the token of a secret presented
 * ({@linkcode authenticateToken}).
 *
 * @module
 */

import type { PrincipalRow, Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";
import {
  type ActingAs,
  checkPrincipalName,
  checkRoles,
  checkTenant,
  PrincipalRefused,
  refuseTokenMinting,
} from "./roles.ts";
import { hashTokenSecret, looksLikeTokenSecret, newTokenSecret } from "./secrets.ts";

/** A new token. */
export interface NewToken {
  name: string;
  roles: readonly string[];
  tenant?: string | null;
  /** How long from now it works, in ms; null or absent: until revoked. */
  expiresInMs?: number | null;
}

/** A token as listed: its row and whether it has expired at the instant of the listing. */
export interface TokenView extends PrincipalRow {
  expired: boolean;
}

/**
 * Creates a token (refused when the name is taken), audited `token.create`;
 * returns its row and its secret, which exists nowhere else: print it once.
 * `by` says who acts: a token is refused (`token-cannot-mint`) before
 * anything is checked or written.
 */
export async function createToken(
  store: Store,
  token: NewToken,
  who: Actor,
  by: ActingAs,
): Promise<{ token: PrincipalRow; secret: string }> {
  refuseTokenMinting(by, "token");
  const name = checkPrincipalName("token", token.name);
  const roles = checkRoles(token.roles);
  const tenant = checkTenant(token.tenant);
  const ms = token.expiresInMs ?? null;
  if (ms !== null && !(Number.isSafeInteger(ms) && ms > 0)) {
    throw new PrincipalRefused("bad-expiry", `the expiry must be a duration above zero`);
  }
  const expiresAt = ms === null ? null : who.now + ms;
  const secret = newTokenSecret();
  return await store.transaction(async (tx) => {
    const added = await tx.principalInsert({
      principal: {
        kind: "token",
        name,
        roles,
        tenant,
        secretHash: hashTokenSecret(secret),
        expiresAt,
        createdBy: who.actor,
      },
      now: who.now,
    });
    if (!added) throw new PrincipalRefused("exists", `a token "${name}" exists already`);
    await audit(tx, who, "token.create", `token:${name}`, { roles, tenant, expiresAt });
    return { token: (await tx.principalGet({ kind: "token", name }))!, secret };
  });
}

/**
 * Every token, by name, each marked expired or not at `now`; a page of them
 * when `page` says so (names after `after`, at most `limit`).
 */
export async function listTokens(
  store: Store,
  now: number,
  page: { after?: string; limit?: number } = {},
): Promise<TokenView[]> {
  return (await store.principalsList({ kind: "token", ...page })).map((t) => ({
    ...t,
    expired: t.expiresAt !== null && t.expiresAt <= now,
  }));
}

/** Revokes a token: its row is deleted (nothing can use it again), audited `token.revoke`. */
export async function revokeToken(store: Store, name: string, who: Actor): Promise<PrincipalRow> {
  return await store.transaction(async (tx) => {
    const before = await tx.principalGet({ kind: "token", name });
    if (!before) throw new PrincipalRefused("missing", `no token "${name}"`);
    await tx.principalDelete({ kind: "token", name });
    await audit(tx, who, "token.revoke", `token:${name}`, {
      roles: before.roles,
      tenant: before.tenant,
      createdBy: before.createdBy,
    });
    return before;
  });
}

/**
 * The token whose secret is `secret`, when it is neither expired nor
 * disabled at `now` (its use recorded), else null. It is found by the hash
 * of the secret (see src/admin/secrets.ts), so nothing compares the secret
 * itself.
 */
export async function authenticateToken(
  store: Store,
  secret: string,
  now: number,
): Promise<PrincipalRow | null> {
  if (!looksLikeTokenSecret(secret)) return null;
  const token = await store.principalBySecretHash({
    kind: "token",
    secretHash: hashTokenSecret(secret),
  });
  if (!token || token.disabled || (token.expiresAt !== null && token.expiresAt <= now)) {
    return null;
  }
  await store.principalUsed({ kind: "token", name: token.name, now });
  return { ...token, lastUsedAt: now };
}

/** A token as `jobs tokens list --json` and the API show it: instants as ISO UTC, never the secret or its hash. */
export function tokenJson(t: TokenView) {
  return {
    name: t.name,
    roles: t.roles,
    tenant: t.tenant,
    expiresAt: iso(t.expiresAt),
    expired: t.expired,
    lastUsedAt: iso(t.lastUsedAt),
    createdBy: t.createdBy,
    createdAt: iso(t.createdAt),
  };
}
