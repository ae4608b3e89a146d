/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Reports page at `/reports`: the reports the schedules file declares,
 * each with a form to request a run whose fields follow its parameters'
 * declared types (a date, an instant in UTC, a number, text, a choice for
 * a parameter with `values` or a boolean), the runs in the person's scope
 * (keyset paged), and, for a completed run, a download link minted on
 * request (`/downloads/<token>`, the token its own credential).
 *
 * The rules are `/api/v1/reports`' (`src/http/api/reports.ts`): the actor
 * is the person, the roles the report checks are the person's, the tenant
 * is the person's; a tenant-isolated report needs a tenant's person and a
 * shared one an installation-wide person, and a form is drawn only where
 * the request can be made. Runs are read with the tenant in the store's
 * statement, and a link is minted only for a run in scope.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import { NoPublicUrl } from "../admin/public_url.ts";
import {
  mintLink,
  ReportRequestError,
  reportRunInScope,
  reportRuns,
  runError,
  startReport,
} from "../admin/reports.ts";
import type { Principal } from "../http/access.ts";
import type { CompiledReport, ParamType } from "../report/definition.ts";
import { ReportLimitExceeded } from "../report/limits.ts";
import { REPORT_QUEUE } from "../report/types.ts";
import { escapeControl as visible } from "../text/escape.ts";
import type { ReportRun } from "../store/report_types.ts";
import { type ConsoleRouter, type Ctx, NAV_ORDER, pathTo, readForm } from "./common.ts";
import {
  count,
  doneMessage,
  isoUtc,
  pathId,
  queryId,
  QueryRefused,
  relative,
} from "./flow_helpers.ts";
import { Fragment, h } from "./jsx.ts";
import { StateBadge } from "./workflows.tsx";

/** Runs per page. */
export const REPORT_RUNS_PER_PAGE = 50;

/** A link minted here lives this long (the API's default). */
export const LINK_TTL_MS = 10 * 60_000;

const DONE: Readonly<Record<string, string>> = {
  requested: "The run was requested: it is queued and shows its state below.",
};

/** A freshly minted link, shown once on the page that minted it. */
interface Minted {
  run: number;
  href: string;
  expires: number;
}

/** Registers the Reports page and its actions. */
export function registerReports(router: ConsoleRouter): void {
  router.nav({ path: "/reports", label: "Reports", order: NAV_ORDER.reports });
  const declared = (): readonly CompiledReport[] => router.reports?.reports() ?? [];

  const page = async (
    c: Ctx,
    p: Principal,
    extra: { refused?: string; minted?: Minted; status?: 200 | 400 | 403 | 404 | 409 } = {},
  ) => {
    let after: number | null;
    try {
      after = queryId(c, "after");
    } catch (error) {
      if (!(error instanceof QueryRefused)) throw error;
      return await router.render(c, p, {
        title: "Reports",
        status: 400,
        body: <p class="message error" role="alert">{error.message}</p>,
      });
    }
    const runs = await reportRuns(router.store, {
      ...(after === null ? {} : { before: after }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
      limit: REPORT_RUNS_PER_PAGE + 1,
    });
    const shown = runs.slice(0, REPORT_RUNS_PER_PAGE);
    const next = runs.length > REPORT_RUNS_PER_PAGE ? shown.at(-1)!.id : null;
    const now = router.clock.now();
    const done = doneMessage(c, DONE);
    const reports = declared();
    const canLink = mayTake(p.roles, "report.link") && router.reports !== undefined;
    return await router.render(c, p, {
      title: "Reports",
      status: extra.status ?? 200,
      body: (
        <>
          {done === null ? null : <p class="message" role="status">{done}</p>}
          {extra.refused === undefined
            ? null
            : <p class="message error" role="alert">{extra.refused}</p>}
          {extra.minted === undefined
            ? null
            : (
              <p class="message" role="status" data-link={extra.minted.run}>
                Download of run {extra.minted.run}:{" "}
                <a href={extra.minted.href} download>{linkText(extra.minted.href)}</a> (works until
                {" "}
                {isoUtc(extra.minted.expires)}; anyone holding it can download)
              </p>
            )}
          <section aria-labelledby="declared">
            <h2 id="declared">Reports</h2>
            {reports.length === 0
              ? <p class="note">The daemon's schedules file declares no report.</p>
              : (
                <div class="report-list">
                  {reports.map((r) => <ReportCard key={r.id} report={r} p={p} />)}
                </div>
              )}
          </section>
          <section aria-labelledby="runs">
            <h2 id="runs">Runs</h2>
            {shown.length === 0
              ? <p class="note">No run of a report yet.</p>
              : (
                <div class="table-wrap">
                  <table data-table="report-runs">
                    <thead>
                      <tr>
                        <th scope="col">Run</th>
                        <th scope="col">Report</th>
                        <th scope="col">State</th>
                        {p.tenant === null ? <th scope="col">Tenant</th> : null}
                        <th scope="col">Params</th>
                        <th scope="col" class="num">Rows</th>
                        <th scope="col" class="num">Bytes</th>
                        <th scope="col">By</th>
                        <th scope="col">Requested</th>
                        <th scope="col">Output</th>
                      </tr>
                    </thead>
                    <tbody>
                      {shown.map((run) => (
                        <tr key={run.id} data-report-run={run.id}>
                          <th scope="row">{run.id}</th>
                          <td>{visible(run.report)}</td>
                          <td>
                            <StateBadge state={run.state} />
                          </td>
                          {p.tenant === null ? <td>{visible(run.tenant ?? "shared")}</td> : null}
                          <td class="clip">{visible(paramsText(run))}</td>
                          <td class="num">{count(run.rows)}</td>
                          <td class="num">{count(run.bytes)}</td>
                          <td>{visible(run.actor)}</td>
                          <td title={isoUtc(run.requestedAt)}>{relative(run.requestedAt, now)}</td>
                          <td>
                            <Output run={run} now={now} canLink={canLink} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            {next === null ? null : (
              <p>
                <a href={`/reports?${new URLSearchParams({ after: String(next) })}`} rel="next">
                  Older runs
                </a>
              </p>
            )}
          </section>
        </>
      ),
    });
  };

  router.page("GET", "/reports", (c, p) => page(c, p));

  router.page("POST", "/reports/:id/runs", async (c, p) => {
    const form = await readForm(c);
    const report = declared().find((r) => r.id === (c.req.param("id") ?? ""));
    if (!report || !router.reports) {
      return await page(c, p, { refused: "No such report in the schedules file.", status: 404 });
    }
    const scope = scopeRefusal(report, p);
    if (scope !== null) return await page(c, p, { refused: scope.message, status: scope.status });
    const params: Record<string, string> = {};
    for (const [name, spec] of Object.entries(report.params ?? {})) {
      const value = form?.get(`param.${name}`);
      if (value === null || value === undefined || value === "") continue;
      params[name] = spec.type === "datetime" ? asInstant(value) : value;
    }
    const sort = form?.get("sort") || null;
    try {
      await startReport(router.store, report, {
        params,
        tenant: p.tenant,
        actor: router.who(p, null).actor,
        roles: [...p.roles],
        sort,
      }, router.clock.now());
    } catch (error) {
      if (error instanceof ReportLimitExceeded) {
        return await page(c, p, { refused: error.message, status: 409 });
      }
      if (error instanceof ReportRequestError) {
        return await page(c, p, {
          refused: error.message,
          status: error.field === "roles" ? 403 : 400,
        });
      }
      throw error;
    }
    router.reports.wake?.([REPORT_QUEUE]);
    return c.redirect("/reports?done=requested", 303);
  });

  router.page("POST", "/reports/runs/:run/links", async (c, p) => {
    await readForm(c);
    const id = pathId(c, "run");
    const run = id === null ? null : await reportRunInScope(router.store, id, p.tenant);
    if (run === null) return await page(c, p, { refused: "There is no such run.", status: 404 });
    const report = declared().find((r) => r.id === run.report);
    if (!report || !router.reports) {
      return await page(c, p, {
        refused: "The schedules file no longer declares this run's report.",
        status: 404,
      });
    }
    const now = router.clock.now();
    if (run.state !== "completed" || run.storageKey === null) {
      return await page(c, p, { refused: `Run ${run.id} has no output.`, status: 409 });
    }
    if (run.expiresAt !== null && run.expiresAt <= now) {
      return await page(c, p, { refused: `Run ${run.id}: its output expired.`, status: 409 });
    }
    let link;
    try {
      link = await mintLink({
        store: router.store,
        report,
        storage: router.reports.storage(report),
        runId: run.id,
        actor: router.who(p, null).actor,
        ...(p.tenant === null ? {} : { tenant: p.tenant }),
        ttlMs: LINK_TTL_MS,
        now,
        base: router.reports.base,
      });
    } catch (error) {
      if (error instanceof NoPublicUrl) {
        return await page(c, p, { refused: error.message, status: 409 });
      }
      throw error;
    }
    return await page(c, p, {
      minted: { run: run.id, href: linkHref(link.url, link.kind), expires: link.expires },
    });
  });
}

/** Why `p` may not request `report` (as the API refuses it), or null when it may. */
function scopeRefusal(
  report: CompiledReport,
  p: Principal,
): { status: 400 | 403; message: string } | null {
  if (report.tenancy.mode === "shared") {
    return p.tenant === null ? null : {
      status: 403,
      message: `Report ${report.id} reads rows every tenant shares: only an installation-wide ` +
        `person may request it.`,
    };
  }
  return p.tenant !== null ? null : {
    status: 400,
    message: `Report ${report.id} is tenant-isolated and you are installation-wide: request ` +
      `it as a person of the tenant, or on the host (jobs report ${report.id} --tenant <t>).`,
  };
}

/**
 * The href of a minted link: a daemon's is `/downloads/<token>`, served
 * by the listener this page came from, whatever public URL (and path
 * under it) the link names; an S3 one is its whole URL, taken only when it is http(s).
 */
function linkHref(url: string, kind: "s3" | "daemon"): string {
  const parsed = new URL(url);
  if (kind === "daemon") {
    const token = /\/downloads\/([^/]+)$/.exec(parsed.pathname)?.[1];
    if (token === undefined) throw new Error("a daemon's link names no /downloads/<token>");
    return pathTo("/downloads", decodeURIComponent(token));
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new Error("a storage returned a link that is not http(s)");
  }
  return parsed.href;
}

function linkText(href: string): string {
  return href.startsWith("/") ? "download" : "download from storage";
}

/** `2026-03-01T10:00` (a datetime-local field, read as UTC) as `2026-03-01T10:00Z`. */
function asInstant(value: string): string {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? `${value}Z` : value;
}

function paramsText(run: ReportRun): string {
  return Object.entries(run.params).map(([k, v]) => `${k}=${String(v)}`).join(", ");
}

function Output(props: { run: ReportRun; now: number; canLink: boolean }) {
  const { run } = props;
  if (run.state === "failed" || run.state === "cancelled") {
    return <span class="note">{visible(runError(run.error) ?? run.state)}</span>;
  }
  if (run.state !== "completed" || run.storageKey === null) return <span class="note">-</span>;
  if (run.expiresAt !== null && run.expiresAt <= props.now) {
    return <span class="note">expired</span>;
  }
  if (!props.canLink) return <span class="note">ready</span>;
  return (
    <form
      method="post"
      action={pathTo("/reports/runs", run.id, "links")}
      class="action inline"
      data-action="link"
    >
      <button type="submit">Download link</button>
    </form>
  );
}

function ReportCard(props: { report: CompiledReport; p: Principal }) {
  const { report, p } = props;
  const scope = scopeRefusal(report, p);
  const description = report.need?.report ?? null;
  const params = Object.entries(report.params ?? {});
  const fieldId = (name: string) => `report-${report.id}-${name}`;
  return (
    <article class="report" data-report={report.id}>
      <h3>{report.id}</h3>
      {description === null ? null : <p>{description}</p>}
      <p class="note">
        {report.tenancy.mode === "shared" ? "shared by every tenant" : "per tenant"} · writes{" "}
        {report.format?.type ?? "nothing"}
        {(report.authorize?.roles ?? []).length === 0
          ? ""
          : ` · roles: ${(report.authorize?.roles ?? []).join(", ")}`}
      </p>
      {!mayTake(p.roles, "report.run")
        ? null
        : scope !== null
        ? <p class="note">{scope.message}</p>
        : (
          <form
            method="post"
            action={pathTo("/reports", report.id, "runs")}
            class="report-form"
            data-action="request"
          >
            {params.map(([name, spec]) => (
              <div class="field" key={name}>
                <label for={fieldId(name)}>
                  {name} <span class="note">({typeLabel(spec.type)})</span>
                </label>
                <ParamField id={fieldId(name)} name={name} spec={spec} />
              </div>
            ))}
            {report.sort
              ? (
                <div class="field">
                  <label for={fieldId("sort")}>sort</label>
                  <select id={fieldId("sort")} name="sort">
                    {Object.keys(report.sort.keys).map((k) => (
                      <option key={k} value={k} selected={k === report.sort?.default}>{k}</option>
                    ))}
                  </select>
                </div>
              )
              : null}
            <button type="submit" class="primary">Request</button>
          </form>
        )}
    </article>
  );
}

function ParamField(
  props: { id: string; name: string; spec: { type: ParamType; values?: string[] } },
) {
  const { spec } = props;
  const name = `param.${props.name}`;
  if (spec.values && spec.values.length > 0) {
    return (
      <select id={props.id} name={name} required>
        {spec.values.map((v) => <option key={v} value={v}>{v}</option>)}
      </select>
    );
  }
  switch (spec.type) {
    case "boolean":
      return (
        <select id={props.id} name={name} required>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      );
    case "date":
      return <input id={props.id} type="date" name={name} required />;
    case "datetime":
      return <input id={props.id} type="datetime-local" name={name} required step={1} />;
    case "integer":
      return <input id={props.id} type="number" name={name} required step={1} />;
    case "number":
      return <input id={props.id} type="number" name={name} required step="any" />;
    default:
      return <input id={props.id} type="text" name={name} required maxlength={10_000} />;
  }
}

function typeLabel(type: ParamType): string {
  return type === "datetime" ? "instant, UTC" : type;
}
