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
   * The limits stored for the queue, the tenant its round robin served
   * last, and its executing rows per key read by `by` ({@linkcode FlowState}).
   */
  | { op: "flowState"; queue: string; by: PartitionBy }
  /**
   * Up to `per` runnable jobs (available, due by `due`) of each key of the
   * queue, none while it is paused ({@linkcode FlowCandidate}[]).
   */
  | { op: "flowCandidates"; queue: string; by: PartitionBy; per: number; due: number }
  /**
   * The round robin's turn ({@linkcode FlowWalk}): up to `width` tenants with
   * runnable jobs, in order from the one after `cursor` (from the first when
   * null) round to `cursor` itself, each with its first `per` runnable jobs,
   * and the queue's first `head` runnable jobs in claim order (keyed by
   * their tenant, "" for none); no job while the queue is paused.
   */
  | {
    op: "flowWalk";
    queue: string;
    cursor: string | null;
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

/** What `flowState` answers. */
export interface FlowState {
  limits: StoredLimits | null;
  cursor: string | null;
  /** Executing rows per key (`[key, count]`, a missing key as ""). */
  running: [string, number][];
}

/** What `flowWalk` answers. */
export interface FlowWalk {
  /** The tenants of the turn, in its order. */
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
}

/** A generator of {@linkcode FlowOp}s returning `R`. */
export type FlowOps<R> = Generator<FlowOp, R, unknown>;

const TENANT: PartitionBy = { kind: "tenant" };

/** Tenants a claim's walk reads beyond its free slots (some may have none free). */
const WALK_SPARE = 4;

/**
 * Claims up to `limit` jobs of `queue` within its flow limits (the file's,
 * each overridden by a stored one) and round robin across keys: the
 * partition's keys when the queue is partitioned, else its tenants.
 */
export function* claimFlow(p: FlowClaimParams): FlowOps<FlowClaim> {
  const { queue, now } = p;
  if (p.limit <= 0) return { jobs: [], held: false };
  yield { op: "flowLock", queue };
  // A stored partition limit keys by the file's `by`, else by tenant: `by` is known now.
  const by = p.flow?.partition?.by ?? TENANT;
  const state = (yield { op: "flowState", queue, by }) as FlowState;
  const limits = effectiveLimits(p.flow ?? null, state.limits);
  const running = new Map(state.running);
  let total = 0;
  for (const n of running.values()) total += n;
  // The free slots: the claimer's, and no more than `global` leaves.
  const room = Math.min(p.limit, (limits.global ?? Infinity) - total);
  if (room <= 0) return { jobs: [], held: true };
  const per = candidatesPerKey(limits, room);
  const due = p.dueBy ?? now;
  let candidates: FlowCandidate[];
  let walk: string[] = [];
  if (by.kind === "tenant") {
    // The tenants in turn from where the last claim stopped (an index walk,
    // a few more than the free slots), and the head of the queue in claim
    // order (jobs of no tenant are served there, as on a plain queue).
    const turn = (yield {
      op: "flowWalk",
      queue,
      cursor: state.cursor,
      width: room + WALK_SPARE,
      head: room,
      per,
      due,
    }) as FlowWalk;
    walk = turn.walk;
    candidates = turn.candidates;
  } else {
    candidates = (yield { op: "flowCandidates", queue, by, per, due }) as FlowCandidate[];
  }
  if (candidates.length === 0) return { jobs: [], held: false };
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
  if (ids.length === 0) return { jobs: [], held };
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
  return { jobs, held };
}
