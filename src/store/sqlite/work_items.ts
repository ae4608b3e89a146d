/**
 * The SQLite side of work items ({@linkcode StoreWorkItems}): the answers to
 * the work-item ops of `lifecycle/work_items.ts`, one statement each (the
 * write lock is the file's, so the read before a write in one op sees what
 * the write changes), and the store's methods, each a write transaction
 * driving one decision. `next` picks and claims in one `UPDATE ... WHERE id
 * = (SELECT ... LIMIT 1)`.
 *
 * @module
 */

import type {
  StoreWorkItems,
  WorkItemEvent,
  WorkItemRef,
  WorkItemRow,
  WorkItemState,
  WorkQueueStanding,
  WorkQueueStats,
  WorkQueueSummary,
} from "../store.ts";
import {
  type ExpiredClaim,
  workItemDecisions,
  type WorkItemOp,
  type WorkItemOps,
} from "../lifecycle/work_items.ts";
import { toWorkItem, toWorkItemEvent, toWorkQueueStats } from "../rows.ts";
import type { SqliteCore } from "./core.ts";
import { insertJobs } from "./jobs.ts";
import type { Row } from "./rows.ts";

const COLUMNS = `id, queue, key, tenant, data, score, score_rate, score_rank, inputs,
  rule_version, requested_at, updated_at, state, claim_owner, claim_expires_at, claim_fence,
  skipped_by, skipped_until, outcome, action_job_id, done_by, done_at, done_reason`;

/** The item's columns and its action's job's state. */
const VIEW = `SELECT w.*, j.state AS action_state FROM work_items AS w
  LEFT JOIN jobs AS j ON j.id = w.action_job_id`;

const SCOPE = `queue = :queue AND key = :key AND (:tenant IS NULL OR tenant = :tenant)`;

const SQL = {
  get: `${VIEW} WHERE w.queue = :queue AND w.key = :key
    AND (:tenant IS NULL OR w.tenant = :tenant)`,
  list: `${VIEW} WHERE w.queue = :queue AND w.state = :state
    AND (:tenant IS NULL OR w.tenant = :tenant)
    ORDER BY w.score_rank DESC, w.requested_at, w.id LIMIT :limit`,
  events: `SELECT e.* FROM work_item_events AS e JOIN work_items AS w ON w.id = e.item_id
    WHERE w.queue = :queue AND w.key = :key AND (:tenant IS NULL OR w.tenant = :tenant)
    ORDER BY e.id`,
  expiring: `SELECT id, claim_owner, claim_fence, claim_expires_at FROM work_items
    WHERE claim_owner IS NOT NULL AND claim_expires_at <= :now
      AND (:queue IS NULL OR queue = :queue) AND (:key IS NULL OR key = :key)
    ORDER BY claim_expires_at, id LIMIT :limit`,
  expire: `UPDATE work_items SET claim_owner = NULL, claim_expires_at = NULL
    WHERE id IN (SELECT value FROM json_each(:ids))`,
  exists: `SELECT id FROM work_items WHERE queue = :queue AND key = :key`,
  upsert: `INSERT INTO work_items (queue, key, tenant, data, score, score_rate, score_rank,
      inputs, rule_version, requested_at, updated_at)
    VALUES (:queue, :key, :tenant, :data, :score, :rate, :score - :rate * :now, :inputs,
      :version, :now, :now)
    ON CONFLICT (queue, key) DO UPDATE SET data = excluded.data, score = excluded.score,
      score_rate = excluded.score_rate,
      score_rank = excluded.score - excluded.score_rate * work_items.requested_at,
      inputs = excluded.inputs, rule_version = excluded.rule_version,
      updated_at = excluded.updated_at
    WHERE work_items.tenant IS excluded.tenant
    RETURNING ${COLUMNS}`,
  take: `UPDATE work_items SET
      claim_fence = CASE WHEN claim_owner = :person AND claim_expires_at > :now
        THEN claim_fence ELSE claim_fence + 1 END,
      claim_owner = :person, claim_expires_at = :expires,
      skipped_by = CASE WHEN skipped_by = :person THEN NULL ELSE skipped_by END,
      skipped_until = CASE WHEN skipped_by = :person THEN NULL ELSE skipped_until END
    WHERE ${SCOPE} AND state = 'open'
      AND (:force = 1 OR claim_owner IS NULL OR claim_expires_at <= :now OR claim_owner = :person)
    RETURNING ${COLUMNS}`,
  nextTake: `UPDATE work_items SET claim_owner = :person, claim_expires_at = :expires,
      claim_fence = claim_fence + 1
    WHERE id = (SELECT id FROM work_items
      WHERE queue = :queue AND state = 'open' AND (:tenant IS NULL OR tenant = :tenant)
        AND claim_owner IS NULL
        AND NOT (skipped_by IS NOT NULL AND skipped_by = :person AND skipped_until > :now)
      ORDER BY score_rank DESC, requested_at, id LIMIT 1)
    RETURNING ${COLUMNS}`,
  release: `UPDATE work_items SET claim_owner = NULL, claim_expires_at = NULL
    WHERE ${SCOPE} AND state = 'open' AND claim_owner = :person AND claim_expires_at > :now
      AND (:fence IS NULL OR claim_fence = :fence)
    RETURNING ${COLUMNS}`,
  skip: `UPDATE work_items SET skipped_by = :person, skipped_until = :until,
      claim_expires_at = CASE WHEN claim_owner = :person THEN NULL ELSE claim_expires_at END,
      claim_owner = CASE WHEN claim_owner = :person THEN NULL ELSE claim_owner END
    WHERE ${SCOPE} AND state = 'open'
      AND (claim_owner IS NULL OR claim_owner = :person OR claim_expires_at <= :now)
    RETURNING ${COLUMNS}`,
  reassign: `UPDATE work_items SET claim_owner = :to, claim_expires_at = :expires,
      claim_fence = claim_fence + 1,
      skipped_until = CASE WHEN skipped_by = :to THEN NULL ELSE skipped_until END,
      skipped_by = CASE WHEN skipped_by = :to THEN NULL ELSE skipped_by END
    WHERE ${SCOPE} AND state = 'open'
    RETURNING ${COLUMNS}`,
  done: `UPDATE work_items SET state = 'done', outcome = :outcome, done_by = :person,
      done_at = :now, done_reason = :reason, updated_at = :now,
      claim_owner = NULL, claim_expires_at = NULL
    WHERE ${SCOPE} AND state = 'open'
      AND ((:need = 1 AND claim_owner = :person AND claim_fence = :fence
          AND claim_expires_at > :now)
        OR (:need = 0 AND (:force = 1 OR claim_owner IS NULL OR claim_expires_at <= :now
          OR claim_owner = :person)))
    RETURNING ${COLUMNS}`,
  jobSet: `UPDATE work_items SET action_job_id = :job WHERE id = :id`,
  // /metrics: each an aggregate over an index (work_items_order, work_items_done,
  // work_item_events_expired).
  stats: `SELECT queue, 'open' AS kind, NULL AS outcome, count(*) AS n, min(requested_at) AS oldest
      FROM work_items WHERE state = 'open' GROUP BY queue
    UNION ALL
    SELECT queue, 'done', outcome, count(*), NULL
      FROM work_items WHERE state = 'done' GROUP BY queue, outcome
    UNION ALL
    SELECT w.queue, 'expired', NULL, count(*), NULL
      FROM work_item_events AS e JOIN work_items AS w ON w.id = e.item_id
      WHERE e.kind = 'expired' GROUP BY w.queue`,
  // A queue's open items counted and their oldest found in its listing's
  // index alone (no row read); its claims through the index of claims.
  openStats: `SELECT COUNT(*) AS open, MIN(requested_at) AS oldest FROM work_items
    WHERE queue = :queue AND state = 'open'`,
  openStatsTenant: `SELECT COUNT(*) AS open, MIN(requested_at) AS oldest FROM work_items
    WHERE queue = :queue AND state = 'open' AND tenant = :tenant`,
  claimStats: `SELECT COALESCE(SUM(claim_expires_at > :now), 0) AS claimed,
      COALESCE(SUM(claim_expires_at <= :now), 0) AS expired
    FROM work_items
    WHERE claim_owner IS NOT NULL AND +queue = :queue AND +state = 'open'
      AND (:tenant IS NULL OR tenant = :tenant)`,
  doneCount: `SELECT COUNT(*) AS n FROM work_items
    WHERE queue = :queue AND state = 'done' AND done_at >= :since
      AND (:tenant IS NULL OR tenant = :tenant)`,
  leadMiddle: `SELECT AVG(lead) AS lead FROM (SELECT done_at - requested_at AS lead
      FROM work_items
      WHERE queue = :queue AND state = 'done' AND done_at >= :since
        AND (:tenant IS NULL OR tenant = :tenant)
      ORDER BY lead LIMIT :take OFFSET :skip)`,
  stale: `SELECT w.*, NULL AS action_state FROM work_items AS w
    WHERE w.queue = :queue AND w.state = 'open' AND w.rule_version IS NOT :version
    ORDER BY w.requested_at, w.id LIMIT :limit`,
  rescore: `UPDATE work_items SET score = :score, score_rate = :rate,
      score_rank = :score - :rate * requested_at, inputs = :inputs, rule_version = :version,
      updated_at = :now
    WHERE queue = :queue AND key = :key AND state = 'open' AND rule_version IS :from
    RETURNING id`,
  summary: `SELECT queue, COUNT(*) AS open,
      SUM(CASE WHEN claim_owner IS NOT NULL AND claim_expires_at > :now THEN 1 ELSE 0 END)
        AS claimed,
      MIN(requested_at) AS oldest, SUM(claim_fence) AS fences, MAX(updated_at) AS updated
    FROM work_items WHERE state = 'open' AND (:tenant IS NULL OR tenant = :tenant)
    GROUP BY queue ORDER BY queue`,
  eventsInsert: `INSERT INTO work_item_events (item_id, at, actor, kind, reason, fence, detail)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5,
      value ->> 6
    FROM json_each(:rows) ORDER BY key`,
} as const;

/** The scope's parameters of an op or a method. */
function scope(ref: { queue: string; key: string; tenant?: string | null }) {
  return { queue: ref.queue, key: ref.key, tenant: ref.tenant ?? null };
}

function one(row: unknown): WorkItemRow | null {
  return row ? toWorkItem(row as Row) : null;
}

/** Answers one work-item op inside the open write (see `SqliteCore.answer`). */
export function answerWorkItemOp(core: SqliteCore, op: WorkItemOp): unknown {
  const q = core.onDemand(SQL);
  switch (op.op) {
    case "itemsExpire": {
      const rows = q.expiring.all({
        queue: op.queue,
        key: op.key,
        now: op.now,
        limit: op.limit,
      }) as Row[];
      if (rows.length === 0) return [];
      q.expire.run({ ids: JSON.stringify(rows.map((r) => Number(r.id))) });
      return rows.map((r): ExpiredClaim => ({
        id: Number(r.id),
        owner: String(r.claim_owner),
        fence: Number(r.claim_fence),
        expiresAt: Number(r.claim_expires_at),
      }));
    }
    case "itemUpsert": {
      const p = op.params;
      const existed = q.exists.get({ queue: p.queue, key: p.key }) !== undefined;
      const row = q.upsert.get({
        queue: p.queue,
        key: p.key,
        tenant: p.tenant,
        data: JSON.stringify(p.data ?? {}),
        score: p.score?.score ?? null,
        rate: p.score?.rate ?? null,
        inputs: p.score ? JSON.stringify(p.score.inputs) : null,
        version: p.score?.version ?? null,
        now: p.now,
      });
      return row ? { item: toWorkItem(row as Row), created: !existed } : null;
    }
    case "itemGet":
      return one(q.get.get(scope(op)));
    case "itemTake":
      return one(q.take.get({
        ...scope(op),
        person: op.person,
        now: op.now,
        expires: op.expiresAt,
        force: op.force ? 1 : 0,
      }));
    case "itemNextTake":
      return one(q.nextTake.get({
        queue: op.queue,
        tenant: op.tenant,
        person: op.person,
        now: op.now,
        expires: op.expiresAt,
      }));
    case "itemRelease":
      return one(q.release.get({ ...scope(op), person: op.person, now: op.now, fence: op.fence }));
    case "itemSkip":
      return one(q.skip.get({ ...scope(op), person: op.person, now: op.now, until: op.until }));
    case "itemReassign":
      return one(q.reassign.get({ ...scope(op), to: op.to, expires: op.expiresAt }));
    case "itemDone":
      return one(q.done.get({
        ...scope(op),
        person: op.person,
        need: op.needClaim ? 1 : 0,
        fence: op.fence,
        force: op.force ? 1 : 0,
        outcome: op.outcome,
        reason: op.reason,
        now: op.now,
      }));
    case "itemJobInsert":
      return insertJobs(core, [op.job], op.now)[0]!;
    case "itemJobSet":
      q.jobSet.run({ id: op.id, job: op.jobId });
      return undefined;
    case "itemRescore": {
      const row = q.rescore.get({
        queue: op.queue,
        key: op.key,
        from: op.fromVersion,
        score: op.score?.score ?? null,
        rate: op.score?.rate ?? null,
        inputs: op.score ? JSON.stringify(op.score.inputs) : null,
        version: op.score?.version ?? null,
        now: op.now,
      }) as Row | undefined;
      return row ? Number(row.id) : null;
    }
    case "itemEventsInsert": {
      const rows = op.rows.map((r) => [
        r.itemId,
        r.at,
        r.actor,
        r.kind,
        r.reason,
        r.fence,
        JSON.stringify(r.detail),
      ]);
      q.eventsInsert.run({ rows: JSON.stringify(rows) });
      return undefined;
    }
  }
}

/** The {@linkcode StoreWorkItems} of the store over `core`. */
export function sqliteWorkItems(core: SqliteCore): StoreWorkItems {
  const q = () => core.onDemand(SQL);
  /** One decision in one write transaction. */
  const decide = <R>(ops: WorkItemOps<R>): Promise<R> =>
    core.exclusive(() => core.write(() => core.lifecycle(ops)));
  return {
    ...workItemDecisions(decide),
    workItemGet(params: WorkItemRef): Promise<WorkItemRow | null> {
      return core.exclusive(() => one(q().get.get(scope(params))));
    },

    workItemsList(
      params: { queue: string; tenant?: string; state?: WorkItemState; limit?: number },
    ): Promise<WorkItemRow[]> {
      return core.exclusive(() =>
        (q().list.all({
          queue: params.queue,
          state: params.state ?? "open",
          tenant: params.tenant ?? null,
          // SQLite's LIMIT -1: no limit.
          limit: params.limit ?? -1,
        }) as Row[]).map(toWorkItem)
      );
    },

    workItemsSummary(params: { tenant?: string; now: number }): Promise<WorkQueueSummary[]> {
      return core.exclusive(() =>
        (q().summary.all({ tenant: params.tenant ?? null, now: params.now }) as Row[]).map(
          (r) => ({
            queue: String(r.queue),
            open: Number(r.open),
            claimed: Number(r.claimed),
            oldestRequestedAt: Number(r.oldest),
            marker: `${Number(r.fences)}:${Number(r.updated)}`,
          }),
        )
      );
    },

    workQueueStanding(
      params: { queue: string; tenant?: string; now: number; since: number },
    ): Promise<WorkQueueStanding> {
      return core.exclusive(() => {
        const where = {
          queue: params.queue,
          tenant: params.tenant ?? null,
          since: params.since,
        };
        const open = (params.tenant === undefined
          ? q().openStats.get({ queue: params.queue })
          : q().openStatsTenant.get({ queue: params.queue, tenant: params.tenant })) as Row;
        const claims = q().claimStats.get({
          queue: params.queue,
          tenant: where.tenant,
          now: params.now,
        }) as Row;
        const done = Number((q().doneCount.get(where) as Row).n);
        // The median: the middle lead time, or the mean of the middle two.
        const middle = done === 0 ? null : q().leadMiddle.get({
          ...where,
          take: 2 - (done % 2),
          skip: Math.floor((done - 1) / 2),
        }) as Row;
        return {
          open: Number(open.open),
          claimed: Number(claims.claimed),
          expired: Number(claims.expired),
          oldestRequestedAt: open.oldest === null ? null : Number(open.oldest),
          done,
          leadMedianMs: middle === null ? null : Number(middle.lead),
        };
      });
    },

    workItemsStale(
      params: { queue: string; ruleVersion: string | null; limit: number },
    ): Promise<WorkItemRow[]> {
      return core.exclusive(() =>
        (q().stale.all({
          queue: params.queue,
          version: params.ruleVersion,
          limit: params.limit,
        }) as Row[]).map(toWorkItem)
      );
    },

    workItemsStats(): Promise<WorkQueueStats[]> {
      return core.exclusive(() => toWorkQueueStats(q().stats.all() as Row[]));
    },

    workItemEvents(params: WorkItemRef): Promise<WorkItemEvent[]> {
      return core.exclusive(() => (q().events.all(scope(params)) as Row[]).map(toWorkItemEvent));
    },
  };
}
