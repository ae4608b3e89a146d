/**
 * The seam between the kernel and a database. The kernel and the runtime call
 * only these methods; every SQL statement lives in an adapter folder
 * (`sqlite/` and `postgres/`), and one conformance suite runs against each.
 *
 * Methods read noun-then-verb and take one params object; `now` always comes
 * from the caller's clock, never from the database or the machine.
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
  PlanContext,
  PlanDecision,
  RecordReport,
} from "../kernel/types.ts";
import type {
  CompiledWorkflow,
  RunState,
  WorkflowRun,
  WorkflowRunDetail,
} from "../workflow/types.ts";
import type {
  ChunkDelta,
  IngestDrop,
  IngestRun,
  IngestRunState,
  NewDrop,
  NewFailure,
  PipelineSummary,
} from "./ingest_types.ts";
import type { ReportRun, ReportRunState } from "./report_types.ts";
import type { StoreBulkRequests, StoreTotp } from "./bulk_request_types.ts";

export type {
  BulkRequest,
  BulkRequestState,
  ConfirmChannelKind,
  ManifestEntry,
  NewBulkRequest,
  StoreBulkRequests,
  StoreTotp,
  TotpEnrolment,
} from "./bulk_request_types.ts";
import type { FlowLimits, StoredLimits } from "../kernel/flow.ts";

/** What `migrate()` did. */
export interface MigrationReport {
  /** Versions applied by this call, in order. */
  applied: number[];
  /** The schema version of the database after the call. */
  version: number;
}

/** One migration a store knows: its number and its file's name. */
export interface MigrationInfo {
  version: number;
  name: string;
}

/**
 * The {@linkcode Store} methods a transaction offers as well: every write
 * the runbook's actions and the runtime's batches make, and the reads they
 * decide by. On a {@linkcode StoreTx} each runs inside the one transaction,
 * so an operator's action and its `audit` row, or a fan-out batch and its
 * cursor, commit or roll back together. Adapters build their transaction
 * objects from this list.
 */
export const STORE_TX_METHODS = [
  "jobsInsert",
  "jobsCancel",
  "jobsRetry",
  "jobsDiscard",
  "jobReplay",
  "jobGet",
  "jobsList",
  "queuePause",
  "queuesList",
  "queueLimitsSet",
  "queueLimitsList",
  "schedulesSync",
  "schedulesList",
  "scheduleSetEnabled",
  "settingGet",
  "settingSet",
  "settingDelete",
  "auditRecord",
  "workflowStart",
  "workflowGet",
  "workflowCancel",
  "workflowRetry",
  "workflowCursorSet",
  "ingestDropReplayed",
  /** A chunk's commit and what it reads, in a transaction with the work items a sink adds. */
  "ingestFailuresGet",
  "ingestChunkCommit",
  "reportRunCreate",
  "reportRunGet",
  "principalInsert",
  "principalGet",
  "principalsList",
  "principalUpdate",
  "principalDelete",
  "sessionInsert",
  "sessionGet",
  "sessionTouch",
  "sessionDelete",
  "sessionsList",
  "sessionsDeleteFor",
  "sessionsPrune",
  "bulkRunCreate",
  "bulkRunGet",
  "bulkRunAbort",
  "workItemAdd",
  "workItemGet",
  "workItemsList",
  "workItemEvents",
  "workItemClaim",
  "workItemNext",
  "workItemRelease",
  "workItemSkip",
  "workItemReassign",
  "workItemDo",
  "bulkRequestCreate",
  "bulkRequestGet",
  "bulkRequestLatest",
  "bulkRequestTry",
  "bulkRequestConfirm",
  "bulkRequestEnd",
  "totpEnrol",
  "totpEnrolment",
  "totpUse",
  "totpDelete",
] as const;

/** The name of one method of {@linkcode STORE_TX_METHODS}. */
export type StoreTxMethod = typeof STORE_TX_METHODS[number];

/** The methods of {@linkcode STORE_TX_METHODS}, with their store signatures. */
export type StoreTxMethods = Pick<Store, StoreTxMethod>;

/** What `jobsCancel` and `jobsDiscard` take: the jobs, when, why, and who (the audit's actor). */
export interface JobsStopParams {
  ids: number[];
  now: number;
  reason: string;
  actor?: string;
}

/**
 * A transaction opened by {@linkcode Store.transaction}: the methods of
 * {@linkcode STORE_TX_METHODS}, each doing what the store's method of the
 * same name does, inside this transaction. What they write commits or
 * rolls back with it; what they read includes what the transaction wrote.
 * Use it only while `fn` runs: afterwards every call fails.
 */
export interface StoreTx extends StoreTxMethods {
  /** Inserts jobs inside this transaction: they commit or roll back with it. */
  jobsInsert(params: { jobs: NewJob[]; now: number }): Promise<InsertResult[]>;
}

/** Filters for listing jobs (the admin views, the TUI's jobs list, the testing helpers). */
export interface JobFilter {
  ids?: number[];
  state?: JobState | JobState[];
  queue?: string;
  worker?: string;
  tag?: string;
  /** Occurrences (and fan-out items) of this schedule. */
  scheduleId?: string;
  /** The job of one occurrence identity. */
  occurrence?: string;
  /**
   * Only jobs of this tenant: the scope of a tenant's principal, applied in
   * the statement itself (never a filter of rows already read).
   */
  tenant?: string;
  /**
   * A case-insensitive substring (`%` and `_` match only themselves) of what
   * a reader is shown of the worker, the args (as JSON, redacted as the
   * views redact them), a tag, the occurrence or a stored error (redacted):
   * a secret shown as `[REDACTED]` is not found, its key and `[REDACTED]`
   * are (see `src/store/search.ts`).
   */
  search?: string;
  /**
   * Only jobs whose id is above this one: the newest jobs, ids being handed
   * out in order. A search bounded so reads those rows only (the keys of
   * the primary key), however many older ones the table holds.
   */
  above?: number;
  limit?: number;
  /** Oldest first by id unless `desc`. */
  desc?: boolean;
  /**
   * Keyset paging: only jobs past this id in the listing order (ids below it
   * with `desc`, above it without), so a page costs the same at any depth.
   */
  after?: number;
}

/** The filters of {@linkcode JobFilter} without its paging: which jobs, not which page. */
export type JobMatch = Omit<JobFilter, "limit" | "desc" | "after">;

/** A row of `audit`. */
export interface AuditRow {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  reason: string | null;
  details: Record<string, unknown>;
}

/** The parameters of `auditPage`. */
export interface AuditPageParams {
  target?: string;
  /** Only rows of this actor (a person's or token's name, `host:<user>`). */
  actor?: string;
  /** Only rows of this action (`job.retry`). */
  action?: string;
  /** Keyset paging: only rows whose id is below this one. */
  after?: number;
  /** Only rows about jobs of this tenant. */
  tenant?: string;
  limit: number;
}

/** A row of `queues`. */
export interface QueueRow {
  name: string;
  paused: boolean;
  concurrency: number | null;
  updatedAt: number;
}

/** A row of `nodes`. */
export interface NodeRow {
  node: string;
  queues: Record<string, number>;
  startedAt: number;
  heartbeatAt: number;
  /** Where the node runs (the daemon's `--environment`), or null when it did not say. */
  environment: string | null;
}

/**
 * A leadership row as {@linkcode Store.leaderTake} left it: whether the
 * caller holds it, and who does (null: released, nobody holds it).
 */
export interface LeaderState {
  /** The caller holds the role until `expiresAt`. */
  held: boolean;
  /** The holder, or the last one while it has not expired; null once released. */
  node: string | null;
  /** Raised by every takeover, kept by a renewal: a stale holder's fence is lower. */
  fence: number;
  /** When the holder's lease of the role ends, in the holder's clock. */
  expiresAt: number;
}

/**
 * How a schedule's occurrences ended lately, from its occurrence jobs in
 * occurrence order (`scheduled_for`): computed on read from the index on
 * `(schedule_id, scheduled_for)`, so every way a job ends (a node's result,
 * the lifeline, an operator's cancel or discard, a replay that completes)
 * counts without a column to keep in step. Its cost is one index seek, plus
 * one row per occurrence of the current run of failures.
 */
export interface ScheduleOutcome {
  scheduleId: string;
  /** The final state of its newest final occurrence. */
  lastOutcome: "completed" | "cancelled" | "discarded";
  /** When that occurrence's job ended. */
  lastOutcomeAt: number;
  /**
   * Discarded occurrences after its newest completed one (all of them when
   * none completed): its current run of failures, 0 once one completes.
   * Cancelled occurrences neither count nor end the run. Pruned jobs are
   * not counted.
   */
  failures: number;
}

/** A job {@linkcode Store.jobsRescue} sent back or discarded. */
export interface RescuedJob {
  id: number;
  queue: string;
  /** The node whose lease expired (the job's `attempted_by`). */
  node: string;
  /** The attempt that node had; a rescued job's next claim is attempt `attempt + 1`. */
  attempt: number;
  maxAttempts: number;
  /** `available` (it runs again) or `discarded` (no attempt left). */
  state: "available" | "discarded";
}

/** A row of `leaders`: who holds a role, or held it last. */
export interface LeaderRow {
  name: string;
  /** The holder; null once released on a clean stop. */
  node: string | null;
  fence: number;
  /** When the holder's hold ends unless renewed, in the holder's clock. */
  expiresAt: number;
  acquiredAt: number;
}

/** A row of `schedules`: the stored state of one schedule id. */
export interface ScheduleRow {
  id: string;
  tenant: string | null;
  enabled: boolean;
  disabledReason: string | null;
  disabledBy: string | null;
  disabledAt: number | null;
  definitionHash: string | null;
  /**
   * The definition as last synced (the schedule's JSON), so the views can
   * show what the daemon runs while the file has errors; null when none was
   * given (an older daemon, or a row made by an operator's action).
   */
  definition: string | null;
  /** The recovery point: every occurrence at or before it has been planned. */
  lastPlannedFor: number | null;
  lastStartedAt: number | null;
  lastCompletedAt: number | null;
  misfires: number;
  lastMisfireFor: number | null;
  createdAt: number;
  updatedAt: number;
}

/** What {@linkcode Store.workflowStart} takes. */
export interface WorkflowStartParams {
  /** The compiled definition; the run keeps it, so it advances without the configuration. */
  definition: CompiledWorkflow;
  /** The run's input, as JSON text (already serialized and size-checked). */
  input: string;
  tenant: string | null;
  /**
   * The start's idempotency key (a schedule occurrence's identity, or the
   * caller's): a second start with the same key returns the first run.
   */
  key: string | null;
  now: number;
  /** Largest serialized args of a step's job. @default 256 KiB */
  argsLimit?: number;
}

/** Filters of {@linkcode Store.workflowsList}. */
export interface WorkflowFilter {
  state?: RunState | RunState[];
  workflow?: string;
  /** Only this tenant's runs (in the statement's WHERE): a tenant principal's scope. */
  tenant?: string;
  /** @default 100 */
  limit?: number;
  /** Newest first unless false. @default true */
  desc?: boolean;
  /** Keyset paging: runs past this id in the listing order. */
  after?: number;
}

/** What an operator's cancel or retry of a run did. */
export interface WorkflowActionResult {
  /** The run's state before the action. */
  was: RunState;
  /** The run's state after it. */
  state: RunState;
  /** The jobs the action cancelled or made runnable again. */
  jobs: number[];
}

/** Which job attempt holds an ingest run: every write of a run is fenced by it. */
export interface IngestLease {
  runId: number;
  jobId: number;
  /** The attempt's fence: the write happens only while the job is executing with it. */
  fence: number;
}

/** Filters of {@linkcode Store.ingestRunsList}; newest first. */
export interface IngestRunFilter {
  pipeline?: string;
  /** Only this tenant's runs (in the statement's WHERE): a tenant principal's scope. */
  tenant?: string;
  state?: IngestRunState;
  limit?: number;
  /** Only runs with a smaller id (the next page, newest first). */
  before?: number;
}

/** Filters of {@linkcode Store.ingestDropsList}; newest first. */
export interface IngestDropFilter {
  /** Only this pipeline's drops; every pipeline's when not given. */
  pipeline?: string;
  /** Only the drops of this tenant's runs (in the statement's WHERE). */
  tenant?: string;
  reason?: string;
  runId?: number;
  limit?: number;
  /** Only drops with a smaller id (the next page). */
  before?: number;
}

/** Params of {@linkcode Store.reportRunCreate}: the run's request, and its job made in the same transaction. */
export type ReportRunCreateParams =
  & Pick<
    ReportRun,
    "report" | "jobId" | "tenant" | "actor" | "roles" | "params" | "sort" | "format"
  >
  & {
    now: number;
    /**
     * The report's `max_concurrent`: nothing is written, and the active runs
     * are returned, when this many runs of the report are queued or running.
     */
    maxConcurrent: number;
  };

/** Params of {@linkcode Store.reportRunFinish}. */
export interface ReportRunFinishParams {
  lease: IngestLease;
  state: Extract<ReportRunState, "completed" | "failed" | "cancelled">;
  rows: number;
  bytes: number;
  output: string | null;
  storageKey: string | null;
  error: string | null;
  limit: string | null;
  expiresAt: number | null;
  now: number;
}

/** Filters of {@linkcode Store.reportRunsList}; newest first. */
export interface ReportRunFilter {
  report?: string;
  tenant?: string;
  state?: ReportRunState;
  limit?: number;
  /** Only runs with a smaller id (the next page, newest first). */
  before?: number;
}

/** Params of {@linkcode Store.ingestRunOpen}. */
export interface IngestRunOpenParams {
  pipeline: string;
  hash: string;
  jobId: number;
  fence: number;
  trigger: IngestRun["trigger"];
  now: number;
}

/** Params of {@linkcode Store.ingestChunkCommit}. */
export interface IngestChunkCommitParams {
  lease: IngestLease;
  pipeline: string;
  delta: ChunkDelta;
  pending: number;
  cursor: string;
  drops: NewDrop[];
  failures: NewFailure[];
  cleared: string[];
  now: number;
}

/** Params of {@linkcode Store.ingestRunFinish}. */
export interface IngestRunFinishParams {
  lease: IngestLease;
  state: Exclude<IngestRunState, "running">;
  error: string | null;
  pending: number;
  now: number;
}

/** Params of {@linkcode Store.ingestDropsPrune}. */
export interface IngestDropsPruneParams {
  before: { pipeline: string; before: number }[];
  otherwise: number;
  limit: number;
}

/** A drop with the full record text when it was kept (null when it was too long). */
export type IngestDropWithRecord = IngestDrop & { record: string | null };

/** A lease a node holds on an executing job. */
export interface Lease {
  id: number;
  fence: number;
}

/**
 * The store the kernel needs. `Tx` is the adapter's transaction type, which
 * also exposes its native connection so callers can write their own rows in
 * the same transaction.
 */
export interface Store<Tx extends StoreTx = StoreTx>
  extends
    StoreJobs,
    StoreCounts,
    StoreSettings,
    StoreFlow,
    StoreNodes,
    StoreSchedules,
    StoreWorkflows,
    StoreIngest,
    StoreReports,
    StorePrincipals,
    StoreSessions,
    StoreBulk,
    StoreWorkItems,
    StoreBulkRequests,
    StoreTotp {
  /** `sqlite` or `postgres`: for messages and metrics, never for branching in the kernel. */
  readonly kind: string;

  /** Where the store lives, credentials removed: for messages. */
  readonly location: string;

  /** Applies pending migrations; refuses a database newer than this program. */
  migrate(params: { now: number }): Promise<MigrationReport>;

  /**
   * Readies a store already at this program's schema without writing to it
   * (connection settings, prepared statements): what opening for reading
   * needs instead of `migrate()`. A schema that is not this program's is a
   * `SchemaTooOldError` or `SchemaTooNewError`, and nothing is changed.
   */
  prepare(): Promise<void>;

  /**
   * The schema version the database is at (0 when it was never migrated);
   * reads only, so it works on a store opened without migrating.
   */
  schemaVersion(): Promise<number>;

  /**
   * The migrations this program knows that the database has not applied,
   * in order; reads only. A database newer than this program is a
   * `SchemaTooNewError`.
   */
  pendingMigrations(): Promise<MigrationInfo[]>;

  /** Releases the connection. Further calls fail. */
  close(): Promise<void>;

  /**
   * Runs `fn` inside one write transaction: committed when `fn` resolves,
   * rolled back when it throws (the error is rethrown). `tx` offers the
   * methods of {@linkcode STORE_TX_METHODS}, run inside it.
   *
   * Transactions do not nest. Inside `fn`, call `tx`, not the store: the
   * store's own methods (and `transaction`) run outside this transaction,
   * and on SQLite they wait for it to end, so awaiting one inside `fn`
   * never returns; on PostgreSQL they run on another connection and wait
   * for the rows this transaction locked. A call on `tx` that fails leaves
   * the transaction to be rolled back: let its error through (PostgreSQL
   * refuses every later statement of a transaction after a failed one).
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;

  /**
   * Calls `listener` soon after another connection or process commits a
   * change, so idle producers wake without waiting for their timer. Returns
   * the unsubscribe function.
   */
  onExternalChange(listener: () => void): () => void;
}

/** What a claim ({@linkcode StoreJobs.jobsClaim}) is given. */
export interface ClaimParams {
  queue: string;
  node: string;
  limit: number;
  now: number;
  leaseMs: number;
  results?: JobResult[];
  /** Claim jobs due by this instant instead of `now` (test drains of scheduled jobs). */
  dueBy?: number;
  /**
   * The queue's flow limits as this node's file or library declares them;
   * each limit stored for the queue (`queueLimitsSet`) overrides its
   * counterpart. A limited queue, or one holding tenants' jobs, is claimed
   * within its limits and round robin across its keys (see
   * src/store/lifecycle/flow.ts).
   */
  flow?: FlowLimits | null;
}

/** What a claim ({@linkcode StoreJobs.jobsClaim}) took and wrote. */
export interface ClaimResult {
  jobs: ClaimedJob[];
  report: RecordReport;
  /**
   * A flow limit held runnable jobs back from this claim's free slots:
   * claim again soon, since slots freed on other nodes and tokens refilled
   * over time wake nobody.
   */
  held?: boolean;
  /**
   * A limit every node shares (`global`, a rate) applies to the queue: a
   * job claimed ahead of a free slot would hold a share other nodes could
   * use, so the claimer asks for its free slots only.
   */
  shared?: boolean;
}

/** Jobs: insert, claim, record, leases, the lifecycle's maintenance and operator actions, and reads of jobs and attempts. */
export interface StoreJobs {
  /** Inserts jobs in one statement; unique conflicts return the existing id. */
  jobsInsert(params: { jobs: NewJob[]; now: number }): Promise<InsertResult[]>;
  /**
   * Records `results` (when given), then claims up to `limit` runnable jobs of
   * `queue` for `node`, all in one write transaction. The claim is one
   * conditional write; only the rows it reports are claimed. A paused queue
   * claims nothing.
   */
  jobsClaim(params: ClaimParams): Promise<ClaimResult>;
  /**
   * Writes the end of attempts, each only if its lease (id, executing, node,
   * fence) still holds; a result whose lease is gone is reported as lost and
   * writes nothing, not even its attempt row.
   */
  jobsRecord(params: { node: string; now: number; results: JobResult[] }): Promise<RecordReport>;
  /**
   * Gives back jobs `node` claimed but never started (shutdown with a
   * prefetched buffer): `available` again, the attempt not used up. Returns
   * the leases released.
   */
  jobsRelease(params: { node: string; leases: Lease[] }): Promise<Lease[]>;
  /**
   * Extends the leases `node` holds; returns those it no longer holds (the
   * job was cancelled by an operator, rescued, or claimed again).
   */
  jobsRenew(params: {
    node: string;
    leases: Lease[];
    now: number;
    leaseMs: number;
  }): Promise<{ lost: Lease[] }>;
  /** Which of `leases` `node` no longer holds; reads only. */
  jobsLeasesLost(params: { node: string; leases: Lease[] }): Promise<Lease[]>;
  /**
   * Moves due `scheduled` and `retryable` jobs to `available`. Returns how
   * many moved per queue and the earliest instant a remaining one is due.
   */
  jobsStage(params: { now: number; limit: number }): Promise<{
    staged: number;
    queues: string[];
    nextAt: number | null;
  }>;
  /**
   * Rescues jobs whose lease expired: back to `available` while attempts
   * remain, else `discarded`, each with an `orphaned` attempt row.
   */
  jobsRescue(params: { now: number; limit: number }): Promise<{
    rescued: number;
    discarded: number;
    queues: string[];
    /** Each job rescued or discarded, with the node whose lease expired: for the log. */
    jobs: RescuedJob[];
  }>;
  /**
   * Deletes up to `limit` final jobs (and their attempts) that became final
   * before the cutoffs, except occurrences of the schedules in `except`
   * (those keep to their own retention, see `jobsPruneSchedule`).
   */
  jobsPrune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
    except?: string[];
  }): Promise<number>;
  /**
   * Counts what `jobsPrune` with the same cutoffs and `jobsPruneSchedule`
   * for each of `schedules` would delete, without a limit; reads only.
   */
  jobsPrunable(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    schedules?: { scheduleId: string; before: number }[];
  }): Promise<number>;
  /** Deletes up to `limit` final occurrences of one schedule (and their attempts) that became final before `before`. */
  jobsPruneSchedule(params: { scheduleId: string; before: number; limit: number }): Promise<number>;
  /**
   * Cancels jobs that are not final (an operator action). An executing job's
   * lease is broken: its node aborts it on the next heartbeat. `actor`, who
   * cancels them, is named on the audit trail of a workflow run whose step
   * this fails.
   */
  jobsCancel(params: JobsStopParams): Promise<number[]>;
  /**
   * Makes final or waiting jobs run again now (an operator's retry):
   * `retryable`, `scheduled`, `discarded`, `cancelled` and `completed` jobs
   * become `available` with `scheduled_at = now`, and jobs whose attempts are
   * used up get one more (`max_attempts = attempt + 1`). Executing and
   * available jobs are left alone. A job given in `definitions` runs that
   * definition from now on (worker, args, meta, tags, queue, priority, max
   * attempts), written in the same transaction. Returns the ids changed.
   */
  jobsRetry(params: {
    ids: number[];
    now: number;
    definitions?: ReadonlyMap<number, JobDefinition>;
  }): Promise<number[]>;
  /**
   * Discards jobs that are not final (an operator action), recording
   * `reason` in their errors. An executing job's lease is broken as with
   * cancel; `actor` is named as with cancel. Returns the ids changed.
   */
  jobsDiscard(params: JobsStopParams): Promise<number[]>;
  /**
   * Replays one job (usually an occurrence): whatever its state, it becomes
   * `available` now with one more attempt allowed, keeping its id and
   * occurrence identity; its next attempt row is recorded with kind
   * `replay`, `actor` and `reason`. An executing job is refused unless
   * `force`, which breaks the running attempt's lease first. With
   * `definition`, the job runs that definition from now on, written in the
   * same transaction. Returns the state it was in, or null when no such job
   * exists.
   */
  jobReplay(params: {
    id: number;
    now: number;
    actor: string;
    reason: string;
    force: boolean;
    definition?: JobDefinition;
  }): Promise<{ replayed: boolean; was: JobState } | null>;
  /** One job by id, or null. */
  jobGet(params: { id: number }): Promise<Job | null>;
  /**
   * Jobs matching a filter, ordered by id. Page with `limit` and `after` (the
   * last id of the previous page): each page costs about the same at any
   * depth. An unknown state or an `after` that is not a whole number is a
   * RangeError naming it.
   */
  jobsList(params: JobFilter): Promise<Job[]>;
  /**
   * Jobs still `executing` whose lease expired before `now` (no node renewed
   * it and none has rescued it yet: stuck), the longest expired first, at
   * most `limit`; with `tenant`, only that tenant's (in the statement).
   * Reads the index of executing jobs by lease expiry only. A `now` or
   * `limit` that is not a whole number is a RangeError naming it.
   */
  jobsLeaseExpired(params: { now: number; limit: number; tenant?: string }): Promise<Job[]>;
  /**
   * How many jobs match `params`: what every page of {@linkcode jobsList}
   * with the same filters holds together. Filters of a queue and states
   * only are answered from the counts {@linkcode jobsCount} reads; a single
   * state of its own index with other filters counts that index; a search
   * reads every row its other filters leave (bound it with `above`). With
   * `atMost`, counting stops there: the answer is the lesser of the count
   * and `atMost`. An unknown state, or an `above` or `atMost` that is not a
   * whole number, is a RangeError naming it.
   */
  jobsCountMatching(params: JobMatch, options?: { atMost?: number }): Promise<number>;
  /**
   * The distinct workers of the jobs in the store, by name. It reads every
   * row (no index has the worker first): for a refusal's suggestions, not
   * for a hot path.
   */
  workersList(): Promise<string[]>;
  /** The attempts of one job, oldest first. */
  attemptsList(params: { jobId: number }): Promise<Attempt[]>;
}

/** The job counts and the figures made from them. */
export interface StoreCounts {
  /**
   * Counts by queue and state, above zero; with `state`, only that state.
   * Cheap at any size: the store keeps these counts as it writes (see
   * `src/store/job_counts.ts`), so nothing is counted at the call.
   */
  jobsCount(params: { queue?: string; state?: JobState }): Promise<
    { queue: string; state: JobState; count: number }[]
  >;
  /**
   * The earliest `scheduled_at` of an `available` job in each of `queues`
   * (queues with none are left out): how long the head of the queue has
   * waited. Ten index seeks a queue (one per priority, 0-9, on the index
   * the claim reads), so cheap at any backlog; reads only.
   */
  queuesOldestAvailable(params: { queues: string[] }): Promise<
    { queue: string; scheduledAt: number }[]
  >;
  /**
   * Per queue and per `bucketMs` bucket of [since, until): jobs completed in
   * it, and attempts that failed in it (outcome retryable or discarded).
   * Buckets with neither are left out. Reads indexes only.
   *
   * A bucket is named by its start, `since + k * bucketMs`; the last one may
   * be cut short by `until`. A job counts where its current `completed_at`
   * falls (a completed job retried and completed again counts once, at its
   * latest completion). Ordered by queue, then bucket. A RangeError names a
   * bound that is not a whole number of ms, `bucketMs < 1`, or `until < since`.
   */
  jobsThroughput(params: { since: number; until: number; bucketMs: number }): Promise<
    { queue: string; bucket: number; completed: number; failed: number }[]
  >;
  /**
   * Discarded jobs grouped by worker, schedule and the first line of their
   * last error (for triage), largest groups first, at most `limit` groups.
   * `latestId` and `latestAt` are the group's most recently discarded job
   * and when. Only the newest 10,000 discarded jobs are grouped, so the cost
   * stays bounded however many dead letters pile up; counts are of those.
   */
  jobsDeadLetters(params: { limit: number }): Promise<
    {
      worker: string;
      scheduleId: string | null;
      error: string;
      count: number;
      latestId: number;
      latestAt: number;
    }[]
  >;
}

/** A queue's stored flow limits (`jobs queues set`), each overriding the file's when set. */
export interface QueueLimitsRow extends StoredLimits {
  name: string;
  updatedAt: number;
}

/** Flow limits an operator stored per queue; every claim of the queue reads them. */
export interface StoreFlow {
  /** Stores the queue's limits (a row with none set is removed). */
  queueLimitsSet(params: { name: string; limits: StoredLimits; now: number }): Promise<void>;
  /** Every queue with stored limits, by name. */
  queueLimitsList(): Promise<QueueLimitsRow[]>;
}

/** Operator settings, queue switches and the audit trail. */
export interface StoreSettings {
  /** Reads a setting, or null. */
  settingGet(params: { key: string }): Promise<unknown>;
  /** Deletes a setting (no error when it is absent). */
  settingDelete(params: { key: string }): Promise<void>;
  /** Writes a setting. */
  settingSet(params: { key: string; value: unknown; now: number }): Promise<void>;
  /** Pauses or resumes a queue for every process that shares the store. */
  queuePause(params: { name: string; paused: boolean; now: number }): Promise<void>;
  /** All queues with a stored row. */
  queuesList(): Promise<QueueRow[]>;
  /** Records an operator's action in `audit`. */
  auditRecord(params: {
    at: number;
    actor: string;
    action: string;
    target: string;
    reason: string | null;
    details?: Record<string, unknown>;
  }): Promise<void>;
  /** The audit trail of one target (a queue, `schedule:<id>`, `job:<id>`), oldest first. */
  auditList(params: { target: string }): Promise<AuditRow[]>;
  /**
   * A page of the audit trail, newest first (by id): of one target when
   * given; only rows past `after` (ids below it, keyset paging); with
   * `tenant`, only rows whose target is a job (`job:<id>`) of that tenant,
   * decided in the statement.
   */
  auditPage(params: AuditPageParams): Promise<AuditRow[]>;
}

/** Nodes (heartbeats) and leadership. */
export interface StoreNodes {
  /** Registers or refreshes a node's heartbeat, with where it runs (null: not stated). */
  nodeBeat(params: {
    node: string;
    queues: Record<string, number>;
    environment?: string | null;
    now: number;
  }): Promise<void>;
  /** Removes a node's row (clean shutdown). */
  nodeDelete(params: { node: string }): Promise<void>;
  /** Removes nodes whose heartbeat is older than `before`. */
  nodesExpire(params: { before: number }): Promise<number>;
  /** All registered nodes. */
  nodesList(): Promise<NodeRow[]>;
  /**
   * Takes or renews the role `name` for `node` until `now + ttlMs`, in one
   * conditional write: it succeeds when the row is missing, released,
   * expired (`expires_at <= now`) or already `node`'s. A renewal of an
   * unexpired hold keeps the fence; any other take raises it. Racing
   * callers: exactly one holds the role afterwards. Returns the row as it
   * is (the holder's when the take did not succeed).
   */
  leaderTake(params: { name: string; node: string; now: number; ttlMs: number }): Promise<
    LeaderState
  >;
  /**
   * Gives up the role `name` if `node` still holds it with `fence` (a clean
   * stop), so another node takes it at once; returns whether it did.
   */
  leaderRelease(params: { name: string; node: string; fence: number }): Promise<boolean>;
  /** Every role's row (`maintenance`: who runs the maintenance passes), by name; reads only. */
  leadersList(): Promise<LeaderRow[]>;
}

/** Schedules: their rows, their planning and their switch. */
export interface StoreSchedules {
  /**
   * Makes sure a row exists for each schedule id (new ids start enabled,
   * with no recovery point) and records each definition's hash, and the
   * definition itself when given (else the stored one stays while the hash
   * is unchanged). Rows of ids not given are left as they are: their
   * history stays readable; with `complete` (a daemon's whole file), their
   * stored definitions are cleared, since nothing runs them any more.
   */
  schedulesSync(params: {
    schedules: { id: string; hash: string; tenant: string | null; definition?: string | null }[];
    /** The schedules given are every one in force. @default false */
    complete?: boolean;
    now: number;
  }): Promise<void>;
  /**
   * Schedule rows, all or those with the given ids, by id; with `tenant`,
   * only that tenant's (the statement's WHERE says so: a tenant's
   * principal never reads another's rows).
   */
  schedulesList(params: { ids?: string[]; tenant?: string }): Promise<ScheduleRow[]>;
  /**
   * Each schedule's last outcome and its current run of failures, read from
   * its occurrence jobs (a schedule with no final occurrence is left out);
   * with `tenant`, only that tenant's schedules (in the WHERE, as
   * `schedulesList`); reads only. See {@linkcode ScheduleOutcome}.
   */
  schedulesOutcomes(params: { ids?: string[]; tenant?: string }): Promise<ScheduleOutcome[]>;
  /**
   * Plans one schedule atomically: reads its row and its running and waiting
   * occurrences, calls `plan` (pure, synchronous) with them, and writes the
   * decision (occurrence rows, cancelled ones, misfire counts, recovery
   * point) in the same write transaction, so racing planners cannot both
   * act on the same gap.
   */
  schedulePlan(params: {
    id: string;
    now: number;
    plan: (ctx: PlanContext) => PlanDecision;
  }): Promise<{ inserted: InsertResult[]; cancelled: number; decision: PlanDecision | null }>;
  /** Enables or disables a schedule, with who and why; stored, so it survives restarts and reloads. */
  scheduleSetEnabled(params: {
    id: string;
    enabled: boolean;
    reason: string | null;
    actor: string | null;
    now: number;
  }): Promise<boolean>;
}

/** Workflow runs, their steps and actions. */
export interface StoreWorkflows {
  /**
   * Starts a run of `definition`: its row and the jobs of its first steps
   * (those with no dependencies), in one transaction. With a `key` already
   * used, returns that run (`duplicate`) and writes nothing. `queues` are
   * those that got an available job.
   */
  workflowStart(params: WorkflowStartParams): Promise<{
    id: number;
    duplicate: boolean;
    queues: string[];
  }>;
  /**
   * One run with its definition and step rows (steps, items, compensations),
   * or null; with `tenant`, null also when the run is another tenant's (or
   * none's): the tenant is in the statement's WHERE.
   */
  workflowGet(params: { id: number; tenant?: string }): Promise<WorkflowRunDetail | null>;
  /** Runs matching a filter, newest first; an unknown state is a RangeError naming it. */
  workflowsList(params: WorkflowFilter): Promise<WorkflowRun[]>;
  /** Runs counted by definition and state (for `/metrics`). */
  workflowsCount(): Promise<{ workflow: string; state: RunState; count: number }[]>;
  /** Compensation rows counted by definition and state (for `/metrics`). */
  workflowCompensationsCount(): Promise<{ workflow: string; state: string; count: number }[]>;
  /**
   * An operator's cancel: the run's waiting step jobs are cancelled; a plain
   * run ends `cancelled` once its executing steps finish, a saga runs its
   * compensations. Null when no such run; a final run is left as it is
   * (`was` = `state`).
   */
  workflowCancel(params: { id: number; now: number; reason: string }): Promise<
    WorkflowActionResult | null
  >;
  /**
   * An operator's retry of a `failed` run: its discarded or cancelled steps
   * (or the compensation that was discarded) run again, and the run
   * resumes (`running`, or `compensating`). Steps cancelled because of them
   * wait for them again. Null when no such run; a run that is not `failed`
   * is left as it is (`jobs` empty).
   */
  workflowRetry(params: { id: number; now: number }): Promise<WorkflowActionResult | null>;
  /**
   * Deletes up to `limit` final runs (and their step rows) that finished
   * before the cutoff of their kind of end: `completed` runs by the
   * completed cutoff, `compensated` and `cancelled` ones by the cancelled
   * cutoff, `failed` ones (dead letters) by the discarded cutoff. A missing
   * cutoff keeps them. Returns how many runs it deleted.
   */
  workflowsPrune(params: {
    before: Partial<Record<"completed" | "cancelled" | "discarded", number>>;
    limit: number;
  }): Promise<number>;
  /** The resume position a step's job last wrote (JSON text), or null. */
  workflowCursorGet(params: { jobId: number }): Promise<string | null>;
  /**
   * Writes a step's resume position (JSON text) if the job's lease (id,
   * executing, fence) still holds; returns whether it did.
   */
  workflowCursorSet(params: { jobId: number; fence: number; value: string; now: number }): Promise<
    boolean
  >;
}

/** Ingest runs of pipelines, their drops and failures. */
export interface StoreIngest {
  /**
   * The run of a `jobs.ingest` job: the row already made for this job (a
   * retry resumes it, with its counts and cursor), else a new `running`
   * row. Null, and nothing written, when the job is not executing with
   * `fence` (the lease is lost).
   */
  ingestRunOpen(params: IngestRunOpenParams): Promise<IngestRun | null>;
  /** How many times each of `records` of `pipeline` has failed so far (absent: never). */
  ingestFailuresGet(params: { pipeline: string; records: string[] }): Promise<Map<string, number>>;
  /**
   * Commits one chunk in one transaction: adds `delta` to the run's counts,
   * sets its `pending` and `cursor`, inserts the drops, raises the failure
   * count of each of `failures` by one (keeping its last error and
   * excerpt), and deletes the failure rows of `cleared` (records that
   * passed, or were dropped as poison). False, and nothing written, when
   * the lease is lost.
   */
  ingestChunkCommit(params: IngestChunkCommitParams): Promise<boolean>;
  /** Ends a run in `state` (fenced as the commits are); false when the lease is lost. */
  ingestRunFinish(params: IngestRunFinishParams): Promise<boolean>;
  ingestRunGet(params: { id: number }): Promise<IngestRun | null>;
  ingestRunByJob(params: { jobId: number }): Promise<IngestRun | null>;
  /** Runs, newest first; a `running` row whose job was discarded or cancelled reads as `failed` or `cancelled`. */
  ingestRunsList(params: IngestRunFilter): Promise<IngestRun[]>;
  /**
   * Per pipeline that has runs: its run count, newest run, last completed
   * run and drops by reason since `since`; with `tenant`, of that tenant's
   * runs only (in the statement's WHERE).
   */
  ingestSummaries(params: { since: number; tenant?: string }): Promise<PipelineSummary[]>;
  ingestDropsList(params: IngestDropFilter): Promise<IngestDrop[]>;
  /**
   * One drop with the full record text when it was kept (null when it was
   * too long); with `tenant`, null unless the drop's run is that tenant's.
   */
  ingestDropGet(params: { id: number; tenant?: string }): Promise<IngestDropWithRecord | null>;
  /** Marks a drop replayed by the `jobs.ingest` job `jobId`; false when there is no such drop. */
  ingestDropReplayed(params: { id: number; jobId: number; now: number }): Promise<boolean>;
  /** Deletes up to `limit` drops older than each pipeline's `before` (and `otherwise` for pipelines not listed). */
  ingestDropsPrune(params: IngestDropsPruneParams): Promise<number>;
}

/** Report runs. */
export interface StoreReports {
  /**
   * Makes a `queued` run for the `jobs.report` job `jobId` (call it in the
   * transaction that inserts the job), unless `maxConcurrent` runs of the
   * report are already queued or running: then it writes nothing and
   * returns their ids. Counted and written under one lock, so two requests
   * at once cannot both pass on either store.
   */
  reportRunCreate(
    params: ReportRunCreateParams,
  ): Promise<{ run: ReportRun } | { active: number[] }>;
  /**
   * Marks the run of the `jobs.report` job `jobId` `running` (its first start keeps `started_at`; a retry
   * starts again from nothing), fenced by the job's lease; null, and
   * nothing written, when the lease is lost.
   */
  reportRunStart(params: { jobId: number; fence: number; now: number }): Promise<ReportRun | null>;
  /** Records rows and bytes written so far; false when the lease is lost. */
  reportRunProgress(
    params: { lease: IngestLease; rows: number; bytes: number; now: number },
  ): Promise<
    boolean
  >;
  /** Ends a run (fenced as the progress is); false when the lease is lost. */
  reportRunFinish(params: ReportRunFinishParams): Promise<boolean>;
  /**
   * One run; a `queued`/`running` row whose job ended without it reads as that job's end.
   * With `tenant`, only a run of that tenant (in the statement): another's reads as none.
   */
  reportRunGet(params: { id: number; tenant?: string }): Promise<ReportRun | null>;
  reportRunsList(params: ReportRunFilter): Promise<ReportRun[]>;
  /** Runs whose output expired at `now` (oldest expiry first), for the pruner. */
  reportRunsExpired(params: { now: number; limit: number }): Promise<ReportRun[]>;
  /**
   * Runs that ended without a stored output and finished before `before`
   * (failed and cancelled runs, kept for `jobs reports` until then).
   */
  reportRunsEndedBefore(params: { before: number; limit: number }): Promise<ReportRun[]>;
  /** Deletes a run's row (after its output is removed); false when there is none. */
  reportRunDelete(params: { id: number }): Promise<boolean>;
}

/** The two kinds of principal: a person (signs in with a password) or a token (a program's secret). */
export type PrincipalKind = "person" | "token";

/**
 * A row of `principals` as the store hands it out: everything but the
 * secret's hash, which only {@linkcode StorePrincipals.principalSecretHash}
 * returns (to the code that verifies a password).
 */
export interface PrincipalRow {
  kind: PrincipalKind;
  /** Unique per kind. */
  name: string;
  /** A person's name as shown (null: the name). */
  displayName: string | null;
  /** The roles held, in the order given. */
  roles: string[];
  /** The tenant the principal is scoped to, or null: installation-wide. */
  tenant: string | null;
  disabled: boolean;
  /** When a token stops working (null: never; people have none). */
  expiresAt: number | null;
  /** Who created it (the audit's actor). */
  createdBy: string;
  createdAt: number;
  updatedAt: number;
  /** A person's last sign-in, a token's last use; null before the first. */
  lastUsedAt: number | null;
}

/** A principal to insert: its row and its secret's hash (see src/admin/secrets.ts). */
export interface NewPrincipal {
  kind: PrincipalKind;
  name: string;
  displayName?: string | null;
  roles: string[];
  tenant?: string | null;
  /** The hash of the password or token secret, in the self-describing form the secrets module writes. */
  secretHash: string;
  expiresAt?: number | null;
  createdBy: string;
}

/** What `principalUpdate` changes: only the fields given. */
export interface PrincipalChange {
  kind: PrincipalKind;
  name: string;
  displayName?: string | null;
  roles?: string[];
  tenant?: string | null;
  disabled?: boolean;
  secretHash?: string;
  now: number;
}

/**
 * People and tokens. No method hands out a secret's hash but
 * {@linkcode principalSecretHash}, named for it; a token is found by the
 * hash of the secret presented ({@linkcode principalBySecretHash}).
 */
export interface StorePrincipals {
  /** Inserts a principal; false, and nothing written, when one of its kind and name exists. */
  principalInsert(params: { principal: NewPrincipal; now: number }): Promise<boolean>;
  /** One principal by kind and name, or null. */
  principalGet(params: { kind: PrincipalKind; name: string }): Promise<PrincipalRow | null>;
  /**
   * Every principal (of `kind` when given), by kind then name (byte order);
   * with `after`, only names after it (a page's keyset, meant with `kind`);
   * at most `limit` when given.
   */
  principalsList(params: { kind?: PrincipalKind; after?: string; limit?: number }): Promise<
    PrincipalRow[]
  >;
  /** Changes the fields given and `updated_at`; the row after, or null when there is none. */
  principalUpdate(params: PrincipalChange): Promise<PrincipalRow | null>;
  /** Deletes a principal; false when there is none. */
  principalDelete(params: { kind: PrincipalKind; name: string }): Promise<boolean>;
  /** Records a sign-in or a use at `now` (`last_used_at`); false when there is no such principal. */
  principalUsed(params: { kind: PrincipalKind; name: string; now: number }): Promise<boolean>;
  /**
   * The stored hash of a principal's secret, with its row, for the one
   * caller that verifies a password against it; null when there is none.
   */
  principalSecretHash(params: { kind: PrincipalKind; name: string }): Promise<
    { principal: PrincipalRow; secretHash: string } | null
  >;
  /**
   * The principal of `kind` whose secret hashes to `secretHash`, or null. A
   * token is found by an index on the hash of its secret: the comparison
   * the database makes is on a SHA-256 of the secret, which tells a caller
   * timing it nothing about the secret.
   */
  principalBySecretHash(params: { kind: PrincipalKind; secretHash: string }): Promise<
    PrincipalRow | null
  >;
}

/**
 * A web console session as the store keeps it (src/admin/sessions.ts):
 * never its id, only the id's SHA-256 (hex).
 */
export interface SessionRow {
  /** The SHA-256 (lowercase hex) of the session's opaque id. */
  idHash: string;
  /** The person signed in. */
  person: string;
  createdAt: number;
  /** The last request the session made (the idle timeout counts from it). */
  lastSeenAt: number;
  /** When the session ends whatever it does (the absolute timeout). */
  expiresAt: number;
  /** The source address it signed in from, when known. */
  address: string | null;
  /** The browser's user agent, bounded (src/admin/sessions.ts), when given. */
  userAgent: string | null;
}

/**
 * The web console's sessions: each found by the hash of its id, listed by
 * person, touched as it is used, deleted one by one, per person (when the
 * person is disabled or removed) or once expired.
 */
export interface StoreSessions {
  /** Inserts a session; false, and nothing written, when its hash exists. */
  sessionInsert(params: { session: SessionRow }): Promise<boolean>;
  /** The session whose id hashes to `idHash`, or null. */
  sessionGet(params: { idHash: string }): Promise<SessionRow | null>;
  /** Records a use at `now` (`last_seen_at`); false when there is no such session. */
  sessionTouch(params: { idHash: string; now: number }): Promise<boolean>;
  /** Deletes one session; false when there is none. */
  sessionDelete(params: { idHash: string }): Promise<boolean>;
  /** Every session (of `person` when given), newest first (then by hash), at most `limit`. */
  sessionsList(params: { person?: string; limit?: number }): Promise<SessionRow[]>;
  /** Deletes every session of `person`; how many. */
  sessionsDeleteFor(params: { person: string }): Promise<number>;
  /**
   * Deletes the sessions that have ended: past their `expires_at` at `now`,
   * or, when `idleBefore` is given, last seen before it; how many.
   */
  sessionsPrune(params: { now: number; idleBefore?: number }): Promise<number>;
}

/** What a bulk run does to each job of its snapshot. */
export type BulkAction = "retry" | "cancel" | "discard";

/** Where a bulk run is: walking its snapshot, or ended one of three ways. */
export type BulkRunState = "running" | "completed" | "aborted" | "failed";

/**
 * A bulk action over everything a filter matched (src/admin/bulk.ts): the
 * snapshot of job ids taken at confirmation, walked by one `jobs.bulk` job.
 */
export interface BulkRun {
  id: number;
  action: BulkAction;
  /** The filter as the person gave it, for display: the snapshot says which jobs. */
  filter: Record<string, unknown>;
  /** How many ids the snapshot holds. */
  total: number;
  /** How many of them the walk has been through (changed, skipped or gone). */
  done: number;
  changed: number;
  skipped: number;
  state: BulkRunState;
  /** Who confirmed it (each job's own audit row names them too). */
  actor: string;
  reason: string | null;
  /** The scope the snapshot was taken in and each chunk is re-read in (null: installation-wide). */
  tenant: string | null;
  createdAt: number;
  finishedAt: number | null;
  abortRequested: boolean;
}

/** What `bulkRunCreate` takes: the run as confirmed, with its snapshot. */
export interface BulkRunCreateParams {
  action: BulkAction;
  filter: Record<string, unknown>;
  ids: readonly number[];
  actor: string;
  reason: string | null;
  tenant: string | null;
  now: number;
}

/**
 * Bulk runs: created with their snapshot, read in a tenant's scope (the
 * tenant in the statement), moved forward by their worker, asked to stop.
 */
export interface StoreBulk {
  /** Inserts a `running` run holding `ids` (done 0); the run as stored. */
  bulkRunCreate(params: BulkRunCreateParams): Promise<BulkRun>;
  /** One run; with `tenant`, only that tenant's (another's is null, as a missing one is). */
  bulkRunGet(params: { id: number; tenant?: string }): Promise<BulkRun | null>;
  /** The run's snapshot of job ids, in order, or null when there is no such run. */
  bulkRunSnapshot(params: { id: number }): Promise<number[] | null>;
  /** Runs newest first (of `tenant` when given), ids below `before` when given, at most `limit`. */
  bulkRunsList(params: { tenant?: string; before?: number; limit?: number }): Promise<BulkRun[]>;
  /**
   * Records a running run's progress (absolute counts); false, and nothing
   * written, when it is no longer running or `done` would go backwards (a
   * stale walker after a crash and a resume).
   */
  bulkRunProgress(
    params: { id: number; done: number; changed: number; skipped: number },
  ): Promise<boolean>;
  /** Asks a running run (of `tenant` when given) to stop between chunks; false when none is running. */
  bulkRunAbort(params: { id: number; tenant?: string }): Promise<boolean>;
  /** Ends a running run as `state` at `now`; false when it had already ended. */
  bulkRunFinish(
    params: { id: number; state: Exclude<BulkRunState, "running">; now: number },
  ): Promise<boolean>;
}

/** Whether an item still waits for a person (`open`) or was acted on (`done`). */
export type WorkItemState = "open" | "done";

/**
 * One item of a human work queue (`work_items`). Its claim is current only
 * while `claimExpiresAt` is after now: an expired claim is no claim, and the
 * next write that meets it clears it and records `expired`. The score kept is
 * the rule's value at age 0 (`score`) and what it gains per ms of age
 * (`scoreRate`); the score at an instant is `score + scoreRate * age`
 * (`scoreAt` in `src/workqueue/definition.ts`).
 */
export interface WorkItemRow {
  id: number;
  queue: string;
  key: string;
  tenant: string | null;
  data: unknown;
  /** Null for an item of an unscored queue: it is listed by `requestedAt`. */
  score: number | null;
  scoreRate: number | null;
  /** The inputs the score came from, as the data gave them (the age is derived). */
  inputs: Record<string, unknown> | null;
  ruleVersion: string | null;
  /** When it was first added: kept across re-adds, so it keeps its place. */
  requestedAt: number;
  updatedAt: number;
  state: WorkItemState;
  claimOwner: string | null;
  claimExpiresAt: number | null;
  /** Rises with every claim taken (never with a renewal by its owner). */
  claimFence: number;
  skippedBy: string | null;
  skippedUntil: number | null;
  /** The action taken on it, once done. */
  outcome: string | null;
  /** The job that runs the action. */
  actionJobId: number | null;
  /** That job's state now (null once pruned, or before an action). */
  actionState: JobState | null;
  doneBy: string | null;
  doneAt: number | null;
  doneReason: string | null;
}

/** What happened to an item: each claim, return and action, by whom. */
export type WorkItemEventKind =
  | "added"
  | "updated"
  | "rescored"
  | "claimed"
  | "released"
  | "expired"
  | "skipped"
  | "reassigned"
  | "broken"
  | "done";

/** One line of an item's history (`work_item_events`). */
export interface WorkItemEvent {
  id: number;
  itemId: number;
  at: number;
  /** Who: a person, or `jobs` for what the store did itself (an expired claim). */
  actor: string;
  kind: WorkItemEventKind;
  reason: string | null;
  /** The claim's fence the event concerns, where it concerns one. */
  fence: number | null;
  detail: Record<string, unknown>;
}

/**
 * One work queue's figures for `/metrics`, as the store holds them: its open
 * items and the request time of the oldest, the claims that ran out (the
 * `expired` entries of its items' histories) and its done items by the
 * action taken.
 */
export interface WorkQueueStats {
  queue: string;
  open: number;
  /** `requestedAt` of its oldest open item; null when none is open. */
  oldestOpenAt: number | null;
  /** Claims that expired (returned by the store, not released by their owner). */
  claimsExpired: number;
  /** Done items by the action taken (`outcome`). */
  done: Record<string, number>;
}

/** An item's score as the rule computed it when its inputs were given (see `WorkItemRow`). */
export interface WorkItemScore {
  score: number;
  rate: number;
  inputs: Record<string, unknown>;
  version: string;
}

/** How a work queue stands (see {@linkcode StoreWorkItems.workQueueStanding}). */
export interface WorkQueueStanding {
  open: number;
  /** Open items under a current claim. */
  claimed: number;
  /** Open items whose claim expired and was not cleared yet: back in the queue. */
  expired: number;
  /** When the oldest open item was requested; null when none is open. */
  oldestRequestedAt: number | null;
  /** Items done since `since`. */
  done: number;
  /** The median of their lead times (done - requested), in ms; null when none. */
  leadMedianMs: number | null;
}

/** Params of {@linkcode StoreWorkItems.workItemAdd}. */
export interface WorkItemAddParams {
  queue: string;
  key: string;
  tenant: string | null;
  data: unknown;
  /** Null for an unscored queue. */
  score: WorkItemScore | null;
  actor: string;
  now: number;
}

/**
 * The `audit` row a decision on a work item writes with its change, in the
 * same transaction (on PostgreSQL, the same statement), for an item the
 * caller does not know yet (`next`'s). The store completes it with the item
 * it took: the target `work:<queue>/<key>` ({@linkcode workItemTarget}),
 * and `key`, `fence` and `expiresAt` added to `details`.
 */
export interface WorkItemAudit {
  actor: string;
  action: string;
  /** Stored as given: the caller redacts it. */
  reason: string | null;
  details: Record<string, unknown>;
}

/** What "next" is given: whose press, when, for how long, and the audit row to write with it. */
export interface WorkItemNextParams {
  queue: string;
  /** Only this tenant's items. */
  tenant?: string;
  person: string;
  now: number;
  leaseMs: number;
  audit?: WorkItemAudit;
}

/** The audit trail's target of the work item `key` of `queue`. */
export function workItemTarget(queue: string, key: string): string {
  return `work:${queue}/${key}`;
}

/** Which item: its queue and key, in a tenant's scope when `tenant` is given. */
export interface WorkItemRef {
  queue: string;
  key: string;
  tenant?: string;
}

/** Why a write on an item changed nothing. */
export type WorkItemRefusal =
  /** No such item (in the scope). */
  | "missing"
  /** It was acted on already. */
  | "done"
  /** Another person holds a current claim on it. */
  | "held"
  /** An action on a `required` queue by a person without the current claim. */
  | "unclaimed"
  /** The claim's fence given is not the current one (a late action after the claim moved on). */
  | "stale";

/** What a write on an item did: the item as it is now, or why nothing changed (and the item as it is). */
export type WorkItemOutcome =
  | { ok: true; item: WorkItemRow }
  | { ok: false; why: WorkItemRefusal; item: WorkItemRow | null };

/** One queue's open items, as {@linkcode StoreWorkItems.workItemsSummary} counts them. */
export interface WorkQueueSummary {
  queue: string;
  open: number;
  claimed: number;
  /** The oldest open item's request time (UTC ms). */
  oldestRequestedAt: number;
  /** Changes whenever an open item's claim, fence or data does. */
  marker: string;
}

/**
 * Items of human work queues and their history. Every change and its
 * history row commit together; a claim is one conditional write (owner,
 * expiry, a fence that only rises), and each write first clears the claims
 * of the item (or for `next`, the queue) that expired, recording `expired`.
 */
export interface StoreWorkItems {
  /**
   * Adds the item, or with its key already in the queue updates its data and
   * score and keeps its `requestedAt` (its place in line). `created` says
   * which. Null when the key is taken by an item of another tenant.
   */
  workItemAdd(params: WorkItemAddParams): Promise<{ item: WorkItemRow; created: boolean } | null>;
  /** The item, or null. */
  workItemGet(params: WorkItemRef): Promise<WorkItemRow | null>;
  /**
   * The queue's items in `state` (default `open`), in the order people get
   * them: highest score first (ties and unscored items oldest first).
   */
  workItemsList(
    params: { queue: string; tenant?: string; state?: WorkItemState; limit?: number },
  ): Promise<WorkItemRow[]>;
  /**
   * How `queue` stands at `now` (in `tenant`'s scope when given): its open
   * items, those under a current claim and those whose claim expired and
   * is not cleared yet, when its oldest open item was requested, and of the
   * items done since `since`, how many and the median of their lead times
   * (done - requested). One pass over the queue's open items and one over
   * its done ones: a watcher's read, not a hot path's.
   */
  workQueueStanding(
    params: { queue: string; tenant?: string; now: number; since: number },
  ): Promise<WorkQueueStanding>;
  /**
   * The open items of `queue` whose score came from another rule version
   * than `ruleVersion` (null: unscored), oldest first, at most `limit`: those
   * a change of the queue's rule left to rescore.
   */
  workItemsStale(
    params: { queue: string; ruleVersion: string | null; limit: number },
  ): Promise<WorkItemRow[]>;
  /**
   * Every queue's figures that has items ({@linkcode WorkQueueStats}), by
   * queue name: one read of aggregates over indexes (`/metrics` on each
   * scrape), installation-wide.
   */
  workItemsStats(): Promise<WorkQueueStats[]>;
  /**
   * Rewrites the item's score (keeping its data and place) when its score
   * still came from `fromVersion`: an add that changed it since wins.
   * Records `rescored`; answers whether it wrote.
   */
  workItemRescore(
    params: {
      queue: string;
      key: string;
      fromVersion: string | null;
      score: WorkItemScore | null;
      now: number;
    },
  ): Promise<boolean>;
  /**
   * Per queue with open items (of `tenant` when given): how many are open,
   * how many of those hold a live claim at `now`, the oldest one's
   * `requestedAt`, and a `marker` that changes whenever a claim, fence or
   * item of the queue does (the sum of the open items' fences and their
   * newest `updatedAt`): what the console's index and live feed read, one
   * statement for every queue.
   */
  workItemsSummary(params: { tenant?: string; now: number }): Promise<WorkQueueSummary[]>;
  /** The item's history, oldest first. */
  workItemEvents(params: WorkItemRef): Promise<WorkItemEvent[]>;
  /**
   * Claims the item for `person` until `now + leaseMs`: free (or its claim
   * expired) it takes a new fence; held by `person` the claim is renewed
   * with its fence kept; held by another it is `held`, unless `breakReason`
   * is given (an `optional` queue's hold broken, recorded `broken`).
   */
  workItemClaim(
    params: WorkItemRef & {
      person: string;
      now: number;
      leaseMs: number;
      breakReason?: string | null;
    },
  ): Promise<WorkItemOutcome>;
  /**
   * Claims the highest unclaimed open item `person` has not skipped (or
   * whose skip ended), in one conditional write: racing callers get
   * different items. Null when none is left. With `audit`, the audit row
   * of the claim is written with it.
   */
  workItemNext(params: WorkItemNextParams): Promise<WorkItemRow | null>;
  /** Gives back `person`'s current claim (`fence` given, only that claim). */
  workItemRelease(
    params: WorkItemRef & { person: string; now: number; fence?: number; reason?: string | null },
  ): Promise<WorkItemOutcome>;
  /**
   * Hides the item from `person`'s `next` until `until`, giving back their
   * claim; refused as `held` while another holds it.
   */
  workItemSkip(
    params: WorkItemRef & { person: string; now: number; until: number; reason?: string | null },
  ): Promise<WorkItemOutcome>;
  /** Gives the item's claim to `to` (a new fence), whoever held it; `actor` is recorded. */
  workItemReassign(
    params: WorkItemRef & {
      actor: string;
      to: string;
      now: number;
      leaseMs: number;
      reason: string | null;
    },
  ): Promise<WorkItemOutcome>;
  /**
   * Acts on the item: marks it done with `action`, inserts `job` (its unique
   * key `<queue>/<key>/<action>`) and records the job on the item, in one
   * transaction. With `needClaim` (a `required` queue) the statement that
   * marks it done checks `person`'s current claim and `fence`; without it,
   * another person's current hold refuses unless `breakReason` is given.
   */
  workItemDo(
    params: WorkItemRef & {
      person: string;
      action: string;
      job: NewJob;
      needClaim: boolean;
      fence: number | null;
      breakReason?: string | null;
      reason: string | null;
      now: number;
    },
  ): Promise<WorkItemOutcome & { jobId?: number }>;
  /**
   * Clears the claims that expired by `now` (of `queue` when given), at most
   * `limit`, recording `expired` for each; returns how many.
   */
  workItemsExpire(params: { queue?: string; now: number; limit?: number }): Promise<number>;
}
