/**
 * The JSX factory of the console's `.tsx` files: Hono's (`hono/jsx`), which
 * renders to a string and escapes every value it is given (text and
 * attributes alike); a page never calls `raw()` on data.
 *
 * Why a factory module and not the `@jsxImportSource hono/jsx` pragma: the
 * project's `deno.json` sets `jsxImportSourceTypes` to `@types/react` for
 * the TUI (Ink), and that setting wins over a file's pragma when types are
 * checked, so a file on Hono's automatic runtime fails `deno check`. A file
 * on the classic runtime names its factory instead, and TypeScript takes
 * the JSX types from the factory's namespace ({@linkcode h.JSX}), Hono's.
 * Each console `.tsx` file begins with:
 *
 * ```tsx ignore
 * /** @jsxRuntime classic *\/
 * /** @jsx h *\/
 * /** @jsxFrag Fragment *\/
 * import { Fragment, h } from "./jsx.ts";
 * ```
 *
 * @module
 */

import { Fragment, jsx } from "hono/jsx";
import type { JSX as HonoJSX } from "hono/jsx/jsx-runtime";

export { Fragment };

/** Hono's `jsx`: what the classic runtime calls for each element. */
export function h(...args: Parameters<typeof jsx>): ReturnType<typeof jsx> {
  return jsx(...args);
}

/** The JSX types TypeScript checks the console's elements against: Hono's. */
export declare namespace h {
  namespace JSX {
    type Element = HonoJSX.Element;
    type ElementType = HonoJSX.ElementType;
    interface ElementChildrenAttribute extends HonoJSX.ElementChildrenAttribute {}
    interface IntrinsicElements extends HonoJSX.IntrinsicElements {}
    interface IntrinsicAttributes extends HonoJSX.IntrinsicAttributes {}
  }
}
