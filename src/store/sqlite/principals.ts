/**
 * The SQLite side of people and tokens ({@linkcode StorePrincipals}): their
 * statements and the store's methods over them. Every read but
 * `principalSecretHash` selects the columns of a row without its secret's
 * hash, so a hash reaches only the code that asked for it by name.
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
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";

/** The columns of a principal's row, its secret's hash left out. */
const COLUMNS = `kind, name, display_name, roles, tenant, disabled, expires_at, created_by,
  created_at, updated_at, last_used_at`;

const SQL = {
  principalInsert: `INSERT INTO principals (kind, name, display_name, roles, tenant, secret_hash,
      expires_at, created_by, created_at, updated_at)
    VALUES (:kind, :name, :displayName, :roles, :tenant, :secretHash, :expiresAt, :createdBy,
      :now, :now)
    ON CONFLICT (kind, name) DO NOTHING`,
  principalGet: `SELECT ${COLUMNS} FROM principals WHERE kind = :kind AND name = :name`,
  principalsList: `SELECT ${COLUMNS} FROM principals
    WHERE (:kind IS NULL OR kind = :kind) AND (:after IS NULL OR name > :after)
    ORDER BY kind, name LIMIT :limit`,
  // One statement for every change: a field not given keeps its value.
  principalUpdate: `UPDATE principals SET
      display_name = CASE WHEN :setDisplayName THEN :displayName ELSE display_name END,
      roles = CASE WHEN :setRoles THEN :roles ELSE roles END,
      tenant = CASE WHEN :setTenant THEN :tenant ELSE tenant END,
      disabled = CASE WHEN :setDisabled THEN :disabled ELSE disabled END,
      secret_hash = CASE WHEN :setSecretHash THEN :secretHash ELSE secret_hash END,
      updated_at = :now
    WHERE kind = :kind AND name = :name
    RETURNING ${COLUMNS}`,
  principalDelete: `DELETE FROM principals WHERE kind = :kind AND name = :name`,
  principalUsed: `UPDATE principals SET last_used_at = :now WHERE kind = :kind AND name = :name`,
  principalSecretHash: `SELECT ${COLUMNS}, secret_hash FROM principals
    WHERE kind = :kind AND name = :name`,
  principalBySecretHash: `SELECT ${COLUMNS} FROM principals
    WHERE kind = :kind AND secret_hash = :secretHash`,
} as const;

/** The values of the update statement for `change`: each field given is set, the rest kept. */
function updateValues(change: PrincipalChange) {
  const given = (value: unknown) => value === undefined ? 0 : 1;
  return {
    kind: change.kind,
    name: change.name,
    now: change.now,
    setDisplayName: given(change.displayName),
    displayName: change.displayName ?? null,
    setRoles: given(change.roles),
    roles: JSON.stringify(change.roles ?? []),
    setTenant: given(change.tenant),
    tenant: change.tenant ?? null,
    setDisabled: given(change.disabled),
    disabled: change.disabled ? 1 : 0,
    setSecretHash: given(change.secretHash),
    secretHash: change.secretHash ?? null,
  };
}

/** The {@linkcode StorePrincipals} of the store over `core`. */
export function sqlitePrincipals(core: SqliteCore): StorePrincipals {
  core.register(SQL);
  const q = () => core.statements(SQL);
  return {
    principalInsert(params: { principal: NewPrincipal; now: number }): Promise<boolean> {
      const p = params.principal;
      return core.exclusive(() => {
        const { changes } = q().principalInsert.run({
          kind: p.kind,
          name: p.name,
          displayName: p.displayName ?? null,
          roles: JSON.stringify(p.roles),
          tenant: p.tenant ?? null,
          secretHash: p.secretHash,
          expiresAt: p.expiresAt ?? null,
          createdBy: p.createdBy,
          now: params.now,
        });
        core.autocommitted(changes);
        return Number(changes) === 1;
      });
    },

    principalGet(params: { kind: PrincipalKind; name: string }): Promise<PrincipalRow | null> {
      return core.exclusive(() => {
        const row = q().principalGet.get({ kind: params.kind, name: params.name }) as
          | Row
          | undefined;
        return row ? toPrincipalRow(row) : null;
      });
    },

    principalsList(
      params: { kind?: PrincipalKind; after?: string; limit?: number },
    ): Promise<PrincipalRow[]> {
      return core.exclusive(() =>
        (q().principalsList.all({
          kind: params.kind ?? null,
          after: params.after ?? null,
          // SQLite's LIMIT -1: no limit.
          limit: params.limit ?? -1,
        }) as Row[]).map(toPrincipalRow)
      );
    },

    principalUpdate(params: PrincipalChange): Promise<PrincipalRow | null> {
      return core.exclusive(() => {
        const row = q().principalUpdate.get(updateValues(params)) as Row | undefined;
        if (row) core.autocommitted(1);
        return row ? toPrincipalRow(row) : null;
      });
    },

    principalDelete(params: { kind: PrincipalKind; name: string }): Promise<boolean> {
      return core.exclusive(() => {
        const { changes } = q().principalDelete.run({ kind: params.kind, name: params.name });
        core.autocommitted(changes);
        return Number(changes) === 1;
      });
    },

    principalUsed(params: { kind: PrincipalKind; name: string; now: number }): Promise<boolean> {
      return core.exclusive(() => {
        const { changes } = q().principalUsed.run({
          kind: params.kind,
          name: params.name,
          now: params.now,
        });
        core.autocommitted(changes, true);
        return Number(changes) === 1;
      });
    },

    principalSecretHash(params: { kind: PrincipalKind; name: string }): Promise<
      { principal: PrincipalRow; secretHash: string } | null
    > {
      return core.exclusive(() => {
        const row = q().principalSecretHash.get({ kind: params.kind, name: params.name }) as
          | Row
          | undefined;
        return row ? { principal: toPrincipalRow(row), secretHash: String(row.secret_hash) } : null;
      });
    },

    principalBySecretHash(params: { kind: PrincipalKind; secretHash: string }): Promise<
      PrincipalRow | null
    > {
      return core.exclusive(() => {
        const row = q().principalBySecretHash.get({
          kind: params.kind,
          secretHash: params.secretHash,
        }) as Row | undefined;
        return row ? toPrincipalRow(row) : null;
      });
    },
  };
}
