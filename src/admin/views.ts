/**
 * The read side shared by the command line and the TUI: what the
 * queues, nodes, schedules and jobs look like right now, assembled from the
 * store and `schedules.yaml`. Instants stay UTC epoch ms; nothing here
 * prints, formats for a terminal or reads the machine's time.
 *
 * Job args and meta leave this module redacted: a view never hands out a
 * secret an operator did not need to see.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { redactValue } from "../kernel/redact.ts";
import { type Attempt, type Job, JOB_STATES, type JobState } from "../kernel/types.ts";
import { next } from "../schedule/occurrences.ts";
import { readOccurrenceRef } from "../schedule/occurrence_ref.ts";
import type { Schedule } from "../schedule/types.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type {
  AuditRow,
  JobFilter,
  JobMatch,
  ScheduleOutcome,
  ScheduleRow,
  Store,
} from "../store/store.ts";
import { MAINTENANCE_ROLE } from "../runtime/leadership.ts";

/** Re-exported from its new home, `kernel/redact.ts`, for the callers of this module. */
export { redactValue };

/**
 * The heartbeat period the daemon runs with (the runtime's `heartbeatMs`).
 * @default 1000
 */
export const HEARTBEAT_MS = 1000;

/** A node is stale after this many heartbeat periods without one. */
export const STALE_AFTER_BEATS = 3;

/** How the store answered a trivial read. */
export interface StoreCheck {
  /** `sqlite` or `postgres`. */
  kind: string;
  /** Where it lives, credentials removed. */
  location: string;
  /** Whether the timed read succeeded. */
  reachable: boolean;
  /** The schema version of the database, or null when it could not be read. */
  schemaVersion: number | null;
  /** The latest schema version this program knows: anything else is not current. */
  knownVersion: number;
  /** How long the timed read took, in ms of the injected clock; null when it failed. */
  readMs: number | null;
  /** Why it is not reachable or not current, one line. */
  error: string | null;
}

/** One queue: its jobs by state, whether it is paused, and who runs it how wide. */
export interface QueueView {
  name: string;
  /** Jobs per state (every state present, zero when none). */
  counts: Record<JobState, number>;
  /** Paused in the store (every process honours it). */
  paused: boolean;
  /** `paused: true` in the file; a daemon applies it when it starts or reloads. */
  pausedInFile: boolean;
  /** The concurrency the file declares, or null. */
  declaredConcurrency: number | null;
  /** Node -> concurrency, for the live nodes that run this queue. */
  nodes: Record<string, number>;
  /** Who paused it, when and why, while it is paused in the store; else null. */
  pause: QueuePause | null;
}

/**
 * Who paused a queue, from the audit trail: the latest `queue.pause` when it
 * is the latest pause or resume recorded; otherwise `actor` and `reason` are
 * null (paused by a schedules file's `paused: true`, or by a library call)
 * and `at` is when the stored row last changed.
 */
export interface QueuePause {
  at: number;
  actor: string | null;
  reason: string | null;
}

/** One registered node and how fresh its heartbeat is. */
export interface NodeView {
  node: string;
  queues: Record<string, number>;
  startedAt: number;
  heartbeatAt: number;
  /** Where the node runs (its daemon's `--environment`), or null when it did not say. */
  environment: string | null;
  /** `now - heartbeatAt`. */
  heartbeatAgeMs: number;
  /** No heartbeat for {@linkcode STALE_AFTER_BEATS} periods: probably gone or cut off. */
  stale: boolean;
}

/** One schedule: its declaration (when the file has it) joined with its stored state. */
export interface ScheduleStatus {
  id: string;
  /** The live file declares it; false for a schedule only the store remembers. */
  declared: boolean;
  /** `manual: true` in the file. */
  manual: boolean;
  /** Enabled in the file and in the store. */
  enabled: boolean;
  /** `file` when the file says `enabled: false`, `store` when an operator disabled it. */
  disabledIn: "file" | "store" | null;
  disabledReason: string | null;
  disabledBy: string | null;
  disabledAt: number | null;
  /** The next instant it runs, or null (manual, disabled, ended, or not declared). */
  next: number | null;
  nextOccurrence: string | null;
  lastPlannedFor: number | null;
  lastStartedAt: number | null;
  lastCompletedAt: number | null;
  misfires: number;
  lastMisfireFor: number | null;
  /** How its newest final occurrence ended, or null when none has. */
  lastOutcome: ScheduleOutcome["lastOutcome"] | null;
  /** When that occurrence ended. */
  lastOutcomeAt: number | null;
  /** Its current run of failures: discarded occurrences since the last completed one. */
  failures: number;
  /** The hash of the definition the store last synced (what a daemon runs), or null. */
  definitionHash: string | null;
  /**
   * The IANA zone its rhythm is read in: the file's, else the definition the
   * store last synced; null when neither says. Its instants are shown in it
   * beside UTC.
   */
  timezone: string | null;
}

/** A schedule's current run of failures in words (`5 failures in a row`), or null at 0. */
export function failuresText(failures: number): string | null {
  if (failures === 0) return null;
  return `${failures} ${failures === 1 ? "failure" : "failures"} in a row`;
}

/** Who holds the maintenance role (stager, lifeline, pruner, planner), as `leaders` says. */
export interface LeaderView {
  /** The holder; null once it released the role on a clean stop. */
  node: string | null;
  /** Since when it holds the role. */
  acquiredAt: number;
  /** When its hold ends unless renewed, in its clock. */
  expiresAt: number;
  /** The hold ran out by the reader's clock: nobody runs maintenance until a node takes over. */
  expired: boolean;
}

/** Everything `jobs status` shows. */
export interface StatusView {
  now: number;
  queues: QueueView[];
  nodes: NodeView[];
  schedules: ScheduleStatus[];
  /**
   * The maintenance role's holder, or null when no node ever took it (a
   * single daemon that does not compete for the role runs every pass).
   */
  leader: LeaderView | null;
}

/** A job with its attempts and its audit trail. */
export interface JobDetail {
  job: Job;
  attempts: Attempt[];
  audit: AuditRow[];
}

/**
 * Times a trivial read (the one `/readyz` makes) and reports it with the
 * schema version the caller found when it opened the store.
 */
export async function storeCheck(
  store: Store,
  params: { clock: Clock; schema: { version: number; known: number } },
): Promise<StoreCheck> {
  const base = {
    kind: store.kind,
    location: store.location,
    schemaVersion: params.schema.version,
    knownVersion: params.schema.known,
  };
  const started = params.clock.now();
  try {
    await store.jobsCount({ state: "executing" });
    return { ...base, reachable: true, readMs: params.clock.now() - started, error: null };
  } catch (error) {
    return { ...base, reachable: false, readMs: null, error: oneLine(error) };
  }
}

/**
 * The whole status: queues, nodes and schedules. `store` is null when there
 * is no store to read (the file alone is shown); `config` is null when the
 * schedules file could not be read (the store alone is shown).
 */
export async function statusView(params: {
  store: Store | null;
  config: ScheduleConfig | null;
  now: number;
  /** @default HEARTBEAT_MS */
  heartbeatMs?: number;
}): Promise<StatusView> {
  const { store, config, now } = params;
  const nodes = store ? await nodesView(store, now, params.heartbeatMs ?? HEARTBEAT_MS) : [];
  return {
    now,
    queues: await queuesView(store, config, nodes),
    nodes,
    schedules: await schedulesView(store, config, now),
    leader: store ? await leaderView(store, now) : null,
  };
}

/** The maintenance role's row as {@linkcode LeaderView}, or null when there is none. */
export async function leaderView(store: Store, now: number): Promise<LeaderView | null> {
  const row = (await store.leadersList()).find((l) => l.name === MAINTENANCE_ROLE);
  if (!row) return null;
  return {
    node: row.node,
    acquiredAt: row.acquiredAt,
    expiresAt: row.expiresAt,
    expired: row.node !== null && row.expiresAt <= now,
  };
}

/** Every node with its heartbeat age, stale ones flagged. */
export async function nodesView(
  store: Store,
  now: number,
  heartbeatMs: number = HEARTBEAT_MS,
): Promise<NodeView[]> {
  return (await store.nodesList()).map((n) => ({
    node: n.node,
    // By name: PostgreSQL's jsonb keeps keys in its own order, SQLite's text the daemon's.
    queues: Object.fromEntries(
      Object.entries(n.queues).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
    startedAt: n.startedAt,
    heartbeatAt: n.heartbeatAt,
    environment: n.environment,
    heartbeatAgeMs: now - n.heartbeatAt,
    stale: now - n.heartbeatAt > STALE_AFTER_BEATS * heartbeatMs,
  }));
}

/**
 * Every queue anyone knows of (jobs, a stored pause, the file, a schedule,
 * a node), by name.
 */
export async function queuesView(
  store: Store | null,
  config: ScheduleConfig | null,
  nodes: NodeView[],
): Promise<QueueView[]> {
  const counts = store ? await store.jobsCount({}) : [];
  const stored = store ? await store.queuesList() : [];
  const names = new Set<string>([
    ...counts.map((c) => c.queue),
    ...stored.map((q) => q.name),
    ...Object.keys(config?.queues ?? {}),
    ...(config?.schedules ?? []).map((s) => s.queue),
    ...nodes.flatMap((n) => Object.keys(n.queues)),
  ]);
  const pauses = new Map<string, QueuePause>();
  for (const row of stored) {
    if (store && row.paused) pauses.set(row.name, await queuePause(store, row.name, row.updatedAt));
  }
  return [...names].sort().map((name) => {
    const byState = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    for (const c of counts) if (c.queue === name) byState[c.state] += c.count;
    const declared = config?.queues[name];
    return {
      name,
      counts: byState,
      paused: stored.find((q) => q.name === name)?.paused ?? false,
      pause: pauses.get(name) ?? null,
      pausedInFile: declared?.paused ?? false,
      declaredConcurrency: declared?.concurrency ?? null,
      nodes: Object.fromEntries(
        nodes.filter((n) => !n.stale && n.queues[name] !== undefined)
          .map((n) => [n.node, n.queues[name]!]),
      ),
    };
  });
}

/** Who paused the (paused) queue `name`, from its audit trail; see {@linkcode QueuePause}. */
async function queuePause(store: Store, name: string, updatedAt: number): Promise<QueuePause> {
  const trail = await store.auditList({ target: `queue:${name}` });
  const last = trail.findLast((a) => a.action === "queue.pause" || a.action === "queue.resume");
  return last?.action === "queue.pause"
    ? { at: last.at, actor: last.actor, reason: last.reason }
    : { at: updatedAt, actor: null, reason: null };
}

/** The file's schedules in file order, then those only the store remembers, by id. */
export async function schedulesView(
  store: Store | null,
  config: ScheduleConfig | null,
  now: number,
): Promise<ScheduleStatus[]> {
  const rows = new Map((store ? await store.schedulesList({}) : []).map((r) => [r.id, r]));
  const outcomes = new Map(
    (store ? await store.schedulesOutcomes({}) : []).map((o) => [o.scheduleId, o]),
  );
  const declared = (config?.schedules ?? []).map((s) =>
    scheduleStatus(s, rows.get(s.id), now, outcomes.get(s.id))
  );
  const known = new Set(declared.map((s) => s.id));
  const forgotten = [...rows.values()].filter((r) => !known.has(r.id))
    .map((r) => scheduleStatus(null, r, now, outcomes.get(r.id)));
  return [...declared, ...forgotten];
}

/** One schedule's status from its declaration and/or its stored row. */
export function scheduleStatus(
  schedule: Schedule | null,
  row: ScheduleRow | undefined,
  now: number,
  outcome?: ScheduleOutcome,
): ScheduleStatus {
  const inFile = schedule !== null && !schedule.enabled;
  const inStore = row !== undefined && !row.enabled;
  const enabled = schedule !== null && !inFile && !inStore;
  const [following] = enabled ? next(schedule, now, 1) : [];
  return {
    id: schedule?.id ?? row!.id,
    declared: schedule !== null,
    manual: schedule?.rhythm.kind === "manual",
    enabled,
    disabledIn: inFile ? "file" : inStore ? "store" : null,
    disabledReason: inFile ? "disabled in the file" : inStore ? row.disabledReason : null,
    disabledBy: inStore && !inFile ? row.disabledBy : null,
    disabledAt: inStore && !inFile ? row.disabledAt : null,
    next: following?.at ?? null,
    nextOccurrence: following?.occurrence ?? null,
    lastPlannedFor: row?.lastPlannedFor ?? null,
    lastStartedAt: row?.lastStartedAt ?? null,
    lastCompletedAt: row?.lastCompletedAt ?? null,
    misfires: row?.misfires ?? 0,
    lastMisfireFor: row?.lastMisfireFor ?? null,
    lastOutcome: outcome?.lastOutcome ?? null,
    lastOutcomeAt: outcome?.lastOutcomeAt ?? null,
    failures: outcome?.failures ?? 0,
    definitionHash: row?.definitionHash ?? null,
    timezone: schedule?.timezone ?? (row ? storedSchedules([row])[0]?.timezone ?? null : null),
  };
}

/**
 * The schedules as the store last synced them, by id: what a daemon runs
 * while the schedules file has errors, since it keeps the last good
 * definitions. A row without a stored definition (synced by an older
 * daemon) or with one that does not parse is left out.
 */
export function storedSchedules(rows: readonly ScheduleRow[]): Schedule[] {
  const schedules: Schedule[] = [];
  for (const row of rows) {
    if (row.definition === null) continue;
    try {
      const schedule = JSON.parse(row.definition) as Schedule;
      if (schedule?.id === row.id && schedule.rhythm) schedules.push(schedule);
    } catch {
      // A definition this program cannot read: the row is shown as the store knows it.
    }
  }
  return schedules;
}

/**
 * A configuration of only the schedules the store last synced (see
 * {@linkcode storedSchedules}), for the views to show what runs while the
 * file on disk has errors and is not in force. Null without a store.
 */
export async function storedConfig(store: Store | null): Promise<ScheduleConfig | null> {
  if (store === null) return null;
  return {
    version: 1,
    queues: {},
    schedules: storedSchedules(await store.schedulesList({})),
    useCases: {},
    workflows: [],
    pipelines: [],
    reports: [],
  };
}

/** Jobs matching `filter`, newest first, args and meta redacted. */
export async function jobsView(store: Store, filter: JobFilter): Promise<Job[]> {
  return (await store.jobsList({ ...filter, desc: true })).map(redactJob);
}

/**
 * How many jobs match `filter`: every page of a listing with it, together;
 * with `atMost`, no more than that (counting stops there).
 */
export async function jobsMatching(
  store: Store,
  filter: JobMatch,
  options: { atMost?: number } = {},
): Promise<number> {
  return await store.jobsCountMatching(filter, options);
}

/**
 * The IANA zone of a schedule the schedules file declares, to read a local
 * time typed without offset; undefined when the file does not declare it.
 */
export type ZoneOf = (scheduleId: string) => string | undefined;

/** The zones of `schedules` (the live file's), as {@linkcode findJob} takes them. */
export function zonesOf(schedules: readonly Schedule[] | null | undefined): ZoneOf {
  return (id) => schedules?.find((s) => s.id === id)?.timezone;
}

/**
 * One job by id (all digits) or occurrence, or null when there is none. An
 * occurrence may be spelled as its identity (`nightly@2026-03-08T07:00:00.000Z`)
 * or as any spelling of the same instant (no milliseconds, an offset, a local
 * time in the schedule's zone: see {@linkcode readOccurrenceRef}).
 */
export async function findJob(store: Store, ref: string, zoneOf?: ZoneOf): Promise<Job | null> {
  if (/^\d+$/.test(ref)) {
    const id = Number(ref);
    return Number.isSafeInteger(id) ? await store.jobGet({ id }) : null;
  }
  const read = readOccurrenceRef(ref, zoneOf);
  for (const identity of new Set([ref, ...(read?.ids ?? [])])) {
    const found = await store.jobsList({ occurrence: identity, limit: 1 });
    // The identity is unique; the comparison guards against a store that
    // does not know the filter and would answer with any job.
    const job = found.find((j) => j.occurrence === identity);
    if (job) return job;
  }
  return null;
}

/**
 * Raised when a job or occurrence reference finds no job: `hint` is
 * {@linkcode occurrenceMiss}'s (why the instant cannot be read, the nearest
 * stored occurrences), kept apart so a face can cut `ref` without cutting it.
 */
export class JobNotFound extends Error {
  constructor(readonly ref: string, readonly hint: string) {
    super(`no job or occurrence "${ref}"${hint}`);
    this.name = "JobNotFound";
  }
}

/** How many stored occurrences of a schedule a near miss looks through, newest first. */
const NEAREST_SCAN = 5000;
/** How many occurrences a near miss lists on each side of the instant asked for. */
const NEAREST_EACH_SIDE = 3;

/**
 * Why `ref` found no job, for the error after `no job or occurrence "..."`:
 * why its instant could not be read, and the stored occurrences of its
 * schedule nearest the instant asked for (up to 3 before and 3 after; the
 * latest ones when the instant cannot be read), as `did you mean ...`.
 * Empty when `ref` is not shaped like an occurrence.
 */
export async function occurrenceMiss(
  store: Store,
  ref: string,
  zoneOf?: ZoneOf,
): Promise<string> {
  const read = readOccurrenceRef(ref, zoneOf);
  if (!read) return "";
  const why = "why" in read ? `: ${read.why}` : "";
  const prefix = `${read.scheduleId}@`;
  const stored = new Map<string, number>();
  let after: number | undefined;
  while (stored.size < NEAREST_SCAN) {
    const page = await store.jobsList({
      scheduleId: read.scheduleId,
      desc: true,
      limit: 500,
      ...(after === undefined ? {} : { after }),
    });
    for (const job of page) {
      const occurrence = job.occurrence;
      // Fan-out items (`<occurrence>#<key>`) are not occurrences of their own.
      if (occurrence === null || !occurrence.startsWith(prefix) || occurrence.includes("#")) {
        continue;
      }
      const instant = Date.parse(occurrence.slice(prefix.length));
      if (Number.isFinite(instant)) stored.set(occurrence, instant);
    }
    if (page.length < 500) break;
    after = page[page.length - 1]!.id;
  }
  if (stored.size === 0) {
    return `${why}; schedule "${read.scheduleId}" has no occurrence in the store`;
  }
  const all = [...stored].sort((a, b) => a[1] - b[1]);
  const target = read.instants[0];
  const near = target === undefined ? all.slice(-NEAREST_EACH_SIDE) : [
    ...all.filter(([, at]) => at < target).slice(-NEAREST_EACH_SIDE),
    ...all.filter(([, at]) => at >= target).slice(0, NEAREST_EACH_SIDE),
  ];
  const names = near.map(([id]) => JSON.stringify(id));
  const last = names.pop()!;
  const list = names.length > 0 ? `${names.join(", ")} or ${last}` : last;
  const which = target === undefined ? "latest" : "nearest";
  return `${why}; did you mean ${list}? (the ${which} stored occurrences)`;
}

/** A job with its attempts (oldest first) and its audit trail, or null when there is none. */
export async function jobDetail(
  store: Store,
  ref: string,
  zoneOf?: ZoneOf,
): Promise<JobDetail | null> {
  const job = await findJob(store, ref, zoneOf);
  if (!job) return null;
  return {
    job: redactJob(job),
    attempts: await store.attemptsList({ jobId: job.id }),
    audit: await store.auditList({ target: `job:${job.id}` }),
  };
}

/** The latest occurrence of a schedule in the store (the last one planned), or null. */
export async function latestOccurrence(store: Store, scheduleId: string): Promise<Job | null> {
  const [job] = await store.jobsList({ scheduleId, desc: true, limit: 1 });
  return job && job.scheduleId === scheduleId ? redactJob(job) : null;
}

/** A copy of `job` whose args and meta carry no secret (see {@linkcode redactValue}). */
export function redactJob(job: Job): Job {
  return { ...job, args: redactValue(job.args), meta: redactValue(job.meta) as Job["meta"] };
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}
