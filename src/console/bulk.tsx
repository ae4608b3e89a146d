/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * Bulk actions over everything the jobs list's filter matches
 * (`src/admin/bulk.ts`): `GET /jobs/bulk?action=retry&<filter>` confirms,
 * showing how many jobs match (in the person's scope) before anything
 * changes and asking a reason; `POST /jobs/bulk` takes the snapshot of the
 * matching ids and starts the run, then leads to `GET /bulk/:id`, its
 * progress (done of total, changed, skipped, state) with an Abort button
 * (`POST /bulk/:id/abort`). `GET /bulk` lists the runs in scope; another
 * tenant's run is not found (404), as a missing one is.
 *
 * The progress page refreshes itself with `<meta http-equiv="refresh">`
 * every second while the run is running, and stops once it has ended: no
 * script at all, so nothing for the Content-Security-Policy to allow (a
 * meta refresh is not script), it works with JavaScript off, and the page
 * holds no field a reload would lose (Abort takes no reason). The live
 * stream (`/events`) carries the overview's counts, not one run's row.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import {
  abortBulk,
  BULK_ACTIONS,
  BULK_SNAPSHOT_CAP,
  BulkRefused,
  bulkRunInScope,
  bulkRunsInScope,
  previewBulk,
  startBulk,
} from "../admin/bulk.ts";
import { searchWindowAbove } from "../admin/jobs.ts";
import type { Principal } from "../http/access.ts";
import type { BulkAction, BulkRun, JobMatch } from "../store/store.ts";
import { type ConsoleRouter, type Ctx, formReason, pathTo, readForm } from "./common.ts";
import { errorPage } from "./error_page.tsx";
import {
  capital,
  isoUtc,
  jobMatch,
  JOBS_SEARCH_WINDOW,
  type JobsQuery,
  queryParams,
  readQuery,
  shown,
} from "./jobs.tsx";
import { Fragment, h } from "./jsx.ts";

/** How many runs `/bulk` shows per page. */
const RUNS_PAGE_SIZE = 50;

/** Registers the bulk confirmation, the runs and their progress. */
export function registerBulk(router: ConsoleRouter): void {
  router.page("GET", "/jobs/bulk", async (c, p) => await confirm(router, c, p));
  router.page("POST", "/jobs/bulk", async (c, p) => await start(router, c, p));
  router.page("GET", "/bulk", async (c, p) => {
    const before = new URL(c.req.url).searchParams.get("before") ?? "";
    if (before !== "" && !/^\d{1,15}$/.test(before)) {
      return await errorPage(c, 400, `"before" must be a bulk run's id`);
    }
    const runs = await bulkRunsInScope(router.store, p.tenant, {
      ...(before === "" ? {} : { before: Number(before) }),
      limit: RUNS_PAGE_SIZE + 1,
    });
    return await router.render(c, p, {
      title: "Bulk runs",
      body: <RunsList runs={runs} />,
    });
  });
  router.page("GET", "/bulk/:id", async (c, p) => {
    const run = await runOf(router, c, p);
    if (run === null) return await errorPage(c, 404, "No such bulk run.");
    return await router.render(c, p, {
      title: `Bulk run ${run.id}`,
      body: <Progress run={run} p={p} />,
    });
  });
  router.page("POST", "/bulk/:id/abort", async (c, p) => {
    const run = await runOf(router, c, p);
    if (run === null) return await errorPage(c, 404, "No such bulk run.");
    await abortBulk(router.store, run.id, p.tenant, router.who(p, null));
    return c.redirect(pathTo("/bulk", run.id), 303);
  });
}

/** The run of the path's `:id` in `p`'s scope, or null. */
async function runOf(router: ConsoleRouter, c: Ctx, p: Principal): Promise<BulkRun | null> {
  const id = c.req.param("id") ?? "";
  if (!/^\d{1,15}$/.test(id)) return null;
  return await bulkRunInScope(router.store, Number(id), p.tenant);
}

/** The action named by a form or the URL, or null. */
function actionOf(value: string | null): BulkAction | null {
  return (BULK_ACTIONS as readonly string[]).includes(value ?? "") ? value as BulkAction : null;
}

/** The store's filter of `query` in `p`'s scope, a search bounded as the list bounds it. */
async function matchOf(router: ConsoleRouter, query: JobsQuery, p: Principal): Promise<JobMatch> {
  const above = query.search === undefined
    ? null
    : await searchWindowAbove(router.store, JOBS_SEARCH_WINDOW);
  return { ...jobMatch(query, p), ...(above === null ? {} : { above }) };
}

/** `GET /jobs/bulk`: how many jobs the action would take, and the form that starts it. */
async function confirm(router: ConsoleRouter, c: Ctx, p: Principal): Promise<Response> {
  const params = new URL(c.req.url).searchParams;
  const action = actionOf(params.get("action"));
  if (action === null) return await errorPage(c, 400, `"action" must be retry, cancel or discard`);
  const read = readQuery(params, p);
  if (typeof read === "string") return await errorPage(c, 400, read);
  const { count, capped } = await previewBulk(
    router.store,
    await matchOf(router, read.query, p),
    p.tenant,
  );
  const back = queryParams(read.query).toString();
  const may = mayTake(p.roles, "bulk.start");
  return await router.render(c, p, {
    title: `${capital(action)} all matching jobs`,
    body: (
      <>
        <p class="note">
          Filter: <FilterText query={read.query} />.{" "}
          <a href={back === "" ? "/jobs" : `/jobs?${back}`}>Back to the list</a>
        </p>
        <p class="message" role="status" data-preview-count={String(count)}>
          {count.toLocaleString("en-US")} {count === 1 ? "job matches" : "jobs match"}
          {capped
            ? ` (more match: a run takes the oldest ${cap()}, run it again for the rest)`
            : ""}
          {read.query.search === undefined
            ? ""
            : ` among the newest ${JOBS_SEARCH_WINDOW.toLocaleString("en-US")}`}. A job not in a
          state to {action} when its turn comes is skipped.
        </p>
        {count === 0 || !may
          ? ""
          : (
            <form method="post" action="/jobs/bulk" class="stacked" data-bulk-confirm={action}>
              <input type="hidden" name="action" value={action} />
              <input type="hidden" name="filter" value={back} />
              <label for="bulk-all-reason">Reason</label>
              <input
                id="bulk-all-reason"
                name="reason"
                required
                maxlength={1000}
                placeholder="why, for the audit trail"
              />
              <button type="submit" class={action === "retry" ? "primary" : "danger"}>
                {capital(action)} all {count.toLocaleString("en-US")}
              </button>
            </form>
          )}
        <p class="note">
          The ids are taken when you confirm; jobs that match later are not included. The run goes
          on in the background and can be aborted; <a href="/bulk">earlier runs</a>.
        </p>
      </>
    ),
  });
}

function cap(): string {
  return BULK_SNAPSHOT_CAP.toLocaleString("en-US");
}

/** `POST /jobs/bulk`: the snapshot and the run, then its progress page. */
async function start(router: ConsoleRouter, c: Ctx, p: Principal): Promise<Response> {
  const form = await readForm(c);
  if (form === null) return await errorPage(c, 400, "The request is not a form this page sent.");
  const action = actionOf(form.get("action"));
  if (action === null) return await errorPage(c, 400, `"action" must be retry, cancel or discard`);
  const given = formReason(form, true);
  if ("refused" in given) return await errorPage(c, 400, given.refused);
  const reason = given.reason!;
  const read = readQuery(new URLSearchParams(form.get("filter") ?? ""), p);
  if (typeof read === "string") return await errorPage(c, 400, read);
  try {
    const run = await startBulk(router.store, {
      action,
      filter: await matchOf(router, read.query, p),
      tenant: p.tenant,
      who: router.who(p, reason),
    });
    return c.redirect(pathTo("/bulk", run.id), 303);
  } catch (error) {
    if (error instanceof BulkRefused) return await errorPage(c, 400, error.message);
    throw error;
  }
}

/** The filter as words: `state=discarded, queue=mail`, or `every job`. */
function FilterText(props: { query: JobsQuery }) {
  const entries = Object.entries(props.query).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return <>every job in scope</>;
  return <code>{entries.map(([k, v]) => `${k}=${shown(String(v))}`).join(", ")}</code>;
}

/** A run's stored filter as words (its keys are the store's). */
function storedFilter(filter: Record<string, unknown>): string {
  const entries = Object.entries(filter).filter(([k]) => k !== "above");
  if (entries.length === 0) return "every job in scope";
  return entries.map(([k, v]) => `${k}=${shown(typeof v === "string" ? v : JSON.stringify(v))}`)
    .join(", ");
}

function StateBadge(props: { state: BulkRun["state"] }) {
  const tone = props.state === "completed"
    ? " good"
    : props.state === "failed"
    ? " bad"
    : props.state === "aborted"
    ? " warn"
    : "";
  return <span class={`badge${tone}`} data-bulk-state={props.state}>{props.state}</span>;
}

/** The progress of one run, refreshing itself while it runs. */
function Progress(props: { run: BulkRun; p: Principal }) {
  const { run, p } = props;
  const running = run.state === "running";
  const percent = run.total === 0 ? 100 : Math.floor((run.done / run.total) * 100);
  return (
    <>
      {running ? <meta http-equiv="refresh" content="1" /> : ""}
      <p class="note">
        <a href="/bulk">All bulk runs</a>
      </p>
      <section class="bulk-run" data-bulk-run={String(run.id)} aria-live="polite">
        <p>
          {capital(run.action)} <StateBadge state={run.state} />
          {running && run.abortRequested ? " (stopping: abort asked)" : ""}
        </p>
        <progress max={String(run.total)} value={String(run.done)}>{percent}%</progress>
        <dl class="facts">
          <dt>Done</dt>
          <dd data-bulk-done>
            {run.done.toLocaleString("en-US")} of {run.total.toLocaleString("en-US")} ({percent}%)
          </dd>
          <dt>Changed</dt>
          <dd data-bulk-changed>{run.changed.toLocaleString("en-US")}</dd>
          <dt>Skipped</dt>
          <dd data-bulk-skipped>{run.skipped.toLocaleString("en-US")}</dd>
          <dt>Filter</dt>
          <dd>
            <code>{storedFilter(run.filter)}</code>
          </dd>
          <dt>By</dt>
          <dd>{shown(run.actor)}</dd>
          <dt>Reason</dt>
          <dd>{run.reason === null ? "-" : shown(run.reason)}</dd>
          {p.tenant === null
            ? (
              <>
                <dt>Tenant</dt>
                <dd>{run.tenant === null ? "-" : shown(run.tenant)}</dd>
              </>
            )
            : ""}
          <dt>Started (UTC)</dt>
          <dd>{isoUtc(run.createdAt)}</dd>
          <dt>Ended (UTC)</dt>
          <dd>{isoUtc(run.finishedAt)}</dd>
        </dl>
      </section>
      {running && !run.abortRequested && mayTake(p.roles, "bulk.abort")
        ? (
          <form method="post" action={pathTo("/bulk", run.id, "abort")} class="inline-action">
            <button type="submit" class="danger" data-bulk-abort>Abort</button>
            <span class="note">stops between chunks of 500; what is done stays done</span>
          </form>
        )
        : ""}
    </>
  );
}

/** The runs in scope, newest first. */
function RunsList(props: { runs: BulkRun[] }) {
  const page = props.runs.slice(0, RUNS_PAGE_SIZE);
  const next = props.runs.length > RUNS_PAGE_SIZE ? page.at(-1)?.id ?? null : null;
  if (page.length === 0) {
    return <p class="note">No bulk run yet: start one from a filter on the Jobs page.</p>;
  }
  return (
    <>
      <div class="table-wrap">
        <table data-table="bulk">
          <thead>
            <tr>
              <th scope="col" class="num">Run</th>
              <th scope="col">Action</th>
              <th scope="col">State</th>
              <th scope="col" class="num">Done</th>
              <th scope="col" class="num">Changed</th>
              <th scope="col" class="num">Skipped</th>
              <th scope="col">By</th>
              <th scope="col">Started (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {page.map((run) => (
              <tr key={run.id} data-row={run.id}>
                <td class="num">
                  <a href={pathTo("/bulk", run.id)}>{run.id}</a>
                </td>
                <td>{run.action}</td>
                <td>
                  <StateBadge state={run.state} />
                </td>
                <td class="num">
                  {run.done.toLocaleString("en-US")}/{run.total.toLocaleString("en-US")}
                </td>
                <td class="num">{run.changed.toLocaleString("en-US")}</td>
                <td class="num">{run.skipped.toLocaleString("en-US")}</td>
                <td>{shown(run.actor)}</td>
                <td>{isoUtc(run.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {next === null ? "" : (
        <p>
          <a href={`/bulk?${new URLSearchParams({ before: String(next) })}`} rel="next">
            Older runs
          </a>
        </p>
      )}
    </>
  );
}
