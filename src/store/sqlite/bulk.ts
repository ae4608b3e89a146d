/**
 * The SQLite side of bulk runs ({@linkcode StoreBulk}): their statements and
 * the store's methods over them. A tenant's scope is part of each statement.
 *
 * @module
 */

import type { BulkRun, BulkRunCreateParams, BulkRunState, StoreBulk } from "../store.ts";
import { toBulkRun } from "../rows.ts";
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";

const COLUMNS = `id, action, filter, total, done, changed, skipped, state, actor, reason,
  tenant, created_at, finished_at, abort_requested`;

const SQL = {
  bulkRunInsert: `INSERT INTO bulk_runs (action, filter, ids, total, state, actor, reason,
      tenant, created_at)
    VALUES (:action, :filter, :ids, :total, 'running', :actor, :reason, :tenant, :now)
    RETURNING ${COLUMNS}`,
  bulkRunGet: `SELECT ${COLUMNS} FROM bulk_runs
    WHERE id = :id AND (:tenant IS NULL OR tenant = :tenant)`,
  bulkRunSnapshot: `SELECT ids FROM bulk_runs WHERE id = :id`,
  bulkRunsList: `SELECT ${COLUMNS} FROM bulk_runs
    WHERE (:tenant IS NULL OR tenant = :tenant) AND (:before IS NULL OR id < :before)
    ORDER BY id DESC LIMIT :limit`,
  bulkRunProgress: `UPDATE bulk_runs SET done = :done, changed = :changed, skipped = :skipped
    WHERE id = :id AND state = 'running' AND done <= :done`,
  bulkRunAbort: `UPDATE bulk_runs SET abort_requested = 1
    WHERE id = :id AND state = 'running' AND (:tenant IS NULL OR tenant = :tenant)`,
  bulkRunFinish: `UPDATE bulk_runs SET state = :state, finished_at = :now
    WHERE id = :id AND state = 'running'`,
} as const;

/** The {@linkcode StoreBulk} of the store over `core`. */
export function sqliteBulk(core: SqliteCore): StoreBulk {
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
    bulkRunCreate(params: BulkRunCreateParams): Promise<BulkRun> {
      return core.exclusive(() => {
        const row = q().bulkRunInsert.get({
          action: params.action,
          filter: JSON.stringify(params.filter),
          ids: JSON.stringify(params.ids),
          total: params.ids.length,
          actor: params.actor,
          reason: params.reason,
          tenant: params.tenant,
          now: params.now,
        }) as Row;
        core.autocommitted(1, false);
        return toBulkRun(row);
      });
    },

    bulkRunGet(params: { id: number; tenant?: string }): Promise<BulkRun | null> {
      return core.exclusive(() => {
        const row = q().bulkRunGet.get({ id: params.id, tenant: params.tenant ?? null }) as
          | Row
          | undefined;
        return row ? toBulkRun(row) : null;
      });
    },

    bulkRunSnapshot(params: { id: number }): Promise<number[] | null> {
      return core.exclusive(() => {
        const row = q().bulkRunSnapshot.get({ id: params.id }) as Row | undefined;
        return row ? (JSON.parse(String(row.ids)) as unknown[]).map(Number) : null;
      });
    },

    bulkRunsList(
      params: { tenant?: string; before?: number; limit?: number },
    ): Promise<BulkRun[]> {
      return core.exclusive(() =>
        (q().bulkRunsList.all({
          tenant: params.tenant ?? null,
          before: params.before ?? null,
          // SQLite's LIMIT -1: no limit.
          limit: params.limit ?? -1,
        }) as Row[]).map(toBulkRun)
      );
    },

    async bulkRunProgress(
      params: { id: number; done: number; changed: number; skipped: number },
    ): Promise<boolean> {
      return 1 === await write(() => q().bulkRunProgress.run({ ...params }));
    },

    async bulkRunAbort(params: { id: number; tenant?: string }): Promise<boolean> {
      return 1 ===
        await write(() => q().bulkRunAbort.run({ id: params.id, tenant: params.tenant ?? null }));
    },

    async bulkRunFinish(
      params: { id: number; state: Exclude<BulkRunState, "running">; now: number },
    ): Promise<boolean> {
      return 1 === await write(() => q().bulkRunFinish.run({ ...params }));
    },
  };
}
