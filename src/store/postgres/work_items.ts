/**
 * The PostgreSQL side of work items ({@linkcode StoreWorkItems}): the
 * answers to the work-item ops of `lifecycle/work_items.ts`, one statement
 * each, and the store's methods, each a transaction driving one decision
 * (`core.begin` joins a caller's transaction). `next` is one statement
 * (`work_items_next`, migration 0017) for everyone pressing it at once: the
 * presses of a queue that meet one in flight are gathered into the next
 * (`../gathering.ts`). It picks with `FOR UPDATE SKIP LOCKED`, so racing
 * people and daemons get different items without waiting on each other;
 * expiring claims skips the rows another transaction holds, too.
 *
 * @module
 */

import type {
  StoreWorkItems,
  WorkItemEvent,
  WorkItemNextParams,
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
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";
import { insertJobs } from "./jobs.ts";
import { Gathering } from "../gathering.ts";

function columns(q: Sql) {
  return q`id, queue, key, tenant, data, score, score_rate, score_rank, inputs,
    rule_version, requested_at, updated_at, state, claim_owner, claim_expires_at, claim_fence,
    skipped_by, skipped_until, outcome, action_job_id, done_by, done_at, done_reason`;
}

/** The item `ref` names, in its tenant's scope (null: any). */
function scope(q: Sql, ref: { queue: string; key: string; tenant: string | null }) {
  return q`queue = ${ref.queue} AND key = ${ref.key}
    AND (${ref.tenant}::text IS NULL OR tenant = ${ref.tenant}::text)`;
}

function one(rows: readonly Record<string, unknown>[]): WorkItemRow | null {
  return rows[0] ? toWorkItem(rows[0]) : null;
}

async function get(
  q: Sql,
  ref: { queue: string; key: string; tenant: string | null },
): Promise<WorkItemRow | null> {
  return one(
    await q`SELECT w.*, j.state AS action_state FROM work_items AS w
      LEFT JOIN jobs AS j ON j.id = w.action_job_id
      WHERE w.queue = ${ref.queue} AND w.key = ${ref.key}
        AND (${ref.tenant}::text IS NULL OR w.tenant = ${ref.tenant}::text)`,
  );
}

/** Answers one work-item op on `q` (see `PostgresCore.lifecycle`). */
export async function answerWorkItemOp(
  core: PostgresCore,
  op: WorkItemOp,
  q: Sql,
): Promise<unknown> {
  switch (op.op) {
    case "itemsExpire": {
      const rows = await q`UPDATE work_items AS w SET claim_owner = NULL, claim_expires_at = NULL
        FROM (SELECT id, claim_owner, claim_expires_at FROM work_items
          WHERE claim_owner IS NOT NULL AND claim_expires_at <= ${op.now}::bigint
            AND (${op.queue}::text IS NULL OR queue = ${op.queue}::text)
            AND (${op.key}::text IS NULL OR key = ${op.key}::text)
          ORDER BY claim_expires_at, id LIMIT ${op.limit}::bigint
          FOR UPDATE SKIP LOCKED) AS old
        WHERE w.id = old.id
        RETURNING w.id, old.claim_owner, w.claim_fence, old.claim_expires_at`;
      return rows.map((r): ExpiredClaim => ({
        id: Number(r.id),
        owner: String(r.claim_owner),
        fence: Number(r.claim_fence),
        expiresAt: Number(r.claim_expires_at),
      }));
    }
    case "itemUpsert": {
      const p = op.params;
      const score = p.score?.score ?? null;
      const rate = p.score?.rate ?? null;
      const rows = await q`INSERT INTO work_items (queue, key, tenant, data, score, score_rate,
          score_rank, inputs, rule_version, requested_at, updated_at)
        VALUES (${p.queue}, ${p.key}, ${p.tenant}::text, ${JSON.stringify(p.data ?? {})}::jsonb,
          ${score}::float8, ${rate}::float8,
          ${score}::float8 - ${rate}::float8 * ${p.now}::bigint,
          ${p.score ? JSON.stringify(p.score.inputs) : null}::jsonb,
          ${p.score?.version ?? null}::text, ${p.now}::bigint, ${p.now}::bigint)
        ON CONFLICT (queue, key) DO UPDATE SET data = excluded.data, score = excluded.score,
          score_rate = excluded.score_rate,
          score_rank = excluded.score - excluded.score_rate * work_items.requested_at,
          inputs = excluded.inputs, rule_version = excluded.rule_version,
          updated_at = excluded.updated_at
        WHERE work_items.tenant IS NOT DISTINCT FROM excluded.tenant
        RETURNING ${columns(q)}, (xmax = 0) AS created`;
      const row = rows[0];
      return row ? { item: toWorkItem(row), created: row.created === true } : null;
    }
    case "itemGet":
      return await get(q, op);
    case "itemTake":
      return one(
        await q`UPDATE work_items SET
            claim_fence = CASE WHEN claim_owner = ${op.person} AND claim_expires_at > ${op.now}::bigint
              THEN claim_fence ELSE claim_fence + 1 END,
            claim_owner = ${op.person}, claim_expires_at = ${op.expiresAt}::bigint,
            skipped_by = CASE WHEN skipped_by = ${op.person} THEN NULL ELSE skipped_by END,
            skipped_until = CASE WHEN skipped_by = ${op.person} THEN NULL ELSE skipped_until END
          WHERE ${scope(q, op)} AND state = 'open'
            AND (${op.force}::boolean OR claim_owner IS NULL
              OR claim_expires_at <= ${op.now}::bigint OR claim_owner = ${op.person})
          RETURNING ${columns(q)}`,
      );
    case "itemNextTake":
      return one(
        await q`WITH pick AS (
            SELECT id FROM work_items
            WHERE queue = ${op.queue} AND state = 'open'
              AND (${op.tenant}::text IS NULL OR tenant = ${op.tenant}::text)
              AND claim_owner IS NULL
              AND NOT (skipped_by IS NOT NULL AND skipped_by = ${op.person}
                AND skipped_until > ${op.now}::bigint)
            ORDER BY score_rank DESC NULLS LAST, requested_at, id
            LIMIT 1 FOR UPDATE SKIP LOCKED)
          UPDATE work_items AS w SET claim_owner = ${op.person},
            claim_expires_at = ${op.expiresAt}::bigint, claim_fence = w.claim_fence + 1
          FROM pick WHERE w.id = pick.id AND w.claim_owner IS NULL
          RETURNING ${columnsOf(q, "w")}`,
      );
    case "itemRelease":
      return one(
        await q`UPDATE work_items SET claim_owner = NULL, claim_expires_at = NULL
          WHERE ${scope(q, op)} AND state = 'open' AND claim_owner = ${op.person}
            AND claim_expires_at > ${op.now}::bigint
            AND (${op.fence}::bigint IS NULL OR claim_fence = ${op.fence}::bigint)
          RETURNING ${columns(q)}`,
      );
    case "itemSkip":
      return one(
        await q`UPDATE work_items SET skipped_by = ${op.person}, skipped_until = ${op.until}::bigint,
            claim_expires_at = CASE WHEN claim_owner = ${op.person} THEN NULL
              ELSE claim_expires_at END,
            claim_owner = CASE WHEN claim_owner = ${op.person} THEN NULL ELSE claim_owner END
          WHERE ${scope(q, op)} AND state = 'open'
            AND (claim_owner IS NULL OR claim_owner = ${op.person}
              OR claim_expires_at <= ${op.now}::bigint)
          RETURNING ${columns(q)}`,
      );
    case "itemReassign":
      return one(
        await q`UPDATE work_items SET claim_owner = ${op.to},
            claim_expires_at = ${op.expiresAt}::bigint, claim_fence = claim_fence + 1,
            skipped_until = CASE WHEN skipped_by = ${op.to} THEN NULL ELSE skipped_until END,
            skipped_by = CASE WHEN skipped_by = ${op.to} THEN NULL ELSE skipped_by END
          WHERE ${scope(q, op)} AND state = 'open'
          RETURNING ${columns(q)}`,
      );
    case "itemDone":
      return one(
        await q`UPDATE work_items SET state = 'done', outcome = ${op.outcome},
            done_by = ${op.person}, done_at = ${op.now}::bigint, done_reason = ${op.reason}::text,
            updated_at = ${op.now}::bigint, claim_owner = NULL, claim_expires_at = NULL
          WHERE ${scope(q, op)} AND state = 'open'
            AND ((${op.needClaim}::boolean AND claim_owner = ${op.person}
                AND claim_fence = ${op.fence}::bigint AND claim_expires_at > ${op.now}::bigint)
              OR (NOT ${op.needClaim}::boolean AND (${op.force}::boolean OR claim_owner IS NULL
                OR claim_expires_at <= ${op.now}::bigint OR claim_owner = ${op.person})))
          RETURNING ${columns(q)}`,
      );
    case "itemJobInsert":
      return (await insertJobs(core, q, [op.job], op.now))[0]!;
    case "itemRescore": {
      const score = op.score?.score ?? null;
      const rate = op.score?.rate ?? null;
      const rows = await q`UPDATE work_items SET score = ${score}::float8,
          score_rate = ${rate}::float8,
          score_rank = ${score}::float8 - ${rate}::float8 * requested_at,
          inputs = ${op.score ? JSON.stringify(op.score.inputs) : null}::jsonb,
          rule_version = ${op.score?.version ?? null}::text, updated_at = ${op.now}::bigint
        WHERE queue = ${op.queue} AND key = ${op.key} AND state = 'open'
          AND rule_version IS NOT DISTINCT FROM ${op.fromVersion}::text
        RETURNING id`;
      return rows[0] ? Number(rows[0].id) : null;
    }
    case "itemJobSet":
      await q`UPDATE work_items SET action_job_id = ${op.jobId}::bigint
        WHERE id = ${op.id}::bigint`;
      return undefined;
    case "itemEventsInsert": {
      const rows = JSON.stringify(op.rows.map((r) => ({
        item_id: r.itemId,
        at: r.at,
        actor: r.actor,
        kind: r.kind,
        reason: r.reason,
        fence: r.fence,
        detail: r.detail,
      })));
      await q`INSERT INTO work_item_events (item_id, at, actor, kind, reason, fence, detail)
        SELECT e.item_id, e.at, e.actor, e.kind, e.reason, e.fence, e.detail
        FROM ROWS FROM (jsonb_to_recordset(${rows}::text::jsonb)
            AS (item_id bigint, at bigint, actor text, kind text, reason text, fence bigint,
              detail jsonb))
          WITH ORDINALITY AS e(item_id, at, actor, kind, reason, fence, detail, n)
        ORDER BY e.n`;
      return undefined;
    }
  }
}

/**
 * The presses of next of one queue and tenant, in one statement
 * (`work_items_next`, migration 0017): what `nextItem`
 * (lifecycle/work_items.ts) decides for each, in order, with one round trip
 * and one commit for all of them. Answers each press's item (or null), in
 * the order given.
 */
async function nextTogether(
  q: Sql,
  batch: readonly WorkItemNextParams[],
): Promise<(WorkItemRow | null)[]> {
  const { queue } = batch[0]!;
  const tenant = batch[0]!.tenant ?? null;
  const people = JSON.stringify(batch.map((p) => ({
    person: p.person,
    now: p.now,
    expires_at: p.now + p.leaseMs,
    audit: p.audit ?? null,
  })));
  const now = Math.min(...batch.map((p) => p.now));
  const rows = await q`SELECT * FROM work_items_next(${queue}, ${tenant}::text, ${now}::bigint,
    ${people}::text::jsonb)`;
  // The items come in the people's order, each owned by its person; a
  // person pressing twice gets theirs in order too.
  const items = rows.map(toWorkItem);
  let at = 0;
  return batch.map((p) => {
    const item = items[at];
    if (item === undefined || item.claimOwner !== p.person) return null;
    at++;
    return item;
  });
}

/** The item columns qualified by `alias` (an UPDATE ... FROM returns both tables' names). */
function columnsOf(q: Sql, alias: string) {
  const a = q(alias);
  return q`${a}.id, ${a}.queue, ${a}.key, ${a}.tenant, ${a}.data, ${a}.score, ${a}.score_rate,
    ${a}.score_rank, ${a}.inputs, ${a}.rule_version, ${a}.requested_at, ${a}.updated_at,
    ${a}.state, ${a}.claim_owner, ${a}.claim_expires_at, ${a}.claim_fence, ${a}.skipped_by,
    ${a}.skipped_until, ${a}.outcome, ${a}.action_job_id, ${a}.done_by, ${a}.done_at,
    ${a}.done_reason`;
}

/**
 * The {@linkcode StoreWorkItems} methods of the PostgreSQL store, over
 * `core`: reads one statement each, decisions one transaction each (next,
 * one statement for a batch of presses).
 */
export function postgresWorkItems(core: PostgresCore): StoreWorkItems {
  const decide = <R>(ops: WorkItemOps<R>): Promise<R> =>
    core.begin((tx) => core.lifecycle(tx as unknown as Sql, ops));
  // On the store, the presses of next that meet one in flight go together
  // in the next statement; in a caller's transaction, each goes alone.
  const presses = core.tx ? null : new Gathering<WorkItemNextParams, WorkItemRow | null>(
    (params) => JSON.stringify([params.queue, params.tenant ?? null]),
    (batch) => nextTogether(core.sql, batch),
  );
  return core.guard({
    ...workItemDecisions(decide),
    workItemNext: (params: WorkItemNextParams): Promise<WorkItemRow | null> =>
      presses ? presses.add(params) : nextTogether(core.sql, [params]).then((rows) => rows[0]!),
    async workItemGet(params: WorkItemRef): Promise<WorkItemRow | null> {
      return await get(core.sql, { ...params, tenant: params.tenant ?? null });
    },

    async workItemsSummary(
      params: { tenant?: string; now: number },
    ): Promise<WorkQueueSummary[]> {
      const tenant = params.tenant ?? null;
      const rows = await core.sql`SELECT queue, COUNT(*) AS open,
          COUNT(*) FILTER (WHERE claim_owner IS NOT NULL AND claim_expires_at > ${params.now})
            AS claimed,
          MIN(requested_at) AS oldest, SUM(claim_fence) AS fences, MAX(updated_at) AS updated
        FROM work_items WHERE state = 'open' AND (${tenant}::text IS NULL OR tenant = ${tenant}::text)
        GROUP BY queue ORDER BY queue`;
      return rows.map((r) => ({
        queue: String(r.queue),
        open: Number(r.open),
        claimed: Number(r.claimed),
        oldestRequestedAt: Number(r.oldest),
        marker: `${Number(r.fences)}:${Number(r.updated)}`,
      }));
    },

    async workItemsList(
      params: { queue: string; tenant?: string; state?: WorkItemState; limit?: number },
    ): Promise<WorkItemRow[]> {
      const tenant = params.tenant ?? null;
      const rows = await core.sql`SELECT w.*, j.state AS action_state FROM work_items AS w
        LEFT JOIN jobs AS j ON j.id = w.action_job_id
        WHERE w.queue = ${params.queue} AND w.state = ${params.state ?? "open"}
          AND (${tenant}::text IS NULL OR w.tenant = ${tenant}::text)
        ORDER BY w.score_rank DESC NULLS LAST, w.requested_at, w.id
        LIMIT ${params.limit ?? null}::bigint`;
      return rows.map(toWorkItem);
    },

    async workQueueStanding(
      params: { queue: string; tenant?: string; now: number; since: number },
    ): Promise<WorkQueueStanding> {
      const tenant = params.tenant ?? null;
      const [open] = await core.sql`SELECT count(*) AS open,
          count(*) FILTER (WHERE claim_owner IS NOT NULL
            AND claim_expires_at > ${params.now}::bigint) AS claimed,
          count(*) FILTER (WHERE claim_owner IS NOT NULL
            AND claim_expires_at <= ${params.now}::bigint) AS expired,
          min(requested_at) AS oldest
        FROM work_items WHERE queue = ${params.queue} AND state = 'open'
          AND (${tenant}::text IS NULL OR tenant = ${tenant}::text)`;
      const [done] = await core.sql`SELECT count(*) AS n,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY done_at - requested_at) AS lead
        FROM work_items WHERE queue = ${params.queue} AND state = 'done'
          AND done_at >= ${params.since}::bigint
          AND (${tenant}::text IS NULL OR tenant = ${tenant}::text)`;
      return {
        open: Number(open!.open),
        claimed: Number(open!.claimed),
        expired: Number(open!.expired),
        oldestRequestedAt: open!.oldest === null ? null : Number(open!.oldest),
        done: Number(done!.n),
        leadMedianMs: done!.lead === null ? null : Number(done!.lead),
      };
    },

    async workItemsStale(
      params: { queue: string; ruleVersion: string | null; limit: number },
    ): Promise<WorkItemRow[]> {
      const rows = await core.sql`SELECT w.*, NULL AS action_state FROM work_items AS w
        WHERE w.queue = ${params.queue} AND w.state = 'open'
          AND w.rule_version IS DISTINCT FROM ${params.ruleVersion}::text
        ORDER BY w.requested_at, w.id LIMIT ${params.limit}::bigint`;
      return rows.map(toWorkItem);
    },

    async workItemsStats(): Promise<WorkQueueStats[]> {
      // /metrics: each an aggregate over an index (work_items_order,
      // work_items_done, work_item_events_expired).
      const rows = await core.sql`SELECT queue, 'open' AS kind, NULL::text AS outcome,
          count(*) AS n, min(requested_at) AS oldest
        FROM work_items WHERE state = 'open' GROUP BY queue
        UNION ALL
        SELECT queue, 'done', outcome, count(*), NULL
        FROM work_items WHERE state = 'done' GROUP BY queue, outcome
        UNION ALL
        SELECT w.queue, 'expired', NULL, count(*), NULL
        FROM work_item_events AS e JOIN work_items AS w ON w.id = e.item_id
        WHERE e.kind = 'expired' GROUP BY w.queue`;
      return toWorkQueueStats(rows);
    },

    async workItemEvents(params: WorkItemRef): Promise<WorkItemEvent[]> {
      const tenant = params.tenant ?? null;
      const rows = await core.sql`SELECT e.* FROM work_item_events AS e
        JOIN work_items AS w ON w.id = e.item_id
        WHERE w.queue = ${params.queue} AND w.key = ${params.key}
          AND (${tenant}::text IS NULL OR w.tenant = ${tenant}::text)
        ORDER BY e.id`;
      return rows.map(toWorkItemEvent);
    },
  });
}
