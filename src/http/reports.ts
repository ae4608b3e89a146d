/**
 * The daemon's download route, `GET /downloads/<token>`: no bearer, since
 * the signed token is the credential, bound to one run, the tenant it was
 * minted for, the actor and an expiry (`src/report/tokens.ts`). Forged or
 * tampered 403 (`forged`, `malformed`), expired 410, a run whose tenant is
 * not the token's 403 (`tenant`); every download audited.
 *
 * Nothing the caller says about itself is asked: the `X-Jobs-Tenant`
 * header and `?tenant=` query that used to narrow a download to a tenant
 * are not read (ignored if sent). They only ever refused a caller who
 * volunteered another tenant's name; the tenant that counts is the one
 * signed into the token by `POST /api/v1/reports/runs/<run>/links`, which
 * mints a link only for a run in its principal's tenant.
 *
 * The report routes that need a principal (list, request, progress, links)
 * are `/api/v1/reports...` (`api/reports.ts`); the old `/reports/...`
 * routes, which trusted the `actor`, `roles` and `tenant` a body named,
 * are gone (404).
 *
 * @module
 */
import { download } from "../admin/reports.ts";
import type { Clock } from "../clock.ts";
import type { CompiledReport } from "../report/definition.ts";
import type { OutputStorage } from "../report/storage.ts";
import type { Store } from "../store/store.ts";

/** What the report routes (`/api/v1/reports`, `/downloads/`) need from the daemon. */
export interface ReportRoutes {
  /** The schedules file's reports as they are now. */
  reports: () => readonly CompiledReport[];
  storage: (report: CompiledReport) => OutputStorage;
  /** Wakes this node's producers of `queues` (a run just queued need not wait for their poll). */
  wake?: (queues: string[]) => void;
  /**
   * The URL a download link is joined to (`https://jobs.example.com`); by
   * default the one the listener is bound to.
   */
  publicUrl?: () => Promise<string>;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  });

/**
 * A path segment percent-decoded, or null when its encoding is malformed
 * (`%`, `%zz`, a cut UTF-8 sequence): a 400 for the caller, never the
 * URIError that reached the listener's error handler as a 500 and an
 * `http.error` line per request.
 */
function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * The answer to `GET /downloads/<token>`, or null when `url` is not a
 * download's. Needs no bearer: the signed token is the credential.
 */
export async function downloadRoute(
  request: Request,
  url: URL,
  deps: { store: Store; clock: Clock; routes: ReportRoutes },
): Promise<Response | null> {
  const { routes } = deps;
  const match = /^\/downloads\/([^/]+)$/.exec(url.pathname);
  if (!match) return null;
  if (request.method !== "GET") return json(405, { error: "use GET" }, { allow: "GET" });
  const token = decoded(match[1]!);
  if (token === null) {
    return json(400, {
      error: "the path is not valid percent-encoded UTF-8",
      code: "path-invalid",
    });
  }
  const got = await download({
    store: deps.store,
    token,
    now: deps.clock.now(),
    reports: (id) => routes.reports().find((r) => r.id === id),
    storage: routes.storage,
  });
  if (!got.ok) return json(got.status, { error: got.reason });
  return new Response(got.body, {
    status: 200,
    headers: {
      "content-type": got.mediaType,
      "content-length": String(got.bytes),
      "content-disposition": `attachment; filename="${got.fileName}"`,
      "cache-control": "no-store",
    },
  });
}
