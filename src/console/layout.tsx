/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The layout every page renders in: the style sheet and script (hashed,
 * embedded), a skip link, the nav of the pages that exist (only those the
 * person may open), who is signed in and their tenant, and the sign-out
 * button; and the sign-in page's frame. Every value goes through the JSX
 * renderer, which escapes it.
 *
 * @module
 */

import type { Principal } from "../http/access.ts";
import { assetPath } from "./assets.ts";
import type { Ctx, NavEntry, PageContent } from "./common.ts";
import { Fragment, h } from "./jsx.ts";

/** The document around `children`: head, assets, no inline script or style. */
export function Document(props: { title: string; children?: unknown }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{props.title} · jobs</title>
        <link rel="icon" href={assetPath("favicon.svg")} type="image/svg+xml" />
        <link rel="stylesheet" href={assetPath("app.css")} />
        <script src={assetPath("app.js")} defer></script>
        <script src={assetPath("live.js")} defer></script>
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/** A page of the console: the header (nav, person, sign-out) and the page's own body. */
export function Layout(props: {
  title: string;
  current: string;
  principal: Principal;
  nav: readonly NavEntry[];
  children?: unknown;
}) {
  const { principal } = props;
  return (
    <Document title={props.title}>
      <a class="skip" href="#main">Skip to the page</a>
      <header class="top">
        <a class="brand" href="/">jobs</a>
        <nav class="pages" aria-label="Pages">
          <ul>
            {props.nav.map((entry) => (
              <li key={entry.path}>
                <a
                  href={entry.path}
                  aria-current={entry.path === props.current ? "page" : undefined}
                >
                  {entry.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>
            Signed in as <strong data-person>{principal.name}</strong>{" "}
            {principal.tenant === null ? <span class="badge">every tenant</span> : (
              <>
                tenant <span class="badge" data-tenant>{principal.tenant}</span>
              </>
            )}
          </span>
          <form method="post" action="/logout">
            <button type="submit" class="link">Sign out</button>
          </form>
        </div>
      </header>
      <main id="main">
        <h1>{props.title}</h1>
        {props.children}
      </main>
    </Document>
  );
}

/** The answer of a page: `content` in the {@linkcode Layout}, as HTML. */
export async function renderPage(
  c: Ctx,
  content: PageContent & { principal: Principal; nav: readonly NavEntry[] },
): Promise<Response> {
  const html = await (
    <Layout
      title={content.title}
      current={c.req.path}
      principal={content.principal}
      nav={content.nav}
    >
      {content.body}
    </Layout>
  );
  return c.html("<!doctype html>" + String(html), content.status ?? 200);
}
