/** @jsxRuntime classic */
/** @jsx h */
/**
 * Sign-in and sign-out: `GET /login` (the form, fields `name` and
 * `password`), `POST /login` (a session, its id in the cookie, then `/`),
 * `POST /logout` (the session ended, the cookie cleared, then `/login`).
 * These stand before a session (`PUBLIC_CONSOLE_ROUTES`). Failed sign-ins
 * are limited per name (`SignInLimiter`) and per source address
 * (`FailureLimiter`), 429 past either; a wrong name and a wrong password
 * get the same answer.
 *
 * @module
 */

import type { Hono, MiddlewareHandler } from "hono";
import type { FailureLimiter } from "../admin/failures.ts";
import { SignInLimited, type SignInLimiter } from "../admin/people.ts";
import { resolveSession, type SessionTimeouts, signIn, signOut } from "../admin/sessions.ts";
import type { Clock } from "../clock.ts";
import type { Store } from "../store/store.ts";
import { type ConsoleEnv, type Ctx, readForm } from "./common.ts";
import { Document } from "./layout.tsx";
import { h } from "./jsx.ts";
import { clearedCookie, sessionCookie, sessionIdOf } from "./security.ts";

/** A sign-in form's body is read up to this many bytes. */
export const MAX_SIGN_IN_BYTES = 8192;

/** What the sign-in routes use. */
export interface SignInDeps {
  /** The CSRF check (`app.ts`), run before each POST. */
  sameOrigin: MiddlewareHandler<ConsoleEnv>;
  store: Store;
  clock: Clock;
  timeouts: SessionTimeouts;
  names: SignInLimiter;
  addresses: FailureLimiter;
}

/** The sign-in page, with one message when there is one. */
function SignInPage(props: { message?: string; error?: boolean; name?: string }) {
  return (
    <Document title="Sign in">
      <main class="signin">
        <h1>Sign in to jobs</h1>
        {props.message === undefined
          ? null
          : (
            <p class={props.error ? "message error" : "message"} role="alert">
              {props.message}
            </p>
          )}
        <form method="post" action="/login">
          <label for="name">Name</label>
          <input
            id="name"
            name="name"
            autocomplete="username"
            required
            value={props.name ?? ""}
            data-autofocus
          />
          <label for="password">Password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="current-password"
            required
          />
          <button type="submit" class="primary">Sign in</button>
        </form>
      </main>
    </Document>
  );
}

async function page(
  c: Ctx,
  status: 200 | 400 | 413 | 429,
  props: Parameters<typeof SignInPage>[0],
  headers: Record<string, string> = {},
): Promise<Response> {
  const html = await <SignInPage {...props} />;
  return c.html("<!doctype html>" + String(html), status, headers);
}

/** Registers `/login` and `/logout` on `app`. */
export function registerSignIn(app: Hono<ConsoleEnv>, deps: SignInDeps): void {
  const { store, clock } = deps;

  app.get("/login", async (c) => {
    const id = sessionIdOf(c.req.raw);
    if (id !== null && await resolveSession(store, id, clock.now(), deps.timeouts)) {
      return c.redirect("/", 303);
    }
    const ended = c.req.query("ended") !== undefined;
    return await page(c, 200, ended ? { message: "Your session ended: sign in again." } : {});
  });

  app.post("/login", deps.sameOrigin, async (c) => {
    const remote = c.env?.remote ?? "unknown";
    const wait = deps.addresses.blockedFor(remote);
    if (wait > 0) {
      return await page(c, 429, {
        message: "Too many failed sign-ins from this address: try again later.",
        error: true,
      }, { "retry-after": String(Math.ceil(wait / 1000)) });
    }
    const form = await readForm(c, MAX_SIGN_IN_BYTES);
    if (form === null) {
      return await page(c, 400, { message: "The form could not be read.", error: true });
    }
    const name = (form.get("name") ?? "").trim().slice(0, 256);
    const password = form.get("password") ?? "";
    try {
      const signed = name === "" || password === "" ? null : await signIn(
        store,
        name,
        password,
        {
          now: clock.now(),
          limiter: deps.names,
          address: remote,
          userAgent: c.req.header("user-agent") ?? null,
          timeouts: deps.timeouts,
        },
      );
      if (signed === null) {
        deps.addresses.fail(remote);
        // 200: the form again with its message (a 401 would ask for an Authorization scheme).
        return await page(c, 200, {
          message: "The name or the password is wrong.",
          error: true,
          name,
        });
      }
      c.header("set-cookie", sessionCookie(signed.id));
      return c.redirect("/", 303);
    } catch (error) {
      if (!(error instanceof SignInLimited)) throw error;
      return await page(c, 429, {
        message: "Too many failed sign-ins for this name: try again later.",
        error: true,
      }, { "retry-after": String(Math.ceil(error.retryAfterMs / 1000)) });
    }
  });

  app.post("/logout", deps.sameOrigin, async (c) => {
    const id = sessionIdOf(c.req.raw);
    if (id !== null) await signOut(store, id, clock.now());
    c.header("set-cookie", clearedCookie());
    return c.redirect("/login", 303);
  });
}
