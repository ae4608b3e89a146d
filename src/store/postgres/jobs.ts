/**
 * The PostgreSQL side of jobs ({@linkcode StoreJobs}): the insert, the
 * claim, the record of results, the leases, the lifecycle's maintenance
 * and an operator's actions (each the shared lifecycle's decisions,
 * `src/store/lifecycle/jobs.ts`, over the ops {@linkcode answerJobOp}
 * answers here), and the reads of jobs and attempts.
 *
 * A claim is one statement: the runnable rows are chosen `FOR UPDATE SKIP
 * LOCKED` and moved to `executing` in the same statement, so racing
 * claimers take disjoint rows and none waits for another; every result
 * write is filtered by its lease (id, executing, node, fence), which
 * PostgreSQL re-checks against the newest version of a row updated
 * meanwhile, so a lease broken by an operator stays broken.
 *
 * @module
 */

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
import { byClaimOrder, checkBounds, checkLeaseExpired, toLeasedJob } from "../rows.ts";
import { claimFlow, type FlowClaim, flowScope } from "../lifecycle/flow.ts";
import { type FlowLimits, hasRate, isLimited } from "../../kernel/flow.ts";
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
import { countsAnswer, CountTally, sumMatching } from "../job_counts.ts";
import type { PostgresCore } from "./core.ts";
import {
  appendError,
  checkState,
  clearUnique,
  type Fragment,
  runAgain,
  type Sql,
} from "./fragments.ts";
import { addCounts, countRows, readCounts } from "./counts.ts";
import { escapeLike, type Row, toAttempt, toClaimed, toInsertResult, toJob } from "./rows.ts";

/**
 * The {@linkcode StoreJobs} methods of the PostgreSQL store, over `core`
 * (jobs: the insert, the claim and the record, leases, the lifecycle's
 * maintenance, an operator's actions and the reads of jobs and attempts),
 * each with its transaction policy: its own transaction where it needs one
 * (`core.begin` joins a transaction's view).
 */
export function postgresJobs(core: PostgresCore): StoreJobs {
  return core.guard({
    // ----------------------------------------------------------------- inserts

    /**
     * One statement, its own transaction (one round trip for an enqueue): the
     * rows and their queues' notifications commit together. Only the lookup
     * of rows a unique conflict skipped comes after, and it writes nothing.
     */
    async jobsInsert(params: { jobs: NewJob[]; now: number }): Promise<InsertResult[]> {
      if (params.jobs.length === 0) return [];
      const inserted = await insertJobs(core, core.sql, params.jobs, params.now);
      await core.countsWritten(params.now);
      return inserted;
    },

    // -------------------------------------------------------- claim and record

    async jobsClaim(
      params: ClaimParams,
    ): Promise<ClaimResult> {
      const results = params.results ?? [];
      const limited = isLimited(params.flow);
      const plain = results.every(isPlainCompletion);
      if (limited && plain && !hasRate(params.flow)) {
        // The completions and the limited claim in one statement.
        const { full, ...claimed } = await claimAfterCompletions(
          core,
          params,
          results,
          params.flow!,
        );
        if (!full) return claimed;
        // A rate is stored: the completions were written, the whole limited
        // claim (buckets and all) takes the slots.
        return { ...(await claimLimited(core, params)), report: claimed.report };
      }
      if (limited && plain) {
        // A rate is declared: the completions in their one statement first
        // (their slots free before the count), then the limited claim, which
        // holds the queue's flow lock for its own reads and writes only.
        const recorded = results.length > 0
          ? await claimAfterCompletions(core, { ...params, limit: 0 }, results)
          : { jobs: [], report: { recorded: [], lost: [] } };
        if (params.limit <= 0) return recorded;
        return { ...(await claimLimited(core, params)), report: recorded.report };
      }
      const claimed = !limited && plain
        ? await claimAfterCompletions(core, params, results)
        : await recordAndClaim(core, params, limited);
      // None: the queue is empty, paused, or limited by the store or its
      // tenants (the plain pick says so when it stepped aside).
      if (limited || claimed.jobs.length > 0 || params.limit <= 0) return claimed;
      if ("aside" in claimed && claimed.aside === false) {
        return { jobs: claimed.jobs, report: claimed.report };
      }
      // Stepped aside: the limited claim in one statement, unless a rate is stored.
      const { full, ...flow } = await claimAfterCompletions(core, params, [], {});
      if (!full) return { ...flow, report: claimed.report };
      return { ...(await claimLimited(core, params)), report: claimed.report };
    },

    async jobsRecord(
      params: { node: string; now: number; results: JobResult[] },
    ): Promise<RecordReport> {
      if (params.results.length === 0) return { recorded: [], lost: [] };
      if (params.results.every(isPlainCompletion)) {
        const { report } = await claimAfterCompletions(core, {
          queue: "",
          node: params.node,
          limit: 0,
          now: params.now,
          leaseMs: 0,
        }, params.results);
        return report;
      }
      const report = await core.sql.begin(async (tx) => {
        return await core.lifecycle(tx, recordResults(params));
      });
      await core.countsWritten(params.now);
      return report;
    },

    async jobsRelease(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
      if (params.leases.length === 0) return [];
      const q = core.sql;
      const rows = await q`WITH released AS (
          UPDATE jobs SET state = 'available', attempt = attempt - 1, lease_expires_at = NULL
          FROM ${leaseSet(q, params.leases)}
          WHERE jobs.id = l.id AND jobs.state = 'executing' AND jobs.attempted_by = ${params.node}
            AND jobs.fence = l.fence
          RETURNING jobs.id, jobs.queue, 'executing'::text AS was, jobs.state),
        counted AS (${countRows(q, "released")})
        SELECT id, queue FROM released`;
      await core.notify(core.sql, rows.map((r) => String(r.queue)));
      const ids = new Set(rows.map((r) => Number(r.id)));
      return params.leases.filter((l) => ids.has(l.id));
    },

    async jobsRenew(params: {
      node: string;
      leases: Lease[];
      now: number;
      leaseMs: number;
    }): Promise<{ lost: Lease[] }> {
      if (params.leases.length === 0) return { lost: [] };
      const rows = await core.sql`UPDATE jobs
        SET lease_expires_at = ${params.now + params.leaseMs}::bigint
        FROM ${leaseSet(core.sql, params.leases)}
        WHERE jobs.id = l.id AND jobs.state = 'executing' AND jobs.attempted_by = ${params.node}
          AND jobs.fence = l.fence
        RETURNING jobs.id, jobs.fence`;
      const held = new Set(rows.map((r) => `${r.id}:${r.fence}`));
      return { lost: params.leases.filter((l) => !held.has(`${l.id}:${l.fence}`)) };
    },

    async jobsLeasesLost(params: { node: string; leases: Lease[] }): Promise<Lease[]> {
      if (params.leases.length === 0) return [];
      const rows = await core.sql`SELECT jobs.id, jobs.fence
        FROM jobs JOIN ${leaseSet(core.sql, params.leases)}
          ON jobs.id = l.id AND jobs.fence = l.fence
        WHERE jobs.state = 'executing' AND jobs.attempted_by = ${params.node}`;
      const held = new Set(rows.map((r) => `${r.id}:${r.fence}`));
      return params.leases.filter((l) => !held.has(`${l.id}:${l.fence}`));
    },

    // ------------------------------------------------------------- maintenance

    async jobsStage(params: { now: number; limit: number }) {
      const staged = await core.sql.begin((tx) => core.lifecycle(tx, stageJobs(params)));
      await core.countsWritten(params.now);
      return staged;
    },

    async jobsRescue(params: { now: number; limit: number }) {
      return await core.sql.begin((tx) => core.lifecycle(tx, rescueJobs(params)));
    },

    async jobsPrune(params: {
      before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
      limit: number;
      except?: string[];
    }): Promise<number> {
      return await core.sql.begin((tx) => core.lifecycle(tx, pruneJobs(params)));
    },

    async jobsPruneSchedule(
      params: { scheduleId: string; before: number; limit: number },
    ): Promise<number> {
      return await core.sql.begin((tx) => core.lifecycle(tx, pruneScheduleJobs(params)));
    },

    async jobsPrunable(params: {
      before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
      schedules?: { scheduleId: string; before: number }[];
    }): Promise<number> {
      const schedules = JSON.stringify(
        (params.schedules ?? []).map((s) => ({ id: s.scheduleId, before: s.before })),
      );
      const { completed = null, cancelled = null, discarded = null } = params.before;
      const [row] = await core.sql`SELECT count(*) AS count FROM jobs
        LEFT JOIN jsonb_to_recordset(${schedules}::text::jsonb) AS own(id text, before bigint)
          ON own.id = jobs.schedule_id
        WHERE state IN ('completed', 'cancelled', 'discarded')
          AND CASE WHEN own.id IS NOT NULL
            THEN coalesce(completed_at, cancelled_at, discarded_at) < own.before
            ELSE (state = 'completed' AND completed_at < ${completed}::bigint)
              OR (state = 'cancelled' AND cancelled_at < ${cancelled}::bigint)
              OR (state = 'discarded' AND discarded_at < ${discarded}::bigint) END`;
      return Number(row?.count ?? 0);
    },

    jobsCancel(params: JobsStopParams): Promise<number[]> {
      return core.begin((tx) => core.lifecycle(tx, stopJobs("cancelled", params)));
    },

    jobsDiscard(params: JobsStopParams): Promise<number[]> {
      return core.begin((tx) => core.lifecycle(tx, stopJobs("discarded", params)));
    },

    async jobsRetry(params: {
      ids: number[];
      now: number;
      definitions?: ReadonlyMap<number, JobDefinition>;
    }): Promise<number[]> {
      return await core.begin((tx) => core.lifecycle(tx, retryJobs(params)));
    },

    async jobReplay(params: {
      id: number;
      now: number;
      actor: string;
      reason: string;
      force: boolean;
      definition?: JobDefinition;
    }): Promise<{ replayed: boolean; was: JobState } | null> {
      return await core.begin((tx) => core.lifecycle(tx, replayJob(params)));
    },

    // ------------------------------------------------------------------- reads

    async jobGet(params: { id: number }): Promise<Job | null> {
      if (!Number.isSafeInteger(params.id)) return null;
      const [row] = await core.sql`SELECT * FROM jobs WHERE id = ${params.id}::bigint`;
      return row ? toJob(row) : null;
    },

    async jobsLeaseExpired(
      params: { now: number; limit: number; tenant?: string },
    ): Promise<Job[]> {
      checkLeaseExpired(params);
      const q = core.sql;
      // From the index jobs_executing; the tenant is in the statement.
      const rows = params.tenant === undefined
        ? await q`SELECT * FROM jobs
          WHERE state = 'executing' AND lease_expires_at < ${params.now}::bigint
          ORDER BY lease_expires_at, id LIMIT ${params.limit}::bigint`
        : await q`SELECT * FROM jobs
          WHERE state = 'executing' AND lease_expires_at < ${params.now}::bigint
            AND tenant = ${params.tenant}
          ORDER BY lease_expires_at, id LIMIT ${params.limit}::bigint`;
      return rows.map(toJob);
    },

    async jobsList(params: JobFilter): Promise<Job[]> {
      checkBounds(params);
      if (!searchesShown(params)) return await list(core, params);
      return (await search(core, new SearchPaging(params))).found;
    },

    async jobsCountMatching(params: JobMatch, options: { atMost?: number } = {}): Promise<number> {
      const atMost = options.atMost;
      checkBounds({ above: params.above, atMost });
      for (const state of [params.state ?? []].flat()) checkState(state);
      if (countsAnswer(params)) {
        return Math.min(sumMatching(await readCounts(core.sql), params), atMost ?? Infinity);
      }
      if (searchesShown(params)) {
        return (await search(core, SearchPaging.count(params, atMost))).matched;
      }
      const q = core.sql;
      const where = and(q, listConditions(q, params));
      const [row] = atMost === undefined
        ? await q`SELECT count(*) AS count FROM jobs WHERE ${where}`
        : await q`SELECT count(*) AS count FROM (
            SELECT 1 FROM jobs WHERE ${where} LIMIT ${atMost}::bigint) AS m`;
      return Number(row?.count ?? 0);
    },

    async attemptsList(params: { jobId: number }): Promise<Attempt[]> {
      const rows = await core.sql`SELECT * FROM attempts WHERE job_id = ${params.jobId}::bigint
        ORDER BY fence`;
      return rows.map(toAttempt);
    },

    async workersList(): Promise<string[]> {
      const rows = await core.sql`SELECT DISTINCT worker COLLATE "C" AS worker FROM jobs
        ORDER BY 1`;
      return rows.map((r) => String(r.worker));
    },
  });
}

/**
 * Answers one op of the shared job lifecycle (`src/store/lifecycle/jobs.ts`) on `q`,
 * one statement each; the moves of jobs go to `counts`.
 */
export async function answerJobOp(
  core: PostgresCore,
  op: JobOp,
  q: Sql,
  counts: CountTally,
): Promise<unknown> {
  switch (op.op) {
    case "jobsExpired": {
      const rows =
        await q`SELECT id, state, queue, attempt, max_attempts, fence, attempted_by, attempted_at FROM jobs
        WHERE state = 'executing' AND lease_expires_at < ${op.now}::bigint
        ORDER BY lease_expires_at LIMIT ${op.limit}::bigint
        FOR UPDATE SKIP LOCKED`;
      return rows.map(toLeasedJob);
    }
    case "jobsLock": {
      const rows =
        await q`SELECT id, state, queue, attempt, max_attempts, fence, attempted_by, attempted_at FROM jobs
        WHERE id = ANY(${op.ids}::bigint[]) ORDER BY id FOR UPDATE`;
      return rows.map(toLeasedJob);
    }
    case "runsLockOfJobs":
      // Runs before jobs, as the record path locks them.
      await q`SELECT id FROM workflow_runs WHERE id IN (
          SELECT run_id FROM workflow_steps WHERE job_id = ANY(${op.jobIds}::bigint[]))
        ORDER BY id FOR UPDATE`;
      return undefined;
    case "runsLock":
      await lockRuns(q, op.runIds);
      return undefined;
    case "jobLeaseEnd": {
      const { lease, to, now, error } = op;
      const [row] = await q`UPDATE jobs SET state = ${to}::text,
          discarded_at = CASE WHEN ${to}::text = 'discarded' THEN ${now}::bigint END,
          unique_key = CASE WHEN ${to}::text = 'available' OR unique_states = 'all'
            THEN unique_key END,
          lease_expires_at = NULL, ${appendError(q, now, error)}
        WHERE ${leaseHeld(q, lease)}
        RETURNING id`;
      return row !== undefined;
    }
    case "jobsComplete": {
      // By id (in id order, as an operator's cancel or discard locks them), each
      // fence looked up in one JSON object: a join with the results would be
      // planned from estimates, and once planned as a hash join it compared
      // every executing row with every result (see claimAfterCompletions).
      const { ids, leases } = leaseMap(op.results);
      const rows = await q`UPDATE jobs SET state = 'completed', completed_at = ${op.now}::bigint,
          lease_expires_at = NULL, ${clearUnique(q)}
        FROM (SELECT ${leases}::text::jsonb AS m) AS input
        WHERE jobs.id = ANY(${ids}::bigint[]) AND jobs.state = 'executing'
          AND jobs.attempted_by = ${op.node}
          AND jobs.fence = (input.m -> jobs.id::text ->> 0)::bigint
        RETURNING jobs.id, jobs.queue`;
      return rows.map((row) => ({ id: Number(row.id), queue: String(row.queue) }));
    }
    case "jobRecord": {
      const { result: r, now } = op;
      const held = leaseHeld(q, { id: r.id, node: op.node, fence: r.fence });
      let rows: Row[];
      switch (r.outcome) {
        case "snoozed":
          rows = await q`UPDATE jobs SET
              state = CASE WHEN ${r.until}::bigint > ${now}::bigint
                THEN 'scheduled' ELSE 'available' END,
              scheduled_at = ${r.until}::bigint, attempt = attempt - 1, lease_expires_at = NULL
            WHERE ${held} RETURNING queue, state`;
          break;
        case "retryable":
          rows = await q`UPDATE jobs SET state = 'retryable', scheduled_at = ${r.at}::bigint,
              lease_expires_at = NULL, ${appendError(q, now, r.error)}
            WHERE ${held} RETURNING queue, state`;
          break;
        case "cancelled":
          rows = await q`UPDATE jobs SET state = 'cancelled', cancelled_at = ${now}::bigint,
              lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, r.error)}
            WHERE ${held} RETURNING queue, state`;
          break;
        case "discarded":
          rows = await q`UPDATE jobs SET state = 'discarded', discarded_at = ${now}::bigint,
              lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, r.error)}
            WHERE ${held} RETURNING queue, state`;
          break;
      }
      const [row] = rows;
      return row ? { queue: String(row.queue), state: row.state as JobState } : null;
    }
    case "attemptsInsert": {
      const rows = JSON.stringify(op.results.map((r) => ({
        id: r.id,
        attempt: r.attempt,
        fence: r.fence,
        started_at: r.startedAt,
        outcome: r.outcome,
        error: "error" in r ? r.error : null,
        output: r.output ?? null,
        definition: r.definition ?? null,
      })));
      await q`INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
          started_at, finished_at, outcome, error, output, definition)
        SELECT v.id, v.attempt, v.fence, ${op.node},
          CASE WHEN p.job_id IS NOT NULL THEN 'replay' WHEN v.attempt > 1 THEN 'retry'
            ELSE 'run' END,
          p.actor, p.reason, v.started_at, ${op.now}::bigint, v.outcome, v.error, v.output,
          v.definition
        FROM jsonb_to_recordset(${rows}::text::jsonb) AS v(id bigint, attempt integer,
            fence bigint, started_at bigint, outcome text, error text, output text,
            definition text)
          LEFT JOIN replays AS p ON p.job_id = v.id AND p.after < v.fence`;
      return undefined;
    }
    case "attemptEnd": {
      const { job, now } = op;
      const started = job.attemptedAt ?? now;
      await q`INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
          started_at, finished_at, outcome, error, definition)
        SELECT ${job.id}::bigint, ${job.attempt}::integer, ${job.fence}::bigint,
          ${job.attemptedBy}::text,
          CASE WHEN p.job_id IS NOT NULL THEN 'replay'
            WHEN ${job.attempt}::integer > 1 THEN 'retry' ELSE 'run' END,
          p.actor, p.reason, ${started}::bigint, ${now}::bigint, ${op.outcome}::text,
          ${op.error}::text,
          (SELECT meta::jsonb ->> 'definition' FROM jobs WHERE id = ${job.id}::bigint)
        FROM (SELECT 1) AS one
          LEFT JOIN replays AS p ON p.job_id = ${job.id}::bigint
            AND p.after < ${job.fence}::bigint`;
      return undefined;
    }
    case "schedulesCompleted":
      await q`UPDATE schedules
        SET last_completed_at = greatest(coalesce(last_completed_at, 0), ${op.now}::bigint)
        FROM ${schedulesOf(q, op.jobIds)} WHERE schedules.id = s.id`;
      return undefined;
    case "jobStop": {
      const { id, now, error } = op;
      const [changed] = op.to === "cancelled"
        ? await q`UPDATE jobs SET state = 'cancelled', cancelled_at = ${now}::bigint,
            lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, error)}
          WHERE id = ${id}::bigint AND state IN ${notFinal(q)} RETURNING id`
        : await q`UPDATE jobs SET state = 'discarded', discarded_at = ${now}::bigint,
            lease_expires_at = NULL, ${clearUnique(q)}, ${appendError(q, now, error)}
          WHERE id = ${id}::bigint AND state IN ${notFinal(q)} RETURNING id`;
      return changed !== undefined;
    }
    case "jobRunAgain": {
      const [row] = await q`UPDATE jobs SET ${runAgain(q, op.now)}
        WHERE id = ${op.id}::bigint AND state = ANY(${op.from as JobState[]}::text[])
        RETURNING queue, fence`;
      return row ? { queue: String(row.queue), fence: Number(row.fence) } : null;
    }
    case "jobRedefine": {
      const d = op.definition;
      // Keeps the extra attempt the retry or replay allowed.
      await q`UPDATE jobs SET worker = ${d.worker}, args = ${d.args}, meta = ${d.meta},
          tags = ${d.tags}, queue = ${d.queue}, priority = ${d.priority}::integer,
          max_attempts = greatest(${d.maxAttempts}::integer, attempt + 1)
        WHERE id = ${op.id}::bigint`;
      return undefined;
    }
    case "replayPending":
      await q`INSERT INTO replays (job_id, after, actor, reason, at)
        VALUES (${op.id}::bigint, ${op.after}::bigint, ${op.actor}, ${op.reason},
          ${op.now}::bigint)
        ON CONFLICT (job_id) DO UPDATE SET after = excluded.after, actor = excluded.actor,
          reason = excluded.reason, at = excluded.at`;
      return undefined;
    case "jobsStage": {
      // The state each due job leaves is read as it is locked: the newest.
      const rows = await q`WITH due AS (
          SELECT id, state FROM jobs
          WHERE state IN ('scheduled', 'retryable') AND scheduled_at <= ${op.now}::bigint
          ORDER BY scheduled_at LIMIT ${op.limit}::bigint
          FOR UPDATE SKIP LOCKED)
        UPDATE jobs SET state = 'available' FROM due WHERE jobs.id = due.id
        RETURNING jobs.id, jobs.queue, due.state AS was`;
      return rows.map((r) => ({
        id: Number(r.id),
        queue: String(r.queue),
        was: r.was as JobState,
      }));
    }
    case "nextDue": {
      const [next] = await q`SELECT min(scheduled_at) AS at FROM jobs
        WHERE state IN ('scheduled', 'retryable')`;
      return next?.at == null ? null : Number(next.at);
    }
    case "jobsDelete": {
      const { target, limit } = op;
      let rows: Row[];
      if ("state" in target) {
        const at = finalAt(q, target.state);
        rows = await q`DELETE FROM jobs WHERE id IN (
            SELECT id FROM jobs WHERE state = ${target.state} AND ${at} < ${target.before}::bigint
              AND (schedule_id IS NULL OR NOT (schedule_id = ANY(${target.except}::text[])))
            ORDER BY ${at} LIMIT ${limit}::bigint
            FOR UPDATE SKIP LOCKED)
          RETURNING id, queue, state`;
      } else {
        rows = await q`DELETE FROM jobs WHERE id IN (
            SELECT id FROM jobs
            WHERE schedule_id = ${target.scheduleId}
              AND state IN ('completed', 'cancelled', 'discarded')
              AND coalesce(completed_at, cancelled_at, discarded_at) < ${target.before}::bigint
            ORDER BY scheduled_for LIMIT ${limit}::bigint
            FOR UPDATE SKIP LOCKED)
          RETURNING id, queue, state`;
      }
      return rows.map((r) => ({
        id: Number(r.id),
        queue: String(r.queue),
        state: r.state as JobState,
      }));
    }
    case "attemptsDelete":
      await q`DELETE FROM attempts WHERE job_id = ANY(${op.jobIds}::bigint[])`;
      await q`DELETE FROM replays WHERE job_id = ANY(${op.jobIds}::bigint[])`;
      return undefined;
    case "countsMove":
      for (const m of op.moves) {
        counts.add(m.queue, m.from, -1);
        if (m.to !== null) counts.add(m.toQueue ?? m.queue, m.to, 1);
      }
      return undefined;
    case "wake":
      await core.notify(q, op.queues);
      return undefined;
  }
}

/** The job ops that answer nothing: they are pipelined (see `PostgresCore.lifecycle`). */
export const JOB_WRITES: ReadonlySet<JobOp["op"]> = new Set<JobOp["op"]>([
  "runsLock",
  "runsLockOfJobs",
  "attemptsInsert",
  "attemptEnd",
  "schedulesCompleted",
  "jobRedefine",
  "replayPending",
  "attemptsDelete",
  "countsMove",
  "wake",
]);

/** Locks the runs in id order, for this transaction. */
export async function lockRuns(q: Sql, runs: number[]): Promise<void> {
  if (runs.length === 0) return;
  const ids = [...new Set(runs)].sort((a, b) => a - b);
  await q`SELECT id FROM workflow_runs WHERE id = ANY(${ids}::bigint[]) ORDER BY id FOR UPDATE`;
}

/**
 * Inserts `jobs` in one statement, which also notifies the queues that got
 * a row. Each row takes its id from the
 * sequence before the insert, so the statement reports, per input row in
 * order, its id and whether it went in; a row skipped by a unique
 * conflict (with an older row or an earlier one of the batch) is then
 * looked up by its occurrence or key.
 */
export async function insertJobs(
  core: PostgresCore,
  q: Sql,
  jobs: NewJob[],
  now: number,
): Promise<InsertResult[]> {
  if (jobs.length === 0) return [];
  const rows = JSON.stringify(jobs.map((job, ord) => ({
    ord,
    queue: job.queue,
    worker: job.worker,
    args: job.args,
    meta: job.meta,
    tags: job.tags,
    tenant: job.tenant,
    priority: job.priority,
    max_attempts: job.maxAttempts,
    scheduled_at: job.scheduledAt,
    unique_key: job.uniqueKey,
    unique_states: job.uniqueStates,
    occurrence: job.occurrence,
    schedule_id: job.scheduleId,
    scheduled_for: job.scheduledFor,
  })));
  const results = await q`WITH input AS MATERIALIZED (
      SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id, r.*
      FROM (SELECT * FROM jsonb_to_recordset(${rows}::text::jsonb) AS r(ord integer, queue text,
          worker text, args text, meta text, tags text, tenant text, priority integer,
          max_attempts integer, scheduled_at bigint, unique_key text, unique_states text,
          occurrence text, schedule_id text, scheduled_for bigint)
        ORDER BY ord) AS r),
    ins AS (
      INSERT INTO jobs (id, queue, worker, args, meta, tags, tenant, priority, max_attempts,
        scheduled_at, unique_key, unique_states, occurrence, schedule_id, scheduled_for,
        state, inserted_at)
      SELECT id, queue, worker, args, meta, tags, tenant, priority, max_attempts,
        scheduled_at, unique_key, unique_states, occurrence, schedule_id, scheduled_for,
        CASE WHEN scheduled_at > ${now}::bigint THEN 'scheduled' ELSE 'available' END,
        ${now}::bigint
      FROM input ORDER BY ord
      ON CONFLICT DO NOTHING
      RETURNING id, queue, NULL::text AS was, state),
    counted AS (${countRows(q, "ins")}),
    -- Each queue that got a row, told at commit; read below, so that it runs.
    notified AS (
      SELECT count(pg_notify(${core.channel}, queue)) AS queues
      FROM (SELECT DISTINCT queue FROM ins) AS q)
    SELECT input.ord, input.id, ins.id IS NOT NULL AS fresh,
      (SELECT queues FROM notified) AS notified
    FROM input LEFT JOIN ins ON ins.id = input.id ORDER BY input.ord`;
  const out: (InsertResult | null)[] = results.map((row) => {
    const job = jobs[Number(row.ord)]!;
    if (!row.fresh) return null;
    const state: JobState = job.scheduledAt > now ? "scheduled" : "available";
    return { id: Number(row.id), duplicate: false, queue: job.queue, state };
  });
  if (out.some((r) => r === null)) {
    const skipped = jobs.filter((_, i) => out[i] === null);
    const occurrences = skipped.flatMap((j) => (j.occurrence === null ? [] : [j.occurrence]));
    const keys = skipped.flatMap((j) => (j.uniqueKey === null ? [] : [j.uniqueKey]));
    const existing = await q`SELECT id, queue, state, occurrence, unique_key FROM jobs
      WHERE occurrence = ANY(${occurrences}::text[]) OR unique_key = ANY(${keys}::text[])`;
    const byOccurrence = new Map(existing.map((r) => [r.occurrence as string | null, r]));
    const byKey = new Map(existing.map((r) => [r.unique_key as string | null, r]));
    for (const [i, job] of jobs.entries()) {
      if (out[i] !== null) continue;
      if (job.debounce && job.uniqueKey !== null) {
        // The waiting job holding the key takes this one's args, meta, tags
        // and priority (and, extended, its later start).
        const [replaced] = await q`UPDATE jobs SET args = ${job.args}, meta = ${job.meta},
            tags = ${job.tags}, priority = ${job.priority}::integer,
            scheduled_at = CASE WHEN ${job.debounce.extend}::boolean
              THEN greatest(scheduled_at, ${job.scheduledAt}::bigint) ELSE scheduled_at END
          WHERE unique_key = ${job.uniqueKey}
            AND state IN ('scheduled', 'available', 'retryable')
          RETURNING id, queue, state`;
        if (replaced) {
          out[i] = { ...toInsertResult(replaced, true), replaced: true };
          continue;
        }
      }
      const row = (job.occurrence !== null ? byOccurrence.get(job.occurrence) : undefined) ??
        (job.uniqueKey !== null ? byKey.get(job.uniqueKey) : undefined);
      if (!row) throw new Error(`insert of a ${job.worker} job conflicted with a vanished row`);
      out[i] = toInsertResult(row, true);
    }
  }
  return out as InsertResult[];
}

/** The whole limited claim ({@linkcode claimFlow}) in a transaction of its own. */
async function claimLimited(
  core: PostgresCore,
  params: ClaimParams,
): Promise<FlowClaim> {
  const flow = await core.sql.begin(async (tx) => await core.lifecycle(tx, claimFlow(params)));
  await core.countsWritten(params.now);
  return flow;
}

/**
 * Records `results` and claims in one transaction: the general form of
 * {@linkcode StoreJobs.jobsClaim} (any results), and the limited claim's
 * ({@linkcode claimFlow}) when `limited`.
 */
async function recordAndClaim(
  core: PostgresCore,
  params: ClaimParams,
  limited: boolean,
): Promise<ClaimResult> {
  const claimed = await core.sql.begin(async (tx) => {
    const counts = new CountTally();
    const report = params.results?.length
      ? await core.lifecycle(
        tx,
        recordResults({ node: params.node, now: params.now, results: params.results }),
        counts,
      )
      : { recorded: [], lost: [] };
    if (params.limit <= 0 || limited) {
      const flow = params.limit <= 0
        ? { jobs: [], held: false }
        : await core.lifecycle(tx, claimFlow(params), counts);
      await addCounts(tx, counts);
      return { ...flow, report };
    }
    const { node, now } = params;
    // The picked ids as an array, not a join: once the table has
    // statistics, a join of a few hundred picked rows is planned as a hash
    // join over a sequential scan of every job, which grows with the table.
    const rows = await tx`WITH picked AS (${pickRunnable(tx, params)})
        UPDATE jobs SET ${takeLease(tx, { node, now, leaseMs: params.leaseMs })}
        WHERE jobs.id = ANY(ARRAY(SELECT id FROM picked))
        RETURNING jobs.id, queue, worker, args, meta, tags, occurrence, attempt, max_attempts,
          priority, fence, inserted_at, scheduled_at, attempted_at, schedule_id, tenant`;
    counts.move(params.queue, "available", "executing", rows.length);
    await addCounts(tx, counts);
    // RETURNING has no order of its own: hand them out in claim order.
    const jobs = rows.map(toClaimed).sort(byClaimOrder);
    // A schedule's claimed occurrences start it.
    const occurrences = rows.filter((r) => r.schedule_id != null).map((r) => Number(r.id));
    if (occurrences.length > 0) {
      await tx`UPDATE schedules
          SET last_started_at = greatest(coalesce(last_started_at, 0), ${now}::bigint)
          FROM ${schedulesOf(tx, occurrences)} WHERE schedules.id = s.id`;
    }
    return { jobs, report };
  });
  await core.countsWritten(params.now);
  return claimed;
}

/**
 * The busy queue's batch in one statement, so one round trip and one
 * commit of its own: completions of plain jobs (the results of no-op to
 * ordinary workers, nearly every batch) and the next claim. Each CTE is a
 * statement of {@linkcode jobsClaim}'s transaction, in its order: the
 * completions fenced per row, their attempts, the claim `FOR UPDATE SKIP
 * LOCKED`, and the claimed occurrences' schedules locked in id order.
 * The claim and the completions touch disjoint rows (available,
 * executing), so the one snapshot they share changes nothing; a row an
 * operator changed meanwhile is re-checked against its newest version as
 * in separate statements.
 *
 * No step joins two row sets: the completions are found by id and their
 * values looked up in one JSON object ({@linkcode leaseMap}), the claimed
 * rows updated by an array of ids. A join's plan follows the statistics:
 * estimating one executing row for a node it has never seen, PostgreSQL
 * joined each executing row to every result (500 x 500 comparisons, 100
 * ms a batch), and once the table had statistics it joined the picked
 * rows by a sequential scan of every job.
 */
async function claimAfterCompletions(
  core: PostgresCore,
  params: Omit<ClaimParams, "results" | "flow">,
  results: JobResult[],
  flow?: FlowLimits,
): Promise<
  ClaimResult & { full?: boolean; aside?: boolean }
> {
  const { node, now } = params;
  if (results.length === 0 && params.limit <= 0) {
    return { jobs: [], report: { recorded: [], lost: [] } };
  }
  const q = core.sql;
  const { ids, leases } = leaseMap(results);
  // Only the parts the call needs: each costs planning time (a claim on an
  // idle queue is on the path from enqueue to start).
  // MATERIALIZED: the JSON is parsed once, not once per row it is read for.
  const finish = results.length > 0
    ? q`input AS MATERIALIZED (SELECT ${leases}::text::jsonb AS m),
      done AS (
        UPDATE jobs SET state = 'completed', completed_at = ${now}::bigint,
          lease_expires_at = NULL, ${clearUnique(q)}
        FROM input
        WHERE jobs.id = ANY(${ids}::bigint[]) AND jobs.state = 'executing'
          AND jobs.attempted_by = ${node}
          AND jobs.fence = (input.m -> jobs.id::text ->> 0)::bigint
        RETURNING jobs.id, jobs.fence, input.m -> jobs.id::text AS v, jobs.queue,
          'executing'::text AS was, 'completed'::text AS state),
      done_counted AS (${countRows(q, "done")}),
      written AS (
        INSERT INTO attempts (job_id, attempt, fence, node, kind, actor, reason,
          started_at, finished_at, outcome, error, output, definition)
        SELECT d.id, (d.v ->> 1)::integer, d.fence, ${node},
          CASE WHEN p.job_id IS NOT NULL THEN 'replay'
            WHEN (d.v ->> 1)::integer > 1 THEN 'retry' ELSE 'run' END,
          p.actor, p.reason, (d.v ->> 2)::bigint, ${now}::bigint, 'completed', NULL,
          d.v ->> 3, d.v ->> 4
        FROM done AS d LEFT JOIN replays AS p ON p.job_id = d.id AND p.after < d.fence
        RETURNING job_id)`
    : null;
  // A limited claim (no token bucket) is one call
  // (migrations/postgres/0018_flow_claim.sql), its flags beside the rows.
  const taken = flow === undefined
    ? q`picked AS (${pickRunnable(q, params)}),
      claimed AS (
        UPDATE jobs SET ${takeLease(q, { node, now, leaseMs: params.leaseMs })}
        WHERE jobs.id = ANY(ARRAY(SELECT id FROM picked))
        RETURNING 'job'::text AS flag, jobs.id, queue, worker, args, meta, tags, occurrence,
          attempt, max_attempts, priority, fence, inserted_at, scheduled_at, attempted_at,
          schedule_id, tenant, 'available'::text AS was, 'executing'::text AS state,
          NULL::integer AS ord)`
    : q`claimed AS (SELECT * FROM ${
      flowClaim(
        q,
        params,
        flow,
        // The completions written first: the flow lock is then held for
        // the claim and the commit only. A CTE the query does not read runs
        // after it, and the function's argument reads them.
        finish
          ? q`(SELECT input.m FROM input WHERE (SELECT count(*) FROM written) >= 0)`
          : q`${leases}::text::jsonb`,
      )
    })`;
  const claim = params.limit > 0
    ? q`${taken},
      claim_counted AS (${countRows(q, "claimed")}),
      started AS (
        UPDATE schedules
        SET last_started_at = greatest(coalesce(last_started_at, 0), ${now}::bigint)
        FROM (SELECT id FROM schedules
          WHERE id IN (SELECT schedule_id FROM claimed WHERE occurrence IS NOT NULL)
          ORDER BY id FOR UPDATE) AS s
        WHERE schedules.id = s.id)`
    : null;
  // A plain pick that took nothing says whether it stepped aside for the
  // limited claim (stored limits, tenants' jobs waiting): a queue merely
  // empty needs no limited claim after it.
  const aside = flow === undefined
    ? q`UNION ALL SELECT true, 'aside', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL
      WHERE NOT EXISTS (SELECT 1 FROM claimed) AND ${stepsAside(q, params.queue)}`
    : q``;
  const claimedRows = q`SELECT true AS claimed, flag, id, queue, worker, args, meta, tags,
      occurrence, attempt, max_attempts, priority, fence, inserted_at, scheduled_at,
      attempted_at, tenant, ord
    FROM claimed ${aside}`;
  const rows = finish && claim
    ? await q`WITH ${finish}, ${claim}
      ${claimedRows}
      UNION ALL SELECT false, NULL, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL
      FROM done`
    : finish
    ? await q`WITH ${finish} SELECT false AS claimed, id FROM done`
    : await q`WITH ${claim!} ${claimedRows}`;
  const jobs: ClaimedJob[] = [];
  const ord = new Map<number, number>();
  const written = new Set<number>();
  let held = false;
  let shared = false;
  let full = false;
  let steppedAside = false;
  for (const row of rows) {
    if (!row.claimed) written.add(Number(row.id));
    else if (row.flag === "job") {
      jobs.push(toClaimed(row));
      ord.set(Number(row.id), Number(row.ord));
    } else if (row.flag === "held") held = true;
    else if (row.flag === "shared") shared = true;
    else if (row.flag === "aside") steppedAside = true;
    else full = true;
  }
  // RETURNING has no order of its own: hand them out in claim order, or
  // in the order the limited claim decided.
  jobs.sort(flow === undefined ? byClaimOrder : (a, b) => ord.get(a.id)! - ord.get(b.id)!);
  const report: RecordReport = { recorded: [], lost: [] };
  for (const r of results) (written.has(r.id) ? report.recorded : report.lost).push(r.id);
  await core.countsWritten(params.now);
  return flow === undefined
    ? { jobs, report, aside: steppedAside }
    : { jobs, report, held, shared, full };
}

/** Drives `paging` through raw listings to its end. */
async function search(core: PostgresCore, paging: SearchPaging): Promise<SearchPaging> {
  for (let next = paging.next; next !== null; next = paging.next) {
    paging.take(await list(core, next));
  }
  return paging;
}

/** The rows of one listing as SQL finds them (a search matches the stored text). */
async function list(core: PostgresCore, params: JobFilter): Promise<Job[]> {
  const q = core.sql;
  const conditions = listConditions(q, params);
  const desc = params.desc ?? false;
  if (params.after !== undefined) {
    conditions.push(desc ? q`id < ${params.after}::bigint` : q`id > ${params.after}::bigint`);
  }
  const order = desc ? q`ORDER BY id DESC` : q`ORDER BY id`;
  const rows = await q`SELECT * FROM jobs WHERE ${and(q, conditions)} ${order}
    LIMIT ${params.limit ?? null}::bigint`;
  return rows.map(toJob);
}

type FinalState = "completed" | "cancelled" | "discarded";

/** The column of the instant a job became `state`, as a fixed fragment. */
function finalAt(q: Sql, state: FinalState): Fragment {
  switch (state) {
    case "completed":
      return q`completed_at`;
    case "cancelled":
      return q`cancelled_at`;
    case "discarded":
      return q`discarded_at`;
  }
}

/**
 * The schedules of the jobs `ids` as a relation `s(id)`, their rows locked
 * in id order: claimers and recorders touching several schedules at once
 * take them in one order, so they cannot deadlock one another.
 */
function schedulesOf(q: Sql, ids: number[]): Fragment {
  return q`(SELECT id FROM schedules
    WHERE id IN (SELECT schedule_id FROM jobs WHERE id = ANY(${ids}::bigint[]))
    ORDER BY id FOR UPDATE) AS s`;
}

/**
 * A completion of a job that is neither a schedule's occurrence nor a
 * workflow's step: what `jobsClaim` writes in its one-statement form (an
 * occurrence's completion also moves its schedule's recovery point; a
 * step's advances its run).
 */
function isPlainCompletion(result: JobResult): boolean {
  return result.outcome === "completed" && !result.occurrence && result.workflow === undefined;
}

/**
 * Completions as the one-statement claim binds them: their ids in order (as
 * an operator's cancel or discard locks rows), and one JSON object from id
 * to `[fence, attempt, started_at, output, definition]`, which PostgreSQL
 * reads per row by key (a JSON object's keys are sorted, so a binary search).
 */
function leaseMap(results: JobResult[]): { ids: number[]; leases: string } {
  const ids = results.map((r) => r.id).sort((a, b) => a - b);
  const leases: Record<number, [number, number, number, string | null, string | null]> = {};
  for (const r of results) {
    leases[r.id] = [r.fence, r.attempt, r.startedAt, r.output ?? null, r.definition ?? null];
  }
  return { ids, leases: JSON.stringify(leases) };
}

/**
 * The ids a claim takes: up to `limit` runnable jobs of `queue` due by
 * `dueBy` (else `now`) in claim order, locked, skipping rows another
 * claimer holds; none while the queue is paused.
 */
function pickRunnable(
  q: Sql,
  params: { queue: string; now: number; limit: number; dueBy?: number },
): Fragment {
  const { queue } = params;
  return q`SELECT id FROM jobs
    WHERE state = 'available' AND queue = ${queue}
      AND scheduled_at <= ${params.dueBy ?? params.now}::bigint
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND paused)
      AND NOT ${stepsAside(q, queue)}
    ORDER BY priority, scheduled_at, id
    LIMIT ${params.limit}::bigint
    FOR UPDATE SKIP LOCKED`;
}

/**
 * Whether the plain claim of `queue` steps aside for the limited one
 * (lifecycle/flow.ts): limits are stored for it, or tenants' jobs wait in
 * it. Two index probes.
 */
function stepsAside(q: Sql, queue: string): Fragment {
  return q`(EXISTS (SELECT 1 FROM queue_limits WHERE name = ${queue})
    OR EXISTS (SELECT 1 FROM jobs AS t
      WHERE t.state = 'available' AND t.queue = ${queue} AND t.tenant IS NOT NULL))`;
}

/**
 * The call of a limited claim with no token bucket (`jobs_flow_claim`): the
 * file's `global` and `partition` for `flow`, read as wide as the shared
 * lifecycle reads ({@linkcode flowScope}); `done` the completions written
 * beside it.
 */
function flowClaim(
  q: Sql,
  params: Omit<ClaimParams, "results" | "flow">,
  flow: FlowLimits,
  done: Fragment,
): Fragment {
  const { node, now } = params;
  const scope = flowScope({ limit: params.limit, flow });
  const byKey = scope.by.kind === "tenant" ? "" : scope.by.key;
  return q`jobs_flow_claim(${params.queue}, ${node}, ${params.limit}::bigint,
    ${scope.by.kind}::text, ${byKey}::text, ${flow.global ?? null}::bigint,
    ${flow.partition?.limit ?? null}::bigint, ${scope.width}::bigint, ${scope.per}::bigint,
    ${params.dueBy ?? now}::bigint, ${now}::bigint, ${now + params.leaseMs}::bigint,
    ${done})`;
}

/** The SET list of a claim: executing for `node` until `now + leaseMs`, one more attempt and fence. */
function takeLease(q: Sql, lease: { node: string; now: number; leaseMs: number }): Fragment {
  return q`state = 'executing', attempt = attempt + 1, fence = fence + 1,
    attempted_by = ${lease.node}, attempted_at = ${lease.now}::bigint,
    lease_expires_at = ${lease.now + lease.leaseMs}::bigint`;
}

/** The lease filter of every result write: (id, executing, node, fence). */
function leaseHeld(q: Sql, lease: { id: number; node: string; fence: number }): Fragment {
  return q`id = ${lease.id}::bigint AND state = 'executing' AND attempted_by = ${lease.node}
    AND fence = ${lease.fence}::bigint`;
}

/** Leases as a relation `l(id, fence)`, one bound JSON value for all of them. */
function leaseSet(q: Sql, leases: Lease[]): Fragment {
  const rows = JSON.stringify(leases.map((l) => ({ id: l.id, fence: l.fence })));
  return q`jsonb_to_recordset(${rows}::text::jsonb) AS l(id bigint, fence bigint)`;
}

/** The states an operator may still stop (cancel, discard). */
function notFinal(q: Sql): Fragment {
  return q`('scheduled', 'available', 'executing', 'retryable')`;
}

/** The filters of a listing, each a fixed text with its value bound. */
function listConditions(q: Sql, params: JobMatch): Fragment[] {
  const where: Fragment[] = [];
  if (params.ids !== undefined) where.push(q`id = ANY(${params.ids}::bigint[])`);
  if (params.queue !== undefined) where.push(q`queue = ${params.queue}`);
  if (params.worker !== undefined) where.push(q`worker = ${params.worker}`);
  if (params.tag !== undefined) {
    where.push(q`tags::jsonb @> jsonb_build_array(${params.tag}::text)`);
  }
  if (params.scheduleId !== undefined) where.push(q`schedule_id = ${params.scheduleId}`);
  if (params.occurrence !== undefined) where.push(q`occurrence = ${params.occurrence}`);
  if (params.tenant !== undefined) where.push(q`tenant = ${params.tenant}`);
  if (params.search !== undefined) {
    // This reads the stored text: a listing with a search narrows its rows
    // with it, then keeps those whose shown (redacted) text matches
    // (src/store/search.ts). ILIKE's escape character is a backslash; tags
    // and errors are searched in their values (unescaped), args in its JSON
    // text as on SQLite.
    const pattern = `%${escapeLike(params.search)}%`;
    const match = q`(worker ILIKE ${pattern} OR args ILIKE ${pattern}
      OR occurrence ILIKE ${pattern}
      OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) AS t(v)
        WHERE t.v ILIKE ${pattern})
      OR EXISTS (SELECT 1 FROM jsonb_array_elements(errors) AS e(v)
        WHERE e.v ->> 'error' ILIKE ${pattern}))`;
    // A search text that JSON writes as it is (no quote, backslash or
    // control character) can be in a tag or an error only if it is in the
    // array's JSON text, so a row can match only if its fields' texts
    // joined do: one LIKE of them lowercased (what ILIKE does) spares nearly
    // every row the five ILIKEs, the tags' parse and the errors' walk, a
    // third of the cost. CASE, because PostgreSQL orders the tests of an
    // AND by its own estimates of their costs.
    where.push(
      JSON.stringify(params.search) === `"${params.search}"`
        ? q`CASE WHEN lower(concat_ws(chr(31), worker, args, occurrence, tags, errors::text))
            LIKE lower(${pattern}) THEN ${match} ELSE false END`
        : match,
    );
  }
  if (params.above !== undefined) where.push(q`id > ${params.above}::bigint`);
  if (params.state !== undefined) {
    const states = Array.isArray(params.state) ? params.state : [params.state];
    for (const state of states) checkState(state);
    where.push(q`state = ANY(${states}::text[])`);
  }
  return where;
}

/** `conditions` joined with AND; `true` when there are none. */
function and(q: Sql, conditions: Fragment[]): Fragment {
  if (conditions.length === 0) return q`true`;
  return conditions.reduce((all, next) => q`${all} AND ${next}`);
}
