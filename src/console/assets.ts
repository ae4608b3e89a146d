/**
 * The console's static assets: each embedded in the program as a module
 * exporting its text (`assets/*.ts`), so `deno compile` carries it and
 * nothing is fetched from anywhere else; each served at a name holding the
 * first 16 hex digits of its SHA-256 (`/assets/app.<hash>.css`) with a
 * year-long immutable cache, so a new version is a new name.
 *
 * To add one (a page's own script, a vendored library): write
 * `assets/<name>.ts` exporting its text, add it to {@linkcode ASSET_SOURCES},
 * and link it with {@linkcode assetPath} (the layout links `app.css` and
 * `app.js` on every page).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { APP_CSS } from "./assets/app_css.ts";
import { APP_JS } from "./assets/app_js.ts";
import { FAVICON_SVG } from "./assets/favicon_svg.ts";
import { LIVE_JS } from "./assets/live_js.ts";
import { JOBS_JS } from "./assets/jobs_js.ts";

/** Every asset by its plain name: its text and content type. */
export const ASSET_SOURCES = {
  "app.css": { text: APP_CSS, type: "text/css; charset=utf-8" },
  "app.js": { text: APP_JS, type: "text/javascript; charset=utf-8" },
  "favicon.svg": { text: FAVICON_SVG, type: "image/svg+xml" },
  "live.js": { text: LIVE_JS, type: "text/javascript; charset=utf-8" },
  "jobs.js": { text: JOBS_JS, type: "text/javascript; charset=utf-8" },
} as const;

/** The plain name of an asset. */
export type AssetName = keyof typeof ASSET_SOURCES;

/** How a served asset is cached: a year, never revalidated (its name changes with its text). */
export const ASSET_CACHE = "public, max-age=31536000, immutable";

interface Served {
  body: Uint8Array;
  type: string;
}

const BY_PATH = new Map<string, Served>();
const PATHS = new Map<AssetName, string>();
for (
  const [name, source] of Object.entries(ASSET_SOURCES) as [AssetName, Served & { text: string }][]
) {
  const body = new TextEncoder().encode(source.text);
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 16);
  const dot = name.lastIndexOf(".");
  const path = `/assets/${name.slice(0, dot)}.${hash}${name.slice(dot)}`;
  PATHS.set(name, path);
  BY_PATH.set(path, { body, type: source.type });
}

/** The hashed path an asset is served at: `/assets/app.<hash>.css`. */
export function assetPath(name: AssetName): string {
  return PATHS.get(name)!;
}

/** The answer for `path` when it names an asset, else null. */
export function assetResponse(path: string): Response | null {
  const served = BY_PATH.get(path);
  if (!served) return null;
  return new Response(served.body.slice(), {
    status: 200,
    headers: { "content-type": served.type, "cache-control": ASSET_CACHE },
  });
}
