/**
 * What every page of the console shares: the router a page file registers
 * its routes and its nav entry on ({@linkcode ConsoleRouter}), the
 * context types, the nav order, and the helpers that build links.
 *
 * A page file (`src/console/<page>.tsx`) exports `register<Page>(router)`,
 * which is listed in `pages.ts`, and there:
 *
 * - `router.nav({ path, label, order })` puts its entry in the nav (drawn
 *   only for principals the route table lets GET that path);
 * - `router.page("GET", path, handler)` registers a page: the handler runs
 *   only with a live session and a principal the table allows, and gets
 *   that principal (`p.name`, `p.roles`, `p.tenant`: null means
 *   installation-wide); it answers `router.render(c, p, { title, body })`;
 * - `router.page("POST", path, handler)` registers an action: its row in
 *   `CONSOLE_ROUTES` names its `AdminAction` (`acts("job.retry")`), the
 *   form that posts it is drawn only when `mayTake(p.roles, action)`, and
 *   the handler calls the door of `src/admin/` with `router.who(p, reason)`
 *   and answers a redirect (`c.redirect(path, 303)`); `readForm(c)` reads
 *   the form's fields, bounded.
 *
 * @module
 */

import type { Context } from "hono";
import { type Actor, placeholderMessage, placeholderReason } from "../admin/audit.ts";
import type { Clock } from "../clock.ts";
import type { SmtpSettings } from "../workqueue/channels.ts";
import type { Logger } from "../kernel/logger.ts";
import type { Store } from "../store/store.ts";
import type { Principal } from "../http/access.ts";
import type { ApiDefinitions } from "../http/api/app.ts";
import type { ApiReports } from "../http/api/reports.ts";
import type { ConsoleMethod } from "./access.ts";
import type { LiveFeed } from "./live.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";

/** What the server hands each request besides itself: where it comes from. */
export interface ConsoleBindings {
  /** The source address (no port), for the sign-in limit and the session's record. */
  remote: string;
}

/** Hono's environment of the console. */
export type ConsoleEnv = { Bindings: ConsoleBindings };
/** One request's context. */
export type Ctx = Context<ConsoleEnv>;

/** A page's or an action's work: the request and the signed-in person. */
export type PageHandler = (c: Ctx, principal: Principal) => Promise<Response>;

/** One entry of the nav. */
export interface NavEntry {
  /** The page's path, as in `CONSOLE_ROUTES`. */
  path: string;
  /** What the link says. */
  label: string;
  /** Where it goes among the others: one of {@linkcode NAV_ORDER}. */
  order: number;
}

/** The nav's order of the pages the issue names; a page takes its own. */
export const NAV_ORDER = {
  overview: 0,
  jobs: 10,
  queues: 20,
  schedules: 30,
  workflows: 40,
  pipelines: 50,
  reports: 60,
  work: 65,
  audit: 70,
  people: 80,
  tokens: 82,
  sessions: 84,
} as const;

/** What a page renders inside the layout. */
export interface PageContent {
  /** The page's title: the `<h1>` and the window's title. */
  title: string;
  /** The page's body (JSX). */
  body: unknown;
  /** The HTTP status. @default 200 */
  status?: 200 | 400 | 403 | 404 | 409;
}

/** What a page file registers its routes and nav entry with. */
export interface ConsoleRouter {
  /** Registers a route behind the session and the role table `CONSOLE_ROUTES`. */
  page(method: ConsoleMethod, path: string, handler: PageHandler): void;
  /** Adds a nav entry (shown to principals who may GET its path). */
  nav(entry: NavEntry): void;
  /** The page in the layout: nav, the person and their tenant, sign-out. */
  render(c: Ctx, principal: Principal, content: PageContent): Promise<Response>;
  store: Store;
  clock: Clock;
  logger: Logger;
  /**
   * The daemon's schedules file's workflows and pipelines as they are now
   * (`ConsoleOptions.definitions`); absent when the server has none.
   */
  definitions?: () => ApiDefinitions;
  /** The schedules file's reports, their storage and where links point; absent: none. */
  reports?: ApiReports;
  /** The schedules file's work queues as they are now (`ConsoleOptions.workQueues`). */
  workQueues: () => readonly WorkQueueDefinition[];
  /** The SMTP server a bulk's `confirm_by: { email: ... }` code goes through; absent: none. */
  smtp?: SmtpSettings;
  /** The actor of an action `principal` takes now, with its reason. */
  who(principal: Principal, reason: string | null): Actor;
  /** The console's one shared poller of what pages show live (`live.ts`). */
  live: LiveFeed;
}

/**
 * A path under the console with each segment percent-encoded:
 * `pathTo("/jobs", id)` -> `/jobs/42`, `pathTo("/queues", name, "pause")`.
 * Build every `href` and `action` from the console's own paths so: a value
 * never supplies a scheme (`javascript:`) or another host.
 */
export function pathTo(base: string, ...segments: (string | number)[]): string {
  return [base.replace(/\/$/, ""), ...segments.map((s) => encodeURIComponent(String(s)))].join(
    "/",
  );
}

/** The longest reason a form may give, as the API's (`ActionBody`). */
export const MAX_REASON = 1000;

/**
 * The `reason` of an action's form, trimmed: the text, null when it is
 * empty and not `required`, or why it is refused (longer than
 * {@linkcode MAX_REASON}, or a placeholder such as `TODO`, `n/a` or
 * nothing at all, as `placeholderReason` in `src/admin/audit.ts` says).
 * Every page's action reads its reason here.
 */
export function formReason(
  form: URLSearchParams | null,
  required: boolean,
): { reason: string | null } | { refused: string } {
  const text = (form?.get("reason") ?? "").trim();
  if (text === "" && !required) return { reason: null };
  if (text.length > MAX_REASON) {
    return { refused: `The reason is longer than ${MAX_REASON} characters.` };
  }
  const placeholder = placeholderReason(text);
  if (placeholder !== null) return { refused: placeholderMessage(text.slice(0, 100), placeholder) };
  return { reason: text };
}

/** A form's body is read up to this many bytes, by default. */
export const MAX_FORM_BYTES = 64 * 1024;

/**
 * The fields of the request's HTML form (`application/x-www-form-urlencoded`),
 * read up to `maxBytes`; null when the body is not such a form or is longer.
 * What an action's handler reads its `reason` (and the rest) from.
 */
export async function readForm(
  c: Ctx,
  maxBytes: number = MAX_FORM_BYTES,
): Promise<URLSearchParams | null> {
  if (Number(c.req.header("content-length") ?? "0") > maxBytes) return null;
  const type = c.req.header("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded")) return null;
  const text = await c.req.text();
  if (new TextEncoder().encode(text).length > maxBytes) return null;
  return new URLSearchParams(text);
}
