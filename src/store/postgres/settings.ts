/**
 * The PostgreSQL side of operator settings, queue switches and the audit
 * trail ({@linkcode StoreSettings}).
 *
 * @module
 */

import type { AuditPageParams, AuditRow, QueueRow, StoreSettings } from "../store.ts";
import type { PostgresCore } from "./core.ts";

/**
 * The {@linkcode StoreSettings} methods of the PostgreSQL store, over `core`
 * (settings, queue switches and the audit trail), each with its transaction
 * policy: its own transaction where it needs one (`core.begin` joins a
 * transaction's view).
 */
export function postgresSettings(core: PostgresCore): StoreSettings {
  return core.guard({
    async settingGet(params: { key: string }): Promise<unknown> {
      const [row] = await core.sql`SELECT value FROM settings WHERE key = ${params.key}`;
      return row ? JSON.parse(String(row.value)) : null;
    },

    async settingDelete(params: { key: string }): Promise<void> {
      await core.sql`DELETE FROM settings WHERE key = ${params.key}`;
    },

    async settingSet(params: { key: string; value: unknown; now: number }): Promise<void> {
      await core.sql`INSERT INTO settings (key, value, updated_at)
        VALUES (${params.key}, ${JSON.stringify(params.value)}, ${params.now}::bigint)
        ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
    },

    async queuePause(params: { name: string; paused: boolean; now: number }): Promise<void> {
      await core.begin(async (tx) => {
        await tx`INSERT INTO queues (name, paused, updated_at)
          VALUES (${params.name}, ${params.paused}::boolean, ${params.now}::bigint)
          ON CONFLICT (name) DO UPDATE SET paused = excluded.paused,
            updated_at = excluded.updated_at`;
        if (!params.paused) await core.notify(tx, [params.name]);
      });
    },

    async queuesList(): Promise<QueueRow[]> {
      const rows = await core.sql`SELECT * FROM queues ORDER BY name COLLATE "C"`;
      return rows.map((r) => ({
        name: String(r.name),
        paused: r.paused === true,
        concurrency: r.concurrency == null ? null : Number(r.concurrency),
        updatedAt: Number(r.updated_at),
      }));
    },

    async auditRecord(params: {
      at: number;
      actor: string;
      action: string;
      target: string;
      reason: string | null;
      details?: Record<string, unknown>;
    }): Promise<void> {
      await core.sql`INSERT INTO audit (at, actor, action, target, reason, details)
        VALUES (${params.at}::bigint, ${params.actor}, ${params.action}, ${params.target},
          ${params.reason}::text, ${JSON.stringify(params.details ?? {})})`;
    },

    async auditList(params: { target: string }): Promise<AuditRow[]> {
      const rows = await core.sql`SELECT * FROM audit WHERE target = ${params.target}
        ORDER BY at, id`;
      return rows.map(toAuditRow);
    },

    async auditPage(params: AuditPageParams): Promise<AuditRow[]> {
      const q = core.sql;
      const where = [q`true`];
      if (params.target !== undefined) where.push(q`target = ${params.target}`);
      if (params.actor !== undefined) where.push(q`actor = ${params.actor}`);
      if (params.action !== undefined) where.push(q`action = ${params.action}`);
      if (params.after !== undefined) where.push(q`id < ${params.after}::bigint`);
      if (params.tenant !== undefined) {
        // A job's target is `job:<id>`: its id found by the primary key.
        where.push(q`target ~ '^job:[0-9]{1,18}$' AND EXISTS (SELECT 1 FROM jobs
          WHERE jobs.id = CASE WHEN audit.target ~ '^job:[0-9]{1,18}$'
            THEN substr(audit.target, 5)::bigint END
          AND jobs.tenant = ${params.tenant})`);
      }
      const rows = await q`SELECT * FROM audit
        WHERE ${where.reduce((a, b) => q`${a} AND ${b}`)}
        ORDER BY id DESC LIMIT ${params.limit}::bigint`;
      return rows.map(toAuditRow);
    },
  });
}

function toAuditRow(r: Record<string, unknown>): AuditRow {
  return {
    id: Number(r.id),
    at: Number(r.at),
    actor: String(r.actor),
    action: String(r.action),
    target: String(r.target),
    reason: r.reason as string | null,
    details: JSON.parse(String(r.details)),
  };
}
