/**
 * The SQLite side of nodes and leaders ({@linkcode StoreNodes}): their
 * statements, the store's methods over them, and the answers to the
 * leadership's ops ({@linkcode LeaderOp}, decided once in
 * src/store/lifecycle/leaders.ts) in {@linkcode answerLeaderOp}.
 *
 * @module
 */

import type { LeaderRow, LeaderState, NodeRow, StoreNodes } from "../store.ts";
import { type LeaderOp, releaseLeadership, takeLeadership } from "../lifecycle/leaders.ts";
import { toHolder, toLeaderRow } from "../rows.ts";
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";

const SQL = {
  nodeBeat: `INSERT INTO nodes (node, queues, environment, started_at, heartbeat_at)
    VALUES (:node, :queues, :environment, :now, :now)
    ON CONFLICT (node) DO UPDATE SET queues = excluded.queues,
      environment = excluded.environment, heartbeat_at = excluded.heartbeat_at`,
  nodeDelete: `DELETE FROM nodes WHERE node = :node`,
  nodesExpire: `DELETE FROM nodes WHERE heartbeat_at < :before`,
  nodesList: `SELECT * FROM nodes ORDER BY node`,
  // Takes or renews a role in one conditional write (see Store.leaderTake).
  leaderTake: `INSERT INTO leaders AS l (name, node, fence, expires_at, acquired_at)
    VALUES (:name, :node, 1, :expiresAt, :now)
    ON CONFLICT (name) DO UPDATE SET
      fence = CASE WHEN l.node = excluded.node AND l.expires_at > :now
        THEN l.fence ELSE l.fence + 1 END,
      acquired_at = CASE WHEN l.node = excluded.node AND l.expires_at > :now
        THEN l.acquired_at ELSE excluded.acquired_at END,
      node = excluded.node,
      expires_at = excluded.expires_at
    WHERE l.node IS NULL OR l.node = excluded.node OR l.expires_at <= :now
    RETURNING node, fence, expires_at`,
  leaderGet: `SELECT node, fence, expires_at FROM leaders WHERE name = :name`,
  leadersList: `SELECT * FROM leaders ORDER BY name`,
  leaderRelease: `UPDATE leaders SET node = NULL
    WHERE name = :name AND node = :node AND fence = :fence`,
} as const;

/** The {@linkcode StoreNodes} of the store over `core`. */
export function sqliteNodes(core: SqliteCore): StoreNodes {
  core.register(SQL);
  const q = () => core.statements(SQL);
  return {
    nodeBeat(params: {
      node: string;
      queues: Record<string, number>;
      environment?: string | null;
      now: number;
    }): Promise<void> {
      return core.exclusive(() => {
        const { changes } = q().nodeBeat.run({
          node: params.node,
          queues: JSON.stringify(params.queues),
          environment: params.environment ?? null,
          now: params.now,
        });
        core.autocommitted(changes, true);
      });
    },

    nodeDelete(params: { node: string }): Promise<void> {
      return core.exclusive(() => {
        core.autocommitted(q().nodeDelete.run({ node: params.node }).changes);
      });
    },

    nodesExpire(params: { before: number }): Promise<number> {
      return core.exclusive(() => {
        const { changes } = q().nodesExpire.run(params);
        core.autocommitted(changes);
        return Number(changes);
      });
    },

    nodesList(): Promise<NodeRow[]> {
      return core.exclusive(() =>
        (q().nodesList.all() as Row[]).map((r) => ({
          node: String(r.node),
          queues: JSON.parse(String(r.queues)),
          startedAt: Number(r.started_at),
          heartbeatAt: Number(r.heartbeat_at),
          environment: r.environment == null ? null : String(r.environment),
        }))
      );
    },

    // ----------------------------------------------------------------- leaders

    /**
     * The take is one conditional write; in the same write transaction a
     * caller that did not get the role reads who holds it.
     */
    leaderTake(params: { name: string; node: string; now: number; ttlMs: number }): Promise<
      LeaderState
    > {
      return core.exclusive(() => core.write(() => core.lifecycle(takeLeadership(params))));
    },

    leaderRelease(params: { name: string; node: string; fence: number }): Promise<boolean> {
      return core.exclusive(() => core.write(() => core.lifecycle(releaseLeadership(params))));
    },

    leadersList(): Promise<LeaderRow[]> {
      return core.exclusive(() => (q().leadersList.all() as Row[]).map(toLeaderRow));
    },
  };
}

/** Answers one op of the leadership (src/store/lifecycle/leaders.ts), inside the open write. */
export function answerLeaderOp(core: SqliteCore, op: LeaderOp): unknown {
  const s = core.statements(SQL);
  switch (op.op) {
    case "leaderTake": {
      const { op: _, ...values } = op;
      const row = s.leaderTake.get(values) as Row | undefined;
      return row ? toHolder(row) : null;
    }
    case "leaderGet": {
      const row = s.leaderGet.get({ name: op.name }) as Row | undefined;
      return row ? toHolder(row) : null;
    }
    case "leaderRelease": {
      const { op: _, ...values } = op;
      return s.leaderRelease.run(values).changes !== 0;
    }
  }
}
