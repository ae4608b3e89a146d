/**
 * `/api/v1/users` and `/api/v1/tokens`: the people and tokens of `jobs users`
 * and `jobs tokens`, for admins. Listing (never a hash or a secret),
 * revoking a token (a token may revoke itself), disabling and enabling a
 * person, each through the command line's door and audited as the principal.
 *
 * A token cannot create tokens or people: `POST /api/v1/users` and
 * `POST /api/v1/tokens` check the body (400 when malformed), then the door
 * refuses a token, the daemon's `--token` included (403
 * `token-cannot-mint`): tokens and people are created on the host
 * (`jobs tokens create`, `jobs users add`), or later by a person signed in.
 *
 * Principals are not tenant data (a principal names its tenant), so every
 * route answers a tenant's principal 403 (`installation-scope-required`).
 *
 * @module
 */

import { z } from "zod";
import {
  addPerson,
  listPeople,
  MAX_PASSWORD_LENGTH,
  personJson,
  setPersonDisabled,
} from "../../admin/people.ts";
import { type ActingAs, PrincipalRefused } from "../../admin/roles.ts";
import { createToken, listTokens, revokeToken, tokenJson } from "../../admin/tokens.ts";
import { tryParseDuration } from "../../text/durations.ts";
import { type Principal, routeKey } from "../access.ts";
import {
  ApiError,
  type ApiRouter,
  checkedReason,
  installationWide,
  keysetPage,
  LIMIT_TEXT,
  pageLimit,
  param,
  quoted,
  readBody,
  readQuery,
  type RouteSchemas,
  TEXT,
} from "./common.ts";

/** The query of `GET /api/v1/users` and `GET /api/v1/tokens`: a page by name. */
export const PrincipalsQuery = z.strictObject({
  after: TEXT.describe("the `next` of the previous page (a name)").optional(),
  limit: LIMIT_TEXT.describe("at most this many (default 50, at most 500)").optional(),
});

/** A person as the API shows them (`jobs users list --json`): never a hash. */
export const UserAnswer = z.object({
  name: z.string(),
  displayName: z.string().nullable(),
  roles: z.array(z.string()),
  tenant: z.string().nullable(),
  disabled: z.boolean(),
  lastSignInAt: z.string().nullable(),
  createdBy: z.string(),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
});

/** A token as the API lists it (`jobs tokens list --json`): never the secret or its hash. */
export const TokenAnswer = z.object({
  name: z.string(),
  roles: z.array(z.string()),
  tenant: z.string().nullable(),
  expiresAt: z.string().nullable(),
  expired: z.boolean(),
  lastUsedAt: z.string().nullable(),
  createdBy: z.string(),
  createdAt: z.string().nullable(),
});

/** The answer of `GET /api/v1/users`. */
export const UsersPage = z.object({ users: z.array(UserAnswer), next: z.string().nullable() });
/** The answer of `GET /api/v1/tokens`. */
export const TokensPage = z.object({ tokens: z.array(TokenAnswer), next: z.string().nullable() });

const ROLES_FIELD = z.array(TEXT).min(1).max(8).describe("the roles it holds");
const TENANT_FIELD = TEXT.describe("the one tenant it sees and acts on (default: every one)");

/** The body of `POST /api/v1/users` (`jobs users add`). */
export const NewUserBody = z.strictObject({
  name: TEXT,
  roles: ROLES_FIELD,
  tenant: TENANT_FIELD.optional(),
  displayName: TEXT.optional(),
  password: z.string().min(1).max(MAX_PASSWORD_LENGTH),
});

/** The body of `POST /api/v1/tokens` (`jobs tokens create`). */
export const NewTokenBody = z.strictObject({
  name: TEXT,
  roles: ROLES_FIELD,
  tenant: TENANT_FIELD.optional(),
  expires: z.string().min(1).max(40).describe("it stops working after this long: 30d, 12h")
    .optional(),
});

/** The answer of `POST /api/v1/tokens` (`jobs tokens create --json`): the secret, this once. */
export const NewTokenAnswer = z.object({
  name: z.string(),
  token: z.string(),
  roles: z.array(z.string()),
  tenant: z.string().nullable(),
  expiresAt: z.string().nullable(),
});

/** The body of the actions on one principal: the reason is optional, as on the CLI. */
export const PrincipalActionBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail").optional(),
});

/** The answer of `POST /api/v1/tokens/{name}/revoke`. */
export const RevokeAnswer = z.object({ name: z.string(), revoked: z.literal(true) });
/** The answer of `POST /api/v1/users/{name}/disable|enable` (`jobs users disable --json`). */
export const UserActionAnswer = z.object({
  name: z.string(),
  disabled: z.boolean(),
  was: z.boolean(),
});

const USER_ACTION: RouteSchemas = {
  body: PrincipalActionBody,
  answer: UserActionAnswer,
  status: 200,
};

/** The schemas of the people and tokens routes, by route key. */
export const PRINCIPALS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/users")]: { query: PrincipalsQuery, answer: UsersPage, status: 200 },
  [routeKey("POST", "/api/v1/users")]: { body: NewUserBody, answer: UserAnswer, status: 201 },
  [routeKey("POST", "/api/v1/users/:name/disable")]: USER_ACTION,
  [routeKey("POST", "/api/v1/users/:name/enable")]: USER_ACTION,
  [routeKey("GET", "/api/v1/tokens")]: { query: PrincipalsQuery, answer: TokensPage, status: 200 },
  [routeKey("POST", "/api/v1/tokens")]: { body: NewTokenBody, answer: NewTokenAnswer, status: 201 },
  [routeKey("POST", "/api/v1/tokens/:name/revoke")]: {
    body: PrincipalActionBody,
    answer: RevokeAnswer,
    status: 200,
  },
};

/** Who acts, as the minting doors take it: the daemon's `--token` is a token too. */
function actingAs(p: Principal): ActingAs {
  return p.kind === "person" ? "person" : "token";
}

/** A refusal of the doors as the API answers it. */
function refused(error: unknown, kind: "user" | "token", name: string): never {
  if (!(error instanceof PrincipalRefused)) throw error;
  switch (error.why) {
    case "token-cannot-mint":
      throw new ApiError(403, "token-cannot-mint", error.message);
    case "missing":
      throw new ApiError(
        404,
        `${kind}-not-found`,
        `no ${kind === "user" ? "person" : "token"} ${quoted(name)}`,
      );
    case "exists":
      throw new ApiError(409, `${kind}-exists`, error.message);
    default:
      throw new ApiError(400, "body-invalid", error.message);
  }
}

/** Runs a door, its refusal answered as {@linkcode refused} says. */
async function door<T>(kind: "user" | "token", name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    return refused(error, kind, name);
  }
}

/** Registers the people and tokens routes. */
export function registerPrincipals(api: ApiRouter): void {
  const { store, clock } = api;

  api.on("GET", "/api/v1/users", async (c, p) => {
    installationWide(p);
    const query = readQuery(c, PrincipalsQuery);
    const limit = pageLimit(query.limit);
    const rows = await listPeople(store, { after: query.after, limit: limit + 1 });
    const { page, next } = keysetPage(rows, limit, (row) => row.name);
    return c.json({ users: page.map(personJson), next });
  });

  api.on("GET", "/api/v1/tokens", async (c, p) => {
    installationWide(p);
    const query = readQuery(c, PrincipalsQuery);
    const limit = pageLimit(query.limit);
    const rows = await listTokens(store, clock.now(), { after: query.after, limit: limit + 1 });
    const { page, next } = keysetPage(rows, limit, (row) => row.name);
    return c.json({ tokens: page.map(tokenJson), next });
  });

  api.on("POST", "/api/v1/users", async (c, p) => {
    installationWide(p);
    const body = await readBody(c, NewUserBody);
    const person = await door("user", body.name, () =>
      addPerson(
        store,
        {
          name: body.name,
          roles: body.roles,
          tenant: body.tenant ?? null,
          displayName: body.displayName ?? null,
          password: body.password,
        },
        api.who(p, null),
        actingAs(p),
      ));
    return c.json(personJson(person), 201);
  });

  api.on("POST", "/api/v1/tokens", async (c, p) => {
    installationWide(p);
    const body = await readBody(c, NewTokenBody);
    let expiresInMs: number | null = null;
    if (body.expires !== undefined) {
      const parsed = tryParseDuration(body.expires);
      if (!parsed.ok) {
        throw new ApiError(
          400,
          "body-invalid",
          `body field "expires": ${quoted(body.expires)} ${parsed.reason}`,
        );
      }
      expiresInMs = parsed.ms;
    }
    const { token, secret } = await door("token", body.name, () =>
      createToken(
        store,
        {
          name: body.name,
          roles: body.roles,
          tenant: body.tenant ?? null,
          expiresInMs,
        },
        api.who(p, null),
        actingAs(p),
      ));
    const made = tokenJson({ ...token, expired: false });
    return c.json({
      name: made.name,
      token: secret,
      roles: made.roles,
      tenant: made.tenant,
      expiresAt: made.expiresAt,
    }, 201);
  });

  api.on("POST", "/api/v1/tokens/:name/revoke", async (c, p) => {
    installationWide(p);
    const { reason } = await readBody(c, PrincipalActionBody);
    checkedReason(reason);
    const name = param(c, "name");
    await door("token", name, () => revokeToken(store, name, api.who(p, reason ?? null)));
    return c.json({ name, revoked: true });
  });

  for (const action of ["disable", "enable"] as const) {
    api.on("POST", `/api/v1/users/:name/${action}`, async (c, p) => {
      installationWide(p);
      const { reason } = await readBody(c, PrincipalActionBody);
      checkedReason(reason);
      const name = param(c, "name");
      const disabled = action === "disable";
      const r = await door(
        "user",
        name,
        () => setPersonDisabled(store, name, disabled, api.who(p, reason ?? null)),
      );
      return c.json({ name: r.person.name, disabled, was: r.was });
    });
  }
}
