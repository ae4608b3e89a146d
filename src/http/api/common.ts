/**
 * What every noun of `/api/v1` shares: the refusal ({@linkcode ApiError})
 * and its JSON body, the bounded and checked reading of bodies and queries,
 * the router a noun registers its routes on ({@linkcode ApiRouter}), and the
 * small schemas several nouns use.
 *
 * Every refusal is `{"error": {"code", "message"}}` with a status that says
 * its class (400, 401, 403, 404, 409, 413, 429). Bodies are read up to
 * {@linkcode MAX_BODY_BYTES} and JSON nested deeper than
 * {@linkcode MAX_JSON_DEPTH} is refused before a schema sees it.
 *
 * @module
 */

import type { Context } from "hono";
import { z } from "zod";
import type { Actor } from "../../admin/audit.ts";
import { placeholderMessage, placeholderReason } from "../../admin/audit.ts";
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../kernel/logger.ts";
import { redact } from "../../kernel/redact.ts";
import type { Store } from "../../store/store.ts";
import { nestedDeeper } from "../../text/nesting.ts";
import type { ApiMethod, Principal } from "../access.ts";

/** Request bodies are read up to this many bytes; a longer one is refused (413). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** JSON nested deeper than this (arrays and objects) is refused (400). */
export const MAX_JSON_DEPTH = 32;

/** What the server hands each request besides itself: where it comes from. */
export interface ApiEnv {
  /** The source address (no port), for the failure limit. */
  remote: string;
}

/** Hono's environment of `/api/v1`: the bindings and the principal of the request. */
export type Env = { Bindings: ApiEnv; Variables: { principal: Principal } };
/** One request's context. */
export type Ctx = Context<Env>;

/** A refusal: its status, stable code and one-sentence message become the JSON answer. */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The refusal body every route answers. */
export function refuse(c: Ctx, error: ApiError, headers: Record<string, string> = {}): Response {
  return c.json({ error: { code: error.code, message: error.message } }, error.status, headers);
}

/** A route's work: the request and the principal the credential named. */
export type Handler = (c: Ctx, principal: Principal) => Promise<Response>;

/**
 * What a noun's file registers its routes with: `on` puts a route behind the
 * credential and the role table (`access.ts`), and the store, clock and
 * logger the routes use.
 */
export interface ApiRouter {
  on(method: ApiMethod, path: string, handler: Handler): void;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The actor of an action `principal` takes now, with its reason. */
  who(principal: Principal, reason: string | null): Actor;
}

/** A name as queues, workers and tags spell them, bounded. */
export const TEXT = z.string().min(1).max(200);
/** An id in a query string or path: digits only. */
export const ID_TEXT = z.string().regex(/^\d{1,15}$/);
/** A page's size in a query: 1 to 500. */
export const LIMIT_TEXT = z.string().regex(/^([1-9]\d{0,2})$/);

/** The body of an action that must say why (`jobs retry --reason`). */
export const ActionBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail"),
});

/** Every refusal. */
export const ErrorAnswer = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});

/**
 * A page of `rows`, read with one more than `limit`: the first `limit`, and
 * the key of the last one when more follow (the next page's `after`), else
 * null.
 */
export function keysetPage<T, K>(
  rows: readonly T[],
  limit: number,
  key: (row: T) => K,
): { page: T[]; next: K | null } {
  const page = rows.slice(0, limit);
  return { page, next: rows.length > limit ? key(page.at(-1)!) : null };
}

/** The store's tenant filter for principal `p`: none for an installation-wide one. */
export function tenantScope(p: Principal): { tenant?: string } {
  return p.tenant === null ? {} : { tenant: p.tenant };
}

/** A query value of one of `values` or several, comma-separated (`state=failed,retryable`). */
export function oneOrSeveral(values: readonly string[], description: string) {
  const one = values.join("|");
  return z.string().regex(new RegExp(`^(${one})(,(${one}))*$`)).describe(description);
}

/** A page's size from a checked `limit` text: 50 unless given, at most 500. */
export function pageLimit(limit: string | undefined): number {
  return limit === undefined ? 50 : Math.min(Number(limit), 500);
}

/** `reason` as the audit trail takes it, or a 400 when it is a placeholder (`-`, `n/a`). */
export function checkedReason<R extends string | undefined>(reason: R): R {
  const placeholder = reason === undefined ? null : placeholderReason(reason);
  if (placeholder !== null) {
    throw new ApiError(400, "reason-invalid", placeholderMessage(reason!, placeholder));
  }
  return reason;
}

/**
 * Refuses a tenant's principal (403) a route over installation-wide data,
 * such as queues, which every tenant shares.
 */
export function installationWide(p: Principal): void {
  if (p.tenant !== null) {
    throw new ApiError(
      403,
      "installation-scope-required",
      `this route acts on data every tenant shares; a principal scoped to tenant ${
        JSON.stringify(p.tenant)
      } may not use it`,
    );
  }
}

/** A path parameter, or the empty string. */
export function param(c: Ctx, name: string): string {
  return c.req.param(name) ?? "";
}

/** `text` quoted for a message, cut at 200 characters and redacted. */
export function quoted(text: string): string {
  return redact(JSON.stringify(text.slice(0, 200)));
}

/**
 * The JSON body of `c`, read up to {@linkcode MAX_BODY_BYTES}, no deeper
 * than {@linkcode MAX_JSON_DEPTH}, and checked by `schema`; refused (400,
 * 413) naming the first field at fault.
 */
export async function readBody<S extends z.ZodType>(c: Ctx, schema: S): Promise<z.output<S>> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const body = c.req.raw.body;
  if (body) {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) throw tooLarge();
      chunks.push(chunk);
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError(400, "body-invalid", "the body is not JSON in UTF-8");
  }
  if (nestedDeeper(value, MAX_JSON_DEPTH)) {
    throw new ApiError(400, "body-too-deep", `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return checked(schema, value, "body");
}

/** The query of `c` checked by `schema`, or a 400 naming the field at fault. */
export function readQuery<S extends z.ZodType>(c: Ctx, schema: S): z.output<S> {
  return checked(schema, c.req.query(), "query");
}

/** `value` checked by `schema`, or a 400 naming the first field at fault in `where`. */
export function checked<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: string,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join(".") : null;
  const unknownKeys = issue.code === "unrecognized_keys" ? issue.keys.join(", ") : null;
  const message = unknownKeys !== null
    ? `${where}: unknown field ${JSON.stringify(unknownKeys)}`
    : `${where}${field === null ? "" : ` field ${JSON.stringify(field)}`}: ${issue.message}`;
  throw new ApiError(400, `${where}-invalid`, redact(message));
}

function tooLarge(): ApiError {
  return new ApiError(413, "body-too-large", `the body is over ${MAX_BODY_BYTES} bytes`);
}

/** What a route reads and answers: the schemas its OpenAPI entry names. */
export interface RouteSchemas {
  query?: z.ZodType;
  body?: z.ZodType;
  answer: z.ZodType;
  status: 200 | 201;
  /** The 202 answer of a route that may answer before its work ended, when it may. */
  accepted?: z.ZodType;
}
