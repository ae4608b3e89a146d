/**
 * The `jobs.bulk` runner: one job walks one bulk run's snapshot
 * (`src/admin/bulk.ts`) in chunks of {@linkcode BULK_CHUNK}. Each chunk
 * re-reads its jobs in the run's tenant scope (an id forged into a snapshot
 * that is not the tenant's is read as gone, and skipped) and acts on them
 * through `applyJobAction`, so each job changed has its own audit row
 * naming the person who confirmed; then the run's progress is recorded.
 * Between chunks the walk stops, as `aborted`, when an abort was asked or
 * the job itself was cancelled; on shutdown or a lost lease it stops
 * without ending the run, and the job's next attempt resumes from `done`.
 *
 * It lives in `admin/`, not `runners/`, because it acts through the admin
 * door (`applyJobAction`), which the runners' layer may not import.
 *
 * @module
 */

import { type Clock, yieldToOthers } from "../clock.ts";
import { type ArgsSchema, defineWorker, type JobContext, type Worker } from "../kernel/worker.ts";
import { BULK_WORKER } from "../kernel/runs.ts";
import { applyJobAction } from "./jobs.ts";
import { BULK_CHUNK, BULK_QUEUE, type BulkJobArgs } from "./bulk.ts";
import type { BulkRun, Store } from "../store/store.ts";

export { BULK_QUEUE, BULK_WORKER };

/** Options of {@linkcode bulkWorker}. */
export interface BulkWorkerOptions {
  /** The store runs are kept in (a function: the daemon opens it after building its workers). */
  store: () => Store;
  clock: Clock;
  /** @default BULK_CHUNK */
  chunk?: number;
}

/** Validates a job's args as a bulk run's; what it refuses is discarded. */
export const bulkArgsSchema: ArgsSchema<BulkJobArgs> = {
  parse(input: unknown): BulkJobArgs {
    const value = input as Partial<BulkJobArgs> | null;
    if (
      value === null || typeof value !== "object" || value.kind !== "bulk" ||
      !Number.isSafeInteger(value.run)
    ) {
      throw new TypeError(`bulk run must be {"kind":"bulk","run":<id>}`);
    }
    return { kind: "bulk", run: value.run! };
  },
};

/** Why the walk stopped early: the operator asked, or the process is going away. */
function stopReason(signal: AbortSignal): string {
  const reason = signal.reason;
  return reason instanceof Error ? reason.message : String(reason ?? "aborted");
}

/** Walks `run`'s snapshot from its `done` to its end, or until asked to stop. */
async function walk(
  store: Store,
  run: BulkRun,
  ctx: JobContext,
  chunk: number,
  clock: Clock,
  end: (state: "aborted" | "failed") => Promise<boolean>,
): Promise<void> {
  const ids = (await store.bulkRunSnapshot({ id: run.id })) ?? [];
  const scope = run.tenant === null ? {} : { tenant: run.tenant };
  let { done, changed, skipped } = run;
  while (done < ids.length) {
    const current = await store.bulkRunGet({ id: run.id });
    if (!current || current.state !== "running") return;
    if (current.abortRequested) {
      await end("aborted");
      return;
    }
    if (ctx.signal.aborted) {
      // The bulk job itself cancelled or discarded ends the run; a shutdown
      // or a lost lease leaves it running for the next attempt to resume.
      const self = await store.jobGet({ id: ctx.job.id });
      if (self && (self.state === "cancelled" || self.state === "discarded")) await end("aborted");
      throw new Error(`bulk run ${run.id} stopped at ${done}: ${stopReason(ctx.signal)}`);
    }
    const slice = ids.slice(done, done + chunk);
    // Re-read in the run's scope: an id not the tenant's is read as gone.
    const jobs = await store.jobsList({ ids: slice, limit: slice.length, ...scope });
    const result = await applyJobAction(store, run.action, jobs, {
      actor: run.actor,
      reason: run.reason,
      now: clock.now(),
    });
    done += slice.length;
    changed += result.changed.length;
    skipped += slice.length - result.changed.length;
    // A walker that lost the run (ended, or another attempt ahead of it) stops.
    if (!await store.bulkRunProgress({ id: run.id, done, changed, skipped })) return;
    ctx.output(`bulk run ${run.id}: ${done}/${ids.length}, ${changed} changed, ${skipped} skipped`);
    // On SQLite every call above answered at once: without a turn of the
    // event loop here, the daemon's requests, heartbeats and claims would
    // wait for the whole run (a million jobs: half a minute).
    await yieldToOthers();
  }
  await store.bulkRunFinish({ id: run.id, state: "completed", now: clock.now() });
}

/** The `jobs.bulk` worker. */
export function bulkWorker(options: BulkWorkerOptions): Worker<BulkJobArgs> {
  const chunk = options.chunk ?? BULK_CHUNK;
  return defineWorker<BulkJobArgs>({
    name: BULK_WORKER,
    queue: BULK_QUEUE,
    maxAttempts: 5,
    args: bulkArgsSchema,
    perform: async (args, ctx) => {
      const store = options.store();
      const run = await store.bulkRunGet({ id: args.run });
      if (!run || run.state !== "running") return;
      const end = (state: "aborted" | "failed") =>
        store.bulkRunFinish({ id: run.id, state, now: options.clock.now() });
      try {
        await walk(store, run, ctx, chunk, options.clock, end);
      } catch (error) {
        // The last attempt failing ends the run; an earlier one resumes from `done`.
        if (ctx.attempt >= ctx.job.maxAttempts) await end("failed");
        throw error;
      }
    },
  });
}
