/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Jobs page at `/jobs`: the jobs of the principal's scope, newest
 * first, filtered by state, queue, worker, tag, schedule, the tenant (for
 * installation-wide people only: a tenant's person is always scoped to
 * its tenant, in the store's statement) and a search text, every filter
 * kept in the URL (a GET form); keyset pages (`?after=`), the count of the
 * matching jobs capped at {@linkcode JOBS_COUNT_CAP} (`100,000+`).
 *
 * The search is the store's one text filter (`JobFilter.search`, as `jobs
 * ls --search` and `GET /api/v1/jobs?search=`): a case-insensitive
 * substring of the worker, the args (redacted), a tag, the occurrence or a
 * stored error. The store has no separate args-only or error-only filter,
 * so the page has one field for both. A search reads the newest
 * {@linkcode JOBS_SEARCH_WINDOW} jobs (as the TUI's list), and says so.
 *
 * An operator selects jobs and retries, cancels or discards them with a
 * reason: one POST (`/jobs/retry`, `/jobs/cancel`, `/jobs/discard`) naming
 * the ids, each read again in the principal's scope (`jobInScope`) and
 * acted on through `applyJobAction`, which audits each change; the page
 * then says how many changed and how many were skipped. Everything the
 * filter matches is retried, cancelled or discarded in the background from
 * the links `Retry all N matching…` (`bulk.tsx`).
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import {
  applyJobAction,
  type JobAction,
  jobInScope,
  jobsMatching,
  jobsView,
  searchWindowAbove,
} from "../admin/jobs.ts";
import type { Principal } from "../http/access.ts";
import { keysetPage, tenantScope } from "../http/api/common.ts";
import { type Job, JOB_STATES, type JobState } from "../kernel/types.ts";
import type { JobFilter, JobMatch } from "../store/store.ts";
import { escapeControl } from "../text/escape.ts";
import { errorSummary } from "../text/stored_error.ts";
import { assetPath } from "./assets.ts";
import { LIVE_COUNT_CAP } from "./live.ts";
import { type ConsoleRouter, type Ctx, formReason, NAV_ORDER, pathTo, readForm } from "./common.ts";
import { errorPage } from "./error_page.tsx";
import { Fragment, h } from "./jsx.ts";

/** The most matching jobs the page counts; past it, `100,000+` (as the overview's counts). */
export const JOBS_COUNT_CAP = 100_000;
/** Jobs per page. */
export const JOBS_PAGE_SIZE = 50;
/** The most jobs one bulk action names. */
export const BULK_MAX = 500;
/**
 * How many of the newest jobs (by id) a search reads, as the TUI's list
 * (`SEARCH_WINDOW`): a substring search can use no index.
 */
export const JOBS_SEARCH_WINDOW = 100_000;
/** The longest filter value the page takes. */
const FILTER_MAX = 200;
/** How many characters of args and errors a row shows. */
const CELL_CHARS = 80;

/** The bulk and single actions, as their route's last segment. */
export const JOB_ACTIONS: readonly JobAction[] = ["retry", "cancel", "discard"];

/** The text filters of the page, by their URL name. */
const TEXT_FILTERS = ["queue", "worker", "tag", "schedule", "tenant", "search"] as const;

/** The page's filters as read from the URL. */
export interface JobsQuery {
  state?: JobState;
  queue?: string;
  worker?: string;
  tag?: string;
  schedule?: string;
  tenant?: string;
  search?: string;
}

/** Registers the Jobs page and its bulk actions. */
export function registerJobs(router: ConsoleRouter): void {
  router.nav({ path: "/jobs", label: "Jobs", order: NAV_ORDER.jobs });
  router.page("GET", "/jobs", async (c, p) => {
    const read = readQuery(new URL(c.req.url).searchParams, p);
    if (typeof read === "string") return await errorPage(c, 400, read);
    return await router.render(c, p, { title: "Jobs", body: await listing(router, c, p, read) });
  });
  for (const action of JOB_ACTIONS) {
    router.page("POST", `/jobs/${action}`, async (c, p) => await bulk(router, c, p, action));
  }
}

/**
 * The filters and the page's start from the URL, or why they cannot be read.
 * Empty values (an untouched field of the GET form) are no filter; `tenant`
 * is read only for an installation-wide principal.
 */
export function readQuery(
  params: URLSearchParams,
  p: Principal,
): { query: JobsQuery; after: number | null } | string {
  const query: JobsQuery = {};
  const state = params.get("state") ?? "";
  if (state !== "") {
    if (!JOB_STATES.includes(state as JobState)) {
      return `"state" must be one of ${JOB_STATES.join(", ")}; ${
        JSON.stringify(escapeControl(state.slice(0, 40)))
      } is not`;
    }
    query.state = state as JobState;
  }
  for (const name of TEXT_FILTERS) {
    const value = params.get(name) ?? "";
    if (value === "" || (name === "tenant" && p.tenant !== null)) continue;
    if (value.length > FILTER_MAX) return `"${name}" is longer than ${FILTER_MAX} characters`;
    query[name] = value;
  }
  const after = params.get("after") ?? "";
  if (after !== "" && !/^\d{1,15}$/.test(after)) return `"after" must be a job id`;
  return { query, after: after === "" ? null : Number(after) };
}

/** The store's filter of `query` in `p`'s scope: a tenant's person never leaves its tenant. */
export function jobMatch(query: JobsQuery, p: Principal): JobMatch {
  const { schedule, tenant, ...rest } = query;
  return {
    ...rest,
    ...(schedule === undefined ? {} : { scheduleId: schedule }),
    ...(tenant === undefined ? {} : { tenant }),
    ...tenantScope(p),
  };
}

/**
 * The jobs of `p`'s scope by state, as the live line shows them first: the
 * installation's from the counts the store keeps (one cheap read), a
 * tenant's null (counting them is the live feed's work, shared by every
 * viewer of the tenant: the line fills from its first snapshot).
 */
async function stateTotals(
  router: ConsoleRouter,
  p: Principal,
): Promise<Record<JobState, number> | null> {
  if (p.tenant !== null) return null;
  const totals = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  for (const row of await router.store.jobsCount({})) totals[row.state] += row.count;
  return totals;
}

/**
 * The scope's jobs by state, each a link to the list of that state, kept
 * current by the tab's live stream (`data-live`, as the overview's counts).
 */
function StateTotals(props: { totals: Record<JobState, number> | null }) {
  return (
    <p class="note states" data-states aria-label="Jobs by state, kept current">
      Now: {JOB_STATES.map((s, k) => (
        <>
          {k === 0 ? "" : " · "}
          <a key={s} href={`/jobs?state=${s}`}>
            {s}{" "}
            <span
              data-live={JSON.stringify(["jobs", s])}
              {...(props.totals === null ? { "data-live-cap": String(LIVE_COUNT_CAP) } : {})}
            >
              {props.totals === null ? "…" : props.totals[s].toLocaleString("en-US")}
            </span>
          </a>
        </>
      ))}
    </p>
  );
}

/** `query` as URL parameters (the filters only). */
export function queryParams(query: JobsQuery): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) params.set(name, value);
  }
  return params;
}

/** `/jobs` with `query` (and more parameters). */
function jobsHref(query: JobsQuery, more: Record<string, string> = {}): string {
  const params = queryParams(query);
  for (const [name, value] of Object.entries(more)) params.set(name, value);
  const text = params.toString();
  return text === "" ? "/jobs" : `/jobs?${text}`;
}

/** The confirmation of `action` over every job `query` matches (`bulk.tsx`). */
function bulkHref(query: JobsQuery, action: JobAction): string {
  const params = queryParams(query);
  params.set("action", action);
  return `/jobs/bulk?${params}`;
}

async function listing(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  read: { query: JobsQuery; after: number | null },
) {
  const { query, after } = read;
  const above = query.search === undefined
    ? null
    : await searchWindowAbove(router.store, JOBS_SEARCH_WINDOW);
  const match: JobMatch = { ...jobMatch(query, p), ...(above === null ? {} : { above }) };
  const filter: JobFilter = {
    ...match,
    ...(after === null ? {} : { after }),
    limit: JOBS_PAGE_SIZE + 1,
  };
  // The page and the count read at once: on PostgreSQL they take two of the
  // pool's connections, so a search costs the slower of the two scans, not both.
  const [rows, total, states] = await Promise.all([
    jobsView(router.store, filter),
    jobsMatching(router.store, match, { atMost: JOBS_COUNT_CAP + 1 }),
    stateTotals(router, p),
  ]);
  const { page, next } = keysetPage(rows, JOBS_PAGE_SIZE, (job) => job.id);
  const acts = JOB_ACTIONS.filter((a) => mayTake(p.roles, `job.${a}`));
  const done = doneNote(new URL(c.req.url).searchParams);
  return (
    <>
      <script src={assetPath("jobs.js")} defer></script>
      {done}
      <StateTotals totals={states} />
      <FilterForm query={query} p={p} />
      <p class="note" data-count>
        {total > JOBS_COUNT_CAP ? "100,000+" : total.toLocaleString("en-US")}{" "}
        {total === 1 ? "job matches" : "jobs match"}
        {above === null
          ? ""
          : ` among the newest ${
            JOBS_SEARCH_WINDOW.toLocaleString("en-US")
          } (a search reads no further; jobs ls --search reads them all)`}
        {after === null ? "" : `; this page starts after job ${after}`}.{" "}
        {after === null && Object.keys(query).length === 0 ? "" : <a href="/jobs">Clear</a>}
      </p>
      {total === 0 || !mayTake(p.roles, "bulk.start") ? "" : (
        <p class="bulk-all" data-bulk-all>
          {JOB_ACTIONS.map((a) => (
            <a key={a} href={bulkHref(query, a)} data-bulk-all-action={a}>
              {capital(a)} all {total > JOBS_COUNT_CAP ? "100,000+" : total.toLocaleString("en-US")}
              {" "}
              matching…
            </a>
          ))}
        </p>
      )}
      {page.length === 0
        ? <p class="note">No job matches.</p>
        : acts.length === 0
        ? <JobsTable jobs={page} select={false} tenants={p.tenant === null} />
        : (
          <form method="post" action={`/jobs/${acts[0]}`} class="bulk" id="bulk">
            <div class="bulk-actions">
              <input type="hidden" name="back" value={queryParams(query).toString()} />
              <label for="bulk-reason">Reason</label>
              <input
                id="bulk-reason"
                name="reason"
                required
                maxlength={1000}
                placeholder="why, for the audit trail"
              />
              {acts.map((a) => (
                <button key={a} type="submit" formaction={`/jobs/${a}`} data-bulk={a}>
                  {capital(a)} selected
                </button>
              ))}
            </div>
            <JobsTable jobs={page} select tenants={p.tenant === null} />
          </form>
        )}
      {next === null ? "" : (
        <p>
          <a href={jobsHref(query, { after: String(next) })} rel="next" data-next>
            Next page
          </a>
        </p>
      )}
    </>
  );
}

function FilterForm(props: { query: JobsQuery; p: Principal }) {
  const { query, p } = props;
  const text = (name: (typeof TEXT_FILTERS)[number], label: string, extra = {}) => (
    <label>
      {label}
      <input name={name} value={query[name] ?? ""} maxlength={FILTER_MAX} {...extra} />
    </label>
  );
  return (
    <form method="get" action="/jobs" class="filters" role="search" aria-label="Filter jobs">
      <label>
        State
        <select name="state">
          <option value="">any</option>
          {JOB_STATES.map((s) => <option key={s} value={s} selected={query.state === s}>{s}
          </option>)}
        </select>
      </label>
      {text("queue", "Queue")}
      {text("worker", "Worker")}
      {text("tag", "Tag")}
      {text("schedule", "Schedule")}
      {p.tenant === null ? text("tenant", "Tenant") : ""}
      {text("search", "Search args, errors", {
        type: "search",
        "data-filter": "",
        title: "A substring of the args, an error, the worker, a tag or the occurrence (press /)",
      })}
      <button type="submit" class="primary">Filter</button>
    </form>
  );
}

function JobsTable(props: { jobs: Job[]; select: boolean; tenants: boolean }) {
  return (
    <div class="table-wrap">
      <table data-table="jobs" class="jobs">
        <thead>
          <tr>
            {props.select
              ? (
                <th scope="col">
                  <span class="sr">Select</span>
                </th>
              )
              : ""}
            <th scope="col" class="num">Job</th>
            <th scope="col">State</th>
            <th scope="col">Queue</th>
            <th scope="col">Worker</th>
            {props.tenants ? <th scope="col">Tenant</th> : ""}
            <th scope="col" class="num">Attempt</th>
            <th scope="col">Tags</th>
            <th scope="col">Args</th>
            <th scope="col">Last error</th>
            <th scope="col">Inserted (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {props.jobs.map((job) => {
            const error = job.errors.at(-1)?.error;
            return (
              <tr key={job.id} data-row={job.id}>
                {props.select
                  ? (
                    <td>
                      <input
                        type="checkbox"
                        name="id"
                        value={String(job.id)}
                        aria-label={`Select job ${job.id}`}
                      />
                    </td>
                  )
                  : ""}
                <td class="num">
                  <a href={pathTo("/jobs", job.id)} data-job-link>{job.id}</a>
                </td>
                <td>
                  <StateBadge state={job.state} />
                </td>
                <td>{shown(job.queue)}</td>
                <td>{shown(job.worker)}</td>
                {props.tenants ? <td>{job.tenant === null ? "-" : shown(job.tenant)}</td> : ""}
                <td class="num">{job.attempt}/{job.maxAttempts}</td>
                <td>{job.tags.map(shown).join(", ") || "-"}</td>
                <td class="clip">
                  <code>{cut(JSON.stringify(job.args) ?? "null")}</code>
                </td>
                <td class="clip">{error === undefined ? "-" : cut(errorSummary(error))}</td>
                <td>{isoUtc(job.insertedAt)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** A job's state as a badge coloured by how it went. */
export function StateBadge(props: { state: JobState }) {
  const tone = props.state === "completed"
    ? " good"
    : props.state === "discarded" || props.state === "cancelled"
    ? " bad"
    : props.state === "retryable"
    ? " warn"
    : "";
  return <span class={`badge${tone}`} data-state={props.state}>{props.state}</span>;
}

/**
 * A bulk action: the selected ids, each read again in the principal's scope
 * (another tenant's or a missing job is skipped as not found), then
 * `applyJobAction` with the person as the actor and the reason; back to the
 * list with its filters and how many changed and were skipped.
 */
async function bulk(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  action: JobAction,
): Promise<Response> {
  const form = await readForm(c);
  if (form === null) return await errorPage(c, 400, "The request is not a form this page sent.");
  const read = formReason(form, true);
  if ("refused" in read) return await errorPage(c, 400, read.refused);
  const reason = read.reason!;
  const ids = [...new Set(form.getAll("id"))];
  if (ids.length === 0) return await errorPage(c, 400, `Select the jobs to ${action} first.`);
  if (ids.length > BULK_MAX) {
    return await errorPage(c, 400, `At most ${BULK_MAX} jobs at once; ${ids.length} were sent.`);
  }
  const jobs: Job[] = [];
  let missing = 0;
  for (const id of ids) {
    const job = /^\d{1,15}$/.test(id) ? await jobInScope(router.store, Number(id), p.tenant) : null;
    if (job) jobs.push(job);
    else missing++;
  }
  const { changed, skipped } = await applyJobAction(
    router.store,
    action,
    jobs,
    router.who(p, reason),
  );
  const back = readQuery(new URLSearchParams(form.get("back") ?? ""), p);
  const query = typeof back === "string" ? {} : back.query;
  return c.redirect(
    jobsHref(query, {
      done: action,
      changed: String(changed.length),
      skipped: String(skipped.length + missing),
    }),
    303,
  );
}

/** What a bulk action did, from the redirect's parameters (numbers and a known action only). */
function doneNote(params: URLSearchParams) {
  const action = params.get("done") ?? "";
  const changed = params.get("changed") ?? "";
  const skipped = params.get("skipped") ?? "";
  if (!(JOB_ACTIONS as readonly string[]).includes(action)) return "";
  if (!/^\d{1,6}$/.test(changed) || !/^\d{1,6}$/.test(skipped)) return "";
  const verb = action === "retry" ? "retried" : action === "cancel" ? "cancelled" : "discarded";
  return (
    <p class="message" role="status" data-done={action}>
      {`${Number(changed)} ${Number(changed) === 1 ? "job" : "jobs"} ${verb}`}
      {Number(skipped) > 0
        ? `; ${Number(skipped)} skipped (not in a state to ${action}, or not found)`
        : ""}.
    </p>
  );
}

/** Stored text as shown: control characters and bidi overrides made visible (`\x1b`, `\u202e`). */
export function shown(text: string): string {
  return escapeControl(text);
}

/** An instant as ISO-8601 UTC to the second, or `-`. */
export function isoUtc(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function cut(text: string): string {
  const safe = shown(text);
  return safe.length > CELL_CHARS ? `${safe.slice(0, CELL_CHARS - 1)}…` : safe;
}

/** `retry` -> `Retry`. */
export function capital(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}
