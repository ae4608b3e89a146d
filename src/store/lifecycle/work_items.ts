/**
 * The life of a work item, written once for every store (see `jobs.ts` for
 * the form): added or updated keeping its place, claimed (one conditional
 * write: owner, expiry, a fence that only rises), handed out by `next`,
 * released, skipped, reassigned, acted on (done, its action's job inserted,
 * in one transaction), and its expired claims cleared, each change with its
 * history row.
 *
 * Every decision that asks who holds an item first clears the claims that
 * expired (`itemsExpire`), recording `expired` for their owner, so a claim
 * that ran out is never shown as released by its owner nor silently taken
 * over. The races stay in the statements: each claim, release and action is
 * one conditional write, and a write that changed nothing is read back only
 * to say why.
 *
 * @module
 */

import type { InsertResult, NewJob } from "../../kernel/types.ts";
import type { AuditInsert, Op } from "../../workflow/bookkeeping.ts";
import {
  type StoreWorkItems,
  type WorkItemAddParams,
  type WorkItemAudit,
  type WorkItemEventKind,
  type WorkItemNextParams,
  type WorkItemOutcome,
  type WorkItemRef,
  type WorkItemRow,
  type WorkItemScore,
  workItemTarget,
} from "../store.ts";

/** The actor of what the store does itself: a claim that expired. */
export const STORE_ACTOR = "jobs";

/** A history row to insert. */
export interface NewWorkItemEvent {
  itemId: number;
  at: number;
  actor: string;
  kind: WorkItemEventKind;
  reason: string | null;
  fence: number | null;
  detail: Record<string, unknown>;
}

/** An item in a scope: queue, key and the tenant (null: any). */
interface Scoped {
  queue: string;
  key: string;
  tenant: string | null;
}

/** One primitive read or write of `work_items` and `work_item_events`, and what the store answers ({@linkcode WorkItemOpAnswers}). */
export type WorkItemOp =
  /**
   * Clears claims expired by `now` (of the item `key` when given, else of
   * the queue, else of every queue), at most `limit`, skipping rows another
   * transaction holds; answers each cleared claim.
   */
  | { op: "itemsExpire"; queue: string | null; key: string | null; now: number; limit: number }
  /**
   * Inserts the item, or updates its data and score keeping `requested_at`;
   * answers it and whether it was new, or null when the key is another tenant's.
   */
  | { op: "itemUpsert"; params: WorkItemAddParams }
  /** The item (in the scope), or null. */
  | ({ op: "itemGet" } & Scoped)
  /**
   * Claims the open item for `person` until `expiresAt` when free, or held
   * by `person` (renewed, fence kept), or held by anyone with `force`; a new
   * owner takes a fence one higher. Answers the item, or null.
   */
  | ({ op: "itemTake"; person: string; now: number; expiresAt: number; force: boolean } & Scoped)
  /** Claims the best free open item `person` has not skipped; answers it, or null. */
  | {
    op: "itemNextTake";
    queue: string;
    tenant: string | null;
    person: string;
    now: number;
    expiresAt: number;
  }
  /** Clears `person`'s current claim on the open item (at `fence` when given); answers the item, or null. */
  | ({ op: "itemRelease"; person: string; now: number; fence: number | null } & Scoped)
  /** Hides the open item from `person` until `until`, clearing their claim; refused (null) while another holds it. */
  | ({ op: "itemSkip"; person: string; now: number; until: number } & Scoped)
  /** Gives the open item's claim to `to` with a new fence; answers the item, or null. */
  | ({ op: "itemReassign"; to: string; now: number; expiresAt: number } & Scoped)
  /**
   * Marks the open item done with `outcome`: with `needClaim`, only when
   * `person` holds its current claim at `fence`; else unless another holds
   * it (or `force`). Answers the item, or null.
   */
  | ({
    op: "itemDone";
    person: string;
    needClaim: boolean;
    fence: number | null;
    force: boolean;
    outcome: string;
    reason: string | null;
    now: number;
  } & Scoped)
  /** Inserts the action's job (its unique key taken: the row holding it, a duplicate). */
  | { op: "itemJobInsert"; job: NewJob; now: number }
  /** Rewrites the open item's score when it still came from `fromVersion`; answers its id, or null. */
  | {
    op: "itemRescore";
    queue: string;
    key: string;
    fromVersion: string | null;
    score: WorkItemScore | null;
    now: number;
  }
  /** Records the action's job on the item. */
  | { op: "itemJobSet"; id: number; jobId: number }
  /** Inserts history rows. */
  | { op: "itemEventsInsert"; rows: NewWorkItemEvent[] };

/** A claim `itemsExpire` cleared. */
export interface ExpiredClaim {
  id: number;
  owner: string;
  fence: number;
  expiresAt: number;
}

/** What the store answers to each {@linkcode WorkItemOp}. */
export interface WorkItemOpAnswers {
  itemsExpire: ExpiredClaim[];
  itemUpsert: { item: WorkItemRow; created: boolean } | null;
  itemGet: WorkItemRow | null;
  itemTake: WorkItemRow | null;
  itemNextTake: WorkItemRow | null;
  itemRelease: WorkItemRow | null;
  itemSkip: WorkItemRow | null;
  itemReassign: WorkItemRow | null;
  itemDone: WorkItemRow | null;
  itemJobInsert: InsertResult;
  itemRescore: number | null;
  itemJobSet: void;
  itemEventsInsert: void;
}

/** The ops that answer nothing (PostgreSQL pipelines them). */
export const WORK_ITEM_WRITES: ReadonlySet<WorkItemOp["op"]> = new Set([
  "itemJobSet",
  "itemEventsInsert",
]);

/** The workflow bookkeeping's audit op, which a decision here yields too. */
type AuditOp = Extract<Op, { op: "auditRecord" }>;

/** A generator of work-item ops (and audit rows) returning `R`. */
export type WorkItemOps<R> = Generator<WorkItemOp | AuditOp, R, unknown>;

function* ask<O extends WorkItemOp | AuditOp>(
  op: O,
): WorkItemOps<(WorkItemOpAnswers & { auditRecord: void })[O["op"]]> {
  return (yield op) as (WorkItemOpAnswers & { auditRecord: void })[O["op"]];
}

function scoped(ref: WorkItemRef): Scoped {
  return { queue: ref.queue, key: ref.key, tenant: ref.tenant ?? null };
}

function event(
  item: { id: number },
  at: number,
  actor: string,
  kind: WorkItemEventKind,
  fields: { reason?: string | null; fence?: number | null; detail?: Record<string, unknown> } = {},
): NewWorkItemEvent {
  return {
    itemId: item.id,
    at,
    actor,
    kind,
    reason: fields.reason ?? null,
    fence: fields.fence ?? null,
    detail: fields.detail ?? {},
  };
}

/** The expired claims cleared, as history: `expired`, by the store, for the owner whose claim it was. */
function expiredEvents(cleared: ExpiredClaim[], now: number): NewWorkItemEvent[] {
  return cleared.map((c) =>
    event(c, now, STORE_ACTOR, "expired", {
      fence: c.fence,
      detail: { owner: c.owner, expiredAt: c.expiresAt },
    })
  );
}

/** The audit row `audit` completed with the item it is about. */
function auditOf(audit: WorkItemAudit, item: WorkItemRow, now: number): AuditInsert {
  return {
    at: now,
    actor: audit.actor,
    action: audit.action,
    target: workItemTarget(item.queue, item.key),
    reason: audit.reason,
    details: {
      ...audit.details,
      key: item.key,
      fence: item.claimFence,
      expiresAt: item.claimExpiresAt,
    },
  };
}

/** Clears the expired claims of one item (or of a queue) and records them. */
function* expire(
  queue: string | null,
  key: string | null,
  now: number,
  limit = 1000,
): WorkItemOps<number> {
  const cleared = yield* ask({ op: "itemsExpire", queue, key, now, limit });
  if (cleared.length > 0) yield* ask({ op: "itemEventsInsert", rows: expiredEvents(cleared, now) });
  return cleared.length;
}

/** Why a write on `ref` changed nothing, read after it: the item as it is now. */
function* refusal(
  ref: Scoped,
  now: number,
  person: string,
  fence: number | null = null,
): WorkItemOps<WorkItemOutcome> {
  const item = yield* ask({ op: "itemGet", ...ref });
  if (item === null) return { ok: false, why: "missing", item: null };
  if (item.state === "done") return { ok: false, why: "done", item };
  const held = item.claimOwner !== null && (item.claimExpiresAt ?? 0) > now;
  if (held && item.claimOwner !== person) return { ok: false, why: "held", item };
  if (held && fence !== null && item.claimFence !== fence) return { ok: false, why: "stale", item };
  return { ok: false, why: fence !== null && !held ? "stale" : "unclaimed", item };
}

/** Adds the item or updates it keeping its place; its history says which. */
export function* addItem(
  params: WorkItemAddParams,
): WorkItemOps<{ item: WorkItemRow; created: boolean } | null> {
  const result = yield* ask({ op: "itemUpsert", params });
  if (result === null) return null;
  yield* ask({
    op: "itemEventsInsert",
    rows: [
      event(result.item, params.now, params.actor, result.created ? "added" : "updated", {
        detail: params.score === null
          ? {}
          : { score: params.score.score, ruleVersion: params.score.version },
      }),
    ],
  });
  return result;
}

/** Claims (or renews, or with `breakReason` breaks a hold on) one item. */
export function* claimItem(
  params: WorkItemRef & {
    person: string;
    now: number;
    leaseMs: number;
    breakReason?: string | null;
  },
): WorkItemOps<WorkItemOutcome> {
  const ref = scoped(params);
  const { person, now } = params;
  yield* expire(ref.queue, ref.key, now);
  const force = params.breakReason != null;
  const before = force ? yield* ask({ op: "itemGet", ...ref }) : null;
  const item = yield* ask({
    op: "itemTake",
    ...ref,
    person,
    now,
    expiresAt: now + params.leaseMs,
    force,
  });
  if (item === null) return yield* refusal(ref, now, person);
  const broken = before?.claimOwner != null && before.claimOwner !== person &&
    (before.claimExpiresAt ?? 0) > now;
  const rows = broken
    ? [
      event(item, now, person, "broken", {
        reason: params.breakReason ?? null,
        fence: before!.claimFence,
        detail: { owner: before!.claimOwner },
      }),
    ]
    : [];
  rows.push(event(item, now, person, "claimed", {
    fence: item.claimFence,
    detail: { expiresAt: item.claimExpiresAt },
  }));
  yield* ask({ op: "itemEventsInsert", rows });
  return { ok: true, item };
}

/** Claims the queue's best free item for `person`, or null when none is left. */
export function* nextItem(params: WorkItemNextParams): WorkItemOps<WorkItemRow | null> {
  const { queue, person, now } = params;
  yield* expire(queue, null, now);
  const item = yield* ask({
    op: "itemNextTake",
    queue,
    tenant: params.tenant ?? null,
    person,
    now,
    expiresAt: now + params.leaseMs,
  });
  if (item === null) return null;
  yield* ask({
    op: "itemEventsInsert",
    rows: [
      event(item, now, person, "claimed", {
        fence: item.claimFence,
        detail: { expiresAt: item.claimExpiresAt, by: "next" },
      }),
    ],
  });
  if (params.audit) yield* ask({ op: "auditRecord", rows: [auditOf(params.audit, item, now)] });
  return item;
}

/** Gives back `person`'s current claim. */
export function* releaseItem(
  params: WorkItemRef & { person: string; now: number; fence?: number; reason?: string | null },
): WorkItemOps<WorkItemOutcome> {
  const ref = scoped(params);
  const { person, now } = params;
  yield* expire(ref.queue, ref.key, now);
  const before = yield* ask({ op: "itemGet", ...ref });
  const item = yield* ask({ op: "itemRelease", ...ref, person, now, fence: params.fence ?? null });
  if (item === null) return yield* refusal(ref, now, person, params.fence ?? null);
  yield* ask({
    op: "itemEventsInsert",
    rows: [event(item, now, person, "released", {
      reason: params.reason ?? null,
      fence: before?.claimFence ?? item.claimFence,
    })],
  });
  return { ok: true, item };
}

/** Hides the item from `person` until `until`, giving back their claim. */
export function* skipItem(
  params: WorkItemRef & { person: string; now: number; until: number; reason?: string | null },
): WorkItemOps<WorkItemOutcome> {
  const ref = scoped(params);
  const { person, now } = params;
  yield* expire(ref.queue, ref.key, now);
  const item = yield* ask({ op: "itemSkip", ...ref, person, now, until: params.until });
  if (item === null) return yield* refusal(ref, now, person);
  yield* ask({
    op: "itemEventsInsert",
    rows: [event(item, now, person, "skipped", {
      reason: params.reason ?? null,
      detail: { until: params.until },
    })],
  });
  return { ok: true, item };
}

/** Gives the item's claim to `to`, whoever held it. */
export function* reassignItem(
  params: WorkItemRef & {
    actor: string;
    to: string;
    now: number;
    leaseMs: number;
    reason: string | null;
  },
): WorkItemOps<WorkItemOutcome> {
  const ref = scoped(params);
  const { now } = params;
  yield* expire(ref.queue, ref.key, now);
  const before = yield* ask({ op: "itemGet", ...ref });
  const item = yield* ask({
    op: "itemReassign",
    ...ref,
    to: params.to,
    now,
    expiresAt: now + params.leaseMs,
  });
  if (item === null) return yield* refusal(ref, now, params.actor);
  const from = before?.claimOwner != null && (before.claimExpiresAt ?? 0) > now
    ? before.claimOwner
    : null;
  yield* ask({
    op: "itemEventsInsert",
    rows: [event(item, now, params.actor, "reassigned", {
      reason: params.reason,
      fence: item.claimFence,
      detail: { from, to: params.to, expiresAt: item.claimExpiresAt },
    })],
  });
  return { ok: true, item };
}

/**
 * Acts on the item: done with `action` (the claim checked in that
 * statement), the action's job inserted, the job recorded on the item and
 * in its history, all in the transaction that drives this.
 */
export function* doItem(
  params: WorkItemRef & {
    person: string;
    action: string;
    job: NewJob;
    needClaim: boolean;
    fence: number | null;
    breakReason?: string | null;
    reason: string | null;
    now: number;
  },
): WorkItemOps<WorkItemOutcome & { jobId?: number }> {
  const ref = scoped(params);
  const { person, now } = params;
  yield* expire(ref.queue, ref.key, now);
  const force = !params.needClaim && params.breakReason != null;
  const before = force ? yield* ask({ op: "itemGet", ...ref }) : null;
  const done = yield* ask({
    op: "itemDone",
    ...ref,
    person,
    needClaim: params.needClaim,
    fence: params.fence,
    force,
    outcome: params.action,
    reason: params.reason,
    now,
  });
  if (done === null) {
    return yield* refusal(ref, now, person, params.needClaim ? params.fence : null);
  }
  const inserted = yield* ask({ op: "itemJobInsert", job: params.job, now });
  yield* ask({ op: "itemJobSet", id: done.id, jobId: inserted.id });
  const rows: NewWorkItemEvent[] = [];
  if (
    before?.claimOwner != null && before.claimOwner !== person && (before.claimExpiresAt ?? 0) > now
  ) {
    rows.push(event(done, now, person, "broken", {
      reason: params.breakReason ?? null,
      fence: before.claimFence,
      detail: { owner: before.claimOwner },
    }));
  }
  rows.push(event(done, now, person, "done", {
    reason: params.reason,
    fence: params.needClaim ? params.fence : null,
    detail: { action: params.action, jobId: inserted.id, duplicate: inserted.duplicate },
  }));
  yield* ask({ op: "itemEventsInsert", rows });
  const item = yield* ask({ op: "itemGet", ...ref });
  return { ok: true, item: item ?? { ...done, actionJobId: inserted.id }, jobId: inserted.id };
}

/** Clears the claims expired by `now` (of `queue` when given), recording each. */
export function* expireItems(
  params: { queue?: string; now: number; limit?: number },
): WorkItemOps<number> {
  return yield* expire(params.queue ?? null, null, params.now, params.limit ?? 1000);
}

/** Rewrites an item's score left by another rule version, recorded `rescored` by the store. */
export function* rescoreItem(
  params: {
    queue: string;
    key: string;
    fromVersion: string | null;
    score: WorkItemScore | null;
    now: number;
  },
): WorkItemOps<boolean> {
  const id = yield* ask({ op: "itemRescore", ...params });
  if (id === null) return false;
  yield* ask({
    op: "itemEventsInsert",
    rows: [
      event({ id }, params.now, STORE_ACTOR, "rescored", {
        detail: {
          from: params.fromVersion,
          ruleVersion: params.score?.version ?? null,
          score: params.score?.score ?? null,
        },
      }),
    ],
  });
  return true;
}

/** The seam's methods that are decisions of this file, each one transaction. */
export type WorkItemDecisions = Pick<
  StoreWorkItems,
  | "workItemAdd"
  | "workItemRescore"
  | "workItemClaim"
  | "workItemNext"
  | "workItemRelease"
  | "workItemSkip"
  | "workItemReassign"
  | "workItemDo"
  | "workItemsExpire"
>;

/**
 * The decision methods of {@linkcode StoreWorkItems}, written once: each
 * runs its generator through `decide`, the adapter's way of driving ops in
 * one write transaction (SQLite's write lock, PostgreSQL's `begin`).
 */
export function workItemDecisions(
  decide: <R>(ops: WorkItemOps<R>) => Promise<R>,
): WorkItemDecisions {
  return {
    workItemAdd: (params) => decide(addItem(params)),
    workItemRescore: (params) => decide(rescoreItem(params)),
    workItemClaim: (params) => decide(claimItem(params)),
    workItemNext: (params) => decide(nextItem(params)),
    workItemRelease: (params) => decide(releaseItem(params)),
    workItemSkip: (params) => decide(skipItem(params)),
    workItemReassign: (params) => decide(reassignItem(params)),
    workItemDo: (params) => decide(doItem(params)),
    workItemsExpire: (params) => decide(expireItems(params)),
  };
}
