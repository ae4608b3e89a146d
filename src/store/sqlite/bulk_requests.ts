/**
 * The SQLite side of bulk money confirmed out of band
 * ({@linkcode StoreBulkRequests}, {@linkcode StoreTotp}): requests and TOTP
 * enrolments. Every read but `bulkRequestCodeHash` and `totpSecret` selects
 * the columns without the code's hash and the seed, so neither reaches a
 * caller that did not ask for it by name. Each move of a request is one
 * conditional UPDATE, its condition the state it moves from.
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
import { BULK_REQUEST_COLUMNS, toBulkRequest, toTotpEnrolment } from "../bulk_request_rows.ts";
import type { SqliteCore } from "./core.ts";
import type { Row } from "./rows.ts";

const COLUMNS = BULK_REQUEST_COLUMNS.join(", ");
const TOTP_COLUMNS = `person, last_step, enrolled_by, enrolled_at`;

const SQL = {
  bulkRequestInsert: `INSERT INTO bulk_requests (manifest, queue, bulk, tenant, items, totals,
      requester, channel, approver_role, second_person, code_hash, created_at, expires_at, tries,
      state)
    VALUES (:manifest, :queue, :bulk, :tenant, :items, :totals, :requester, :channel,
      :approverRole, :secondPerson, :codeHash, :now, :expiresAt, :tries, 'pending')
    RETURNING ${COLUMNS}`,
  bulkRequestGet: `SELECT ${COLUMNS} FROM bulk_requests WHERE id = :id`,
  bulkRequestLatest: `SELECT ${COLUMNS} FROM bulk_requests WHERE manifest = :manifest
    ORDER BY id DESC LIMIT 1`,
  bulkRequestsList: `SELECT ${COLUMNS} FROM bulk_requests
    WHERE (:manifest IS NULL OR manifest = :manifest) ORDER BY id DESC LIMIT :limit`,
  bulkRequestCodeHash: `SELECT ${COLUMNS}, code_hash FROM bulk_requests WHERE id = :id`,
  bulkRequestTry: `UPDATE bulk_requests SET tries = tries + 1,
      state = CASE WHEN tries + 1 >= :limit THEN 'locked' ELSE state END,
      ended_reason = CASE WHEN tries + 1 >= :limit THEN 'too-many-tries' ELSE ended_reason END,
      ended_at = CASE WHEN tries + 1 >= :limit THEN :now ELSE ended_at END
    WHERE id = :id AND state = 'pending'
    RETURNING ${COLUMNS}`,
  bulkRequestConfirm: `UPDATE bulk_requests SET state = 'confirmed', confirmer = :confirmer,
      confirmed_at = :now, ended_at = :now, totp_step = :totpStep
    WHERE id = :id AND state = 'pending' AND expires_at > :now AND tries < :limit
    RETURNING ${COLUMNS}`,
  bulkRequestEnd: `UPDATE bulk_requests SET state = :state, ended_reason = :reason, ended_at = :now
    WHERE id = :id AND (state = 'pending' OR (state = 'locked' AND :state = 'void'))`,
  totpEnrol: `INSERT INTO totp_enrolments (person, secret, last_step, enrolled_by, enrolled_at)
    VALUES (:person, :secret, NULL, :by, :now)
    ON CONFLICT (person) DO UPDATE SET secret = excluded.secret, last_step = NULL,
      enrolled_by = excluded.enrolled_by, enrolled_at = excluded.enrolled_at`,
  totpEnrolment: `SELECT ${TOTP_COLUMNS} FROM totp_enrolments WHERE person = :person`,
  totpSecret: `SELECT ${TOTP_COLUMNS}, secret FROM totp_enrolments WHERE person = :person`,
  totpUse: `UPDATE totp_enrolments SET last_step = :step
    WHERE person = :person AND (last_step IS NULL OR last_step < :step)`,
  totpDelete: `DELETE FROM totp_enrolments WHERE person = :person`,
} as const;

/** The {@linkcode StoreBulkRequests} and {@linkcode StoreTotp} of the store over `core`. */
export function sqliteBulkRequests(core: SqliteCore): StoreBulkRequests & StoreTotp {
  core.register(SQL);
  const q = () => core.statements(SQL);
  /** Runs a write statement, returning how many rows it changed. */
  const write = (run: () => { changes: number | bigint }): Promise<number> =>
    core.exclusive(() => {
      const { changes } = run();
      core.autocommitted(changes);
      return Number(changes);
    });
  /** Runs a write statement with RETURNING: the row it changed, or null. */
  const writeReturning = (run: () => unknown): Promise<BulkRequest | null> =>
    core.exclusive(() => {
      const row = run() as Row | undefined;
      if (row) core.autocommitted(1);
      return row ? toBulkRequest(row) : null;
    });
  return {
    bulkRequestCreate(params: NewBulkRequest): Promise<BulkRequest> {
      return core.exclusive(() => {
        const row = q().bulkRequestInsert.get({
          manifest: params.manifest,
          queue: params.queue,
          bulk: params.bulk,
          tenant: params.tenant,
          items: JSON.stringify(params.items),
          totals: JSON.stringify(params.totals),
          requester: params.requester,
          channel: params.channel,
          approverRole: params.approverRole,
          secondPerson: params.secondPerson ? 1 : 0,
          codeHash: params.codeHash,
          now: params.now,
          expiresAt: params.expiresAt,
          tries: params.tries ?? 0,
        }) as Row;
        core.autocommitted(1);
        return toBulkRequest(row);
      });
    },

    bulkRequestGet(params: { id: number }): Promise<BulkRequest | null> {
      return core.exclusive(() => {
        const row = q().bulkRequestGet.get({ id: params.id }) as Row | undefined;
        return row ? toBulkRequest(row) : null;
      });
    },

    bulkRequestLatest(params: { manifest: string }): Promise<BulkRequest | null> {
      return core.exclusive(() => {
        const row = q().bulkRequestLatest.get({ manifest: params.manifest }) as Row | undefined;
        return row ? toBulkRequest(row) : null;
      });
    },

    bulkRequestsList(params: { manifest?: string; limit?: number }): Promise<BulkRequest[]> {
      return core.exclusive(() =>
        (q().bulkRequestsList.all({
          manifest: params.manifest ?? null,
          // SQLite's LIMIT -1: no limit.
          limit: params.limit ?? -1,
        }) as Row[]).map(toBulkRequest)
      );
    },

    bulkRequestCodeHash(params: { id: number }): Promise<
      { request: BulkRequest; codeHash: string | null } | null
    > {
      return core.exclusive(() => {
        const row = q().bulkRequestCodeHash.get({ id: params.id }) as Row | undefined;
        if (!row) return null;
        return {
          request: toBulkRequest(row),
          codeHash: row.code_hash == null ? null : String(row.code_hash),
        };
      });
    },

    bulkRequestTry(
      params: { id: number; limit: number; now: number },
    ): Promise<BulkRequest | null> {
      return writeReturning(() => q().bulkRequestTry.get({ ...params }));
    },

    bulkRequestConfirm(params: {
      id: number;
      confirmer: string;
      totpStep: number | null;
      limit: number;
      now: number;
    }): Promise<BulkRequest | null> {
      return writeReturning(() => q().bulkRequestConfirm.get({ ...params }));
    },

    async bulkRequestEnd(
      params: { id: number; state: "void" | "expired"; reason: string; now: number },
    ): Promise<boolean> {
      return 1 === await write(() => q().bulkRequestEnd.run({ ...params }));
    },

    async totpEnrol(
      params: { person: string; secret: string; by: string; now: number },
    ): Promise<void> {
      await write(() => q().totpEnrol.run({ ...params }));
    },

    totpEnrolment(params: { person: string }): Promise<TotpEnrolment | null> {
      return core.exclusive(() => {
        const row = q().totpEnrolment.get({ person: params.person }) as Row | undefined;
        return row ? toTotpEnrolment(row) : null;
      });
    },

    totpSecret(params: { person: string }): Promise<
      { enrolment: TotpEnrolment; secret: string } | null
    > {
      return core.exclusive(() => {
        const row = q().totpSecret.get({ person: params.person }) as Row | undefined;
        return row ? { enrolment: toTotpEnrolment(row), secret: String(row.secret) } : null;
      });
    },

    async totpUse(params: { person: string; step: number }): Promise<boolean> {
      return 1 === await write(() => q().totpUse.run({ ...params }));
    },

    async totpDelete(params: { person: string }): Promise<boolean> {
      return 1 === await write(() => q().totpDelete.run({ person: params.person }));
    },
  };
}
