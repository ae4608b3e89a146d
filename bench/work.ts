/**
 * The work phase: one scored work queue with 100,000 open items (`WORK_N`),
 * on SQLite and on PostgreSQL, and the two reads people wait on.
 *
 * - The listing: the queue's first page of open items, best first, each
 *   scored at now with its inputs, read through the door
 *   (`listWorkItems`, as `jobs work ls --limit` and the console read it),
 *   `WORK_REPS` times, the median (aim: under 50 ms). Beside it, the TUI's
 *   Work tab's read (`watchWorkQueue`: the same page and the queue's stats,
 *   a pass over its open items and its done ones of the last day).
 * - "Next": twenty people (`WORK_PEOPLE`) pressing next at the same
 *   instant, `WORK_NEXTS` rounds of it, twenty async callers through the door
 *   (`nextWorkItem`: the conditional claim and its audit row in one
 *   transaction) on one store: SQLite as the daemon opens it (one
 *   connection, its writes one at a time), PostgreSQL with its pool (the
 *   default 10 connections; the presses that meet one in flight go
 *   together in one statement). The p95 of every call's latency (aim: under
 *   10 ms); each claim a different item is checked. Twice: people working
 *   (each acts on the item, untimed, before pressing again: at most twenty
 *   claims held), then nobody finishing (the claims pile up at the top of
 *   the queue, which next must walk past).
 *
 * The store is built through the store seam (`workItemAdd`), 1,000 items a
 * transaction, each scored by the queue's rule from its data; PostgreSQL's
 * copy is then vacuumed and analyzed, as autovacuum would soon after a bulk load.
 *
 * @module
 */

import {
  doWorkItem,
  listWorkItems,
  nextWorkItem,
  watchWorkQueue,
  type WorkActor,
} from "../src/admin/work.ts";
import { openStore, type Store } from "../src/store.ts";
import { compileWorkQueue } from "../src/workqueue/definition.ts";
import { addParams } from "../src/workqueue/items.ts";
import type { WorkQueueDefinition } from "../src/workqueue/types.ts";
import { analyzeStore } from "./stores.ts";

/** What the work phase measures on one store. */
export interface WorkTimes {
  buildMs: number;
  /** The first page's read, median of the reps. */
  listMs: number;
  /** The TUI's Work tab's read (the page and the queue's stats), median of the reps. */
  watchMs: number;
  /** Next's latency over every call of every person, each acting on their item before the next. */
  next: NextTimes;
  /** The same with nobody acting: the claims held pile up to people x rounds. */
  nextHeld: NextTimes;
}

/** Next's latency over every call of every person. */
export interface NextTimes {
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  /** Nexts answered per second of the rounds. */
  perS: number;
}

/** What the phase is given. */
export interface WorkConfig {
  /** Open items in the queue. */
  n: number;
  /** Items on the listing's first page. */
  page: number;
  /** Times each read is repeated. */
  reps: number;
  /** People pressing next at once. */
  people: number;
  /** Rounds of everyone pressing next at once. */
  nexts: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Items added per transaction while building. */
const BATCH = 1000;

/** The disputes queue: claim required, one-hour lease, a weighted score. */
export const DISPUTES: WorkQueueDefinition = compileWorkQueue({
  id: "disputes",
  claim: "required",
  leaseMs: HOUR,
  score: {
    rule: "rule/dispute.urgency-score",
    inputs: ["amount", "age", "evidence_missing"],
    weights: { amount: 0.01, age: "2/day", evidence_missing: 30 },
  },
  actions: [{ id: "refund", run: { kind: "worker", worker: "refund_dispute" } }],
});

/** Builds the queue in a fresh store at `location`, then times the listing and next. */
export async function phaseWork(
  location: string,
  cfg: WorkConfig,
  log: (message: string) => void,
): Promise<WorkTimes> {
  const now = Math.floor(Date.now() / 1000) * 1000;
  const { store } = await openStore(location, { mode: "create", now: now - 30 * DAY });
  try {
    const started = performance.now();
    await buildWorkQueue(store, cfg.n, now);
    await analyzeStore(location);
    const buildMs = performance.now() - started;
    log(`  built ${cfg.n.toLocaleString("en-US")} open items in ${(buildMs / 1000).toFixed(1)} s`);
    const who = { tenant: null, now };
    const page = await listWorkItems(store, DISPUTES, who, { limit: cfg.page });
    if (page.length !== Math.min(cfg.page, cfg.n)) {
      throw new Error(`the first page holds ${page.length} items, expected ${cfg.page}`);
    }
    const listMs = await medianOf(
      cfg.reps,
      () => listWorkItems(store, DISPUTES, { tenant: null, now: Date.now() }, { limit: cfg.page }),
    );
    const watchMs = await medianOf(
      cfg.reps,
      () => watchWorkQueue(store, DISPUTES, { tenant: null, now: Date.now() }, { limit: cfg.page }),
    );
    // Untimed rounds first: the statements prepared on each pooled
    // connection and past PostgreSQL's first custom plans, the code compiled.
    await timeNext(store, { ...cfg, nexts: 5 }, true);
    const next = await timeNext(store, cfg, true);
    const nextHeld = await timeNext(store, cfg, false);
    return { buildMs, listMs, watchMs, next, nextHeld };
  } finally {
    await store.close();
  }
}

/**
 * `n` open items, requested over the 30 days before `end`, 1,000 a
 * transaction: amounts up to 5,000, a third missing evidence.
 */
export async function buildWorkQueue(store: Store, n: number, end: number): Promise<void> {
  for (let b = 0; b * BATCH < n; b++) {
    await store.transaction(async (tx) => {
      for (let i = b * BATCH; i < Math.min(n, (b + 1) * BATCH); i++) {
        const at = end - 30 * DAY + Math.floor((i * 30 * DAY) / n);
        const data = {
          amount: (i * 7919) % 5000 + 10,
          currency: "EUR",
          evidence_missing: i % 3 === 0,
        };
        const added = await tx.workItemAdd(
          addParams(DISPUTES, { key: `dsp-${i}`, data }, "bench", at),
        );
        if (added === null) throw new Error(`dsp-${i} was not added`);
      }
    });
  }
}

/**
 * Twenty people pressing next at the same instant, `cfg.nexts` rounds
 * (each round starts when the last one's presses are all answered): every
 * call's latency, and each claim a different item.
 */
async function timeNext(store: Store, cfg: WorkConfig, act: boolean): Promise<NextTimes> {
  const latencies: number[] = [];
  const keys = new Set<string>();
  let elapsedMs = 0;
  for (let round = 0; round < cfg.nexts; round++) {
    const started = performance.now();
    const claimed = await Promise.all(
      Array.from({ length: cfg.people }, async (_, p) => {
        const who: WorkActor = {
          person: `person${p}`,
          roles: ["admin"],
          tenant: null,
          door: "library",
          reason: null,
          now: Date.now(),
        };
        const t0 = performance.now();
        const item = await nextWorkItem(store, DISPUTES, who);
        latencies.push(performance.now() - t0);
        if (item === null) throw new Error(`person${p} got no item`);
        if (keys.has(item.key)) throw new Error(`${item.key} was claimed twice`);
        keys.add(item.key);
        return { who, key: item.key };
      }),
    );
    elapsedMs += performance.now() - started;
    if (!act) continue;
    for (const { who, key } of claimed) {
      await doWorkItem(store, DISPUTES, key, "refund", { ...who, now: Date.now() });
    }
  }
  latencies.sort((a, b) => a - b);
  return {
    p50Ms: quantile(latencies, 0.5),
    p95Ms: quantile(latencies, 0.95),
    maxMs: latencies[latencies.length - 1] ?? NaN,
    perS: latencies.length / (elapsedMs / 1000),
  };
}

/** The median time of `reps` calls of `fn`, after one to warm up. */
async function medianOf(reps: number, fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return quantile(times, 0.5);
}

/** Nearest-rank quantile of an ascending array. */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
