/**
 * `jobs check` and `jobs next`: read `schedules.yaml` and report, without
 * touching the store.
 *
 * @module
 */

import { type LoadOptions, loadSchedules } from "../schedule/config.ts";
import { workerNames } from "../runners/workers_module.ts";
import { formatDuration } from "../schedule/durations.ts";
import { next } from "../schedule/occurrences.ts";
import { misfireText, rhythmText } from "../schedule/describe.ts";
import type { Schedule, ScheduleConfig } from "../schedule/types.ts";
import { openSqliteStore } from "../store/sqlite/sqlite_store.ts";
import type { ScheduleRow } from "../store/store.ts";
import { CommandFailed } from "./program.ts";
import { escapeControl } from "../text/escape.ts";

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** Loads the file or fails the command with every error, one per line (or as JSON). */
async function loadOrFail(
  config: string,
  json: boolean,
  io: Output,
  load: LoadOptions = {},
): Promise<ScheduleConfig> {
  const result = await loadSchedules(config, load);
  if (result.ok) return result.config;
  if (json) io.out(JSON.stringify({ ok: false, file: config, errors: result.errors }, null, 2));
  else for (const error of result.errors) io.err(escapeControl(error.message));
  throw new CommandFailed(
    json ? "" : `${config}: ${result.errors.length} error${result.errors.length === 1 ? "" : "s"}`,
  );
}

/** `jobs check`: exit 0 when the file is valid, 1 with every error. */
export async function checkCommand(
  options: { config: string; json: boolean },
  io: Output,
): Promise<void> {
  // Imports the `workers:` module, if any, to check each worker a schedule names.
  const config = await loadOrFail(options.config, options.json, io, { workers: workerNames });
  const queues = Object.keys(config.queues).length;
  if (options.json) {
    io.out(JSON.stringify(
      { ok: true, file: options.config, schedules: config.schedules.length, queues },
      null,
      2,
    ));
    return;
  }
  io.out(
    `${escapeControl(options.config)}: valid, ${config.schedules.length} schedule${
      config.schedules.length === 1 ? "" : "s"
    }, ${queues} queue${queues === 1 ? "" : "s"}`,
  );
}

/** `jobs next <id>`: the next occurrences of one schedule after `from`. */
export async function nextCommand(
  options: { id: string; config: string; from: number; count: number; json: boolean },
  io: Output,
): Promise<void> {
  const config = await loadOrFail(options.config, options.json, io);
  const schedule = config.schedules.find((s) => s.id === options.id);
  if (!schedule) {
    const known = config.schedules.map((s) => `"${s.id}"`).join(", ");
    throw new CommandFailed(
      `jobs next: no schedule "${escapeControl(options.id)}" in ${
        escapeControl(options.config)
      }; it has ${known || "none"}`,
    );
  }
  const occurrences = next(schedule, options.from, options.count);
  if (options.json) {
    io.out(JSON.stringify(
      occurrences.map((o) => ({
        at: new Date(o.at).toISOString(),
        occurrence: o.occurrence,
        local: o.local,
        note: o.note,
      })),
      null,
      2,
    ));
    return;
  }
  if (schedule.rhythm.kind === "manual") {
    io.out(`${schedule.id} is manual: it runs only when someone runs it`);
    return;
  }
  if (occurrences.length === 0) {
    io.out(`${schedule.id} has no occurrence after ${new Date(options.from).toISOString()}`);
    return;
  }
  for (const o of occurrences) {
    io.out(`${new Date(o.at).toISOString()}  ${o.local}${o.note ? `  (${o.note})` : ""}`);
  }
}

/** One schedule as `jobs schedules` shows it. */
interface ScheduleView {
  id: string;
  rhythm: string;
  timezone: string;
  localTime: string | null;
  misfire: string;
  overlapPolicy: string;
  enabled: boolean;
  disabledReason: string | null;
  lastPlannedFor: string | null;
  lastStartedAt: string | null;
  lastCompletedAt: string | null;
  misfires: number;
  next: string | null;
}

/** `jobs schedules`: every schedule of the file with its stored state and next occurrence. */
export async function schedulesCommand(
  options: { config: string; db: string; json: boolean; now: number },
  io: Output,
): Promise<void> {
  const config = await loadOrFail(options.config, options.json, io);
  const rows = await storedRows(options.db, config.schedules.map((s) => s.id));
  const views = config.schedules.map((s) => view(s, rows.get(s.id), options.now));
  if (options.json) {
    io.out(JSON.stringify(views, null, 2));
    return;
  }
  if (views.length === 0) {
    io.out(`${escapeControl(options.config)} declares no schedule`);
    return;
  }
  for (const v of views) {
    const state = v.enabled ? "enabled" : `disabled: ${v.disabledReason ?? "no reason given"}`;
    io.out(
      `${v.id}  ${v.rhythm}  ${v.timezone}${v.localTime ? ` (${v.localTime})` : ""}  ${state}`,
    );
    io.out(
      `  misfire ${v.misfire}, overlap ${v.overlapPolicy}; misfires ${v.misfires}; next ${
        v.next ?? "none"
      }`,
    );
    io.out(
      `  last planned ${v.lastPlannedFor ?? "never"}, started ${v.lastStartedAt ?? "never"}, ` +
        `completed ${v.lastCompletedAt ?? "never"}`,
    );
  }
}

/** The stored rows, or none when the database does not exist yet (nothing is created). */
async function storedRows(db: string, ids: string[]): Promise<Map<string, ScheduleRow>> {
  try {
    await Deno.stat(db);
  } catch {
    return new Map();
  }
  const store = await openSqliteStore(db);
  try {
    return new Map((await store.schedulesList({ ids })).map((r) => [r.id, r]));
  } finally {
    await store.close();
  }
}

function view(schedule: Schedule, row: ScheduleRow | undefined, now: number): ScheduleView {
  const iso = (ms: number | null | undefined) => ms == null ? null : new Date(ms).toISOString();
  const [following] = next(schedule, now, 1);
  const lt = schedule.localTime;
  return {
    id: escapeControl(schedule.id),
    rhythm: escapeControl(rhythmText(schedule)),
    timezone: schedule.timezone,
    localTime: lt ? `gap ${lt.gap}, overlap ${lt.overlap}: ${escapeControl(lt.reason)}` : null,
    misfire: misfireText(schedule),
    overlapPolicy: schedule.overlapPolicy,
    enabled: schedule.enabled && (row?.enabled ?? true),
    disabledReason: !schedule.enabled
      ? "disabled in the file"
      : row && !row.enabled
      ? escapeControl(row.disabledReason ?? "no reason given")
      : null,
    lastPlannedFor: iso(row?.lastPlannedFor),
    lastStartedAt: iso(row?.lastStartedAt),
    lastCompletedAt: iso(row?.lastCompletedAt),
    misfires: row?.misfires ?? 0,
    next: following ? iso(following.at) : null,
  };
}
