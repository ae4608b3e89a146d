/**
 * The door of human work queues: what the faces read of a queue's items and
 * what people do with them (add, claim, next, release, skip, reassign, act),
 * each change and its `audit` row in one transaction. Who acts is a person
 * the store knows (`principals`), with the roles they hold: the action
 * table's (`work.*` in `actions.ts`) or one the queue names in `roles:`. The
 * audit row names the person, the door they came through, and for the
 * command line the OS user behind it.
 *
 * The queue's claim mode decides what an action needs: on `required` the
 * actor's current claim and fence (checked in the statement that marks the
 * item done), on `optional` nothing unless another holds it (a hold broken
 * only with a reason), on `disabled` no claim is ever taken.
 *
 * @module
 */

import {
  type Store,
  type StoreTx,
  type WorkItemOutcome,
  type WorkItemRefusal,
  workItemTarget,
  type WorkQueueStanding,
} from "../store/store.ts";
import { redact } from "../kernel/redact.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";
import {
  actionJob,
  addParams,
  itemView,
  type NewWorkItem,
  WorkItemInvalid,
  type WorkItemView,
} from "../workqueue/items.ts";
import { ACTIONS, type AdminAction, mayTake, READ } from "./actions.ts";
import { type Actor, audit } from "./audit.ts";
import { scoreItem } from "../workqueue/definition.ts";
import { didYouMean } from "../text/suggest.ts";

/** How long a skip hides an item from the person who skipped it, when not said. @default 3_600_000 (1 h) */
export const DEFAULT_SKIP_MS = 3_600_000;

/** Why the door refused: a stable `code` for the API and the command line, and a sentence. */
export class WorkRefused extends Error {
  constructor(
    readonly code:
      | "work-queue-unknown"
      | "work-person-unknown"
      | "work-forbidden"
      | "work-claims-disabled"
      | "work-action-unknown"
      | "work-key-invalid"
      | "work-data-invalid"
      | "work-tenant-conflict"
      | "work-item-missing"
      | "work-item-done"
      | "work-item-held"
      | "work-item-unclaimed"
      | "work-claim-stale"
      | "work-bulk-unknown"
      | "work-bulk-no-money"
      | "work-bulk-empty"
      | "work-bulk-unpreviewed",
    message: string,
    /** The item as it is, when the refusal concerns one. */
    readonly item: WorkItemView | null = null,
  ) {
    super(message);
    this.name = "WorkRefused";
  }
}

/** The door a person came through, for the audit row. */
export type WorkDoor = "cli" | "console" | "api" | "library";

/** Who works the queue: a person the store knows, with their roles and tenant. */
export interface WorkActor {
  person: string;
  roles: readonly string[];
  /** Their tenant: they see and touch that tenant's items only; null: every tenant. */
  tenant: string | null;
  door: WorkDoor;
  /** The OS user behind the command line. */
  osUser?: string;
  reason: string | null;
  now: number;
}

/**
 * The person `name` as a {@linkcode WorkActor}: refused when the store knows
 * no such person (`--as` must name one) or they are disabled.
 */
export async function workActor(
  store: Pick<Store, "principalGet">,
  name: string,
  fields: { door: WorkDoor; osUser?: string; reason?: string | null; now: number },
): Promise<WorkActor> {
  const person = await store.principalGet({ kind: "person", name });
  if (person === null || person.disabled) {
    throw new WorkRefused(
      "work-person-unknown",
      `${JSON.stringify(name)} is ${
        person ? "disabled" : "not a person the store knows"
      } (people are added with \`jobs users add\`)`,
    );
  }
  return {
    person: person.name,
    roles: person.roles,
    tenant: person.tenant,
    door: fields.door,
    ...(fields.osUser === undefined ? {} : { osUser: fields.osUser }),
    reason: fields.reason ?? null,
    now: fields.now,
  };
}

/** The queue `id` of `queues`, or refused with the nearest ids. */
export function workQueue(queues: readonly WorkQueueDefinition[], id: string): WorkQueueDefinition {
  const queue = queues.find((q) => q.id === id);
  if (queue) return queue;
  const ids = queues.map((q) => q.id);
  throw new WorkRefused(
    "work-queue-unknown",
    `no work queue ${JSON.stringify(id)} in the schedules file (${
      ids.length === 0 ? "it declares none" : ids.join(", ")
    })${didYouMean(id, ids)}`,
  );
}

/**
 * The actions a role a queue names (`roles: [support]`) may take on it:
 * working its items. Adding items, handing a claim to another person and
 * rescoring stay with the roles of the action table.
 */
export const WORKING_ACTIONS: readonly AdminAction[] = [
  "work.claim",
  "work.release",
  "work.skip",
  "work.do",
];

/**
 * Whether a principal holding `roles` may take `action` on `queue`: by the
 * action table, or, for a working action ({@linkcode WORKING_ACTIONS}), by
 * a role the queue names. A role no table and no queue names grants nothing.
 */
export function mayWork(queue: WorkQueueDefinition, roles: readonly string[], action: AdminAction) {
  return mayTake(roles, action) ||
    (WORKING_ACTIONS.includes(action) && roles.some((role) => queue.roles.includes(role)));
}

/**
 * Whether `roles` may see `queue`'s items: every built-in role reads (as
 * the action table's reads), a work queue's own role (`support`) only the
 * queues whose `roles:` name it.
 */
export function mayRead(queue: WorkQueueDefinition, roles: readonly string[]): boolean {
  return READ.some((role) => roles.includes(role)) || roles.some((r) => queue.roles.includes(r));
}

/**
 * The queue `id` of `queues` as `roles` may see it: refused as unknown
 * (`work-queue-unknown`) or, for a queue role the queue does not name, as
 * `work-forbidden`.
 */
export function workQueueFor(
  queues: readonly WorkQueueDefinition[],
  id: string,
  roles: readonly string[],
): WorkQueueDefinition {
  const queue = workQueue(queues, id);
  if (mayRead(queue, roles)) return queue;
  throw new WorkRefused(
    "work-forbidden",
    `work queue "${queue.id}" is worked by ${["admin", ...queue.roles].join(", ")}; ` +
      `the roles ${roles.join(", ") || "none"} do not name it`,
  );
}

function allow(queue: WorkQueueDefinition, who: WorkActor, action: AdminAction): void {
  if (mayWork(queue, who.roles, action)) return;
  throw new WorkRefused(
    "work-forbidden",
    `${who.person} may not ${action.slice("work.".length)} on work queue "${queue.id}" ` +
      `(roles ${who.roles.join(", ") || "none"}; it takes ${
        [
          ...new Set([
            ...rolesOf(action),
            ...(WORKING_ACTIONS.includes(action) ? queue.roles : []),
          ]),
        ].join(", ")
      })`,
  );
}

function rolesOf(action: AdminAction): readonly string[] {
  return ACTIONS[action];
}

function noClaims(queue: WorkQueueDefinition): void {
  if (queue.claim !== "disabled") return;
  throw new WorkRefused(
    "work-claims-disabled",
    `work queue "${queue.id}" takes no claims (claim: disabled): act on its items directly`,
  );
}

/** The tenant scope of a read or write by `who`. */
function scope(who: WorkActor): { tenant?: string } {
  return who.tenant === null ? {} : { tenant: who.tenant };
}

/** The audit row of an action on an item: who, through which door, and what. */
function record(
  tx: Pick<StoreTx, "auditRecord">,
  queue: WorkQueueDefinition,
  key: string,
  who: WorkActor,
  action: AdminAction,
  details: Record<string, unknown>,
): Promise<void> {
  return audit(
    tx,
    { actor: who.person, reason: who.reason, now: who.now },
    action,
    workItemTarget(queue.id, key),
    { ...doorDetails(queue, who), key, ...details },
  );
}

/** What every audit row of an action on an item says of how it came: the door, the OS user, the queue. */
function doorDetails(queue: WorkQueueDefinition, who: WorkActor): Record<string, unknown> {
  return {
    door: who.door,
    ...(who.osUser === undefined ? {} : { osUser: who.osUser }),
    queue: queue.id,
  };
}

const REFUSAL_CODE: Readonly<Record<WorkItemRefusal, WorkRefused["code"]>> = {
  missing: "work-item-missing",
  done: "work-item-done",
  held: "work-item-held",
  unclaimed: "work-item-unclaimed",
  stale: "work-claim-stale",
};

/** The refusal of an outcome that changed nothing, in a sentence naming the item. */
function refused(
  queue: WorkQueueDefinition,
  key: string,
  outcome: Extract<WorkItemOutcome, { ok: false }>,
  now: number,
): WorkRefused {
  const item = outcome.item;
  const what = `item ${JSON.stringify(key)} of work queue "${queue.id}"`;
  const text = {
    missing: `no ${what}`,
    done: `${what} is done already (${item?.outcome ?? "?"} by ${item?.doneBy ?? "?"})`,
    held: `${what} is claimed by ${item?.claimOwner ?? "?"} until ${
      item?.claimExpiresAt ? new Date(item.claimExpiresAt).toISOString() : "?"
    }${queue.claim === "optional" ? " (break the hold with a reason)" : ""}`,
    unclaimed: `${what} needs your claim first (claim: required)`,
    stale: `${what}: the claim's fence is no longer current (it is ${
      item?.claimFence ?? "?"
    }): the claim expired or moved on`,
  }[outcome.why];
  return new WorkRefused(REFUSAL_CODE[outcome.why], text, item ? itemView(queue, item, now) : null);
}

/**
 * Adds an item to `queue` (or updates the one with its key, keeping its
 * place), audited as `work.add`; `created` says which.
 */
export async function addWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  item: NewWorkItem,
  who: WorkActor,
): Promise<{ item: WorkItemView; created: boolean }> {
  allow(queue, who, "work.add");
  if (who.tenant !== null && item.tenant != null && item.tenant !== who.tenant) {
    throw new WorkRefused(
      "work-forbidden",
      `${who.person} works for tenant ${who.tenant} and cannot add an item of ${item.tenant}`,
    );
  }
  let params;
  try {
    params = addParams(queue, { ...item, tenant: item.tenant ?? who.tenant }, who.person, who.now);
  } catch (error) {
    if (error instanceof WorkItemInvalid) throw new WorkRefused(error.code, error.message);
    throw error;
  }
  return await store.transaction(async (tx) => {
    const added = await tx.workItemAdd(params);
    if (added === null) {
      throw new WorkRefused(
        "work-tenant-conflict",
        `item ${JSON.stringify(item.key)} of work queue "${queue.id}" belongs to another tenant`,
      );
    }
    await record(tx, queue, item.key, who, "work.add", {
      created: added.created,
      score: added.item.score,
      ruleVersion: added.item.ruleVersion,
    });
    return { item: itemView(queue, added.item, who.now), created: added.created };
  });
}

/** The queue's items in `state` (default open), best first, as `who` may see them. */
export async function listWorkItems(
  store: Store,
  queue: WorkQueueDefinition,
  who: Pick<WorkActor, "tenant" | "now">,
  options: { state?: "open" | "done"; limit?: number } = {},
): Promise<WorkItemView[]> {
  const rows = await store.workItemsList({
    queue: queue.id,
    ...(who.tenant === null ? {} : { tenant: who.tenant }),
    ...options,
  });
  return rows.map((row) => itemView(queue, row, who.now));
}

/** One work queue's open items as a person sees them: counts, the oldest's age, a change marker. */
export interface WorkQueueOverview {
  queue: WorkQueueDefinition;
  open: number;
  claimed: number;
  /** The oldest open item's age at `now`, or null when none is open. */
  oldestAgeMs: number | null;
  /** Changes whenever an open item's claim, fence or data does (what the live feed sends). */
  marker: string;
}

/**
 * Each of `queues` with its open items in `who`'s scope (their tenant's
 * only, for a tenant's person), from one read of every queue.
 */
export async function workQueuesOverview(
  store: Store,
  queues: readonly WorkQueueDefinition[],
  who: Pick<WorkActor, "tenant" | "now">,
): Promise<WorkQueueOverview[]> {
  const summary = await store.workItemsSummary({
    ...(who.tenant === null ? {} : { tenant: who.tenant }),
    now: who.now,
  });
  return queues.map((queue) => {
    const s = summary.find((row) => row.queue === queue.id);
    return {
      queue,
      open: s?.open ?? 0,
      claimed: s?.claimed ?? 0,
      oldestAgeMs: s ? Math.max(0, who.now - s.oldestRequestedAt) : null,
      marker: s?.marker ?? "0",
    };
  });
}

/** One item with its history, or null. */
export async function workItemDetail(
  store: Store,
  queue: WorkQueueDefinition,
  key: string,
  who: Pick<WorkActor, "tenant" | "now">,
) {
  const ref = { queue: queue.id, key, ...(who.tenant === null ? {} : { tenant: who.tenant }) };
  const row = await store.workItemGet(ref);
  if (row === null) return null;
  return { item: itemView(queue, row, who.now), history: await store.workItemEvents(ref) };
}

/** Claims the queue's best free item for `who` (audited `work.claim`), or null when none is left. */
export async function nextWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  who: WorkActor,
): Promise<WorkItemView | null> {
  allow(queue, who, "work.claim");
  noClaims(queue);
  // The audit row goes with the claim (the store completes it with the
  // item it takes): on PostgreSQL next is then one statement.
  const row = await store.workItemNext({
    queue: queue.id,
    ...scope(who),
    person: who.person,
    now: who.now,
    leaseMs: queue.leaseMs,
    audit: {
      actor: who.person,
      action: "work.claim" satisfies AdminAction,
      reason: who.reason === null ? null : redact(who.reason),
      details: { ...doorDetails(queue, who), via: "next" },
    },
  });
  return row === null ? null : itemView(queue, row, who.now);
}

/**
 * Claims one item for `who` (audited `work.claim`); on an `optional` queue
 * `breakReason` breaks another's hold.
 */
export async function claimWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  key: string,
  who: WorkActor,
  options: { breakReason?: string } = {},
): Promise<WorkItemView> {
  allow(queue, who, "work.claim");
  noClaims(queue);
  const breakReason = queue.claim === "optional" ? options.breakReason ?? null : null;
  return await store.transaction(async (tx) => {
    const outcome = await tx.workItemClaim({
      queue: queue.id,
      key,
      ...scope(who),
      person: who.person,
      now: who.now,
      leaseMs: queue.leaseMs,
      breakReason,
    });
    if (!outcome.ok) throw refused(queue, key, outcome, who.now);
    await record(tx, queue, key, who, "work.claim", {
      fence: outcome.item.claimFence,
      expiresAt: outcome.item.claimExpiresAt,
      ...(breakReason === null ? {} : { broke: true }),
    });
    return itemView(queue, outcome.item, who.now);
  });
}

/** Gives back `who`'s claim on the item (audited `work.release`). */
export async function releaseWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  key: string,
  who: WorkActor,
  options: { fence?: number } = {},
): Promise<WorkItemView> {
  allow(queue, who, "work.release");
  noClaims(queue);
  return await store.transaction(async (tx) => {
    const outcome = await tx.workItemRelease({
      queue: queue.id,
      key,
      ...scope(who),
      person: who.person,
      now: who.now,
      ...(options.fence === undefined ? {} : { fence: options.fence }),
      reason: who.reason,
    });
    if (!outcome.ok && outcome.why === "unclaimed") {
      throw new WorkRefused(
        "work-item-unclaimed",
        `${who.person} holds no claim on item ${JSON.stringify(key)} of work queue "${queue.id}"`,
        outcome.item ? itemView(queue, outcome.item, who.now) : null,
      );
    }
    if (!outcome.ok) throw refused(queue, key, outcome, who.now);
    await record(tx, queue, key, who, "work.release", {});
    return itemView(queue, outcome.item, who.now);
  });
}

/** Hides the item from `who`'s next for `forMs` (audited `work.skip`), giving back their claim. */
export async function skipWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  key: string,
  who: WorkActor,
  options: { forMs?: number } = {},
): Promise<WorkItemView> {
  allow(queue, who, "work.skip");
  const until = who.now + (options.forMs ?? DEFAULT_SKIP_MS);
  return await store.transaction(async (tx) => {
    const outcome = await tx.workItemSkip({
      queue: queue.id,
      key,
      ...scope(who),
      person: who.person,
      now: who.now,
      until,
      reason: who.reason,
    });
    if (!outcome.ok) throw refused(queue, key, outcome, who.now);
    await record(tx, queue, key, who, "work.skip", { until });
    return itemView(queue, outcome.item, who.now);
  });
}

/** Gives the item's claim to `to`, a person the store knows (audited `work.reassign`). */
export async function reassignWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  key: string,
  to: string,
  who: WorkActor,
): Promise<WorkItemView> {
  allow(queue, who, "work.reassign");
  noClaims(queue);
  const target = await workActor(store, to, { door: who.door, now: who.now });
  if (who.tenant !== null && target.tenant !== who.tenant) {
    throw new WorkRefused(
      "work-forbidden",
      `${to} does not work for tenant ${who.tenant}`,
    );
  }
  return await store.transaction(async (tx) => {
    const outcome = await tx.workItemReassign({
      queue: queue.id,
      key,
      ...scope(who),
      actor: who.person,
      to: target.person,
      now: who.now,
      leaseMs: queue.leaseMs,
      reason: who.reason,
    });
    if (!outcome.ok) throw refused(queue, key, outcome, who.now);
    await record(tx, queue, key, who, "work.reassign", {
      to: target.person,
      fence: outcome.item.claimFence,
    });
    return itemView(queue, outcome.item, who.now);
  });
}

/**
 * Acts on the item: its action's job is enqueued (unique key
 * `<queue>/<item>/<action>`) in the transaction that marks it done, with the
 * audit row (`work.do`). On a `required` queue `fence` defaults to the
 * actor's current claim's, read first: the statement still checks it, so a
 * claim lost between the read and the write refuses.
 */
export async function doWorkItem(
  store: Store,
  queue: WorkQueueDefinition,
  key: string,
  actionId: string,
  who: WorkActor,
  options: { fence?: number; breakReason?: string } = {},
): Promise<{ item: WorkItemView; jobId: number }> {
  allow(queue, who, "work.do");
  const action = queue.actions.find((a) => a.id === actionId);
  if (!action) {
    const ids = queue.actions.map((a) => a.id);
    throw new WorkRefused(
      "work-action-unknown",
      `work queue "${queue.id}" has no action ${JSON.stringify(actionId)} (${
        ids.join(", ") || "it has none"
      })${didYouMean(actionId, ids)}`,
    );
  }
  const ref = { queue: queue.id, key, ...scope(who) };
  const needClaim = queue.claim === "required";
  return await store.transaction(async (tx) => {
    // Read in the transaction: the job carries the data the item has when it is done.
    const row = await tx.workItemGet(ref);
    if (row === null) {
      throw refused(queue, key, { ok: false, why: "missing", item: null }, who.now);
    }
    const fence = needClaim
      ? options.fence ?? (row.claimOwner === who.person ? row.claimFence : null)
      : null;
    const job = actionJob(queue, action, row, who.now);
    const outcome = await tx.workItemDo({
      ...ref,
      person: who.person,
      action: action.id,
      job,
      needClaim,
      fence,
      breakReason: queue.claim === "optional" ? options.breakReason ?? null : null,
      reason: who.reason,
      now: who.now,
    });
    if (!outcome.ok) throw refused(queue, key, outcome, who.now);
    await record(tx, queue, key, who, "work.do", {
      action: action.id,
      jobId: outcome.jobId,
      ...(fence === null ? {} : { fence }),
    });
    return { item: itemView(queue, outcome.item, who.now), jobId: outcome.jobId! };
  });
}

/**
 * Rescores the open items of `queue` whose score came from another version
 * of its rule (the file's weights changed, or a score was added or
 * removed), at most `limit` of them, oldest first: each score is computed
 * from the item's data by the rule in force and written only if no add
 * changed the item since it was read. Audited once (`work.rescore`) when it
 * rescored any. `left` says whether stale items may remain.
 */
export async function rescoreWorkQueue(
  store: Store,
  queue: WorkQueueDefinition,
  who: Actor,
  options: { limit?: number } = {},
): Promise<{ rescored: number; left: boolean }> {
  const limit = options.limit ?? 1000;
  const version = queue.score?.version ?? null;
  const stale = await store.workItemsStale({ queue: queue.id, ruleVersion: version, limit });
  let rescored = 0;
  for (const item of stale) {
    const score = queue.score === null ? null : scoreItem(queue.score, item.data);
    const wrote = await store.workItemRescore({
      queue: queue.id,
      key: item.key,
      fromVersion: item.ruleVersion,
      score,
      now: who.now,
    });
    if (wrote) rescored++;
  }
  if (rescored > 0) {
    await store.transaction((tx) =>
      audit(tx, who, "work.rescore", `work:${queue.id}`, {
        door: "cli",
        queue: queue.id,
        rescored,
        ruleVersion: version,
      })
    );
  }
  return { rescored, left: stale.length === limit };
}

/** One work queue's series on `/metrics` (`src/http/metrics.ts`). */
export interface WorkQueueMetrics {
  queue: string;
  /** Its open items: `jobs_work_items_open`. */
  open: number;
  /** How long its oldest open item has waited, 0 when none: `jobs_work_oldest_open_age_seconds`. */
  oldestOpenAgeSeconds: number;
  /** Claims that ran out, as its items' histories record them: `jobs_work_claims_expired_total`. */
  claimsExpired: number;
  /** Items done by the action taken: `jobs_work_actions_total`. */
  done: Record<string, number>;
}

/**
 * Every work queue's figures at `now`, for `/metrics`: the queues of
 * `declared` first, in the file's order, each with every action of it (zeros
 * while nothing happened, so an alert has a series to read), then the
 * store's other queues by name. One read of the store (`workItemsStats`),
 * installation-wide: metrics are the operator's, not a tenant's.
 */
export async function workQueueMetrics(
  store: Pick<Store, "workItemsStats">,
  declared: readonly WorkQueueDefinition[],
  now: number,
): Promise<WorkQueueMetrics[]> {
  const stored = new Map((await store.workItemsStats()).map((s) => [s.queue, s]));
  const ids = [
    ...declared.map((q) => q.id),
    ...[...stored.keys()].filter((id) => !declared.some((q) => q.id === id)),
  ];
  return ids.map((queue) => {
    const s = stored.get(queue);
    const actions = declared.find((q) => q.id === queue)?.actions ?? [];
    const done: Record<string, number> = Object.fromEntries(actions.map((a) => [a.id, 0]));
    Object.assign(done, s?.done);
    return {
      queue,
      open: s?.open ?? 0,
      oldestOpenAgeSeconds: s?.oldestOpenAt == null ? 0 : Math.max(0, now - s.oldestOpenAt) / 1000,
      claimsExpired: s?.claimsExpired ?? 0,
      done,
    };
  });
}

// ---------------------------------------------------------------------------
// Watching a queue (the TUI's Work tab): read-only, no actor, nothing audited.

/** How far back a queue's lead time looks: the items done in the last day. */
export const LEAD_WINDOW_MS = 86_400_000;

/** One open item as a watcher sees it: the item as people read it, and how its last claim ended. */
export interface WorkWatchItem extends WorkItemView {
  /**
   * Its last claim, when its lease ran out and nobody claimed it since:
   * still on the row (not cleared yet) or cleared by the store (its history
   * says `expired`). Shown as expired, never as released by its owner.
   */
  expiredClaim: { owner: string; expiredAt: number } | null;
}

/** A queue as a watcher sees it: how it stands, and its first open items in listing order. */
export interface WorkQueueWatch {
  queue: WorkQueueDefinition;
  stats: WorkQueueStanding;
  /** The oldest open item's age at now; null when none is open. */
  oldestAgeMs: number | null;
  items: WorkWatchItem[];
}

/**
 * `queue` as it stands at `who.now`: its stats (open, claimed, expired
 * claims, the oldest open item, the median lead time of the items done in
 * the last {@linkcode LEAD_WINDOW_MS}) and its first `limit` open items in
 * the order people get them, each claim that lapsed shown as expired (the
 * history is read for the items on the page that were claimed and are free).
 */
export async function watchWorkQueue(
  store: Pick<Store, "workItemsList" | "workQueueStanding" | "workItemEvents">,
  queue: WorkQueueDefinition,
  who: Pick<WorkActor, "tenant" | "now">,
  options: { limit: number },
): Promise<WorkQueueWatch> {
  const tenant = who.tenant === null ? {} : { tenant: who.tenant };
  const [stats, rows] = await Promise.all([
    store.workQueueStanding({
      queue: queue.id,
      ...tenant,
      now: who.now,
      since: who.now - LEAD_WINDOW_MS,
    }),
    store.workItemsList({ queue: queue.id, ...tenant, limit: options.limit }),
  ]);
  const items = await Promise.all(rows.map(async (row): Promise<WorkWatchItem> => {
    const view = itemView(queue, row, who.now);
    if (view.claim !== null || row.claimFence === 0) return { ...view, expiredClaim: null };
    if (row.claimOwner !== null) {
      return { ...view, expiredClaim: { owner: row.claimOwner, expiredAt: row.claimExpiresAt! } };
    }
    const events = await store.workItemEvents({ queue: queue.id, key: row.key, ...tenant });
    const ended = events.findLast((e) =>
      ["claimed", "released", "expired", "skipped", "reassigned", "broken"].includes(e.kind)
    );
    const owner = ended?.detail.owner;
    const at = ended?.detail.expiredAt;
    return {
      ...view,
      expiredClaim: ended?.kind === "expired" && typeof owner === "string" && typeof at === "number"
        ? { owner, expiredAt: at }
        : null,
    };
  }));
  return {
    queue,
    stats,
    oldestAgeMs: stats.oldestRequestedAt === null
      ? null
      : Math.max(0, who.now - stats.oldestRequestedAt),
    items,
  };
}
