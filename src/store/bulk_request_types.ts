/**
 * The store's words for bulk money confirmed out of band
 * (src/workqueue/confirm.ts): a request binding a confirmation code to a
 * manifest ({@linkcode BulkRequest}), and a person's TOTP enrolment
 * ({@linkcode TotpEnrolment}). The concerns {@linkcode StoreBulkRequests}
 * and {@linkcode StoreTotp} are part of the `Store` seam.
 *
 * Neither a code's hash nor a TOTP seed is on a row handed out by a listing:
 * only {@linkcode StoreBulkRequests.bulkRequestCodeHash} and
 * {@linkcode StoreTotp.totpSecret}, named for what they return, hand them
 * to the one caller that checks a code.
 *
 * @module
 */

/** Where a request is: waiting for its code, or ended one of four ways. */
export type BulkRequestState = "pending" | "locked" | "confirmed" | "void" | "expired";

/** How a code reaches the confirmer (`confirm_by:`). */
export type ConfirmChannelKind = "command" | "webhook" | "email" | "totp";

/** One item of a manifest: its id, its amount (a decimal string) and currency. */
export interface ManifestEntry {
  id: string;
  amount: string;
  currency: string;
}

/** A row of `bulk_requests` without its code's hash. */
export interface BulkRequest {
  id: number;
  /** The manifest's hash (lowercase hex SHA-256). */
  manifest: string;
  queue: string;
  /** The bulk action's id in the queue (`bulk: - id:`). */
  bulk: string;
  tenant: string | null;
  /** The items as previewed, in manifest order. */
  items: ManifestEntry[];
  /** The total per currency, decimal strings. */
  totals: Record<string, string>;
  /** The person who asked for the code. */
  requester: string;
  channel: ConfirmChannelKind;
  /** On a TOTP channel, the role whose members' authenticators confirm; else null. */
  approverRole: string | null;
  /** Whether the confirmer must be another person, holding the approver role. */
  secondPerson: boolean;
  createdAt: number;
  /** The code stops working at this instant. */
  expiresAt: number;
  /** Wrong codes given so far. */
  tries: number;
  state: BulkRequestState;
  /** Why it is void, expired or locked (`superseded`, `manifest-changed`, ...), else null. */
  endedReason: string | null;
  endedAt: number | null;
  confirmer: string | null;
  confirmedAt: number | null;
  /** On a TOTP channel, the 30-second step of the code that confirmed it. */
  totpStep: number | null;
}

/** What `bulkRequestCreate` takes: the request as asked, with its code's hash. */
export interface NewBulkRequest {
  manifest: string;
  queue: string;
  bulk: string;
  tenant: string | null;
  items: readonly ManifestEntry[];
  totals: Record<string, string>;
  requester: string;
  channel: ConfirmChannelKind;
  approverRole: string | null;
  secondPerson: boolean;
  /** The scrypt hash of the code (null on a TOTP channel: nothing is sent). */
  codeHash: string | null;
  /** Wrong codes carried over from the request this one supersedes. @default 0 */
  tries?: number;
  expiresAt: number;
  now: number;
}

/**
 * Bulk requests: created pending with their code's hash, read by id or by
 * manifest, and moved by one conditional write each, so two confirmers
 * racing with the right code confirm once and two wrong codes count twice.
 */
export interface StoreBulkRequests {
  /** Inserts a pending request; the row as stored. */
  bulkRequestCreate(params: NewBulkRequest): Promise<BulkRequest>;
  /** One request, or null. */
  bulkRequestGet(params: { id: number }): Promise<BulkRequest | null>;
  /** The newest request for `manifest`, or null when there is none. */
  bulkRequestLatest(params: { manifest: string }): Promise<BulkRequest | null>;
  /** Requests newest first (for `manifest` when given), at most `limit`. */
  bulkRequestsList(params: { manifest?: string; limit?: number }): Promise<BulkRequest[]>;
  /**
   * The stored hash of a request's code, with its row, for the one caller
   * that checks a code against it; null when there is no such request.
   */
  bulkRequestCodeHash(params: { id: number }): Promise<
    { request: BulkRequest; codeHash: string | null } | null
  >;
  /**
   * Counts one wrong code on a pending request: `tries` rises by one, and
   * when it reaches `limit` the request is `locked` at `now`. The row after,
   * or null when the request was not pending.
   */
  bulkRequestTry(params: { id: number; limit: number; now: number }): Promise<BulkRequest | null>;
  /**
   * Confirms a pending request that has not expired at `now` and has fewer
   * than `limit` wrong tries; the row after, or null when it was not (a
   * second confirmer racing the first gets null).
   */
  bulkRequestConfirm(params: {
    id: number;
    confirmer: string;
    totpStep: number | null;
    limit: number;
    now: number;
  }): Promise<BulkRequest | null>;
  /**
   * Ends a pending request as `void` or `expired` (or a locked one as
   * `void`), with why; false when it had already ended otherwise.
   */
  bulkRequestEnd(params: {
    id: number;
    state: "void" | "expired";
    reason: string;
    now: number;
  }): Promise<boolean>;
}

/** A person's TOTP enrolment, its seed left out. */
export interface TotpEnrolment {
  person: string;
  /** The newest 30-second step a code of this person was accepted at, or null. */
  lastStep: number | null;
  enrolledBy: string;
  enrolledAt: number;
}

/**
 * People's TOTP enrolments. No method hands out a seed but
 * {@linkcode totpSecret}, named for it.
 */
export interface StoreTotp {
  /** Enrols `person` with `secret` (base32), replacing an enrolment they had (its last step forgotten). */
  totpEnrol(params: { person: string; secret: string; by: string; now: number }): Promise<void>;
  /** A person's enrolment without its seed, or null when they have none. */
  totpEnrolment(params: { person: string }): Promise<TotpEnrolment | null>;
  /** A person's seed (base32) with their enrolment, for the one caller that checks a code; or null. */
  totpSecret(params: { person: string }): Promise<
    { enrolment: TotpEnrolment; secret: string } | null
  >;
  /**
   * Records that `person`'s code of time step `step` was used: false, and
   * nothing written, when a code of that step or a later one already was
   * (a code works once) or the person has no enrolment.
   */
  totpUse(params: { person: string; step: number }): Promise<boolean>;
  /** Removes a person's enrolment; false when there was none. */
  totpDelete(params: { person: string }): Promise<boolean>;
}
