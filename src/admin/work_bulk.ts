/**
 * The door of bulk money on work queues: a queue's `bulk:` action run on
 * an exact, previewed set of items, confirmed by a code from outside the
 * session (`src/workqueue/confirm.ts`).
 *
 * - {@linkcode previewWorkBulk}: the exact set (the open items of the queue
 *   the selection names, explicit keys or every open item, none under
 *   anyone's current claim), each with its amount and currency read from
 *   its data by the bulk's `money:` fields, the total per currency, and the
 *   manifest (`manifestOf` over the items' keys, amounts and currencies and
 *   `<queue>/<bulk>/<action>`). Nothing acts. Audited `bulk.preview` on
 *   `manifest:<hash>`, with the selection: that row is what a request and a
 *   confirmation recompute the set from.
 * - {@linkcode requestWorkBulk}: the set recomputed from the items now (a
 *   difference refuses: preview again), then a code bound to the manifest
 *   and sent through the bulk's `confirm_by:` (`requestCode`). By whoever
 *   may work the queue.
 * - {@linkcode confirmWorkBulk}: the set recomputed from the items as they
 *   are now (a changed amount or currency, an item done or claimed, a claim
 *   expired, a new item the selection matches: the manifest differs and the
 *   code is void), the code checked (`confirmCode`), then the exact
 *   previewed set runs: one job per item, each in its own transaction, by
 *   the path of `doWorkItem` (the action's job with the unique key
 *   `<queue>/<item>/<action>`, the item done, audited `work.do` with the
 *   manifest). An item that changed between the check and its own
 *   transaction is refused alone (audited `bulk.refused`), the others run.
 *   Only a person holding the approver role confirms, and with
 *   `second_person` not the one who asked; a token of the API never does.
 *
 * @module
 */

import type { Store } from "../store/store.ts";
import type { BulkRequest, ManifestEntry } from "../store/bulk_request_types.ts";
import type { ChannelSpec } from "../workqueue/channels.ts";
import {
  APPROVER_ROLE,
  BulkRefused,
  confirmCode,
  type ConfirmDeps,
  requestCode,
  type Via,
} from "../workqueue/confirm.ts";
import { actionJob, itemView, type WorkItemView } from "../workqueue/items.ts";
import {
  decimalAmount,
  type Manifest,
  manifestOf,
  MAX_MANIFEST_ITEMS,
} from "../workqueue/manifest.ts";
import type { ConfirmBy, WorkBulk, WorkQueueDefinition } from "../workqueue/types.ts";
import { didYouMean } from "../text/suggest.ts";
import { audit } from "./audit.ts";
import { mayWork, type WorkActor, workQueue, WorkRefused } from "./work.ts";

/** What a preview selects: the items of these keys, or (none given) every open item. */
export interface WorkBulkSelection {
  queue: string;
  bulk: string;
  /** Explicit keys; absent: every open item of the queue in the person's scope. */
  keys?: readonly string[];
}

/** One item of a preview: its key, amount and currency, and the item as people read it. */
export interface WorkBulkItem {
  key: string;
  amount: string;
  currency: string;
  tenant: string | null;
  item: WorkItemView;
}

/** A preview: the exact set, its totals and its manifest. */
export interface WorkBulkPreview {
  queue: string;
  bulk: string;
  action: string;
  manifest: Manifest;
  items: WorkBulkItem[];
  totals: Record<string, string>;
}

/** What one item of a confirmed set came to. */
export type WorkBulkOutcome =
  | { key: string; ok: true; jobId: number }
  | { key: string; ok: false; code: string; message: string };

/** A confirmed bulk: the request and each item's outcome, in manifest order. */
export interface WorkBulkRun {
  request: BulkRequest;
  outcomes: WorkBulkOutcome[];
}

/** The manifest's action of a queue's bulk: `<queue>/<bulk>/<action>`. */
export function bulkManifestAction(queue: WorkQueueDefinition, bulk: WorkBulk): string {
  return `${queue.id}/${bulk.id}/${bulk.action}`;
}

/** The channel a bulk's `confirm_by:` names. */
export function channelOf(confirmBy: ConfirmBy): ChannelSpec {
  switch (confirmBy.kind) {
    case "totp":
      return { kind: "totp", role: confirmBy.role };
    case "command":
      return { kind: "command", argv: [...confirmBy.argv] };
    case "webhook":
      return { kind: "webhook", url: confirmBy.url };
    case "email":
      return {
        kind: "email",
        to: confirmBy.to.split(",").map((a) => a.trim()).filter((a) => a !== ""),
      };
  }
}

/** The bulk `id` of `queue`, with money, or refused. */
export function workBulk(queue: WorkQueueDefinition, id: string): WorkBulk {
  const bulk = queue.bulk.find((b) => b.id === id);
  if (!bulk) {
    const ids = queue.bulk.map((b) => b.id);
    throw new WorkRefused(
      "work-bulk-unknown",
      `work queue "${queue.id}" has no bulk action ${JSON.stringify(id)} (${
        ids.join(", ") || "it has none"
      })${didYouMean(id, ids)}`,
    );
  }
  if (bulk.money === null || bulk.confirmBy === null) {
    throw new WorkRefused(
      "work-bulk-no-money",
      `bulk action "${bulk.id}" of work queue "${queue.id}" moves no money (no money: and ` +
        "confirm_by:): act on its items with jobs work do",
    );
  }
  return bulk;
}

function mayAsk(queue: WorkQueueDefinition, who: WorkActor): void {
  if (mayWork(queue, who.roles, "work.do")) return;
  throw new WorkRefused(
    "work-forbidden",
    `${who.person} may not work queue "${queue.id}" (roles ${who.roles.join(", ") || "none"}; ` +
      `it takes admin${queue.roles.length ? `, ${queue.roles.join(", ")}` : ""})`,
  );
}

function viaOf(who: WorkActor): Via {
  return { door: who.door, ...(who.osUser === undefined ? {} : { osUser: who.osUser }) };
}

/** Whether a claim holds the item at `now`. */
function held(row: { claimOwner: string | null; claimExpiresAt: number | null }, now: number) {
  return row.claimOwner !== null && (row.claimExpiresAt ?? 0) > now;
}

/** The amount and currency of `data` by `bulk`'s money fields, or refused naming the item. */
function moneyOf(
  queue: WorkQueueDefinition,
  bulk: WorkBulk,
  key: string,
  data: unknown,
): { amount: string; currency: string } {
  const fields = bulk.money!;
  const record = (data ?? {}) as Record<string, unknown>;
  const amount = record[fields.amount];
  const currency = record[fields.currency];
  const what = `item ${JSON.stringify(key)} of work queue "${queue.id}"`;
  if (typeof amount !== "string" && typeof amount !== "number") {
    throw new WorkRefused(
      "work-data-invalid",
      `${what}: its data field ${JSON.stringify(fields.amount)} holds no amount (${
        JSON.stringify(amount ?? null)
      })`,
    );
  }
  let normal: string;
  try {
    normal = decimalAmount(amount);
  } catch (error) {
    throw new WorkRefused(
      "work-data-invalid",
      `${what}: data field ${JSON.stringify(fields.amount)}: ${(error as Error).message}`,
    );
  }
  if (typeof currency !== "string" || !/^[A-Za-z0-9_-]{1,16}$/.test(currency)) {
    throw new WorkRefused(
      "work-data-invalid",
      `${what}: its data field ${JSON.stringify(fields.currency)} holds no currency code (${
        JSON.stringify(currency ?? null)
      })`,
    );
  }
  return { amount: normal, currency };
}

/**
 * The set `selection` names now, in scope `tenant`: with keys, each must be
 * an open item no claim holds (`strict`: else refused; otherwise left out,
 * which changes the manifest); without, every such open item.
 */
async function currentSet(
  store: Store,
  queue: WorkQueueDefinition,
  bulk: WorkBulk,
  keys: readonly string[] | null,
  tenant: string | null,
  now: number,
  strict: boolean,
): Promise<WorkBulkPreview> {
  const scope = tenant === null ? {} : { tenant };
  const rows = [];
  if (keys === null) {
    const open = await store.workItemsList({
      queue: queue.id,
      ...scope,
      state: "open",
      limit: MAX_MANIFEST_ITEMS + 1,
    });
    if (open.length > MAX_MANIFEST_ITEMS) {
      throw new WorkRefused(
        "work-bulk-empty",
        `work queue "${queue.id}" has over ${MAX_MANIFEST_ITEMS} open items: name the keys`,
      );
    }
    rows.push(...open.filter((row) => !held(row, now)));
  } else {
    for (const key of new Set(keys)) {
      const row = await store.workItemGet({ queue: queue.id, key, ...scope });
      const what = `item ${JSON.stringify(key)} of work queue "${queue.id}"`;
      if (row === null || row.state !== "open" || held(row, now)) {
        if (!strict) continue;
        if (row === null) throw new WorkRefused("work-item-missing", `no ${what}`);
        if (row.state !== "open") {
          throw new WorkRefused("work-item-done", `${what} is done already`);
        }
        throw new WorkRefused(
          "work-item-held",
          `${what} is claimed by ${row.claimOwner}: it joins a bulk once no claim holds it`,
        );
      }
      rows.push(row);
    }
  }
  const items = rows.map((row) => ({
    key: row.key,
    ...moneyOf(queue, bulk, row.key, row.data),
    tenant: row.tenant,
    item: itemView(queue, row, now),
  }));
  const manifest = manifestOf(
    bulkManifestAction(queue, bulk),
    items.map((i) => ({ id: i.key, amount: i.amount, currency: i.currency })),
  );
  return {
    queue: queue.id,
    bulk: bulk.id,
    action: bulk.action,
    manifest,
    items,
    totals: manifest.totals,
  };
}

/**
 * The exact set a bulk would act on, with its amounts, totals and
 * manifest; nothing acts. Audited `bulk.preview`.
 *
 * @throws {WorkRefused} an unknown queue or bulk, one that moves no money, a
 *   person who may not work the queue, a key that is not an open, unclaimed
 *   item, an item whose data holds no amount or currency, an empty set
 */
export async function previewWorkBulk(
  store: Store,
  queues: readonly WorkQueueDefinition[],
  selection: WorkBulkSelection,
  who: WorkActor,
): Promise<WorkBulkPreview> {
  const queue = workQueue(queues, selection.queue);
  // Who may not work the queue learns nothing of its bulk actions.
  mayAsk(queue, who);
  const bulk = workBulk(queue, selection.bulk);
  const keys = selection.keys === undefined || selection.keys.length === 0 ? null : selection.keys;
  const preview = await currentSet(store, queue, bulk, keys, who.tenant, who.now, true);
  if (preview.items.length === 0) {
    throw new WorkRefused(
      "work-bulk-empty",
      `work queue "${queue.id}" has no open, unclaimed item for bulk action "${bulk.id}"`,
    );
  }
  await audit(
    store,
    { actor: who.person, reason: who.reason, now: who.now },
    "bulk.preview",
    `manifest:${preview.manifest.hash}`,
    {
      ...viaOf(who),
      queue: queue.id,
      bulk: bulk.id,
      action: bulk.action,
      keys: keys === null ? null : [...new Set(keys)],
      tenant: who.tenant,
      count: preview.items.length,
      totals: preview.totals,
    },
  );
  return preview;
}

/** What a preview's audit row recorded: enough to recompute its set. */
interface PreviewRecord {
  queue: string;
  bulk: string;
  keys: string[] | null;
  tenant: string | null;
  at: number;
}

/**
 * The newest preview of `manifest` `who` may see (`exact`: of exactly
 * that tenant, installation-wide included), at or before `before` when
 * given, or null.
 */
async function previewOf(
  store: Store,
  manifest: string,
  who: Pick<WorkActor, "tenant">,
  before?: number,
  exact = false,
): Promise<PreviewRecord | null> {
  const rows = await store.auditList({ target: `manifest:${manifest}` });
  for (const row of [...rows].reverse()) {
    if (row.action !== "bulk.preview" || (before !== undefined && row.at > before)) continue;
    const d = row.details as Record<string, unknown>;
    const tenant = typeof d.tenant === "string" ? d.tenant : null;
    if ((exact || who.tenant !== null) && tenant !== who.tenant) continue;
    return {
      queue: String(d.queue),
      bulk: String(d.bulk),
      keys: Array.isArray(d.keys) ? d.keys.map(String) : null,
      tenant,
      at: row.at,
    };
  }
  return null;
}

/** Audits a refusal of the door and returns the error to throw. */
async function refusal(
  store: Store,
  who: WorkActor,
  manifest: string,
  why: BulkRefused["why"],
  message: string,
  extra: Record<string, unknown> = {},
): Promise<BulkRefused> {
  await store.auditRecord({
    at: who.now,
    actor: who.person,
    action: "bulk.refused",
    target: `manifest:${manifest}`,
    reason: null,
    details: { why, request: null, ...extra, via: viaOf(who) },
  });
  return new BulkRefused(why, message);
}

/**
 * Asks for a code bound to the manifest a preview showed: the set is
 * recomputed from the items now and must be the same; the code goes
 * through the bulk's `confirm_by:`. The request as stored (never the code).
 *
 * @throws {WorkRefused} no preview of this manifest the person may see, or
 *   a person who may not work the queue
 * @throws {BulkRefused} `manifest-changed` (audited), and those of `requestCode`
 */
export async function requestWorkBulk(
  store: Store,
  deps: ConfirmDeps,
  queues: readonly WorkQueueDefinition[],
  params: { manifest: string; ttlMs?: number },
  who: WorkActor,
): Promise<BulkRequest> {
  const preview = await previewOf(store, params.manifest, who);
  if (preview === null) {
    throw new WorkRefused(
      "work-bulk-unpreviewed",
      `no preview of manifest ${JSON.stringify(params.manifest)}: ` +
        "preview first (jobs bulk preview <queue> <bulk>)",
    );
  }
  const queue = workQueue(queues, preview.queue);
  const bulk = workBulk(queue, preview.bulk);
  mayAsk(queue, who);
  const now = await currentSet(store, queue, bulk, preview.keys, preview.tenant, who.now, false);
  if (now.manifest.hash !== params.manifest) {
    throw await refusal(
      store,
      who,
      params.manifest,
      "manifest-changed",
      "the items changed since the preview (an amount, a state, a claim or a new item): " +
        "preview again",
      { current: now.manifest.hash },
    );
  }
  return await requestCode(store, deps, {
    manifest: now.manifest,
    queue: queue.id,
    bulk: bulk.id,
    tenant: preview.tenant,
    requester: who.person,
    channel: channelOf(bulk.confirmBy!),
    secondPerson: bulk.secondPerson,
    ...(params.ttlMs === undefined ? {} : { ttlMs: params.ttlMs }),
    via: viaOf(who),
  });
}

/**
 * Confirms the manifest with `code` and runs its exact set, one job per
 * item, each in its own transaction.
 *
 * @throws {BulkRefused} `not-approver` (audited) for a person without the
 *   approver role or a token, and those of `confirmCode` (`manifest-changed`
 *   when the items changed since the preview, the code then void)
 */
export async function confirmWorkBulk(
  store: Store,
  deps: Pick<ConfirmDeps, "clock">,
  queues: readonly WorkQueueDefinition[],
  params: { manifest: string; code: string },
  who: WorkActor,
): Promise<WorkBulkRun> {
  const { manifest } = params;
  if (who.person.startsWith("token:") || !who.roles.includes(APPROVER_ROLE)) {
    throw await refusal(
      store,
      who,
      manifest,
      "not-approver",
      who.person.startsWith("token:")
        ? "a token may not confirm money: a person holding the approver role confirms"
        : `"${who.person}" does not hold the ${APPROVER_ROLE} role that confirms bulk money`,
    );
  }
  const held = await store.bulkRequestLatest({ manifest });
  let current = manifest;
  let queue: WorkQueueDefinition | null = null;
  let bulk: WorkBulk | null = null;
  if (held !== null && (who.tenant === null || who.tenant === held.tenant)) {
    const preview = await previewOf(store, manifest, { tenant: held.tenant }, held.createdAt, true);
    queue = workQueue(queues, held.queue);
    bulk = workBulk(queue, held.bulk);
    const keys = preview?.keys ?? null;
    current = (await currentSet(store, queue, bulk, keys, held.tenant, who.now, false))
      .manifest.hash;
  }
  // Refuses (audited) a missing or another tenant's request, a used, locked,
  // expired or changed one, self-approval, a wrong code.
  const request = await confirmCode(store, deps, {
    manifest,
    current,
    code: params.code,
    confirmer: who.person,
    via: viaOf(who),
  });
  const outcomes: WorkBulkOutcome[] = [];
  for (const entry of request.items) {
    outcomes.push(await runItem(store, queue!, bulk!, request, entry, who));
  }
  return { request, outcomes };
}

/** One item of a confirmed set, in its own transaction; a refusal is audited and reported. */
async function runItem(
  store: Store,
  queue: WorkQueueDefinition,
  bulk: WorkBulk,
  request: BulkRequest,
  entry: ManifestEntry,
  who: WorkActor,
): Promise<WorkBulkOutcome> {
  const action = queue.actions.find((a) => a.id === bulk.action)!;
  const ref = {
    queue: queue.id,
    key: entry.id,
    ...(request.tenant === null ? {} : { tenant: request.tenant }),
  };
  try {
    return await store.transaction(async (tx) => {
      const row = await tx.workItemGet(ref);
      if (row === null) throw new WorkRefused("work-item-missing", "the item is gone");
      const money = moneyOf(queue, bulk, row.key, row.data);
      if (money.amount !== entry.amount || money.currency !== entry.currency) {
        throw new WorkRefused(
          "work-data-invalid",
          `its amount is now ${money.currency} ${money.amount}, not the ${entry.currency} ` +
            `${entry.amount} confirmed`,
        );
      }
      const outcome = await tx.workItemDo({
        ...ref,
        person: who.person,
        action: action.id,
        job: actionJob(queue, action, row, who.now),
        needClaim: false,
        fence: null,
        breakReason: null,
        reason: who.reason,
        now: who.now,
      });
      if (!outcome.ok) {
        throw new WorkRefused(
          outcome.why === "done" ? "work-item-done" : "work-item-held",
          outcome.why === "done"
            ? "it is done already"
            : `it is claimed by ${outcome.item?.claimOwner ?? "another person"}`,
        );
      }
      await audit(
        tx,
        { actor: who.person, reason: who.reason, now: who.now },
        "work.do",
        `work:${queue.id}/${entry.id}`,
        {
          ...viaOf(who),
          queue: queue.id,
          key: entry.id,
          action: action.id,
          jobId: outcome.jobId,
          bulk: bulk.id,
          manifest: request.manifest,
          request: request.id,
          amount: entry.amount,
          currency: entry.currency,
        },
      );
      return { key: entry.id, ok: true as const, jobId: outcome.jobId! };
    });
  } catch (error) {
    if (!(error instanceof WorkRefused)) throw error;
    await audit(
      store,
      { actor: who.person, reason: null, now: who.now },
      "bulk.refused",
      `manifest:${request.manifest}`,
      {
        why: "item-changed",
        request: request.id,
        key: entry.id,
        code: error.code,
        message: error.message,
        via: viaOf(who),
      },
    );
    return { key: entry.id, ok: false, code: error.code, message: error.message };
  }
}

/**
 * The newest request for `manifest` that `who` may see (a tenant's person:
 * their tenant's only), or null: what the console's confirmation page
 * shows (never the code, nor its hash).
 */
export async function workBulkRequest(
  store: Store,
  manifest: string,
  who: Pick<WorkActor, "tenant">,
): Promise<BulkRequest | null> {
  const request = await store.bulkRequestLatest({ manifest });
  if (request === null) return null;
  if (who.tenant !== null && request.tenant !== who.tenant) return null;
  return request;
}
