/**
 * Leadership, written once for every store (see `jobs.ts` for the form): a
 * role is taken or renewed by one conditional write that admits a missing,
 * released, expired or own row (the fence rises on every takeover and is
 * kept by a renewal, in the statement itself, so racing takers cannot both
 * win); a loser reads who holds it.
 *
 * @module
 */

import type { LeaderState } from "../store.ts";

/** A role's holder as the store reads it. */
export interface Holder {
  node: string | null;
  fence: number;
  expiresAt: number;
}

/** One primitive read or write of `leaders`, and what the store answers ({@linkcode LeaderOpAnswers}). */
export type LeaderOp =
  /** Takes or renews the role for `node` until `expiresAt`; answers the row when it did, else null. */
  | { op: "leaderTake"; name: string; node: string; now: number; expiresAt: number }
  /** The role's row, or null (in a statement of its own: it sees a winner's commit). */
  | { op: "leaderGet"; name: string }
  /** Gives the role up if `node` still holds it at `fence`; answers whether it did. */
  | { op: "leaderRelease"; name: string; node: string; fence: number };

/** What the store answers to each {@linkcode LeaderOp}. */
export interface LeaderOpAnswers {
  leaderTake: Holder | null;
  leaderGet: Holder | null;
  leaderRelease: boolean;
}

/** A generator of leader ops returning `R`. */
export type LeaderOps<R> = Generator<LeaderOp, R, unknown>;

function* ask<O extends LeaderOp>(op: O): LeaderOps<LeaderOpAnswers[O["op"]]> {
  return (yield op) as LeaderOpAnswers[O["op"]];
}

/** Takes or renews role `name` for `node` for `ttlMs`; answers who holds it now. */
export function* takeLeadership(
  params: { name: string; node: string; now: number; ttlMs: number },
): LeaderOps<LeaderState> {
  const { name, node, now } = params;
  const taken = yield* ask({ op: "leaderTake", name, node, now, expiresAt: now + params.ttlMs });
  if (taken) return { held: true, ...taken };
  const holder = yield* ask({ op: "leaderGet", name });
  return holder
    ? { held: false, ...holder }
    : { held: false, node: null, fence: 0, expiresAt: now };
}

/** Gives role `name` up if `node` still holds it at `fence`. */
export function* releaseLeadership(
  params: { name: string; node: string; fence: number },
): LeaderOps<boolean> {
  return yield* ask({ op: "leaderRelease", ...params });
}
