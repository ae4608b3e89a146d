/**
 * The SQL fragments several statements of the SQLite store share, in more
 * than one concern file (jobs.ts, workflows.ts), and the check of a job
 * state name. Each concern file holds its own statements, as constants:
 * values always come in as bound parameters; the only interpolations are
 * constants like these and the fixed names of job states.
 *
 * @module
 */

import { JOB_STATES, type JobState } from "../../kernel/types.ts";

// Appends one error entry ({at, attempt, error}) and keeps the last 20.
export const APPEND_ERROR = `errors = CASE WHEN json_array_length(errors) >= 20
    THEN json_insert(json_remove(errors, '$[0]'), '$[#]',
      json_object('at', :now, 'attempt', attempt, 'error', :error))
    ELSE json_insert(errors, '$[#]', json_object('at', :now, 'attempt', attempt, 'error', :error))
  END`;

// A final state clears the unique key unless uniqueness covers all states.
export const CLEAR_UNIQUE = `unique_key = CASE WHEN unique_states = 'all' THEN unique_key END`;

// An operator's retry or replay: runnable now, one more attempt allowed if
// they are used up, no longer final.
export const RUN_AGAIN = `state = 'available', scheduled_at = :now, lease_expires_at = NULL,
      max_attempts = max(max_attempts, attempt + 1),
      completed_at = NULL, cancelled_at = NULL, discarded_at = NULL`;

/** Throws a RangeError naming `state` unless it is one of JOB_STATES. */
export function checkState(state: string): asserts state is JobState {
  if (!(JOB_STATES as readonly string[]).includes(state)) {
    throw new RangeError(
      `state must be one of ${JOB_STATES.join(", ")}, got ${JSON.stringify(state)}`,
    );
  }
}
