/**
 * The daemon's public base URL: where people reach the daemon's
 * `/downloads/`, so that a download link is whole
 * (`https://jobs.example.com/downloads/<token>`) and not a path to join by
 * hand.
 *
 * The daemon stores it as a setting (`daemon.public_url`) when it starts:
 * the URL `--public-url` (or `JOBS_PUBLIC_URL`) gives, an explicit one;
 * else the URL it listens on, a derived one ({@linkcode derivedPublicUrl}).
 * A derived URL never replaces an explicit one: behind a proxy the listen
 * address is not where people come from, and a daemon restarted without
 * the flag must not undo the operator's setting. A later explicit URL
 * replaces any. Every change is audited (`setting.set` on
 * `setting:daemon.public_url`) in the transaction that writes it; a value
 * stored again unchanged writes nothing.
 *
 * `jobs report url` and the daemon's `POST /api/v1/reports/runs/<run>/links` join
 * their tokens to it ({@linkcode linkBase}); nothing stored is an error
 * saying how to fix it, never a relative link.
 *
 * @module
 */

import type { Store, StoreTx } from "../store/store.ts";
import { audit } from "./audit.ts";
import { settingTarget } from "./settings.ts";

/** The setting that holds the public base URL (a {@linkcode StoredPublicUrl}). */
export const PUBLIC_URL_KEY = "daemon.public_url";

/** Given by an operator (`--public-url`, `JOBS_PUBLIC_URL`), or derived from the listen address. */
export type PublicUrlSource = "explicit" | "derived";

/** The public base URL as stored, with where it came from. */
export interface StoredPublicUrl {
  /** `https://host[:port][/path]`, no trailing slash, no query, no fragment. */
  url: string;
  source: PublicUrlSource;
  /** How it was given: `--public-url`, `JOBS_PUBLIC_URL`, or `listen 127.0.0.1:9464`. */
  from: string;
  /** The node that stored it. */
  node: string;
  /** When it was stored, UTC epoch ms. */
  at: number;
}

/** A text that is no public base URL; the message is the end of a sentence naming the value. */
export class PublicUrlInvalid extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PublicUrlInvalid";
  }
}

/**
 * `text` as a public base URL, canonical: the scheme and host lower case,
 * a default port dropped, trailing slashes cut (`https://Jobs.Example.com:443/x/`
 * is `https://jobs.example.com/x`). A path is kept: a proxy may serve the
 * daemon under one (`https://example.com/jobs/downloads/...`).
 *
 * @throws {PublicUrlInvalid} unless http or https with a host, and without
 * a user or password (a link is handed out), a query or a fragment (a
 * token is joined after the path)
 */
export function parsePublicUrl(text: string): string {
  const example = "such as https://jobs.example.com";
  if (!/^https?:\/\/[^/?#\s]/i.test(text)) {
    throw new PublicUrlInvalid(`is not an http:// or https:// URL ${example}`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new PublicUrlInvalid(`is not a URL ${example}`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new PublicUrlInvalid("holds a user or password: links are handed out, give none");
  }
  if (url.search !== "" || text.includes("?")) {
    throw new PublicUrlInvalid("has a query (?...): a link's token is joined after the path");
  }
  if (url.hash !== "" || text.includes("#")) {
    throw new PublicUrlInvalid("has a fragment (#...): a link's token is joined after the path");
  }
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

/** Addresses that accept every interface: no one reaches the daemon by these. */
const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"]);

/** Whether a listener bound to `hostname` takes every interface (`0.0.0.0`, `::`). */
export function isWildcard(hostname: string): boolean {
  return WILDCARDS.has(hostname);
}

/**
 * The URL a daemon bound to `addr` is reached at: `http://127.0.0.1:9464`
 * for a loopback or a named address. A wildcard bind (`0.0.0.0`, `::`)
 * takes this host's name (`http://build-7:9464`), which other machines can
 * use where the name resolves; `--public-url` says otherwise.
 */
export function derivedPublicUrl(
  addr: { hostname: string; port: number },
  hostname: string,
): string {
  const host = isWildcard(addr.hostname) ? hostname : addr.hostname;
  const shown = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return parsePublicUrl(`http://${shown}:${addr.port}`);
}

/** The stored public base URL, or null when none is stored (or what is stored is not one). */
export async function readPublicUrl(
  store: Pick<StoreTx, "settingGet">,
): Promise<StoredPublicUrl | null> {
  const value = await store.settingGet({ key: PUBLIC_URL_KEY });
  if (typeof value !== "object" || value === null) return null;
  const { url, source, from, node, at } = value as Record<string, unknown>;
  if (typeof url !== "string" || (source !== "explicit" && source !== "derived")) return null;
  try {
    parsePublicUrl(url);
  } catch {
    return null;
  }
  return {
    url,
    source,
    from: typeof from === "string" ? from : "",
    node: typeof node === "string" ? node : "",
    at: typeof at === "number" ? at : 0,
  };
}

/** What {@linkcode recordPublicUrl} did. */
export interface RecordedPublicUrl {
  /**
   * `stored`: written and audited; `unchanged`: the same URL of the same
   * source was stored already (nothing written); `kept`: a derived URL was
   * not stored because an explicit one stands.
   */
  outcome: "stored" | "unchanged" | "kept";
  /** The public base URL stored now. */
  current: StoredPublicUrl;
  /** What was stored before, or null. */
  was: StoredPublicUrl | null;
}

/**
 * Stores `url` as the public base URL unless it is derived and an explicit
 * one is stored, and audits the change as `setting.set` on
 * `setting:daemon.public_url` by `node`, in one transaction. `url` must be
 * canonical ({@linkcode parsePublicUrl}).
 */
export async function recordPublicUrl(
  store: Store,
  params: { url: string; source: PublicUrlSource; from: string; node: string; now: number },
): Promise<RecordedPublicUrl> {
  const next: StoredPublicUrl = {
    url: params.url,
    source: params.source,
    from: params.from,
    node: params.node,
    at: params.now,
  };
  return await store.transaction(async (tx) => {
    const was = await readPublicUrl(tx);
    if (was !== null && was.source === "explicit" && next.source === "derived") {
      return { outcome: "kept", current: was, was };
    }
    if (was !== null && was.url === next.url && was.source === next.source) {
      return { outcome: "unchanged", current: was, was };
    }
    await tx.settingSet({ key: PUBLIC_URL_KEY, value: next, now: params.now });
    const reason = next.source === "explicit"
      ? `jobs daemon ${next.from}`
      : `jobs daemon: the address it listens on (${next.from})`;
    await audit(
      tx,
      { actor: params.node, reason, now: params.now },
      "setting.set",
      settingTarget(PUBLIC_URL_KEY),
      {
        old: was?.url ?? null,
        oldSource: was?.source ?? null,
        new: next.url,
        newSource: next.source,
      },
    );
    return { outcome: "stored", current: next, was };
  });
}

/** Raised when a download link needs a base URL and none is known. */
export class NoPublicUrl extends Error {
  constructor() {
    super(
      "no public URL known: start the daemon with --public-url https://... " +
        "or pass --base http://host:port",
    );
    this.name = "NoPublicUrl";
  }
}

/**
 * The base a daemon's download link is joined to: `given` (`--base`) when
 * there is one, else the stored explicit URL, else `own` (the URL of the
 * daemon answering, when one is), else the stored derived one.
 *
 * @throws {NoPublicUrl} when none of them is there
 */
export async function linkBase(
  store: Pick<StoreTx, "settingGet">,
  options: { given?: string; own?: string } = {},
): Promise<{ url: string; stored: StoredPublicUrl | null }> {
  if (options.given !== undefined) return { url: options.given, stored: null };
  const stored = await readPublicUrl(store);
  if (stored !== null && stored.source === "explicit") return { url: stored.url, stored };
  if (options.own !== undefined) return { url: options.own, stored: null };
  if (stored !== null) return { url: stored.url, stored };
  throw new NoPublicUrl();
}
