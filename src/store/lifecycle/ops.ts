/**
 * Every primitive op the shared lifecycle modules yield (`jobs.ts`,
 * `schedules.ts`, `leaders.ts`, and the workflow bookkeeping's), and the
 * two ways a store drives a generator of them: synchronously inside its
 * write transaction (SQLite) or awaiting each answer (PostgreSQL, which
 * also pipelines the ops that answer nothing; see its adapter).
 *
 * A new kind of row with a lifecycle of its own gets a file here: its ops,
 * what each answers, and its decisions as generators; then each adapter
 * answers its ops, one statement each.
 *
 * @module
 */

import type { Op } from "../../workflow/bookkeeping.ts";
import type { JobOp } from "./jobs.ts";
import type { LeaderOp } from "./leaders.ts";
import type { ScheduleOp } from "./schedules.ts";

/** Any op a store answers for the shared lifecycle. */
export type StoreOp = JobOp | ScheduleOp | LeaderOp | Op;

/** A generator of {@linkcode StoreOp}s returning `R`. */
export type StoreOps<R> = Generator<StoreOp, R, unknown>;

/** Drives `ops` with a synchronous store (SQLite). */
export function runStoreOps<R>(ops: StoreOps<R>, answer: (op: StoreOp) => unknown): R {
  let next = ops.next();
  while (!next.done) next = ops.next(answer(next.value));
  return next.value;
}
