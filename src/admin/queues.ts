/**
 * Queues as the command line and the TUI show and act on them: every queue
 * anyone knows of (jobs, a stored pause, the schedules file, a schedule, a
 * node) with its jobs by state, whether it is paused and by whom, and who
 * runs it how wide; pausing or resuming one for every process on the
 * store, and storing its flow limits (which every node's next claim
 * reads), each audited in the same transaction.
 *
 * @module
 */

import { JOB_STATES, type JobState } from "../kernel/types.ts";
import {
  type FlowLimits,
  partitionByText,
  type RateLimit,
  type StoredLimits,
} from "../kernel/flow.ts";
import { tryParseDuration } from "../text/durations.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";
import type { NodeView } from "./nodes.ts";

/** One queue: its jobs by state, whether it is paused, and who runs it how wide. */
export interface QueueView {
  name: string;
  /** Jobs per state (every state present, zero when none). */
  counts: Record<JobState, number>;
  /** Paused in the store (every process honours it). */
  paused: boolean;
  /** `paused: true` in the file; a daemon applies it when it starts or reloads. */
  pausedInFile: boolean;
  /** The concurrency the file declares, or null. */
  declaredConcurrency: number | null;
  /** Node -> concurrency, for the live nodes that run this queue. */
  nodes: Record<string, number>;
  /** Who paused it, when and why, while it is paused in the store; else null. */
  pause: QueuePause | null;
}

/**
 * Who paused a queue, from the audit trail: the latest `queue.pause` when it
 * is the latest pause or resume recorded; otherwise `actor` and `reason` are
 * null (paused by a schedules file's `paused: true`, or by a library call)
 * and `at` is when the stored row last changed.
 */
export interface QueuePause {
  at: number;
  actor: string | null;
  reason: string | null;
}

/** Pauses or resumes a queue for every process on the store. */
export async function setQueuePaused(
  store: Store,
  queue: string,
  paused: boolean,
  who: Actor,
): Promise<{ queue: string; paused: boolean; was: boolean }> {
  return await store.transaction(async (tx) => {
    const was = (await tx.queuesList()).find((q) => q.name === queue)?.paused ?? false;
    await tx.queuePause({ name: queue, paused, now: who.now });
    await audit(tx, who, paused ? "queue.pause" : "queue.resume", `queue:${queue}`, { was });
    return { queue, paused, was };
  });
}

/**
 * A change of a queue's stored flow limits: a number sets one, null removes
 * it (the file's applies again), absent keeps it.
 */
export interface QueueLimitsChange {
  global?: number | null;
  partitionLimit?: number | null;
  rate?: RateLimit | null;
}

/** No stored limit. */
const NO_LIMITS: StoredLimits = { global: null, partitionLimit: null, rate: null };

/**
 * Stores `change` to the flow limits of `queue` for every node (each
 * node's next claim reads them, overriding its file's), audited
 * (`queue.limits`, with the limits before and after) in the same
 * transaction.
 */
export async function setQueueLimits(
  store: Store,
  queue: string,
  change: QueueLimitsChange,
  who: Actor,
): Promise<{ queue: string; was: StoredLimits; limits: StoredLimits }> {
  return await store.transaction(async (tx) => {
    const row = (await tx.queueLimitsList()).find((q) => q.name === queue);
    const was: StoredLimits = row
      ? { global: row.global, partitionLimit: row.partitionLimit, rate: row.rate }
      : NO_LIMITS;
    const limits: StoredLimits = {
      global: change.global === undefined ? was.global : change.global,
      partitionLimit: change.partitionLimit === undefined
        ? was.partitionLimit
        : change.partitionLimit,
      rate: change.rate === undefined ? was.rate : change.rate,
    };
    await tx.queueLimitsSet({ name: queue, limits, now: who.now });
    await audit(tx, who, "queue.limits", `queue:${queue}`, { was, limits });
    return { queue, was, limits };
  });
}

/** A limit as an operator writes it: a whole number of at least 1, or `none` (null); else a reason. */
export function parseLimit(text: string): { ok: true; value: number | null } | {
  ok: false;
  reason: string;
} {
  if (text === "none") return { ok: true, value: null };
  if (!/^[1-9][0-9]{0,8}$/.test(text)) {
    return { ok: false, reason: "must be a whole number of at least 1, or none" };
  }
  return { ok: true, value: Number(text) };
}

/**
 * A rate as an operator writes it: `<limit>/<period>` with an optional
 * `:<burst>` (`100/1m`, `100/1m:10`; burst defaults to the limit), or
 * `none` (null); else a reason.
 */
export function parseRate(text: string): { ok: true; value: RateLimit | null } | {
  ok: false;
  reason: string;
} {
  if (text === "none") return { ok: true, value: null };
  const m = /^([1-9][0-9]{0,8})\/([^:]+)(?::([1-9][0-9]{0,8}))?$/.exec(text);
  const per = m ? tryParseDuration(m[2]!) : null;
  if (!m || !per?.ok || per.ms < 1) {
    return { ok: false, reason: "must be <limit>/<period>[:<burst>], such as 100/1m or 100/1m:10" };
  }
  const limit = Number(m[1]);
  return { ok: true, value: { limit, perMs: per.ms, burst: m[3] ? Number(m[3]) : limit } };
}

/** Stored limits as `jobs queues set` prints them: `global 3, partition 2, rate 100/60000ms:10`. */
export function limitsText(limits: StoredLimits): string {
  const parts = [
    limits.global === null ? null : `global ${limits.global}`,
    limits.partitionLimit === null ? null : `partition limit ${limits.partitionLimit}`,
    limits.rate === null
      ? null
      : `rate ${limits.rate.limit} per ${limits.rate.perMs}ms, burst ${limits.rate.burst}`,
  ].filter((p) => p !== null);
  return parts.length === 0 ? "none stored (the schedules file's apply)" : parts.join(", ");
}

/** A queue's declared flow limits as one line: `global 5, partition by tenant limit 2, rate ...`. */
export function flowText(flow: FlowLimits): string {
  const rate = (r: RateLimit) => `${r.limit} per ${r.perMs}ms, burst ${r.burst}`;
  const p = flow.partition;
  return [
    flow.global === undefined ? null : `global ${flow.global}`,
    p === undefined ? null : [
      `partition by ${partitionByText(p.by)}`,
      p.limit === undefined ? null : `limit ${p.limit}`,
      p.rate === undefined ? null : `rate ${rate(p.rate)}`,
    ].filter((x) => x !== null).join(" "),
    flow.rate === undefined ? null : `rate ${rate(flow.rate)}`,
  ].filter((x) => x !== null).join(", ");
}

/**
 * Every queue anyone knows of (jobs, a stored pause, the file, a schedule,
 * a node), by name.
 */
export async function queuesView(
  store: Store | null,
  config: ScheduleConfig | null,
  nodes: NodeView[],
): Promise<QueueView[]> {
  const counts = store ? await store.jobsCount({}) : [];
  const stored = store ? await store.queuesList() : [];
  const names = new Set<string>([
    ...counts.map((c) => c.queue),
    ...stored.map((q) => q.name),
    ...Object.keys(config?.queues ?? {}),
    ...(config?.schedules ?? []).map((s) => s.queue),
    ...nodes.flatMap((n) => Object.keys(n.queues)),
  ]);
  const pauses = new Map<string, QueuePause>();
  for (const row of stored) {
    if (store && row.paused) pauses.set(row.name, await queuePause(store, row.name, row.updatedAt));
  }
  return [...names].sort().map((name) => {
    const byState = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    for (const c of counts) if (c.queue === name) byState[c.state] += c.count;
    const declared = config?.queues[name];
    return {
      name,
      counts: byState,
      paused: stored.find((q) => q.name === name)?.paused ?? false,
      pause: pauses.get(name) ?? null,
      pausedInFile: declared?.paused ?? false,
      declaredConcurrency: declared?.concurrency ?? null,
      nodes: Object.fromEntries(
        nodes.filter((n) => !n.stale && n.queues[name] !== undefined)
          .map((n) => [n.node, n.queues[name]!]),
      ),
    };
  });
}

/** Who paused the (paused) queue `name`, from its audit trail; see {@linkcode QueuePause}. */
async function queuePause(store: Store, name: string, updatedAt: number): Promise<QueuePause> {
  const trail = await store.auditList({ target: `queue:${name}` });
  const last = trail.findLast((a) => a.action === "queue.pause" || a.action === "queue.resume");
  return last?.action === "queue.pause"
    ? { at: last.at, actor: last.actor, reason: last.reason }
    : { at: updatedAt, actor: null, reason: null };
}

/** A queue as `jobs status --json` and `GET /api/v1/queues` show it: instants as ISO UTC. */
export function queueJson(q: QueueView) {
  return { ...q, pause: q.pause === null ? null : { ...q.pause, at: iso(q.pause.at) } };
}
