/**
 * The SQLite side of the web console's sessions ({@linkcode StoreSessions}):
 * their statements and the store's methods over them. A session is found by
 * the hash of its id; the id itself is never stored.
 *
 * @module
 */

import type { SessionRow, StoreSessions } from "../store.ts";
import { toSessionRow } from "../rows.ts";
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";

const COLUMNS = `id_hash, person, created_at, last_seen_at, expires_at, address, user_agent`;

const SQL = {
  sessionInsert: `INSERT INTO sessions (${COLUMNS})
    VALUES (:idHash, :person, :createdAt, :lastSeenAt, :expiresAt, :address, :userAgent)
    ON CONFLICT (id_hash) DO NOTHING`,
  sessionGet: `SELECT ${COLUMNS} FROM sessions WHERE id_hash = :idHash`,
  sessionTouch:
    `UPDATE sessions SET last_seen_at = MAX(last_seen_at, :now) WHERE id_hash = :idHash`,
  sessionDelete: `DELETE FROM sessions WHERE id_hash = :idHash`,
  sessionsList: `SELECT ${COLUMNS} FROM sessions WHERE (:person IS NULL OR person = :person)
    ORDER BY created_at DESC, id_hash LIMIT :limit`,
  sessionsDeleteFor: `DELETE FROM sessions WHERE person = :person`,
  sessionsPrune: `DELETE FROM sessions
    WHERE expires_at <= :now OR (:idleBefore IS NOT NULL AND last_seen_at < :idleBefore)`,
} as const;

/** The {@linkcode StoreSessions} of the store over `core`. */
export function sqliteSessions(core: SqliteCore): StoreSessions {
  core.register(SQL);
  const q = () => core.statements(SQL);
  /** Runs a write statement, returning how many rows it changed. */
  const write = (run: () => { changes: number | bigint }, cheap = false): Promise<number> =>
    core.exclusive(() => {
      const { changes } = run();
      core.autocommitted(changes, cheap);
      return Number(changes);
    });
  return {
    async sessionInsert(params: { session: SessionRow }): Promise<boolean> {
      const s = params.session;
      return 1 === await write(() => q().sessionInsert.run({ ...s }));
    },

    sessionGet(params: { idHash: string }): Promise<SessionRow | null> {
      return core.exclusive(() => {
        const row = q().sessionGet.get({ idHash: params.idHash }) as Row | undefined;
        return row ? toSessionRow(row) : null;
      });
    },

    async sessionTouch(params: { idHash: string; now: number }): Promise<boolean> {
      return 1 === await write(() => q().sessionTouch.run({ ...params }), true);
    },

    async sessionDelete(params: { idHash: string }): Promise<boolean> {
      return 1 === await write(() => q().sessionDelete.run({ idHash: params.idHash }));
    },

    sessionsList(params: { person?: string; limit?: number }): Promise<SessionRow[]> {
      return core.exclusive(() =>
        (q().sessionsList.all({
          person: params.person ?? null,
          // SQLite's LIMIT -1: no limit.
          limit: params.limit ?? -1,
        }) as Row[]).map(toSessionRow)
      );
    },

    sessionsDeleteFor(params: { person: string }): Promise<number> {
      return write(() => q().sessionsDeleteFor.run({ person: params.person }));
    },

    sessionsPrune(params: { now: number; idleBefore?: number }): Promise<number> {
      return write(() =>
        q().sessionsPrune.run({ now: params.now, idleBefore: params.idleBefore ?? null })
      );
    },
  };
}
