/**
 * Flow control's words and its pure decisions: a queue's limits across
 * every node (`global`), per partition key (`partition`), on starts per
 * period (`rate`, a token bucket), and how a limited claim hands its free
 * slots round robin across keys so a big key cannot starve a small one.
 *
 * The store applies them inside the claim's write transaction
 * (`src/store/lifecycle/flow.ts`): the counts of executing rows, the
 * waiting rows and the buckets it reads there are the ones it writes
 * against, so two nodes cannot both see a free slot.
 *
 * @module
 */

/** What a partition key is read from: the job's tenant, one of its args, or one of its meta keys. */
export type PartitionBy =
  | { kind: "tenant" }
  | { kind: "args"; key: string }
  | { kind: "meta"; key: string };

/** At most `limit` starts per `perMs`, with up to `burst` at once after a quiet spell. */
export interface RateLimit {
  limit: number;
  perMs: number;
  /** The bucket's size: the most starts at once. @default limit */
  burst: number;
}

/** A queue's flow limits, as the file or the library declares them. */
export interface FlowLimits {
  /** At most this many executing across every node on the store. */
  global?: number;
  /** At most `limit` executing per partition key; `rate` per key when given. */
  partition?: { by: PartitionBy; limit?: number; rate?: RateLimit };
  /** At most this many starts per period across every node. */
  rate?: RateLimit;
}

/** Limits an operator stored (`jobs queues set`); each overrides the file's when set. */
export interface StoredLimits {
  global: number | null;
  partitionLimit: number | null;
  rate: RateLimit | null;
}

/** The name of a partition key a job without one falls in (no tenant, no such arg). */
export const NO_KEY = "";

/** A key name of `args.<key>` / `meta.<key>`: letters, digits, `_` and `-`. */
export const PARTITION_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Reads `tenant`, `args.<key>` or `meta.<key>` as a {@linkcode PartitionBy};
 * null when it is none of them.
 */
export function parsePartitionBy(text: string): PartitionBy | null {
  if (text === "tenant") return { kind: "tenant" };
  const dot = text.indexOf(".");
  const kind = text.slice(0, dot);
  const key = text.slice(dot + 1);
  if ((kind === "args" || kind === "meta") && PARTITION_KEY.test(key)) return { kind, key };
  return null;
}

/** `by` as written: `tenant`, `args.<key>`, `meta.<key>`. */
export function partitionByText(by: PartitionBy): string {
  return by.kind === "tenant" ? "tenant" : `${by.kind}.${by.key}`;
}

/**
 * The limits that apply: each limit an operator stored overrides the
 * file's (a stored partition limit or rate applies with the file's `by`,
 * else per tenant).
 */
export function effectiveLimits(file: FlowLimits | null, stored: StoredLimits | null): FlowLimits {
  const out: FlowLimits = { ...(file ?? {}) };
  if (stored === null) return out;
  if (stored.global !== null) out.global = stored.global;
  if (stored.rate !== null) out.rate = stored.rate;
  if (stored.partitionLimit !== null) {
    out.partition = {
      ...(out.partition ?? { by: { kind: "tenant" } }),
      limit: stored.partitionLimit,
    };
  }
  return out;
}

/** Whether `limits` limits anything. */
export function isLimited(limits: FlowLimits | null | undefined): boolean {
  return limits != null &&
    (limits.global !== undefined || limits.partition !== undefined || limits.rate !== undefined);
}

/**
 * Whether `limits` hold a limit every node shares, `global` or a rate (the
 * queue's or its keys'): a job claimed ahead of a free slot would hold a
 * share of it another node could use now.
 */
export function isShared(limits: FlowLimits | null | undefined): boolean {
  return limits?.global !== undefined || hasRate(limits);
}

/** Whether `limits` hold a rate (the queue's, or its keys'): a token bucket takes part. */
export function hasRate(limits: FlowLimits | null | undefined): boolean {
  return limits?.rate !== undefined || limits?.partition?.rate !== undefined;
}

/** A token bucket as stored: its tokens when last written, and when. */
export interface Bucket {
  tokens: number;
  refilledAt: number;
}

/** The tokens a bucket holds at `now`: refilled at `limit / perMs` a ms, up to `burst`; full when new. */
export function tokensAt(bucket: Bucket | undefined, rate: RateLimit, now: number): number {
  if (bucket === undefined) return rate.burst;
  const elapsed = Math.max(0, now - bucket.refilledAt);
  return Math.min(rate.burst, bucket.tokens + elapsed * rate.limit / rate.perMs);
}

/** One waiting job a limited claim may take: its key and its place in claim order. */
export interface FlowCandidate {
  id: number;
  key: string;
  priority: number;
  scheduledAt: number;
}

/** What a limited claim read in its transaction. */
export interface FlowView {
  limits: FlowLimits;
  /** Slots this claim asks for (the producer's free slots). */
  limit: number;
  /** Executing rows of the queue per key (the partition's, else the tenant). */
  running: Map<string, number>;
  /** The queue's bucket (when `rate`), and each candidate key's (when `partition.rate`). */
  queueBucket?: Bucket;
  keyBuckets: Map<string, Bucket>;
  /** The first waiting jobs of each key, in claim order within each key. */
  candidates: FlowCandidate[];
  /** Keys in the order of the round robin's turn (first served first), when it walks them. */
  order?: Map<string, number>;
  now: number;
}

/**
 * Picks the jobs a limited claim takes: no more than the free slots of the
 * queue (`global` less what executes), its tokens (`rate`), and per key
 * what its `partition.limit` and key bucket leave; among those, round
 * robin across keys: the job that would be its key's n-th running goes
 * before any key's (n+1)-th, claim order (priority, due, id) breaking ties,
 * so a key with nothing running goes first and a backlog of one key waits
 * behind the first job of every other. Returns the ids, in that order.
 */
export function decideFlow(view: FlowView): number[] {
  const { limits, now } = view;
  let room = view.limit;
  let total = 0;
  for (const n of view.running.values()) total += n;
  if (limits.global !== undefined) room = Math.min(room, limits.global - total);
  const queueTokens = limits.rate ? tokensAt(view.queueBucket, limits.rate, now) : Infinity;
  room = Math.min(room, Math.floor(queueTokens));
  const keyRate = limits.partition?.rate;
  const keyLimit = limits.partition?.limit ?? Infinity;
  // Keys out of the walk (met at the head of the queue) after those whose turn it is.
  const turn = (key: string) => view.order?.get(key) ?? Number.MAX_SAFE_INTEGER;
  // Within each key, claim order decides its n-th job.
  const ordered = [...view.candidates].sort((a, b) =>
    a.key < b.key ? -1 : a.key > b.key ? 1 : a.priority - b.priority ||
      a.scheduledAt - b.scheduledAt || a.id - b.id
  );
  const place = new Map<number, number>();
  const seen = new Map<string, number>();
  for (const c of ordered) {
    const nth = (seen.get(c.key) ?? 0) + 1;
    seen.set(c.key, nth);
    place.set(c.id, (view.running.get(c.key) ?? 0) + nth);
  }
  ordered.sort((a, b) =>
    place.get(a.id)! - place.get(b.id)! || a.priority - b.priority ||
    turn(a.key) - turn(b.key) || a.scheduledAt - b.scheduledAt || a.id - b.id
  );
  const taken = new Map<string, number>();
  const ids: number[] = [];
  const keyTokens = new Map<string, number>();
  for (const c of ordered) {
    if (ids.length >= room) break;
    const already = taken.get(c.key) ?? 0;
    if ((view.running.get(c.key) ?? 0) + already + 1 > keyLimit) continue;
    if (keyRate) {
      let tokens = keyTokens.get(c.key);
      if (tokens === undefined) {
        tokens = tokensAt(view.keyBuckets.get(c.key), keyRate, now);
        keyTokens.set(c.key, tokens);
      }
      if (tokens - already < 1) continue;
    }
    taken.set(c.key, already + 1);
    ids.push(c.id);
  }
  return ids;
}

/**
 * How many waiting jobs of each key a limited claim reads: no key can take
 * more than the claim's slots, nor more than its partition limit.
 */
export function candidatesPerKey(limits: FlowLimits, limit: number): number {
  return Math.max(1, Math.min(limit, limits.partition?.limit ?? limit));
}
