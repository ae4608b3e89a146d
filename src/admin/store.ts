/**
 * The store as a whole, as the command line and the TUI see it: how it
 * answered a trivial read (reachable, its schema version, how long the read
 * took), the whole status `jobs status` shows (queues, nodes, schedules,
 * the maintenance role's holder), and pruning old final jobs now, audited.
 * Instants stay UTC epoch ms; nothing here prints or reads the machine's
 * time.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { Store } from "../store/store.ts";
import { DEFAULT_RETENTION, pruneJobs, type PrunerOptions } from "../runtime/pruner.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";
import {
  HEARTBEAT_MS,
  leaderJson,
  type LeaderView,
  leaderView,
  nodeJson,
  nodesView,
  type NodeView,
} from "./nodes.ts";
import type { PipelineView } from "./pipelines.ts";
import { queueJson, queuesView, type QueueView } from "./queues.ts";
import { scheduleJson, type ScheduleStatus, schedulesView } from "./schedules.ts";

/** How the store answered a trivial read. */
export interface StoreCheck {
  /** `sqlite` or `postgres`. */
  kind: string;
  /** Where it lives, credentials removed. */
  location: string;
  /** Whether the timed read succeeded. */
  reachable: boolean;
  /** The schema version of the database, or null when it could not be read. */
  schemaVersion: number | null;
  /** The latest schema version this program knows: anything else is not current. */
  knownVersion: number;
  /** How long the timed read took, in ms of the injected clock; null when it failed. */
  readMs: number | null;
  /** Why it is not reachable or not current, one line. */
  error: string | null;
}

/** Everything `jobs status` shows. */
export interface StatusView {
  now: number;
  queues: QueueView[];
  nodes: NodeView[];
  schedules: ScheduleStatus[];
  /**
   * The maintenance role's holder, or null when no node ever took it (a
   * single daemon that does not compete for the role runs every pass).
   */
  leader: LeaderView | null;
}

/**
 * Times a trivial read (the one `/readyz` makes) and reports it with the
 * schema version the caller found when it opened the store.
 */
export async function storeCheck(
  store: Store,
  params: { clock: Clock; schema: { version: number; known: number } },
): Promise<StoreCheck> {
  const base = {
    kind: store.kind,
    location: store.location,
    schemaVersion: params.schema.version,
    knownVersion: params.schema.known,
  };
  const started = params.clock.now();
  try {
    await store.jobsCount({ state: "executing" });
    return { ...base, reachable: true, readMs: params.clock.now() - started, error: null };
  } catch (error) {
    return { ...base, reachable: false, readMs: null, error: oneLine(error) };
  }
}

/**
 * The whole status: queues, nodes and schedules. `store` is null when there
 * is no store to read (the file alone is shown); `config` is null when the
 * schedules file could not be read (the store alone is shown).
 */
export async function statusView(params: {
  store: Store | null;
  config: ScheduleConfig | null;
  now: number;
  /** @default HEARTBEAT_MS */
  heartbeatMs?: number;
}): Promise<StatusView> {
  const { store, config, now } = params;
  const nodes = store ? await nodesView(store, now, params.heartbeatMs ?? HEARTBEAT_MS) : [];
  return {
    now,
    queues: await queuesView(store, config, nodes),
    nodes,
    schedules: await schedulesView(store, config, now),
    leader: store ? await leaderView(store, now) : null,
  };
}

/**
 * The status as `jobs status --json` and `GET /api/v1/status` show it
 * (the command line adds where its schedules file is and a moved store):
 * instants as ISO UTC; no queues or schedules of a store that cannot be
 * read, so nothing looks healthy about it.
 */
export function statusJson(params: {
  view: StatusView;
  health: StoreCheck;
  pipelines: readonly PipelineView[];
}) {
  const { view, health } = params;
  return {
    now: iso(view.now),
    store: health,
    queues: health.reachable ? view.queues.map(queueJson) : [],
    nodes: view.nodes.map(nodeJson),
    schedules: health.reachable ? view.schedules.map(scheduleJson) : [],
    pipelines: params.pipelines.map(pipelineStatusJson),
    leader: leaderJson(view.leader),
  };
}

/** A pipeline as `jobs status --json` shows it: its freshness and last run. */
function pipelineStatusJson(p: PipelineView) {
  const last = p.recent[0];
  return {
    id: p.id,
    stale: p.freshness?.stale ?? false,
    freshness: p.freshness &&
      { ...p.freshness, lastCompletedAt: iso(p.freshness.lastCompletedAt) },
    lastRun: last ? { id: last.id, state: last.state, finishedAt: iso(last.finishedAt) } : null,
    droppedLastHour: p.droppedLastHour,
  };
}

/** Retention by final state, in ms; missing states keep the pruner's default. */
export type Retention = Partial<Record<"completed" | "cancelled" | "discarded", number>>;

/**
 * Deletes final jobs older than their retention now, as the daemon's pruner
 * does (schedules with a retention of their own keep to it), or with `dryRun`
 * only counts them. Returns how many. The one action whose audit row has a
 * transaction of its own, after the prune's: the pruner commits batch by
 * batch, so that a large prune never holds the write lock for long.
 */
export async function pruneNow(
  store: Store,
  who: Actor,
  options: { retention: Retention; schedules: PrunerOptions["schedules"]; dryRun: boolean },
): Promise<{ deleted: number; dryRun: boolean }> {
  const now = who.now;
  const retention = { ...DEFAULT_RETENTION, ...options.retention };
  const schedules = options.schedules ?? [];
  if (options.dryRun) {
    const count = await store.jobsPrunable({
      before: {
        completed: now - retention.completed,
        cancelled: now - retention.cancelled,
        discarded: now - retention.discarded,
      },
      schedules: schedules.map((s) => ({ scheduleId: s.id, before: now - s.retentionMs })),
    });
    return { deleted: count, dryRun: true };
  }
  const { deleted } = await pruneJobs(store, now, {
    retention,
    schedules,
    maxBatches: Number.MAX_SAFE_INTEGER,
  });
  await audit(store, who, "store.prune", "store", { deleted, retentionMs: retention });
  return { deleted, dryRun: false };
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}
