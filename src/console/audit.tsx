/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Audit page at `/audit`: who did what to which target and why,
 * newest first, filtered by actor, action and target (a GET form, so the
 * filter is in the URL and a link to it can be shared), paged by the id
 * of the last row shown (`?after=`). Read through `Store.auditPage`, as
 * `GET /api/v1/audit` does, with every filter and a tenant's person's
 * tenant in the statement: such a person sees only the rows about their
 * tenant's jobs.
 *
 * Stored text (actors, targets, reasons, details) is shown with its
 * control characters and bidi overrides as visible escapes
 * (`escapeControl`), so it can neither reorder nor hide what is read.
 *
 * Also the small helpers the admin pages share (`people.tsx`): instants
 * as ISO UTC with how long ago, and a link back to this page filtered.
 *
 * @module
 */

import { ACTIONS } from "../admin/actions.ts";
import type { AuditRow } from "../store/store.ts";
import { escapeControl as shown } from "../text/escape.ts";
import { type ConsoleRouter, NAV_ORDER } from "./common.ts";
import { Fragment, h } from "./jsx.ts";

/** Rows per page of the audit page. */
export const AUDIT_PAGE_SIZE = 50;
/** A filter's value is taken up to this many characters. */
const MAX_FILTER_LENGTH = 200;
/** Details are shown up to this many characters of their JSON. */
const MAX_DETAILS_LENGTH = 240;

/** The filter of the audit page, as its query says. */
export interface AuditFilter {
  actor?: string;
  action?: string;
  target?: string;
}

/** Registers the Audit page. */
export function registerAudit(router: ConsoleRouter): void {
  router.nav({ path: "/audit", label: "Audit", order: NAV_ORDER.audit });
  router.page("GET", "/audit", async (c, p) => {
    const filter = auditFilterOf(new URL(c.req.url).searchParams);
    const afterText = c.req.query("after") ?? "";
    const after = /^[1-9][0-9]{0,15}$/.test(afterText) ? Number(afterText) : undefined;
    const rows = await router.store.auditPage({
      ...filter,
      ...(after === undefined ? {} : { after }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
      limit: AUDIT_PAGE_SIZE + 1,
    });
    const page = rows.slice(0, AUDIT_PAGE_SIZE);
    const next = rows.length > AUDIT_PAGE_SIZE ? page.at(-1)!.id : null;
    const now = router.clock.now();
    const body = (
      <>
        <FilterForm filter={filter} />
        {p.tenant === null ? null : (
          <p class="note">
            You see the rows about your tenant's jobs only: the rest of the trail is shared by every
            tenant.
          </p>
        )}
        {page.length === 0
          ? <p class="note" data-empty>No audit row matches.</p>
          : <AuditTable rows={page} now={now} />}
        <p class="pager">
          {after === undefined ? null : <a href={auditHref(filter)}>Newest</a>}{" "}
          {next === null ? null : <a href={auditHref(filter, next)} rel="next">Older rows</a>}
        </p>
      </>
    );
    return await router.render(c, p, { title: "Audit", body });
  });
}

/** The filter a query names: each field trimmed, empty ones left out. */
export function auditFilterOf(query: URLSearchParams): AuditFilter {
  const filter: AuditFilter = {};
  for (const key of ["actor", "action", "target"] as const) {
    const value = (query.get(key) ?? "").trim().slice(0, MAX_FILTER_LENGTH);
    if (value !== "") filter[key] = value;
  }
  return filter;
}

/** The audit page's path with `filter` (and a page) in its query. */
export function auditHref(filter: AuditFilter, after?: number): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value) query.set(key, value);
  if (after !== undefined) query.set("after", String(after));
  const text = query.toString();
  return text === "" ? "/audit" : `/audit?${text}`;
}

function FilterForm(props: { filter: AuditFilter }) {
  const { filter } = props;
  return (
    <form method="get" action="/audit" class="filters" role="search" aria-label="Filter the audit">
      <label>
        Actor <input name="actor" value={filter.actor ?? ""} autocomplete="off" />
      </label>
      <label>
        Action{" "}
        <select name="action">
          <option value="">any</option>
          {Object.keys(ACTIONS).map((a) => (
            <option key={a} value={a} selected={a === filter.action}>{a}</option>
          ))}
        </select>
      </label>
      <label>
        Target{" "}
        <input
          name="target"
          value={filter.target ?? ""}
          placeholder="job:42, queue:mail, user:ada"
          autocomplete="off"
        />
      </label>
      <button type="submit">Filter</button>
      <a href="/audit">Clear</a>
    </form>
  );
}

function AuditTable(props: { rows: AuditRow[]; now: number }) {
  return (
    <div class="table-wrap">
      <table data-table="audit">
        <thead>
          <tr>
            <th scope="col">When (UTC)</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Reason</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={r.id} data-audit={r.id}>
              <td>
                <Instant ms={r.at} now={props.now} />
              </td>
              <td data-actor>
                <a href={auditHref({ actor: r.actor })}>{shown(r.actor)}</a>
              </td>
              <td data-action>
                <a href={auditHref({ action: r.action })}>{shown(r.action)}</a>
              </td>
              <td data-target>
                <a href={auditHref({ target: r.target })}>{shown(r.target)}</a>
              </td>
              <td data-reason class="wrap">{shown(r.reason ?? "")}</td>
              <td class="wrap">
                <code>{shown(detailsText(r.details))}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function detailsText(details: Record<string, unknown>): string {
  if (Object.keys(details).length === 0) return "";
  const text = JSON.stringify(details);
  return text.length > MAX_DETAILS_LENGTH ? `${text.slice(0, MAX_DETAILS_LENGTH)}…` : text;
}

/** An instant as ISO UTC to the second, with how long ago it was (or how long until). */
export function Instant(props: { ms: number | null; now: number; none?: string }) {
  if (props.ms === null) return <span class="note">{props.none ?? "never"}</span>;
  const text = new Date(props.ms).toISOString().replace(/\.\d{3}Z$/, "Z");
  return (
    <>
      <time datetime={text}>{text.replace("T", " ")}</time>{" "}
      <span class="note ago">{relative(props.ms, props.now)}</span>
    </>
  );
}

/** How long ago (`5 min ago`) or until (`in 3 d`) `ms` is from `now`. */
export function relative(ms: number, now: number): string {
  const d = now - ms;
  const a = Math.abs(d);
  const text = a < 60_000
    ? `${Math.round(a / 1000)} s`
    : a < 3_600_000
    ? `${Math.round(a / 60_000)} min`
    : a < 86_400_000
    ? `${Math.round(a / 3_600_000)} h`
    : `${Math.round(a / 86_400_000)} d`;
  return d >= 0 ? `${text} ago` : `in ${text}`;
}

/** The audit page filtered to one target: where an admin page links a row's history. */
export function auditOf(target: string): string {
  return auditHref({ target });
}
