/**
 * What the dashboard can do, as one interface ({@linkcode DashboardActions})
 * whose store-backed implementation calls only `src/admin/actions.ts`: the
 * same functions the runbook commands call, so every action is audited the
 * same way, with the operator's name and the clock's now.
 *
 * @module
 */

import {
  applyJobAction,
  type JobAction,
  replayJob,
  type ReplayResult,
  runScheduleNow,
  setQueuePaused,
  setScheduleEnabled,
  type Skipped,
} from "../admin/actions.ts";
import type { Clock } from "../clock.ts";
import type { InsertResult, Job } from "../kernel/types.ts";
import { definitionHash } from "../worker/planner.ts";
import type { LoadedConfig, StoreSource } from "./data.ts";

/** The operator actions of the dashboard; each rejects with a message a person can read. */
export interface DashboardActions {
  /** Retries, cancels or discards `jobs` (as read for the preview); skips those that no longer qualify. */
  jobs(action: JobAction, jobs: Job[]): Promise<{ changed: Job[]; skipped: Skipped[] }>;
  /** Replays one job with a reason (an executing one is refused: nothing changes). */
  replay(job: Job, reason: string): Promise<ReplayResult>;
  /** Runs a schedule of the schedules file now. */
  runSchedule(id: string, reason: string | null): Promise<InsertResult & { occurrence: string }>;
  /** Disables or enables a schedule, with a reason. */
  setScheduleEnabled(
    id: string,
    enabled: boolean,
    reason: string,
  ): Promise<{ id: string; enabled: boolean; was: boolean }>;
  /** Pauses or resumes a queue for every process on the store. */
  setQueuePaused(
    queue: string,
    paused: boolean,
  ): Promise<{ queue: string; paused: boolean; was: boolean }>;
}

/** Actions on the store of `source`, recorded as done by `actor`. */
export function storeActions(params: {
  source: StoreSource;
  config: () => Promise<LoadedConfig>;
  clock: Clock;
  /** Who acts, for the audit trail (the OS user unless `--actor`). */
  actor: string;
  /** Where this runs: a manual schedule's `runs_where` must match it. */
  environment: string | null;
}): DashboardActions {
  const { source, clock, actor } = params;
  const who = (reason: string | null) => ({ actor, reason, now: clock.now() });
  const declared = async (id: string) => {
    const loaded = await params.config();
    return loaded.config?.schedules.find((s) => s.id === id) ?? null;
  };
  return {
    async jobs(action, jobs) {
      return await applyJobAction(await source.get(), action, jobs, who(null));
    },
    async replay(job, reason) {
      return await replayJob(await source.get(), String(job.id), { ...who(reason), reason }, false);
    },
    async runSchedule(id, reason) {
      const schedule = await declared(id);
      if (!schedule) throw new Error(`no schedule "${id}" in the schedules file`);
      return await runScheduleNow(await source.get(), schedule, who(reason), params.environment);
    },
    async setScheduleEnabled(id, enabled, reason) {
      const schedule = await declared(id);
      return await setScheduleEnabled(
        await source.get(),
        id,
        enabled,
        who(reason),
        schedule ? { hash: definitionHash(schedule), tenant: schedule.tenant ?? null } : null,
      );
    },
    async setQueuePaused(queue, paused) {
      return await setQueuePaused(await source.get(), queue, paused, who(null));
    },
  };
}
