/**
 * What the Workflows, Pipelines and Reports pages share: reading a page's
 * query (a filter's text, a keyset cursor) with control characters
 * refused, instants as ISO UTC and relative to the injected clock, the
 * reason an action's form carries, and the fixed sentences a redirect's
 * `?done=` names (a query never supplies the text a page shows).
 *
 * @module
 */

import type { Ctx } from "./common.ts";

/** A query value that cannot be a filter's: refused with a 400 page by the caller. */
export class QueryRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "QueryRefused";
  }
}

// deno-lint-ignore no-control-regex -- the control characters are what this finds
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The query's `name`, trimmed; null when absent or empty. Refuses a control character. */
export function queryText(c: Ctx, name: string): string | null {
  const value = (c.req.query(name) ?? "").trim();
  if (value === "") return null;
  if (CONTROL.test(value) || value.length > 1000) {
    throw new QueryRefused(`the filter ${name} holds a control character or is too long`);
  }
  return value;
}

/** The query's `name` as a positive id (a keyset cursor); null when absent. */
export function queryId(c: Ctx, name: string): number | null {
  const text = queryText(c, name);
  if (text === null) return null;
  if (!/^\d{1,15}$/.test(text) || Number(text) < 1) {
    throw new QueryRefused(`${name} must be a positive whole number`);
  }
  return Number(text);
}

/** A path parameter as a positive id, or null when it is not one (found as nothing). */
export function pathId(c: Ctx, name: string): number | null {
  const text = c.req.param(name) ?? "";
  return /^\d{1,15}$/.test(text) && Number(text) > 0 ? Number(text) : null;
}

/** `ms` as ISO UTC to the second, or `-`. */
export function isoUtc(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** How long ago (or from now) `ms` is, against `now`: `3 min ago`, `in 2 h`. */
export function relative(ms: number, now: number): string {
  const delta = now - ms;
  const span = duration(Math.abs(delta));
  return delta >= 0 ? `${span} ago` : `in ${span}`;
}

/** A span in the largest unit that fits: `45 s`, `12 min`, `3 h`, `2 d`. */
export function duration(ms: number): string {
  if (ms < 1000) return "<1 s";
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

/** A count with thousands separators. */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** The sentence of a `?done=` a page's redirect names, or null for one it does not know. */
export function doneMessage(
  c: Ctx,
  messages: Readonly<Record<string, string>>,
): string | null {
  const done = c.req.query("done");
  return done !== undefined && Object.hasOwn(messages, done) ? messages[done]! : null;
}
