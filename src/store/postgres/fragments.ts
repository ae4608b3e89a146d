/**
 * What the PostgreSQL store's files share: pieces of statements, each a
 * fixed text with its values bound, and the checks and orders of the values
 * they bind.
 *
 * @module
 */

import type { JobState } from "../../kernel/types.ts";
import { JOB_STATES } from "../../kernel/types.ts";
import type postgres from "./driver.ts";

/** A postgres.js connection or transaction: anything that runs a tagged query. */
export type Sql = postgres.ISql;
/** A piece of a statement, with its own bound values. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** Appends one error entry ({at, attempt, error}) and keeps the last 20. */
export function appendError(q: Sql, now: number, error: string): Fragment {
  return q`errors = CASE WHEN jsonb_array_length(errors) >= 20 THEN errors - 0 ELSE errors END
    || jsonb_build_array(jsonb_build_object('at', ${now}::bigint, 'attempt', attempt,
      'error', ${error}::text))`;
}

/** A final state clears the unique key unless uniqueness covers all states. */
export function clearUnique(q: Sql): Fragment {
  return q`unique_key = CASE WHEN unique_states = 'all' THEN unique_key END`;
}

/** An operator's retry or replay: runnable now, one more attempt if they are used up. */
export function runAgain(q: Sql, now: number): Fragment {
  return q`state = 'available', scheduled_at = ${now}::bigint, lease_expires_at = NULL,
    max_attempts = greatest(max_attempts, attempt + 1),
    completed_at = NULL, cancelled_at = NULL, discarded_at = NULL`;
}

/** Throws a RangeError naming `state` unless it is one of JOB_STATES. */
export function checkState(state: string): asserts state is JobState {
  if (!(JOB_STATES as readonly string[]).includes(state)) {
    throw new RangeError(
      `state must be one of ${JOB_STATES.join(", ")}, got ${JSON.stringify(state)}`,
    );
  }
}

/** Orders two strings by their code units. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
