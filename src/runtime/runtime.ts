/**
 * The worker runtime: producers per queue plus the plugins (heartbeat,
 * stager, lifeline, pruner, planner) on their timers, and the shutdown order
 * of docs/ARCHITECTURE.md. The daemon runs one; a library user may run one in
 * their own process.
 *
 * With `maintenance: "leader"` the stager, lifeline, pruner and planner
 * pass only on the node that holds the maintenance role
 * ({@linkcode Leadership}); the others keep their timers and skip, and a
 * node that becomes leader passes at once. Heartbeats and producers run on
 * every node. Every pass is atomic and idempotent either way: leadership
 * removes contention, not a hazard.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { Registry } from "../kernel/executor.ts";
import type { Lease, RescuedJob, Store } from "../store/store.ts";
import { beat } from "./heartbeat.ts";
import { Leadership } from "./leadership.ts";
import { rescueOrphans, returnExpiredClaims } from "./lifeline.ts";
import type { Logger } from "../kernel/logger.ts";
import type { FlowLimits } from "../kernel/flow.ts";
import { Producer } from "./producer.ts";
import { LeaseExpiredError, LeaseLostError } from "../kernel/abort_reasons.ts";
import {
  DEFAULT_PRUNE_EVERY_MS,
  DEFAULT_RETENTION,
  pruneIngestDrops,
  pruneJobs,
  type PrunerOptions,
  pruneWorkflowRuns,
} from "./pruner.ts";
import { planSchedules, syncSchedules } from "./planner.ts";
import { stageJobs } from "./stager.ts";
import { StoreHealth } from "./store_health.ts";
import type { Schedule } from "../schedule/types.ts";

/** Runtime settings; every interval in ms of the injected clock. */
export interface RuntimeOptions {
  /** Queue name -> concurrency (jobs run at once on this node). */
  queues: Record<string, number>;
  /**
   * Queue name -> flow limits across every node (`global`, `partition`,
   * `rate`); a function is read at each claim, so a reloaded file applies
   * from the next. Limits stored with `jobs queues set` override these.
   * @default {} (none)
   */
  flow?: Record<string, FlowLimits> | (() => Record<string, FlowLimits>);
  /** This node's name; unique per process. */
  node: string;
  /**
   * Where this node runs (the daemon's `--environment`), stored with its
   * heartbeat so operators see which environments the live nodes serve.
   * @default null (not stated)
   */
  environment?: string | null;
  /**
   * How long a claim holds a job without renewal. Renewed every third of
   * it; a job whose lease could not be renewed is stopped on this node a
   * quarter of it before it runs out in the store (see
   * {@linkcode leaseMarginMs}).
   * @default 30_000
   */
  leaseMs?: number;
  /**
   * Heartbeat period (node row, cancelled jobs, lease renewal); at most a
   * sixth of `leaseMs` is used, so a renewal due at a third of the lease
   * gets two tries before the lease's margin is reached.
   * @default 1000
   */
  heartbeatMs?: number;
  /** Producer fallback timer, jittered by +/- 20 %. @default 1000 */
  pollMs?: number;
  /** Longest stager sleep; it wakes earlier for the next due job. @default 1000 */
  stageMs?: number;
  /** Lifeline period. @default 5000 */
  rescueMs?: number;
  /**
   * How often a pruner pass starts. A function is read again before each
   * wait, so a reloaded schedules file applies from the next pass.
   * @default 60_000
   */
  pruneMs?: number | (() => number);
  /**
   * Pruner settings (retention by state, rows per transaction). A function
   * is read again before each pass, as `pruneMs` is. A pass deletes all that
   * is due, batch by batch, and stops between two batches when the runtime
   * stops.
   */
  pruner?: PrunerOptions | (() => PrunerOptions);
  /** Nodes silent this long are removed from `nodes`. @default 5 minutes */
  nodeExpiryMs?: number;
  /**
   * The schedules to plan (read again on every pass, so a reload is a new
   * array plus {@linkcode Runtime.reloadSchedules}). No planner without it.
   */
  schedules?: () => readonly Schedule[];
  /** Longest planner sleep; it wakes earlier for the next occurrence. @default 1000 */
  planMs?: number;
  /** While the store fails, at most one `store.error` line per this many ms. @default 30_000 */
  outageLogEveryMs?: number;
  /**
   * Where the maintenance passes (stager, lifeline, pruner, planner) run:
   * on every node (`everywhere`), or only on the node holding the
   * maintenance role of the store (`leader`: several nodes on one
   * PostgreSQL database then do not contend for the same rows).
   * @default "everywhere"
   */
  maintenance?: "everywhere" | "leader";
  /**
   * With `maintenance: "leader"`, how long the role is held without
   * renewal (renewed every third of it): a node that stops or hangs is
   * replaced within this long. The holder stops counting itself leader a
   * fifth of it earlier (`leaderMarginMs` of leadership.ts).
   * @default 15_000
   */
  leaderTtlMs?: number;
}

/** Dependencies chosen by the caller (main.ts or the library user). */
export interface RuntimeDeps {
  store: Store;
  clock: Clock;
  registry: Registry;
  logger: Logger;
  random?: () => number;
}

/** A running set of producers and plugins on one node. */
export class Runtime {
  readonly node: string;
  /** What the producers and plugins saw of the store: degraded while any of them fails. */
  readonly health: StoreHealth;
  #deps: RuntimeDeps;
  /** The maintenance role, with `maintenance: "leader"`; null when every node maintains. */
  readonly leadership: Leadership | null;
  #options:
    & Required<Omit<RuntimeOptions, "pruner" | "schedules" | "environment">>
    & Pick<RuntimeOptions, "schedules" | "environment">
    & { pruner: PrunerOptions | (() => PrunerOptions) };
  #due = new Map<string, number>();
  #producers = new Map<string, Producer>();
  #stop = new AbortController();
  #plugins: Promise<void>[] = [];
  #producerLoops: Promise<void>[] = [];
  /** Wakes the stager and planner loops early, by name. */
  #wakes = new Map<string, () => void>();
  #unsubscribe: (() => void) | null = null;
  #started = false;
  #stopped: Promise<void> | null = null;
  #lastRenew = -Infinity;
  /**
   * Job id -> the `now` sent with the last renewal of its lease that
   * succeeded: the store holds the lease until then plus `leaseMs` (or
   * from the claim, when that is later).
   */
  #renewedAt = new Map<number, number>();
  /** When the first of the renewals failing in a row was sent; null while they succeed. */
  #renewFailingSince: number | null = null;
  /** When the planner last finished a pass (or the runtime started). */
  #plannedAt = -Infinity;

  constructor(deps: RuntimeDeps, options: RuntimeOptions) {
    this.#deps = deps;
    this.node = options.node;
    this.#options = {
      leaseMs: 30_000,
      heartbeatMs: 1000,
      pollMs: 1000,
      stageMs: 1000,
      rescueMs: 5000,
      pruneMs: DEFAULT_PRUNE_EVERY_MS,
      nodeExpiryMs: 5 * 60_000,
      planMs: 1000,
      outageLogEveryMs: 30_000,
      maintenance: "everywhere",
      leaderTtlMs: 15_000,
      pruner: {},
      flow: {},
      ...options,
    };
    this.health = new StoreHealth(
      { clock: deps.clock, logger: deps.logger },
      { logEveryMs: this.#options.outageLogEveryMs },
    );
    const maintenance = this.#options.maintenance;
    if (maintenance !== "everywhere" && maintenance !== "leader") {
      throw new RangeError(
        `maintenance must be "everywhere" or "leader", got ${JSON.stringify(maintenance)}`,
      );
    }
    this.leadership = maintenance === "leader"
      ? new Leadership(
        { store: deps.store, clock: deps.clock, logger: deps.logger, health: this.health },
        { node: this.node, ttlMs: this.#options.leaderTtlMs },
      )
      : null;
    // A lost store (its file deleted or replaced) takes no claim: stop asking.
    this.health.onLost(() => {
      for (const p of this.#producers.values()) p.stopFetching();
    });
    for (const [queue, concurrency] of Object.entries(options.queues)) {
      if (!Number.isInteger(concurrency) || concurrency < 1) {
        throw new RangeError(
          `queue "${queue}": concurrency must be an integer >= 1, got ${concurrency}`,
        );
      }
      this.#producers.set(
        queue,
        new Producer(queue, concurrency, {
          store: deps.store,
          clock: deps.clock,
          registry: deps.registry,
          node: this.node,
          leaseMs: this.#options.leaseMs,
          logger: deps.logger,
          random: deps.random ?? Math.random,
          health: this.health,
          cursors: deps.store,
          onEnqueued: (queues) => this.wake(queues),
          flow: (queue) => read(this.#options.flow)[queue] ?? null,
        }),
      );
    }
  }

  /** Queue name -> concurrency, as this node runs them. */
  get queues(): Record<string, number> {
    return Object.fromEntries([...this.#producers].map(([q, p]) => [q, p.concurrency]));
  }

  /**
   * Whether this node runs the maintenance passes now: always with
   * `maintenance: "everywhere"`, else while it holds the role.
   */
  get maintaining(): boolean {
    return this.leadership?.isLeader ?? true;
  }

  /** Jobs running on this node now. */
  get running(): number {
    let n = 0;
    for (const p of this.#producers.values()) n += p.running;
    return n;
  }

  /** Finished jobs whose result waits for the store (non-zero only during an outage). */
  get unrecorded(): number {
    let n = 0;
    for (const p of this.#producers.values()) n += p.unrecorded;
    return n;
  }

  /**
   * How far the planner is behind at `now`, in ms: since the oldest
   * occurrence that is due but not planned yet, or, before its first pass
   * (after start or a reload), since that began. 0 without schedules or
   * when it is on time, or while another node plans (this one is not the
   * leader).
   */
  plannerLagMs(now: number): number {
    if (!this.#options.schedules || !this.maintaining) return 0;
    let oldest = Infinity;
    for (const at of this.#due.values()) if (at <= now && at < oldest) oldest = at;
    if (oldest === Infinity && this.#due.size === 0) oldest = this.#plannedAt;
    return oldest === Infinity || oldest === -Infinity ? 0 : Math.max(0, now - oldest);
  }

  /** Registers the node and starts producers and plugins. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const { store, clock } = this.#deps;
    await store.nodeBeat({
      node: this.node,
      queues: this.queues,
      environment: this.#options.environment ?? null,
      now: clock.now(),
    });
    this.#plannedAt = clock.now();
    if (this.#options.schedules) {
      await syncSchedules(store, clock.now(), this.#options.schedules());
    }
    this.#unsubscribe = store.onExternalChange(() => this.#wakeAll());
    if (this.leadership) {
      this.leadership.onChange((leader) => this.#leaderChanged(leader));
      await this.leadership.start();
    }
    for (const producer of this.#producers.values()) this.#producerLoops.push(producer.start());
    const signal = this.#stop.signal;
    this.#plugins.push(
      this.#every("heartbeat", () => this.#heartbeatMs(), () => this.#heartbeat()),
      this.#watchdog(signal),
      this.#every("poll", () => jitter(this.#options.pollMs, this.#random()), () => {
        this.#wakeAll();
        return Promise.resolve();
      }),
      this.#stager(signal),
      this.#planner(signal),
      this.#every("lifeline", () => this.#options.rescueMs, async () => {
        if (!this.maintaining) return;
        // After an outage the leases this node holds may have run out in the
        // store: renew them before rescuing, or this node would rescue (and
        // run again) jobs whose results only wait to be written.
        if (this.#renewDue(clock.now()) && this.#inflight().length > 0) await this.#heartbeat();
        const report = await rescueOrphans(store, clock.now());
        for (const job of report.jobs) this.#logRescued(job);
        this.wake(report.queues);
        await store.nodesExpire({ before: clock.now() - this.#options.nodeExpiryMs });
        await returnExpiredClaims(store, clock.now());
      }),
      this.#every("pruner", () => read(this.#options.pruneMs), async () => {
        if (this.maintaining) await this.#prune(signal);
      }),
    );
  }

  /**
   * A node that became leader passes at once (the planner from a clean
   * slate, as after a reload); one that stopped being leader forgets what
   * it knew of the schedules, which the next leader plans.
   */
  #leaderChanged(leader: boolean): void {
    this.#due.clear();
    this.#plannedAt = this.#deps.clock.now();
    if (!leader) return;
    for (const name of ["stager", "planner", "lifeline", "pruner"]) this.#wakes.get(name)?.();
  }

  /** Wakes the producers of `queues` (all when omitted): a job may be available. */
  wake(queues?: Iterable<string>): void {
    if (!queues) return this.#wakeAll();
    for (const q of queues) this.#producers.get(q)?.wake();
  }

  /** Syncs the schedules' rows after `schedules()` changed, and plans them again at once. */
  async reloadSchedules(): Promise<void> {
    const schedules = this.#options.schedules?.();
    if (!schedules) return;
    await syncSchedules(this.#deps.store, this.#deps.clock.now(), schedules);
    this.#due.clear();
    this.#plannedAt = this.#deps.clock.now();
    this.#wakes.get("planner")?.();
  }

  /** Tells the stager a job was scheduled for later, so it can shorten its sleep. */
  wakeStager(): void {
    this.#wakes.get("stager")?.();
  }

  /**
   * Stops in order: stop fetching, wait up to `grace` ms for running jobs,
   * abort the rest (they stay executing until their lease expires and the
   * lifeline rescues them), stop the plugins, deregister the node.
   *
   * When the store is lost ({@linkcode StoreHealth.lost}), running jobs
   * still get the grace period to finish, but their results cannot be
   * written anywhere: once none runs, the results are given up (each logged
   * as `job.unrecorded`) and nothing is deregistered.
   */
  stop(options: { grace?: number } = {}): Promise<void> {
    return (this.#stopped ??= this.#shutdown(options.grace ?? 25_000));
  }

  async #shutdown(grace: number): Promise<void> {
    if (!this.#started) return;
    const { store, clock, logger } = this.#deps;
    for (const p of this.#producers.values()) p.stopFetching();
    const graceOver = new AbortController();
    const drained = Promise.race([
      Promise.all(this.#producerLoops),
      this.#idleWhileLost(graceOver.signal),
    ]).then(() => true);
    const timedOut = clock.sleep(grace, graceOver.signal).then(() => false);
    const inTime = await Promise.race([drained, timedOut]);
    graceOver.abort();
    if (!inTime) {
      logger("node.shutdown_abort", { node: this.node, running: this.running });
      for (const p of this.#producers.values()) p.abandonAll();
      await Promise.all(this.#producerLoops);
    } else if (this.health.lost) {
      for (const p of this.#producers.values()) p.abandonAll();
      await Promise.all(this.#producerLoops);
    }
    this.#stop.abort();
    this.#wakes.get("stager")?.();
    this.#wakes.get("planner")?.();
    await Promise.all(this.#plugins);
    // After the last pass: another node takes the role at its next try.
    await this.leadership?.stop();
    this.#unsubscribe?.();
    if (this.health.lost) return; // the node's row went with the file
    try {
      await store.nodeDelete({ node: this.node });
    } catch (error) {
      logger("node.deregister_failed", { node: this.node, error: String(error) });
    }
  }

  /**
   * Resolves once the store is lost and no job runs any more: results that
   * wait for a lost store would wait for ever. Checks every 50 ms of the
   * clock while lost; returns when `signal` aborts (the grace is over).
   */
  async #idleWhileLost(signal: AbortSignal): Promise<void> {
    if (!this.health.lost) {
      await new Promise<void>((resolve) => {
        const off = this.health.onLost(() => resolve());
        signal.addEventListener("abort", () => (off(), resolve()), { once: true });
      });
    }
    while (!signal.aborted && this.running > 0) await this.#deps.clock.sleep(50, signal);
  }

  #wakeAll(): void {
    for (const p of this.#producers.values()) p.wake();
  }

  #random(): number {
    return (this.#deps.random ?? Math.random)();
  }

  #inflight(): Lease[] {
    return [...this.#producers.values()].flatMap((p) => p.leases());
  }

  /** The heartbeat period: as set, but no more than a sixth of the lease. */
  #heartbeatMs(): number {
    return Math.max(1, Math.min(this.#options.heartbeatMs, Math.floor(this.#options.leaseMs / 6)));
  }

  /** Whether a third of the lease has passed since the leases held were last renewed. */
  #renewDue(now: number): boolean {
    return now - this.#lastRenew >= this.#options.leaseMs / 3;
  }

  /**
   * One heartbeat: the node's row, and the leases it holds checked or (every
   * third of the lease) renewed. A beat that has not answered within
   * {@linkcode renewDeadlineMs} counts as failed: a connection that hangs
   * must not hold the heartbeat (nor what it knows of the leases) up.
   */
  async #heartbeat(): Promise<void> {
    const { store, clock } = this.#deps;
    const now = clock.now();
    const inflight = this.#inflight();
    const renew = this.#renewDue(now) && inflight.length > 0;
    let lost: Lease[];
    try {
      ({ lost } = await this.#within(
        renewDeadlineMs(this.#options.leaseMs),
        beat(store, now, {
          node: this.node,
          queues: this.queues,
          environment: this.#options.environment ?? null,
          inflight,
          leaseMs: this.#options.leaseMs,
          renew,
        }),
      ));
    } catch (error) {
      if (renew) this.#renewFailingSince ??= now;
      throw error;
    }
    if (renew) {
      this.#lastRenew = now;
      this.#renewFailingSince = null;
      this.#renewedAt = new Map(inflight.map((lease) => [lease.id, now]));
    }
    for (const lease of lost) {
      for (const p of this.#producers.values()) {
        if (p.abandon(lease.id, new LeaseLostError(lease.id))) {
          this.#deps.logger("job.lease_lost", { queue: p.queue, job: lease.id, node: this.node });
        }
      }
    }
  }

  /** `call`, or an error once `ms` of the clock have passed without an answer (or at stop). */
  #within<T>(ms: number, call: Promise<T>): Promise<T> {
    const answered = new AbortController();
    const late = new Promise<never>((_, reject) => {
      const signal = AbortSignal.any([answered.signal, this.#stop.signal]);
      this.#deps.clock.sleep(ms, signal).then(() => {
        if (!answered.signal.aborted) reject(new Error(`no answer from the store within ${ms} ms`));
      });
    });
    return Promise.race([call, late]).finally(() => answered.abort());
  }

  /**
   * Stops, every check, the jobs whose lease runs out in the store within
   * {@linkcode leaseMarginMs} (it was not renewed since): another node may
   * rescue and run them from then on, so this copy must be gone first.
   */
  async #watchdog(signal: AbortSignal): Promise<void> {
    const { clock } = this.#deps;
    const margin = leaseMarginMs(this.#options.leaseMs);
    const every = Math.max(1, Math.min(this.#heartbeatMs(), Math.floor(margin / 3)));
    // With nothing running it looks less often: a job claimed meanwhile is
    // looked at within half the time its lease has before the margin, long
    // before it could be due (an idle node woke once a second for this).
    const idle = Math.max(every, Math.floor((this.#options.leaseMs - margin) / 2));
    while (!signal.aborted) {
      await clock.sleep(this.running > 0 ? every : idle, signal);
      if (!signal.aborted) this.#expireUnrenewed(clock.now(), margin);
    }
  }

  #expireUnrenewed(now: number, margin: number): void {
    const { leaseMs } = this.#options;
    for (const p of this.#producers.values()) {
      for (const { id, claimedAt } of p.claims()) {
        const expiresAt = Math.max(claimedAt, this.#renewedAt.get(id) ?? -Infinity) + leaseMs;
        if (now < expiresAt - margin) continue;
        if (!p.abandon(id, new LeaseExpiredError(id, expiresAt))) continue;
        const since = this.#renewFailingSince;
        this.#deps.logger("job.lease_expired", {
          queue: p.queue,
          job: id,
          node: this.node,
          expiresAt,
          renewFailingMs: since === null ? 0 : now - since,
        });
      }
    }
  }

  /**
   * `job.rescued`: which job the lifeline took from which (dead or cut off)
   * node, and what happens next: attempt `nextAttempt` when it went back to
   * `available`, none when it had no attempt left and was discarded.
   */
  #logRescued(job: RescuedJob): void {
    this.#deps.logger("job.rescued", {
      queue: job.queue,
      job: job.id,
      deadNode: job.node,
      node: this.node,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      state: job.state,
      nextAttempt: job.state === "available" ? job.attempt + 1 : null,
    });
  }

  /** One pruner pass with the settings of now; logs what it deleted. */
  async #prune(signal: AbortSignal): Promise<void> {
    const { store, clock, logger } = this.#deps;
    const options = read(this.#options.pruner);
    const schedules = options.schedules ?? (this.#options.schedules?.() ?? [])
      .filter((s) => s.retentionMs !== undefined)
      .map((s) => ({ id: s.id, retentionMs: s.retentionMs! }));
    const { deleted } = await pruneJobs(store, clock.now(), { ...options, schedules, signal });
    if (deleted > 0) logger("pruner.deleted", { node: this.node, deleted });
    const { runs } = await pruneWorkflowRuns(store, clock.now(), { ...options, signal });
    if (runs > 0) logger("pruner.workflow_runs_deleted", { node: this.node, runs });
    const { drops } = await pruneIngestDrops(store, clock.now(), { ...options, signal });
    if (drops > 0) logger("pruner.ingest_drops_deleted", { node: this.node, drops });
    if (options.reportOutputs && !signal.aborted) {
      const now = clock.now();
      const kept = options.retention?.discarded ?? DEFAULT_RETENTION.discarded;
      const runs = await options.reportOutputs(now, now - kept);
      if (runs > 0) logger("pruner.report_runs_deleted", { node: this.node, runs });
    }
  }

  #stager(signal: AbortSignal): Promise<void> {
    const { store, clock } = this.#deps;
    return this.#dueLoop("stager", this.#options.stageMs, signal, async () => {
      if (!this.maintaining) return null;
      const report = await stageJobs(store, clock.now());
      this.wake(report.queues);
      return report.nextAt;
    });
  }

  #planner(signal: AbortSignal): Promise<void> {
    const schedules = this.#options.schedules;
    if (!schedules) return Promise.resolve();
    const { store, clock, logger } = this.#deps;
    return this.#dueLoop("planner", this.#options.planMs, signal, async () => {
      if (!this.maintaining) return null;
      const report = await planSchedules(store, clock.now(), schedules(), this.#due);
      this.#plannedAt = clock.now();
      this.wake(report.queues);
      if (report.scheduled > 0) this.wakeStager();
      if (report.misfires > 0) logger("planner.misfires", { count: report.misfires });
      return report.nextAt;
    });
  }

  /**
   * Runs `pass` again at the instant it returns (at most `maxMs` later), or
   * at once when woken through `#wakes`; an error goes to the health (logged
   * at a bounded rate), not fatal.
   */
  async #dueLoop(
    name: string,
    maxMs: number,
    signal: AbortSignal,
    pass: () => Promise<number | null>,
  ): Promise<void> {
    const { clock } = this.#deps;
    while (!signal.aborted) {
      let wait = maxMs;
      try {
        const nextAt = await pass();
        this.health.succeeded(name);
        if (nextAt !== null) wait = Math.max(0, Math.min(wait, nextAt - clock.now()));
      } catch (error) {
        this.health.failed(name, error);
      }
      if (signal.aborted) break;
      const woken = new AbortController();
      this.#wakes.set(name, () => woken.abort());
      await clock.sleep(wait, AbortSignal.any([signal, woken.signal]));
      this.#wakes.delete(name);
    }
  }

  /**
   * Runs `step` every `interval()` ms until stopped, or at once when woken
   * through `#wakes`; an error goes to the health, not fatal.
   */
  async #every(name: string, interval: () => number, step: () => Promise<void>): Promise<void> {
    const { clock } = this.#deps;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const woken = new AbortController();
      this.#wakes.set(name, () => woken.abort());
      await clock.sleep(interval(), AbortSignal.any([signal, woken.signal]));
      this.#wakes.delete(name);
      if (signal.aborted) break;
      try {
        await step();
        this.health.succeeded(name);
      } catch (error) {
        this.health.failed(name, error);
      }
    }
  }
}

/**
 * How long before its lease runs out in the store a job that could not be
 * renewed is stopped: a quarter of the lease (7.5 s of the default 30 s).
 * It covers the clock difference between this host and the one that
 * rescues the job, and the command runner's SIGTERM-to-SIGKILL grace (5 s
 * by default), so the process group is gone before anyone may take the job.
 * Renewals (every third of the lease) leave two thirds of it, well above
 * the margin, while the store answers.
 */
export function leaseMarginMs(leaseMs: number): number {
  return Math.floor(leaseMs / 4);
}

/**
 * How long a heartbeat may take before it counts as failed: a sixth of the
 * lease (5 s of the default 30 s), shorter than the margin, so a renewal
 * that hangs is given up and tried again before the margin is reached.
 */
export function renewDeadlineMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 6));
}

/** A setting given as a value, or as a function read each time it is needed. */
function read<T extends object | number>(setting: T | (() => T)): T {
  return typeof setting === "function" ? setting() : setting;
}

/** `ms` +/- 20 %, so nodes started together do not poll in step. */
export function jitter(ms: number, random: number): number {
  return Math.round(ms * (0.8 + 0.4 * random));
}
