/**
 * A producer runs one queue on one node: it claims up to its free slots,
 * starts each job, and writes finished results in the same transaction as
 * its next claim, so a busy queue costs one write transaction per batch, not
 * per job. It sleeps until woken: by a local insert, a job finishing, a
 * commit from another process, or its timer.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { execute, type Registry } from "../kernel/executor.ts";
import type { ClaimedJob, JobResult } from "../kernel/types.ts";
import type { Lease, Store } from "../store/store.ts";
import type { Logger } from "./logger.ts";

/** Raised into a job's signal when its node lost the lease. */
export class LeaseLostError extends Error {
  constructor(readonly jobId: number) {
    super(`lease of job ${jobId} lost (cancelled by an operator, or rescued elsewhere)`);
    this.name = "LeaseLostError";
  }
}

/** Raised into a job's signal when shutdown's grace period ran out. */
export class ShutdownError extends Error {
  constructor() {
    super("node shutting down; the job is left to the lifeline");
    this.name = "ShutdownError";
  }
}

/** What a producer shares with its runtime. */
export interface ProducerDeps {
  store: Store;
  clock: Clock;
  registry: Registry;
  node: string;
  leaseMs: number;
  logger: Logger;
  random: () => number;
}

interface Running {
  job: ClaimedJob;
  control: AbortController;
  /** Lease lost or shutdown: whatever the job returns is not recorded. */
  abandoned: boolean;
}

const OUTAGE_BACKOFF_MS = [50, 100, 250, 500, 1000, 2000, 5000];

/** One queue's claim-run-record loop. */
export class Producer {
  readonly queue: string;
  readonly concurrency: number;
  #deps: ProducerDeps;
  #running = new Map<number, Running>();
  #pending: JobResult[] = [];
  #fetching = true;
  #woken = false;
  #wakeUp: (() => void) | null = null;
  #outages = 0;
  #done: Promise<void> | null = null;

  constructor(queue: string, concurrency: number, deps: ProducerDeps) {
    this.queue = queue;
    this.concurrency = concurrency;
    this.#deps = deps;
  }

  /** Jobs running now. */
  get running(): number {
    return this.#running.size;
  }

  /** The leases this producer's running jobs hold. */
  leases(): Lease[] {
    const leases: Lease[] = [];
    for (const r of this.#running.values()) {
      if (!r.abandoned) leases.push({ id: r.job.id, fence: r.job.fence });
    }
    return leases;
  }

  /** Asks the loop to look again (a job may be available). */
  wake(): void {
    this.#woken = true;
    const wakeUp = this.#wakeUp;
    if (wakeUp) {
      this.#wakeUp = null;
      wakeUp();
    }
  }

  /** Starts the loop; resolves when the producer has stopped and flushed. */
  start(): Promise<void> {
    return (this.#done ??= this.#loop());
  }

  /** Stops claiming; running jobs go on and their results are still written. */
  stopFetching(): void {
    this.#fetching = false;
    this.wake();
  }

  /** Aborts the job with a lease this node no longer holds; its result is dropped. */
  abandon(id: number, reason: Error): boolean {
    const running = this.#running.get(id);
    if (!running || running.abandoned) return false;
    running.abandoned = true;
    running.control.abort(reason);
    return true;
  }

  /**
   * Aborts every running job (shutdown past its grace); none is recorded and
   * their slots are let go even if `perform` ignores its signal.
   */
  abandonAll(): void {
    for (const id of [...this.#running.keys()]) {
      this.abandon(id, new ShutdownError());
      this.#running.delete(id);
    }
    this.wake();
  }

  async #loop(): Promise<void> {
    const { store, clock, node, leaseMs, logger } = this.#deps;
    while (this.#fetching || this.#running.size > 0 || this.#pending.length > 0) {
      this.#woken = false;
      const free = this.#fetching ? this.concurrency - this.#running.size : 0;
      const results = this.#pending;
      if (free > 0 || results.length > 0) {
        this.#pending = [];
        let claimed: ClaimedJob[];
        try {
          const { jobs, report } = await store.jobsClaim({
            queue: this.queue,
            node,
            limit: free,
            now: clock.now(),
            leaseMs,
            results,
          });
          claimed = jobs;
          this.#outages = 0;
          for (const id of report.lost) {
            logger("job.lease_lost", { queue: this.queue, job: id, node });
          }
        } catch (error) {
          // The store is locked or gone: keep the results, back off, poison nothing.
          this.#pending = results.concat(this.#pending);
          await this.#backOff(error);
          continue;
        }
        for (const job of claimed) this.#start(job);
        // A full batch means more may be waiting: claim again once slots free up.
        if ((free > 0 && claimed.length === free) || this.#woken) continue;
      }
      if (!this.#fetching && this.#running.size === 0 && this.#pending.length === 0) break;
      if (!this.#woken) await new Promise<void>((resolve) => (this.#wakeUp = resolve));
    }
  }

  #start(job: ClaimedJob): void {
    const control = new AbortController();
    const running: Running = { job, control, abandoned: false };
    this.#running.set(job.id, running);
    execute(job, control, this.#deps).then((result) => {
      this.#running.delete(job.id);
      if (!running.abandoned) this.#pending.push(result);
      this.wake();
    });
  }

  async #backOff(error: unknown): Promise<void> {
    const { clock, logger } = this.#deps;
    const ms = OUTAGE_BACKOFF_MS[Math.min(this.#outages, OUTAGE_BACKOFF_MS.length - 1)]!;
    // Log the first failure and then every tenth: bounded during a long outage.
    if (this.#outages % 10 === 0) {
      logger("store.error", {
        queue: this.queue,
        error: error instanceof Error ? error.message : String(error),
        retryInMs: ms,
      });
    }
    this.#outages++;
    await clock.sleep(ms);
  }
}
