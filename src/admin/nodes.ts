/**
 * The nodes on the store as the command line and the TUI show them: each
 * registered node (a daemon, or a library process) with how fresh its
 * heartbeat is, stale ones flagged, and which node holds the maintenance
 * role (the stager, the lifeline, the pruner and the planner). Instants stay
 * UTC epoch ms; nothing here prints or reads the machine's time.
 *
 * @module
 */

import type { Store } from "../store/store.ts";
import { MAINTENANCE_ROLE } from "../runtime/leadership.ts";
import { iso } from "./job_json.ts";

/**
 * The heartbeat period the daemon runs with (the runtime's `heartbeatMs`).
 * @default 1000
 */
export const HEARTBEAT_MS = 1000;

/** A node is stale after this many heartbeat periods without one. */
export const STALE_AFTER_BEATS = 3;

/** One registered node and how fresh its heartbeat is. */
export interface NodeView {
  node: string;
  queues: Record<string, number>;
  startedAt: number;
  heartbeatAt: number;
  /** Where the node runs (its daemon's `--environment`), or null when it did not say. */
  environment: string | null;
  /** `now - heartbeatAt`. */
  heartbeatAgeMs: number;
  /** No heartbeat for {@linkcode STALE_AFTER_BEATS} periods: probably gone or cut off. */
  stale: boolean;
}

/** Who holds the maintenance role (stager, lifeline, pruner, planner), as `leaders` says. */
export interface LeaderView {
  /** The holder; null once it released the role on a clean stop. */
  node: string | null;
  /** Since when it holds the role. */
  acquiredAt: number;
  /** When its hold ends unless renewed, in its clock. */
  expiresAt: number;
  /** The hold ran out by the reader's clock: nobody runs maintenance until a node takes over. */
  expired: boolean;
}

/** The maintenance role's row as {@linkcode LeaderView}, or null when there is none. */
export async function leaderView(store: Store, now: number): Promise<LeaderView | null> {
  const row = (await store.leadersList()).find((l) => l.name === MAINTENANCE_ROLE);
  if (!row) return null;
  return {
    node: row.node,
    acquiredAt: row.acquiredAt,
    expiresAt: row.expiresAt,
    expired: row.node !== null && row.expiresAt <= now,
  };
}

/** Every node with its heartbeat age, stale ones flagged. */
export async function nodesView(
  store: Store,
  now: number,
  heartbeatMs: number = HEARTBEAT_MS,
): Promise<NodeView[]> {
  return (await store.nodesList()).map((n) => ({
    node: n.node,
    // By name: PostgreSQL's jsonb keeps keys in its own order, SQLite's text the daemon's.
    queues: Object.fromEntries(
      Object.entries(n.queues).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
    startedAt: n.startedAt,
    heartbeatAt: n.heartbeatAt,
    environment: n.environment,
    heartbeatAgeMs: now - n.heartbeatAt,
    stale: now - n.heartbeatAt > STALE_AFTER_BEATS * heartbeatMs,
  }));
}

/** A node as `jobs status --json` and the API show it: instants as ISO UTC. */
export function nodeJson(n: NodeView) {
  return { ...n, startedAt: iso(n.startedAt), heartbeatAt: iso(n.heartbeatAt) };
}

/** The maintenance role's holder as `jobs status --json` and the API show it, or null. */
export function leaderJson(l: LeaderView | null) {
  return l === null ? null : { ...l, acquiredAt: iso(l.acquiredAt), expiresAt: iso(l.expiresAt) };
}
