/**
 * The `jobs.ingest` runner: one job is one pipeline run (see
 * `src/ingest/run.ts` for the loop). It is self-timed like the fan-out
 * runner: its commands are stopped on abort by the run itself. `ingestJob`
 * makes the job row the CLI, the scheduler and the library enqueue.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { serializeArgs } from "../kernel/enqueue.ts";
import type { Registry } from "../kernel/executor.ts";
import type { NewJob } from "../kernel/types.ts";
import { type ArgsSchema, defineWorker, type Worker } from "../kernel/worker.ts";
import type { RecordBuffer } from "../ingest/buffer.ts";
import { runPipeline } from "../ingest/run.ts";
import { type CompiledPipeline, type IngestJobArgs } from "../ingest/types.ts";
import { INGEST_WORKER } from "../kernel/runs.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";
import { addParams } from "../workqueue/items.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";

export { INGEST_WORKER };

/** Options of {@linkcode ingestWorker}. */
export interface IngestWorkerOptions {
  /** The store runs are kept in (a function: the daemon opens it after building its workers). */
  store: () => Store;
  clock: Clock;
  /** Reads the daemon's environment, for `${NAME}` in commands' `env`. */
  env: (name: string) => string | undefined;
  logger: Logger;
  /** The workers of this process: TypeScript steps and sinks are found here by name. */
  workers: () => Registry;
  /** Reserved: where command groups are recorded. @default none */
  groupsDir?: string;
  /** Between SIGTERM and SIGKILL to a command's group. @default 5000 */
  killGraceMs?: number;
  /** Told each run's buffer (tests read its high-water mark). */
  onBuffer?: (buffer: RecordBuffer) => void;
}

/** Validates a job's args as a pipeline run; what it refuses is discarded. */
export const ingestArgsSchema: ArgsSchema<IngestJobArgs> = {
  parse(input: unknown): IngestJobArgs {
    const value = input as Partial<IngestJobArgs> | null;
    if (value === null || typeof value !== "object" || value.kind !== "ingest") {
      throw new TypeError(`ingest run must be an object of kind "ingest"`);
    }
    const p = value.pipeline as Partial<CompiledPipeline> | undefined;
    if (!p || typeof p.id !== "string" || !p.source || !Array.isArray(p.steps) || !p.sink) {
      throw new TypeError(`ingest run must carry a compiled pipeline`);
    }
    return value as IngestJobArgs;
  },
};

/** The `jobs.ingest` worker. */
export function ingestWorker(options: IngestWorkerOptions): Worker<IngestJobArgs> {
  return defineWorker<IngestJobArgs>({
    name: INGEST_WORKER,
    selfTimed: true,
    args: ingestArgsSchema,
    perform: (args, ctx) =>
      runPipeline(args, ctx, {
        store: options.store(),
        clock: options.clock,
        logger: options.logger,
        env: options.env,
        workers: options.workers(),
        killGraceMs: options.killGraceMs,
        onBuffer: options.onBuffer,
        workItemParams: workItemParams,
      }),
  });
}

/**
 * A record as a work item's add, scored by its queue's rule: the queue's
 * definition a pipeline carries is the one `build` compiled from the file
 * (or a library user's `compileWorkQueue`).
 */
function workItemParams(
  definition: Record<string, unknown>,
  item: { key: string; data: Record<string, unknown>; tenant: string | null },
  actor: string,
  now: number,
) {
  return addParams(definition as unknown as WorkQueueDefinition, item, actor, now);
}

/**
 * The job of one run of `pipeline` (a replay of one drop with `replay`),
 * of `tenant` (the run's, copied from the job when its row is made) or
 * installation-wide.
 */
export function ingestJob(
  pipeline: CompiledPipeline,
  options: { now: number; replay?: IngestJobArgs["replay"]; tenant?: string | null },
): NewJob {
  const args: IngestJobArgs = {
    kind: "ingest",
    pipeline,
    ...(options.replay ? { replay: options.replay } : {}),
  };
  const where = `pipeline "${pipeline.id}"`;
  return {
    queue: pipeline.queue,
    worker: INGEST_WORKER,
    args: serializeArgs(args, where),
    meta: serializeArgs({ pipeline: pipeline.id }, where),
    tags: JSON.stringify(["ingest"]),
    tenant: options.tenant ?? null,
    priority: 0,
    maxAttempts: pipeline.maxAttempts,
    scheduledAt: options.now,
    uniqueKey: null,
    uniqueStates: null,
    occurrence: null,
    scheduleId: null,
    scheduledFor: null,
  };
}
