/**
 * What the dashboard can do, as one interface ({@linkcode DashboardActions})
 * whose store-backed implementation calls only the doors of `src/admin/`
 * (`jobs.ts`, `queues.ts`, `schedules.ts`, `workflows.ts`): the same functions
 * the runbook commands call, so every action is audited the same way, with
 * the operator's name and the clock's now.
 *
 * @module
 */

import {
  applyJobAction,
  AS_PLANNED,
  type DefinitionSource,
  type JobAction,
  replayJob,
  type ReplayResult,
  type Skipped,
} from "../admin/jobs.ts";
import { runScheduleNow, setScheduleEnabled } from "../admin/schedules.ts";
import { setQueuePaused } from "../admin/queues.ts";
import type { DefinitionChoice } from "../admin/definitions.ts";
import {
  cancelWorkflowRun,
  retryWorkflowRun,
  type WorkflowActionDone,
} from "../admin/workflows.ts";
import type { Clock } from "../clock.ts";
import type { InsertResult, Job } from "../kernel/types.ts";
import { definitionHash } from "../runtime/planner.ts";
import type { RunState } from "../workflow/types.ts";
import type { LoadedConfig, StoreSource } from "./data.ts";

/** The operator actions of the dashboard; each rejects with a message a person can read. */
export interface DashboardActions {
  /** Retries, cancels or discards `jobs` (as read for the preview); skips those that no longer qualify. */
  jobs(
    action: JobAction,
    jobs: Job[],
  ): Promise<
    { changed: Job[]; skipped: Skipped[]; definitions?: Map<number, DefinitionChoice> }
  >;
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
  /**
   * Retries a failed workflow run or cancels a live one, with a reason; a run
   * that no longer qualifies is refused (the admin function's message).
   */
  workflowRun(action: RunAction, id: number, reason: string): Promise<WorkflowActionDone>;
}

/** What the dashboard does to a workflow run. */
export type RunAction = "retry" | "cancel";

/** The run an action targets, as read when it was asked for. */
export interface RunTarget {
  id: number;
  workflow: string;
  state: RunState;
}

/** One operator action, as the reducer asks for it (a plain value). */
export type ActRequest =
  | { kind: "jobs"; action: JobAction; jobs: Job[]; bulk: boolean }
  | { kind: "replay"; job: Job; reason: string }
  | { kind: "run"; id: string; reason: string | null }
  | { kind: "schedule"; id: string; enabled: boolean; reason: string }
  | { kind: "queue"; queue: string; paused: boolean }
  | { kind: "workflow"; action: RunAction; run: RunTarget; reason: string };

/** What each kind of {@linkcode ActRequest} answers. */
export interface ActResults {
  jobs: { changed: Job[]; skipped: Skipped[]; definitions?: Map<number, DefinitionChoice> };
  replay: ReplayResult;
  run: InsertResult & { occurrence: string };
  schedule: { id: string; enabled: boolean; was: boolean };
  queue: { queue: string; paused: boolean; was: boolean };
  workflow: WorkflowActionDone;
}

/** An action done: its request with its answer (the event the reducer receives). */
export type Acted = {
  [K in ActRequest["kind"]]: {
    kind: "acted";
    request: Extract<ActRequest, { kind: K }>;
    result: ActResults[K];
  };
}[ActRequest["kind"]];

/** Runs `request` with `actions`; rejects as the action does. */
export async function runAction(actions: DashboardActions, request: ActRequest): Promise<Acted> {
  switch (request.kind) {
    case "jobs":
      return {
        kind: "acted",
        request,
        result: await actions.jobs(request.action, request.jobs),
      };
    case "replay":
      return { kind: "acted", request, result: await actions.replay(request.job, request.reason) };
    case "run":
      return {
        kind: "acted",
        request,
        result: await actions.runSchedule(request.id, request.reason),
      };
    case "schedule":
      return {
        kind: "acted",
        request,
        result: await actions.setScheduleEnabled(request.id, request.enabled, request.reason),
      };
    case "queue":
      return {
        kind: "acted",
        request,
        result: await actions.setQueuePaused(request.queue, request.paused),
      };
    case "workflow":
      return {
        kind: "acted",
        request,
        result: await actions.workflowRun(request.action, request.run.id, request.reason),
      };
  }
}

/** Actions on the store of `source`, recorded as done by `actor`. */
export function storeActions(params: {
  source: StoreSource;
  config: () => Promise<LoadedConfig>;
  /** The schedules file's path, named when a retry or replay runs as planned for want of it. */
  configPath?: string;
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
  // A retry or replay runs a schedule's live definition, as on the command
  // line; a file with errors refuses it rather than run the old one silently.
  const definitions = async (jobs: Job[]): Promise<DefinitionSource> => {
    const file = params.configPath ?? "the schedules file";
    if (!jobs.some((job) => job.scheduleId !== null)) return AS_PLANNED;
    const loaded = await params.config();
    if (loaded.config) {
      return { live: { file, schedules: loaded.config.schedules }, asPlanned: false };
    }
    if (loaded.missing) return { live: { file, schedules: null }, asPlanned: false };
    throw new Error(
      `${loaded.problems[0] ?? `${file} is invalid`}: the live definitions cannot be read; ` +
        `fix the file, or use the command line's --as-planned`,
    );
  };
  return {
    async jobs(action, jobs) {
      const chosen = action === "retry" ? await definitions(jobs) : AS_PLANNED;
      return await applyJobAction(await source.get(), action, jobs, who(null), chosen);
    },
    async replay(job, reason) {
      return await replayJob(
        await source.get(),
        String(job.id),
        { ...who(reason), reason },
        false,
        await definitions([job]),
      );
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
    async workflowRun(action, id, reason) {
      const act = action === "retry" ? retryWorkflowRun : cancelWorkflowRun;
      return await act(await source.get(), { id, reason, actor, now: clock.now() });
    },
  };
}
