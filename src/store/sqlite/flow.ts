/**
 * The SQLite side of flow control: the answers to a limited claim's ops
 * ({@linkcode FlowOp}, decided once in src/store/lifecycle/flow.ts), each
 * one statement inside the claim's write transaction (whose write lock is
 * the file's, so the flow lock is a no-op), and the limits an operator
 * stores per queue ({@linkcode StoreFlow}).
 *
 * @module
 */

import type { Bucket, FlowCandidate, PartitionBy, StoredLimits } from "../../kernel/flow.ts";
import type { ClaimedJob } from "../../kernel/types.ts";
import type { FlowOp, FlowRead } from "../lifecycle/flow.ts";
import type { QueueLimitsRow, StoreFlow } from "../store.ts";
import { toQueueLimits } from "../rows.ts";
import { returnArrays, type SqliteCore } from "./core.ts";
import { type Row, toClaimed } from "./rows.ts";

/**
 * A job's key as `:kind` and `:path` name it: its tenant, or the text of
 * one of its args or meta keys; "" when it has none. One fixed text, the
 * choice bound.
 */
const KEY = `coalesce(CAST(CASE :kind WHEN 'tenant' THEN tenant
    WHEN 'args' THEN json_extract(args, :path) ELSE json_extract(meta, :path) END AS TEXT), '')`;

const SQL = {
  // The stored limits, the round robin's cursor, and the executing rows per key.
  state: `SELECT l.*, (SELECT key FROM flow_cursors WHERE queue = :queue) AS cursor,
      (SELECT json_group_array(json_array(k, n)) FROM (SELECT ${KEY} AS k, count(*) AS n
        FROM jobs WHERE state = 'executing' AND queue = :queue GROUP BY k)) AS running
    FROM (SELECT 1) LEFT JOIN queue_limits AS l ON l.name = :queue`,
  // The round robin's turn: up to :width tenants with runnable jobs after
  // :after, then (when :wrap) from the first round to :after itself, each a
  // probe of jobs_available_tenant; rows 'k' name them in order, rows 'j'
  // are the jobs: each tenant's first :per (at most its share of :head
  // slots) and the queue's first :head.
  walk: `WITH RECURSIVE
      a(k) AS (
        SELECT (SELECT min(tenant) FROM jobs
          WHERE state = 'available' AND queue = :queue AND tenant IS NOT NULL AND tenant > :after)
        UNION ALL
        SELECT (SELECT min(tenant) FROM jobs
          WHERE state = 'available' AND queue = :queue AND tenant IS NOT NULL AND tenant > a.k)
        FROM a WHERE a.k IS NOT NULL),
      b(k) AS (
        SELECT (SELECT min(tenant) FROM jobs
          WHERE state = 'available' AND queue = :queue AND tenant IS NOT NULL)
        UNION ALL
        SELECT (SELECT min(tenant) FROM jobs
          WHERE state = 'available' AND queue = :queue AND tenant IS NOT NULL AND tenant > b.k)
        FROM b WHERE b.k IS NOT NULL AND b.k < :after),
      walk(k, turn) AS (
        SELECT k, row_number() OVER (ORDER BY lap, k) FROM (
          SELECT k, 0 AS lap FROM (SELECT k FROM a WHERE k IS NOT NULL LIMIT :width)
          UNION ALL
          SELECT k, 1 FROM (SELECT k FROM b WHERE :wrap AND k IS NOT NULL AND k <= :after
            LIMIT :width))
        ORDER BY lap, k LIMIT :width)
    SELECT 'k' AS row, k, turn AS n, NULL AS priority, NULL AS scheduled_at FROM walk
    UNION ALL
    SELECT 'j', coalesce(tenant, ''), id, priority, scheduled_at FROM jobs
    WHERE id IN (
        SELECT id FROM (SELECT id FROM jobs
          WHERE state = 'available' AND queue = :queue AND scheduled_at <= :due
          ORDER BY priority, scheduled_at, id LIMIT :head)
        UNION
        SELECT j.id FROM walk AS w JOIN jobs AS j ON j.id IN (SELECT id FROM jobs
          WHERE state = 'available' AND queue = :queue AND tenant = w.k
            AND scheduled_at <= :due
          ORDER BY priority, scheduled_at, id
          -- A fair share of the slots each (the head fills what a short key leaves).
          LIMIT min(:per, CAST((:head + (SELECT count(*) FROM walk) - 1)
            / max(1, (SELECT count(*) FROM walk)) AS INTEGER))))
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1)`,
  cursorSet: `INSERT INTO flow_cursors (queue, key) VALUES (:queue, :key)
    ON CONFLICT (queue) DO UPDATE SET key = excluded.key`,
  // Each key's first :per runnable jobs in claim order: a key read from
  // args or meta has no index, so every runnable job of the queue is read.
  candidates: `SELECT id, k, priority, scheduled_at FROM (
      SELECT id, priority, scheduled_at, ${KEY} AS k,
        row_number() OVER (PARTITION BY ${KEY} ORDER BY priority, scheduled_at, id) AS r
      FROM jobs
      WHERE state = 'available' AND queue = :queue AND scheduled_at <= :due
        AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1))
    WHERE r <= :per`,
  buckets: `SELECT key, tokens, refilled_at FROM flow_buckets
    WHERE queue = :queue AND scope = :scope AND key IN (SELECT value FROM json_each(:keys))`,
  // The claim's columns, as SQL.claim in jobs.ts returns them (see toClaimed).
  take: `UPDATE jobs SET state = 'executing', attempt = attempt + 1, fence = fence + 1,
      attempted_by = :node, attempted_at = :now, lease_expires_at = :lease
    WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'available' AND queue = :queue
    RETURNING id, worker, args, nullif(meta, '{}'), nullif(tags, '[]'), occurrence, attempt,
      max_attempts, priority, fence, inserted_at, scheduled_at, schedule_id, tenant`,
  started: `UPDATE schedules SET last_started_at = max(coalesce(last_started_at, 0), :now)
    WHERE id = :schedule`,
  bucketsWrite: `INSERT INTO flow_buckets (queue, scope, key, tokens, refilled_at)
    SELECT :queue, :scope, value ->> 0, value ->> 1, value ->> 2 FROM json_each(:buckets) WHERE true
    ON CONFLICT (queue, scope, key) DO UPDATE
      SET tokens = excluded.tokens, refilled_at = excluded.refilled_at`,
  limitsSet: `INSERT INTO queue_limits (name, global_limit, partition_limit, rate_limit, rate_per,
      rate_burst, updated_at)
    VALUES (:name, :global, :partition, :rate, :per, :burst, :now)
    ON CONFLICT (name) DO UPDATE SET global_limit = excluded.global_limit,
      partition_limit = excluded.partition_limit, rate_limit = excluded.rate_limit,
      rate_per = excluded.rate_per, rate_burst = excluded.rate_burst,
      updated_at = excluded.updated_at`,
  limitsDelete: `DELETE FROM queue_limits WHERE name = :name`,
  limitsList: `SELECT * FROM queue_limits ORDER BY name`,
} as const;

/** The bound `:kind` and `:path` of {@linkcode KEY} for `by`. */
function keyOf(by: PartitionBy): { kind: string; path: string } {
  return by.kind === "tenant"
    ? { kind: "tenant", path: "$" }
    : { kind: by.kind, path: `$."${by.key}"` };
}

/** A row of a candidates statement (its id in `id`) as a {@linkcode FlowCandidate}. */
function toCandidate(r: Row, id: unknown): FlowCandidate {
  return {
    id: Number(id),
    key: String(r.k),
    priority: Number(r.priority),
    scheduledAt: Number(r.scheduled_at),
  };
}

/** Answers one op of a limited claim, inside the open write transaction. */
export function answerFlowOp(core: SqliteCore, op: FlowOp): unknown {
  const s = core.onDemand(SQL);
  switch (op.op) {
    case "flowLock":
      // The write lock is the whole file's.
      return undefined;
    case "flowRead": {
      const state = s.state.get({ queue: op.queue, ...keyOf(op.by) }) as Row;
      const cursor = state.cursor == null ? null : String(state.cursor);
      const read: FlowRead = {
        limits: state.name == null ? null : toQueueLimits(state),
        running: (JSON.parse(String(state.running)) as [unknown, number][])
          .map(([k, n]) => [String(k), Number(n)]),
        walk: [],
        candidates: [],
      };
      if (op.by.kind !== "tenant") {
        const rows = s.candidates.all({
          queue: op.queue,
          due: op.due,
          per: op.per,
          ...keyOf(op.by),
        }) as Row[];
        read.candidates = rows.map((r) => toCandidate(r, r.id));
        return read;
      }
      const rows = s.walk.all({
        queue: op.queue,
        after: cursor ?? "",
        wrap: cursor === null ? 0 : 1,
        width: op.width,
        head: op.head,
        per: op.per,
        due: op.due,
      }) as Row[];
      for (const r of rows) {
        if (r.row === "k") read.walk[Number(r.n) - 1] = String(r.k);
        else read.candidates.push(toCandidate(r, r.n));
      }
      return read;
    }
    case "flowCursorSet":
      s.cursorSet.run({ queue: op.queue, key: op.key });
      return undefined;
    case "flowBuckets":
      return (s.buckets.all({
        queue: op.queue,
        scope: op.scope,
        keys: JSON.stringify(op.keys),
      }) as Row[]).map((r): [string, Bucket] => [
        String(r.key),
        { tokens: Number(r.tokens), refilledAt: Number(r.refilled_at) },
      ]);
    case "flowTake": {
      returnArrays(s.take);
      const rows = s.take.all({
        queue: op.queue,
        node: op.node,
        now: op.now,
        lease: op.now + op.leaseMs,
        ids: JSON.stringify(op.ids),
      }) as unknown as unknown[][];
      const jobs: ClaimedJob[] = [];
      for (const row of rows) {
        core.counts.moved(row[0] as number, op.queue, "available", "executing");
        const schedule = row[12] as string | null;
        if (schedule != null) s.started.run({ schedule, now: op.now });
        jobs.push(toClaimed(row, op.queue, op.now));
      }
      // In claim order, as the plain claim hands them out.
      const order = new Map(op.ids.map((id, i) => [id, i]));
      return jobs.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    }
    case "flowBucketsWrite":
      s.bucketsWrite.run({
        queue: op.queue,
        scope: op.scope,
        buckets: JSON.stringify(op.buckets.map(([key, b]) => [key, b.tokens, b.refilledAt])),
      });
      return undefined;
  }
}

/** The {@linkcode StoreFlow} of the store over `core`. */
export function sqliteFlow(core: SqliteCore): StoreFlow {
  const q = () => core.onDemand(SQL);
  return {
    queueLimitsSet(
      params: { name: string; limits: StoredLimits; now: number },
    ): Promise<void> {
      const { name, limits, now } = params;
      return core.exclusive(() =>
        core.write(() => {
          if (limits.global === null && limits.partitionLimit === null && limits.rate === null) {
            q().limitsDelete.run({ name });
            return;
          }
          q().limitsSet.run({
            name,
            global: limits.global,
            partition: limits.partitionLimit,
            rate: limits.rate?.limit ?? null,
            per: limits.rate?.perMs ?? null,
            burst: limits.rate?.burst ?? null,
            now,
          });
        })
      );
    },

    queueLimitsList(): Promise<QueueLimitsRow[]> {
      return core.exclusive(() => (q().limitsList.all() as Row[]).map(toQueueLimits));
    },
  };
}
