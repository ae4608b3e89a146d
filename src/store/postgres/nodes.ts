/**
 * The PostgreSQL side of nodes and leadership ({@linkcode StoreNodes}):
 * heartbeats, and the roles the shared leadership
 * (`src/store/lifecycle/leaders.ts`) takes and releases through the ops
 * {@linkcode answerLeaderOp} answers here.
 *
 * @module
 */

import type { LeaderRow, NodeRow, StoreNodes } from "../store.ts";
import { toHolder, toLeaderRow } from "../rows.ts";
import { type LeaderOp, releaseLeadership, takeLeadership } from "../lifecycle/leaders.ts";
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";
import { json } from "./rows.ts";

/**
 * The {@linkcode StoreNodes} methods of the PostgreSQL store, over `core`
 * (nodes' heartbeats and leadership), each with its transaction policy: its
 * own transaction where it needs one (`core.begin` joins a transaction's
 * view).
 */
export function postgresNodes(core: PostgresCore): StoreNodes {
  return core.guard({
    async nodeBeat(params: {
      node: string;
      queues: Record<string, number>;
      environment?: string | null;
      now: number;
    }): Promise<void> {
      await core.sql`INSERT INTO nodes (node, queues, environment, started_at, heartbeat_at)
        VALUES (${params.node}, ${JSON.stringify(params.queues)}::text::jsonb,
          ${params.environment ?? null}::text, ${params.now}::bigint, ${params.now}::bigint)
        ON CONFLICT (node) DO UPDATE SET queues = excluded.queues,
          environment = excluded.environment, heartbeat_at = excluded.heartbeat_at`;
    },

    async nodeDelete(params: { node: string }): Promise<void> {
      await core.sql`DELETE FROM nodes WHERE node = ${params.node}`;
    },

    async nodesExpire(params: { before: number }): Promise<number> {
      return (await core.sql`DELETE FROM nodes WHERE heartbeat_at < ${params.before}::bigint`)
        .count;
    },

    async nodesList(): Promise<NodeRow[]> {
      const rows = await core.sql`SELECT * FROM nodes ORDER BY node COLLATE "C"`;
      return rows.map((r) => ({
        node: String(r.node),
        queues: json(r.queues) as Record<string, number>,
        startedAt: Number(r.started_at),
        heartbeatAt: Number(r.heartbeat_at),
        environment: r.environment == null ? null : String(r.environment),
      }));
    },

    /**
     * One statement takes or renews the role: the upsert's WHERE admits a
     * missing, released, expired or own row. Under READ COMMITTED a racing
     * taker waits for the row lock, then re-checks the WHERE against the row
     * the winner committed, so only one of them gets a row back. A loser
     * reads the holder afterwards, in a statement of its own so that it sees
     * the winner's commit.
     */
    async leaderTake(params: { name: string; node: string; now: number; ttlMs: number }) {
      return await core.lifecycle(core.sql, takeLeadership(params));
    },

    async leaderRelease(params: { name: string; node: string; fence: number }): Promise<boolean> {
      return await core.lifecycle(core.sql, releaseLeadership(params));
    },

    async leadersList(): Promise<LeaderRow[]> {
      return (await core.sql`SELECT * FROM leaders ORDER BY name COLLATE "C"`).map(toLeaderRow);
    },
  });
}

/** Answers one op of the shared leadership (`src/store/lifecycle/leaders.ts`) on `q`. */
export async function answerLeaderOp(
  _core: PostgresCore,
  op: LeaderOp,
  q: Sql,
): Promise<unknown> {
  switch (op.op) {
    case "leaderTake": {
      const { name, node, now, expiresAt } = op;
      const [taken] = await q`INSERT INTO leaders AS l
          (name, node, fence, expires_at, acquired_at)
        VALUES (${name}, ${node}, 1, ${expiresAt}::bigint, ${now}::bigint)
        ON CONFLICT (name) DO UPDATE SET
          fence = CASE WHEN l.node = excluded.node AND l.expires_at > ${now}::bigint
            THEN l.fence ELSE l.fence + 1 END,
          acquired_at = CASE WHEN l.node = excluded.node AND l.expires_at > ${now}::bigint
            THEN l.acquired_at ELSE excluded.acquired_at END,
          node = excluded.node,
          expires_at = excluded.expires_at
        WHERE l.node IS NULL OR l.node = excluded.node OR l.expires_at <= ${now}::bigint
        RETURNING node, fence, expires_at`;
      return taken ? toHolder(taken) : null;
    }
    case "leaderGet": {
      const [holder] = await q`SELECT node, fence, expires_at FROM leaders
        WHERE name = ${op.name}`;
      return holder ? toHolder(holder) : null;
    }
    case "leaderRelease": {
      const result = await q`UPDATE leaders SET node = NULL
        WHERE name = ${op.name} AND node = ${op.node} AND fence = ${op.fence}::bigint`;
      return result.count !== 0;
    }
  }
}
