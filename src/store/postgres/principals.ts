/**
 * The PostgreSQL side of people and tokens ({@linkcode StorePrincipals}).
 * Every read but `principalSecretHash` selects the columns of a row without
 * its secret's hash, so a hash reaches only the code that asked for it by
 * name.
 *
 * @module
 */

import type {
  NewPrincipal,
  PrincipalChange,
  PrincipalKind,
  PrincipalRow,
  StorePrincipals,
} from "../store.ts";
import { toPrincipalRow } from "../rows.ts";
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";

/** The columns of a principal's row, its secret's hash left out. */
function columns(q: Sql) {
  return q`kind, name, display_name, roles, tenant, disabled, expires_at, created_by,
    created_at, updated_at, last_used_at`;
}

/**
 * The {@linkcode StorePrincipals} methods of the PostgreSQL store, over
 * `core`: each one statement, on the pool or on a transaction's view.
 */
export function postgresPrincipals(core: PostgresCore): StorePrincipals {
  return core.guard({
    async principalInsert(params: { principal: NewPrincipal; now: number }): Promise<boolean> {
      const p = params.principal;
      const rows = await core.sql`INSERT INTO principals (kind, name, display_name, roles, tenant,
          secret_hash, expires_at, created_by, created_at, updated_at)
        VALUES (${p.kind}, ${p.name}, ${p.displayName ?? null}::text,
          ${JSON.stringify(p.roles)}::jsonb, ${p.tenant ?? null}::text, ${p.secretHash},
          ${p.expiresAt ?? null}::bigint, ${p.createdBy}, ${params.now}::bigint,
          ${params.now}::bigint)
        ON CONFLICT (kind, name) DO NOTHING
        RETURNING name`;
      return rows.length === 1;
    },

    async principalGet(params: { kind: PrincipalKind; name: string }): Promise<
      PrincipalRow | null
    > {
      const [row] = await core.sql`SELECT ${columns(core.sql)} FROM principals
        WHERE kind = ${params.kind} AND name = ${params.name}`;
      return row ? toPrincipalRow(row) : null;
    },

    async principalsList(
      params: { kind?: PrincipalKind; after?: string; limit?: number },
    ): Promise<PrincipalRow[]> {
      // Names in byte order, as SQLite's BINARY, whatever the database's collation.
      const rows = await core.sql`SELECT ${columns(core.sql)} FROM principals
        WHERE (${params.kind ?? null}::text IS NULL OR kind = ${params.kind ?? null}::text)
          AND (${params.after ?? null}::text IS NULL
            OR name COLLATE "C" > ${params.after ?? null}::text COLLATE "C")
        ORDER BY kind COLLATE "C", name COLLATE "C"
        LIMIT ${params.limit ?? null}::bigint`;
      return rows.map(toPrincipalRow);
    },

    async principalUpdate(params: PrincipalChange): Promise<PrincipalRow | null> {
      const given = (value: unknown) => value !== undefined;
      const [row] = await core.sql`UPDATE principals SET
          display_name = CASE WHEN ${given(params.displayName)}::boolean
            THEN ${params.displayName ?? null}::text ELSE display_name END,
          roles = CASE WHEN ${given(params.roles)}::boolean
            THEN ${JSON.stringify(params.roles ?? [])}::jsonb ELSE roles END,
          tenant = CASE WHEN ${given(params.tenant)}::boolean
            THEN ${params.tenant ?? null}::text ELSE tenant END,
          disabled = CASE WHEN ${given(params.disabled)}::boolean
            THEN ${params.disabled ?? false}::boolean ELSE disabled END,
          secret_hash = CASE WHEN ${given(params.secretHash)}::boolean
            THEN ${params.secretHash ?? null}::text ELSE secret_hash END,
          updated_at = ${params.now}::bigint
        WHERE kind = ${params.kind} AND name = ${params.name}
        RETURNING ${columns(core.sql)}`;
      return row ? toPrincipalRow(row) : null;
    },

    async principalDelete(params: { kind: PrincipalKind; name: string }): Promise<boolean> {
      const rows = await core.sql`DELETE FROM principals
        WHERE kind = ${params.kind} AND name = ${params.name} RETURNING name`;
      return rows.length === 1;
    },

    async principalUsed(params: { kind: PrincipalKind; name: string; now: number }): Promise<
      boolean
    > {
      const rows = await core.sql`UPDATE principals SET last_used_at = ${params.now}::bigint
        WHERE kind = ${params.kind} AND name = ${params.name} RETURNING name`;
      return rows.length === 1;
    },

    async principalSecretHash(params: { kind: PrincipalKind; name: string }): Promise<
      { principal: PrincipalRow; secretHash: string } | null
    > {
      const [row] = await core.sql`SELECT ${columns(core.sql)}, secret_hash FROM principals
        WHERE kind = ${params.kind} AND name = ${params.name}`;
      return row ? { principal: toPrincipalRow(row), secretHash: String(row.secret_hash) } : null;
    },

    async principalBySecretHash(params: { kind: PrincipalKind; secretHash: string }): Promise<
      PrincipalRow | null
    > {
      const [row] = await core.sql`SELECT ${columns(core.sql)} FROM principals
        WHERE kind = ${params.kind} AND secret_hash = ${params.secretHash}`;
      return row ? toPrincipalRow(row) : null;
    },
  });
}
