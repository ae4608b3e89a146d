/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Queues page at `/queues`: every queue anyone knows of with its jobs
 * by state, whether it is paused and by whom, when and why (from the audit
 * trail, as `jobs status` shows it), and the live nodes serving it; and
 * Pause / Resume with a reason (`POST /queues/:name/pause|resume`, through
 * `setQueuePaused`, audited as the person).
 *
 * Queues are installation-wide (a queue holds every tenant's jobs, and a
 * pause stops them all): a tenant's person sees a note and no queue, and
 * the actions answer them 403, as `/api/v1/queues` does.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import { iso } from "../admin/job_json.ts";
import { nodesView } from "../admin/nodes.ts";
import { queuesView, type QueueView, setQueuePaused } from "../admin/queues.ts";
import { storedConfig } from "../admin/schedules.ts";
import type { Principal } from "../http/access.ts";
import { JOB_STATES } from "../kernel/types.ts";
import { when } from "../schedule/describe.ts";
import { errorPage } from "./error_page.tsx";
import {
  type ConsoleRouter,
  type Ctx,
  formReason,
  MAX_REASON,
  NAV_ORDER,
  type PageContent,
  pathTo,
  readForm,
} from "./common.ts";
import { Fragment, h } from "./jsx.ts";

/** Registers the Queues page and its actions. */
export function registerQueues(router: ConsoleRouter): void {
  router.nav({ path: "/queues", label: "Queues", order: NAV_ORDER.queues });
  router.page("GET", "/queues", async (c, p) => await queuesPage(router, c, p));

  for (const action of ["pause", "resume"] as const) {
    router.page("POST", `/queues/:name/${action}`, async (c, p) => {
      if (p.tenant !== null) {
        return await errorPage(
          c,
          403,
          "Queues are shared by every tenant: a person of one tenant may not pause or resume them.",
        );
      }
      const name = c.req.param("name") ?? "";
      const form = await readForm(c);
      if (form === null) return await errorPage(c, 400, "The form could not be read.");
      const reason = formReason(form, true);
      if ("refused" in reason) {
        return await queuesPage(router, c, p, { status: 400, message: reason.refused });
      }
      const known = await view(router);
      if (!known.some((q) => q.name === name)) {
        return await queuesPage(router, c, p, {
          status: 404,
          message: `No queue ${JSON.stringify(name)} is used by a job, stored or served by a node.`,
        });
      }
      await setQueuePaused(router.store, name, action === "pause", router.who(p, reason.reason));
      return c.redirect("/queues", 303);
    });
  }
}

async function view(router: ConsoleRouter): Promise<QueueView[]> {
  const { store } = router;
  return await queuesView(
    store,
    await storedConfig(store),
    await nodesView(store, router.clock.now()),
  );
}

async function queuesPage(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  problem?: { status: PageContent["status"]; message: string },
): Promise<Response> {
  const title = "Queues";
  if (p.tenant !== null) {
    return await router.render(c, p, {
      title,
      body: (
        <p class="note" data-note="installation-wide">
          Queues are shared by every tenant (a pause stops every tenant's jobs), so they are shown
          to installation-wide people only.
        </p>
      ),
    });
  }
  const queues = await view(router);
  const now = router.clock.now();
  const acts = mayTake(p.roles, "queue.pause");
  return await router.render(c, p, {
    title,
    ...(problem ? { status: problem.status } : {}),
    body: (
      <>
        {problem ? <p class="message error" role="alert">{problem.message}</p> : null}
        {queues.length === 0
          ? <p class="note">No queue holds a job yet.</p>
          : (
            <div class="table-wrap">
              <table data-table="queues" class="queues">
                <thead>
                  <tr>
                    <th scope="col">Queue</th>
                    {JOB_STATES.map((s) => <th key={s} scope="col" class="num">{s}</th>)}
                    <th scope="col">Nodes</th>
                    <th scope="col">Paused</th>
                  </tr>
                </thead>
                <tbody>
                  {queues.map((q) => (
                    <tr key={q.name} data-queue={q.name}>
                      <th scope="row">{q.name}</th>
                      {JOB_STATES.map((s) => (
                        <td
                          key={s}
                          class="num"
                          data-live={JSON.stringify(["queues", q.name, s])}
                        >
                          {q.counts[s].toLocaleString("en-US")}
                        </td>
                      ))}
                      <td>
                        {Object.entries(q.nodes).map(([node, n]) => `${node} (${n})`).join(", ") ||
                          "-"}
                      </td>
                      <td class="paused">
                        <Paused q={q} now={now} />
                        {acts ? <QueueAction q={q} /> : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        <p class="note">
          A pause holds for every process on the store: running jobs finish, nothing new is claimed.
          A queue paused in the schedules file is paused again when a daemon starts or reloads.
        </p>
      </>
    ),
  });
}

function Paused(props: { q: QueueView; now: number }) {
  const { q, now } = props;
  if (!q.paused) {
    return q.pausedInFile
      ? <span class="note">paused in the file (applied at start)</span>
      : <span class="note">no</span>;
  }
  const pause = q.pause;
  return (
    <>
      <span class="badge warn">paused</span>{" "}
      <span data-paused-by>{pause?.actor ? `by ${pause.actor}` : "by the file or a library"}</span>
      {pause
        ? (
          <>
            {" "}
            <time datetime={iso(pause.at) ?? ""}>{when(pause.at, now)}</time>
          </>
        )
        : null}
      {pause?.reason ? <div class="why" data-paused-why>{pause.reason}</div> : null}
    </>
  );
}

function QueueAction(props: { q: QueueView }) {
  const { q } = props;
  const action = q.paused ? "resume" : "pause";
  const id = `reason-${action}-${encodeURIComponent(q.name)}`;
  return (
    <form method="post" action={pathTo("/queues", q.name, action)} class="inline-action">
      <label for={id} class="visually-hidden">Why {action} {q.name}</label>
      <input
        id={id}
        name="reason"
        required
        maxlength={MAX_REASON}
        placeholder={q.paused ? "why resume" : "why pause"}
      />
      <button type="submit" data-action={action}>{q.paused ? "Resume" : "Pause"}</button>
    </form>
  );
}
