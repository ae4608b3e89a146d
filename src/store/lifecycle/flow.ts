/**
 * The limited claim, written once for every store: flow control's limits
 * (`global`, `partition`, `rate`; src/kernel/flow.ts) and the per-tenant
 * fairness of a queue holding tenants' jobs, applied inside the claim's
 * write transaction. The store first takes the queue's flow lock (SQLite:
 * its write lock is the file's; PostgreSQL: a transaction lock per queue,
 * so limited claimers of one queue take turns and each counts the rows the
 * previous one claimed), then reads the limits stored for the queue, the
 * executing rows per key, the first waiting jobs of each key and the
 * buckets, decides ({@linkcode decideFlow}), and moves exactly the rows it
 * decided on, reporting only those its conditional write changed, and
 * writes the buckets it spent.
 *
 * @module
 */

import {
  type Bucket,
  candidatesPerKey,
  decideFlow,
  effectiveLimits,
  type FlowCandidate,
  type FlowLimits,
  isShared,
  type PartitionBy,
  type StoredLimits,
  tokensAt,
} from "../../kernel/flow.ts";
import type { ClaimedJob } from "../../kernel/types.ts";

/** One primitive read or write of a limited claim; what each answers is in the comments. */
export type FlowOp =
  /** Takes the queue's flow lock until the transaction ends (a no-op on SQLite). Answers nothing. */
  | { op: "flowLock"; queue: string }
  /**
   * What a limited claim decides by, read at once ({@linkcode FlowRead}): the
   * limits stored for the queue, its executing rows per key read by `by`,
   * and its runnable jobs (available, due by `due`; none while it is
   * paused). Keyed by tenant, the round robin's turn: up to `width` tenants
   * with runnable jobs, in order from the one after the tenant the last
   * claim served round to that one, each with its first `per` jobs (at most
   * its share of `head`), and the queue's first `head` jobs in claim order.
   * Keyed by an arg or a meta key: each key's first `per` jobs.
   */
  | {
    op: "flowRead";
    queue: string;
    by: PartitionBy;
    width: number;
    head: number;
    per: number;
    due: number;
  }
  /** Records the tenant the queue's round robin last served. Answers nothing. */
  | { op: "flowCursorSet"; queue: string; key: string }
  /** The queue's bucket (scope `queue`, key "") or these keys' (scope `key`): `[key, Bucket][]`. */
  | { op: "flowBuckets"; queue: string; scope: "queue" | "key"; keys: string[] }
  /**
   * Claims the jobs `ids` still available for `node` (attempt and fence up,
   * lease until `now + leaseMs`), starts their schedules and moves the
   * counts: the {@linkcode ClaimedJob}s it changed.
   */
  | { op: "flowTake"; queue: string; node: string; ids: number[]; now: number; leaseMs: number }
  /** Writes buckets of the queue: `[key, Bucket][]` in `scope`. Answers nothing. */
  | { op: "flowBucketsWrite"; queue: string; scope: "queue" | "key"; buckets: [string, Bucket][] };

/** What `flowRead` answers. */
export interface FlowRead {
  limits: StoredLimits | null;
  /** Executing rows per key (`[key, count]`, a missing key as ""). */
  running: [string, number][];
  /** The tenants of the round robin's turn, in its order (empty unless keyed by tenant). */
  walk: string[];
  candidates: FlowCandidate[];
}

/** The ops of a limited claim that answer nothing (a store may send them without waiting). */
export const FLOW_WRITES: ReadonlySet<FlowOp["op"]> = new Set<FlowOp["op"]>([
  "flowLock",
  "flowCursorSet",
  "flowBucketsWrite",
]);

/** What a limited claim is asked. */
export interface FlowClaimParams {
  queue: string;
  node: string;
  limit: number;
  now: number;
  leaseMs: number;
  dueBy?: number;
  /** The limits the node's file (or library) declares for the queue, if any. */
  flow?: FlowLimits | null;
}

/**
 * What a limited claim took, and whether a limit held runnable jobs back
 * (the claimer then tries again soon: slots free up on other nodes, and
 * tokens with time, without a commit that wakes it).
 */
export interface FlowClaim {
  jobs: ClaimedJob[];
  held: boolean;
  /** A limit every node shares applies (`global`, a rate): see `ClaimResult.shared`. */
  shared: boolean;
}

/** A generator of {@linkcode FlowOp}s returning `R`. */
export type FlowOps<R> = Generator<FlowOp, R, unknown>;

const TENANT: PartitionBy = { kind: "tenant" };

/** Tenants a claim's walk reads beyond its free slots (some may have none free). */
const WALK_SPARE = 4;

/** What a limited claim reads ({@linkcode FlowOp} `flowRead`): its key, and how many tenants and jobs. */
export interface FlowScope {
  by: PartitionBy;
  width: number;
  head: number;
  per: number;
}

/**
 * The scope of a limited claim's read, sized by the claimer's slots (the
 * limits it reads may leave fewer). A stored partition limit keys by the
 * file's `by`, else by tenant, so `by` is known before the read.
 */
export function flowScope(p: { limit: number; flow?: FlowLimits | null }): FlowScope {
  return {
    by: p.flow?.partition?.by ?? TENANT,
    width: p.limit + WALK_SPARE,
    head: p.limit,
    per: candidatesPerKey(p.flow ?? {}, p.limit),
  };
}

/**
 * Claims up to `limit` jobs of `queue` within its flow limits (the file's,
 * each overridden by a stored one) and round robin across keys: the
 * partition's keys when the queue is partitioned, else its tenants.
 */
export function* claimFlow(p: FlowClaimParams): FlowOps<FlowClaim> {
  const { queue, now } = p;
  if (p.limit <= 0) return { jobs: [], held: false, shared: isShared(p.flow) };
  yield { op: "flowLock", queue };
  const read = (yield {
    op: "flowRead",
    queue,
    ...flowScope(p),
    due: p.dueBy ?? now,
  }) as FlowRead;
  const limits = effectiveLimits(p.flow ?? null, read.limits);
  const shared = isShared(limits);
  const running = new Map(read.running);
  let total = 0;
  for (const n of running.values()) total += n;
  // The free slots: the claimer's, and no more than `global` leaves.
  const room = Math.min(p.limit, (limits.global ?? Infinity) - total);
  if (room <= 0) return { jobs: [], held: true, shared };
  const { walk, candidates } = read;
  if (candidates.length === 0) return { jobs: [], held: false, shared };
  const queueBucket = limits.rate
    ? ((yield { op: "flowBuckets", queue, scope: "queue", keys: [""] }) as [string, Bucket][])[0]
      ?.[1]
    : undefined;
  const keyBuckets = new Map<string, Bucket>(
    limits.partition?.rate
      ? (yield {
        op: "flowBuckets",
        queue,
        scope: "key",
        keys: [...new Set(candidates.map((c) => c.key))],
      }) as [string, Bucket][]
      : [],
  );
  const ids = decideFlow({
    limits,
    limit: room,
    running,
    queueBucket,
    keyBuckets,
    candidates,
    order: new Map(walk.map((k, i) => [k, i])),
    now,
  });
  // The round robin goes on after the last tenant served (past a window
  // of tenants with no free slot, so it does not stick there).
  const served = ids.length > 0
    ? walk.findLast((k) => ids.some((id) => candidates.find((c) => c.id === id)?.key === k))
    : walk.at(-1);
  if (served !== undefined) yield { op: "flowCursorSet", queue, key: served };
  // Held back: runnable jobs a limit kept from this claim's free slots.
  const held = ids.length < p.limit && (candidates.length > ids.length || room < p.limit);
  if (ids.length === 0) return { jobs: [], held, shared };
  const jobs = (yield {
    op: "flowTake",
    queue,
    node: p.node,
    ids,
    now,
    leaseMs: p.leaseMs,
  }) as ClaimedJob[];
  // Tokens are spent by the jobs the write took, not by those it meant to.
  if (limits.rate) {
    const tokens = tokensAt(queueBucket, limits.rate, now) - jobs.length;
    yield {
      op: "flowBucketsWrite",
      queue,
      scope: "queue",
      buckets: [["", { tokens, refilledAt: now }]],
    };
  }
  const keyRate = limits.partition?.rate;
  if (keyRate && jobs.length > 0) {
    const keyOf = new Map(candidates.map((c) => [c.id, c.key]));
    const took = new Map<string, number>();
    for (const j of jobs) took.set(keyOf.get(j.id)!, (took.get(keyOf.get(j.id)!) ?? 0) + 1);
    const buckets: [string, Bucket][] = [...took].map(([key, n]) => [key, {
      tokens: tokensAt(keyBuckets.get(key), keyRate, now) - n,
      refilledAt: now,
    }]);
    yield { op: "flowBucketsWrite", queue, scope: "key", buckets };
  }
  return { jobs, held, shared };
}
