/** @jsxRuntime classic */
/** @jsx h */
/**
 * The page of a refusal or a failure (400, 403, 404, 409, 500): one sentence and a
 * way back, never a stack or a value the server did not choose.
 *
 * @module
 */

import type { Context } from "hono";
import { Document } from "./layout.tsx";
import { h } from "./jsx.ts";

/** An answer of `status` saying `message`. */
export async function errorPage(
  c: Context,
  status: 400 | 403 | 404 | 409 | 500,
  message: string,
): Promise<Response> {
  const title = status === 403
    ? "Refused"
    : status === 404
    ? "Not found"
    : status === 400
    ? "Bad request"
    : status === 409
    ? "Conflict"
    : "Server error";
  const html = await (
    <Document title={title}>
      <main>
        <h1>{title}</h1>
        <p class="message error" role="alert">{message}</p>
        <p>
          <a href="/">Back to the overview</a>
        </p>
      </main>
    </Document>
  );
  return c.html("<!doctype html>" + String(html), status);
}
