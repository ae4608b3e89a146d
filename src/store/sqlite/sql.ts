/**
 * Every SQL statement of the SQLite store, as constants. Values always come
 * in as bound parameters; the only interpolations are other constants of
 * this file and the fixed names of job states.
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

const INSERT_COLUMNS = `INSERT INTO jobs (queue, worker, args, meta, tags, tenant, priority,
      max_attempts, scheduled_at, unique_key, unique_states, occurrence, schedule_id,
      scheduled_for, state, inserted_at)`;

// One job per run, the values positional in the order of insertRow() and the
// transaction's instant last. A prepared one-row insert run once per job
// costs less than one statement reading every job from a JSON array
// (json_each and ->> per column): 135k against 92k rows/s, measured.
const INSERT_JOB = `${INSERT_COLUMNS}
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
      CASE WHEN ?9 > ?15 THEN 'scheduled' ELSE 'available' END, ?15)`;

/**
 * Plain jobs that differ only in their args, in one statement: the args a
 * JSON array of their texts, everything else bound once. 712k rows/s
 * against 446k for the same rows as VALUES, measured: binding is what a
 * row costs. The rows get consecutive ids in the array's order.
 */
export const INSERT_ALIKE = `${INSERT_COLUMNS}
    SELECT :queue, :worker, value, :meta, :tags, :tenant, :priority, :max_attempts,
      :scheduled_at, NULL, :unique_states, NULL, :schedule_id, :scheduled_for, :state, :now
    FROM json_each(:args) ORDER BY key`;

/**
 * `rows` plain jobs in one statement, each row's values as insertRow()'s,
 * then the row's state (`scheduled` or `available`, as INSERT_JOB decides
 * it) and the instant. Binding a batch once costs far less than a statement
 * per row: 458k against 251k rows/s on the jobs table, measured with
 * node:sqlite. The parameters are anonymous: numbered ones (`?1500`) made
 * node:sqlite bind the same statement at 33k rows/s. The rows get
 * consecutive ids (the table's AUTOINCREMENT, under the write lock), the
 * last one the statement's lastInsertRowid.
 */
export function insertJobsSql(rows: number): string {
  const row = `(${Array.from({ length: 16 }, () => "?").join(", ")})`;
  return `${INSERT_COLUMNS} VALUES ${Array.from({ length: rows }, () => row).join(", ")}`;
}

/** `rows` rows of `columns` anonymous parameters each, for a `VALUES` list. */
function valueRows(rows: number, columns: number): string {
  const row = `(${Array.from({ length: columns }, () => "?").join(", ")})`;
  return Array.from({ length: rows }, () => row).join(", ");
}

/**
 * The completions of `rows` jobs in one statement, each row still filtered
 * by its own lease (id, executing, node, fence): the (id, fence) pairs
 * bound as anonymous values, `:now` and `:node` by name. Binding the pairs
 * costs less than reading them from a JSON array with json_each and `->>`:
 * 4.9 against 7.0 us a job in the runtime's own transactions, the two
 * alternating in one process (median of 3 runs), the JSON text included.
 */
export function completedSql(rows: number): string {
  return `UPDATE jobs SET state = 'completed', completed_at = :now, lease_expires_at = NULL,
      ${CLEAR_UNIQUE}
    FROM (SELECT column1 AS id, column2 AS fence FROM (VALUES ${valueRows(rows, 2)})) AS r
    WHERE jobs.id = r.id AND +jobs.state = 'executing' AND jobs.attempted_by = :node
      AND jobs.fence = r.fence
    RETURNING jobs.id, jobs.queue`;
}

/**
 * The attempt rows of `rows` completed attempts with no output and no
 * definition, while no replay waits (the common case by far): each row's
 * (job id, attempt, fence, started at) bound as anonymous values, the rest
 * constant. The same rows through attemptsInsertNoReplays (eight `->>` a
 * row from JSON) cost 4.7 us a job against 1.4 here, alternating in one
 * run, batches of 100.
 */
export function attemptsCompletedSql(rows: number): string {
  return `INSERT INTO attempts (job_id, attempt, fence, node, kind, started_at, finished_at,
      outcome)
    SELECT column1, column2, column3, :node, CASE WHEN column2 > 1 THEN 'retry' ELSE 'run' END,
      column4, :now, 'completed'
    FROM (VALUES ${valueRows(rows, 4)})`;
}

// The kind, actor and reason of an attempt row: those of the job's pending
// replay (`replays`) when the attempt was claimed after it, whose row the
// trigger `replays_consumed` then removes.
const ATTEMPT_KIND = (attempt: string) =>
  `CASE WHEN r.job_id IS NOT NULL THEN 'replay' WHEN ${attempt} > 1 THEN 'retry' ELSE 'run' END`;

// The states an operator may still stop (cancel, discard).
const NOT_FINAL = `('scheduled', 'available', 'executing', 'retryable')`;

// An operator's retry or replay: runnable now, one more attempt allowed if
// they are used up, no longer final.
export const RUN_AGAIN = `state = 'available', scheduled_at = :now, lease_expires_at = NULL,
      max_attempts = max(max_attempts, attempt + 1),
      completed_at = NULL, cancelled_at = NULL, discarded_at = NULL`;

// The columns of a job as the lifecycle reads it (see toLeasedJob).
const LEASED = `id, state, queue, attempt, max_attempts, fence, attempted_by, attempted_at`;

const LEASE_HELD = `id = :id AND state = 'executing' AND attempted_by = :node AND fence = :fence`;

export const SQL = {
  insertPlain: INSERT_JOB,
  insertAlike: INSERT_ALIKE,
  // A job with an occurrence or a unique key: no row when either is taken.
  insertKeyed: `${INSERT_JOB} ON CONFLICT DO NOTHING RETURNING id`,
  byUniqueKey: `SELECT id, queue, state FROM jobs WHERE unique_key = :key`,
  byOccurrence: `SELECT id, queue, state FROM jobs WHERE occurrence = :key`,
  claim: `UPDATE jobs SET state = 'executing', attempt = attempt + 1, fence = fence + 1,
      attempted_by = :node, attempted_at = :now, lease_expires_at = :lease
    -- The unary + keeps the planner on the rowid lookups of the subquery's ids
    -- instead of scanning every available row through the state index.
    WHERE id IN (
      SELECT id FROM jobs
      WHERE state = 'available' AND queue = :queue AND scheduled_at <= :due
        AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1)
      ORDER BY priority, scheduled_at, id LIMIT :limit)
      AND +state = 'available'
    -- The queue and attempted_at are the claim's own :queue and :now, so they
    -- are not read back; the common empty meta and tags come back as NULL.
    -- Each column returned is one more value in RETURNING's buffer and one
    -- more JS value a row: 5.3 against 5.8 us a job with all 15 columns, the
    -- claim and its rows mapped (see toClaimed), alternating in one process,
    -- median of 5 runs.
    RETURNING id, worker, args, nullif(meta, '{}'), nullif(tags, '[]'), occurrence, attempt,
      max_attempts, priority, fence, inserted_at, scheduled_at, schedule_id`,
  // Completions come in batches: see completedSql.
  snoozed: `UPDATE jobs SET
      state = CASE WHEN :until > :now THEN 'scheduled' ELSE 'available' END,
      scheduled_at = :until, attempt = attempt - 1, lease_expires_at = NULL
    WHERE ${LEASE_HELD}
    RETURNING queue, state`,
  retryable: `UPDATE jobs SET state = 'retryable', scheduled_at = :at, lease_expires_at = NULL,
      ${APPEND_ERROR}
    WHERE ${LEASE_HELD}
    RETURNING queue`,
  cancelled: `UPDATE jobs SET state = 'cancelled', cancelled_at = :now, lease_expires_at = NULL,
      ${CLEAR_UNIQUE}, ${APPEND_ERROR}
    WHERE ${LEASE_HELD}
    RETURNING queue`,
  discarded: `UPDATE jobs SET state = 'discarded', discarded_at = :now, lease_expires_at = NULL,
      ${CLEAR_UNIQUE}, ${APPEND_ERROR}
    WHERE ${LEASE_HELD}
    RETURNING queue`,
  // An attempt ended by an operator or the lifeline (rare): its definition
  // is read from the job's meta here rather than carried by a result.
  attemptInsert: `INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
      started_at, finished_at, outcome, error, definition)
    SELECT :id, :attempt, :fence, :node, ${ATTEMPT_KIND(":attempt")}, r.actor, r.reason,
      :started, :now, :outcome, :error,
      (SELECT json_extract(meta, '$.definition') FROM jobs WHERE id = :id)
    FROM (SELECT 1) LEFT JOIN replays AS r ON r.job_id = :id AND r.after < :fence`,
  attemptsInsert: `INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
      started_at, finished_at, outcome, error, output, definition)
    SELECT value ->> 0, value ->> 1, value ->> 2, :node, ${ATTEMPT_KIND("(value ->> 1)")},
      r.actor, r.reason, value ->> 3, :now, value ->> 4, value ->> 5, value ->> 6, value ->> 7
    FROM json_each(:rows)
      LEFT JOIN replays AS r ON r.job_id = value ->> 0 AND r.after < value ->> 2`,
  // The same when no replay waits (nearly always): no lookup per row.
  attemptsInsertNoReplays: `INSERT INTO attempts (job_id, attempt, fence, node, kind,
      started_at, finished_at, outcome, error, output, definition)
    SELECT value ->> 0, value ->> 1, value ->> 2, :node,
      CASE WHEN (value ->> 1) > 1 THEN 'retry' ELSE 'run' END,
      value ->> 3, :now, value ->> 4, value ->> 5, value ->> 6, value ->> 7
    FROM json_each(:rows)`,
  replaysWaiting: `SELECT EXISTS (SELECT 1 FROM replays) AS waiting`,
  release: `UPDATE jobs SET state = 'available', attempt = attempt - 1, lease_expires_at = NULL
    WHERE ${LEASE_HELD}
    RETURNING queue`,
  renew: `UPDATE jobs SET lease_expires_at = :lease WHERE ${LEASE_HELD}`,
  leaseHeld: `SELECT 1 AS held FROM jobs WHERE ${LEASE_HELD}`,
  // The due jobs with the state they leave (for the counts; RETURNING knows
  // only the new one), from the index jobs_due alone; then made available.
  stageDue: `SELECT id, state, queue FROM jobs
    WHERE state IN ('scheduled', 'retryable') AND scheduled_at <= :now
    ORDER BY scheduled_at LIMIT :limit`,
  stage: `UPDATE jobs SET state = 'available' WHERE id IN (SELECT value FROM json_each(:ids))`,
  nextDue: `SELECT min(scheduled_at) AS at FROM jobs WHERE state IN ('scheduled', 'retryable')`,
  expired: `SELECT ${LEASED} FROM jobs
    WHERE state = 'executing' AND lease_expires_at < :now
    ORDER BY lease_expires_at LIMIT :limit`,
  // A lease ended by the lifeline: the job runs again (:to 'available') or is
  // discarded, its error appended.
  leaseEnd: `UPDATE jobs SET state = :to,
      discarded_at = CASE WHEN :to = 'discarded' THEN :now END,
      unique_key = CASE WHEN :to = 'available' OR unique_states = 'all' THEN unique_key END,
      lease_expires_at = NULL, ${APPEND_ERROR}
    WHERE ${LEASE_HELD}
    RETURNING id`,
  // One schedule's final occurrences, oldest first, for its own retention.
  pruneSchedule: `DELETE FROM jobs WHERE id IN (
      SELECT id FROM jobs
      WHERE schedule_id = :schedule AND schedule_id IS NOT NULL
        AND state IN ('completed', 'cancelled', 'discarded')
        AND coalesce(completed_at, cancelled_at, discarded_at) < :before
      ORDER BY scheduled_for LIMIT :limit)
    RETURNING id, queue, state`,
  // What jobsPrune (the schedules in :schedules excepted) and jobsPruneSchedule
  // (for each of :schedules, [id, before]) would delete; a null cutoff keeps all.
  prunable: `SELECT count(*) AS count FROM jobs
    LEFT JOIN (SELECT value ->> 0 AS id, value ->> 1 AS before FROM json_each(:schedules)) AS own
      ON own.id = jobs.schedule_id
    WHERE state IN ('completed', 'cancelled', 'discarded')
      AND CASE WHEN own.id IS NOT NULL
        THEN coalesce(completed_at, cancelled_at, discarded_at) < own.before
        ELSE (state = 'completed' AND completed_at < :completed)
          OR (state = 'cancelled' AND cancelled_at < :cancelled)
          OR (state = 'discarded' AND discarded_at < :discarded) END`,
  attemptsPrune: `DELETE FROM attempts WHERE job_id IN (SELECT value FROM json_each(:ids))`,
  replaysPrune: `DELETE FROM replays WHERE job_id IN (SELECT value FROM json_each(:ids))`,
  cancel: `UPDATE jobs SET state = 'cancelled', cancelled_at = :now, lease_expires_at = NULL,
      ${CLEAR_UNIQUE}, ${APPEND_ERROR}
    WHERE id = :id AND state IN ${NOT_FINAL}
    RETURNING id`,
  // The jobs an operator acts on, as the lifecycle reads them.
  jobsLock: `SELECT ${LEASED} FROM jobs
    WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id`,
  discard: `UPDATE jobs SET state = 'discarded', discarded_at = :now, lease_expires_at = NULL,
      ${CLEAR_UNIQUE}, ${APPEND_ERROR}
    WHERE id = :id AND state IN ${NOT_FINAL}
    RETURNING id`,
  runAgain: `UPDATE jobs SET ${RUN_AGAIN}
    WHERE id = :id AND state IN (SELECT value FROM json_each(:from))
    RETURNING queue, fence`,
  // After a retry or replay that runs another definition; keeps the extra
  // attempt RUN_AGAIN allowed.
  redefine: `UPDATE jobs SET worker = :worker, args = :args, meta = :meta, tags = :tags,
      queue = :queue, priority = :priority, max_attempts = max(:maxAttempts, attempt + 1)
    WHERE id = :id`,
  // The pending replay records the fence of the job's latest claim, so the
  // next claim's attempt row (fence above it) is the replay's.
  replayPending: `INSERT INTO replays (job_id, after, actor, reason, at)
    VALUES (:id, :after, :actor, :reason, :now)
    ON CONFLICT (job_id) DO UPDATE SET after = excluded.after, actor = excluded.actor,
      reason = excluded.reason, at = excluded.at`,
  jobGet: `SELECT * FROM jobs WHERE id = :id`,
  // The job counts (counts.ts): one write's changes as [queue, state, delta]
  // rows (more than COUNTS_ADD_VALUES of them; fewer go as values, see
  // countsAddSql), the watermark, and the fold of the jobs above it.
  countsAdd: `INSERT INTO job_counts (queue, state, count)
    SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(:deltas) WHERE true
    ON CONFLICT (queue, state) DO UPDATE SET count = count + excluded.count`,
  countsThrough: `SELECT through FROM job_counts_through`,
  countsSetThrough: `UPDATE job_counts_through SET through = :through`,
  countsFold: `INSERT INTO job_counts (queue, state, count)
    SELECT queue, state, count(*) FROM jobs WHERE id > :after AND id <= :through
    GROUP BY queue, state
    ON CONFLICT (queue, state) DO UPDATE SET count = count + excluded.count`,
  // Every count that is not zero: job_counts, and the jobs above its watermark.
  counts: `SELECT queue, state, sum(count) AS count FROM (
      SELECT queue, state, count FROM job_counts
      UNION ALL
      SELECT queue, state, count(*) FROM jobs
      WHERE id > (SELECT through FROM job_counts_through)
      GROUP BY queue, state)
    GROUP BY queue, state HAVING sum(count) <> 0`,
  // Completions from the covering index jobs_completed, failures from the
  // partial index attempts_failed (0005); only failures pay a row lookup, for
  // their job's queue. A bucket is named by its start, since + k * :bucket.
  jobsThroughput: `SELECT queue, bucket, sum(completed) AS completed, sum(failed) AS failed FROM (
      SELECT queue, :since + CAST((completed_at - :since) / :bucket AS INTEGER) * :bucket AS bucket,
        count(*) AS completed, 0 AS failed
      FROM jobs WHERE state = 'completed' AND completed_at >= :since AND completed_at < :until
      GROUP BY 1, 2
      UNION ALL
      SELECT j.queue, :since + CAST((a.finished_at - :since) / :bucket AS INTEGER) * :bucket,
        0, count(*)
      FROM attempts AS a JOIN jobs AS j ON j.id = a.job_id
      WHERE a.outcome IN ('retryable', 'discarded')
        AND a.finished_at >= :since AND a.finished_at < :until
      GROUP BY 1, 2)
    GROUP BY queue, bucket ORDER BY queue, bucket`,
  // The newest :scan discarded jobs (walking jobs_discarded backwards), grouped
  // by worker, schedule and the first line of their last error. With one max()
  // in the query, SQLite takes the bare column id from the row holding it.
  jobsDeadLetters: `SELECT worker, schedule_id,
      substr(last_error, 1, instr(last_error || char(10), char(10)) - 1) AS error,
      count(*) AS count, max(discarded_at) AS latest_at, id AS latest_id
    FROM (
      SELECT id, worker, schedule_id, discarded_at,
        coalesce(errors ->> '$[#-1].error', '') AS last_error
      FROM jobs INDEXED BY jobs_discarded WHERE state = 'discarded'
      ORDER BY discarded_at DESC LIMIT :scan)
    GROUP BY 1, 2, 3
    ORDER BY count DESC, latest_at DESC, latest_id DESC
    LIMIT :limit`,
  attemptsList: `SELECT * FROM attempts WHERE job_id = :id ORDER BY fence`,
  workersList: `SELECT DISTINCT worker FROM jobs ORDER BY worker`,
  queuePause: `INSERT INTO queues (name, paused, updated_at) VALUES (:name, :paused, :now)
    ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at`,
  queuesList: `SELECT * FROM queues ORDER BY name`,
  // One seek of jobs_available per priority (0-9, see clampPriority): the
  // index leads with (queue, priority), so min() over a whole queue would
  // read every available row of it.
  queueOldestAvailable: `SELECT min(at) AS at FROM (
      SELECT (SELECT min(scheduled_at) FROM jobs
        WHERE state = 'available' AND queue = :queue AND priority = p.value) AS at
      FROM json_each('[0,1,2,3,4,5,6,7,8,9]') AS p)`,
  nodeBeat: `INSERT INTO nodes (node, queues, environment, started_at, heartbeat_at)
    VALUES (:node, :queues, :environment, :now, :now)
    ON CONFLICT (node) DO UPDATE SET queues = excluded.queues,
      environment = excluded.environment, heartbeat_at = excluded.heartbeat_at`,
  nodeDelete: `DELETE FROM nodes WHERE node = :node`,
  nodesExpire: `DELETE FROM nodes WHERE heartbeat_at < :before`,
  nodesList: `SELECT * FROM nodes ORDER BY node`,
  // Takes or renews a role in one conditional write (see Store.leaderTake).
  leaderTake: `INSERT INTO leaders AS l (name, node, fence, expires_at, acquired_at)
    VALUES (:name, :node, 1, :expiresAt, :now)
    ON CONFLICT (name) DO UPDATE SET
      fence = CASE WHEN l.node = excluded.node AND l.expires_at > :now
        THEN l.fence ELSE l.fence + 1 END,
      acquired_at = CASE WHEN l.node = excluded.node AND l.expires_at > :now
        THEN l.acquired_at ELSE excluded.acquired_at END,
      node = excluded.node,
      expires_at = excluded.expires_at
    WHERE l.node IS NULL OR l.node = excluded.node OR l.expires_at <= :now
    RETURNING node, fence, expires_at`,
  leaderGet: `SELECT node, fence, expires_at FROM leaders WHERE name = :name`,
  leadersList: `SELECT * FROM leaders ORDER BY name`,
  leaderRelease: `UPDATE leaders SET node = NULL
    WHERE name = :name AND node = :node AND fence = :fence`,
  settingGet: `SELECT value FROM settings WHERE key = :key`,
  settingDelete: `DELETE FROM settings WHERE key = :key`,
  settingSet: `INSERT INTO settings (key, value, updated_at) VALUES (:key, :value, :now)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  dataVersion: `PRAGMA data_version`,
  totalChanges: `SELECT total_changes() AS n`,
  auditRecord: `INSERT INTO audit (at, actor, action, target, reason, details)
    VALUES (:at, :actor, :action, :target, :reason, :details)`,
  auditList: `SELECT * FROM audit WHERE target = :target ORDER BY at, id`,
  schedulesSync: `INSERT INTO schedules
      (id, tenant, definition_hash, definition, created_at, updated_at)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, :now, :now
    FROM json_each(:rows) WHERE true
    ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,
      definition = coalesce(excluded.definition,
        CASE WHEN definition_hash IS excluded.definition_hash THEN definition END),
      definition_hash = excluded.definition_hash,
      updated_at = CASE WHEN definition_hash IS excluded.definition_hash THEN updated_at
        ELSE excluded.updated_at END`,
  schedulesForget: `UPDATE schedules SET definition = NULL
    WHERE definition IS NOT NULL AND id NOT IN (SELECT value FROM json_each(:ids))`,
  schedulesList: `SELECT * FROM schedules
    WHERE (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids))) ORDER BY id`,
  scheduleGet: `SELECT * FROM schedules WHERE id = :id`,
  // A schedule's outcomes walk the index on (schedule_id, scheduled_for)
  // from its newest occurrence: to the first final one, to the first
  // completed one, and over the discarded ones after that.
  scheduleLastFinal: `SELECT state, coalesce(completed_at, cancelled_at, discarded_at) AS at
    FROM jobs WHERE schedule_id = :id AND occurrence IS NOT NULL
      AND state IN ('completed', 'cancelled', 'discarded')
    ORDER BY scheduled_for DESC LIMIT 1`,
  scheduleLastCompletedFor: `SELECT scheduled_for FROM jobs
    WHERE schedule_id = :id AND occurrence IS NOT NULL AND state = 'completed'
    ORDER BY scheduled_for DESC LIMIT 1`,
  scheduleFailuresAfter: `SELECT count(*) AS n FROM jobs
    WHERE schedule_id = :id AND scheduled_for > :after AND occurrence IS NOT NULL
      AND state = 'discarded'`,
  // The WHERE repeats the partial index's condition so the planner can use it.
  scheduleActive: `SELECT coalesce(sum(state = 'executing'), 0) AS executing,
      coalesce(sum(state <> 'executing'), 0) AS waiting
    FROM jobs WHERE schedule_id = :id AND schedule_id IS NOT NULL
      AND state IN ('scheduled', 'available', 'executing', 'retryable')`,
  scheduleAdvance: `UPDATE schedules SET
      last_planned_for = coalesce(:plannedFor, last_planned_for),
      misfires = misfires + :misfires,
      last_misfire_for = coalesce(:lastMisfireFor, last_misfire_for),
      updated_at = :now
    WHERE id = :id`,
  scheduleSet: `UPDATE schedules SET enabled = :enabled, disabled_reason = :reason,
      disabled_by = :actor, disabled_at = :at, updated_at = :now
    WHERE id = :id`,
  scheduleStarted: `UPDATE schedules SET last_started_at = max(coalesce(last_started_at, 0), :now)
    WHERE id = :schedule`,
  scheduleCompleted: `UPDATE schedules SET
      last_completed_at = max(coalesce(last_completed_at, 0), :now)
    WHERE id = (SELECT schedule_id FROM jobs WHERE id = :job)`,
} as const;

/**
 * Up to this many changes of the counts are written as bound values, one
 * statement for each number of them: a write usually changes one or two
 * counts (an insert: one; a batch of completions: two), and the values
 * cost half of what parsing a JSON array costs (3.5 against 7 us a
 * statement, measured), which matters for a one-job transaction.
 */
export const COUNTS_ADD_VALUES = 4;

/** The statement adding `n` changes of the counts, as `n` (queue, state, delta) value rows. */
export function countsAddSql(n: number): string {
  const rows = Array.from({ length: n }, () => "(?, ?, ?)").join(", ");
  return `INSERT INTO job_counts (queue, state, count) VALUES ${rows}
    ON CONFLICT (queue, state) DO UPDATE SET count = count + excluded.count`;
}

/**
 * How many of the newest discarded jobs `jobsDeadLetters` groups: a bound on
 * its cost (one pass over that many rows) however large the dead-letter pile.
 */
export const DEAD_LETTER_SCAN = 10_000;

export const FINAL_AT = {
  completed: "completed_at",
  cancelled: "cancelled_at",
  discarded: "discarded_at",
};
export type FinalState = keyof typeof FINAL_AT;

export const PRUNE_STATE = Object.fromEntries(
  Object.entries(FINAL_AT).map(([state, column]) => [
    state,
    `DELETE FROM jobs WHERE id IN (
      SELECT id FROM jobs WHERE state = '${state}' AND ${column} < :before
        AND (schedule_id IS NULL OR schedule_id NOT IN (SELECT value FROM json_each(:except)))
      ORDER BY ${column} LIMIT :limit)
    RETURNING id, queue, state`,
  ]),
) as Record<FinalState, string>;

// ------------------------------------------------------------------ jobsList

/** The optional filters of `jobsList`, each a fixed text whose value is bound. */
const LIST_FILTERS = {
  ids: `id IN (SELECT value FROM json_each(:ids))`,
  queue: `queue = :queue`,
  worker: `worker = :worker`,
  tag: `EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = :tag)`,
  // The IS NOT NULL lets the planner use the partial index jobs_schedule.
  schedule: `schedule_id = :schedule AND schedule_id IS NOT NULL`,
  occurrence: `occurrence = :occurrence`,
  // :search reads the stored text: a listing with a search narrows its rows
  // with it, then keeps those whose shown (redacted) text matches
  // (src/store/search.ts). It is a LIKE pattern whose escape character is a
  // backslash. A search text that JSON writes as it is (:plain, no quote, backslash or
  // control character) can be inside a tag or an error only if it is inside
  // the array's text (the store writes both arrays with JSON.stringify or
  // json_object, which escape nothing else): that cheap test spares most
  // rows the JSON parse.
  search: `(worker LIKE :search ESCAPE '\\' OR args LIKE :search ESCAPE '\\'
      OR occurrence LIKE :search ESCAPE '\\'
      OR ((NOT :plain OR tags LIKE :search ESCAPE '\\')
        AND EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value LIKE :search ESCAPE '\\'))
      OR ((NOT :plain OR errors LIKE :search ESCAPE '\\')
        AND EXISTS (SELECT 1 FROM json_each(jobs.errors)
          WHERE value ->> 'error' LIKE :search ESCAPE '\\')))`,
  // A range of the primary key: a bounded search reads the newest rows only.
  above: `id > :above`,
} as const;

/** The name of an optional `jobsList` filter (its bound parameter has the same name). */
export type ListFilter = keyof typeof LIST_FILTERS;

/**
 * States usually few and scattered among old ids, whose partial index holds
 * the id (as the rowid): a page of one of them reads that index and sorts
 * its ids, costing the size of the state, not of the table. Every other
 * listing walks the primary key in listing order and stops at the page's
 * end: cheap for dense states and for new jobs (available, scheduled) found
 * near the newest end, and never more than one pass over the table.
 */
const LIST_INDEX: Partial<Record<JobState, string>> = {
  executing: "jobs_executing",
  cancelled: "jobs_cancelled",
  discarded: "jobs_discarded",
};

/** What one `jobsList` statement is made of. */
export interface ListShape {
  /** The optional filters given. */
  filters: readonly ListFilter[];
  /** The states asked for, or null for any; each must be one of JOB_STATES. */
  states: readonly string[] | null;
  desc: boolean;
  /** Keyset paging: ids past :after in listing order. */
  after: boolean;
}

/**
 * The text of one `jobsList` statement: fixed fragments for the filters
 * given, the state names taken from JOB_STATES (a partial index is used
 * only when its state is a literal), values always bound (`:limit`, and
 * each filter under its own name). Ordered by id, so keyset paging with
 * `:after` walks an index instead of sorting the table.
 */
export function jobsListSql(shape: ListShape): string {
  const states = shape.states === null ? null : knownStates(shape.states);
  const condition = listCondition(shape, states);
  const order = shape.desc ? "ORDER BY id DESC" : "ORDER BY id";
  const byIndex = listIndex(shape.filters, states);
  if (byIndex === null) {
    return `SELECT * FROM jobs WHERE ${condition}\n    ${order} LIMIT :limit`;
  }
  // The ids of the page come from the index alone when no other filter needs
  // the row; only the page's rows are read in full.
  return `SELECT * FROM jobs WHERE id IN (
      SELECT id FROM jobs ${byIndex} WHERE ${condition}
      ${order} LIMIT :limit)
    ${order}`;
}

/**
 * The text of the `jobsCountMatching` statement of a shape: the condition
 * of the listing without its paging, counted from the same index; with
 * `atMost`, the count stops after `:atMost` rows.
 */
export function jobsCountSql(
  shape: Omit<ListShape, "desc" | "after"> & { atMost?: boolean },
): string {
  const states = shape.states === null ? null : knownStates(shape.states);
  const condition = listCondition({ ...shape, desc: false, after: false }, states);
  const byIndex = listIndex(shape.filters, states);
  // No condition at all lets SQLite count the smallest index instead of the rows.
  const where = condition === "true" ? "" : ` WHERE ${condition}`;
  if (shape.atMost) {
    return `SELECT count(*) AS count FROM (
      SELECT 1 FROM jobs ${byIndex ?? ""}${where} LIMIT :atMost)`;
  }
  return `SELECT count(*) AS count FROM jobs ${byIndex ?? ""}${where}`;
}

/** The WHERE condition of a listing: its filters, its states, its keyset bound. */
function listCondition(shape: ListShape, states: readonly JobState[] | null): string {
  const where: string[] = shape.filters.map((name) => LIST_FILTERS[name]);
  if (states !== null) {
    where.push(
      states.length === 0
        ? "false"
        : states.length === 1
        ? `state = '${states[0]}'`
        : `state IN (${states.map((s) => `'${s}'`).join(", ")})`,
    );
  }
  if (shape.after) where.push(shape.desc ? "id < :after" : "id > :after");
  return where.length === 0 ? "true" : where.join("\n      AND ");
}

/**
 * The index a listing names (`INDEXED BY`), "" to leave it to the planner
 * with a schedule filter, or null when it reads the table in id order.
 */
function listIndex(
  filters: readonly ListFilter[],
  states: readonly JobState[] | null,
): string | null {
  const index = states?.length === 1 ? LIST_INDEX[states[0]!] : undefined;
  return filters.includes("schedule")
    ? "" // the planner's own choice: jobs_schedule, by equality
    : index !== undefined && !filters.includes("ids") && !filters.includes("occurrence")
    ? `INDEXED BY ${index}`
    : null;
}

/** `states` in the order of JOB_STATES, each checked against it, without repeats. */
function knownStates(states: readonly string[]): JobState[] {
  for (const state of states) checkState(state);
  return JOB_STATES.filter((state) => states.includes(state));
}

/** Throws a RangeError naming `state` unless it is one of JOB_STATES. */
export function checkState(state: string): asserts state is JobState {
  if (!(JOB_STATES as readonly string[]).includes(state)) {
    throw new RangeError(
      `state must be one of ${JOB_STATES.join(", ")}, got ${JSON.stringify(state)}`,
    );
  }
}
