/**
 * `jobs status`: the queues, the nodes (and which one leads the
 * maintenance), the schedules, the pipelines and the store's health, as
 * text for a person (stored text escaped, instants in ISO UTC with a
 * relative age) or, with `--json`, stable JSON for a program. It reads
 * through `src/admin/store.ts` and opens the store in `read` mode: nothing
 * is created or migrated.
 *
 * @module
 */

import type { Command } from "commander";
import { shortHash } from "../../admin/definitions.ts";
import { pipelinesView, type PipelineView } from "../../admin/pipelines.ts";
import { failuresText, type ScheduleStatus, storedConfig } from "../../admin/schedules.ts";
import type { LeaderView, NodeView } from "../../admin/nodes.ts";
import type { QueueView } from "../../admin/queues.ts";
import {
  statusJson,
  type StatusView,
  statusView,
  type StoreCheck,
  storeCheck,
} from "../../admin/store.ts";
import { JOB_STATES } from "../../kernel/types.ts";
import { rhythmText, when } from "../../schedule/describe.ts";
import type { Schedule } from "../../schedule/types.ts";
import type { ScheduleConfig } from "../../config/types.ts";
import { describeLocation, isPostgresLocation, knownSchemaVersion } from "../../store/open.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  quiet,
} from "../common.ts";
import { loadConfig, notInForce } from "../config.ts";
import { freshnessText } from "../pipelines.ts";
import { movedNotice, tryOpenStore } from "./open.ts";
import { cell, echo, firstLine, iso, safeJson, table } from "../text.ts";

const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `status` on the program. */
export function registerStatusCommand(program: Command, deps: CliDeps): void {
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
}

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
      const { now: at, store, ...rest } = statusJson({ view, health, pipelines });
      deps.out(safeJson({
        now: at,
        store,
        moved: moved && { to: moved.to, at: iso(moved.at), actor: moved.actor },
        config: {
          file: options.config,
          ok: loaded.config !== null,
          error: loaded.problem,
          schedulesFrom: loaded.config !== null ? "file" : stored !== null ? "store" : null,
        },
        ...rest,
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

/** `pipeline catalog: STALE (...); last run 12 completed 3m ago`. */
function pipelineStatusText(p: PipelineView, now: number): string {
  const last = p.recent[0];
  return `pipeline ${cell(p.id)}: ${freshnessText(p, now)}; ` +
    (last
      ? `last run ${last.id} ${last.state} ${when(last.finishedAt ?? last.startedAt, now)}`
      : "no runs");
}
