/**
 * A schedule's runbook: its operator procedures (inspect, replay, disable /
 * enable, run now, pause the queue), each with the commands to paste, and
 * its timing summarized; pure, so the command line (`jobs runbook`) and the
 * web console (a schedule's page) print the same commands. Every command
 * is the program's invocation and its words shell-quoted, a reason left as
 * a placeholder refused if pasted unedited (`src/admin/audit.ts`).
 *
 * @module
 */

import type { Job, JobState } from "../kernel/types.ts";
import { misfireText, rhythmText } from "../schedule/describe.ts";
import type { Schedule } from "../schedule/types.ts";
import { describeLocation } from "../store/open.ts";
import { formatDuration } from "../text/durations.ts";
import { shellQuote } from "../text/shell.ts";
import { reasonPlaceholder } from "./audit.ts";
import { iso } from "./job_json.ts";
import type { ScheduleStatus } from "./schedules.ts";

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

/**
 * Where a command to paste takes `--reason`, for the person to fill in:
 * printed as `--reason '<why you are disabling it>'`, plainly unfinished, and
 * refused if pasted unedited (see `src/admin/audit.ts`).
 */
export interface Why {
  why: string;
}

/** The reason placeholder of a command that is `doing` (`disabling it`). */
export function why(doing: string): Why {
  return { why: reasonPlaceholder(doing) };
}

/** A command line to paste: `program` and `words`, each quoted; a {@linkcode Why} as its `--reason`. */
export function pasteLine(program: string, words: (string | Why)[]): string {
  return words.reduce<string>(
    (line, word) =>
      `${line} ${typeof word === "string" ? shellQuote(word) : `--reason ${shellQuote(word.why)}`}`,
    program,
  );
}

/**
 * The procedures of one schedule, every command ready to paste: `program`
 * (such as `jobsctl`) and the words, with `--db` and `--config` repeated
 * only when `given` on the command line.
 */
export function runbookOf(
  schedule: Schedule,
  state: ScheduleStatus,
  latest: Job | null,
  given: { db?: string; config?: string },
  program: string,
): Runbook {
  // Pasted and shown: without credentials (the person's own environment supplies them).
  const db = given.db === undefined ? [] : ["--db", describeLocation(given.db)];
  const config = given.config === undefined ? [] : ["--config", given.config];
  // The reason is for the person to write: printed as a placeholder they cannot miss.
  const paste = (...words: (string | Why)[]) => pasteLine(program, words);
  const occurrence = latest?.occurrence ?? null;
  const manual = schedule.rhythm.kind === "manual";

  const inspect: Procedure = {
    title: "Inspect",
    notes: occurrence === null ? ["No occurrence in the store yet."] : [
      `Latest occurrence: ${occurrence} (job ${latest!.id}, ${latest!.state}).`,
    ],
    commands: [
      paste("ls", "--schedule", schedule.id, ...db),
      ...(occurrence === null ? [] : [paste("show", occurrence, ...db)]),
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
      paste("replay", occurrence, why("replaying it"), ...db),
      ...(latest!.state === "executing"
        ? [paste("replay", occurrence, "--force", why("breaking its lease to replay it"), ...db)]
        : []),
    ],
  };
  const toggle: Procedure = {
    title: "Disable / enable",
    notes: [
      "Stored: survives restarts and reloads. Nothing new is planned while disabled; " +
      "an occurrence already claimed finishes.",
      ...(state.disabledIn === "file"
        ? [`It is disabled in the schedules file: "${program} enable" does not override that.`]
        : []),
      ...(manual
        ? []
        : [`Enabling applies the misfire policy (${schedule.misfire.policy}) to the gap.`]),
    ],
    commands: [
      paste("disable", schedule.id, why("disabling it"), ...db, ...config),
      paste("enable", schedule.id, why("enabling it"), ...db, ...config),
    ],
  };
  const environment = manual && schedule.runsWhere !== undefined
    ? ["--environment", schedule.runsWhere]
    : [];
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
    commands: [paste("run", schedule.id, ...environment, why("running it now"), ...db, ...config)],
  };
  const pause: Procedure = {
    title: "Pause the queue",
    notes: [
      `Stops every process claiming from queue "${schedule.queue}", not only this schedule's ` +
      "occurrences; running jobs finish.",
    ],
    commands: [
      paste("pause", schedule.queue, why("pausing the queue"), ...db, ...config),
      paste("resume", schedule.queue, why("resuming the queue"), ...db, ...config),
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
