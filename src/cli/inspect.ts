/**
 * The runbook's read commands: `jobs status`, `jobs ls`, `jobs show` and
 * `jobs runbook`. Each reads through `src/admin/views.ts` and prints either
 * text for a person (stored text escaped, instants in ISO UTC with a
 * relative age) or, with `--json`, stable JSON for a program.
 *
 * None of them creates a database: a missing file is reported, not made.
 *
 * @module
 */

import { type Command, InvalidArgumentError } from "commander";
import {
  type JobDetail,
  jobDetail,
  jobsView,
  latestOccurrence,
  type NodeView,
  type QueueView,
  type ScheduleStatus,
  scheduleStatus,
  type StatusView,
  statusView,
  type StoreCheck,
  storeCheck,
} from "../admin/views.ts";
import { redact } from "../kernel/redact.ts";
import {
  type Attempt,
  FINAL_STATES,
  type Job,
  JOB_STATES,
  type JobState,
} from "../kernel/types.ts";
import { loadSchedules } from "../schedule/config.ts";
import { formatDuration } from "../schedule/durations.ts";
import type { Schedule, ScheduleConfig } from "../schedule/types.ts";
import { KNOWN_VERSION } from "../store/sqlite/migrations.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/sqlite_store.ts";
import type { AuditRow, JobFilter } from "../store/store.ts";
import { type CliDeps, CommandFailed, configPath, dbPath, parseCount, quiet } from "./program.ts";
import { misfireText, rhythmText } from "../schedule/describe.ts";
import { escapeControl } from "../text/escape.ts";

/** How many jobs `jobs ls` prints unless `--limit` says otherwise. */
export const LS_DEFAULT_LIMIT = 50;
/** How many trailing lines of an attempt's output `jobs show` prints. */
export const OUTPUT_TAIL_LINES = 20;
/** How many characters of a job's last error `jobs ls` prints. */
export const LS_ERROR_CHARS = 80;

/** Registers `status`, `ls`, `show` and `runbook` on the program. */
export function registerInspectCommands(program: Command, deps: CliDeps): void {
  quiet(
    program.command("status")
      .description("queues, nodes, schedules and the store's health")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--json", "print the status as JSON")
      .action(async (options: { db?: string; config?: string; json?: boolean }) => {
        await statusCommand({
          db: dbPath(options.db, deps),
          config: configPath(options.config, deps),
          json: !!options.json,
        }, deps);
      }),
    deps,
    "status",
  );

  quiet(
    program.command("ls")
      .description("jobs, newest first, one line each")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--state <states>", "only these states, comma-separated", parseStates)
      .option("--queue <name>", "only this queue")
      .option("--schedule <id>", "only occurrences of this schedule")
      .option("--worker <name>", "only this worker")
      .option("--tag <tag>", "only jobs with this tag")
      .option("--search <text>", "worker, args, tags, occurrence or last error contain this")
      .option("--limit <n>", "how many jobs at most", parseCount, LS_DEFAULT_LIMIT)
      .option("--json", "print an array of jobs as JSON")
      .action(async (options: LsOptions & { db?: string; json?: boolean }) => {
        await lsCommand({
          db: dbPath(options.db, deps),
          filter: jobFilter(options, options.limit),
          json: !!options.json,
        }, deps);
      }),
    deps,
    "ls",
  );

  quiet(
    program.command("show")
      .description("one job with every field, its attempts and its audit trail")
      .argument(
        "<job>",
        "a job id or an occurrence identity such as nightly@2026-03-08T07:00:00.000Z",
      )
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--json", "print { job, attempts, audit } as JSON")
      .action(async (ref: string, options: { db?: string; json?: boolean }) => {
        await showCommand({ db: dbPath(options.db, deps), ref, json: !!options.json }, deps);
      }),
    deps,
    "show",
  );

  quiet(
    program.command("runbook")
      .description("the operator procedures of each schedule, with the commands to paste")
      .argument("[schedule-id]", "only this schedule")
      .option("--db <path>", "the SQLite file [env JOBS_DB]")
      .option("--config <file>", "the schedules file [env JOBS_CONFIG]")
      .option("--json", "print the procedures as JSON")
      .action(
        async (
          id: string | undefined,
          options: { db?: string; config?: string; json?: boolean },
        ) => {
          await runbookCommand({
            id,
            db: dbPath(options.db, deps),
            config: configPath(options.config, deps),
            // Only paths given on this command line need repeating in the
            // commands to paste; the environment carries the others.
            given: { db: options.db, config: options.config },
            json: !!options.json,
          }, deps);
        },
      ),
    deps,
    "runbook",
  );
}

// ------------------------------------------------------------------- opening

/** A store opened for reading, or why it could not be. */
type Opened =
  | { ok: true; store: SqliteStore; schema: { version: number; known: number } }
  | { ok: false; problem: string; schemaVersion: number | null };

/**
 * Opens an existing store for reading. Nothing is created or upgraded: a
 * missing file, and a schema other than the one this program knows, are
 * reported instead (the version is read before any write, and an older
 * schema is left for `jobs migrate`, so a newer CLI never changes the schema
 * under an older daemon).
 */
async function openExisting(db: string, now: number): Promise<Opened> {
  try {
    await Deno.stat(db);
  } catch {
    return { ok: false, problem: `no database at "${db}"`, schemaVersion: null };
  }
  let store: SqliteStore | null = null;
  let version: number | null = null;
  try {
    store = await openSqliteStore(db, { migrate: false });
    version = await store.schemaVersion();
    if (version !== KNOWN_VERSION) {
      await store.close();
      return { ok: false, problem: schemaProblem(db, version), schemaVersion: version };
    }
    // The schema is current, so this applies nothing: it prepares the reads.
    await store.migrate({ now });
    return { ok: true, store, schema: { version, known: KNOWN_VERSION } };
  } catch (error) {
    await store?.close();
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, problem: `cannot read "${db}": ${message}`, schemaVersion: version };
  }
}

function schemaProblem(db: string, version: number): string {
  if (version > KNOWN_VERSION) {
    return `schema version ${version} is newer than this program knows (${KNOWN_VERSION}); ` +
      `upgrade jobs`;
  }
  return `schema version ${version} is older than this program's (${KNOWN_VERSION}); ` +
    `run: jobs migrate --db ${shellQuote(db)}`;
}

/** Opens the store or fails the command with one line naming the database. */
async function openOrFail(command: string, db: string, now: number): Promise<SqliteStore> {
  const opened = await openExisting(db, now);
  if (!opened.ok) {
    throw new CommandFailed(`jobs ${command}: ${escapeControl(firstLine(opened.problem))}`);
  }
  return opened.store;
}

/** The schedules file, or null and the reason when it cannot be used. */
async function loadConfig(
  config: string,
): Promise<{ config: ScheduleConfig; problem: null } | { config: null; problem: string }> {
  const result = await loadSchedules(config);
  if (result.ok) return { config: result.config, problem: null };
  const [first] = result.errors;
  const more = result.errors.length > 1 ? ` (and ${result.errors.length - 1} more)` : "";
  return { config: null, problem: `${first?.message ?? `${config}: invalid`}${more}` };
}

// -------------------------------------------------------------------- status

/** `jobs status`: exit 1 when the store cannot be read or its schema is not current. */
export async function statusCommand(
  options: { db: string; config: string; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const loaded = await loadConfig(options.config);
  const opened = await openExisting(options.db, now);
  try {
    const health: StoreCheck = opened.ok
      ? await storeCheck(opened.store, { clock: deps.clock, schema: opened.schema })
      : {
        kind: "sqlite",
        location: options.db,
        schemaVersion: opened.schemaVersion,
        knownVersion: KNOWN_VERSION,
        reachable: false,
        readMs: null,
        error: opened.problem,
      };
    const view = await statusView({
      store: opened.ok && health.reachable ? opened.store : null,
      config: loaded.config,
      now,
    });
    if (options.json) {
      deps.out(safeJson({
        now: iso(now),
        store: health,
        config: { file: options.config, ok: loaded.config !== null, error: loaded.problem },
        queues: view.queues,
        nodes: view.nodes.map(nodeJson),
        schedules: view.schedules.map(scheduleJson),
      }));
    } else {
      for (const line of statusText(view, health, loaded.problem)) deps.out(line);
    }
    if (!health.reachable) {
      throw new CommandFailed(
        `jobs status: the store is not readable: ${escapeControl(firstLine(health.error ?? ""))}`,
      );
    }
  } finally {
    if (opened.ok) await opened.store.close();
  }
}

function statusText(view: StatusView, health: StoreCheck, configProblem: string | null): string[] {
  const now = view.now;
  const lines = [`status at ${iso(now)}`, "", `store: ${healthText(health)}`];
  if (configProblem) lines.push(`schedules file: ${cell(configProblem)}`);

  lines.push("", "queues:");
  if (view.queues.length === 0) lines.push("  none");
  const queueRows = view.queues.map(queueCells);
  lines.push(...table(queueRows).map((l) => `  ${l}`));

  lines.push("", "nodes:");
  if (view.nodes.length === 0) lines.push("  none registered");
  lines.push(...table(view.nodes.map((n) => nodeCells(n, now))).map((l) => `  ${l}`));

  lines.push("", "schedules:");
  if (view.schedules.length === 0) lines.push("  none");
  for (const s of view.schedules) lines.push(...scheduleLines(s, now).map((l) => `  ${l}`));
  return lines;
}

function healthText(h: StoreCheck): string {
  const where = `${h.kind} ${cell(h.location)}`;
  if (!h.reachable) return `${where}: NOT READABLE: ${cell(h.error ?? "unknown error")}`;
  return `${where}: reachable, schema v${h.schemaVersion} (current), a read took ${h.readMs} ms`;
}

function queueCells(q: QueueView): string[] {
  const counts = JOB_STATES.filter((s) => q.counts[s] > 0).map((s) => `${s} ${q.counts[s]}`);
  const nodes = Object.entries(q.nodes).map(([n, c]) => `${cell(n)}:${c}`);
  const paused = q.paused
    ? "PAUSED"
    : q.pausedInFile
    ? "running (paused in the file: applied when a daemon starts)"
    : "running";
  return [
    cell(q.name),
    paused,
    counts.join(", ") || "no jobs",
    `concurrency ${q.declaredConcurrency ?? "-"} in the file`,
    nodes.length > 0 ? `on ${nodes.join(", ")}` : "no live node",
  ];
}

function nodeCells(n: NodeView, now: number): string[] {
  const queues = Object.entries(n.queues).map(([q, c]) => `${cell(q)}:${c}`).join(",");
  return [
    cell(n.node),
    queues || "-",
    `heartbeat ${when(n.heartbeatAt, now)}`,
    `started ${when(n.startedAt, now)}`,
    n.stale ? "STALE" : "",
  ];
}

function scheduleLines(s: ScheduleStatus, now: number): string[] {
  const state = s.enabled
    ? "enabled"
    : s.disabledIn === "store"
    ? `disabled by ${cell(s.disabledBy ?? "unknown")} ${when(s.disabledAt, now)}: ${
      cell(s.disabledReason ?? "no reason given")
    }`
    : "disabled in the file";
  const nextRun = s.next !== null
    ? when(s.next, now)
    : s.manual
    ? "manual (runs when someone runs it)"
    : s.declared
    ? "none"
    : "none (not in the schedules file)";
  return [
    `${cell(s.id)}  ${state}`,
    `  next ${nextRun}; last started ${when(s.lastStartedAt, now)}, completed ${
      when(s.lastCompletedAt, now)
    }; misfires ${s.misfires}${
      s.lastMisfireFor !== null ? ` (last ${when(s.lastMisfireFor, now)})` : ""
    }`,
  ];
}

function nodeJson(n: NodeView) {
  return { ...n, startedAt: iso(n.startedAt), heartbeatAt: iso(n.heartbeatAt) };
}

function scheduleJson(s: ScheduleStatus) {
  return {
    ...s,
    disabledAt: iso(s.disabledAt),
    next: iso(s.next),
    lastPlannedFor: iso(s.lastPlannedFor),
    lastStartedAt: iso(s.lastStartedAt),
    lastCompletedAt: iso(s.lastCompletedAt),
    lastMisfireFor: iso(s.lastMisfireFor),
  };
}

// ------------------------------------------------------------------------ ls

/** The job filters of `jobs ls` and of the bulk actions, as commander parses them. */
export interface JobFilterOptions {
  state?: JobState[];
  queue?: string;
  schedule?: string;
  worker?: string;
  tag?: string;
  search?: string;
}

interface LsOptions extends JobFilterOptions {
  limit: number;
}

/** `--state executing,retryable` -> the states; throws naming the value otherwise. */
export function parseStates(value: string): JobState[] {
  const states = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const s of states) {
    if (!(JOB_STATES as readonly string[]).includes(s)) {
      throw new InvalidArgumentError(
        `"${escapeControl(s)}" is not a state; use ${JOB_STATES.join(", ")}`,
      );
    }
  }
  if (states.length === 0) throw new InvalidArgumentError(`"${value}" names no state`);
  return states as JobState[];
}

/** The store's filter for the filters given (and only those), at most `limit` jobs. */
export function jobFilter(options: JobFilterOptions, limit: number): JobFilter {
  const filter: JobFilter = { limit };
  if (options.state) filter.state = options.state;
  if (options.queue !== undefined) filter.queue = options.queue;
  if (options.schedule !== undefined) filter.scheduleId = options.schedule;
  if (options.worker !== undefined) filter.worker = options.worker;
  if (options.tag !== undefined) filter.tag = options.tag;
  if (options.search !== undefined) filter.search = options.search;
  return filter;
}

/** `jobs ls`: one line per job, newest first. */
export async function lsCommand(
  options: { db: string; filter: JobFilter; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const store = await openOrFail("ls", options.db, now);
  try {
    const jobs = await jobsView(store, options.filter);
    if (options.json) {
      deps.out(safeJson(jobs.map(jobJson)));
      return;
    }
    if (jobs.length === 0) {
      deps.out("no jobs match");
      return;
    }
    const header = ["ID", "STATE", "QUEUE", "WORKER", "TRY", "OCCURRENCE", "WHEN", "LAST ERROR"];
    for (const line of table([header, ...jobs.map((j) => jobCells(j, now))])) deps.out(line);
  } finally {
    await store.close();
  }
}

function jobCells(job: Job, now: number): string[] {
  const finished = finishedAt(job);
  const last = job.errors.at(-1)?.error;
  return [
    String(job.id),
    job.state,
    cell(job.queue),
    cell(job.worker),
    `${job.attempt}/${job.maxAttempts}`,
    job.occurrence === null ? "-" : cell(job.occurrence),
    finished !== null
      ? `finished ${when(finished, now)}`
      : `scheduled ${when(job.scheduledAt, now)}`,
    last === undefined ? "" : cell(truncate(firstLine(redact(last)), LS_ERROR_CHARS)),
  ];
}

function finishedAt(job: Job): number | null {
  if (!FINAL_STATES.includes(job.state)) return null;
  return job.completedAt ?? job.cancelledAt ?? job.discardedAt;
}

// ---------------------------------------------------------------------- show

/** `jobs show <id | occurrence>`: exit 1 when there is no such job. */
export async function showCommand(
  options: { db: string; ref: string; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const store = await openOrFail("show", options.db, now);
  try {
    const detail = await jobDetail(store, options.ref);
    if (!detail) {
      const kind = /^\d+$/.test(options.ref) ? "job" : "job with occurrence";
      throw new CommandFailed(
        `jobs show: no ${kind} "${cell(options.ref)}" in ${cell(options.db)}`,
      );
    }
    if (options.json) {
      deps.out(safeJson({
        job: jobJson(detail.job),
        attempts: detail.attempts.map(attemptJson),
        audit: detail.audit.map(auditJson),
      }));
      return;
    }
    for (const line of showText(detail, now)) deps.out(line);
  } finally {
    await store.close();
  }
}

function showText({ job, attempts, audit }: JobDetail, now: number): string[] {
  const at = (ms: number | null) => when(ms, now);
  const text = (value: string | null) => value === null ? "-" : cell(value);
  const fields: [string, string][] = [
    ["state", job.state],
    ["queue", cell(job.queue)],
    ["worker", cell(job.worker)],
    ["occurrence", text(job.occurrence)],
    ["schedule", text(job.scheduleId)],
    ["scheduled for", at(job.scheduledFor)],
    ["attempt", `${job.attempt} of ${job.maxAttempts}`],
    ["fence", String(job.fence)],
    ["priority", String(job.priority)],
    ["attempted by", text(job.attemptedBy)],
    ["lease expires", at(job.leaseExpiresAt)],
    ["inserted", at(job.insertedAt)],
    ["scheduled at", at(job.scheduledAt)],
    ["attempted at", at(job.attemptedAt)],
    ["completed at", at(job.completedAt)],
    ["cancelled at", at(job.cancelledAt)],
    ["discarded at", at(job.discardedAt)],
    ["unique key", text(job.uniqueKey)],
    ["unique states", text(job.uniqueStates)],
    ["tenant", text(job.tenant)],
    ["tags", job.tags.length > 0 ? job.tags.map(cell).join(", ") : "-"],
    ["args", cell(JSON.stringify(job.args) ?? "null")],
    ["meta", cell(JSON.stringify(job.meta))],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  const lines = [`job ${job.id}`, ...fields.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)];

  lines.push("", `errors (${job.errors.length}, oldest first):`);
  if (job.errors.length === 0) lines.push("  none");
  for (const e of job.errors) {
    lines.push(`  attempt ${e.attempt} at ${at(e.at)}:`, ...block(redact(e.error), "    "));
  }

  lines.push("", `attempts (${attempts.length}):`);
  if (attempts.length === 0) lines.push("  none");
  for (const a of attempts) lines.push(...attemptLines(a, now));

  lines.push("", `audit (${audit.length}):`);
  if (audit.length === 0) lines.push("  none");
  for (const row of audit) {
    const details = Object.keys(row.details).length > 0 ? ` ${JSON.stringify(row.details)}` : "";
    lines.push(
      `  ${at(row.at)}  ${cell(row.actor)}  ${cell(row.action)}${
        row.reason ? `: ${cell(row.reason)}` : ""
      }${cell(details)}`,
    );
  }
  return lines;
}

function attemptLines(a: Attempt, now: number): string[] {
  const took = a.finishedAt !== null && a.finishedAt > a.startedAt
    ? ` (took ${formatDuration(a.finishedAt - a.startedAt)})`
    : "";
  const lines = [
    `  #${a.attempt} ${a.kind} on ${a.node === null ? "-" : cell(a.node)}, fence ${a.fence}: ${
      a.outcome ?? "running"
    }`,
    `    started ${when(a.startedAt, now)}, finished ${when(a.finishedAt, now)}${took}`,
  ];
  if (a.actor !== null || a.reason !== null) {
    lines.push(
      `    by ${a.actor === null ? "-" : cell(a.actor)}${
        a.reason === null ? "" : `: ${cell(a.reason)}`
      }`,
    );
  }
  if (a.error !== null) lines.push("    error:", ...block(redact(a.error), "      "));
  if (a.output !== null && a.output !== "") {
    const all = a.output.replace(/\n$/, "").split("\n");
    const tail = all.slice(-OUTPUT_TAIL_LINES);
    const cut = all.length - tail.length;
    lines.push(
      `    output${cut > 0 ? ` (last ${tail.length} of ${all.length} lines)` : ""}:`,
      ...tail.map((l) => `      | ${cell(redact(l))}`),
    );
  }
  return lines;
}

function attemptJson(a: Attempt) {
  return {
    ...a,
    startedAt: iso(a.startedAt),
    finishedAt: iso(a.finishedAt),
    error: a.error === null ? null : redact(a.error),
    output: a.output === null ? null : redact(a.output),
  };
}

function auditJson(row: AuditRow) {
  return { ...row, at: iso(row.at) };
}

/** A job as `--json` prints it: every field, instants as ISO UTC, args and meta redacted. */
function jobJson(job: Job) {
  return {
    ...job,
    errors: job.errors.map((e) => ({ ...e, at: iso(e.at), error: redact(e.error) })),
    scheduledFor: iso(job.scheduledFor),
    leaseExpiresAt: iso(job.leaseExpiresAt),
    insertedAt: iso(job.insertedAt),
    scheduledAt: iso(job.scheduledAt),
    attemptedAt: iso(job.attemptedAt),
    completedAt: iso(job.completedAt),
    cancelledAt: iso(job.cancelledAt),
    discardedAt: iso(job.discardedAt),
  };
}

// ------------------------------------------------------------------- runbook

/** One procedure of a schedule's runbook: what it is for and the commands to paste. */
export interface Procedure {
  title: string;
  notes: string[];
  commands: string[];
}

/** When and how a schedule runs, as the runbook summarizes it. */
export interface RunbookTiming {
  /** `cron "0 3 * * *"`, `every 15s` or `manual`. */
  rhythm: string;
  timezone: string;
  /** The local-time policy (gap, overlap, reason), for a zone other than UTC. */
  localTime: string | null;
  /** The misfire policy and grace; null for a manual schedule, which is never planned. */
  misfire: string | null;
  overlap: string;
  queue: string;
  maxAttempts: number;
  jitter: string | null;
  /** ISO UTC, or null (manual, disabled, ended). */
  next: string | null;
  nextOccurrence: string | null;
}

/** One schedule's runbook. */
export interface Runbook {
  id: string;
  timing: RunbookTiming;
  state: ScheduleStatus;
  latest: { id: number; occurrence: string | null; state: JobState } | null;
  procedures: Procedure[];
}

/** `jobs runbook [<schedule-id>]`: exit 1 for an invalid file or an unknown id. */
export async function runbookCommand(
  options: {
    id: string | undefined;
    db: string;
    config: string;
    given: { db?: string; config?: string };
    json: boolean;
  },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const loaded = await loadSchedules(options.config);
  if (!loaded.ok) {
    for (const error of loaded.errors) deps.err(escapeControl(error.message));
    throw new CommandFailed(`jobs runbook: ${cell(options.config)} is not a valid schedules file`);
  }
  const schedules = options.id === undefined
    ? loaded.config.schedules
    : loaded.config.schedules.filter((s) => s.id === options.id);
  if (schedules.length === 0) {
    const known = loaded.config.schedules.map((s) => `"${s.id}"`).join(", ");
    throw new CommandFailed(
      options.id === undefined
        ? `jobs runbook: ${cell(options.config)} declares no schedule`
        : `jobs runbook: no schedule "${cell(options.id)}" in ${cell(options.config)}; ` +
          `it has ${known || "none"}`,
    );
  }
  const opened = await openExisting(options.db, now);
  try {
    const store = opened.ok ? opened.store : null;
    const rows = new Map(
      (store ? await store.schedulesList({ ids: schedules.map((s) => s.id) }) : [])
        .map((r) => [r.id, r]),
    );
    const books: Runbook[] = [];
    for (const schedule of schedules) {
      const latest = store ? await latestOccurrence(store, schedule.id) : null;
      const state = scheduleStatus(schedule, rows.get(schedule.id), now);
      books.push(runbookOf(schedule, state, latest, options.given));
    }
    if (options.json) {
      deps.out(safeJson({
        store: opened.ok ? null : opened.problem,
        schedules: books.map((b) => ({ ...b, state: scheduleJson(b.state) })),
      }));
      return;
    }
    const lines = [`runbook: ${cell(options.config)}, store ${cell(options.db)}`];
    if (!opened.ok) lines.push(`(store: ${cell(opened.problem)}; no stored state shown)`);
    for (const book of books) lines.push("", ...runbookText(book, now));
    for (const line of lines) deps.out(line);
  } finally {
    if (opened.ok) await opened.store.close();
  }
}

/** The procedures of one schedule, every command ready to paste. */
export function runbookOf(
  schedule: Schedule,
  state: ScheduleStatus,
  latest: Job | null,
  given: { db?: string; config?: string },
): Runbook {
  const id = shellQuote(schedule.id);
  const db = given.db === undefined ? "" : ` --db ${shellQuote(given.db)}`;
  const config = given.config === undefined ? "" : ` --config ${shellQuote(given.config)}`;
  const queue = shellQuote(schedule.queue);
  const occurrence = latest?.occurrence ?? null;
  const manual = schedule.rhythm.kind === "manual";

  const inspect: Procedure = {
    title: "Inspect",
    notes: occurrence === null ? ["No occurrence in the store yet."] : [
      `Latest occurrence: ${occurrence} (job ${latest!.id}, ${latest!.state}).`,
    ],
    commands: [
      `jobs ls --schedule ${id}${db}`,
      ...(occurrence === null ? [] : [`jobs show ${shellQuote(occurrence)}${db}`]),
    ],
  };
  const replay: Procedure = {
    title: "Replay an occurrence",
    notes: [
      "A replay is a new attempt of the same job: it keeps its id and occurrence identity, " +
      "and the attempt records who and why.",
      "An executing occurrence is refused unless --force, which breaks the running " +
      "attempt's lease first (its node aborts it).",
      ...(occurrence === null ? ["Nothing to replay yet: no occurrence in the store."] : []),
    ],
    commands: occurrence === null ? [] : [
      `jobs replay ${shellQuote(occurrence)} --reason "..."${db}`,
      ...(latest!.state === "executing"
        ? [`jobs replay ${shellQuote(occurrence)} --force --reason "..."${db}`]
        : []),
    ],
  };
  const toggle: Procedure = {
    title: "Disable / enable",
    notes: [
      "Stored: survives restarts and reloads. Nothing new is planned while disabled; " +
      "an occurrence already claimed finishes.",
      ...(state.disabledIn === "file"
        ? ["It is disabled in the schedules file: `jobs enable` does not override that."]
        : []),
      ...(manual
        ? []
        : [`Enabling applies the misfire policy (${schedule.misfire.policy}) to the gap.`]),
    ],
    commands: [
      `jobs disable ${id} --reason "..."${db}${config}`,
      `jobs enable ${id} --reason "..."${db}${config}`,
    ],
  };
  const environment = schedule.runsWhere === undefined
    ? ""
    : ` --environment ${shellQuote(schedule.runsWhere)}`;
  const trigger: Procedure = {
    title: "Run now",
    notes: manual
      ? [
        `Guard: ${schedule.guard ?? "none given"}.`,
        ...(schedule.runsWhere === undefined
          ? []
          : [`Runs only where the environment is "${schedule.runsWhere}".`]),
      ]
      : ["Runs it once now; the planned occurrences are unchanged."],
    commands: [`jobs run ${id}${manual ? environment : ""} --reason "..."${db}${config}`],
  };
  const pause: Procedure = {
    title: "Pause the queue",
    notes: [
      `Stops every process claiming from queue "${schedule.queue}", not only this schedule's ` +
      "occurrences; running jobs finish.",
    ],
    commands: [
      `jobs pause ${queue} --reason "..."${db}`,
      `jobs resume ${queue} --reason "..."${db}`,
    ],
  };
  return {
    id: schedule.id,
    timing: timingOf(schedule, state),
    state,
    latest: latest === null ? null : { id: latest.id, occurrence, state: latest.state },
    procedures: [inspect, replay, toggle, trigger, pause],
  };
}

function timingOf(s: Schedule, state: ScheduleStatus): RunbookTiming {
  return {
    rhythm: rhythmText(s),
    timezone: s.timezone,
    localTime: s.localTime
      ? `gap ${s.localTime.gap}, overlap ${s.localTime.overlap}: ${s.localTime.reason}`
      : null,
    // A manual schedule is never planned: it cannot misfire.
    misfire: s.rhythm.kind === "manual"
      ? null
      : `${misfireText(s)}, grace ${formatDuration(s.misfire.graceMs)}`,
    overlap: s.overlapPolicy,
    queue: s.queue,
    maxAttempts: s.maxAttempts,
    jitter: s.jitterMs ? formatDuration(s.jitterMs) : null,
    next: iso(state.next),
    nextOccurrence: state.nextOccurrence,
  };
}

function runbookText(book: Runbook, now: number): string[] {
  const t = book.timing;
  const s = book.state;
  const lines = [`## ${cell(book.id)}`, ""];
  lines.push(
    `  rhythm   ${cell(t.rhythm)} in ${cell(t.timezone)}${
      t.localTime ? ` (${cell(t.localTime)})` : ""
    }`,
    `  policies ${t.misfire === null ? "" : `misfire ${t.misfire}; `}overlap ${t.overlap}; ` +
      `queue ${cell(t.queue)}; ${t.maxAttempts} attempt${t.maxAttempts === 1 ? "" : "s"}${
        t.jitter ? `; jitter ${t.jitter}` : ""
      }`,
    `  next run ${
      s.next !== null
        ? `${when(s.next, now)} (${cell(s.nextOccurrence ?? "")})`
        : s.manual
        ? "only when someone runs it"
        : s.enabled
        ? "none"
        : "none while disabled"
    }`,
    `  state    ${
      s.enabled
        ? "enabled"
        : s.disabledIn === "file"
        ? "disabled in the file"
        : `disabled by ${cell(s.disabledBy ?? "unknown")} ${when(s.disabledAt, now)}: ${
          cell(s.disabledReason ?? "no reason given")
        }`
    }`,
  );
  for (const p of book.procedures) {
    lines.push("", `### ${p.title}`);
    for (const note of p.notes) lines.push(`  ${cell(note)}`);
    for (const command of p.commands) lines.push(`    ${command}`);
  }
  return lines;
}

// ---------------------------------------------------------------------- text

/** Characters that need no quoting in a shell word. */
const SHELL_SAFE = /^[A-Za-z0-9._:@\/-]+$/;
// deno-lint-ignore no-control-regex -- matching control characters is the point
const CONTROL = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/**
 * Quotes `word` for a POSIX shell when it holds anything outside
 * `[A-Za-z0-9._:@/-]`: single quotes, or bash's `$'...'` with `\xNN`
 * escapes when it holds control characters, so what is printed is both
 * safe on the terminal and the same word once pasted.
 */
export function shellQuote(word: string): string {
  if (SHELL_SAFE.test(word)) return word;
  if (!CONTROL.test(word)) return `'${word.replaceAll("'", `'\\''`)}'`;
  const body = word.replaceAll("\\", "\\\\").replaceAll("'", "\\'");
  return `$'${escapeControl(body).replaceAll("\n", "\\n").replaceAll("\t", "\\t")}'`;
}

/** Stored text for one cell of one line: control characters, newlines and tabs escaped. */
function cell(text: string): string {
  return escapeControl(text).replaceAll("\n", "\\n").replaceAll("\t", "\\t");
}

/** Stored multi-line text, each line escaped and indented. */
function block(text: string, indent: string): string[] {
  return text.replace(/\n$/, "").split("\n").map((l) => `${indent}${cell(l)}`);
}

function firstLine(text: string): string {
  return text.split("\n", 1)[0] ?? "";
}

/** At most `max` characters (code points), marked with `…` when cut. */
function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** Rows as columns padded to their widest cell; the last column is not padded. */
function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((c, i) => widths[i] = Math.max(widths[i] ?? 0, Array.from(c).length));
  }
  return rows.map((row) =>
    row.map((c, i) => i === row.length - 1 ? c : c + " ".repeat(widths[i]! - Array.from(c).length))
      .join("  ").trimEnd()
  );
}

/** An instant as ISO-8601 UTC with ms, or null. */
function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** `2026-03-08T07:00:00.000Z (12s ago)`, `... (in 3m)`, or `-` for none. */
export function when(ms: number | null, now: number): string {
  return ms === null ? "-" : `${new Date(ms).toISOString()} (${age(ms, now)})`;
}

/** `12s ago`, `in 3m`, `1h5m ago`, `now`: the two largest units, rounded down. */
export function age(ms: number, now: number): string {
  const diff = now - ms;
  if (Math.abs(diff) < 1000) return "now";
  const span = roughSpan(Math.abs(diff));
  return diff > 0 ? `${span} ago` : `in ${span}`;
}

const SPAN_UNITS: [string, number][] = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], [
  "s",
  1000,
]];

function roughSpan(ms: number): string {
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of SPAN_UNITS) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0 || parts.length > 0) parts.push(`${count}${unit}`);
    if (parts.length === 2) break;
  }
  return parts.filter((p) => !p.startsWith("0")).join("") || "0s";
}

// Raw C1 controls and bidi overrides are valid inside JSON strings, and
// JSON.stringify leaves them raw; as \u escapes they parse to the same text.
const JSON_UNSAFE = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** JSON, indented, with every character that could act on a terminal escaped. */
function safeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    JSON_UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
