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
import type { FlowOp } from "../lifecycle/flow.ts";
import type { QueueLimitsRow, StoreFlow } from "../store.ts";
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
  stored: `SELECT * FROM queue_limits WHERE name = :queue`,
  running: `SELECT ${KEY} AS k, count(*) AS n FROM jobs
    WHERE state = 'executing' AND queue = :queue GROUP BY k`,
  // Each tenant's first :per runnable jobs in claim order, and those of no
  // tenant: a walk of the tenants in jobs_available_tenant (one probe each),
  // so a queue's backlog is not read whole.
  tenantCandidates: `WITH RECURSIVE t(k) AS (
      SELECT (SELECT min(tenant) FROM jobs
        WHERE state = 'available' AND queue = :queue AND tenant IS NOT NULL)
      UNION ALL
      SELECT (SELECT min(tenant) FROM jobs
        WHERE state = 'available' AND queue = :queue AND tenant IS NOT NULL AND tenant > t.k)
      FROM t WHERE t.k IS NOT NULL)
    SELECT j.id, j.tenant AS k, j.priority, j.scheduled_at FROM t JOIN jobs AS j
      ON j.id IN (SELECT id FROM jobs
        WHERE state = 'available' AND queue = :queue AND tenant = t.k AND scheduled_at <= :due
        ORDER BY priority, scheduled_at, id LIMIT :per)
    WHERE t.k IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1)
    UNION ALL
    SELECT * FROM (SELECT id, '' AS k, priority, scheduled_at FROM jobs
      WHERE state = 'available' AND queue = :queue AND tenant IS NULL AND scheduled_at <= :due
        AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1)
      ORDER BY priority, scheduled_at, id LIMIT :per)`,
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

/** A row of `queue_limits` as {@linkcode QueueLimitsRow}. */
function toLimits(row: Row): QueueLimitsRow {
  return {
    name: String(row.name),
    global: row.global_limit == null ? null : Number(row.global_limit),
    partitionLimit: row.partition_limit == null ? null : Number(row.partition_limit),
    rate: row.rate_limit == null ? null : {
      limit: Number(row.rate_limit),
      perMs: Number(row.rate_per),
      burst: Number(row.rate_burst),
    },
    updatedAt: Number(row.updated_at),
  };
}

/** Answers one op of a limited claim, inside the open write transaction. */
export function answerFlowOp(core: SqliteCore, op: FlowOp): unknown {
  const s = core.onDemand(SQL);
  switch (op.op) {
    case "flowLock":
      // The write lock is the whole file's.
      return undefined;
    case "flowStored": {
      const row = s.stored.get({ queue: op.queue }) as Row | undefined;
      return row ? toLimits(row) : null;
    }
    case "flowRunning":
      return (s.running.all({ queue: op.queue, ...keyOf(op.by) }) as Row[])
        .map((r) => [String(r.k), Number(r.n)]);
    case "flowCandidates":
      return ((op.by.kind === "tenant"
        ? s.tenantCandidates.all({ queue: op.queue, due: op.due, per: op.per })
        : s.candidates.all({
          queue: op.queue,
          due: op.due,
          per: op.per,
          ...keyOf(op.by),
        })) as Row[]).map((r): FlowCandidate => ({
          id: Number(r.id),
          key: String(r.k),
          priority: Number(r.priority),
          scheduledAt: Number(r.scheduled_at),
        }));
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
      return core.exclusive(() => (q().limitsList.all() as Row[]).map(toLimits));
    },
  };
}
