/**
 * `jobs check` and `jobs next`: read `schedules.yaml` and report, without
 * touching the store.
 *
 * @module
 */

import { loadSchedules } from "../schedule/config.ts";
import { next } from "../schedule/occurrences.ts";
import type { ScheduleConfig } from "../schedule/types.ts";
import { CommandFailed } from "./program.ts";
import { escapeControl } from "./text.ts";

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** Loads the file or fails the command with every error, one per line (or as JSON). */
async function loadOrFail(config: string, json: boolean, io: Output): Promise<ScheduleConfig> {
  const result = await loadSchedules(config);
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
  const config = await loadOrFail(options.config, options.json, io);
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
