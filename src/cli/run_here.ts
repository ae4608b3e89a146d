/**
 * What a command with `--wait` does with the job it enqueued: while a live
 * daemon (fresh heartbeat) serves the job's queue, wait for the daemon's
 * run; when none does (or the daemon went away meanwhile), run the queue in
 * this process until the job ended. Shared by `jobs ingest --wait` and
 * `jobs report --wait`.
 *
 * @module
 */

import { nodesView } from "../admin/nodes.ts";
import { Jobs } from "../jobs.ts";
import { FINAL_STATES, type Job } from "../kernel/types.ts";
import type { Worker } from "../kernel/worker.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";
import type { PrunerOptions } from "../runtime/pruner.ts";
import { type CliDeps, CommandFailed } from "./common.ts";
import { cell } from "./text.ts";

/** How often a waiting command looks at a daemon's run. */
export const WAIT_POLL_MS = 250;

/** The live daemons (fresh heartbeat) that run `queue`. */
export async function daemonsServing(store: Store, queue: string, now: number): Promise<string[]> {
  return (await nodesView(store, now)).filter((n) => !n.stale && (n.queues[queue] ?? 0) > 0)
    .map((n) => n.node);
}

/** How to run the queue here when no daemon serves it. */
export interface RunHere {
  /** The command's name, for its messages (`ingest`). */
  command: string;
  queue: string;
  /** The workers this process runs the queue with (`jobs` is the runtime's, for a registry). */
  // deno-lint-ignore no-explicit-any
  workers(logger: Logger, jobs: () => Jobs): Worker<any>[] | Promise<Worker<any>[]>;
  pruner?: PrunerOptions;
  /** What to say when stopped by a signal before the job ended. */
  resumes: string;
}

/**
 * Waits for the job `id` to end: while a live daemon serves its queue, by
 * looking every {@linkcode WAIT_POLL_MS}; when none does, by running it
 * here. `by` names the daemons waited for, null when it ran here.
 */
export async function untilEnded(
  store: Store,
  id: number,
  here: RunHere,
  deps: CliDeps,
): Promise<{ job: Job; by: string[] | null }> {
  let waited: string[] | null = null;
  for (;;) {
    const job = await store.jobGet({ id });
    if (!job) throw new CommandFailed(`jobs ${here.command}: job ${id} is gone from the store`);
    if (FINAL_STATES.includes(job.state)) return { job, by: waited };
    const serving = await daemonsServing(store, here.queue, deps.clock.now());
    if (serving.length === 0) return { job: await runHere(store, id, here, deps), by: null };
    if (waited === null) {
      deps.err(
        `jobs ${here.command}: job ${id} enqueued; waiting for the run of ` +
          serving.map(cell).join(", "),
      );
    }
    waited = serving;
    await deps.clock.sleep(WAIT_POLL_MS);
  }
}

/**
 * Runs the queue in this process, one job at a time, until the job `id`
 * ended. What else waits on that queue (no daemon serves it) runs too, as a
 * daemon would run it.
 */
async function runHere(store: Store, id: number, here: RunHere, deps: CliDeps): Promise<Job> {
  // The job ended for good (a retry goes on here): a job's end reaches the
  // log before its result is written, which stopping the runtime does.
  let ended!: () => void;
  const end = new Promise<void>((resolve) => ended = resolve);
  const logger: Logger = (event, fields) => {
    if (
      event === "job.stop" && fields.job === id && FINAL_STATES.includes(fields.outcome as never)
    ) {
      ended();
    }
    deps.logger(event, fields);
  };
  const jobs: Jobs = new Jobs({
    store,
    clock: deps.clock,
    logger,
    workers: await here.workers(logger, () => jobs),
  });
  const runtime = await jobs.start({
    queues: { [here.queue]: 1 },
    ...(here.pruner ? { pruner: here.pruner } : {}),
  });
  let stopped = false;
  const offs = (["SIGINT", "SIGTERM"] as const).map((signal) =>
    deps.onSignal(signal, () => {
      stopped = true;
      ended();
    })
  );
  try {
    await end;
  } finally {
    offs.forEach((off) => off());
    await runtime.stop({ grace: 0 });
  }
  const job = await store.jobGet({ id });
  if (!job) throw new CommandFailed(`jobs ${here.command}: job ${id} is gone from the store`);
  if (stopped && !FINAL_STATES.includes(job.state)) {
    throw new CommandFailed(
      `jobs ${here.command}: stopped while job ${id} was ${job.state}; ${here.resumes}`,
      130,
    );
  }
  return job;
}
