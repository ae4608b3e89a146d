/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Work pages: the human work queues the schedules file declares
 * (`work_queues:`), through the door of `src/admin/work.ts`.
 *
 * - `/work`: the queues the person may work (the action table's roles or
 *   the queue's `roles:`), each with its open and claimed items and the
 *   oldest one's age, in the person's scope (a tenant's person: their
 *   tenant's items only).
 * - `/work/:queue`: the open items in the order people get them (the
 *   store's), each with its score and the inputs that set it as the rule
 *   names them (`urgency 82: EUR 1,900, 6 days old, evidence missing`), its
 *   `show:` fields and its claim (an expired one shown as expired); "Next"
 *   claims the best free item in one conditional write and goes to it.
 *   The claimed count and a "claims changed" notice follow the tab's live
 *   stream (`live.ts`'s `work` part).
 * - `/work/:queue/:key`: the item's data, score, history (who, when, what,
 *   why) and actions: claim, release, skip, reassign, and each declared
 *   action with a reason; the action's outcome is its job, linked.
 *
 * A button is drawn only for a person the route table (`work.*`) and the
 * claim mode let act: on `required` the declared actions only for the
 * claim's holder. The door decides again on every POST (403 or 409).
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import { iso } from "../admin/job_json.ts";
import {
  claimWorkItem,
  doWorkItem,
  listWorkItems,
  mayWork,
  nextWorkItem,
  reassignWorkItem,
  releaseWorkItem,
  skipWorkItem,
  type WorkActor,
  workItemDetail,
  workQueueFor,
  workQueuesOverview,
  WorkRefused,
} from "../admin/work.ts";
import { type Principal, queueRole } from "../http/access.ts";
import { when } from "../schedule/describe.ts";
import type { WorkItemEvent } from "../store/store.ts";
import type { WorkItemView } from "../workqueue/items.ts";
import type { WorkBulk, WorkQueueDefinition } from "../workqueue/types.ts";
import { consoleRouteOf } from "./access.ts";
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
import { errorPage } from "./error_page.tsx";
import { WORK_REFUSAL_STATUS } from "../http/api/work.ts";
import { Fragment, h } from "./jsx.ts";

/** The most items a listing draws; past it, the page says how many it left out. */
export const WORK_LIST_LIMIT = 500;

/** Registers the Work pages and their actions. */
export function registerWork(router: ConsoleRouter): void {
  router.nav({ path: "/work", label: "Work", order: NAV_ORDER.work });
  router.page("GET", "/work", async (c, p) => await indexPage(router, c, p));
  router.page("GET", "/work/:queue", async (c, p) => {
    const queue = find(router, c.req.param("queue") ?? "", p);
    if (queue instanceof WorkRefused) return await refusedPage(c, queue);
    return await listingPage(router, c, p, queue);
  });
  router.page("GET", "/work/:queue/:key", async (c, p) => {
    const queue = find(router, c.req.param("queue") ?? "", p);
    if (queue instanceof WorkRefused) return await refusedPage(c, queue);
    return await itemPage(router, c, p, queue, c.req.param("key") ?? "");
  });

  router.page("POST", "/work/:queue/next", async (c, p) => {
    const queue = find(router, c.req.param("queue") ?? "", p);
    if (queue instanceof WorkRefused) return await refusedPage(c, queue);
    try {
      const item = await nextWorkItem(router.store, queue, actor(router, p, null));
      if (item === null) {
        return await listingPage(router, c, p, queue, {
          status: 409,
          message: "No free item is left in this queue for you.",
        });
      }
      return c.redirect(pathTo("/work", queue.id, item.key), 303);
    } catch (error) {
      return await answerRefusal(c, error);
    }
  });

  /** An action on one item: reads the form's reason, calls the door, back to the item. */
  const itemAction = (
    path: string,
    needsReason: boolean,
    act: (
      queue: WorkQueueDefinition,
      key: string,
      who: WorkActor,
      form: URLSearchParams,
      c: Ctx,
    ) => Promise<string | null | void>,
  ) => {
    router.page("POST", path, async (c, p) => {
      const queue = find(router, c.req.param("queue") ?? "", p);
      if (queue instanceof WorkRefused) return await refusedPage(c, queue);
      const key = c.req.param("key") ?? "";
      const form = await readForm(c);
      if (form === null) return await errorPage(c, 400, "The form could not be read.");
      const reason = formReason(form, needsReason);
      if ("refused" in reason) {
        return await itemPage(router, c, p, queue, key, { status: 400, message: reason.refused });
      }
      try {
        const outcome = await act(queue, key, actor(router, p, reason.reason), form, c);
        return c.redirect(
          pathTo("/work", queue.id, key) + (outcome ? `?done=${encodeURIComponent(outcome)}` : ""),
          303,
        );
      } catch (error) {
        if (error instanceof WorkRefused && error.item !== null) {
          return await itemPage(router, c, p, queue, key, {
            status: WORK_REFUSAL_STATUS[error.code],
            message: error.message,
          });
        }
        return await answerRefusal(c, error);
      }
    });
  };

  itemAction("/work/:queue/:key/claim", false, async (queue, key, who) => {
    await claimWorkItem(router.store, queue, key, who, {
      ...(who.reason === null ? {} : { breakReason: who.reason }),
    });
  });
  itemAction("/work/:queue/:key/release", false, async (queue, key, who) => {
    await releaseWorkItem(router.store, queue, key, who);
  });
  itemAction("/work/:queue/:key/skip", false, async (queue, key, who) => {
    await skipWorkItem(router.store, queue, key, who);
  });
  itemAction("/work/:queue/:key/reassign", true, async (queue, key, who, form) => {
    const to = (form.get("to") ?? "").trim();
    if (to === "") throw new WorkRefused("work-person-unknown", "Say whom to hand the item to.");
    await reassignWorkItem(router.store, queue, key, to, who);
  });
  itemAction("/work/:queue/:key/do/:action", true, async (queue, key, who, form, c) => {
    const fence = Number(form.get("fence") ?? "");
    const done = await doWorkItem(router.store, queue, key, c.req.param("action") ?? "", who, {
      ...(Number.isSafeInteger(fence) && fence > 0 ? { fence } : {}),
      ...(queue.claim === "optional" && who.reason !== null ? { breakReason: who.reason } : {}),
    });
    return String(done.jobId);
  });
}

/** The queue `id` of the schedules file, or the door's refusal. */
function find(
  router: ConsoleRouter,
  id: string,
  p: Principal,
): WorkQueueDefinition | WorkRefused {
  try {
    return workQueueFor(router.workQueues(), id, p.roles);
  } catch (error) {
    if (error instanceof WorkRefused) return error;
    throw error;
  }
}

function actor(router: ConsoleRouter, p: Principal, reason: string | null): WorkActor {
  return {
    person: p.name,
    roles: p.roles,
    tenant: p.tenant,
    door: "console",
    reason,
    now: router.clock.now(),
  };
}

async function refusedPage(c: Ctx, error: WorkRefused): Promise<Response> {
  return await errorPage(c, WORK_REFUSAL_STATUS[error.code], error.message);
}

async function answerRefusal(c: Ctx, error: unknown): Promise<Response> {
  if (error instanceof WorkRefused) return await refusedPage(c, error);
  throw error;
}

/** Whether `p` may take `action` on `queue` here: the route table's roles and the door's. */
function may(p: Principal, queue: WorkQueueDefinition, path: string, action: string): boolean {
  const route = consoleRouteOf("POST", path);
  if (!route?.action || route.action !== action) return false;
  return mayWork(queue, p.roles, route.action);
}

/**
 * Whether `p` may preview (and ask a code for) `queue`'s bulk money: the
 * route table's roles (`bulk.preview`, or a queue's own role where the
 * route admits them) and the door's (`mayWork`: whoever works the queue).
 */
export function mayPreviewBulk(p: Principal, queue: WorkQueueDefinition): boolean {
  return mayUseRoute(p, "/work/:queue/bulk/:bulk/preview", "bulk.preview") &&
    mayWork(queue, p.roles, "work.do");
}

/**
 * Whether the console's `POST path` (whose action is `action`) lets `p`
 * through: by the action's roles, or by a queue's own role where the route
 * says the door decides per queue.
 */
export function mayUseRoute(p: Principal, path: string, action: string): boolean {
  const route = consoleRouteOf("POST", path);
  if (route?.action !== action) return false;
  return mayTake(p.roles, route.action) ||
    (route.queueRoles === true && p.roles.some(queueRole));
}

/** The bulks of `queue` that move money: what the listing offers to preview. */
export function moneyBulks(queue: WorkQueueDefinition): WorkBulk[] {
  return queue.bulk.filter((b) => b.money !== null && b.confirmBy !== null);
}

/** Whether `p` works `queue`: the door's roles (the action table's or the queue's). */
function works(p: Principal, queue: WorkQueueDefinition): boolean {
  return mayWork(queue, p.roles, queue.claim === "disabled" ? "work.do" : "work.claim");
}

async function indexPage(router: ConsoleRouter, c: Ctx, p: Principal): Promise<Response> {
  const now = router.clock.now();
  const queues = await workQueuesOverview(router.store, router.workQueues(), {
    tenant: p.tenant,
    now,
  });
  const mine = queues.filter((q) => works(p, q.queue));
  const others = queues.filter((q) => !works(p, q.queue));
  return await router.render(c, p, {
    title: "Work",
    body: (
      <>
        {queues.length === 0
          ? <p class="note">The schedules file declares no work queue (`work_queues:`).</p>
          : mine.length === 0
          ? <p class="note">No work queue is yours to work (your roles: {p.roles.join(", ")}).</p>
          : (
            <div class="table-wrap">
              <table data-table="work-queues" class="work-queues">
                <thead>
                  <tr>
                    <th scope="col">Queue</th>
                    <th scope="col">Claims</th>
                    <th scope="col" class="num">Open</th>
                    <th scope="col" class="num">Claimed</th>
                    <th scope="col">Oldest</th>
                  </tr>
                </thead>
                <tbody>
                  {mine.map((q) => (
                    <tr key={q.queue.id} data-work-queue={q.queue.id}>
                      <th scope="row">
                        <a href={pathTo("/work", q.queue.id)}>{q.queue.id}</a>
                      </th>
                      <td>{q.queue.claim}</td>
                      <td class="num" data-live={JSON.stringify(["work", q.queue.id, "open"])}>
                        {q.open.toLocaleString("en-US")}
                      </td>
                      <td class="num" data-live={JSON.stringify(["work", q.queue.id, "claimed"])}>
                        {q.claimed.toLocaleString("en-US")}
                      </td>
                      <td>{q.oldestAgeMs === null ? "-" : `${age(q.oldestAgeMs)} old`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        {others.length > 0
          ? (
            <p class="note" data-note="read-only-queues">
              Read only to you: {others.map((q, i) => (
                <>
                  {i > 0 ? ", " : ""}
                  <a href={pathTo("/work", q.queue.id)}>{q.queue.id}</a>
                </>
              ))}
            </p>
          )
          : null}
      </>
    ),
  });
}

async function listingPage(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  queue: WorkQueueDefinition,
  problem?: { status: PageContent["status"]; message: string },
): Promise<Response> {
  const now = router.clock.now();
  const who = { tenant: p.tenant, now };
  const [overview] = await workQueuesOverview(router.store, [queue], who);
  const items = await listWorkItems(router.store, queue, who, { limit: WORK_LIST_LIMIT });
  const claims = queue.claim !== "disabled";
  const next = claims && may(p, queue, "/work/:queue/next", "work.claim");
  const claim = claims && may(p, queue, "/work/:queue/:key/claim", "work.claim");
  const bulks = mayPreviewBulk(p, queue) ? moneyBulks(queue) : [];
  return await router.render(c, p, {
    title: `Work: ${queue.id}`,
    ...(problem ? { status: problem.status } : {}),
    body: (
      <>
        {problem ? <p class="message error" role="alert">{problem.message}</p> : null}
        <p class="work-summary">
          Claims {queue.claim}
          {claims ? `, a claim holds ${age(queue.leaseMs)}` : ""}.{" "}
          {queue.score ? `Ordered by ${queue.score.rule}.` : "Unscored: oldest first."}{" "}
          <span data-live={JSON.stringify(["work", queue.id, "open"])}>{overview!.open}</span> open,
          {" "}
          <span data-live={JSON.stringify(["work", queue.id, "claimed"])}>{overview!.claimed}</span>
          {" "}
          claimed.
        </p>
        <p
          class="message live-changed"
          role="status"
          hidden
          data-live-changed={JSON.stringify(["work", queue.id, "marker"])}
          data-live-since={overview!.marker}
        >
          Claims or items changed since this page was drawn:{" "}
          <a href={pathTo("/work", queue.id)}>refresh</a>.
        </p>
        {next
          ? (
            <form method="post" action={pathTo("/work", queue.id, "next")} class="work-next">
              <button type="submit" data-action="next">Next</button>
            </form>
          )
          : null}
        {bulks.length > 0
          ? (
            <form
              method="get"
              id="work-bulk-select"
              action={pathTo("/work", queue.id, "bulk", bulks[0]!.id)}
              class="work-bulk"
            >
              {bulks.map((b) => (
                <button
                  key={b.id}
                  type="submit"
                  formaction={pathTo("/work", queue.id, "bulk", b.id)}
                  data-action={`bulk-${b.id}`}
                >
                  Bulk {b.id}…
                </button>
              ))}
              <span class="note">
                of the ticked items, or (none ticked) of every open item no claim holds: a preview
                first, then a code from outside this session.
              </span>
            </form>
          )
          : null}
        {items.length === 0 ? <p class="note">No open item.</p> : (
          <div class="table-wrap">
            <table data-table="work-items" class="work-items">
              <thead>
                <tr>
                  {bulks.length > 0
                    ? (
                      <th scope="col">
                        <span class="visually-hidden">Select</span>
                      </th>
                    )
                    : null}
                  <th scope="col">Item</th>
                  <th scope="col">Score</th>
                  {queue.show.map((f) => <th key={f} scope="col">{f}</th>)}
                  <th scope="col">Claim</th>
                </tr>
              </thead>
              <tbody>
                {items.map((item) => (
                  <tr key={item.key} data-item={item.key}>
                    {bulks.length > 0
                      ? (
                        <td class="select">
                          {item.claim === null
                            ? (
                              <input
                                type="checkbox"
                                name="key"
                                value={item.key}
                                form="work-bulk-select"
                                aria-label={`select ${item.key}`}
                              />
                            )
                            : null}
                        </td>
                      )
                      : null}
                    <th scope="row">
                      <a href={pathTo("/work", queue.id, item.key)}>{item.key}</a>
                      {item.tenant !== null && p.tenant === null
                        ? <span class="note">{item.tenant}</span>
                        : null}
                    </th>
                    <td data-score>{scoreText(queue, item)}</td>
                    {queue.show.map((f) => <td key={f}>{shown(item, f)}</td>)}
                    <td data-claim>
                      <Claim item={item} now={now} />
                      {claim && item.claim === null
                        ? (
                          <form
                            method="post"
                            action={pathTo("/work", queue.id, item.key, "claim")}
                            class="inline-action"
                          >
                            <button type="submit" data-action="claim">Claim</button>
                          </form>
                        )
                        : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {overview!.open > items.length
          ? (
            <p class="note">
              The first {items.length.toLocaleString("en-US")} of{" "}
              {overview!.open.toLocaleString("en-US")} open items.
            </p>
          )
          : null}
      </>
    ),
  });
}

async function itemPage(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  queue: WorkQueueDefinition,
  key: string,
  problem?: { status: PageContent["status"]; message: string },
): Promise<Response> {
  const now = router.clock.now();
  const detail = await workItemDetail(router.store, queue, key, { tenant: p.tenant, now });
  if (detail === null) {
    return await errorPage(c, 404, `No item ${JSON.stringify(key)} in work queue "${queue.id}".`);
  }
  const { item, history } = detail;
  const open = item.state === "open";
  const claims = queue.claim !== "disabled";
  const mine = item.claim?.owner === p.name;
  const heldByOther = item.claim !== null && !mine;
  const canClaim = open && claims && !mine &&
    may(p, queue, "/work/:queue/:key/claim", "work.claim") &&
    (!heldByOther || queue.claim === "optional");
  const canRelease = open && claims && mine &&
    may(p, queue, "/work/:queue/:key/release", "work.release");
  const canSkip = open && claims && !heldByOther &&
    may(p, queue, "/work/:queue/:key/skip", "work.skip");
  const canReassign = open && claims &&
    may(p, queue, "/work/:queue/:key/reassign", "work.reassign");
  const canDo = open && may(p, queue, "/work/:queue/:key/do/:action", "work.do") &&
    (queue.claim !== "required" || mine);
  const done = c.req.query("done");
  return await router.render(c, p, {
    title: `${queue.id}: ${item.key}`,
    ...(problem ? { status: problem.status } : {}),
    body: (
      <>
        {problem ? <p class="message error" role="alert">{problem.message}</p> : null}
        {done && item.actionJobId !== null && done === String(item.actionJobId)
          ? (
            <p class="message" role="status" data-outcome>
              Done: {item.outcome} runs as job{" "}
              <a href={pathTo("/jobs", item.actionJobId)}>#{item.actionJobId}</a>.
            </p>
          )
          : null}
        <p>
          <a href={pathTo("/work", queue.id)}>Back to {queue.id}</a>
        </p>
        <dl class="facts work-item">
          <dt>State</dt>
          <dd data-state>{item.state}</dd>
          <dt>Score</dt>
          <dd data-score>{scoreText(queue, item)}</dd>
          {item.terms.length > 0
            ? (
              <>
                <dt>How</dt>
                <dd>
                  <ul class="terms">
                    {item.terms.map((t) => (
                      <li key={t.input}>
                        {t.input} = {termValue(t.input, t.value)} × {t.weight} → {round(t.adds)}
                      </li>
                    ))}
                  </ul>
                  {queue.score ? <span class="note">{queue.score.rule}</span> : null}
                </dd>
              </>
            )
            : null}
          <dt>Requested</dt>
          <dd>
            <time datetime={iso(item.requestedAt) ?? ""}>{when(item.requestedAt, now)}</time> (
            {age(item.ageMs)} old)
          </dd>
          {item.tenant !== null
            ? (
              <>
                <dt>Tenant</dt>
                <dd>{item.tenant}</dd>
              </>
            )
            : null}
          <dt>Claim</dt>
          <dd data-claim>
            <Claim item={item} now={now} />
          </dd>
          {item.outcome !== null
            ? (
              <>
                <dt>Outcome</dt>
                <dd data-outcome-field>
                  {item.outcome} by {item.doneBy ?? "?"}
                  {item.doneReason ? `: ${item.doneReason}` : ""}
                  {item.actionJobId !== null
                    ? (
                      <>
                        {" "}— job{" "}
                        <a href={pathTo("/jobs", item.actionJobId)}>#{item.actionJobId}</a>{" "}
                        <span class={`badge state-${item.actionState ?? "unknown"}`}>
                          {item.actionState ?? "gone"}
                        </span>
                      </>
                    )
                    : null}
                </dd>
              </>
            )
            : null}
        </dl>
        <h2>Data</h2>
        <pre class="work-data">{JSON.stringify(item.data, null, 2)}</pre>
        {canClaim || canRelease || canSkip || canReassign || canDo
          ? (
            <section class="work-actions">
              <h2>Actions</h2>
              {canClaim
                ? (
                  <ItemForm queue={queue} item={item} path="claim" label="Claim">
                    {heldByOther
                      ? <ReasonInput id="reason-claim" placeholder="why break the hold" required />
                      : null}
                  </ItemForm>
                )
                : null}
              {canRelease
                ? (
                  <ItemForm queue={queue} item={item} path="release" label="Release">
                    <ReasonInput id="reason-release" placeholder="why (optional)" />
                  </ItemForm>
                )
                : null}
              {canSkip
                ? (
                  <ItemForm queue={queue} item={item} path="skip" label="Skip">
                    <ReasonInput id="reason-skip" placeholder="why (optional)" />
                  </ItemForm>
                )
                : null}
              {canReassign
                ? (
                  <ItemForm queue={queue} item={item} path="reassign" label="Reassign">
                    <label for="reassign-to">to</label>
                    <input id="reassign-to" name="to" required maxlength={200} />
                    <ReasonInput id="reason-reassign" placeholder="why reassign" required />
                  </ItemForm>
                )
                : null}
              {canDo
                ? queue.actions.map((a) => (
                  <form
                    key={a.id}
                    method="post"
                    action={pathTo("/work", queue.id, item.key, "do", a.id)}
                    class="inline-action"
                  >
                    {item.claim && mine
                      ? <input type="hidden" name="fence" value={String(item.claim.fence)} />
                      : null}
                    <ReasonInput
                      id={`reason-do-${a.id}`}
                      placeholder={heldByOther ? `why ${a.id} (breaks the hold)` : `why ${a.id}`}
                      required
                    />
                    <button type="submit" data-action={`do-${a.id}`}>{a.id}</button>
                  </form>
                ))
                : null}
            </section>
          )
          : null}
        {open && queue.claim === "required" && !mine &&
            mayWork(queue, p.roles, "work.do") && queue.actions.length > 0
          ? (
            <p class="note" data-note="claim-first">
              This queue requires a claim: claim the item to act on it.
            </p>
          )
          : null}
        <h2>History</h2>
        <History events={history} now={now} />
      </>
    ),
  });
}

function ItemForm(
  props: {
    queue: WorkQueueDefinition;
    item: WorkItemView;
    path: string;
    label: string;
    children?: unknown;
  },
) {
  return (
    <form
      method="post"
      action={pathTo("/work", props.queue.id, props.item.key, props.path)}
      class="inline-action"
    >
      {props.children}
      <button type="submit" data-action={props.path}>{props.label}</button>
    </form>
  );
}

function ReasonInput(props: { id: string; placeholder: string; required?: boolean }) {
  return (
    <>
      <label for={props.id} class="visually-hidden">{props.placeholder}</label>
      <input
        id={props.id}
        name="reason"
        maxlength={MAX_REASON}
        placeholder={props.placeholder}
        required={props.required === true}
      />
    </>
  );
}

function Claim(props: { item: WorkItemView; now: number }) {
  const { item, now } = props;
  if (item.claim) {
    return (
      <span data-claim-owner={item.claim.owner}>
        {item.claim.owner}, until{" "}
        <time datetime={iso(item.claim.expiresAt) ?? ""}>{when(item.claim.expiresAt, now)}</time>
      </span>
    );
  }
  if (item.lapsed) {
    return (
      <span class="badge warn" data-claim-expired={item.lapsed.owner}>
        expired: {item.lapsed.owner}'s claim ran out {when(item.lapsed.expiredAt, now)}
      </span>
    );
  }
  return <span class="note">free</span>;
}

const KIND_TEXT: Readonly<Record<string, string>> = {
  expired: "claim expired (returned to the queue)",
  released: "released",
  broken: "hold broken",
};

function History(props: { events: WorkItemEvent[]; now: number }) {
  if (props.events.length === 0) return <p class="note">Nothing recorded.</p>;
  return (
    <div class="table-wrap">
      <table data-table="work-history" class="work-history">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {props.events.map((e) => (
            <tr key={String(e.id)} data-event={e.kind}>
              <td>
                <time datetime={iso(e.at) ?? ""}>{when(e.at, props.now)}</time>
              </td>
              <td>{e.actor}</td>
              <td>
                <span class={e.kind === "expired" ? "badge warn" : "badge"}>
                  {KIND_TEXT[e.kind] ?? e.kind}
                </span>
                {detailText(e)}
              </td>
              <td class="why">{e.reason ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The details of an event a person reads (instants as UTC), as text. */
function detailText(e: WorkItemEvent): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(e.detail)) {
    if (v === null || typeof v === "object" || k === "ruleVersion" || k === "duplicate") continue;
    const instant = typeof v === "number" && (/At$/.test(k) || k === "until");
    parts.push(`${k} ${instant ? iso(v) : String(v)}`);
  }
  if (e.fence !== null) parts.push(`fence ${e.fence}`);
  return parts.length === 0 ? "" : ` (${parts.join(", ")})`;
}

/**
 * The score and the inputs that set it, as the rule names them:
 * `urgency 82: EUR 1,900, 6 days old, evidence missing`; `-` unscored.
 */
export function scoreText(queue: WorkQueueDefinition, item: WorkItemView): string {
  if (item.score === null || queue.score === null) return "-";
  const inputs = item.terms.map((t) => inputText(queue, item, t.input, t.value));
  return `${ruleLabel(queue.score.rule)} ${Math.round(item.score)}` +
    (inputs.length === 0 ? "" : `: ${inputs.join(", ")}`);
}

/** `rule/dispute.urgency-score` -> `urgency`. */
function ruleLabel(rule: string): string {
  const last = rule.split(/[/.]/).pop() ?? rule;
  return last.replace(/[-_]score$/, "") || rule;
}

function inputText(
  queue: WorkQueueDefinition,
  item: WorkItemView,
  input: string,
  value: unknown,
): string {
  if (input === "age") return `${age(Number(value))} old`;
  const words = input.replaceAll("_", " ");
  if (typeof value === "boolean") return value ? words : `no ${words}`;
  if (typeof value === "number") {
    const currency = currencyOf(queue, item, input);
    return currency === null
      ? `${words} ${value.toLocaleString("en-US")}`
      : `${currency} ${value.toLocaleString("en-US")}`;
  }
  if (value === null || value === undefined) return `${words} none`;
  return `${words} ${typeof value === "string" ? value : JSON.stringify(value)}`;
}

/** The currency an amount input is in: a bulk's `money:` pairing names it, else `currency`. */
function currencyOf(queue: WorkQueueDefinition, item: WorkItemView, input: string): string | null {
  const data = (item.data ?? {}) as Record<string, unknown>;
  const money = queue.bulk.find((b) => b.money?.amount === input)?.money;
  const field = money?.currency ?? (input === "amount" ? "currency" : null);
  const value = field === null ? undefined : data[field];
  return typeof value === "string" && /^[A-Z]{3}$/.test(value) ? value : null;
}

function termValue(input: string, value: unknown): string {
  return input === "age" ? age(Number(value)) : JSON.stringify(value) ?? "null";
}

/** A show: field of the item: `age` is the item's age now; others its data's value. */
function shown(item: WorkItemView, field: string): string {
  if (field === "age") return age(item.ageMs);
  const value = ((item.data ?? {}) as Record<string, unknown>)[field];
  if (value === undefined || value === null) return "-";
  if (typeof value === "number") return value.toLocaleString("en-US");
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** `6 days`, `5 hours`, `12 minutes`, `40 seconds`. */
export function age(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, "day"],
    [3_600_000, "hour"],
    [60_000, "minute"],
    [1000, "second"],
  ];
  for (const [size, name] of units) {
    if (ms >= size) {
      const n = Math.floor(ms / size);
      return `${n} ${name}${n === 1 ? "" : "s"}`;
    }
  }
  return "0 seconds";
}

function round(n: number): string {
  return (Math.round(n * 100) / 100).toLocaleString("en-US");
}
