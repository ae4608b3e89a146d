/**
 * The PostgreSQL side of bulk money confirmed out of band
 * ({@linkcode StoreBulkRequests}, {@linkcode StoreTotp}). Every read but
 * `bulkRequestCodeHash` and `totpSecret` selects the columns without the
 * code's hash and the seed. Each move of a request is one conditional
 * UPDATE, its condition the state it moves from.
 *
 * @module
 */

import type {
  BulkRequest,
  NewBulkRequest,
  StoreBulkRequests,
  StoreTotp,
  TotpEnrolment,
} from "../bulk_request_types.ts";
import { toBulkRequest, toTotpEnrolment } from "../bulk_request_rows.ts";
import type { PostgresCore } from "./core.ts";
import type { Sql } from "./fragments.ts";

/** The columns of a request's row, its code's hash left out (`BULK_REQUEST_COLUMNS`). */
function columns(q: Sql) {
  return q`id, manifest, queue, bulk, tenant, items, totals, requester, channel, approver_role,
    second_person, created_at, expires_at, tries, state, ended_reason, ended_at, confirmer,
    confirmed_at, totp_step`;
}

function totpColumns(q: Sql) {
  return q`person, last_step, enrolled_by, enrolled_at`;
}

/**
 * The {@linkcode StoreBulkRequests} and {@linkcode StoreTotp} methods of the
 * PostgreSQL store, over `core`: each one statement, on the pool or on a
 * transaction's view.
 */
export function postgresBulkRequests(core: PostgresCore): StoreBulkRequests & StoreTotp {
  return core.guard({
    async bulkRequestCreate(params: NewBulkRequest): Promise<BulkRequest> {
      const [row] = await core.sql`INSERT INTO bulk_requests (manifest, queue, bulk, tenant,
          items, totals, requester, channel, approver_role, second_person, code_hash, created_at,
          expires_at, tries, state)
        VALUES (${params.manifest}, ${params.queue}, ${params.bulk}, ${params.tenant}::text,
          ${JSON.stringify(params.items)}, ${JSON.stringify(params.totals)}, ${params.requester},
          ${params.channel}, ${params.approverRole}::text, ${params.secondPerson}::boolean,
          ${params.codeHash}::text, ${params.now}::bigint, ${params.expiresAt}::bigint,
          ${params.tries ?? 0}::bigint, 'pending')
        RETURNING ${columns(core.sql)}`;
      return toBulkRequest(row!);
    },

    async bulkRequestGet(params: { id: number }): Promise<BulkRequest | null> {
      const [row] = await core.sql`SELECT ${columns(core.sql)} FROM bulk_requests
        WHERE id = ${params.id}::bigint`;
      return row ? toBulkRequest(row) : null;
    },

    async bulkRequestLatest(params: { manifest: string }): Promise<BulkRequest | null> {
      const [row] = await core.sql`SELECT ${columns(core.sql)} FROM bulk_requests
        WHERE manifest = ${params.manifest} ORDER BY id DESC LIMIT 1`;
      return row ? toBulkRequest(row) : null;
    },

    async bulkRequestsList(
      params: { manifest?: string; limit?: number },
    ): Promise<BulkRequest[]> {
      const manifest = params.manifest ?? null;
      const rows = await core.sql`SELECT ${columns(core.sql)} FROM bulk_requests
        WHERE (${manifest}::text IS NULL OR manifest = ${manifest}::text)
        ORDER BY id DESC LIMIT ${params.limit ?? null}::bigint`;
      return rows.map(toBulkRequest);
    },

    async bulkRequestCodeHash(params: { id: number }): Promise<
      { request: BulkRequest; codeHash: string | null } | null
    > {
      const [row] = await core.sql`SELECT ${columns(core.sql)}, code_hash FROM bulk_requests
        WHERE id = ${params.id}::bigint`;
      if (!row) return null;
      return {
        request: toBulkRequest(row),
        codeHash: row.code_hash == null ? null : String(row.code_hash),
      };
    },

    async bulkRequestTry(
      params: { id: number; limit: number; now: number },
    ): Promise<BulkRequest | null> {
      const locks = core.sql`tries + 1 >= ${params.limit}::bigint`;
      const [row] = await core.sql`UPDATE bulk_requests SET tries = tries + 1,
          state = CASE WHEN ${locks} THEN 'locked' ELSE state END,
          ended_reason = CASE WHEN ${locks} THEN 'too-many-tries' ELSE ended_reason END,
          ended_at = CASE WHEN ${locks} THEN ${params.now}::bigint ELSE ended_at END
        WHERE id = ${params.id}::bigint AND state = 'pending'
        RETURNING ${columns(core.sql)}`;
      return row ? toBulkRequest(row) : null;
    },

    async bulkRequestConfirm(params: {
      id: number;
      confirmer: string;
      totpStep: number | null;
      limit: number;
      now: number;
    }): Promise<BulkRequest | null> {
      const [row] = await core.sql`UPDATE bulk_requests SET state = 'confirmed',
          confirmer = ${params.confirmer}, confirmed_at = ${params.now}::bigint,
          ended_at = ${params.now}::bigint, totp_step = ${params.totpStep}::bigint
        WHERE id = ${params.id}::bigint AND state = 'pending'
          AND expires_at > ${params.now}::bigint AND tries < ${params.limit}::bigint
        RETURNING ${columns(core.sql)}`;
      return row ? toBulkRequest(row) : null;
    },

    async bulkRequestEnd(
      params: { id: number; state: "void" | "expired"; reason: string; now: number },
    ): Promise<boolean> {
      const rows = await core.sql`UPDATE bulk_requests SET state = ${params.state},
          ended_reason = ${params.reason}, ended_at = ${params.now}::bigint
        WHERE id = ${params.id}::bigint
          AND (state = 'pending' OR (state = 'locked' AND ${params.state}::text = 'void'))
        RETURNING id`;
      return rows.length === 1;
    },

    async totpEnrol(
      params: { person: string; secret: string; by: string; now: number },
    ): Promise<void> {
      await core.sql`INSERT INTO totp_enrolments (person, secret, last_step, enrolled_by,
          enrolled_at)
        VALUES (${params.person}, ${params.secret}, NULL, ${params.by}, ${params.now}::bigint)
        ON CONFLICT (person) DO UPDATE SET secret = excluded.secret, last_step = NULL,
          enrolled_by = excluded.enrolled_by, enrolled_at = excluded.enrolled_at`;
    },

    async totpEnrolment(params: { person: string }): Promise<TotpEnrolment | null> {
      const [row] = await core.sql`SELECT ${totpColumns(core.sql)} FROM totp_enrolments
        WHERE person = ${params.person}`;
      return row ? toTotpEnrolment(row) : null;
    },

    async totpSecret(params: { person: string }): Promise<
      { enrolment: TotpEnrolment; secret: string } | null
    > {
      const [row] = await core.sql`SELECT ${totpColumns(core.sql)}, secret FROM totp_enrolments
        WHERE person = ${params.person}`;
      return row ? { enrolment: toTotpEnrolment(row), secret: String(row.secret) } : null;
    },

    async totpUse(params: { person: string; step: number }): Promise<boolean> {
      const rows = await core.sql`UPDATE totp_enrolments SET last_step = ${params.step}::bigint
        WHERE person = ${params.person}
          AND (last_step IS NULL OR last_step < ${params.step}::bigint)
        RETURNING person`;
      return rows.length === 1;
    },

    async totpDelete(params: { person: string }): Promise<boolean> {
      const rows = await core.sql`DELETE FROM totp_enrolments WHERE person = ${params.person}
        RETURNING person`;
      return rows.length === 1;
    },
  });
}
