/**
 * Which definition a retried or replayed job runs. An operator fixes
 * `schedules.yaml`, sees `config.reloaded`, and replays the failed
 * occurrence: it must run the fixed command, not the one it was planned
 * with. So by default a schedule's job runs the schedule's live definition
 * (rebuilt as the planner builds it, for the same occurrence), and
 * `--as-planned` keeps the stored one. A job whose schedule is gone, or that
 * is no schedule's, runs as planned, and the choice says why.
 *
 * @module
 */

import { redact } from "../kernel/redact.ts";
import { runSettingsOf, withoutRunSettings } from "../kernel/run_settings.ts";
import type { Job, JobDefinition } from "../kernel/types.ts";
import { occurrenceId } from "../schedule/occurrences.ts";
import { definitionHash, occurrenceJob } from "../schedule/plan.ts";
import type { Schedule } from "../schedule/types.ts";

/**
 * The schedules file as the acting command read it, the source of live
 * definitions; `schedules: null` when there is no such file.
 */
export interface LiveSchedules {
  file: string;
  schedules: readonly Schedule[] | null;
}

/** What a retry or replay of one job will run, said before and after it acts. */
export interface DefinitionChoice {
  /** `live`: the schedule's definition in the file now; `as-planned`: the job's own. */
  runs: "live" | "as-planned";
  /** Why a job runs as planned (null when it runs live). */
  why: string | null;
  /** The hash of the definition the job was planned with (null: not recorded). */
  planned: string | null;
  /** The hash of the definition that runs (null: not recorded). */
  hash: string | null;
  /** What differs between the planned and the live definition: `field: old -> new`. */
  differences: string[];
}

/**
 * Chooses the definition `job` runs when retried or replayed, and the
 * rewrite that makes it run (null when the stored one runs unchanged).
 */
export function chooseDefinition(
  job: Job,
  live: LiveSchedules | null,
  asPlanned: boolean,
): { choice: DefinitionChoice; definition: JobDefinition | null } {
  const planned = runSettingsOf(job.meta).definition ?? null;
  const stay = (why: string) => ({
    choice: { runs: "as-planned" as const, why, planned, hash: planned, differences: [] },
    definition: null,
  });
  if (job.scheduleId === null) {
    return stay(
      "parent" in job.meta
        ? "a fan-out item runs as its run planned it"
        : "it is not a schedule's occurrence",
    );
  }
  if (asPlanned) return stay("--as-planned");
  if (live === null || live.schedules === null) {
    return stay(`no schedules file at ${JSON.stringify(live?.file ?? "")} to take it from`);
  }
  const schedule = live.schedules.find((s) => s.id === job.scheduleId);
  if (!schedule) {
    return stay(`schedule ${JSON.stringify(job.scheduleId)} is no longer in ${live.file}`);
  }
  const definition = liveDefinition(job, schedule);
  const hash = definitionHash(schedule);
  const differences = differencesOf(job, definition);
  return {
    choice: { runs: "live", why: null, planned, hash, differences },
    definition: differences.length > 0 || planned !== hash ? definition : null,
  };
}

/** The job `schedule` would plan today for `job`'s occurrence, keeping the job's own meta keys. */
function liveDefinition(job: Job, schedule: Schedule): JobDefinition {
  const at = job.scheduledFor ?? job.scheduledAt;
  const rebuilt = occurrenceJob(schedule, {
    at,
    occurrence: job.occurrence ?? occurrenceId(schedule.id, at),
    local: "",
    note: "",
  });
  const meta: Record<string, unknown> = {
    ...withoutRunSettings(job.meta),
    ...JSON.parse(rebuilt.meta),
  };
  // A manual run carries the environment it may touch: the live one.
  if ("runsWhere" in job.meta) {
    if (schedule.runsWhere === undefined) delete meta.runsWhere;
    else meta.runsWhere = schedule.runsWhere;
  }
  return {
    worker: rebuilt.worker,
    args: rebuilt.args,
    meta: JSON.stringify(meta),
    tags: rebuilt.tags,
    queue: rebuilt.queue,
    priority: rebuilt.priority,
    maxAttempts: rebuilt.maxAttempts,
  };
}

const SHOWN = 60;

/** `args.command: ["sh","-c","exit 1"] -> ["sh","-c","true"]`, one line per differing leaf. */
function differencesOf(job: Job, next: JobDefinition): string[] {
  const lines: string[] = [];
  const field = (name: string, was: unknown, now: unknown) => diff(name, was, now, lines);
  field("worker", job.worker, next.worker);
  field("queue", job.queue, next.queue);
  field("priority", job.priority, next.priority);
  field("max_attempts", job.maxAttempts, next.maxAttempts);
  field("tags", job.tags, JSON.parse(next.tags));
  field("args", job.args, JSON.parse(next.args));
  const settings = runSettingsOf(next.meta);
  const old = runSettingsOf(job.meta);
  field("timeout_ms", old.timeoutMs, settings.timeoutMs);
  field("backoff", old.backoff, settings.backoff);
  field("retention_ms", old.retentionMs, settings.retentionMs);
  return lines;
}

function diff(path: string, was: unknown, now: unknown, out: string[]): void {
  if (isRecord(was) && isRecord(now)) {
    for (const key of new Set([...Object.keys(was), ...Object.keys(now)])) {
      diff(`${path}.${key}`, was[key], now[key], out);
    }
    return;
  }
  const a = shown(was);
  const b = shown(now);
  if (a !== b) out.push(`${path}: ${a} -> ${b}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A value as JSON, redacted and cut, for one line of a preview. */
function shown(value: unknown): string {
  if (value === undefined) return "(none)";
  const text = redact(JSON.stringify(value));
  return text.length > SHOWN ? `${text.slice(0, SHOWN - 1)}…` : text;
}

/** `abc123def456`: enough of a definition hash to tell two apart. */
export function shortHash(hash: string | null): string {
  return hash === null ? "(not recorded)" : hash.slice(0, 12);
}

/** One line for a preview or a result: which definition runs, and what differs. */
export function definitionText(choice: DefinitionChoice): string {
  if (choice.runs === "as-planned") {
    const which = choice.planned === null ? "" : ` (definition ${shortHash(choice.planned)})`;
    return `runs as planned${which}: ${choice.why}`;
  }
  const live = `runs the live definition ${shortHash(choice.hash)}`;
  if (choice.differences.length === 0) return `${live}, the same as planned`;
  const planned = choice.planned === null
    ? "planned before definitions were recorded"
    : `planned ${shortHash(choice.planned)}`;
  return `${live} (${planned}): ${choice.differences.join("; ")}`;
}
