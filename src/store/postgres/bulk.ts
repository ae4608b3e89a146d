/**
 * The PostgreSQL side of bulk runs ({@linkcode StoreBulk}). A tenant's
 * scope is part of each statement.
 *
 * @module
 */

import type { BulkRun, BulkRunCreateParams, BulkRunState, StoreBulk } from "../store.ts";
import { toBulkRun } from "../rows.ts";
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";

function columns(q: Sql) {
  return q`id, action, filter, total, done, changed, skipped, state, actor, reason,
    tenant, created_at, finished_at, abort_requested`;
}

/**
 * The {@linkcode StoreBulk} methods of the PostgreSQL store, over `core`:
 * each one statement, on the pool or on a transaction's view.
 */
export function postgresBulk(core: PostgresCore): StoreBulk {
  return core.guard({
    async bulkRunCreate(params: BulkRunCreateParams): Promise<BulkRun> {
      const [row] = await core.sql`INSERT INTO bulk_runs (action, filter, ids, total, state,
          actor, reason, tenant, created_at)
        VALUES (${params.action}, ${JSON.stringify(params.filter)}, ${
        JSON.stringify(params.ids)
      }, ${params.ids.length}::bigint, 'running', ${params.actor}, ${params.reason}::text,
          ${params.tenant}::text, ${params.now}::bigint)
        RETURNING ${columns(core.sql)}`;
      return toBulkRun(row!);
    },

    async bulkRunGet(params: { id: number; tenant?: string }): Promise<BulkRun | null> {
      const tenant = params.tenant ?? null;
      const [row] = await core.sql`SELECT ${columns(core.sql)} FROM bulk_runs
        WHERE id = ${params.id}::bigint AND (${tenant}::text IS NULL OR tenant = ${tenant}::text)`;
      return row ? toBulkRun(row) : null;
    },

    async bulkRunSnapshot(params: { id: number }): Promise<number[] | null> {
      const [row] = await core.sql`SELECT ids FROM bulk_runs WHERE id = ${params.id}::bigint`;
      return row ? (JSON.parse(String(row.ids)) as unknown[]).map(Number) : null;
    },

    async bulkRunsList(
      params: { tenant?: string; before?: number; limit?: number },
    ): Promise<BulkRun[]> {
      const tenant = params.tenant ?? null;
      const before = params.before ?? null;
      const rows = await core.sql`SELECT ${columns(core.sql)} FROM bulk_runs
        WHERE (${tenant}::text IS NULL OR tenant = ${tenant}::text)
          AND (${before}::bigint IS NULL OR id < ${before}::bigint)
        ORDER BY id DESC LIMIT ${params.limit ?? null}::bigint`;
      return rows.map(toBulkRun);
    },

    async bulkRunProgress(
      params: { id: number; done: number; changed: number; skipped: number },
    ): Promise<boolean> {
      const rows = await core.sql`UPDATE bulk_runs
        SET done = ${params.done}::bigint, changed = ${params.changed}::bigint,
          skipped = ${params.skipped}::bigint
        WHERE id = ${params.id}::bigint AND state = 'running' AND done <= ${params.done}::bigint
        RETURNING id`;
      return rows.length === 1;
    },

    async bulkRunAbort(params: { id: number; tenant?: string }): Promise<boolean> {
      const tenant = params.tenant ?? null;
      const rows = await core.sql`UPDATE bulk_runs SET abort_requested = true
        WHERE id = ${params.id}::bigint AND state = 'running'
          AND (${tenant}::text IS NULL OR tenant = ${tenant}::text)
        RETURNING id`;
      return rows.length === 1;
    },

    async bulkRunFinish(
      params: { id: number; state: Exclude<BulkRunState, "running">; now: number },
    ): Promise<boolean> {
      const rows = await core.sql`UPDATE bulk_runs
        SET state = ${params.state}, finished_at = ${params.now}::bigint
        WHERE id = ${params.id}::bigint AND state = 'running'
        RETURNING id`;
      return rows.length === 1;
    },
  });
}
