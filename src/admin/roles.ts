/**
 * The roles a principal may hold, and the checks every door applies to what
 * names a principal: its roles, its name and its tenant. The refusal of
 * either is a {@linkcode PrincipalRefused}, one sentence naming the value.
 *
 * - `viewer`: reads everything in its scope (args and errors redacted);
 * - `operator`: acts on jobs, queues, schedules, workflows, pipelines and reports;
 * - `approver`: confirms what needs a second person (never their own request);
 * - `admin`: people, tokens and settings;
 * - a work queue's role (`support`): any other name by the rule
 *   {@linkcode QUEUE_ROLE}, which grants nothing but working (claim, next,
 *   release, skip, do) the work queues whose `roles:` name it. The action
 *   table (`actions.ts`) and the route tables name built-in roles only, so
 *   such a role is denied everything else by default. A name one edit away
 *   from a built-in one (`admn`, `opertor`) is refused as the typo it is.
 *
 * @module
 */

import { NAME } from "../config/schema.ts";
import { didYouMean, editDistance } from "../text/suggest.ts";
import { QUEUE_ROLE } from "../workqueue/types.ts";

/** Every role, from the least to the most. */
export const ROLES = ["viewer", "operator", "approver", "admin"] as const;

/** One of {@linkcode ROLES}. */
export type Role = typeof ROLES[number];

/** Why a door refused a principal's change: `why` says which rule, the message names the value. */
export class PrincipalRefused extends Error {
  constructor(
    readonly why:
      | "bad-name"
      | "bad-role"
      | "no-role"
      | "bad-tenant"
      | "bad-password"
      | "bad-expiry"
      | "exists"
      | "missing"
      | "nothing-to-change"
      | "token-cannot-mint",
    message: string,
  ) {
    super(message);
    this.name = "PrincipalRefused";
  }
}

/**
 * Who acts on a door that mints credentials: the command line on the host
 * (`host`, the root of trust, like `psql` as the database's owner), a
 * person signed in, or a program's token (the daemon's old `--token`
 * included).
 */
export type ActingAs = "host" | "person" | "token";

/**
 * Refuses a token minting tokens or people (`token-cannot-mint`): a stolen
 * token must not be able to make itself new credentials. `what` names what
 * it tried to make, for the message.
 */
export function refuseTokenMinting(by: ActingAs, what: "token" | "person"): void {
  if (by !== "token") return;
  throw new PrincipalRefused(
    "token-cannot-mint",
    `a token cannot create ${what === "token" ? "tokens" : "people"}: ${
      what === "token"
        ? "tokens are created with `jobs tokens create`"
        : "people are added with `jobs users add`"
    } on the host (or by a person signed in to the console)`,
  );
}

/** Whether `role` is one of the built-in {@linkcode ROLES}. */
export function isBuiltInRole(role: string): role is Role {
  return (ROLES as readonly string[]).includes(role);
}

/**
 * `roles` checked and without repeats, in the order given; at least one.
 * Each is a built-in role or a work queue's role ({@linkcode QUEUE_ROLE});
 * a name one edit from a built-in one is refused as a typo of it, so a
 * slip of the keyboard never makes a role that silently grants nothing.
 * Whether a work queue names a custom role is not checked here: people are
 * kept in the store and queues in the schedules file, which may change
 * apart; a role no queue names grants nothing.
 */
export function checkRoles(roles: readonly string[]): string[] {
  if (roles.length === 0) {
    throw new PrincipalRefused("no-role", `at least one role is needed (${ROLES.join(", ")})`);
  }
  for (const role of roles) {
    if (isBuiltInRole(role)) continue;
    const typo = ROLES.some((builtIn) => editDistance(role, builtIn) <= 1);
    if (typo || !QUEUE_ROLE.test(role)) {
      throw new PrincipalRefused(
        "bad-role",
        `${JSON.stringify(role)} is not a role (${ROLES.join(", ")}${
          typo ? "" : ", or a work queue's: a lowercase letter, then up to 39 lowercase " +
            "letters, digits, _ or -"
        })${didYouMean(role, ROLES)}`,
      );
    }
  }
  return [...new Set(roles)];
}

/** A person's name: the rule of queue and worker names, and `@` for an email address. */
const PERSON_NAME = /^[A-Za-z0-9][\w.:/@-]{0,127}$/;

/** `name` as a person's (`person`) or a token's name, or refused naming it. */
export function checkPrincipalName(kind: "person" | "token", name: string): string {
  const ok = kind === "person" ? PERSON_NAME.test(name) : NAME.test(name);
  if (!ok) {
    throw new PrincipalRefused(
      "bad-name",
      `${JSON.stringify(name)} is not a ${kind === "person" ? "person's" : "token's"} name ` +
        `(a letter or digit, then up to 127 letters, digits or ${
          kind === "person" ? "_ . : / @ -" : "_ . : / -"
        })`,
    );
  }
  return name;
}

/** A tenant's name, by the rule of queue and worker names; null stays null (installation-wide). */
export function checkTenant(tenant: string | null | undefined): string | null {
  if (tenant == null) return null;
  if (!NAME.test(tenant)) {
    throw new PrincipalRefused(
      "bad-tenant",
      `${JSON.stringify(tenant)} is not a tenant's name ` +
        `(a letter or digit, then up to 127 letters, digits or _ . : / -)`,
    );
  }
  return tenant;
}
