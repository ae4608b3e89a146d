/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The admin pages: People at `/people`, Tokens at `/tokens` and Sessions
 * at `/sessions`, the commands `jobs users`, `jobs tokens` and
 * `jobs sessions` as pages. Only admins may open them (`CONSOLE_ROUTES`
 * gives them `ADMIN`), and people, tokens and sessions are shared by the
 * whole installation, so a tenant's admin sees a note and no row, and is
 * refused (403) every action.
 *
 * Every action goes through the doors of `src/admin/` (`people.ts`,
 * `tokens.ts`, `sessions.ts`) with `router.who(p, reason)`, so its audit
 * row names the person; a person may create people and tokens (`by` is
 * `person`: only a token may not). A reason is required to disable or
 * enable a person, and optional elsewhere, but never a placeholder
 * (`placeholderReason`). A refused action shows the page again with the
 * door's sentence (400, 404 or 409); a done one redirects (303) to the
 * page with `?done=` naming what was done, from a fixed list.
 *
 * A new token's secret is shown once, on the answer of `POST /tokens`
 * (not a redirect: it exists nowhere else), with a warning; every console
 * answer is `Cache-Control: no-store`, so the browser keeps no copy. The
 * lists never show a secret, a hash or a session id: a session is named
 * by its handle, and the person's own current session is marked. Stored
 * text is shown with control characters and bidi overrides as visible
 * escapes (`escapeControl`).
 *
 * An admin enrols a person's TOTP authenticator (`POST /people/:name/totp`,
 * `user.totp` through `enrolTotp`, with a reason): the answer, not a
 * redirect, shows the seed's QR code this once as inline SVG drawn by the
 * page (no `data:` image: the CSP's `default-src 'self'` refuses those), and
 * nothing shows it again. An admin enrols, not the person: the code is the
 * factor from outside the session that confirms bulk money, so a session
 * alone (a stolen cookie) must not be able to replace it.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import {
  addPerson,
  enrolTotp,
  listPeople,
  removePerson,
  setPerson,
  setPersonDisabled,
} from "../admin/people.ts";
import { PrincipalRefused, ROLES } from "../admin/roles.ts";
import {
  listSessions,
  revokeSessions,
  sessionHandle,
  sessionHash,
  SessionRefused,
} from "../admin/sessions.ts";
import { createToken, listTokens, revokeToken, type TokenView } from "../admin/tokens.ts";
import type { Principal } from "../http/access.ts";
import type { PrincipalRow, SessionRow } from "../store/store.ts";
import { tryParseDuration } from "../text/durations.ts";
import { totpQrSvg } from "../workqueue/totp.ts";
import { escapeControl as shown } from "../text/escape.ts";
import { auditOf, Instant } from "./audit.tsx";
import { type ConsoleRouter, type Ctx, formReason, NAV_ORDER, pathTo, readForm } from "./common.ts";
import { Fragment, h } from "./jsx.ts";
import { sessionIdOf } from "./security.ts";

/** People or tokens per page of their lists (by name, `?after=`). */
export const PRINCIPALS_PAGE_SIZE = 100;
/** A user agent is shown up to this many characters. */
const MAX_AGENT_SHOWN = 80;

/** What `?done=` may say after an action, and the sentence it shows. */
const DONE: Readonly<Record<string, string>> = {
  added: "Added",
  set: "Changed the roles and tenant of",
  disabled: "Disabled",
  enabled: "Enabled",
  removed: "Removed",
  revoked: "Revoked",
};

/** A refusal of an action: the page again with `message`, answered `status`. */
class Refusal extends Error {
  constructor(readonly status: 400 | 403 | 404 | 409, message: string) {
    super(message);
    this.name = "Refusal";
  }
}

/** Registers People, Tokens and Sessions. */
export function registerPeople(router: ConsoleRouter): void {
  registerPeoplePage(router);
  registerTokensPage(router);
  registerSessionsPage(router);
}

// ------------------------------------------------------------------ shared

/** The note a tenant's admin sees instead of the installation's rows. */
function TenantNote(props: { what: string }) {
  return (
    <p class="note" data-tenant-note>
      {props.what}{" "}
      are shared by every tenant, so only an installation-wide admin sees and changes them here.
    </p>
  );
}

/** Refuses a tenant's person an action on what every tenant shares. */
function installationWide(p: Principal): void {
  if (p.tenant !== null) {
    throw new Refusal(403, "people, tokens and sessions are changed by installation-wide admins");
  }
}

/** A path parameter (decoded by the router), or the empty string. */
function param(c: Ctx, key: string): string {
  return c.req.param(key) ?? "";
}

/** The form's fields, or a refusal when the body is not a form or is too long. */
async function formOf(c: Ctx): Promise<URLSearchParams> {
  const form = await readForm(c);
  if (form === null) throw new Refusal(400, "the request is not a form, or is too long");
  return form;
}

/** The form's `reason`: null when empty and not required; refused when a placeholder. */
function reasonOf(form: URLSearchParams, required: boolean): string | null {
  const read = formReason(form, required);
  if ("refused" in read) throw new Refusal(400, read.refused);
  return read.reason;
}

/** The checked roles of a form's `role` checkboxes. */
function rolesOf(form: URLSearchParams): string[] {
  return form.getAll("role");
}

/** The form's tenant: null (every tenant) when empty. */
function tenantOf(form: URLSearchParams): string | null {
  const tenant = (form.get("tenant") ?? "").trim();
  return tenant === "" ? null : tenant;
}

/** A door's refusal as the page shows it; anything else goes on up (500). */
function refusalOf(error: unknown): Refusal {
  if (error instanceof Refusal) return error;
  if (error instanceof PrincipalRefused) {
    const status = error.why === "missing" ? 404 : error.why === "exists" ? 409 : 400;
    return new Refusal(status, error.message);
  }
  if (error instanceof SessionRefused) {
    return new Refusal(error.why === "missing" ? 404 : 400, error.message);
  }
  throw error;
}

/** The sentence of `?done=&name=`, or null. */
function doneOf(c: Ctx): string | null {
  const done = DONE[c.req.query("done") ?? ""];
  if (done === undefined) return null;
  const name = (c.req.query("name") ?? "").slice(0, 200);
  return `${done} ${name}.`;
}

/** Where an action leads when done: `path?done=what&name=name`. */
function doneHref(path: string, what: keyof typeof DONE, name: string): string {
  return `${path}?${new URLSearchParams({ done: what, name })}`;
}

function Messages(props: { done: string | null; error: string | null }) {
  return (
    <>
      {props.done === null ? null : <p class="message" role="status">{shown(props.done)}</p>}
      {props.error === null ? null : <p class="message error" role="alert">{shown(props.error)}</p>}
    </>
  );
}

function RoleBoxes(props: { idPrefix: string; checked?: readonly string[] }) {
  return (
    <fieldset class="roles">
      <legend>Roles</legend>
      {ROLES.map((role) => (
        <label key={role} for={`${props.idPrefix}-${role}`}>
          <input
            type="checkbox"
            id={`${props.idPrefix}-${role}`}
            name="role"
            value={role}
            checked={props.checked?.includes(role) ?? false}
          />{" "}
          {role}
        </label>
      ))}
    </fieldset>
  );
}

function Pager(props: { path: string; after: string | undefined; next: string | null }) {
  if (props.after === undefined && props.next === null) return null;
  return (
    <p class="pager">
      {props.after === undefined ? null : <a href={props.path}>First</a>} {props.next === null
        ? null
        : <a href={`${props.path}?${new URLSearchParams({ after: props.next })}`}>Next</a>}
    </p>
  );
}

/** A page of `rows` by name: the first `size`, and the name to go on after, or null. */
function pageOf<T extends { name: string }>(rows: T[], size: number) {
  const page = rows.slice(0, size);
  return { page, next: rows.length > size ? page.at(-1)!.name : null };
}

// ------------------------------------------------------------------ people

interface PeopleState {
  done?: string | null;
  error?: string | null;
  /** What the add form held when it was refused (never the password). */
  draft?: { name: string; displayName: string; roles: string[]; tenant: string };
  /** The authenticator just enrolled: its QR code, shown on this one answer only. */
  enrolled?: { person: string; qr: QrDrawing; replaced: boolean };
}

function registerPeoplePage(router: ConsoleRouter): void {
  const { store } = router;
  router.nav({ path: "/people", label: "People", order: NAV_ORDER.people });

  const show = async (c: Ctx, p: Principal, state: PeopleState, status?: 400 | 403 | 404 | 409) => {
    if (p.tenant !== null) {
      return await router.render(c, p, {
        title: "People",
        body: <TenantNote what="People" />,
        ...(status === undefined ? {} : { status }),
      });
    }
    const after = c.req.query("after") || undefined;
    const { page, next } = pageOf(
      await listPeople(store, { after, limit: PRINCIPALS_PAGE_SIZE + 1 }),
      PRINCIPALS_PAGE_SIZE,
    );
    const body = (
      <>
        <Messages done={state.done ?? null} error={state.error ?? null} />
        {state.enrolled ? <Enrolled enrolled={state.enrolled} /> : null}
        <section aria-labelledby="people-list">
          <h2 id="people-list">Everyone who signs in</h2>
          <PeopleTable people={page} p={p} now={router.clock.now()} />
          <Pager path="/people" after={after} next={next} />
        </section>
        {mayTake(p.roles, "user.add") ? <AddPersonForm draft={state.draft} /> : null}
      </>
    );
    return await router.render(c, p, {
      title: "People",
      body,
      ...(status === undefined ? {} : { status }),
    });
  };

  /** An action: `act` done leads to `path`; refused shows the page with the sentence. */
  const action =
    (act: (c: Ctx, p: Principal, form: URLSearchParams) => Promise<string>) =>
    async (c: Ctx, p: Principal) => {
      let form: URLSearchParams | null = null;
      try {
        installationWide(p);
        form = await formOf(c);
        return c.redirect(await act(c, p, form), 303);
      } catch (error) {
        const refused = refusalOf(error);
        const draft = c.req.path === "/people" && form !== null
          ? {
            name: form.get("name") ?? "",
            displayName: form.get("display_name") ?? "",
            roles: rolesOf(form),
            tenant: form.get("tenant") ?? "",
          }
          : undefined;
        return await show(c, p, { error: refused.message, draft }, refused.status);
      }
    };

  router.page("GET", "/people", async (c, p) => await show(c, p, { done: doneOf(c) }));

  router.page(
    "POST",
    "/people",
    action(async (_c, p, form) => {
      const password = form.get("password") ?? "";
      if (password !== (form.get("password_again") ?? "")) {
        throw new Refusal(400, "the two passwords differ: type the same password twice");
      }
      const displayName = (form.get("display_name") ?? "").trim();
      const person = await addPerson(
        store,
        {
          name: (form.get("name") ?? "").trim(),
          roles: rolesOf(form),
          tenant: tenantOf(form),
          displayName: displayName === "" ? null : displayName,
          password,
        },
        router.who(p, null),
        "person",
      );
      return doneHref("/people", "added", person.name);
    }),
  );

  router.page(
    "POST",
    "/people/:name/roles",
    action(async (c, p, form) => {
      const name = param(c, "name");
      await setPerson(
        store,
        name,
        { roles: rolesOf(form), tenant: tenantOf(form) },
        router.who(p, reasonOf(form, false)),
      );
      return doneHref("/people", "set", name);
    }),
  );

  for (const what of ["disable", "enable"] as const) {
    router.page(
      "POST",
      `/people/:name/${what}`,
      action(async (c, p, form) => {
        const name = param(c, "name");
        const who = router.who(p, reasonOf(form, true));
        await setPersonDisabled(store, name, what === "disable", who);
        return doneHref("/people", what === "disable" ? "disabled" : "enabled", name);
      }),
    );
  }

  router.page("POST", "/people/:name/totp", async (c, p) => {
    try {
      installationWide(p);
      const form = await formOf(c);
      const name = param(c, "name");
      const enrolled = await enrolTotp(store, name, router.who(p, reasonOf(form, true)));
      return await show(c, p, {
        enrolled: {
          person: enrolled.person,
          qr: qrDrawing(await totpQrSvg(enrolled.uri)),
          replaced: enrolled.replaced,
        },
      });
    } catch (error) {
      const refused = refusalOf(error);
      return await show(c, p, { error: refused.message }, refused.status);
    }
  });

  router.page(
    "POST",
    "/people/:name/remove",
    action(async (c, p, form) => {
      const name = param(c, "name");
      if (form.get("confirm") !== name) {
        throw new Refusal(400, "to remove a person, tick the box that confirms it");
      }
      await removePerson(store, name, router.who(p, reasonOf(form, false)));
      return doneHref("/people", "removed", name);
    }),
  );
}

function PeopleTable(props: { people: PrincipalRow[]; p: Principal; now: number }) {
  const { p } = props;
  if (props.people.length === 0) return <p class="note">Nobody yet.</p>;
  return (
    <div class="table-wrap">
      <table data-table="people">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Display name</th>
            <th scope="col">Roles</th>
            <th scope="col">Tenant</th>
            <th scope="col">Status</th>
            <th scope="col">Last sign-in (UTC)</th>
            <th scope="col">Created by</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.people.map((person, row) => (
            <tr key={person.name} data-person-row={person.name}>
              <th scope="row">
                <a href={auditOf(`user:${person.name}`)} title="This person's audit trail">
                  {shown(person.name)}
                </a>
              </th>
              <td data-display-name class="wrap">{shown(person.displayName ?? "")}</td>
              <td>{person.roles.join(", ")}</td>
              <td>
                {person.tenant === null
                  ? <span class="note">every tenant</span>
                  : shown(person.tenant)}
              </td>
              <td>
                {person.disabled
                  ? <span class="badge bad">disabled</span>
                  : <span class="badge good">enabled</span>}
              </td>
              <td>
                <Instant ms={person.lastUsedAt} now={props.now} />
              </td>
              <td>{shown(person.createdBy)}</td>
              <td class="actions">
                <PersonActions person={person} p={p} row={row} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function PersonActions(props: { person: PrincipalRow; p: Principal; row: number }) {
  const { person, p } = props;
  const id = `person-${props.row}`;
  const toggle = person.disabled ? "enable" : "disable";
  return (
    <>
      {mayTake(p.roles, `user.${toggle}`)
        ? (
          <form method="post" action={pathTo("/people", person.name, toggle)} class="inline">
            <label for={`${id}-${toggle}-reason`} class="visually-hidden">
              Why {toggle} {person.name}
            </label>
            <input
              id={`${id}-${toggle}-reason`}
              name="reason"
              required
              placeholder="reason"
              autocomplete="off"
            />
            <button type="submit">{toggle === "disable" ? "Disable" : "Enable"}</button>
          </form>
        )
        : null}
      {mayTake(p.roles, "user.totp") && !person.disabled
        ? (
          <details>
            <summary>Authenticator</summary>
            <form method="post" action={pathTo("/people", person.name, "totp")}>
              <label for={`${id}-totp-reason`}>
                Enrol {shown(person.name)}'s TOTP authenticator (replaces the one they had)
              </label>
              <input
                id={`${id}-totp-reason`}
                name="reason"
                required
                placeholder="why enrol"
                autocomplete="off"
              />
              <button type="submit" data-action="totp">Enrol and show the QR code</button>
            </form>
          </details>
        )
        : null}
      {mayTake(p.roles, "user.set") || mayTake(p.roles, "user.remove")
        ? (
          <details>
            <summary>Change</summary>
            {mayTake(p.roles, "user.set")
              ? (
                <form method="post" action={pathTo("/people", person.name, "roles")}>
                  <RoleBoxes idPrefix={`${id}-roles`} checked={person.roles} />
                  <label for={`${id}-tenant`}>Tenant (empty: every tenant)</label>
                  <input
                    id={`${id}-tenant`}
                    name="tenant"
                    value={person.tenant ?? ""}
                    autocomplete="off"
                  />
                  <button type="submit">Set roles and tenant</button>
                </form>
              )
              : null}
            {mayTake(p.roles, "user.remove")
              ? (
                <form method="post" action={pathTo("/people", person.name, "remove")}>
                  <label for={`${id}-confirm`}>
                    <input
                      type="checkbox"
                      id={`${id}-confirm`}
                      name="confirm"
                      value={person.name}
                      required
                    />{" "}
                    Remove {person.name} for good (their sessions end)
                  </label>
                  <button type="submit" class="danger">Remove</button>
                </form>
              )
              : null}
          </details>
        )
        : null}
    </>
  );
}

function AddPersonForm(props: { draft?: PeopleState["draft"] }) {
  const d = props.draft;
  return (
    <section aria-labelledby="add-person">
      <h2 id="add-person">Add a person</h2>
      <form method="post" action="/people" class="stacked" data-form="add-person">
        <label for="new-name">Name</label>
        <input id="new-name" name="name" required autocomplete="off" value={d?.name ?? ""} />
        <label for="new-display-name">Display name</label>
        <input
          id="new-display-name"
          name="display_name"
          autocomplete="off"
          value={d?.displayName ?? ""}
        />
        <RoleBoxes idPrefix="new-role" checked={d?.roles ?? []} />
        <label for="new-tenant">Tenant (empty: every tenant)</label>
        <input id="new-tenant" name="tenant" autocomplete="off" value={d?.tenant ?? ""} />
        <label for="new-password">Password</label>
        <input
          id="new-password"
          name="password"
          type="password"
          required
          autocomplete="new-password"
        />
        <label for="new-password-again">Password again</label>
        <input
          id="new-password-again"
          name="password_again"
          type="password"
          required
          autocomplete="new-password"
        />
        <button type="submit" class="primary">Add person</button>
      </form>
    </section>
  );
}

// ------------------------------------------------------------------ tokens

interface TokensState {
  done?: string | null;
  error?: string | null;
  /** The token just created and its secret: shown on this one answer only. */
  created?: { name: string; secret: string; expiresAt: number | null };
}

function registerTokensPage(router: ConsoleRouter): void {
  const { store, clock } = router;
  router.nav({ path: "/tokens", label: "Tokens", order: NAV_ORDER.tokens });

  const show = async (c: Ctx, p: Principal, state: TokensState, status?: 400 | 403 | 404 | 409) => {
    const statusOf = status === undefined ? {} : { status };
    if (p.tenant !== null) {
      return await router.render(c, p, {
        title: "Tokens",
        body: <TenantNote what="Tokens" />,
        ...statusOf,
      });
    }
    const now = clock.now();
    const after = c.req.query("after") || undefined;
    const { page, next } = pageOf(
      await listTokens(store, now, { after, limit: PRINCIPALS_PAGE_SIZE + 1 }),
      PRINCIPALS_PAGE_SIZE,
    );
    const body = (
      <>
        <Messages done={state.done ?? null} error={state.error ?? null} />
        {state.created === undefined ? null : <NewSecret created={state.created} now={now} />}
        <section aria-labelledby="tokens-list">
          <h2 id="tokens-list">Tokens of programs</h2>
          <TokensTable tokens={page} p={p} now={now} />
          <Pager path="/tokens" after={after} next={next} />
        </section>
        {mayTake(p.roles, "token.create") ? <CreateTokenForm /> : null}
      </>
    );
    return await router.render(c, p, { title: "Tokens", body, ...statusOf });
  };

  router.page("GET", "/tokens", async (c, p) => await show(c, p, { done: doneOf(c) }));

  router.page("POST", "/tokens", async (c, p) => {
    try {
      installationWide(p);
      const form = await formOf(c);
      const expires = (form.get("expires") ?? "").trim();
      let expiresInMs: number | null = null;
      if (expires !== "") {
        const parsed = tryParseDuration(expires);
        if (!parsed.ok) {
          throw new Refusal(400, `expiry ${JSON.stringify(expires)} ${parsed.reason}`);
        }
        expiresInMs = parsed.ms;
      }
      const { token, secret } = await createToken(
        store,
        {
          name: (form.get("name") ?? "").trim(),
          roles: rolesOf(form),
          tenant: tenantOf(form),
          expiresInMs,
        },
        router.who(p, null),
        "person",
      );
      return await show(c, p, {
        created: { name: token.name, secret, expiresAt: token.expiresAt },
      });
    } catch (error) {
      const refused = refusalOf(error);
      return await show(c, p, { error: refused.message }, refused.status);
    }
  });

  router.page("POST", "/tokens/:name/revoke", async (c, p) => {
    try {
      installationWide(p);
      const form = await formOf(c);
      const name = param(c, "name");
      await revokeToken(store, name, router.who(p, reasonOf(form, false)));
      return c.redirect(doneHref("/tokens", "revoked", name), 303);
    } catch (error) {
      const refused = refusalOf(error);
      return await show(c, p, { error: refused.message }, refused.status);
    }
  });
}

function NewSecret(props: { created: NonNullable<TokensState["created"]>; now: number }) {
  const { created } = props;
  return (
    <section class="secret" aria-labelledby="new-secret" data-new-token={created.name}>
      <h2 id="new-secret">Token {shown(created.name)} created</h2>
      <p class="message warn" role="alert">
        Copy the secret now: it is shown this once and never again, and nothing can show it later.
        Whoever holds it acts with the token's roles.
      </p>
      <p>
        <code class="token-secret" data-secret>{created.secret}</code>
      </p>
      <p class="note">
        {created.expiresAt === null
          ? "It never expires (revoke it when it is no longer needed)."
          : (
            <>
              It expires at <Instant ms={created.expiresAt} now={props.now} />.
            </>
          )}
      </p>
    </section>
  );
}

function TokensTable(props: { tokens: TokenView[]; p: Principal; now: number }) {
  const { p } = props;
  if (props.tokens.length === 0) return <p class="note">No token yet.</p>;
  return (
    <div class="table-wrap">
      <table data-table="tokens">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Roles</th>
            <th scope="col">Tenant</th>
            <th scope="col">Expires (UTC)</th>
            <th scope="col">Last used (UTC)</th>
            <th scope="col">Created by</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.tokens.map((t, row) => (
            <tr key={t.name} data-token-row={t.name}>
              <th scope="row">
                <a href={auditOf(`token:${t.name}`)} title="This token's audit trail">
                  {shown(t.name)}
                </a>
              </th>
              <td>{t.roles.join(", ")}</td>
              <td>
                {t.tenant === null ? <span class="note">every tenant</span> : shown(t.tenant)}
              </td>
              <td>
                {t.expired ? <span class="badge bad">expired</span> : null}{" "}
                <Instant ms={t.expiresAt} now={props.now} />
              </td>
              <td>
                <Instant ms={t.lastUsedAt} now={props.now} />
              </td>
              <td>{shown(t.createdBy)}</td>
              <td class="actions">
                {mayTake(p.roles, "token.revoke")
                  ? (
                    <form method="post" action={pathTo("/tokens", t.name, "revoke")} class="inline">
                      <label
                        for={`revoke-${row}`}
                        class="visually-hidden"
                      >
                        Why revoke {t.name}
                      </label>
                      <input
                        id={`revoke-${row}`}
                        name="reason"
                        placeholder="reason (optional)"
                        autocomplete="off"
                      />
                      <button type="submit" class="danger">Revoke</button>
                    </form>
                  )
                  : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function CreateTokenForm() {
  return (
    <section aria-labelledby="create-token">
      <h2 id="create-token">Create a token</h2>
      <form method="post" action="/tokens" class="stacked" data-form="create-token">
        <label for="token-name">Name</label>
        <input id="token-name" name="name" required autocomplete="off" />
        <RoleBoxes idPrefix="token-role" />
        <label for="token-tenant">Tenant (empty: every tenant)</label>
        <input id="token-tenant" name="tenant" autocomplete="off" />
        <label for="token-expires">Expires after (such as 30d or 12h; empty: never)</label>
        <input id="token-expires" name="expires" autocomplete="off" placeholder="30d" />
        <button type="submit" class="primary">Create token</button>
      </form>
    </section>
  );
}

// ------------------------------------------------------------------ sessions

function registerSessionsPage(router: ConsoleRouter): void {
  const { store } = router;
  router.nav({ path: "/sessions", label: "Sessions", order: NAV_ORDER.sessions });

  const show = async (
    c: Ctx,
    p: Principal,
    state: { done?: string | null; error?: string | null },
    status?: 400 | 403 | 404 | 409,
  ) => {
    const statusOf = status === undefined ? {} : { status };
    if (p.tenant !== null) {
      return await router.render(c, p, {
        title: "Sessions",
        body: <TenantNote what="Sessions" />,
        ...statusOf,
      });
    }
    const id = sessionIdOf(c.req.raw);
    const mine = id === null ? null : sessionHash(id);
    const body = (
      <>
        <Messages done={state.done ?? null} error={state.error ?? null} />
        <SessionsTable
          sessions={await listSessions(store)}
          mine={mine}
          p={p}
          now={router.clock.now()}
        />
      </>
    );
    return await router.render(c, p, { title: "Sessions", body, ...statusOf });
  };

  router.page("GET", "/sessions", async (c, p) => await show(c, p, { done: doneOf(c) }));

  router.page("POST", "/sessions/:handle/revoke", async (c, p) => {
    try {
      installationWide(p);
      const form = await formOf(c);
      const handle = param(c, "handle");
      const [revoked] = await revokeSessions(
        store,
        { prefix: handle },
        router.who(p, reasonOf(form, false)),
      );
      return c.redirect(doneHref("/sessions", "revoked", `session ${revoked}`), 303);
    } catch (error) {
      const refused = refusalOf(error);
      return await show(c, p, { error: refused.message }, refused.status);
    }
  });
}

function SessionsTable(
  props: { sessions: SessionRow[]; mine: string | null; p: Principal; now: number },
) {
  const { p } = props;
  if (props.sessions.length === 0) return <p class="note">No session.</p>;
  return (
    <div class="table-wrap">
      <table data-table="sessions">
        <thead>
          <tr>
            <th scope="col">Person</th>
            <th scope="col">Handle</th>
            <th scope="col">Signed in (UTC)</th>
            <th scope="col">Last seen (UTC)</th>
            <th scope="col">Address</th>
            <th scope="col">Browser</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.sessions.map((s) => {
            const handle = sessionHandle(s);
            return (
              <tr key={handle} data-session={handle} data-session-person={s.person}>
                <th scope="row">{shown(s.person)}</th>
                <td>
                  <code>{handle}</code> {s.idHash === props.mine
                    ? <span class="badge good" data-current>this session</span>
                    : null}
                </td>
                <td>
                  <Instant ms={s.createdAt} now={props.now} />
                </td>
                <td>
                  <Instant ms={s.lastSeenAt} now={props.now} />
                </td>
                <td>{shown(s.address ?? "")}</td>
                <td class="wrap" title={shown(s.userAgent ?? "")}>
                  {agentShown(s.userAgent)}
                </td>
                <td class="actions">
                  {mayTake(p.roles, "session.revoke")
                    ? (
                      <form method="post" action={pathTo("/sessions", handle, "revoke")}>
                        <button type="submit" class="danger">Revoke</button>
                      </form>
                    )
                    : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function agentShown(agent: string | null): string {
  if (agent === null) return "";
  return shown(agent.length > MAX_AGENT_SHOWN ? `${agent.slice(0, MAX_AGENT_SHOWN)}…` : agent);
}

/** A QR code as the page draws it: its view box and its two paths, never markup from elsewhere. */
interface QrDrawing {
  viewBox: string;
  light: string;
  dark: string;
}

/**
 * The drawing of `totpQrSvg`'s document: its view box and the `d` of its
 * light and dark paths, each checked to be only numbers and path commands,
 * so what the page draws is its own `<svg>` (classes, no style).
 */
export function qrDrawing(svg: string): QrDrawing {
  const viewBox = /viewBox="([\d .]+)"/.exec(svg)?.[1];
  const light = /<path fill="#ffffff" d="([MmHhVvZz\d .-]+)"/.exec(svg)?.[1];
  const dark = /<path stroke="#000000" d="([MmHhVvZz\d .-]+)"/.exec(svg)?.[1];
  if (!viewBox || !light || !dark) {
    throw new Error("the QR code's SVG is not in the shape expected");
  }
  return { viewBox, light, dark };
}

function Enrolled(props: { enrolled: NonNullable<PeopleState["enrolled"]> }) {
  const { person, qr, replaced } = props.enrolled;
  return (
    <section class="secret" aria-labelledby="totp-enrolled" data-totp-enrolled={person}>
      <h2 id="totp-enrolled">Authenticator of {shown(person)} enrolled</h2>
      <p class="warning">
        {shown(person)}{" "}
        scans this now with their authenticator app: it is shown this once and never again{replaced
          ? "; the authenticator they had no longer works"
          : ""}.
      </p>
      <svg
        class="totp-qr"
        xmlns="http://www.w3.org/2000/svg"
        viewBox={qr.viewBox}
        shape-rendering="crispEdges"
        role="img"
        aria-label={`TOTP QR code of ${person}`}
      >
        <path class="qr-light" d={qr.light} />
        <path class="qr-dark" d={qr.dark} />
      </svg>
    </section>
  );
}
