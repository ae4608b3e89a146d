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
import { ShutdownError } from "../kernel/abort_reasons.ts";
import { type CursorStore, execute, type Registry } from "../kernel/executor.ts";
import type { ClaimedJob, JobResult } from "../kernel/types.ts";
import type { Lease, Store } from "../store/store.ts";
import { type FlowLimits, isShared } from "../kernel/flow.ts";
import { setImmediate } from "node:timers";
import type { Logger } from "../kernel/logger.ts";
import type { StoreHealth } from "./store_health.ts";

/** What a producer shares with its runtime. */
export interface ProducerDeps {
  store: Store;
  clock: Clock;
  registry: Registry;
  node: string;
  leaseMs: number;
  logger: Logger;
  random: () => number;
  /** Told of every claim-and-record that failed or succeeded; logs outages at a bounded rate. */
  health: StoreHealth;
  /** Where workflow steps keep their cursors (the store). */
  cursors?: CursorStore;
  /** Told the queues a record gave new available jobs (the next steps of workflow runs). */
  onEnqueued?: (queues: string[]) => void;
  /**
   * The flow limits the file or the library declares for `queue`, read at
   * each claim (a reload applies from the next); the store adds those stored.
   */
  flow?: (queue: string) => FlowLimits | null;
}

interface Running {
  job: ClaimedJob;
  control: AbortController;
  /** Lease lost or shutdown: whatever the job returns is not recorded. */
  abandoned: boolean;
}

/** What `job.stop` needs of a finished job, kept until its result is written. */
interface Stop {
  running: Running;
  ms: number;
}

/** Waits between tries while the store refuses the claim-and-record write, in ms. */
const OUTAGE_BACKOFF_MS = [50, 100, 250, 500, 1000, 2000, 4000];

/**
 * Prefetch: a producer may hold claimed jobs it has not started yet, but only
 * as many as its slots would start within this many ms at the pace jobs have
 * been running. Fast jobs get batches; slow jobs are claimed one slot at a
 * time, so other nodes can take them.
 */
const PREFETCH_HORIZON_MS = 20;
/** The most claimed-but-not-started jobs a producer holds, per slot. */
const PREFETCH_PER_SLOT = 50;
/**
 * How soon a producer whose claim a flow limit held back with nothing taken
 * asks again, in ms (jittered +/- 20 %): slots freed on other nodes and
 * tokens refilled over time commit nothing that wakes it.
 */
const HELD_RETRY_MS = 50;
/** Results are written at the latest once this many wait... */
const FLUSH_BATCH = 512;
/**
 * ...or once the oldest has waited this long (ms, monotonic time);
 * {@linkcode PREFETCH_HORIZON_MS} while claimed jobs wait in the buffer.
 */
const FLUSH_DELAY_MS = 2;

/** One queue's claim-run-record loop. */
export class Producer {
  readonly queue: string;
  readonly concurrency: number;
  #deps: ProducerDeps;
  /** Where this producer reports to {@linkcode StoreHealth}. */
  #source: string;
  #running = new Map<number, Running>();
  /** Claimed, not yet started, oldest first. */
  #buffer: ClaimedJob[] = [];
  #pending: JobResult[] = [];
  /**
   * The `job.stop` of each result not written yet (only with a logger that
   * reads events): logged once the write says what the store recorded.
   */
  #stops = new WeakMap<JobResult, Stop>();
  #pendingSince = 0;
  #fetching = true;
  /** The last claim filled its request, or something may have arrived since. */
  #maybeMore = true;
  #woken = false;
  /** Wakes so far: one during a claim outdates what that claim found. */
  #wakes = 0;
  #wakeUp: (() => void) | null = null;
  #flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** The last claim was held back by a flow limit (see jobsClaim's `held`). */
  #held = false;
  #heldTimer: ReturnType<typeof setTimeout> | null = null;
  /** The last claim said a limit every node shares applies (see jobsClaim's `shared`). */
  #shared = false;
  #outages = 0;
  /** Aborted by abandonAll(): a backoff wait ends at once. */
  #halt = new AbortController();
  /** Running average of how long a job takes, ms; unknown at first. */
  #meanMs = Infinity;
  #done: Promise<void> | null = null;

  constructor(queue: string, concurrency: number, deps: ProducerDeps) {
    this.queue = queue;
    this.concurrency = concurrency;
    this.#deps = deps;
    this.#source = `producer:${queue}`;
  }

  /** Jobs running now. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * The leases this producer holds: running jobs, claimed ones not yet
   * started, and finished ones whose result is not written yet (the store
   * refused it): those are renewed too, so no lifeline takes a job whose
   * result is only waiting for the store to come back.
   */
  leases(): Lease[] {
    const leases: Lease[] = [];
    for (const r of this.#running.values()) {
      if (!r.abandoned) leases.push({ id: r.job.id, fence: r.job.fence });
    }
    for (const job of this.#buffer) leases.push({ id: job.id, fence: job.fence });
    for (const result of this.#pending) leases.push({ id: result.id, fence: result.fence });
    return leases;
  }

  /**
   * The jobs this node runs or is about to run (claimed, not finished), each
   * with when its claim was made: its lease in the store runs until then
   * plus the lease length, or later if a renewal since then succeeded.
   * Finished results are not listed: they are written whatever happens
   * (the store's fence decides whether they still count).
   */
  claims(): { id: number; claimedAt: number }[] {
    const claims: { id: number; claimedAt: number }[] = [];
    for (const r of this.#running.values()) {
      if (!r.abandoned) claims.push({ id: r.job.id, claimedAt: r.job.attemptedAt });
    }
    for (const job of this.#buffer) claims.push({ id: job.id, claimedAt: job.attemptedAt });
    return claims;
  }

  /** Finished jobs whose result waits to be written. */
  get unrecorded(): number {
    return this.#pending.length;
  }

  /** Something may be available (a local insert, another process's commit, the timer). */
  wake(): void {
    this.#maybeMore = true;
    this.#wakes++;
    this.#nudge();
  }

  /** Starts the loop; resolves when the producer has stopped and flushed. */
  start(): Promise<void> {
    return (this.#done ??= this.#loop());
  }

  /** Stops claiming; running jobs go on and their results are still written. */
  stopFetching(): void {
    this.#fetching = false;
    this.#nudge();
  }

  /** Aborts the job with a lease this node no longer holds; its result is dropped. */
  abandon(id: number, reason: Error): boolean {
    const buffered = this.#buffer.findIndex((job) => job.id === id);
    if (buffered >= 0) {
      this.#buffer.splice(buffered, 1);
      return true;
    }
    const running = this.#running.get(id);
    if (!running || running.abandoned) return false;
    running.abandoned = true;
    running.control.abort(reason);
    return true;
  }

  /**
   * Aborts every running job (shutdown past its grace); none is recorded and
   * their slots are let go even if `perform` ignores its signal. Results the
   * store has refused until now are given up too: their leases expire and
   * the lifeline sends those jobs back (at least once, never lost).
   */
  abandonAll(): void {
    for (const id of [...this.#running.keys()]) {
      this.abandon(id, new ShutdownError());
      this.#running.delete(id);
    }
    this.#giveUp(this.#pending.splice(0));
    this.#halt.abort();
    this.#nudge();
  }

  #nudge(): void {
    this.#woken = true;
    const wakeUp = this.#wakeUp;
    if (wakeUp) {
      this.#wakeUp = null;
      wakeUp();
    }
  }

  /** How many jobs this producer wants in hand (running + buffered). */
  #target(): number {
    // Under a limit every node shares (`global`, a rate: declared, or
    // stored as the last claim said), or one that held jobs back, a
    // prefetched job would hold a share of the limit while it waits here,
    // away from the nodes with free slots: claim only the free slots. A
    // partition limit that held nothing back has keys to spare, and
    // prefetch hides the claim's round trip as it does for any queue.
    if (this.#held || this.#shared || isShared(this.#deps.flow?.(this.queue))) {
      return this.concurrency;
    }
    const perSlot = Math.min(PREFETCH_PER_SLOT, Math.floor(PREFETCH_HORIZON_MS / this.#meanMs));
    return this.concurrency * (1 + perSlot);
  }

  async #loop(): Promise<void> {
    const { store, clock, node, leaseMs, logger, health } = this.#deps;
    for (;;) {
      this.#woken = false;
      // Once stopping, nothing new starts: claimed jobs not yet started go back.
      if (!this.#fetching && this.#buffer.length > 0) await this.#release();
      while (this.#running.size < this.concurrency && this.#buffer.length > 0) {
        this.#start(this.#buffer.shift()!);
      }

      const target = this.#target();
      const inHand = this.#running.size + this.#buffer.length;
      // Claim when the buffer is down to half, so a batch arrives before it runs dry.
      const want = this.#fetching && this.#maybeMore &&
          inHand <= this.concurrency + (target - this.concurrency) / 2
        ? target - inHand
        : 0;
      const results = this.#pending;
      // While prefetched jobs wait to start, the claim that refills the
      // buffer soon carries the results: a write of its own would hold
      // those jobs back for a round trip (most of a batch on PostgreSQL).
      const delayMs = this.#buffer.length > 0 ? PREFETCH_HORIZON_MS : FLUSH_DELAY_MS;
      const flush = results.length > 0 &&
        (want > 0 || results.length >= FLUSH_BATCH || inHand === 0 ||
          performance.now() - this.#pendingSince >= delayMs);

      if (want > 0 || flush) {
        this.#pending = [];
        const wakes = this.#wakes;
        try {
          const { jobs, report, held, shared } = await store.jobsClaim({
            queue: this.queue,
            node,
            limit: want,
            now: clock.now(),
            leaseMs,
            results,
            flow: this.#deps.flow?.(this.queue) ?? null,
          });
          this.#outages = 0;
          health.succeeded(this.#source);
          for (const id of report.lost) {
            logger("job.lease_lost", { queue: this.queue, job: id, node });
          }
          if (logger.silent !== true) this.#logStops(results, report.lost);
          if (report.queues) this.#deps.onEnqueued?.(report.queues);
          // A short claim means the queue ran dry, unless a wake came while
          // it was under way: what woke it may have committed after the
          // claim read the queue.
          if (want > 0 && jobs.length < want && this.#wakes === wakes) this.#maybeMore = false;
          // A flow limit held jobs back: slots freed on other nodes and
          // tokens refilled wake nobody, so look again soon, and claim again
          // with the results of the jobs this claim took.
          this.#held = held === true;
          // Only a claim that asked for jobs read the limits.
          if (want > 0) this.#shared = shared === true;
          if (this.#held && jobs.length === 0) this.#armHeldTimer();
          for (const job of jobs) this.#buffer.push(job);
        } catch (error) {
          // The store is locked or gone: keep the results (and renew their
          // leases), back off, poison nothing.
          if (this.#halt.signal.aborted) this.#giveUp(results);
          else this.#pending = results.concat(this.#pending);
          await this.#backOff(error);
        }
        continue;
      }
      if (!this.#fetching && this.#running.size === 0 && this.#pending.length === 0) break;
      if (this.#woken) continue;
      if (this.#pending.length > 0) this.#armFlushTimer();
      await new Promise<void>((resolve) => (this.#wakeUp = resolve));
      // Let every job finishing in this turn of the event loop report first,
      // so one transaction records them all. An idle producer has none to
      // wait for: woken by an enqueue, it claims at once (a turn of the loop
      // is a tenth of the enqueue-to-start latency).
      if (this.#running.size > 0 || this.#pending.length > 0) {
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    this.#clearFlushTimer();
  }

  #start(job: ClaimedJob): void {
    const control = new AbortController();
    const running: Running = { job, control, abandoned: false };
    this.#running.set(job.id, running);
    const startedAt = this.#deps.clock.now();
    const began = performance.now();
    // A silent logger reads nothing: a job's events are not even built for it.
    if (this.#deps.logger.silent !== true) this.#logStart(job);
    execute(job, control, this.#deps, startedAt).then((result) =>
      this.#finished(running, result, performance.now() - began)
    );
  }

  /**
   * A job's attempt ended after `ms`: its result waits for the next write,
   * and so does its `job.stop`, which says what the store recorded. An
   * abandoned job's result is never written: its `job.stop` is logged now.
   */
  #finished(running: Running, result: JobResult, ms: number): void {
    const job = running.job;
    if (this.#deps.logger.silent !== true) {
      if (running.abandoned) this.#logStop(running, result, ms, "abandoned");
      else this.#stops.set(result, { running, ms });
    }
    this.#meanMs = this.#meanMs === Infinity ? ms : this.#meanMs * 0.9 + ms * 0.1;
    this.#running.delete(job.id);
    // Its slot is free under the limit that held others back: take the next.
    if (this.#held) this.#maybeMore = true;
    if (!running.abandoned) {
      if (this.#pending.length === 0) this.#pendingSince = performance.now();
      this.#pending.push(result);
    }
    // The freed slot takes the next prefetched job now, not when the loop
    // comes round: the loop may be waiting for the store, and prefetched
    // jobs are there to run meanwhile.
    if (this.#fetching && !this.#halt.signal.aborted && this.#buffer.length > 0) {
      this.#start(this.#buffer.shift()!);
    }
    this.#nudge();
  }

  #logStart(job: ClaimedJob): void {
    this.#deps.logger("job.start", {
      ...this.#labels(job),
      // How long the job waited in its queue: from due to claimed.
      waitMs: Math.max(0, job.attemptedAt - job.scheduledAt),
      ...(job.occurrence !== null ? { occurrence: job.occurrence } : {}),
    });
  }

  /**
   * Logs the `job.stop` of written results: the outcome recorded, or
   * `lease_lost` for those the store refused because the lease had gone.
   */
  #logStops(results: JobResult[], lost: number[]): void {
    const gone = lost.length > 0 ? new Set(lost) : null;
    for (const result of results) {
      const stop = this.#stops.get(result);
      if (!stop) continue;
      this.#stops.delete(result);
      const outcome = gone?.has(result.id) ? "lease_lost" : result.outcome;
      this.#logStop(stop.running, result, stop.ms, outcome);
    }
  }

  #logStop(running: Running, result: JobResult, ms: number, outcome: string): void {
    const { job } = running;
    const { logger } = this.#deps;
    const labels = this.#labels(job);
    logger("job.stop", {
      ...labels,
      outcome,
      durationMs: Math.round(ms * 100) / 100,
      ...(job.occurrence !== null ? { occurrence: job.occurrence } : {}),
      ...(result.step
        ? { workflow: result.step.workflow, step: result.step.step, stepKind: result.step.kind }
        : {}),
      ...(result.output ? { output: result.output.slice(-200) } : {}),
    });
    if ((outcome === "retryable" || outcome === "discarded") && "error" in result) {
      logger("job.exception", { ...labels, outcome, error: result.error.slice(0, 1000) });
    }
  }

  #labels(job: ClaimedJob): Record<string, unknown> {
    return { queue: this.queue, job: job.id, worker: job.worker, attempt: job.attempt };
  }

  /** Gives back claimed jobs that never started: they are available again, no attempt spent. */
  async #release(): Promise<void> {
    const jobs = this.#buffer;
    this.#buffer = [];
    try {
      await this.#deps.store.jobsRelease({
        node: this.#deps.node,
        leases: jobs.map((j) => ({ id: j.id, fence: j.fence })),
      });
    } catch (error) {
      // Their leases expire and the lifeline rescues them.
      this.#deps.health.failed(this.#source, error);
    }
  }

  /**
   * Drops results that will never be written (shutdown past its grace
   * during an outage); their `job.stop` says `unrecorded`.
   */
  #giveUp(results: JobResult[]): void {
    for (const result of results) {
      const stop = this.#stops.get(result);
      if (stop) this.#logStop(stop.running, result, stop.ms, "unrecorded");
      this.#deps.logger("job.unrecorded", {
        queue: this.queue,
        job: result.id,
        outcome: result.outcome,
      });
    }
  }

  /** Wakes the loop {@linkcode HELD_RETRY_MS} from now (jittered), once. */
  #armHeldTimer(): void {
    if (this.#heldTimer !== null) return;
    // Real time on purpose, as the flush timer: the claim decides, this only asks again.
    const ms = HELD_RETRY_MS * (0.8 + 0.4 * this.#deps.random());
    this.#heldTimer = setTimeout(() => {
      this.#heldTimer = null;
      this.wake();
    }, ms);
  }

  #armFlushTimer(): void {
    if (this.#flushTimer !== null) return;
    // Real time on purpose: this only batches writes, it decides nothing.
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      this.#nudge();
    }, FLUSH_DELAY_MS);
  }

  #clearFlushTimer(): void {
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    if (this.#heldTimer !== null) clearTimeout(this.#heldTimer);
    this.#heldTimer = null;
  }

  /** Waits longer after each failure in a row, up to a few seconds; logging is the health's. */
  async #backOff(error: unknown): Promise<void> {
    const ms = OUTAGE_BACKOFF_MS[Math.min(this.#outages, OUTAGE_BACKOFF_MS.length - 1)]!;
    this.#deps.health.failed(this.#source, error);
    this.#outages++;
    await this.#deps.clock.sleep(ms, this.#halt.signal);
  }
}
