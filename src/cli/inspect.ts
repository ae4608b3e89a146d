/**
 * The read commands on the store: `jobs status`, `jobs ls` and `jobs show`.
 * Each reads through `src/admin/views.ts` and prints either text for a
 * person (stored text escaped, instants in ISO UTC with a relative age) or,
 * with `--json`, stable JSON for a program.
 *
 * They open the store in `read` mode: nothing is created or migrated.
 *
 * @module
 */

import type { Command } from "commander";
import { shortHash } from "../admin/definitions.ts";
import { pipelinesView, type PipelineView } from "../admin/pipelines.ts";
import {
  failuresText,
  type JobDetail,
  jobDetail,
  jobsView,
  type LeaderView,
  type NodeView,
  occurrenceMiss,
  type QueueView,
  type ScheduleStatus,
  type StatusView,
  statusView,
  type StoreCheck,
  storeCheck,
  storedConfig,
  type ZoneOf,
} from "../admin/views.ts";
import { redact } from "../kernel/redact.ts";
import { type Attempt, FINAL_STATES, type Job, JOB_STATES } from "../kernel/types.ts";
import { rhythmText, when } from "../schedule/describe.ts";
import type { Schedule } from "../schedule/types.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { describeLocation, isPostgresLocation, knownSchemaVersion } from "../store/open.ts";
import type { AuditRow, JobFilter } from "../store/store.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  filterOptions,
  globalOptions,
  HINT_CUT,
  jobFilter,
  type JobFilterOptions,
  parseCount,
  quiet,
  REF_CUT,
} from "./common.ts";
import { fileZones, loadConfig, type LoadedConfig } from "./config.ts";
import { freshnessText } from "./pipelines.ts";
import { movedNotice, openStore, tryOpenStore } from "./store/open.ts";
import { block, cell, echo, firstLine, iso, safeJson, table, truncate } from "./text.ts";
import { formatDuration } from "../text/durations.ts";
import { nextAttemptWhen } from "../text/next_attempt.ts";

/** How many jobs `jobs ls` prints unless `--limit` says otherwise. */
export const LS_DEFAULT_LIMIT = 50;
/** How many trailing lines of an attempt's output `jobs show` prints. */
export const OUTPUT_TAIL_LINES = 20;
/** How many characters of a job's last error `jobs ls` prints. */
export const LS_ERROR_CHARS = 80;

const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `status`, `ls` and `show` on the program. */
export function registerInspectCommands(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("status").description("queues, nodes, schedules and the store's health"),
      {
        db: { mode: "read" },
        config: { for: "for the declared queues and schedules" },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (options: { db?: string; config?: string; json?: boolean }) => {
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
    globalOptions(
      filterOptions(
        program.command("ls").description("jobs, newest first, one line each"),
        "only",
      ).option("--limit <n>", "how many jobs at most", parseCount, LS_DEFAULT_LIMIT),
      {
        db: { mode: "read" },
        config: { not: "it lists what the store holds; the file plays no part" },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (options: LsOptions & { db?: string; json?: boolean }) => {
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
    globalOptions(
      program.command("show")
        .description("one job with every field, its attempts and its audit trail")
        .argument(
          "<job>",
          "a job id or an occurrence identity such as nightly@2026-03-08T07:00:00.000Z",
        ),
      {
        db: { mode: "read" },
        config: {
          for: "whose zones read an occurrence typed as a local time without offset " +
            "(default ./schedules.yaml when present)",
        },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (ref: string, options: { db?: string; json?: boolean; config?: string }) => {
      await showCommand({
        db: dbPath(options.db, deps),
        ref,
        json: !!options.json,
        zoneOf: await fileZones(options.config, deps),
      }, deps);
    }),
    deps,
    "show",
  );
}

// -------------------------------------------------------------------- status

/** `jobs status`: exit 1 when the store cannot be read or its schema is not current. */
export async function statusCommand(
  options: { db: string; config: string; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const loaded = await loadConfig(options.config);
  const opened = await tryOpenStore(options.db, "read", deps);
  try {
    const health: StoreCheck = opened.ok
      ? await storeCheck(opened.store, { clock: deps.clock, schema: opened.schema })
      : {
        kind: isPostgresLocation(options.db) ? "postgres" : "sqlite",
        location: describeLocation(options.db),
        schemaVersion: opened.schemaVersion,
        knownVersion: opened.knownVersion ?? await knownSchemaVersion(options.db),
        reachable: false,
        readMs: null,
        error: opened.problem,
      };
    const readable = opened.ok && health.reachable ? opened.store : null;
    // A store migrate-store retired: said first, so nobody mistakes it for the live one.
    const moved = opened.ok ? opened.moved : null;
    // A file with errors is not in force: a daemon keeps running the last
    // good definitions, which the store keeps, so those are what is shown.
    const stored = loaded.errors.length > 0 ? await storedConfig(readable) : null;
    const view = await statusView({ store: readable, config: loaded.config ?? stored, now });
    const pipelines = readable
      ? await pipelinesView({ store: readable, pipelines: loaded.config?.pipelines ?? [], now })
      : [];
    if (options.json) {
      deps.out(safeJson({
        now: iso(now),
        store: health,
        moved: moved && { to: moved.to, at: iso(moved.at), actor: moved.actor },
        config: {
          file: options.config,
          ok: loaded.config !== null,
          error: loaded.problem,
          schedulesFrom: loaded.config !== null ? "file" : stored !== null ? "store" : null,
        },
        // Nothing that looks healthy about a store that cannot be read: no lists.
        queues: readable ? view.queues.map(queueJson) : [],
        nodes: view.nodes.map(nodeJson),
        schedules: readable ? view.schedules.map(scheduleJson) : [],
        pipelines: pipelines.map((p) => pipelineStatusJson(p)),
        leader: leaderJson(view.leader),
      }));
    } else {
      if (moved) deps.out(`MOVED: ${cell(movedNotice(options.db, moved))}`);
      const problem = loaded.problem && notInForce(loaded, stored);
      for (const line of statusText(view, health, problem, stored)) deps.out(line);
      if (pipelines.length > 0) {
        deps.out("");
        deps.out("pipelines:");
        for (const p of pipelines) deps.out(`  ${pipelineStatusText(p, now)}`);
      }
    }
    if (!health.reachable) {
      throw new CommandFailed(
        `jobs status: the store is not readable: ${echo(firstLine(health.error ?? ""), 400)}`,
      );
    }
  } finally {
    if (opened.ok) await opened.store.close();
  }
}

/**
 * The line that says the schedules file has errors and is not in force,
 * with its first error (file:line), and where the schedules shown come from.
 */
export function notInForce(
  loaded: Pick<LoadedConfig, "file" | "errors" | "problem">,
  stored: ScheduleConfig | null,
): string {
  const shown = stored === null
    ? "the store cannot be read, so what a daemon runs is unknown"
    : stored.schedules.length > 0
    ? "a daemon keeps running the last good definitions, shown below as the store has them"
    : "the store has no definitions synced by a daemon to show";
  const what = loaded.errors.some((e) => e.code === "file-unreadable")
    ? "cannot be read"
    : "has errors";
  return `${loaded.file} ${what} and is not in force (${shown}): ${loaded.problem}`;
}

function statusText(
  view: StatusView,
  health: StoreCheck,
  configProblem: string | null,
  stored: ScheduleConfig | null = null,
): string[] {
  const now = view.now;
  const lines = [`status at ${iso(now)}`, "", `store: ${healthText(health)}`];
  if (configProblem) lines.push(`schedules file: ${cell(configProblem)}`);
  if (!health.reachable) {
    // Nothing that looks healthy about a store that cannot be read.
    lines.push("", "(no queues, nodes or schedules shown: the store cannot be read)");
    return lines;
  }

  lines.push("", "queues:");
  if (view.queues.length === 0) lines.push("  none");
  const rows = table(view.queues.map(queueCells));
  view.queues.forEach((q, i) => {
    lines.push(`  ${rows[i]}`);
    if (q.paused && q.pause) lines.push(`    ${pauseText(q.pause, now)}`);
  });

  lines.push("", "nodes:");
  if (view.nodes.length === 0) lines.push("  none registered");
  lines.push(...table(view.nodes.map((n) => nodeCells(n, now))).map((l) => `  ${l}`));
  lines.push(`  ${leaderText(view.leader, now)}`);

  lines.push("", "schedules:");
  if (view.schedules.length === 0) lines.push("  none");
  for (const s of view.schedules) {
    const definition = stored?.schedules.find((d) => d.id === s.id);
    lines.push(...scheduleLines(s, now, stored && storedText(s, definition)).map((l) => `  ${l}`));
  }
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

/** `paused by ada 2026-... (3m ago): provider outage`, or who else may have. */
function pauseText(pause: NonNullable<QueueView["pause"]>, now: number): string {
  if (pause.actor === null) {
    return `paused ${when(pause.at, now)}, by no operator on record ` +
      `(a schedules file's paused: true, or a library call)`;
  }
  return `paused by ${cell(pause.actor)} ${when(pause.at, now)}: ${
    cell(pause.reason ?? "no reason given")
  }`;
}

function nodeCells(n: NodeView, now: number): string[] {
  const queues = Object.entries(n.queues).map(([q, c]) => `${cell(q)}:${c}`).join(",");
  return [
    cell(n.node),
    queues || "-",
    `heartbeat ${when(n.heartbeatAt, now)}`,
    `started ${when(n.startedAt, now)}`,
    n.environment === null ? "" : `environment ${cell(n.environment)}`,
    n.stale ? "STALE" : "",
  ];
}

/** Which node runs the maintenance passes (the lifeline's rescues among them). */
function leaderText(leader: LeaderView | null, now: number): string {
  if (leader === null) {
    return "leader: none recorded (every node runs maintenance: SQLite, or no daemon on PostgreSQL yet)";
  }
  if (leader.node === null) {
    return "leader: none (released on a clean stop; the next daemon takes it)";
  }
  const since = `since ${when(leader.acquiredAt, now)}`;
  return leader.expired
    ? `leader: none: ${cell(leader.node)}'s hold ran out ${when(leader.expiresAt, now)}`
    : `leader: ${cell(leader.node)} (maintenance, ${since})`;
}

/** `last: discarded 46s ago, 5 failures in a row`, or null before any occurrence ended. */
function outcomeText(s: ScheduleStatus, now: number): string | null {
  if (s.lastOutcome === null) return null;
  const run = failuresText(s.failures);
  return `last: ${s.lastOutcome} ${when(s.lastOutcomeAt, now)}${run === null ? "" : `, ${run}`}`;
}

/** `(as stored: cron "0 3 * * *" in UTC, definition abc123def456)`: what a daemon runs. */
function storedText(s: ScheduleStatus, definition: Schedule | undefined): string {
  const timing = definition
    ? `${cell(rhythmText(definition))} in ${cell(definition.timezone)}, `
    : "";
  return `(as stored: ${timing}definition ${shortHash(s.definitionHash)})`;
}

function scheduleLines(s: ScheduleStatus, now: number, stored: string | null = null): string[] {
  const state = s.enabled
    ? "enabled"
    : s.disabledIn === "store"
    ? `disabled by ${cell(s.disabledBy ?? "unknown")} ${when(s.disabledAt, now)}: ${
      cell(s.disabledReason ?? "no reason given")
    }`
    : "disabled in the file";
  // Each instant in UTC and, for a schedule in another zone, in its own.
  const zone = s.timezone;
  const nextRun = s.next !== null
    ? when(s.next, now, zone)
    : s.manual
    ? "manual (runs when someone runs it)"
    : s.declared
    ? "none"
    : "none (not in the schedules file)";
  const lines = [
    // From the store (the file has errors): say which definition runs.
    `${cell(s.id)}  ${state}${stored ? `  ${stored}` : ""}`,
    `  next ${nextRun}; misfires ${s.misfires}${
      s.lastMisfireFor !== null ? ` (last ${when(s.lastMisfireFor, now, zone)})` : ""
    }`,
    `  last started ${when(s.lastStartedAt, now, zone)}, completed ${
      when(s.lastCompletedAt, now, zone)
    }`,
  ];
  const outcome = outcomeText(s, now);
  if (outcome !== null) lines.push(`  ${outcome}`);
  return lines;
}

function queueJson(q: QueueView) {
  return { ...q, pause: q.pause === null ? null : { ...q.pause, at: iso(q.pause.at) } };
}

function nodeJson(n: NodeView) {
  return { ...n, startedAt: iso(n.startedAt), heartbeatAt: iso(n.heartbeatAt) };
}

function leaderJson(l: LeaderView | null) {
  return l === null ? null : { ...l, acquiredAt: iso(l.acquiredAt), expiresAt: iso(l.expiresAt) };
}

/** `pipeline catalog: STALE (...); last run 12 completed 3m ago`. */
function pipelineStatusText(p: PipelineView, now: number): string {
  const last = p.recent[0];
  return `pipeline ${cell(p.id)}: ${freshnessText(p, now)}; ` +
    (last
      ? `last run ${last.id} ${last.state} ${when(last.finishedAt ?? last.startedAt, now)}`
      : "no runs");
}

/** A pipeline as `jobs status --json` prints it: its freshness and last run. */
function pipelineStatusJson(p: PipelineView) {
  const last = p.recent[0];
  return {
    id: p.id,
    stale: p.freshness?.stale ?? false,
    freshness: p.freshness &&
      { ...p.freshness, lastCompletedAt: iso(p.freshness.lastCompletedAt) },
    lastRun: last ? { id: last.id, state: last.state, finishedAt: iso(last.finishedAt) } : null,
    droppedLastHour: p.droppedLastHour,
  };
}

/** A schedule's status as `--json` prints it: instants as ISO UTC. */
export function scheduleJson(s: ScheduleStatus) {
  return {
    ...s,
    disabledAt: iso(s.disabledAt),
    next: iso(s.next),
    lastPlannedFor: iso(s.lastPlannedFor),
    lastStartedAt: iso(s.lastStartedAt),
    lastCompletedAt: iso(s.lastCompletedAt),
    lastMisfireFor: iso(s.lastMisfireFor),
    lastOutcomeAt: iso(s.lastOutcomeAt),
  };
}

// ------------------------------------------------------------------------ ls

interface LsOptions extends JobFilterOptions {
  limit: number;
}

/** `jobs ls`: one line per job, newest first. */
export async function lsCommand(
  options: { db: string; filter: JobFilter; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const { store } = await openStore("ls", options.db, "read", deps);
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
    const header = [
      "ID",
      "STATE",
      "QUEUE",
      "WORKER",
      "TRY",
      "NODE",
      "OCCURRENCE",
      "WHEN",
      "LAST ERROR",
    ];
    for (const line of table([header, ...jobs.map((j) => jobCells(j, now))])) deps.out(line);
  } finally {
    await store.close();
  }
}

function jobCells(job: Job, now: number): string[] {
  const finished = finishedAt(job);
  // A completed job's last error is an earlier attempt's, which the
  // completion made moot: shown beside it, it reads as the job's failure.
  const last = job.state === "completed" ? undefined : job.errors.at(-1)?.error;
  return [
    String(job.id),
    job.state,
    cell(job.queue),
    cell(job.worker),
    `${job.attempt}/${job.maxAttempts}`,
    // The node running an executing job, else the one that ran its last attempt.
    job.attemptedBy === null ? "-" : cell(job.attemptedBy),
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
  options: { db: string; ref: string; json: boolean; zoneOf?: ZoneOf },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const { store } = await openStore("show", options.db, "read", deps);
  try {
    const detail = await jobDetail(store, options.ref, options.zoneOf);
    if (!detail) {
      const kind = /^\d+$/.test(options.ref) ? "job" : "job with occurrence";
      const where = echo(describeLocation(options.db));
      const miss = await occurrenceMiss(store, options.ref, options.zoneOf);
      throw new CommandFailed(
        `jobs show: no ${kind} "${echo(options.ref, miss === "" ? undefined : REF_CUT)}" in ` +
          `the store "${where}"${echo(miss, HINT_CUT)}`,
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
    // A retryable job's scheduled_at is when it tries again: say so, and how far off.
    ...(job.state === "retryable"
      ? [["next attempt", nextAttemptWhen(job.scheduledAt, now)] as [string, string]]
      : []),
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

  const { byAttempt, loose } = errorsByAttempt(job, attempts);
  lines.push("", `attempts (${attempts.length}):`);
  if (attempts.length === 0) lines.push("  none");
  for (const a of attempts) lines.push(...attemptLines(a, byAttempt.get(a) ?? [], now));

  // Errors whose attempt has no row (pruned, or written by an operator's
  // action after the last attempt): shown once, here.
  if (loose.length > 0) {
    lines.push("", `other errors (${loose.length}, oldest first):`);
    for (const e of loose) {
      lines.push(`  attempt ${e.attempt} at ${at(e.at)}:`, ...block(e.error, "    "));
    }
  }

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

/**
 * Each distinct error once. A node or the lifeline writes a failure twice in
 * one transaction, to the job's errors and to its attempt row, with the same
 * attempt number and instant: such an error belongs to that attempt and is
 * shown under it. The attempt number alone does not say it (a snooze reuses
 * the number; an operator's cancel of a waiting job records the previous
 * one), so an error without an attempt row of its number and instant
 * (pruned, or an operator's) is shown once among the other errors.
 */
function errorsByAttempt(
  job: Job,
  attempts: Attempt[],
): { byAttempt: Map<Attempt, string[]>; loose: Job["errors"] } {
  const byAttempt = new Map<Attempt, string[]>();
  for (const a of attempts) byAttempt.set(a, a.error === null ? [] : [redact(a.error)]);
  const loose: Job["errors"] = [];
  for (const e of job.errors) {
    const error = redact(e.error);
    const owner = attempts.find((a) => a.attempt === e.attempt && a.finishedAt === e.at);
    if (!owner) {
      if (!loose.some((l) => l.attempt === e.attempt && l.error === error)) {
        loose.push({ ...e, error });
      }
      continue;
    }
    const shown = byAttempt.get(owner)!;
    if (!shown.includes(error)) shown.push(error);
  }
  return { byAttempt, loose };
}

function attemptLines(a: Attempt, errors: string[], now: number): string[] {
  const took = a.finishedAt !== null && a.finishedAt > a.startedAt
    ? ` (took ${formatDuration(a.finishedAt - a.startedAt)})`
    : "";
  const lines = [
    `  #${a.attempt} ${a.kind} on ${a.node === null ? "-" : cell(a.node)}, fence ${a.fence}: ${
      a.outcome ?? "running"
    }`,
    `    started ${when(a.startedAt, now)}, finished ${when(a.finishedAt, now)}${took}`,
  ];
  if (a.definition !== null) lines.push(`    definition ${shortHash(a.definition)}`);
  if (a.actor !== null || a.reason !== null) {
    lines.push(
      `    by ${a.actor === null ? "-" : cell(a.actor)}${
        a.reason === null ? "" : `: ${cell(a.reason)}`
      }`,
    );
  }
  for (const error of errors) lines.push("    error:", ...block(error, "      "));
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
