/**
 * The PostgreSQL side of flow control: the answers to a limited claim's
 * ops ({@linkcode FlowOp}, decided once in src/store/lifecycle/flow.ts),
 * each one statement of the claim's transaction, and the limits an
 * operator stores per queue ({@linkcode StoreFlow}).
 *
 * The flow lock is a transaction-level advisory lock per queue (and
 * schema): limited claimers of one queue take turns, and since each of
 * the claim's statements after the lock takes a fresh snapshot (READ
 * COMMITTED), each counts the rows the claimer before it took. A row lock
 * alone would not do: a count in a statement that waited for a lock still
 * reads the snapshot it started with.
 *
 * @module
 */

import type { Bucket, PartitionBy, StoredLimits } from "../../kernel/flow.ts";
import type { ClaimedJob } from "../../kernel/types.ts";
import type { FlowOp, FlowRead } from "../lifecycle/flow.ts";
import type { QueueLimitsRow, StoreFlow } from "../store.ts";
import { toQueueLimits } from "../rows.ts";
import type { CountTally } from "../job_counts.ts";
import type { PostgresCore } from "./core.ts";
import type { Fragment, Sql } from "./fragments.ts";
import { type Row, toClaimed } from "./rows.ts";

/** A job's key as `by` names it: its tenant, or the text of one of its args or meta keys; "" when none. */
function keyOf(q: Sql, by: PartitionBy): Fragment {
  const kind = by.kind;
  const key = by.kind === "tenant" ? "" : by.key;
  return q`coalesce(CASE ${kind}::text WHEN 'tenant' THEN tenant
    WHEN 'args' THEN args::jsonb ->> ${key}::text ELSE meta::jsonb ->> ${key}::text END, '')`;
}

/** Answers one op of a limited claim on `q`, the claim's open transaction. */
export async function answerFlowOp(
  op: FlowOp,
  q: Sql,
  counts: CountTally,
): Promise<unknown> {
  switch (op.op) {
    case "flowLock":
      await q`SELECT pg_advisory_xact_lock(
        hashtextextended(current_schema() || '/jobs.flow/' || ${op.queue}::text, 0))`;
      return undefined;
    case "flowRead":
      return await flowRead(op, q);
    case "flowCursorSet":
      await q`INSERT INTO flow_cursors (queue, key) VALUES (${op.queue}, ${op.key})
        ON CONFLICT (queue) DO UPDATE SET key = excluded.key`;
      return undefined;
    case "flowBuckets": {
      const rows = await q`SELECT key, tokens, refilled_at FROM flow_buckets
        WHERE queue = ${op.queue} AND scope = ${op.scope} AND key = ANY(${op.keys}::text[])`;
      return rows.map((r): [string, Bucket] => [
        String(r.key),
        { tokens: Number(r.tokens), refilledAt: Number(r.refilled_at) },
      ]);
    }
    case "flowTake": {
      // By the primary key: the state is tested as an expression no partial
      // index of available rows matches, or a table not yet analyzed (a
      // queue just filled) is planned as a walk of the queue's whole index
      // for a few ids (1.5 ms against 0.1 ms at 10,000 waiting jobs).
      const rows = await q`UPDATE jobs SET state = 'executing', attempt = attempt + 1,
          fence = fence + 1, attempted_by = ${op.node}, attempted_at = ${op.now}::bigint,
          lease_expires_at = ${op.now + op.leaseMs}::bigint
        WHERE id = ANY(${op.ids}::bigint[]) AND coalesce(state, '') = 'available'
          AND queue = ${op.queue}
        RETURNING id, queue, worker, args, meta, tags, occurrence, attempt, max_attempts,
          priority, fence, inserted_at, scheduled_at, attempted_at, schedule_id, tenant`;
      counts.move(op.queue, "available", "executing", rows.length);
      const occurrences = rows.filter((r) => r.schedule_id != null).map((r) => Number(r.id));
      if (occurrences.length > 0) {
        await q`UPDATE schedules
          SET last_started_at = greatest(coalesce(last_started_at, 0), ${op.now}::bigint)
          FROM (SELECT id FROM schedules
            WHERE id IN (SELECT schedule_id FROM jobs WHERE id = ANY(${occurrences}::bigint[]))
            ORDER BY id FOR UPDATE) AS s
          WHERE schedules.id = s.id`;
      }
      // In the order decided, as the plain claim hands them out in claim order.
      const order = new Map(op.ids.map((id, i) => [id, i]));
      return rows.map(toClaimed).sort((a: ClaimedJob, b: ClaimedJob) =>
        order.get(a.id)! - order.get(b.id)!
      );
    }
    case "flowBucketsWrite": {
      const buckets = JSON.stringify(op.buckets.map(([key, b]) => [key, b.tokens, b.refilledAt]));
      await q`INSERT INTO flow_buckets (queue, scope, key, tokens, refilled_at)
        SELECT ${op.queue}, ${op.scope}, b ->> 0, (b ->> 1)::double precision, (b ->> 2)::bigint
        FROM jsonb_array_elements(${buckets}::text::jsonb) AS b
        ON CONFLICT (queue, scope, key) DO UPDATE
          SET tokens = excluded.tokens, refilled_at = excluded.refilled_at`;
      return undefined;
    }
  }
}

/** The {@linkcode StoreFlow} methods of the PostgreSQL store, over `core`. */
export function postgresFlow(core: PostgresCore): StoreFlow {
  return core.guard({
    async queueLimitsSet(
      params: { name: string; limits: StoredLimits; now: number },
    ): Promise<void> {
      const { name, limits, now } = params;
      const q = core.sql;
      if (limits.global === null && limits.partitionLimit === null && limits.rate === null) {
        await q`DELETE FROM queue_limits WHERE name = ${name}`;
        return;
      }
      await q`INSERT INTO queue_limits (name, global_limit, partition_limit, rate_limit,
          rate_per, rate_burst, updated_at)
        VALUES (${name}, ${limits.global}::integer, ${limits.partitionLimit}::integer,
          ${limits.rate?.limit ?? null}::integer, ${limits.rate?.perMs ?? null}::bigint,
          ${limits.rate?.burst ?? null}::integer, ${now}::bigint)
        ON CONFLICT (name) DO UPDATE SET global_limit = excluded.global_limit,
          partition_limit = excluded.partition_limit, rate_limit = excluded.rate_limit,
          rate_per = excluded.rate_per, rate_burst = excluded.rate_burst,
          updated_at = excluded.updated_at`;
    },

    async queueLimitsList(): Promise<QueueLimitsRow[]> {
      return (await core.sql`SELECT * FROM queue_limits ORDER BY name`).map(toQueueLimits);
    },
  });
}

/**
 * The answer to `flowRead`: one statement, so a limited claim holds the
 * queue's flow lock for one round trip of reading. Each step of the
 * tenants' walk is the next tenant in index order (`ORDER BY tenant LIMIT
 * 1`), not `min(tenant)`: planned without statistics (a queue just
 * filled), `min` over a range aggregated every waiting job of the queue,
 * some 7 ms at 10,000 of them, under the flow lock. Its first row ('s')
 * carries the stored limits and the executing rows per key as JSON; rows
 * 'k' name the tenants of the round robin's turn in order, rows 'j' are the
 * candidate jobs.
 */
async function flowRead(op: Extract<FlowOp, { op: "flowRead" }>, q: Sql): Promise<FlowRead> {
  const state = q`SELECT 's' AS row, jsonb_build_object(
      'limits', (SELECT to_jsonb(l) FROM queue_limits AS l WHERE l.name = ${op.queue}),
      'running', (SELECT coalesce(jsonb_agg(jsonb_build_array(k, n)), '[]'::jsonb)
        FROM (SELECT ${keyOf(q, op.by)} AS k, count(*) AS n FROM jobs
          WHERE state = 'executing' AND queue = ${op.queue} GROUP BY 1) AS r))::text AS k,
      NULL::bigint AS n, NULL::integer AS priority, NULL::bigint AS scheduled_at`;
  const rows = op.by.kind === "tenant"
    ? await q`WITH RECURSIVE
        cur AS (SELECT (SELECT key FROM flow_cursors WHERE queue = ${op.queue}) AS key),
        a(k) AS (
          SELECT (SELECT tenant FROM jobs
            WHERE state = 'available' AND queue = ${op.queue}
              AND tenant > (SELECT coalesce(key, '') FROM cur)
            ORDER BY tenant LIMIT 1)
          UNION ALL
          SELECT (SELECT tenant FROM jobs
            WHERE state = 'available' AND queue = ${op.queue} AND tenant > a.k
            ORDER BY tenant LIMIT 1)
          FROM a WHERE a.k IS NOT NULL),
        b(k) AS (
          SELECT (SELECT tenant FROM jobs
            WHERE state = 'available' AND queue = ${op.queue} AND tenant IS NOT NULL
            ORDER BY tenant LIMIT 1)
          UNION ALL
          SELECT (SELECT tenant FROM jobs
            WHERE state = 'available' AND queue = ${op.queue} AND tenant > b.k
            ORDER BY tenant LIMIT 1)
          FROM b WHERE b.k IS NOT NULL AND b.k < (SELECT coalesce(key, '') FROM cur)),
        walk AS MATERIALIZED (
          SELECT k, row_number() OVER (ORDER BY lap, k) AS turn FROM (
            (SELECT k, 0 AS lap FROM a WHERE k IS NOT NULL LIMIT ${op.width}::bigint)
            UNION ALL
            (SELECT k, 1 FROM b
              WHERE k IS NOT NULL AND k <= (SELECT key FROM cur)
              LIMIT ${op.width}::bigint)) AS w
          ORDER BY lap, k LIMIT ${op.width}::bigint)
      ${state}
      UNION ALL
      SELECT 'k', k, turn, NULL, NULL FROM walk
      UNION ALL
      SELECT 'j', coalesce(tenant, ''), id, priority, scheduled_at FROM (
        (SELECT id, tenant, priority, scheduled_at FROM jobs
          WHERE state = 'available' AND queue = ${op.queue}
            AND scheduled_at <= ${op.due}::bigint
          ORDER BY priority, scheduled_at, id LIMIT ${op.head}::bigint)
        UNION
        SELECT j.id, j.tenant, j.priority, j.scheduled_at
        FROM walk AS w CROSS JOIN LATERAL (
          SELECT id, tenant, priority, scheduled_at FROM jobs
          WHERE state = 'available' AND queue = ${op.queue} AND tenant = w.k
            AND scheduled_at <= ${op.due}::bigint
          ORDER BY priority, scheduled_at, id
          -- A fair share of the slots each (the head fills what a short key leaves).
          LIMIT least(${op.per}::bigint, (${op.head}::bigint + (SELECT count(*) FROM walk) - 1)
            / greatest(1, (SELECT count(*) FROM walk)))) AS j
      ) AS c
      WHERE NOT EXISTS (SELECT 1 FROM queues WHERE name = ${op.queue} AND paused)`
    // Each key's first `per` runnable jobs in claim order: a key read from
    // args or meta has no index, so every runnable job of the queue is read.
    : await q`${state}
      UNION ALL
      SELECT 'j', k, id, priority, scheduled_at FROM (
        SELECT id, k, priority, scheduled_at,
          row_number() OVER (PARTITION BY k ORDER BY priority, scheduled_at, id) AS r
        FROM (SELECT id, priority, scheduled_at, ${keyOf(q, op.by)} AS k FROM jobs
          WHERE state = 'available' AND queue = ${op.queue}
            AND scheduled_at <= ${op.due}::bigint
            AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ${op.queue} AND paused)) AS a
      ) AS b
      WHERE r <= ${op.per}::bigint`;
  const read: FlowRead = { limits: null, running: [], walk: [], candidates: [] };
  for (const r of rows) {
    if (r.row === "s") {
      const s = JSON.parse(String(r.k)) as { limits: Row | null; running: [unknown, number][] };
      read.limits = s.limits === null ? null : toQueueLimits(s.limits);
      read.running = s.running.map(([k, n]) => [String(k), Number(n)]);
    } else if (r.row === "k") read.walk[Number(r.n) - 1] = String(r.k);
    else {
      read.candidates.push({
        id: Number(r.n),
        key: String(r.k),
        priority: Number(r.priority),
        scheduledAt: Number(r.scheduled_at),
      });
    }
  }
  return read;
}
