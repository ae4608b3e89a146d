/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The bulk money pages of the work queues: a queue's `bulk:` action run on
 * an exact, previewed set of items, confirmed by a code from outside the
 * session, through the door of `src/admin/work_bulk.ts`.
 *
 * - `GET /work/:queue/bulk/:bulk`: what the bulk does and what it selects
 *   (the keys ticked on the listing, or every open, unclaimed item), and the
 *   button that previews it. Nothing is computed here: a preview is audited,
 *   so it is a POST.
 * - `POST /work/:queue/bulk/:bulk/preview`: the preview (`previewWorkBulk`):
 *   every item with its amount, the total per currency ("3 items totalling
 *   EUR 2,400.00 and USD 42.50"), the manifest's hash shown short, and "Send
 *   the code".
 * - `POST /bulk-money/:manifest/request`: a code bound to the manifest, sent
 *   through the bulk's `confirm_by:` (`requestWorkBulk`); the page says where
 *   it went (the channel's kind), never the code.
 * - `GET /bulk-money/:manifest`: the manifest's newest request (items,
 *   totals, requester, channel, expiry, tries left) and, for a person who
 *   may confirm it (the approver role; with `second_person` not the
 *   requester), the confirmation form.
 * - `POST /bulk-money/:manifest/confirm`: the code (`confirmWorkBulk`): the
 *   exact previewed set runs, one job per item, each linked; a refusal
 *   (wrong code with the tries left, locked, expired, used, the items
 *   changed since the preview, self-approval) is a message with its code
 *   (`bulk-<why>`) and status, never the code given.
 *
 * A button is drawn only for a person the route table and the door let
 * act; the door decides again on every POST.
 *
 * @module
 */

import { iso } from "../admin/job_json.ts";
import { type WorkActor, workQueueFor, WorkRefused } from "../admin/work.ts";
import {
  confirmWorkBulk,
  previewWorkBulk,
  requestWorkBulk,
  workBulk,
  type WorkBulkPreview,
  workBulkRequest,
  type WorkBulkRun,
} from "../admin/work_bulk.ts";
import type { Principal } from "../http/access.ts";
import { bulkRefusalStatus, WORK_REFUSAL_STATUS } from "../http/api/work.ts";
import { when } from "../schedule/describe.ts";
import type { BulkRequest } from "../store/bulk_request_types.ts";
import { APPROVER_ROLE, BulkRefused, CODE_TRIES } from "../workqueue/confirm.ts";
import { looksLikeManifest, MAX_MANIFEST_ITEMS } from "../workqueue/manifest.ts";
import type { WorkBulk, WorkQueueDefinition } from "../workqueue/types.ts";
import { type ConsoleRouter, type Ctx, pathTo, readForm } from "./common.ts";
import { errorPage } from "./error_page.tsx";
import { Fragment, h } from "./jsx.ts";
import { mayPreviewBulk, mayUseRoute, scoreText } from "./work.tsx";

/** How many hex digits of a manifest's hash a page shows. */
export const MANIFEST_SHORT = 12;

/** What a page says about a refusal: its message, its stable code and status. */
interface Problem {
  status: 400 | 403 | 404 | 409;
  code: string;
  message: string;
}

/** A refusal of either door as a {@linkcode Problem}; anything else is thrown on. */
function problemOf(error: unknown): Problem {
  if (error instanceof WorkRefused) {
    return { status: WORK_REFUSAL_STATUS[error.code], code: error.code, message: error.message };
  }
  if (error instanceof BulkRefused) {
    return {
      status: bulkRefusalStatus(error.why),
      code: `bulk-${error.why}`,
      message: error.message,
    };
  }
  throw error;
}

/** Whether `p` may confirm `request` now, as the door will decide. */
function mayConfirm(p: Principal, request: BulkRequest, now: number): boolean {
  return mayUseRoute(p, "/bulk-money/:manifest/confirm", "bulk.confirm") && p.kind === "person" &&
    p.roles.includes(APPROVER_ROLE) && request.state === "pending" && request.expiresAt > now &&
    !(request.secondPerson && request.requester === p.name);
}

/** Registers the bulk money pages. */
export function registerWorkBulk(router: ConsoleRouter): void {
  const actor = (p: Principal): WorkActor => ({
    person: p.name,
    roles: p.roles,
    tenant: p.tenant,
    door: "console",
    reason: null,
    now: router.clock.now(),
  });
  /** The queue and bulk of the path, or the refusal's page. */
  const bulkOf = async (c: Ctx, p: Principal) => {
    try {
      const queue = workQueueFor(router.workQueues(), c.req.param("queue") ?? "", p.roles);
      return { queue, bulk: workBulk(queue, c.req.param("bulk") ?? "") };
    } catch (error) {
      const problem = problemOf(error);
      return await errorPage(c, problem.status, problem.message);
    }
  };
  /** The manifest of the path, or a 404 page. */
  const manifestOf = async (c: Ctx) => {
    const manifest = c.req.param("manifest") ?? "";
    if (looksLikeManifest(manifest)) return manifest;
    return await errorPage(c, 404, "That is not a manifest (64 lowercase hex digits).");
  };

  router.page("GET", "/work/:queue/bulk/:bulk", async (c, p) => {
    const found = await bulkOf(c, p);
    if (found instanceof Response) return found;
    const { queue, bulk } = found;
    const keys = [...new Set(c.req.queries("key") ?? [])].filter((k) => k !== "");
    if (keys.length > MAX_MANIFEST_ITEMS) {
      return await errorPage(c, 400, `Select at most ${MAX_MANIFEST_ITEMS} items.`);
    }
    const may = mayPreviewBulk(p, queue);
    return await router.render(c, p, {
      title: `${queue.id}: bulk ${bulk.id}`,
      body: (
        <>
          <p>
            <a href={pathTo("/work", queue.id)}>Back to {queue.id}</a>
          </p>
          <BulkFacts queue={queue} bulk={bulk} />
          <p data-selection>
            {keys.length === 0
              ? "Selected: every open item no claim holds."
              : `Selected: ${keys.length} item${keys.length === 1 ? "" : "s"}: ${keys.join(", ")}.`}
          </p>
          {may
            ? (
              <form
                method="post"
                action={pathTo("/work", queue.id, "bulk", bulk.id, "preview")}
                class="bulk-preview"
              >
                {keys.map((k) => <input key={k} type="hidden" name="key" value={k} />)}
                <button type="submit" data-action="bulk-preview">Preview</button>
                <span class="note">Nothing acts yet: the preview shows every item and total.</span>
              </form>
            )
            : (
              <p class="note" data-note="may-not-preview">
                You may not preview this bulk action (your roles: {p.roles.join(", ")}).
              </p>
            )}
        </>
      ),
    });
  });

  router.page("POST", "/work/:queue/bulk/:bulk/preview", async (c, p) => {
    const found = await bulkOf(c, p);
    if (found instanceof Response) return found;
    const { queue, bulk } = found;
    const form = await readForm(c);
    if (form === null) return await errorPage(c, 400, "The form could not be read.");
    const keys = [...new Set(form.getAll("key"))].filter((k) => k !== "");
    let preview: WorkBulkPreview;
    try {
      preview = await previewWorkBulk(
        router.store,
        router.workQueues(),
        { queue: queue.id, bulk: bulk.id, ...(keys.length > 0 ? { keys } : {}) },
        actor(p),
      );
    } catch (error) {
      const problem = problemOf(error);
      return await router.render(c, p, {
        title: `${queue.id}: bulk ${bulk.id}`,
        status: problem.status,
        body: (
          <>
            <ProblemMessage problem={problem} />
            <p>
              <a href={pathTo("/work", queue.id)}>Back to {queue.id}</a>
            </p>
          </>
        ),
      });
    }
    const hash = preview.manifest.hash;
    return await router.render(c, p, {
      title: `${queue.id}: preview of ${bulk.id}`,
      body: (
        <>
          <p>
            <a href={pathTo("/work", queue.id)}>Back to {queue.id}</a>
          </p>
          <p class="bulk-summary" data-bulk-summary>
            {summary(preview.items.length, preview.totals)}, each by {bulk.action}{" "}
            as one job. Nothing acts yet.
          </p>
          <ManifestFacts hash={hash} />
          <BulkItems
            queue={queue}
            items={preview.items.map((i) => ({
              key: i.key,
              amount: i.amount,
              currency: i.currency,
              score: queue.score === null ? null : scoreText(queue, i.item),
            }))}
          />
          <Totals items={preview.items} totals={preview.totals} />
          <BulkFacts queue={queue} bulk={bulk} />
          {mayUseRoute(p, "/bulk-money/:manifest/request", "bulk.request")
            ? (
              <form
                method="post"
                action={pathTo("/bulk-money", hash, "request")}
                class="bulk-request"
              >
                <button type="submit" data-action="bulk-request">Send the code</button>
                <span class="note">{channelText(bulk.confirmBy!.kind)}</span>
              </form>
            )
            : null}
        </>
      ),
    });
  });

  router.page("GET", "/bulk-money/:manifest", async (c, p) => {
    const manifest = await manifestOf(c);
    if (manifest instanceof Response) return manifest;
    return await requestPage(router, c, p, manifest, {});
  });

  router.page("POST", "/bulk-money/:manifest/request", async (c, p) => {
    const manifest = await manifestOf(c);
    if (manifest instanceof Response) return manifest;
    try {
      const request = await requestWorkBulk(
        router.store,
        { clock: router.clock, smtp: router.smtp ?? null },
        router.workQueues(),
        { manifest },
        actor(p),
      );
      return await requestPage(router, c, p, manifest, { sent: request });
    } catch (error) {
      return await requestPage(router, c, p, manifest, { problem: problemOf(error) });
    }
  });

  router.page("POST", "/bulk-money/:manifest/confirm", async (c, p) => {
    const manifest = await manifestOf(c);
    if (manifest instanceof Response) return manifest;
    const form = await readForm(c);
    if (form === null) return await errorPage(c, 400, "The form could not be read.");
    const code = (form.get("code") ?? "").trim();
    if (code === "") {
      return await requestPage(router, c, p, manifest, {
        problem: { status: 400, code: "bulk-code-missing", message: "Give the code." },
      });
    }
    try {
      const run = await confirmWorkBulk(
        router.store,
        { clock: router.clock },
        router.workQueues(),
        { manifest, code },
        actor(p),
      );
      return await requestPage(router, c, p, manifest, { run });
    } catch (error) {
      return await requestPage(router, c, p, manifest, { problem: problemOf(error) });
    }
  });
}

/**
 * The page of a manifest's newest request: what was sent and where, the
 * items and totals, the confirmation form for who may confirm, and what a
 * confirmation or a refusal came to.
 */
async function requestPage(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  manifest: string,
  shown: { sent?: BulkRequest; run?: WorkBulkRun; problem?: Problem },
): Promise<Response> {
  const now = router.clock.now();
  const request = shown.run?.request ?? shown.sent ??
    await workBulkRequest(router.store, manifest, { tenant: p.tenant });
  let queue: WorkQueueDefinition | null = null;
  if (request !== null) {
    try {
      queue = workQueueFor(router.workQueues(), request.queue, p.roles);
    } catch (error) {
      if (!(error instanceof WorkRefused)) throw error;
    }
  }
  if (request === null || queue === null) {
    const problem = shown.problem ??
      { status: 404, code: "bulk-no-request", message: "No code was asked for this manifest." };
    return await router.render(c, p, {
      title: "Bulk money",
      status: problem.status,
      body: (
        <>
          <ProblemMessage problem={problem} />
          <p>
            <a href="/work">Back to the work queues</a>
          </p>
        </>
      ),
    });
  }
  const problem = shown.problem;
  const previewAgain = problem !== undefined &&
    ["bulk-manifest-changed", "bulk-void", "bulk-locked", "bulk-expired"].includes(problem.code);
  const itemsOpen = request.state === "pending" && request.expiresAt > now;
  return await router.render(c, p, {
    title: `${request.queue}: bulk ${request.bulk}`,
    ...(problem ? { status: problem.status } : {}),
    body: (
      <>
        {problem ? <ProblemMessage problem={problem} /> : null}
        {previewAgain
          ? (
            <p class="note" data-note="preview-again">
              <a href={pathTo("/work", request.queue, "bulk", request.bulk)}>Preview again</a>{" "}
              and ask for a new code.
            </p>
          )
          : null}
        {shown.sent
          ? (
            <p class="message" role="status" data-sent={shown.sent.channel}>
              {sentText(shown.sent)} It works once, until{" "}
              <time datetime={iso(shown.sent.expiresAt) ?? ""}>
                {when(shown.sent.expiresAt, now)}
              </time>. {shown.sent.secondPerson
                ? "Another person with the approver role confirms it on this page."
                : ""}
            </p>
          )
          : null}
        {shown.run ? <RunOutcome run={shown.run} /> : null}
        <p>
          <a href={pathTo("/work", request.queue)}>Back to {request.queue}</a>
        </p>
        <p class="bulk-summary" data-bulk-summary>
          {summary(request.items.length, request.totals)}, asked by {request.requester}.
        </p>
        <dl class="facts bulk-request">
          <dt>Manifest</dt>
          <dd>
            <code title={request.manifest} data-manifest={request.manifest}>
              {request.manifest.slice(0, MANIFEST_SHORT)}
            </code>
          </dd>
          <dt>State</dt>
          <dd data-request-state={request.state}>
            {request.state}
            {request.endedReason ? ` (${request.endedReason})` : ""}
            {request.confirmer ? `, by ${request.confirmer}` : ""}
          </dd>
          <dt>Code</dt>
          <dd>
            {channelSentence(request.channel)}; {itemsOpen
              ? (
                <>
                  works until{" "}
                  <time datetime={iso(request.expiresAt) ?? ""}>
                    {when(request.expiresAt, now)}
                  </time>, <span data-tries-left>{Math.max(0, CODE_TRIES - request.tries)}</span>
                  {" "}
                  tries left
                </>
              )
              : "no longer works"}
          </dd>
          <dt>Second person</dt>
          <dd>
            {request.secondPerson
              ? `yes: an approver other than ${request.requester} confirms`
              : "no: any approver confirms"}
          </dd>
        </dl>
        {mayConfirm(p, request, now)
          ? (
            <form
              method="post"
              action={pathTo("/bulk-money", request.manifest, "confirm")}
              class="bulk-confirm"
              autocomplete="off"
            >
              <label for="bulk-code">Code</label>
              <input
                id="bulk-code"
                name="code"
                required
                autocomplete="one-time-code"
                inputmode="numeric"
                pattern="[0-9]*"
                maxlength={16}
              />
              <button type="submit" data-action="bulk-confirm">
                Confirm: {summary(request.items.length, request.totals)}
              </button>
            </form>
          )
          : itemsOpen
          ? (
            <p class="note" data-note="who-confirms">
              {request.secondPerson && request.requester === p.name
                ? "You asked for this code: another person with the approver role confirms it."
                : `A person with the ${APPROVER_ROLE} role confirms it.`}
            </p>
          )
          : null}
        <BulkItems
          queue={queue}
          items={request.items.map((i) => ({
            key: i.id,
            amount: i.amount,
            currency: i.currency,
            score: null,
          }))}
        />
        <Totals items={request.items} totals={request.totals} />
      </>
    ),
  });
}

function ProblemMessage(props: { problem: Problem }) {
  return (
    <p class="message error" role="alert" data-refusal={props.problem.code}>
      {props.problem.message}
    </p>
  );
}

function RunOutcome(props: { run: WorkBulkRun }) {
  const ran = props.run.outcomes.filter((o) => o.ok).length;
  return (
    <section class="bulk-outcome" data-bulk-outcome>
      <p class="message" role="status">
        Confirmed: {ran} of {props.run.outcomes.length} items run, one job each.
      </p>
      <div class="table-wrap">
        <table data-table="bulk-outcomes">
          <thead>
            <tr>
              <th scope="col">Item</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {props.run.outcomes.map((o) => (
              <tr key={o.key} data-outcome-item={o.key} data-ok={String(o.ok)}>
                <th scope="row">
                  <a href={pathTo("/work", props.run.request.queue, o.key)}>{o.key}</a>
                </th>
                <td>
                  {o.ok
                    ? (
                      <>
                        job <a href={pathTo("/jobs", o.jobId)}>#{o.jobId}</a>
                      </>
                    )
                    : <span class="badge warn" data-refusal={o.code}>{o.message}</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function ManifestFacts(props: { hash: string }) {
  return (
    <p class="bulk-manifest">
      Manifest{" "}
      <code title={props.hash} data-manifest={props.hash}>
        {props.hash.slice(0, MANIFEST_SHORT)}
      </code>{" "}
      <span class="note">(over the item ids, their amounts and the action)</span>
    </p>
  );
}

function BulkFacts(props: { queue: WorkQueueDefinition; bulk: WorkBulk }) {
  const { bulk } = props;
  return (
    <dl class="facts bulk-facts">
      <dt>Action</dt>
      <dd>{bulk.action}, one job per item</dd>
      <dt>Money</dt>
      <dd>
        amount from <code>{bulk.money!.amount}</code>, currency from{" "}
        <code>{bulk.money!.currency}</code>
      </dd>
      <dt>Confirmed by</dt>
      <dd>{channelText(bulk.confirmBy!.kind)}</dd>
      <dt>Second person</dt>
      <dd>{bulk.secondPerson ? "yes: the requester may not confirm" : "no"}</dd>
    </dl>
  );
}

function BulkItems(
  props: {
    queue: WorkQueueDefinition;
    items: { key: string; amount: string; currency: string; score: string | null }[];
  },
) {
  const scored = props.items.some((i) => i.score !== null);
  return (
    <>
      <h2>Items</h2>
      <div class="table-wrap">
        <table data-table="bulk-items" class="bulk-items">
          <thead>
            <tr>
              <th scope="col">Item</th>
              <th scope="col" class="num">Amount</th>
              <th scope="col">Currency</th>
              {scored ? <th scope="col">Score</th> : null}
            </tr>
          </thead>
          <tbody>
            {props.items.map((i) => (
              <tr key={i.key} data-bulk-item={i.key}>
                <th scope="row">
                  <a href={pathTo("/work", props.queue.id, i.key)}>{i.key}</a>
                </th>
                <td class="num" data-amount>{money(i.amount)}</td>
                <td data-currency>{i.currency}</td>
                {scored ? <td>{i.score ?? "-"}</td> : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Totals(
  props: { items: readonly { currency: string }[]; totals: Record<string, string> },
) {
  const currencies = Object.keys(props.totals).sort();
  return (
    <>
      <h2>Totals</h2>
      <div class="table-wrap">
        <table data-table="bulk-totals" class="bulk-totals">
          <thead>
            <tr>
              <th scope="col">Currency</th>
              <th scope="col" class="num">Items</th>
              <th scope="col" class="num">Total</th>
            </tr>
          </thead>
          <tbody>
            {currencies.map((cur) => (
              <tr key={cur} data-total={cur}>
                <th scope="row">{cur}</th>
                <td class="num">{props.items.filter((i) => i.currency === cur).length}</td>
                <td class="num" data-amount>{money(props.totals[cur]!)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** `1900.5` -> `1,900.5`: a decimal string with its whole part grouped by thousands. */
export function money(amount: string): string {
  const match = /^(-?)(\d+)(\.\d+)?$/.exec(amount);
  if (!match) return amount;
  return match[1]! + match[2]!.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (match[3] ?? "");
}

/** `3 items totalling EUR 2,400.00 and USD 42.5`. */
export function summary(count: number, totals: Record<string, string>): string {
  const parts = Object.keys(totals).sort().map((cur) => `${cur} ${money(totals[cur]!)}`);
  const list = parts.length <= 1
    ? parts.join("")
    : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
  return `${count.toLocaleString("en-US")} item${count === 1 ? "" : "s"} totalling ${list}`;
}

/** Where a bulk's code goes, before it is asked for. */
function channelText(kind: string): string {
  switch (kind) {
    case "totp":
      return "the code of an approver's authenticator app (TOTP): nothing is sent";
    case "command":
      return "a code sent by the configured command";
    case "webhook":
      return "a code sent to the configured webhook";
    case "email":
      return "a code sent by e-mail";
    default:
      return kind;
  }
}

/** Where a request's code went. */
function channelSentence(kind: string): string {
  switch (kind) {
    case "totp":
      return "from an approver's authenticator app (TOTP)";
    case "command":
      return "sent by the configured command";
    case "webhook":
      return "sent to the configured webhook";
    case "email":
      return "sent by e-mail";
    default:
      return `sent by ${kind}`;
  }
}

/** What the page says once a code is asked for: where it went, never what it is. */
function sentText(request: BulkRequest): string {
  return request.channel === "totp"
    ? "No code is sent: an approver gives the code their authenticator app shows."
    : `A code was ${channelSentence(request.channel)} (confirm_by: ${request.channel}).`;
}
