/**
 * `bulk_requests` and `totp_enrolments` rows to the seam's types, for both
 * adapters (a `bigint` as a string, a boolean as 1 or `true`). The columns
 * a row is read from never include the code's hash nor the TOTP seed.
 *
 * @module
 */

import type {
  BulkRequest,
  BulkRequestState,
  ConfirmChannelKind,
  ManifestEntry,
  TotpEnrolment,
} from "./bulk_request_types.ts";
import { json, num, type Row } from "./rows.ts";

/** The columns of a `bulk_requests` row, its code's hash left out. */
export const BULK_REQUEST_COLUMNS = [
  "id",
  "manifest",
  "queue",
  "bulk",
  "tenant",
  "items",
  "totals",
  "requester",
  "channel",
  "approver_role",
  "second_person",
  "created_at",
  "expires_at",
  "tries",
  "state",
  "ended_reason",
  "ended_at",
  "confirmer",
  "confirmed_at",
  "totp_step",
] as const;

/** A `bulk_requests` row (without its code's hash) as a {@linkcode BulkRequest}. */
export function toBulkRequest(row: Row): BulkRequest {
  return {
    id: Number(row.id),
    manifest: String(row.manifest),
    queue: String(row.queue),
    bulk: String(row.bulk),
    tenant: row.tenant == null ? null : String(row.tenant),
    items: json(row.items) as ManifestEntry[],
    totals: json(row.totals) as Record<string, string>,
    requester: String(row.requester),
    channel: String(row.channel) as ConfirmChannelKind,
    approverRole: row.approver_role == null ? null : String(row.approver_role),
    secondPerson: row.second_person === true || Number(row.second_person) === 1,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    tries: Number(row.tries),
    state: String(row.state) as BulkRequestState,
    endedReason: row.ended_reason == null ? null : String(row.ended_reason),
    endedAt: num(row.ended_at),
    confirmer: row.confirmer == null ? null : String(row.confirmer),
    confirmedAt: num(row.confirmed_at),
    totpStep: num(row.totp_step),
  };
}

/** A `totp_enrolments` row (without its seed) as a {@linkcode TotpEnrolment}. */
export function toTotpEnrolment(row: Row): TotpEnrolment {
  return {
    person: String(row.person),
    lastStep: num(row.last_step),
    enrolledBy: String(row.enrolled_by),
    enrolledAt: Number(row.enrolled_at),
  };
}
