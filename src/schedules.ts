/**
 * Schedules in your own process (`@jobs/jobs/schedules`): what `jobs daemon`
 * does with `schedules.yaml`, for a library user who runs the planner in a
 * runtime of their own. {@linkcode loadSchedules} (or
 * {@linkcode parseSchedules} for text) validates a file the way `jobs check`
 * does, every error a {@linkcode ConfigError} naming the file, line, column,
 * field and value; `jobs.start({ schedules: () => config.schedules })`
 * plans and runs what it declares (one job per occurrence, however many
 * nodes plan at once). {@linkcode next} and {@linkcode between} list a
 * schedule's occurrences. A schedule's `command`, `http` and fan-out runs
 * are jobs of the built-in runners, which the daemon registers itself and a
 * library user registers with the other workers: {@linkcode commandWorker},
 * {@linkcode httpWorker}, {@linkcode fanoutWorker}.
 *
 * @example Read a schedule, list its next occurrences, plan it in a runtime
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineWorker, openJobs, silentLogger } from "@jobs/jobs";
 * import { next, parseSchedules } from "@jobs/jobs/schedules";
 *
 * const parsed = parseSchedules(
 *   `version: 1
 * schedules:
 *   - id: daily-report
 *     cron: "0 7 * * *"
 *     timezone: Europe/London
 *     local_time: { reason: read at the start of the London day, gap: shift, overlap: first }
 *     run: { worker: daily_report }
 * `,
 *   "schedules.yaml",
 * );
 * if (!parsed.ok) throw new Error(parsed.errors.map((e) => e.message).join("\n"));
 * const [daily] = parsed.config.schedules;
 * // 07:00 in London is 06:00 UTC in summer and 07:00 UTC in winter.
 * const instants = next(daily!, Date.UTC(2026, 9, 24), 2).map((o) => o.occurrence);
 * assert.deepEqual(instants, [
 *   "daily-report@2026-10-24T06:00:00.000Z",
 *   "daily-report@2026-10-25T07:00:00.000Z",
 * ]);
 *
 * const dailyReport = defineWorker({ name: "daily_report", perform: () => {} });
 * const jobs = await openJobs(":memory:", { workers: [dailyReport], logger: silentLogger });
 * await jobs.start({ schedules: () => parsed.config.schedules });
 * await jobs.close();
 * ```
 *
 * @module
 */

export {
  type ConfigError,
  type ConfigErrorCode,
  type LoadOptions,
  loadSchedules,
  type ParseOptions,
  type ParseResult,
  parseSchedules,
  type ProgramFiles,
} from "./config/load.ts";
export { between, next } from "./schedule/occurrences.ts";
export type {
  FanOut,
  GapPolicy,
  LocalTimePolicy,
  MisfirePolicy,
  Occurrence,
  OverlapPolicy,
  Rhythm,
  Schedule,
  Timing,
} from "./schedule/types.ts";
export type { PrunerConfig, ScheduleConfig } from "./config/types.ts";
export type { RunSpec, Selection } from "./kernel/runs.ts";
export {
  commandWorker,
  type CommandWorkerOptions,
  EXIT_CANCEL,
  EXIT_DISCARD,
  EXIT_SNOOZE,
} from "./runners/command.ts";
export { COMMAND_WORKER, type CommandRun } from "./kernel/runs.ts";
export { httpWorker, type HttpWorkerOptions, retryAfterMs } from "./runners/http.ts";
export { HTTP_WORKER, type HttpRun } from "./kernel/runs.ts";
export {
  defineSelection,
  FANOUT_WORKER,
  type FanOutRun,
  fanoutWorker,
  type FanoutWorkerOptions,
  type SelectionOptions,
} from "./runners/fanout.ts";
export { loadWorkersModule, WorkersModuleError } from "./runners/workers_module.ts";
