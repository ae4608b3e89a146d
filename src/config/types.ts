/**
 * The whole `schedules.yaml`, validated: its queues, schedules, pruner,
 * use cases, workflows, pipelines and reports, and its workers module.
 *
 * @module
 */

import type { Schedule } from "../schedule/types.ts";
import type { CompiledWorkflow, StepRun } from "../workflow/types.ts";
import type { CompiledPipeline } from "../ingest/types.ts";
import type { CompiledReport } from "../report/definition.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";
import type { FlowLimits } from "../kernel/flow.ts";

/**
 * The file's `pruner:` section: how the daemon's retention sweep runs. Only
 * what the file sets is present; the pruner's own defaults (a pass every
 * 60 s, 1000 rows per transaction, completed jobs kept 7 days, cancelled and
 * discarded 30) fill the rest, so they are stated in one place
 * (`runtime/pruner.ts`).
 */
export interface PrunerConfig {
  /** How often a pass starts, in ms. */
  everyMs?: number;
  /** Rows deleted per write transaction; a pass runs as many as are due. */
  batch?: number;
  /** How long final jobs are kept, by state, in ms. */
  retention?: { completed?: number; cancelled?: number; discarded?: number };
}

/** One queue of the file's `queues:`, defaults applied. */
export interface QueueConfig {
  /** Jobs run at once on each node. */
  concurrency: number;
  paused: boolean;
  /** `global`, `partition` and `rate`, when any is declared. */
  flow?: FlowLimits;
}

/** A whole `schedules.yaml`, validated. */
export interface ScheduleConfig {
  version: 1;
  /** Queue name -> settings declared in the file. */
  queues: Record<string, QueueConfig>;
  schedules: Schedule[];
  /** The `pruner:` section, when the file has one. */
  pruner?: PrunerConfig;
  /** The `use_cases:` section: use-case id -> what runs it, in file order; empty when none. */
  useCases: Record<string, StepRun>;
  /**
   * The `workflows:` section, each checked against the record rules and
   * compiled (use cases resolved), in file order; empty when none.
   */
  workflows: CompiledWorkflow[];
  /**
   * The `pipelines:` section, each checked by `checkPipeline` and compiled
   * (paths resolved against the file's folder, the `sources:` its steps
   * read carried inside), in file order; empty when none.
   */
  pipelines: CompiledPipeline[];
  /**
   * The `reports:` section, each checked by `checkReport` (its query's
   * parameters too, when the file was loaded from disk) and compiled (paths
   * resolved against the file's folder), in file order; empty when none.
   */
  reports: CompiledReport[];
  /**
   * The `work_queues:` section, each checked by `checkWorkQueue` and
   * compiled (actions' use cases resolved, the score rule versioned), in
   * file order; empty when none.
   */
  workQueues: WorkQueueDefinition[];
  /**
   * The `workers:` module, resolved against the schedules file's folder
   * (relative when the file's path is): its exported workers run the
   * schedules' `worker` runs and selections.
   */
  workersModule?: string;
}
