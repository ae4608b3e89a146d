/**
 * The SQLite side of jobs ({@linkcode StoreJobs}): every statement on jobs,
 * their attempts and pending replays; the store's methods over them (insert,
 * claim, record, leases, the lifecycle's maintenance and operator actions,
 * reads); and the answers to the job lifecycle's ops ({@linkcode JobOp},
 * decided once in src/store/lifecycle/jobs.ts) in {@linkcode answerJobOp}.
 * The listing's statements are built by shape in jobs_list.ts.
 *
 * The hot paths keep SQLite's measured batching: the lone insert outside any
 * write transaction, sized multi-row statements for inserts, completions and
 * attempt rows (in pieces of powers of two), and the claim's rows as arrays.
 *
 * @module
 */

import type { SQLInputValue, StatementResultingChanges } from "node:sqlite";
import type {
  Attempt,
  ClaimedJob,
  InsertResult,
  Job,
  JobDefinition,
  JobResult,
  JobState,
  NewJob,
  RecordReport,
} from "../../kernel/types.ts";
import type {
  ClaimParams,
  ClaimResult,
  JobFilter,
  JobMatch,
  JobsStopParams,
  Lease,
  StoreJobs,
} from "../store.ts";
import { searchesShown, SearchPaging } from "../search.ts";
import {
  type JobOp,
  pruneJobs,
  pruneScheduleJobs,
  recordResults,
  replayJob,
  rescueJobs,
  retryJobs,
  stageJobs,
  stopJobs,
} from "../lifecycle/jobs.ts";
import { byClaimOrder, checkBounds, checkLeaseExpired, toLeasedJob } from "../rows.ts";
import { claimFlow } from "../lifecycle/flow.ts";
import { isLimited } from "../../kernel/flow.ts";
import { countsAnswer, sumMatching } from "../job_counts.ts";
import { returnArrays, type SqliteCore } from "./core.ts";
import { countRows, UNCOUNTED_MAX } from "./counts.ts";
import { jobsCountSql, jobsListSql, listValues } from "./jobs_list.ts";
import {
  inserted,
  insertRow,
  type Row,
  toAttempt,
  toClaimed,
  toInsertResult,
  toJob,
} from "./rows.ts";
import { APPEND_ERROR, checkState, CLEAR_UNIQUE, RUN_AGAIN } from "./sql.ts";

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
const INSERT_ALIKE = `${INSERT_COLUMNS}
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

// The columns of a job as the lifecycle reads it (see toLeasedJob).
const LEASED = `id, state, queue, attempt, max_attempts, fence, attempted_by, attempted_at`;

const LEASE_HELD = `id = :id AND state = 'executing' AND attempted_by = :node AND fence = :fence`;

/**
 * Whether the plain claim of `:queue` steps aside for the limited one
 * (lifecycle/flow.ts): limits are stored for it, or tenants' jobs wait in
 * it. Two index probes.
 */
const STEPS_ASIDE = `(EXISTS (SELECT 1 FROM queue_limits WHERE name = :queue)
  OR EXISTS (SELECT 1 FROM jobs AS t
    WHERE t.state = 'available' AND t.queue = :queue AND t.tenant IS NOT NULL))`;

/** The statements on jobs, attempts and replays (exported for test/store/query_plans_test.ts). */
export const SQL = {
  insertPlain: INSERT_JOB,
  insertAlike: INSERT_ALIKE,
  // A job with an occurrence or a unique key: no row when either is taken.
  insertKeyed: `${INSERT_JOB} ON CONFLICT DO NOTHING RETURNING id`,
  byUniqueKey: `SELECT id, queue, state FROM jobs WHERE unique_key = :key`,
  // A debounced insert whose key a waiting job holds: that job takes its
  // args, meta, tags and priority (and, extended, its later start).
  debounced: `UPDATE jobs SET args = :args, meta = :meta, tags = :tags, priority = :priority,
      scheduled_at = CASE WHEN :extend THEN max(scheduled_at, :at) ELSE scheduled_at END
    WHERE unique_key = :key AND state IN ('scheduled', 'available', 'retryable')
    RETURNING id, queue, state`,
  byOccurrence: `SELECT id, queue, state FROM jobs WHERE occurrence = :key`,
  /** Whether the plain claim stepped aside for the limited one. */
  aside: `SELECT ${STEPS_ASIDE} AS aside`,
  claim: `UPDATE jobs SET state = 'executing', attempt = attempt + 1, fence = fence + 1,
      attempted_by = :node, attempted_at = :now, lease_expires_at = :lease
    -- The unary + keeps the planner on the rowid lookups of the subquery's ids
    -- instead of scanning every available row through the state index.
    WHERE id IN (
      SELECT id FROM jobs
      WHERE state = 'available' AND queue = :queue AND scheduled_at <= :due
        AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused = 1)
        AND NOT ${STEPS_ASIDE}
      ORDER BY priority, scheduled_at, id LIMIT :limit)
      AND +state = 'available'
    -- The queue and attempted_at are the claim's own :queue and :now, so they
    -- are not read back; the common empty meta and tags come back as NULL.
    -- Each column returned is one more value in RETURNING's buffer and one
    -- more JS value a row: 5.3 against 5.8 us a job with all 15 columns, the
    -- claim and its rows mapped (see toClaimed), alternating in one process,
    -- median of 5 runs.
    RETURNING id, worker, args, nullif(meta, '{}'), nullif(tags, '[]'), occurrence, attempt,
      max_attempts, priority, fence, inserted_at, scheduled_at, schedule_id, tenant`,
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
  // Executing jobs whose lease has run out, from the index jobs_executing;
  // the tenant (null: any) is in the statement.
  leaseExpired: `SELECT * FROM jobs
    WHERE state = 'executing' AND lease_expires_at < :now
      AND (:tenant IS NULL OR tenant = :tenant)
    ORDER BY lease_expires_at, id LIMIT :limit`,
  attemptsList: `SELECT * FROM attempts WHERE job_id = :id ORDER BY fence`,
  workersList: `SELECT DISTINCT worker FROM jobs ORDER BY worker`,
  // A schedule's occurrence claimed, and one completed (see schedules.ts).
  scheduleStarted: `UPDATE schedules SET last_started_at = max(coalesce(last_started_at, 0), :now)
    WHERE id = :schedule`,
  scheduleCompleted: `UPDATE schedules SET
      last_completed_at = max(coalesce(last_completed_at, 0), :now)
    WHERE id = (SELECT schedule_id FROM jobs WHERE id = :job)`,
} as const;

const FINAL_AT = {
  completed: "completed_at",
  cancelled: "cancelled_at",
  discarded: "discarded_at",
};
type FinalState = keyof typeof FINAL_AT;

const PRUNE_STATE = Object.fromEntries(
  Object.entries(FINAL_AT).map(([state, column]) => [
    state,
    `DELETE FROM jobs WHERE id IN (
      SELECT id FROM jobs WHERE state = '${state}' AND ${column} < :before
        AND (schedule_id IS NULL OR schedule_id NOT IN (SELECT value FROM json_each(:except)))
      ORDER BY ${column} LIMIT :limit)
    RETURNING id, queue, state`,
  ]),
) as Record<FinalState, string>;

/**
 * Rows an insert statement takes at most: 1,500 values, well inside
 * SQLite's 32,766; past 50 rows a statement, bigger batches gain nothing
 * (measured: 439k rows/s at 10, 463k at 50, 458k at 100).
 */
const INSERT_BATCH = 100;

/**
 * Whether the plain jobs of `batch` (no occurrence, no unique key) differ
 * only in their args (the common bulk enqueue: one worker, one queue, the
 * same options), so one INSERT_ALIKE takes them all.
 */
function alike(batch: readonly NewJob[]): boolean {
  const a = batch[0]!;
  for (let i = 1; i < batch.length; i++) {
    const b = batch[i]!;
    if (
      b.queue !== a.queue || b.worker !== a.worker || b.meta !== a.meta || b.tags !== a.tags ||
      b.tenant !== a.tenant || b.priority !== a.priority || b.maxAttempts !== a.maxAttempts ||
      b.scheduledAt !== a.scheduledAt || b.uniqueStates !== a.uniqueStates ||
      b.scheduleId !== a.scheduleId || b.scheduledFor !== a.scheduledFor
    ) return false;
  }
  return true;
}

/**
 * The most results one completion or attempts statement binds. A batch
 * goes in pieces of powers of two up to it, so each of those statements is
 * prepared in at most nine sizes, and a batch of 500 takes six of them.
 */
const RECORD_CHUNK = 256;

/** The size of the next piece of a batch with `left` rows to go (see RECORD_CHUNK). */
function pieceOf(left: number): number {
  let size = RECORD_CHUNK;
  while (size > left) size >>= 1;
  return size;
}

/** The {@linkcode StoreJobs} of the store over `core`. */
export function sqliteJobs(core: SqliteCore): StoreJobs {
  // The claim is on the hot path: rows as arrays skip building an object per row.
  core.register(SQL, (s) => returnArrays(s.claim));
  core.register(PRUNE_STATE);
  const q = () => core.statements(SQL);
  /** The newest id this process inserted alone (see insertAlone). */
  let newestAlone = 0;

  /**
   * One plain job outside any transaction of the caller's: its insert alone,
   * a statement SQLite commits by itself, without the BEGIN and COMMIT of a
   * write transaction (a one-row commit 7% faster, medians of 7, measured).
   * The counts need nothing for it: a new job is above their watermark,
   * counted from the table when they are read. Null when that would leave
   * too many jobs above it (UNCOUNTED_MAX, as this process knows it): a
   * write transaction then takes them into the counts.
   */
  const insertAlone = (job: NewJob, now: number): [InsertResult] | null => {
    if (core.inTx || newestAlone - core.countsSeen.through >= UNCOUNTED_MAX) return null;
    const id = Number(q().insertPlain.run(...insertRow(job), now).lastInsertRowid);
    newestAlone = id;
    core.committed(null);
    return [inserted(job, id, now)];
  };

  return {
    // ----------------------------------------------------------------- inserts

    jobsInsert(params: { jobs: NewJob[]; now: number }): Promise<InsertResult[]> {
      const [only] = params.jobs;
      if (params.jobs.length === 1 && only!.occurrence === null && only!.uniqueKey === null) {
        return core.exclusive(() =>
          insertAlone(only!, params.now) ??
            core.write(() => insertJobs(core, params.jobs, params.now))
        );
      }
      return core.exclusive(() => core.write(() => insertJobs(core, params.jobs, params.now)));
    },

    // ------------------------------------------------------- claim and record

    jobsClaim(params: ClaimParams): Promise<ClaimResult> {
      return core.exclusive(() =>
        core.write(() => {
          const report = params.results?.length
            ? core.lifecycle(
              recordResults({ node: params.node, now: params.now, results: params.results }),
            )
            : { recorded: [], lost: [] };
          if (params.limit <= 0) return { jobs: [], report };
          if (isLimited(params.flow)) return { ...core.lifecycle(claimFlow(params)), report };
          const s = q();
          const rows = s.claim.all({
            queue: params.queue,
            node: params.node,
            now: params.now,
            due: params.dueBy ?? params.now,
            lease: params.now + params.leaseMs,
            limit: params.limit,
          }) as unknown as unknown[][];
          const counts = core.counts;
          // The claimed jobs of a schedule (its occurrences, the last column) start it.
          const jobs: ClaimedJob[] = [];
          for (const row of rows) {
            counts.moved(row[0] as number, params.queue, "available", "executing");
            const schedule = row[12] as string | null;
            if (schedule != null) s.scheduleStarted.run({ schedule, now: params.now });
            jobs.push(toClaimed(row, params.queue, params.now));
          }
          // None: the queue is empty, paused, or limited by the store or its
          // tenants; only the last takes the limited claim (two index probes
          // say, where the limited claim's read is several statements).
          if (jobs.length === 0 && (s.aside.get({ queue: params.queue }) as Row).aside === 1) {
            return { ...core.lifecycle(claimFlow(params)), report };
          }
          // RETURNING gives rowid order.
          jobs.sort(byClaimOrder);
          return { jobs, report };
        })
      );
    },

    jobsRecord(params: { node: string; now: number; results: JobResult[] }): Promise<RecordReport> {
      if (params.results.length === 0) return Promise.resolve({ recorded: [], lost: [] });
      return core.exclusive(() => core.write(() => core.lifecycle(recordResults(params))));
    },

    jobsRelease(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
      if (params.leases.length === 0) return Promise.resolve([]);
      return core.exclusive(() =>
        core.write(() =>
          params.leases.filter((l) => {
            const row = q().release.get({ id: l.id, fence: l.fence, node: params.node }) as
              | Row
              | undefined;
            if (row) core.counts.moved(l.id, row.queue as string, "executing", "available");
            return row !== undefined;
          })
        )
      );
    },

    jobsRenew(params: {
      node: string;
      leases: Lease[];
      now: number;
      leaseMs: number;
    }): Promise<{ lost: Lease[] }> {
      if (params.leases.length === 0) return Promise.resolve({ lost: [] });
      return core.exclusive(() =>
        core.write(() => {
          const lost: Lease[] = [];
          const lease = params.now + params.leaseMs;
          for (const l of params.leases) {
            const { changes } = q().renew.run({
              id: l.id,
              fence: l.fence,
              node: params.node,
              lease,
            });
            if (changes === 0) lost.push(l);
          }
          return { lost };
        }, true)
      );
    },

    jobsLeasesLost(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
      return core.exclusive(() =>
        params.leases.filter((l) =>
          !q().leaseHeld.get({ id: l.id, fence: l.fence, node: params.node })
        )
      );
    },

    // ------------------------------------------------------------- maintenance

    jobsStage(params: { now: number; limit: number }) {
      return core.exclusive(() => core.write(() => core.lifecycle(stageJobs(params))));
    },

    jobsRescue(params: { now: number; limit: number }) {
      return core.exclusive(() => core.write(() => core.lifecycle(rescueJobs(params))));
    },

    jobsPrune(params: {
      before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
      limit: number;
      except?: string[];
    }): Promise<number> {
      return core.exclusive(() => core.write(() => core.lifecycle(pruneJobs(params))));
    },

    jobsPruneSchedule(
      params: { scheduleId: string; before: number; limit: number },
    ): Promise<number> {
      return core.exclusive(() => core.write(() => core.lifecycle(pruneScheduleJobs(params))));
    },

    jobsPrunable(params: {
      before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
      schedules?: { scheduleId: string; before: number }[];
    }): Promise<number> {
      return core.exclusive(() => {
        const row = q().prunable.get({
          completed: params.before.completed ?? null,
          cancelled: params.before.cancelled ?? null,
          discarded: params.before.discarded ?? null,
          schedules: JSON.stringify((params.schedules ?? []).map((s) => [s.scheduleId, s.before])),
        }) as Row;
        return Number(row.count);
      });
    },

    jobsCancel(params: JobsStopParams): Promise<number[]> {
      return core.exclusive(() => core.write(() => core.lifecycle(stopJobs("cancelled", params))));
    },

    jobsDiscard(params: JobsStopParams): Promise<number[]> {
      return core.exclusive(() => core.write(() => core.lifecycle(stopJobs("discarded", params))));
    },

    jobsRetry(params: {
      ids: number[];
      now: number;
      definitions?: ReadonlyMap<number, JobDefinition>;
    }): Promise<number[]> {
      return core.exclusive(() => core.write(() => core.lifecycle(retryJobs(params))));
    },

    jobReplay(params: {
      id: number;
      now: number;
      actor: string;
      reason: string;
      force: boolean;
      definition?: JobDefinition;
    }): Promise<{ replayed: boolean; was: JobState } | null> {
      return core.exclusive(() => core.write(() => core.lifecycle(replayJob(params))));
    },

    // ------------------------------------------------------------------- reads

    jobGet(params: { id: number }): Promise<Job | null> {
      return core.exclusive(() => {
        const row = q().jobGet.get({ id: params.id }) as Row | undefined;
        return row ? toJob(row) : null;
      });
    },

    jobsLeaseExpired(params: { now: number; limit: number; tenant?: string }): Promise<Job[]> {
      try {
        checkLeaseExpired(params);
      } catch (error) {
        return Promise.reject(error);
      }
      const { now, limit } = params;
      const tenant = params.tenant ?? null;
      return core.exclusive(() =>
        (q().leaseExpired.all({ now, limit, tenant }) as Row[]).map(toJob)
      );
    },

    jobsList(params: JobFilter): Promise<Job[]> {
      try {
        checkBounds(params);
      } catch (error) {
        return Promise.reject(error);
      }
      if (!searchesShown(params)) return core.exclusive(() => list(core, params));
      // Every raw page inside one exclusive(): in a transaction only the
      // call's own turn holds the connection.
      return core.exclusive(() => search(core, new SearchPaging(params)).found);
    },

    jobsCountMatching(params: JobMatch, options: { atMost?: number } = {}): Promise<number> {
      const atMost = options.atMost;
      try {
        checkBounds({ above: params.above, atMost });
        for (const state of [params.state ?? []].flat()) checkState(state);
      } catch (error) {
        return Promise.reject(error);
      }
      if (countsAnswer(params)) {
        return core.exclusive(() =>
          Math.min(sumMatching(countRows(core), params), atMost ?? Infinity)
        );
      }
      if (searchesShown(params)) {
        return core.exclusive(() => search(core, SearchPaging.count(params, atMost)).matched);
      }
      const { values, shape } = listValues(params);
      let text: string;
      try {
        text = jobsCountSql({ ...shape, atMost: atMost !== undefined });
      } catch (error) {
        return Promise.reject(error);
      }
      if (atMost !== undefined) values.atMost = atMost;
      return core.exclusive(() => {
        const row = core.shaped(text).get(values) as Row | undefined;
        return Number(row?.count ?? 0);
      });
    },

    attemptsList(params: { jobId: number }): Promise<Attempt[]> {
      return core.exclusive(() =>
        (q().attemptsList.all({ id: params.jobId }) as Row[]).map(toAttempt)
      );
    },

    workersList(): Promise<string[]> {
      return core.exclusive(() => (q().workersList.all() as Row[]).map((r) => String(r.worker)));
    },
  };
}

// ------------------------------------------------------------------- inserts

/**
 * Inserts `jobs` inside the open write: runs of plain jobs in batches, each
 * keyed job on its own; a keyed job whose occurrence or unique key is taken
 * answers the row holding it, as a duplicate. Schedules' occurrences come
 * here too (schedules.ts).
 */
export function insertJobs(core: SqliteCore, jobs: NewJob[], now: number): InsertResult[] {
  const { insertKeyed, byOccurrence, byUniqueKey, debounced } = core.statements(SQL);
  const holder = (stmt: typeof byOccurrence, key: string | null) =>
    key === null ? undefined : stmt.get({ key }) as Row | undefined;
  const results: InsertResult[] = [];
  // Runs of plain jobs (which cannot conflict) go in batches; each keyed
  // job on its own, in order, so a later job's duplicate finds it.
  let plainFrom = 0;
  for (let i = 0; i <= jobs.length; i++) {
    const job = jobs[i];
    if (job !== undefined && job.occurrence === null && job.uniqueKey === null) continue;
    if (i > plainFrom) insertPlain(core, jobs.slice(plainFrom, i), now, results);
    plainFrom = i + 1;
    if (job === undefined) break;
    const row = insertKeyed.get(...insertRow(job), now) as Row | undefined;
    if (row) {
      results.push(countInserted(core, job, row.id as number, now));
      continue;
    }
    if (job.debounce && job.uniqueKey !== null) {
      const replaced = debounced.get({
        key: job.uniqueKey,
        args: job.args,
        meta: job.meta,
        tags: job.tags,
        priority: job.priority,
        extend: job.debounce.extend ? 1 : 0,
        at: job.scheduledAt,
      }) as Row | undefined;
      if (replaced) {
        results.push({ ...toInsertResult(replaced, true), replaced: true });
        continue;
      }
    }
    // The row holding the occurrence or the key: an older one, or an
    // earlier job of this batch with the same key (this one is its duplicate).
    const existing = holder(byOccurrence, job.occurrence) ?? holder(byUniqueKey, job.uniqueKey);
    if (!existing) {
      throw new Error(`insert of a ${job.worker} job conflicted with a vanished row`);
    }
    results.push(toInsertResult(existing, true));
  }
  return results;
}

/**
 * Inserts jobs that cannot exist yet (the next steps of workflow runs,
 * whose rows the same transaction records): the plain insert, ids in
 * input order. A unique conflict is an error that rolls the transaction
 * back, not a duplicate to report: a step created twice is a bug.
 */
export function insertFresh(core: SqliteCore, jobs: NewJob[], now: number): InsertResult[] {
  const results: InsertResult[] = [];
  insertPlain(core, jobs, now, results);
  return results;
}

/**
 * Inserts `jobs`, none of which can conflict (no occurrence, no unique
 * key), up to {@linkcode INSERT_BATCH} rows a statement, and pushes their
 * results onto `results` in order.
 */
function insertPlain(
  core: SqliteCore,
  jobs: readonly NewJob[],
  now: number,
  results: InsertResult[],
): void {
  const s = core.statements(SQL);
  for (let from = 0; from < jobs.length; from += INSERT_BATCH) {
    const batch = jobs.slice(from, from + INSERT_BATCH);
    if (batch.length === 1) {
      const id = s.insertPlain.run(...insertRow(batch[0]!), now).lastInsertRowid;
      results.push(countInserted(core, batch[0]!, id, now));
      continue;
    }
    const { lastInsertRowid, changes } = alike(batch)
      ? s.insertAlike.run({
        queue: batch[0]!.queue,
        worker: batch[0]!.worker,
        args: JSON.stringify(batch.map((job) => job.args)),
        meta: batch[0]!.meta,
        tags: batch[0]!.tags,
        tenant: batch[0]!.tenant,
        priority: batch[0]!.priority,
        max_attempts: batch[0]!.maxAttempts,
        scheduled_at: batch[0]!.scheduledAt,
        unique_states: batch[0]!.uniqueStates,
        schedule_id: batch[0]!.scheduleId,
        scheduled_for: batch[0]!.scheduledFor,
        state: batch[0]!.scheduledAt > now ? "scheduled" : "available",
        now,
      })
      : insertValues(core, batch, now);
    if (Number(changes) !== batch.length) {
      throw new Error(`an insert of ${batch.length} jobs wrote ${changes} rows`);
    }
    // Consecutive ids, the last one lastInsertRowid (see insertJobsSql).
    const first = Number(lastInsertRowid) - batch.length + 1;
    batch.forEach((job, i) => results.push(countInserted(core, job, first + i, now)));
  }
}

/** `batch` as one multi-row VALUES insert (see insertJobsSql). */
function insertValues(
  core: SqliteCore,
  batch: readonly NewJob[],
  now: number,
): StatementResultingChanges {
  const statement = core.sized(insertJobsSql, batch.length, false);
  const values: SQLInputValue[] = [];
  for (const job of batch) {
    values.push(...insertRow(job), job.scheduledAt > now ? "scheduled" : "available", now);
  }
  return statement.run(...values);
}

/** The result of a job this write inserted as `id`, taken into the write's counts. */
function countInserted(
  core: SqliteCore,
  job: NewJob,
  id: number | bigint,
  now: number,
): InsertResult {
  const result = inserted(job, Number(id), now);
  core.counts.inserted(result.id, result.queue, result.state);
  return result;
}

// -------------------------------------------------------------------- record

/**
 * The attempt rows of `recorded`: plain completions (no output, no
 * definition) as bound values while no replay waits, every other one
 * from JSON, joined to its pending replay when one may wait.
 */
function attemptsInsert(core: SqliteCore, node: string, now: number, recorded: JobResult[]): void {
  const s = core.statements(SQL);
  const { waiting } = s.replaysWaiting.get() as { waiting: number };
  let rest = recorded;
  if (!waiting) {
    const plain: JobResult[] = [];
    rest = [];
    for (const r of recorded) {
      const isPlain = r.outcome === "completed" && r.output === undefined &&
        r.definition === undefined;
      (isPlain ? plain : rest).push(r);
    }
    inPieces(core, plain, attemptsCompletedSql, { node, now }, (r, out) => {
      out.push(r.id, r.attempt, r.fence, r.startedAt);
    });
  }
  if (rest.length === 0) return;
  const rows = JSON.stringify(rest.map((r) => [
    r.id,
    r.attempt,
    r.fence,
    r.startedAt,
    r.outcome,
    "error" in r ? r.error : null,
    r.output ?? null,
    r.definition ?? null,
  ]));
  (waiting ? s.attemptsInsert : s.attemptsInsertNoReplays).run({ node, now, rows });
}

/**
 * `sql(n)` over `rows` in pieces of powers of two (see RECORD_CHUNK), each
 * row's values pushed by `values` after the `named` ones; the rows the
 * statements return, as arrays.
 */
function inPieces<T>(
  core: SqliteCore,
  rows: readonly T[],
  sql: (rows: number) => string,
  named: Record<string, SQLInputValue>,
  values: (row: T, out: SQLInputValue[]) => void,
): unknown[][] {
  const out: unknown[][] = [];
  for (let from = 0; from < rows.length;) {
    const size = pieceOf(rows.length - from);
    const bound: SQLInputValue[] = [];
    for (let i = from; i < from + size; i++) values(rows[i]!, bound);
    const returned = core.sized(sql, size, true).all(named, ...bound);
    for (const row of returned) out.push(row as unknown as unknown[]);
    from += size;
  }
  return out;
}

// --------------------------------------------------------------------- reads

/** Drives `paging` through raw listings to its end. */
function search(core: SqliteCore, paging: SearchPaging): SearchPaging {
  for (let next = paging.next; next !== null; next = paging.next) {
    paging.take(list(core, next));
  }
  return paging;
}

/** The rows of one listing as SQL finds them (a search matches the stored text). */
function list(core: SqliteCore, params: JobFilter): Job[] {
  const { values, shape } = listValues(params);
  const text = jobsListSql({
    ...shape,
    desc: params.desc ?? false,
    after: params.after !== undefined,
  });
  if (params.after !== undefined) values.after = params.after;
  values.limit = params.limit ?? -1;
  return (core.shaped(text).all(values) as Row[]).map(toJob);
}

// ------------------------------------------------------------------ the ops

/** Answers one op of the job lifecycle (src/store/lifecycle/jobs.ts), inside the open write. */
export function answerJobOp(core: SqliteCore, op: JobOp): unknown {
  const s = core.statements(SQL);
  switch (op.op) {
    case "jobsExpired":
      return (s.expired.all({ now: op.now, limit: op.limit }) as Row[]).map(toLeasedJob);
    case "jobsLock":
      return (s.jobsLock.all({ ids: JSON.stringify(op.ids) }) as Row[]).map(toLeasedJob);
    case "runsLock":
    case "runsLockOfJobs":
    case "wake":
      // The write lock is the whole file's; commits wake the other processes.
      return undefined;
    case "jobLeaseEnd":
      return s.leaseEnd.get({ ...op.lease, to: op.to, now: op.now, error: op.error }) !==
        undefined;
    case "jobsComplete": {
      const rows = inPieces(
        core,
        op.results,
        completedSql,
        { now: op.now, node: op.node },
        (r, out) => {
          out.push(r.id, r.fence);
        },
      ) as [number, string][];
      return rows.map(([id, queue]) => ({ id, queue }));
    }
    case "jobRecord": {
      const r = op.result;
      const lease = { id: r.id, node: op.node, fence: r.fence, now: op.now };
      let row: Row | undefined;
      switch (r.outcome) {
        case "snoozed":
          row = s.snoozed.get({ ...lease, until: r.until }) as Row | undefined;
          break;
        case "retryable":
          row = s.retryable.get({ ...lease, at: r.at, error: r.error }) as Row | undefined;
          break;
        case "cancelled":
          row = s.cancelled.get({ ...lease, error: r.error }) as Row | undefined;
          break;
        case "discarded":
          row = s.discarded.get({ ...lease, error: r.error }) as Row | undefined;
          break;
      }
      if (row === undefined) return null;
      const state = r.outcome === "snoozed" ? row.state as JobState : r.outcome;
      return { queue: row.queue as string, state };
    }
    case "attemptsInsert":
      return attemptsInsert(core, op.node, op.now, op.results);
    case "attemptEnd": {
      const { job } = op;
      s.attemptInsert.run({
        id: job.id,
        attempt: job.attempt,
        fence: job.fence,
        node: job.attemptedBy,
        started: job.attemptedAt ?? op.now,
        now: op.now,
        outcome: op.outcome,
        error: op.error,
      });
      return undefined;
    }
    case "schedulesCompleted":
      for (const job of op.jobIds) s.scheduleCompleted.run({ job, now: op.now });
      return undefined;
    case "jobStop": {
      const stop = op.to === "cancelled" ? s.cancel : s.discard;
      return stop.get({ id: op.id, now: op.now, error: op.error }) !== undefined;
    }
    case "jobRunAgain": {
      const row = s.runAgain.get({ id: op.id, from: JSON.stringify(op.from), now: op.now }) as
        | Row
        | undefined;
      return row ? { queue: String(row.queue), fence: Number(row.fence) } : null;
    }
    case "jobRedefine":
      s.redefine.run({ id: op.id, ...op.definition });
      return undefined;
    case "replayPending":
      s.replayPending.run({
        id: op.id,
        after: op.after,
        actor: op.actor,
        reason: op.reason,
        now: op.now,
      });
      return undefined;
    case "jobsStage": {
      const rows = s.stageDue.all({ now: op.now, limit: op.limit }) as Row[];
      if (rows.length > 0) s.stage.run({ ids: JSON.stringify(rows.map((r) => r.id)) });
      return rows.map((r) => ({
        id: Number(r.id),
        queue: String(r.queue),
        was: r.state as JobState,
      }));
    }
    case "nextDue": {
      const next = s.nextDue.get() as Row | undefined;
      return next?.at == null ? null : Number(next.at);
    }
    case "jobsDelete": {
      const { target, limit } = op;
      const rows = "state" in target
        ? core.statements(PRUNE_STATE)[target.state].all({
          before: target.before,
          limit,
          except: JSON.stringify(target.except),
        }) as Row[]
        : s.pruneSchedule.all({
          schedule: target.scheduleId,
          before: target.before,
          limit,
        }) as Row[];
      return rows.map((r) => ({
        id: Number(r.id),
        queue: String(r.queue),
        state: r.state as JobState,
      }));
    }
    case "attemptsDelete": {
      const ids = JSON.stringify(op.jobIds);
      s.attemptsPrune.run({ ids });
      s.replaysPrune.run({ ids });
      return undefined;
    }
    case "countsMove": {
      const counts = core.counts;
      for (const m of op.moves) counts.moved(m.id, m.queue, m.from, m.to, m.toQueue);
      return undefined;
    }
  }
}
