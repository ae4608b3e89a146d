/**
 * The PostgreSQL side of the web console's sessions
 * ({@linkcode StoreSessions}). A session is found by the hash of its id;
 * the id itself is never stored.
 *
 * @module
 */

import type { SessionRow, StoreSessions } from "../store.ts";
import { toSessionRow } from "../rows.ts";
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";

function columns(q: Sql) {
  return q`id_hash, person, created_at, last_seen_at, expires_at, address, user_agent`;
}

/**
 * The {@linkcode StoreSessions} methods of the PostgreSQL store, over
 * `core`: each one statement, on the pool or on a transaction's view.
 */
export function postgresSessions(core: PostgresCore): StoreSessions {
  return core.guard({
    async sessionInsert(params: { session: SessionRow }): Promise<boolean> {
      const s = params.session;
      const rows = await core.sql`INSERT INTO sessions (${columns(core.sql)})
        VALUES (${s.idHash}, ${s.person}, ${s.createdAt}::bigint, ${s.lastSeenAt}::bigint,
          ${s.expiresAt}::bigint, ${s.address}::text, ${s.userAgent}::text)
        ON CONFLICT (id_hash) DO NOTHING
        RETURNING id_hash`;
      return rows.length === 1;
    },

    async sessionGet(params: { idHash: string }): Promise<SessionRow | null> {
      const [row] = await core.sql`SELECT ${columns(core.sql)} FROM sessions
        WHERE id_hash = ${params.idHash}`;
      return row ? toSessionRow(row) : null;
    },

    async sessionTouch(params: { idHash: string; now: number }): Promise<boolean> {
      const rows = await core.sql`UPDATE sessions
        SET last_seen_at = GREATEST(last_seen_at, ${params.now}::bigint)
        WHERE id_hash = ${params.idHash} RETURNING id_hash`;
      return rows.length === 1;
    },

    async sessionDelete(params: { idHash: string }): Promise<boolean> {
      const rows = await core.sql`DELETE FROM sessions WHERE id_hash = ${params.idHash}
        RETURNING id_hash`;
      return rows.length === 1;
    },

    async sessionsList(params: { person?: string; limit?: number }): Promise<SessionRow[]> {
      const rows = await core.sql`SELECT ${columns(core.sql)} FROM sessions
        WHERE (${params.person ?? null}::text IS NULL OR person = ${params.person ?? null}::text)
        ORDER BY created_at DESC, id_hash COLLATE "C"
        LIMIT ${params.limit ?? null}::bigint`;
      return rows.map(toSessionRow);
    },

    async sessionsDeleteFor(params: { person: string }): Promise<number> {
      const rows = await core.sql`DELETE FROM sessions WHERE person = ${params.person}
        RETURNING id_hash`;
      return rows.length;
    },

    async sessionsPrune(params: { now: number; idleBefore?: number }): Promise<number> {
      const idle = params.idleBefore ?? null;
      const rows = await core.sql`DELETE FROM sessions
        WHERE expires_at <= ${params.now}::bigint
          OR (${idle}::bigint IS NOT NULL AND last_seen_at < ${idle}::bigint)
        RETURNING id_hash`;
      return rows.length;
    },
  });
}
