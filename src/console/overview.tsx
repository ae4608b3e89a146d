/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Overview at `/`: the pattern a page copies. It registers its nav
 * entry and its route (`CONSOLE_ROUTES` names `GET /` with `READ`), reads
 * through the doors of `src/admin/` in the principal's scope, and renders
 * in the layout.
 *
 * Queues and nodes are installation-wide (a queue holds every tenant's
 * jobs), so an installation-wide person sees them (jobs by state per
 * queue, paused and by whom, the nodes serving each; the nodes with their
 * heartbeat, environment and the maintenance leader), while a tenant's
 * person sees their own tenant's jobs by state, counted in the store with
 * the tenant in the statement, and a note saying why no queue is shown.
 * The counts and heartbeats carry `data-live` places: the tab's live
 * stream (`live.ts`) keeps them current while it is visible.
 *
 * Above them, the attention list (`src/admin/attention.ts`, in the
 * principal's scope: a tenant's person sees its own schedules, runs and
 * jobs only): failing schedules, misfires, stale pipelines, pipelines whose
 * last run paged or failed, and jobs executing past their lease, each
 * linking to its page. Installation-wide people also see, per queue, the
 * attempts failed since the start of the UTC day, and the jobs completed
 * and attempts failed per minute over the last hour
 * (`src/admin/throughput.ts`) as server-rendered inline SVG: one chart for
 * every queue together and a sparkline per queue, classes only (the CSP
 * refuses inline style), each with its totals as its text alternative.
 *
 * @module
 */

import { type AttentionItem, type AttentionView, attentionView } from "../admin/attention.ts";
import { leaderView, nodesView, type NodeView } from "../admin/nodes.ts";
import { queuesView, type QueueView } from "../admin/queues.ts";
import { failuresText, storedConfig } from "../admin/schedules.ts";
import {
  emptyThroughput,
  failedToday,
  sumOf,
  type Throughput,
  THROUGHPUT_BUCKETS,
  throughputByQueue,
  throughputTotal,
} from "../admin/throughput.ts";
import type { Principal } from "../http/access.ts";
import { JOB_STATES, type JobState } from "../kernel/types.ts";
import { escapeControl as visible } from "../text/escape.ts";
import { type ConsoleRouter, NAV_ORDER, pathTo } from "./common.ts";
import { duration, isoUtc, relative } from "./flow_helpers.ts";
import { Fragment, h } from "./jsx.ts";

/** The most jobs of one state a tenant's overview counts; past it, `100,000+`. */
export const TENANT_COUNT_CAP = 100_000;

/** The states the queue table shows, in order. */
const SHOWN: readonly JobState[] = [
  "available",
  "executing",
  "scheduled",
  "retryable",
  "discarded",
];

/** Registers the Overview. */
export function registerOverview(router: ConsoleRouter): void {
  router.nav({ path: "/", label: "Overview", order: NAV_ORDER.overview });
  router.page("GET", "/", async (c, p) => {
    const now = router.clock.now();
    const attention = await attentionView({
      store: router.store,
      pipelines: router.definitions?.().pipelines ?? [],
      now,
      tenant: p.tenant,
    });
    const body = (
      <>
        <Attention view={attention} now={now} />
        {p.tenant === null
          ? await installationOverview(router, now)
          : await tenantOverview(router, p)}
      </>
    );
    return await router.render(c, p, { title: "Overview", body });
  });
}

async function installationOverview(router: ConsoleRouter, now: number) {
  const { store } = router;
  const nodes = await nodesView(store, now);
  const queues = await queuesView(store, await storedConfig(store), nodes);
  const leader = await leaderView(store, now);
  const throughput = await throughputByQueue(store, now);
  const failed = await failedToday(store, now);
  return (
    <>
      <section aria-labelledby="throughput">
        <h2 id="throughput">Last hour</h2>
        <ThroughputChart series={throughputTotal(throughput.values())} />
      </section>
      <section aria-labelledby="queues">
        <h2 id="queues">Queues</h2>
        {queues.length === 0 ? <p class="note">No queue holds a job yet.</p> : (
          <>
            <QueuesTable queues={queues} throughput={throughput} failed={failed} />
            <p class="note">
              Failed today counts the attempts that failed (to be retried, or discarded) since 00:00
              UTC, not distinct jobs: a job that failed twice and then completed counts two. The
              last hour's line shows jobs completed (up) and attempts failed (down) per minute.
            </p>
          </>
        )}
      </section>
      <section aria-labelledby="nodes">
        <h2 id="nodes">Nodes</h2>
        {nodes.length === 0
          ? <p class="note">No daemon has registered: start one with jobs daemon.</p>
          : <NodesTable nodes={nodes} leader={leader?.expired ? null : leader?.node ?? null} />}
      </section>
    </>
  );
}

function QueuesTable(
  props: { queues: QueueView[]; throughput: Map<string, Throughput>; failed: Map<string, number> },
) {
  return (
    <div class="table-wrap">
      <table data-table="queues">
        <thead>
          <tr>
            <th scope="col">Queue</th>
            {SHOWN.map((s) => <th key={s} scope="col" class="num">{s}</th>)}
            <th scope="col" class="num">failed today</th>
            <th scope="col">Last hour</th>
            <th scope="col">Paused</th>
            <th scope="col">Nodes</th>
          </tr>
        </thead>
        <tbody>
          {props.queues.map((q) => (
            <tr key={q.name}>
              <th scope="row">{q.name}</th>
              {SHOWN.map((s) => (
                <td key={s} class="num" data-live={JSON.stringify(["queues", q.name, s])}>
                  {count(q.counts[s])}
                </td>
              ))}
              <td class="num" data-failed-today={q.name}>{count(props.failed.get(q.name) ?? 0)}</td>
              <td>
                <Sparkline
                  queue={q.name}
                  series={props.throughput.get(q.name) ?? emptyThroughput()}
                />
              </td>
              <td>
                {q.paused
                  ? (
                    <>
                      <span class="badge warn">paused</span>{" "}
                      {q.pause?.actor ? `by ${q.pause.actor}` : ""}
                      {q.pause?.reason ? `: ${q.pause.reason}` : ""}
                    </>
                  )
                  : q.pausedInFile
                  ? <span class="note">paused in the file</span>
                  : <span class="note">no</span>}
              </td>
              <td>
                {Object.entries(q.nodes).map(([node, n]) => `${node} (${n})`).join(", ") || "-"}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function NodesTable(props: { nodes: NodeView[]; leader: string | null }) {
  return (
    <div class="table-wrap">
      <table data-table="nodes">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Heartbeat</th>
            <th scope="col">Environment</th>
            <th scope="col">Queues</th>
            <th scope="col">Role</th>
          </tr>
        </thead>
        <tbody>
          {props.nodes.map((n) => (
            <tr key={n.node}>
              <th scope="row">{n.node}</th>
              <td>
                <span class={n.stale ? "badge bad" : "badge good"}>
                  {n.stale ? "stale " : ""}
                  <span data-live={JSON.stringify(["nodes", n.node])}>
                    {seconds(n.heartbeatAgeMs)}
                  </span>{" "}
                  ago
                </span>
              </td>
              <td>{n.environment ?? "-"}</td>
              <td>{Object.keys(n.queues).join(", ") || "-"}</td>
              <td>{n.node === props.leader ? "leader" : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

async function tenantOverview(router: ConsoleRouter, p: Principal) {
  const tenant = p.tenant!;
  const counts: [JobState, number][] = [];
  for (const state of JOB_STATES) {
    counts.push([
      state,
      await router.store.jobsCountMatching({ tenant, state }, { atMost: TENANT_COUNT_CAP }),
    ]);
  }
  return (
    <>
      <section aria-labelledby="jobs">
        <h2 id="jobs">Your tenant's jobs</h2>
        <div class="table-wrap">
          <table data-table="tenant-jobs">
            <thead>
              <tr>
                {counts.map(([s]) => <th key={s} scope="col" class="num">{s}</th>)}
              </tr>
            </thead>
            <tbody>
              <tr>
                {counts.map(([s, n]) => (
                  <td
                    key={s}
                    class="num"
                    data-live={JSON.stringify(["jobs", s])}
                    data-live-cap={String(TENANT_COUNT_CAP)}
                  >
                    {n >= TENANT_COUNT_CAP ? "100,000+" : count(n)}
                  </td>
                ))}
              </tr>
            </tbody>
          </table>
        </div>
      </section>
      <p class="note">
        Queues, nodes and their throughput are shared by every tenant, so they are shown to
        installation-wide people only.
      </p>
    </>
  );
}

/** Where an attention item links, and what it says. */
function attentionEntry(item: AttentionItem, now: number): { href: string; text: string } {
  switch (item.kind) {
    case "schedule-failing":
      return {
        href: pathTo("/schedules", item.schedule),
        text: `Schedule ${visible(item.schedule)} is failing: ${failuresText(item.failures)}${
          item.at === null ? "" : `, the last ${relative(item.at, now)}`
        }.`,
      };
    case "schedule-misfires":
      return {
        href: pathTo("/schedules", item.schedule),
        text: `Schedule ${visible(item.schedule)} misfired: ${count(item.misfires)} occurrence${
          item.misfires === 1 ? "" : "s"
        } skipped${item.at === null ? "" : `, the last for ${isoUtc(item.at)}`}.`,
      };
    case "pipeline-stale":
      return {
        href: "/pipelines",
        text: `Pipeline ${visible(item.pipeline)} is stale: ${
          item.ageMs === null
            ? "no run has completed"
            : `its last completed run is ${duration(item.ageMs)} old`
        }, promised within ${duration(item.withinMs)}.`,
      };
    case "pipeline-run":
      return {
        href: "/pipelines",
        text: `Pipeline ${visible(item.pipeline)}'s last run (${item.run}) ${
          item.state === "paged" ? "paged: its buffer overflowed" : "failed"
        }, ${relative(item.at, now)}.`,
      };
    case "job-stuck":
      return {
        href: pathTo("/jobs", item.job),
        text: `Job ${item.job} (${visible(item.worker)} on ${visible(item.queue)}) is executing ${
          item.leaseExpiredAt === null
            ? "past its lease"
            : `${duration(Math.max(0, now - item.leaseExpiredAt))} past its lease`
        }${item.node === null ? "" : `, held by ${visible(item.node)}`}.`,
      };
  }
}

/** The attention list: each item a link to its page. */
function Attention(props: { view: AttentionView; now: number }) {
  const { items, moreStuck } = props.view;
  return (
    <section aria-labelledby="attention">
      <h2 id="attention">Needs attention</h2>
      {items.length === 0
        ? <p class="note">Nothing needs attention.</p>
        : (
          <ul class="attention" data-list="attention">
            {items.map((item, i) => {
              const { href, text } = attentionEntry(item, props.now);
              return (
                <li key={i} data-attention={item.kind}>
                  <a href={href}>{text}</a>
                </li>
              );
            })}
          </ul>
        )}
      {moreStuck
        ? (
          <p class="note">
            More jobs are stuck than listed: <a href="/jobs?state=executing">executing jobs</a>.
          </p>
        )
        : null}
    </section>
  );
}

/** The text alternative of a series: its totals over the hour. */
function totals(series: Throughput): string {
  const completed = sumOf(series.completed);
  const failed = sumOf(series.failed);
  return `${count(completed)} completed, ${count(failed)} failed attempt${
    failed === 1 ? "" : "s"
  } in the last hour`;
}

/**
 * Bars per minute about a middle line: completed up, failed down, both to
 * one scale (the larger of the two), a bar of at least 1 unit for any
 * count above zero. `step` is a minute's width, `half` the height each way.
 */
function Bars(props: { series: Throughput; step: number; half: number; gap: number }) {
  const { series, step, half, gap } = props;
  const max = Math.max(1, ...series.completed, ...series.failed);
  const height = (n: number) => n === 0 ? 0 : Math.max(1, Math.round((n / max) * (half - 1)));
  const width = Math.max(1, step - gap);
  const bars = [];
  for (let i = 0; i < THROUGHPUT_BUCKETS; i++) {
    const up = height(series.completed[i] ?? 0);
    const down = height(series.failed[i] ?? 0);
    if (up > 0) {
      bars.push(
        <rect
          key={`c${i}`}
          x={i * step}
          y={half - up}
          width={width}
          height={up}
          class="completed"
        />,
      );
    }
    if (down > 0) {
      bars.push(
        <rect key={`f${i}`} x={i * step} y={half} width={width} height={down} class="failed" />,
      );
    }
  }
  return (
    <>
      <line x1={0} y1={half} x2={THROUGHPUT_BUCKETS * step} y2={half} class="axis" />
      {bars}
    </>
  );
}

/** Every queue's completions and failures per minute over the last hour. */
function ThroughputChart(props: { series: Throughput }) {
  const step = 8;
  const half = 50;
  const width = THROUGHPUT_BUCKETS * step;
  const label = `Every queue, per minute: ${totals(props.series)}`;
  return (
    <figure class="throughput">
      <svg
        class="chart throughput-chart"
        width={width}
        height={2 * half + 16}
        viewBox={`0 0 ${width} ${2 * half + 16}`}
        role="img"
        aria-label={label}
        data-chart="throughput"
      >
        <title>{label}</title>
        <Bars series={props.series} step={step} half={half} gap={2} />
        <text x={0} y={2 * half + 14} class="chart-label">60 min ago</text>
        <text x={width} y={2 * half + 14} class="chart-label end">now</text>
      </svg>
      <figcaption class="note">
        <span class="key completed" aria-hidden="true"></span>
        {count(sumOf(props.series.completed))} completed ·{" "}
        <span class="key failed" aria-hidden="true"></span>
        {count(sumOf(props.series.failed))} failed attempts in the last hour, per minute.
      </figcaption>
    </figure>
  );
}

/** One queue's last hour, small. */
function Sparkline(props: { queue: string; series: Throughput }) {
  const step = 2;
  const half = 12;
  const label = `${visible(props.queue)}: ${totals(props.series)}`;
  return (
    <svg
      class="chart sparkline"
      width={THROUGHPUT_BUCKETS * step}
      height={2 * half}
      viewBox={`0 0 ${THROUGHPUT_BUCKETS * step} ${2 * half}`}
      role="img"
      aria-label={label}
      data-sparkline={props.queue}
    >
      <title>{label}</title>
      <Bars series={props.series} step={step} half={half} gap={0} />
    </svg>
  );
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

function seconds(ms: number): string {
  return ms < 1000 ? "<1 s" : `${Math.round(ms / 1000)} s`;
}
