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
 * @module
 */

import { leaderView, nodesView, type NodeView } from "../admin/nodes.ts";
import { queuesView, type QueueView } from "../admin/queues.ts";
import { storedConfig } from "../admin/schedules.ts";
import type { Principal } from "../http/access.ts";
import { JOB_STATES, type JobState } from "../kernel/types.ts";
import { type ConsoleRouter, NAV_ORDER } from "./common.ts";
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
    const body = p.tenant === null
      ? await installationOverview(router, now)
      : await tenantOverview(router, p);
    return await router.render(c, p, { title: "Overview", body });
  });
}

async function installationOverview(router: ConsoleRouter, now: number) {
  const { store } = router;
  const nodes = await nodesView(store, now);
  const queues = await queuesView(store, await storedConfig(store), nodes);
  const leader = await leaderView(store, now);
  return (
    <>
      <section aria-labelledby="queues">
        <h2 id="queues">Queues</h2>
        {queues.length === 0
          ? <p class="note">No queue holds a job yet.</p>
          : <QueuesTable queues={queues} />}
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

function QueuesTable(props: { queues: QueueView[] }) {
  return (
    <div class="table-wrap">
      <table data-table="queues">
        <thead>
          <tr>
            <th scope="col">Queue</th>
            {SHOWN.map((s) => <th key={s} scope="col" class="num">{s}</th>)}
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
        Queues and nodes are shared by every tenant, so they are shown to installation-wide people
        only.
      </p>
    </>
  );
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

function seconds(ms: number): string {
  return ms < 1000 ? "<1 s" : `${Math.round(ms / 1000)} s`;
}
