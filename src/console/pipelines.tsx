/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Pipelines pages: `/pipelines` shows each pipeline (the schedules
 * file's, then any other the store has runs of) with its freshness against
 * its promise, its newest runs and their counts, and its drops per reason
 * over the last hour and the last day as a small bar chart (inline SVG
 * drawn by the JSX renderer: attributes and classes, no inline style), and
 * Run now for the roles that may; `/pipelines/{name}/drops` lists its
 * dropped records (keyset paged, filtered by reason) with Replay of one,
 * with a reason.
 *
 * Reads and actions go through `src/admin/pipelines.ts` in the
 * principal's scope, as `/api/v1/pipelines` and `/api/v1/drops` do: a
 * tenant's person sees its tenant's runs and their drops only, a run it
 * starts carries its tenant, and another tenant's drop is not found.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import {
  PipelineActionRefused,
  pipelinesView,
  type PipelineView,
  replayDrop,
  startIngestRun,
  totalDropped,
} from "../admin/pipelines.ts";
import type { Principal } from "../http/access.ts";
import type { CompiledPipeline } from "../ingest/types.ts";
import { redact } from "../kernel/redact.ts";
import { escapeControl as visible } from "../text/escape.ts";
import { type ConsoleRouter, type Ctx, formReason, NAV_ORDER, pathTo, readForm } from "./common.ts";
import {
  count,
  doneMessage,
  duration,
  isoUtc,
  pathId,
  queryId,
  QueryRefused,
  queryText,
  relative,
} from "./flow_helpers.ts";
import { Fragment, h } from "./jsx.ts";
import { StateBadge } from "./workflows.tsx";

/** Drops per page of a pipeline's drops list. */
export const DROPS_PER_PAGE = 50;

const DONE: Readonly<Record<string, string>> = {
  run: "A run was queued: it shows here once a node starts it.",
  replay: "The drop was replayed: a run of just that record was queued.",
};

/** Registers the Pipelines pages and their actions. */
export function registerPipelines(router: ConsoleRouter): void {
  router.nav({ path: "/pipelines", label: "Pipelines", order: NAV_ORDER.pipelines });
  const declared = (): readonly CompiledPipeline[] => router.definitions?.().pipelines ?? [];

  const overview = async (
    c: Ctx,
    p: Principal,
    refused: string | null,
    status: 200 | 400 | 404,
  ) => {
    const views = await pipelinesView({
      store: router.store,
      pipelines: declared(),
      now: router.clock.now(),
      tenant: p.tenant,
    });
    const done = doneMessage(c, DONE);
    return await router.render(c, p, {
      title: "Pipelines",
      status,
      body: (
        <>
          {done === null ? null : <p class="message" role="status">{done}</p>}
          {refused === null ? null : <p class="message error" role="alert">{refused}</p>}
          {views.length === 0
            ? <p class="note">No pipeline is declared and the store holds no run of one.</p>
            : views.map((v) => (
              <Pipeline
                key={v.id}
                view={v}
                now={router.clock.now()}
                p={p}
                canRun={v.declared && router.definitions !== undefined}
              />
            ))}
        </>
      ),
    });
  };

  router.page("GET", "/pipelines", (c, p) => overview(c, p, null, 200));

  router.page("POST", "/pipelines/:name/runs", async (c, p) => {
    const form = await readForm(c);
    const name = c.req.param("name") ?? "";
    const pipeline = declared().find((d) => d.id === name);
    if (!pipeline) {
      return await overview(c, p, "No such pipeline in the daemon's schedules file.", 404);
    }
    const reason = formReason(form, false);
    if ("refused" in reason) return await overview(c, p, reason.refused, 400);
    await startIngestRun(router.store, pipeline, router.who(p, reason.reason), p.tenant);
    return c.redirect("/pipelines?done=run", 303);
  });

  const dropsPage = async (
    c: Ctx,
    p: Principal,
    name: string,
    refused: string | null,
    status: 200 | 400 | 404 | 409,
  ) => {
    let reasonFilter: string | null;
    let after: number | null;
    try {
      reasonFilter = queryText(c, "reason");
      after = queryId(c, "after");
    } catch (error) {
      if (!(error instanceof QueryRefused)) throw error;
      return await router.render(c, p, {
        title: `Drops of ${name}`,
        status: 400,
        body: <p class="message error" role="alert">{error.message}</p>,
      });
    }
    const drops = await router.store.ingestDropsList({
      pipeline: name,
      ...(reasonFilter === null ? {} : { reason: reasonFilter }),
      ...(after === null ? {} : { before: after }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
      limit: DROPS_PER_PAGE + 1,
    });
    const page = drops.slice(0, DROPS_PER_PAGE);
    const next = drops.length > DROPS_PER_PAGE ? page.at(-1)!.id : null;
    const more = new URLSearchParams();
    if (reasonFilter !== null) more.set("reason", reasonFilter);
    if (next !== null) more.set("after", String(next));
    const replay = mayTake(p.roles, "ingest.replay") &&
      declared().some((d) => d.id === name);
    const done = doneMessage(c, DONE);
    const self = pathTo("/pipelines", name, "drops");
    return await router.render(c, p, {
      title: `Drops of ${name}`,
      status,
      body: (
        <>
          {done === null ? null : <p class="message" role="status">{done}</p>}
          {refused === null ? null : <p class="message error" role="alert">{refused}</p>}
          <p>
            <a href="/pipelines">All pipelines</a>
          </p>
          <form method="get" action={self} class="filters" role="search">
            <label>
              Reason <input type="text" name="reason" value={reasonFilter ?? ""} />
            </label>
            <button type="submit">Filter</button>
          </form>
          {page.length === 0
            ? <p class="note">No dropped record matches.</p>
            : (
              <div class="table-wrap">
                <table data-table="drops">
                  <thead>
                    <tr>
                      <th scope="col">Drop</th>
                      <th scope="col">Run</th>
                      <th scope="col">Record</th>
                      <th scope="col">Reason</th>
                      <th scope="col">Step</th>
                      <th scope="col">At</th>
                      <th scope="col">Excerpt</th>
                      <th scope="col">Replay</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.map((d) => (
                      <tr key={d.id} data-drop={d.id}>
                        <th scope="row">{d.id}</th>
                        <td>{d.runId}</td>
                        <td>{visible(d.recordKey ?? "-")}</td>
                        <td>{visible(d.reason)}</td>
                        <td>{visible(d.step)}</td>
                        <td>{isoUtc(d.at)}</td>
                        <td class="clip">
                          <code>{visible(d.excerpt)}</code>
                        </td>
                        <td>
                          {d.replayedAt !== null
                            ? (
                              <>
                                replayed {isoUtc(d.replayedAt)}
                                {d.replayedJob === null ? null : (
                                  <>
                                    {" "}
                                    <a href={pathTo("/jobs", d.replayedJob)}>
                                      job {d.replayedJob}
                                    </a>
                                  </>
                                )}
                              </>
                            )
                            : !d.replayable
                            ? <span class="note">record too long to keep</span>
                            : replay
                            ? (
                              <form
                                method="post"
                                action={pathTo("/drops", d.id, "replay")}
                                class="action inline"
                                data-action="replay"
                              >
                                <label for={`reason-${d.id}`} class="sr">Reason</label>
                                <input
                                  id={`reason-${d.id}`}
                                  type="text"
                                  name="reason"
                                  required
                                  maxlength={1000}
                                  placeholder="why"
                                />
                                <button type="submit">Replay</button>
                              </form>
                            )
                            : <span class="note">not replayed</span>}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          {next === null ? null : (
            <p>
              <a href={`${self}?${more}`} rel="next">Older drops</a>
            </p>
          )}
        </>
      ),
    });
  };

  router.page(
    "GET",
    "/pipelines/:name/drops",
    (c, p) => dropsPage(c, p, c.req.param("name") ?? "", null, 200),
  );

  router.page("POST", "/drops/:id/replay", async (c, p) => {
    const form = await readForm(c);
    const id = pathId(c, "id");
    const drop = id === null ? null : await router.store.ingestDropGet({
      id,
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
    });
    if (drop === null) {
      return await router.render(c, p, {
        title: "Not found",
        status: 404,
        body: <p class="message error" role="alert">There is no such drop.</p>,
      });
    }
    const reason = formReason(form, true);
    if ("refused" in reason) return await dropsPage(c, p, drop.pipeline, reason.refused, 400);
    const pipelines = declared();
    try {
      await replayDrop(router.store, {
        id: drop.id,
        pipeline: (name) => pipelines.find((d) => d.id === name) ?? null,
        who: { ...router.who(p, reason.reason), reason: reason.reason! },
        again: form?.get("again") === "1",
        tenant: p.tenant,
      });
    } catch (error) {
      if (!(error instanceof PipelineActionRefused)) throw error;
      const message = redact(error.message).replace("--again replays it once more", "")
        .replace(/; $/, ".");
      return await dropsPage(c, p, drop.pipeline, message, 409);
    }
    return c.redirect(`${pathTo("/pipelines", drop.pipeline, "drops")}?done=replay`, 303);
  });
}

function Pipeline(
  props: { view: PipelineView; now: number; p: Principal; canRun: boolean },
) {
  const { view, p } = props;
  const headingId = `pipeline-${encodeURIComponent(view.id)}`;
  const dropsHour = totalDropped(view.droppedLastHour);
  const dropsDay = totalDropped(view.droppedLastDay);
  return (
    <section class="pipeline" aria-labelledby={headingId} data-pipeline={view.id}>
      <h2 id={headingId}>
        {visible(view.id)}
        {view.declared ? "" : " "}
        {view.declared ? null : <span class="badge">not in the schedules file</span>}
      </h2>
      <p data-freshness>
        <Freshness view={view} now={props.now} /> · {count(view.runs)} run
        {view.runs === 1 ? "" : "s"} in the last day
      </p>
      {props.canRun && mayTake(p.roles, "ingest.run")
        ? (
          <form
            method="post"
            action={pathTo("/pipelines", view.id, "runs")}
            class="action"
            data-action="run"
          >
            <label for={`${headingId}-reason`}>Reason (optional)</label>
            <input id={`${headingId}-reason`} type="text" name="reason" maxlength={1000} />
            <button type="submit" class="primary">Run now</button>
          </form>
        )
        : null}
      <div class="pipeline-grid">
        <div>
          <h3>Newest runs</h3>
          {view.recent.length === 0
            ? <p class="note">No run in the last day.</p>
            : (
              <div class="table-wrap">
                <table data-table="ingest-runs">
                  <thead>
                    <tr>
                      <th scope="col">Run</th>
                      <th scope="col">State</th>
                      <th scope="col">Trigger</th>
                      <th scope="col" class="num">Received</th>
                      <th scope="col" class="num">Sunk</th>
                      <th scope="col" class="num">Dropped</th>
                      <th scope="col" class="num">Failed</th>
                      <th scope="col" class="num">Pending</th>
                      <th scope="col">Started</th>
                    </tr>
                  </thead>
                  <tbody>
                    {view.recent.map((r) => (
                      <tr key={r.id} data-ingest-run={r.id}>
                        <th scope="row">{r.id}</th>
                        <td>
                          <StateBadge state={r.state} />
                        </td>
                        <td>{r.trigger}</td>
                        <td class="num">{count(r.counts.received)}</td>
                        <td class="num">{count(r.counts.sunk)}</td>
                        <td class="num">{count(totalDropped(r.counts.dropped))}</td>
                        <td class="num">{count(r.counts.failed)}</td>
                        <td class="num">{count(r.counts.pending)}</td>
                        <td title={isoUtc(r.startedAt)}>{relative(r.startedAt, props.now)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </div>
        <div>
          <h3>Drops by reason</h3>
          {dropsDay === 0 ? <p class="note">No record dropped in the last day.</p> : (
            <>
              <DropsChart hour={view.droppedLastHour} day={view.droppedLastDay} />
              <p class="note">
                {count(dropsHour)} in the last hour, {count(dropsDay)} in the last day.
              </p>
            </>
          )}
          <p>
            <a href={pathTo("/pipelines", view.id, "drops")}>Dropped records</a>
          </p>
        </div>
      </div>
    </section>
  );
}

function Freshness(props: { view: PipelineView; now: number }) {
  const f = props.view.freshness;
  if (f === null) return <span class="note">no freshness promised</span>;
  const age = f.lastCompletedAt === null
    ? "no run completed"
    : `last completed ${relative(f.lastCompletedAt, props.now)}`;
  if (f.mode === "advisory") {
    return (
      <span>
        <span class="badge">advisory</span> {age}
        {f.authority === null ? "" : `; ${f.authority} is the authority`}
      </span>
    );
  }
  return (
    <span>
      {f.stale ? <span class="badge bad">stale</span> : <span class="badge good">fresh</span>}{" "}
      {age}, promised within {duration(f.withinMs ?? 0)}
    </span>
  );
}

/** Bar height and gap of the chart, px. */
const BAR = 14;
const ROW = 40;
const LABEL = 150;
const WIDTH = 420;

/**
 * Drops per reason as horizontal bars, the last hour's over the last
 * day's, scaled to the largest day count. Drawn with SVG attributes and
 * classes only: the CSP refuses inline style.
 */
function DropsChart(props: { hour: Record<string, number>; day: Record<string, number> }) {
  const reasons = Object.keys(props.day).sort((a, b) =>
    (props.day[b] ?? 0) - (props.day[a] ?? 0) || a.localeCompare(b)
  );
  const max = Math.max(1, ...reasons.map((r) => props.day[r] ?? 0));
  const span = WIDTH - LABEL - 60;
  const bar = (n: number) => Math.max(n > 0 ? 2 : 0, Math.round((n / max) * span));
  const height = reasons.length * ROW + 20;
  const summary = reasons.map((r) =>
    `${r}: ${props.hour[r] ?? 0} in the last hour, ${props.day[r] ?? 0} in the last day`
  ).join("; ");
  return (
    <svg
      class="chart drops-chart"
      width={WIDTH}
      height={height}
      viewBox={`0 0 ${WIDTH} ${height}`}
      role="img"
      aria-label={`Drops by reason. ${summary}`}
    >
      {reasons.map((reason, i) => {
        const y = i * ROW;
        const hour = props.hour[reason] ?? 0;
        const day = props.day[reason] ?? 0;
        return (
          <g key={reason} data-reason={reason}>
            <text x={0} y={y + BAR + 2} class="chart-label">{clip(visible(reason), 22)}</text>
            <rect x={LABEL} y={y} width={bar(hour)} height={BAR} class="bar-hour" />
            <text x={LABEL + bar(hour) + 4} y={y + BAR - 2} class="chart-value">{hour}</text>
            <rect x={LABEL} y={y + BAR + 2} width={bar(day)} height={BAR} class="bar-day" />
            <text x={LABEL + bar(day) + 4} y={y + 2 * BAR} class="chart-value">{day}</text>
          </g>
        );
      })}
      <rect x={LABEL} y={height - 14} width={10} height={10} class="bar-hour" />
      <text x={LABEL + 14} y={height - 5} class="chart-value">last hour</text>
      <rect x={LABEL + 90} y={height - 14} width={10} height={10} class="bar-day" />
      <text x={LABEL + 104} y={height - 5} class="chart-value">last day</text>
    </svg>
  );
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
