/**
 * The SQLite side of operator settings, queue switches and the audit trail
 * ({@linkcode StoreSettings}): their statements and the store's methods
 * over them. No op of the shared lifecycle is answered here (the audit rows
 * of the workflow bookkeeping are written by workflows.ts).
 *
 * @module
 */

import type { AuditPageParams, AuditRow, QueueRow, StoreSettings } from "../store.ts";
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";

const SQL = {
  settingGet: `SELECT value FROM settings WHERE key = :key`,
  settingDelete: `DELETE FROM settings WHERE key = :key`,
  settingSet: `INSERT INTO settings (key, value, updated_at) VALUES (:key, :value, :now)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  queuePause: `INSERT INTO queues (name, paused, updated_at) VALUES (:name, :paused, :now)
    ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at`,
  queuesList: `SELECT * FROM queues ORDER BY name`,
  auditRecord: `INSERT INTO audit (at, actor, action, target, reason, details)
    VALUES (:at, :actor, :action, :target, :reason, :details)`,
  auditList: `SELECT * FROM audit WHERE target = :target ORDER BY at, id`,
} as const;

/** The {@linkcode StoreSettings} of the store over `core`. */
export function sqliteSettings(core: SqliteCore): StoreSettings {
  core.register(SQL);
  const q = () => core.statements(SQL);
  return {
    settingGet(params: { key: string }): Promise<unknown> {
      return core.exclusive(() => {
        const row = q().settingGet.get(params) as Row | undefined;
        return row ? JSON.parse(String(row.value)) : null;
      });
    },

    settingDelete(params: { key: string }): Promise<void> {
      return core.exclusive(() => {
        core.autocommitted(q().settingDelete.run({ key: params.key }).changes);
      });
    },

    settingSet(params: { key: string; value: unknown; now: number }): Promise<void> {
      return core.exclusive(() => {
        const { changes } = q().settingSet.run({
          key: params.key,
          value: JSON.stringify(params.value),
          now: params.now,
        });
        core.autocommitted(changes);
      });
    },

    // ------------------------------------------------------------------ queues

    queuePause(params: { name: string; paused: boolean; now: number }): Promise<void> {
      return core.exclusive(() => {
        const paused = params.paused ? 1 : 0;
        const { changes } = q().queuePause.run({ name: params.name, paused, now: params.now });
        core.autocommitted(changes);
      });
    },

    queuesList(): Promise<QueueRow[]> {
      return core.exclusive(() =>
        (q().queuesList.all() as Row[]).map((r) => ({
          name: String(r.name),
          paused: r.paused === 1,
          concurrency: r.concurrency == null ? null : Number(r.concurrency),
          updatedAt: Number(r.updated_at),
        }))
      );
    },

    // ------------------------------------------------------------------- audit

    auditRecord(params: {
      at: number;
      actor: string;
      action: string;
      target: string;
      reason: string | null;
      details?: Record<string, unknown>;
    }): Promise<void> {
      return core.exclusive(() =>
        core.write(() => {
          q().auditRecord.run({ ...params, details: JSON.stringify(params.details ?? {}) });
        })
      );
    },

    auditList(params: { target: string }): Promise<AuditRow[]> {
      return core.exclusive(() =>
        (q().auditList.all({ target: params.target }) as Row[]).map(toAuditRow)
      );
    },

    auditPage(params: AuditPageParams): Promise<AuditRow[]> {
      const where: string[] = [];
      const values: Record<string, string | number> = { limit: params.limit };
      if (params.target !== undefined) {
        where.push("target = :target");
        values.target = params.target;
      }
      if (params.actor !== undefined) {
        where.push("actor = :actor");
        values.actor = params.actor;
      }
      if (params.action !== undefined) {
        where.push("action = :action");
        values.action = params.action;
      }
      if (params.after !== undefined) {
        where.push("id < :after");
        values.after = params.after;
      }
      if (params.tenant !== undefined) {
        // A job's target is `job:<id>`: its id found by the primary key.
        where.push(
          `target GLOB 'job:[0-9]*' AND substr(target, 5) NOT GLOB '*[^0-9]*' AND EXISTS (SELECT 1 FROM jobs
          WHERE jobs.id = CAST(substr(audit.target, 5) AS INTEGER) AND jobs.tenant = :tenant)`,
        );
        values.tenant = params.tenant;
      }
      const text = `SELECT * FROM audit${where.length ? ` WHERE ${where.join(" AND ")}` : ""}
        ORDER BY id DESC LIMIT :limit`;
      return core.exclusive(() => (core.shaped(text).all(values) as Row[]).map(toAuditRow));
    },
  };
}

function toAuditRow(r: Row): AuditRow {
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
