/**
 * Confirmation codes for bulk money actions: a single-use code bound to a
 * manifest (`manifest.ts`), sent out of band (`channels.ts`), valid for
 * minutes, and checked once.
 *
 * - {@linkcode requestCode}: a new six-digit code (from `crypto.randomInt`,
 *   uniform) for the manifest, valid {@linkcode DEFAULT_CODE_TTL_MS} unless
 *   told otherwise, stored only as its scrypt hash (bound to the manifest:
 *   the hash is of `<manifest>:<code>` with a random salt), then delivered.
 *   A TOTP channel makes no code: the approver's authenticator is the code.
 *   A pending request for the same manifest is superseded (void) and its
 *   wrong tries carry over to the new one, so asking again does not reset
 *   the count; while a locked request of the manifest has not expired, a new
 *   one is refused.
 * - {@linkcode confirmCode}: the code works once and until it expires; the
 *   manifest as it is now (the caller recomputes it from the items) must be
 *   the one the code was bound to, else the request is void; a wrong code
 *   counts, and the {@linkcode CODE_TRIES}th wrong one locks the request;
 *   with `second_person` the confirmer must be another person than the
 *   requester and hold the approver role; on a TOTP channel the confirmer
 *   must hold the channel's role, be enrolled, and give the code of their own
 *   authenticator at the clock's instant, one step either side, and each
 *   code of theirs works once.
 *
 * Every step is audited in the transaction of its change: `bulk.request`,
 * `bulk.confirm`, and `bulk.refused` for each refusal (with `why`), on the
 * target `manifest:<hash>`. The code itself is never stored, returned,
 * audited, logged, nor put in an error.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { randomInt, scrypt, timingSafeEqual } from "node:crypto";
import type { Clock } from "../clock.ts";
import type { BulkRequest } from "../store/bulk_request_types.ts";
import type { PrincipalRow, Store, StoreTx } from "../store/store.ts";
import { type ChannelDeps, type ChannelSpec, type CodeSummary, deliverCode } from "./channels.ts";
import type { Manifest } from "./manifest.ts";
import { totpMatch } from "./totp.ts";

/** Wrong codes that lock a request: the fifth wrong one locks it. */
export const CODE_TRIES = 5;
/** How long a code works, by default: 10 minutes. */
export const DEFAULT_CODE_TTL_MS = 10 * 60_000;
/** The longest a code may be made to work: one hour. */
export const MAX_CODE_TTL_MS = 60 * 60_000;
/** The role a second person must hold. */
export const APPROVER_ROLE = "approver";

/** The audited actions of this module (each listed in `src/admin/actions.ts`, `ACTIONS`). */
export const CONFIRM_ACTIONS = ["bulk.request", "bulk.confirm", "bulk.refused"] as const;

/** One of {@linkcode CONFIRM_ACTIONS}. */
export type ConfirmAction = typeof CONFIRM_ACTIONS[number];

/** Why a request or a confirmation was refused (the `why` of its `bulk.refused` audit row). */
export type RefusedWhy =
  | "unknown-person"
  | "no-request"
  | "locked"
  | "used"
  | "void"
  | "expired"
  | "manifest-changed"
  | "self-approval"
  | "not-approver"
  | "not-enrolled"
  | "wrong-code"
  | "delivery-failed"
  | "out-of-scope"
  | "bad-ttl";

/** A refusal: `why` says which rule, the message is one sentence for the person. */
export class BulkRefused extends Error {
  constructor(
    readonly why: RefusedWhy,
    message: string,
    /** The request concerned, when there is one (its state after the refusal). */
    readonly request: BulkRequest | null = null,
  ) {
    super(message);
    this.name = "BulkRefused";
  }
}

/** Where an action came from, for its audit row: the door and, at the command line, the OS user. */
export interface Via {
  /** `cli`, `console`, `api`, `library`. */
  door?: string;
  /** The operating system's user behind the command line. */
  osUser?: string;
}

/** What {@linkcode requestCode} takes. */
export interface CodeRequest {
  /** The manifest previewed (`manifestOf`). */
  manifest: Manifest;
  queue: string;
  /** The bulk action's id in the queue. */
  bulk: string;
  tenant?: string | null;
  /** The person asking: one the store knows, not disabled. */
  requester: string;
  /** Where the code goes (`confirm_by:`). */
  channel: ChannelSpec;
  /** Whether another person with the approver role must confirm (`second_person: true`). */
  secondPerson: boolean;
  /** How long the code works. @default DEFAULT_CODE_TTL_MS */
  ttlMs?: number;
  via?: Via;
}

/** What {@linkcode confirmCode} takes. */
export interface CodeConfirmation {
  /** The manifest's hash the person names (`jobs bulk confirm <manifest>`). */
  manifest: string;
  /** The manifest's hash recomputed now, from the items as they are: a difference voids the code. */
  current: string;
  /** The code as typed. */
  code: string;
  /** The person confirming: one the store knows, not disabled. */
  confirmer: string;
  via?: Via;
}

/** What the confirmation machinery needs: the clock, and the channels' needs. */
export interface ConfirmDeps extends ChannelDeps {
  clock: Clock;
}

// ------------------------------------------------------------------ code hash

/** scrypt's cost for a code's hash: a code lives minutes, a guess must still cost. */
const CODE_COST = { ln: 14, r: 8, p: 1 };
const CODE_HASH = /^scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([\w-]+)\$([\w-]+)$/;

function derive(
  text: string,
  salt: Uint8Array,
  params: { ln: number; r: number; p: number },
  bytes: number,
): Promise<Buffer> {
  const maxmem = 256 * params.r * (2 ** params.ln) + 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(
      text,
      salt,
      bytes,
      { N: 2 ** params.ln, r: params.r, p: params.p, maxmem },
      (e, key) => e ? reject(e) : resolve(key),
    )
  );
}

/** The stored hash of `code` bound to `manifest`: `scrypt$ln=..,r=..,p=..$<salt>$<key>`. */
export async function hashCode(manifest: string, code: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const key = await derive(`${manifest}:${code}`, salt, CODE_COST, 32);
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
  return `scrypt$ln=${CODE_COST.ln},r=${CODE_COST.r},p=${CODE_COST.p}$${b64(salt)}$${b64(key)}`;
}

/** Whether `code` bound to `manifest` is the one `stored` was made from, compared in constant time. */
export async function verifyCode(manifest: string, code: string, stored: string): Promise<boolean> {
  const match = CODE_HASH.exec(stored);
  if (!match) return false;
  const [ln, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (ln < 1 || ln > 20 || r < 1 || p < 1) return false;
  const expected = Buffer.from(match[5]!, "base64url");
  if (expected.length < 16) return false;
  const key = await derive(
    `${manifest}:${code}`,
    Buffer.from(match[4]!, "base64url"),
    { ln, r, p },
    expected.length,
  );
  return timingSafeEqual(key, expected);
}

/** A new six-digit code, uniform over 000000 to 999999. */
export function newCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, "0");
}

// -------------------------------------------------------------------- helpers

type Tx = Pick<StoreTx, "auditRecord">;

function target(manifest: string): string {
  return `manifest:${manifest}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function audit(
  tx: Tx,
  now: number,
  actor: string,
  action: ConfirmAction,
  manifest: string,
  details: Record<string, unknown>,
  via: Via | undefined,
): Promise<void> {
  return tx.auditRecord({
    at: now,
    actor,
    action,
    target: target(manifest),
    reason: null,
    details: via ? { ...details, via } : details,
  });
}

/** Audits a refusal (in `tx`, or alone) and returns the error to throw. */
async function refuse(
  tx: Tx,
  now: number,
  actor: string,
  manifest: string,
  why: RefusedWhy,
  message: string,
  request: BulkRequest | null,
  via: Via | undefined,
  extra: Record<string, unknown> = {},
): Promise<BulkRefused> {
  await audit(tx, now, actor, "bulk.refused", manifest, {
    why,
    request: request?.id ?? null,
    ...(request ? { tries: request.tries, state: request.state } : {}),
    ...extra,
  }, via);
  return new BulkRefused(why, message, request);
}

/**
 * The person `name`, enabled, or null. A token of the API asks as itself,
 * named as the audit trail names it (`token:<name>`).
 */
async function person(store: Store, name: string): Promise<PrincipalRow | null> {
  const row = name.startsWith("token:")
    ? await store.principalGet({ kind: "token", name: name.slice("token:".length) })
    : await store.principalGet({ kind: "person", name });
  return row && !row.disabled ? row : null;
}

function summaryOf(request: BulkRequest): CodeSummary {
  return {
    request: request.id,
    manifest: request.manifest,
    queue: request.queue,
    bulk: request.bulk,
    count: request.items.length,
    totals: request.totals,
    requester: request.requester,
    expiresAt: iso(request.expiresAt),
  };
}

// -------------------------------------------------------------------- request

/**
 * Binds a new code to `params.manifest` and sends it through
 * `params.channel`; the request as stored (never the code). Audited
 * `bulk.request`; a refusal is audited `bulk.refused` and thrown.
 *
 * @throws {BulkRefused} `unknown-person` (no such enabled person), `bad-ttl`,
 *   `out-of-scope` (a person of one tenant asking for another's items),
 *   `locked` (the manifest's last request is locked until it expires),
 *   `delivery-failed` (the channel did not take the code: the request is void)
 */
export async function requestCode(
  store: Store,
  deps: ConfirmDeps,
  params: CodeRequest,
): Promise<BulkRequest> {
  const now = deps.clock.now();
  const hash = params.manifest.hash;
  const { requester, via } = params;
  const ttl = params.ttlMs ?? DEFAULT_CODE_TTL_MS;
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > MAX_CODE_TTL_MS) {
    throw await refuse(
      store,
      now,
      requester,
      hash,
      "bad-ttl",
      `a code works between 1 ms and ${MAX_CODE_TTL_MS / 60_000} minutes, not ${ttl} ms`,
      null,
      via,
    );
  }
  const asker = await person(store, requester);
  if (!asker) {
    throw await refuse(
      store,
      now,
      requester,
      hash,
      "unknown-person",
      `no person "${requester}" (or they are disabled)`,
      null,
      via,
    );
  }
  const tenant = params.tenant ?? null;
  if (asker.tenant !== null && asker.tenant !== tenant) {
    throw await refuse(
      store,
      now,
      requester,
      hash,
      "out-of-scope",
      `"${requester}" acts for tenant "${asker.tenant}" only, and these items are ${
        tenant === null ? "installation-wide" : `tenant "${tenant}"'s`
      }`,
      null,
      via,
    );
  }
  const totp = params.channel.kind === "totp" ? params.channel : null;
  const code = totp ? null : newCode();
  // Hashed before the transaction: scrypt is slow on purpose, the write lock is not.
  const codeHash = code === null ? null : await hashCode(hash, code);
  // A refusal is returned, not thrown, so its audit row commits.
  const made = await store.transaction(async (tx): Promise<BulkRequest | BulkRefused> => {
    const latest = await tx.bulkRequestLatest({ manifest: hash });
    let tries = 0;
    let supersedes: number | null = null;
    if (latest?.state === "locked" && latest.expiresAt > now) {
      return await refuse(
        tx,
        now,
        requester,
        hash,
        "locked",
        `the last code for this manifest was locked after ${CODE_TRIES} wrong codes: ` +
          `a new one can be asked for from ${iso(latest.expiresAt)}`,
        latest,
        via,
      );
    }
    if (latest?.state === "pending" && latest.expiresAt <= now) {
      // Its time is up: a new window, with its own tries.
      await tx.bulkRequestEnd({ id: latest.id, state: "expired", reason: "expired", now });
    } else if (latest?.state === "pending") {
      // Superseded: its wrong tries carry over, so asking again resets nothing.
      if (await tx.bulkRequestEnd({ id: latest.id, state: "void", reason: "superseded", now })) {
        tries = latest.tries;
        supersedes = latest.id;
      }
    }
    const request = await tx.bulkRequestCreate({
      manifest: hash,
      queue: params.queue,
      bulk: params.bulk,
      tenant,
      items: params.manifest.items,
      totals: params.manifest.totals,
      requester,
      channel: params.channel.kind,
      approverRole: totp?.role ?? null,
      secondPerson: params.secondPerson,
      codeHash,
      tries,
      expiresAt: now + ttl,
      now,
    });
    await audit(tx, now, requester, "bulk.request", hash, {
      request: request.id,
      queue: request.queue,
      bulk: request.bulk,
      action: params.manifest.action,
      count: request.items.length,
      totals: request.totals,
      channel: request.channel,
      secondPerson: request.secondPerson,
      expiresAt: iso(request.expiresAt),
      ...(supersedes === null ? {} : { supersedes, tries }),
    }, via);
    return request;
  });
  if (made instanceof BulkRefused) throw made;
  const created = made;
  if (code === null) return created;
  try {
    await deliverCode(params.channel, code, summaryOf(created), deps);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw await store.transaction(async (tx) => {
      await tx.bulkRequestEnd({ id: created.id, state: "void", reason: "delivery-failed", now });
      const after = await tx.bulkRequestGet({ id: created.id });
      return await refuse(
        tx,
        now,
        requester,
        hash,
        "delivery-failed",
        `the code could not be sent, so the request is void: ${message}`,
        after,
        via,
        { error: message },
      );
    });
  }
  return created;
}

// -------------------------------------------------------------------- confirm

/** The message of a request that is no longer pending, by its state. */
function endedMessage(request: BulkRequest): { why: RefusedWhy; message: string } {
  switch (request.state) {
    case "confirmed":
      return { why: "used", message: "this code was used already: a code works once" };
    case "locked":
      return {
        why: "locked",
        message: `this request is locked after ${CODE_TRIES} wrong codes: preview again and ` +
          `ask for a new code from ${iso(request.expiresAt)}`,
      };
    case "expired":
      return { why: "expired", message: "this code has expired: ask for a new one" };
    default:
      return {
        why: "void",
        message: `this code is void (${request.endedReason ?? "ended"}): preview again`,
      };
  }
}

/**
 * Checks `params.code` against the newest request for `params.manifest`
 * and, when every rule holds, confirms it: the confirmed request, audited
 * `bulk.confirm`. The caller then runs the exact previewed set. Anything
 * else is audited `bulk.refused` and thrown.
 *
 * @throws {BulkRefused} `no-request` (none, or another tenant's), `unknown-person`, `used` (the code
 *   worked already), `locked`, `void`, `expired`, `manifest-changed` (the
 *   request is now void), `self-approval`, `not-approver`, `not-enrolled`,
 *   `wrong-code` (counted; the {@linkcode CODE_TRIES}th is `locked`)
 */
export async function confirmCode(
  store: Store,
  deps: Pick<ConfirmDeps, "clock">,
  params: CodeConfirmation,
): Promise<BulkRequest> {
  const now = deps.clock.now();
  const { manifest, confirmer, via } = params;
  const held = await store.bulkRequestLatest({ manifest });
  if (!held) {
    throw await refuse(
      store,
      now,
      confirmer,
      manifest,
      "no-request",
      `no code was asked for manifest ${manifest}: preview, then request one`,
      null,
      via,
    );
  }
  const who = await person(store, confirmer);
  if (who && who.tenant !== null && who.tenant !== held.tenant) {
    // Another tenant's request is answered as a missing one: its existence is not theirs to know.
    throw await refuse(
      store,
      now,
      confirmer,
      manifest,
      "no-request",
      `no code was asked for manifest ${manifest}: preview, then request one`,
      null,
      via,
      { outOfScope: held.id },
    );
  }
  if (!who) {
    throw await refuse(
      store,
      now,
      confirmer,
      manifest,
      "unknown-person",
      `no person "${confirmer}" (or they are disabled)`,
      held,
      via,
    );
  }
  if (held.state !== "pending") {
    const { why, message } = endedMessage(held);
    throw await refuse(store, now, confirmer, manifest, why, message, held, via);
  }
  if (held.expiresAt <= now) {
    throw await store.transaction(async (tx) => {
      await tx.bulkRequestEnd({ id: held.id, state: "expired", reason: "expired", now });
      return await refuse(
        tx,
        now,
        confirmer,
        manifest,
        "expired",
        `this code expired at ${iso(held.expiresAt)}: ask for a new one`,
        await tx.bulkRequestGet({ id: held.id }),
        via,
      );
    });
  }
  if (params.current !== manifest) {
    throw await store.transaction(async (tx) => {
      await tx.bulkRequestEnd({ id: held.id, state: "void", reason: "manifest-changed", now });
      return await refuse(
        tx,
        now,
        confirmer,
        manifest,
        "manifest-changed",
        "the items changed since the preview (an amount, a state, a claim or a new item), " +
          "so the code is void: preview again",
        await tx.bulkRequestGet({ id: held.id }),
        via,
        { current: params.current },
      );
    });
  }
  if (held.secondPerson && confirmer === held.requester) {
    throw await refuse(
      store,
      now,
      confirmer,
      manifest,
      "self-approval",
      `"${confirmer}" asked for this code: another person with the ${APPROVER_ROLE} role ` +
        "must confirm it",
      held,
      via,
    );
  }
  if (held.secondPerson && !who.roles.includes(APPROVER_ROLE)) {
    throw await refuse(
      store,
      now,
      confirmer,
      manifest,
      "not-approver",
      `"${confirmer}" does not hold the ${APPROVER_ROLE} role this confirmation needs`,
      held,
      via,
    );
  }
  const step = held.channel === "totp"
    ? await totpStepOf(store, now, who, held, params)
    : await codeMatches(store, held, params.code)
    ? null
    : undefined;
  if (step === undefined) throw await wrongCode(store, now, held, params);
  // A refusal is returned, not thrown, so the try it counts and its audit row commit.
  const done = await store.transaction(async (tx): Promise<BulkRequest | BulkRefused> => {
    if (step !== null && !(await tx.totpUse({ person: confirmer, step }))) {
      // That code of theirs confirmed something already: it works once.
      return await wrongTry(tx, now, held, params, "that code was used already");
    }
    const confirmed = await tx.bulkRequestConfirm({
      id: held.id,
      confirmer,
      totpStep: step,
      limit: CODE_TRIES,
      now,
    });
    if (!confirmed) {
      // Another confirmer, a lock or a new request came first.
      const current = await tx.bulkRequestGet({ id: held.id });
      const { why, message } = endedMessage(current ?? held);
      return await refuse(tx, now, confirmer, manifest, why, message, current, via);
    }
    await audit(tx, now, confirmer, "bulk.confirm", manifest, {
      request: confirmed.id,
      queue: confirmed.queue,
      bulk: confirmed.bulk,
      count: confirmed.items.length,
      totals: confirmed.totals,
      requester: confirmed.requester,
      channel: confirmed.channel,
      secondPerson: confirmed.secondPerson,
    }, via);
    return confirmed;
  });
  if (done instanceof BulkRefused) throw done;
  return done;
}

/** Whether `code` is the request's (a code channel). */
async function codeMatches(store: Store, request: BulkRequest, code: string): Promise<boolean> {
  const held = await store.bulkRequestCodeHash({ id: request.id });
  if (!held?.codeHash || !/^\d{6}$/.test(code)) return false;
  return await verifyCode(request.manifest, code, held.codeHash);
}

/**
 * On a TOTP channel: the step of the confirmer's code, or undefined when
 * it is wrong; refused when the confirmer lacks the channel's role or has
 * no authenticator.
 */
async function totpStepOf(
  store: Store,
  now: number,
  who: PrincipalRow,
  request: BulkRequest,
  params: CodeConfirmation,
): Promise<number | undefined> {
  const role = request.approverRole ?? APPROVER_ROLE;
  if (!who.roles.includes(role)) {
    throw await refuse(
      store,
      now,
      who.name,
      request.manifest,
      "not-approver",
      `"${who.name}" does not hold the ${role} role whose authenticators confirm this`,
      request,
      params.via,
    );
  }
  const seed = await store.totpSecret({ person: who.name });
  if (!seed) {
    throw await refuse(
      store,
      now,
      who.name,
      request.manifest,
      "not-enrolled",
      `"${who.name}" has no authenticator enrolled: an admin enrols one with ` +
        `\`jobs users totp ${who.name}\``,
      request,
      params.via,
    );
  }
  return totpMatch(who.name, seed.secret, params.code, now) ?? undefined;
}

/** Counts a wrong code in `tx`; the refusal to throw (`locked` at the last try). */
async function wrongTry(
  tx: Pick<StoreTx, "auditRecord" | "bulkRequestTry" | "bulkRequestGet">,
  now: number,
  request: BulkRequest,
  params: CodeConfirmation,
  what: string,
): Promise<BulkRefused> {
  const after = await tx.bulkRequestTry({ id: request.id, limit: CODE_TRIES, now });
  if (!after) {
    const current = await tx.bulkRequestGet({ id: request.id });
    const { why, message } = endedMessage(current ?? request);
    return await refuse(
      tx,
      now,
      params.confirmer,
      request.manifest,
      why,
      message,
      current,
      params.via,
    );
  }
  const left = CODE_TRIES - after.tries;
  const message = after.state === "locked"
    ? `${what}; that was the ${CODE_TRIES}th wrong code, so the request is locked: ` +
      `preview again and ask for a new code from ${iso(after.expiresAt)}`
    : `${what}: ${left} ${left === 1 ? "try" : "tries"} left`;
  return await refuse(
    tx,
    now,
    params.confirmer,
    request.manifest,
    after.state === "locked" ? "locked" : "wrong-code",
    message,
    after,
    params.via,
  );
}

function wrongCode(
  store: Store,
  now: number,
  request: BulkRequest,
  params: CodeConfirmation,
): Promise<BulkRefused> {
  return store.transaction((tx) => wrongTry(tx, now, request, params, "wrong code"));
}

/**
 * A request as `jobs bulk request --json` and the API show it: instants as
 * ISO UTC, the tries left; never a code nor its hash (the row has neither).
 */
export function bulkRequestJson(request: BulkRequest) {
  return {
    id: request.id,
    manifest: request.manifest,
    queue: request.queue,
    bulk: request.bulk,
    tenant: request.tenant,
    count: request.items.length,
    items: request.items,
    totals: request.totals,
    requester: request.requester,
    channel: request.channel,
    secondPerson: request.secondPerson,
    state: request.state,
    triesLeft: Math.max(0, CODE_TRIES - request.tries),
    createdAt: iso(request.createdAt),
    expiresAt: iso(request.expiresAt),
    endedReason: request.endedReason,
    confirmer: request.confirmer,
    confirmedAt: request.confirmedAt === null ? null : iso(request.confirmedAt),
  };
}
