/**
 * Leadership: which node of several sharing one store runs the maintenance
 * passes (stager, lifeline, pruner, planner). One row of `leaders` per role
 * is held by one node until its expiry, renewed every third of the lease
 * ({@linkcode Store.leaderTake}); a clean stop releases it, so another node
 * takes over at its next try, and a node that hangs or loses the store
 * stops renewing, so another takes over once the row expires, within one
 * lease.
 *
 * A follower tries again every third of the lease, or at the holder's
 * expiry when that comes first: it takes over at the first instant the row
 * allows it.
 *
 * Nothing depends on there being only one leader: every pass is atomic and
 * idempotent on its own, so a stale leader (one that hung past its expiry
 * and has not found out yet) running one more pass does no harm. The role
 * only spares the other nodes passes that would contend for the same rows.
 * A node counts itself leader only while its own clock is a margin
 * ({@linkcode leaderMarginMs}: a fifth of the lease) before the expiry it
 * last wrote, so one that cannot renew stops by itself, and does so before
 * any other node may take over (at the expiry, by the other node's clock):
 * the margin absorbs the difference between the two hosts' clocks. It
 * notices at that instant, not at its next try: a take that has not
 * answered by then is waited for beside a timer, which announces the loss
 * (`leader.lost`, reason `expired`).
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { LeaderState, Store } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";
import type { StoreHealth } from "./store_health.ts";

/** The role the runtime's maintenance passes run under. */
export const MAINTENANCE_ROLE = "maintenance";

/** Settings of {@linkcode Leadership}. */
export interface LeadershipOptions {
  /** This node's name, as the runtime's. */
  node: string;
  /** The role: one row of `leaders`. @default "maintenance" */
  name?: string;
  /** How long a take holds the role without renewal, in ms of the clock. @default 15_000 */
  ttlMs?: number;
}

/** What {@linkcode Leadership} needs. */
export interface LeadershipDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Where a failed take is reported (logged at a bounded rate, `/readyz`), as step `leader`. */
  health: StoreHealth;
}

/**
 * How long before the expiry it wrote a holder stops counting itself
 * leader: a fifth of the lease (3 s of the default 15 s), at least 1 ms.
 * Renewals every third of the lease keep the role well clear of it.
 */
export function leaderMarginMs(ttlMs: number): number {
  return Math.max(1, Math.floor(ttlMs / 5));
}

/** Why a node stopped being leader, as `leader.lost` says. */
export type LostReason = "taken" | "expired" | "released";

/** One node's side of a role: takes it when it can, renews it while it holds it. */
export class Leadership {
  readonly node: string;
  readonly name: string;
  readonly ttlMs: number;
  #deps: LeadershipDeps;
  /** The row as this node's last successful take left it, or null before the first. */
  #state: LeaderState | null = null;
  /** What listeners were last told. */
  #announced = false;
  #listeners = new Set<(leader: boolean) => void>();
  #stop = new AbortController();
  #loop: Promise<void> | null = null;
  #stopped: Promise<void> | null = null;

  constructor(deps: LeadershipDeps, options: LeadershipOptions) {
    const ttlMs = options.ttlMs ?? 15_000;
    if (!Number.isInteger(ttlMs) || ttlMs < 3) {
      throw new RangeError(`leaderTtlMs must be an integer >= 3, got ${ttlMs}`);
    }
    this.#deps = deps;
    this.node = options.node;
    this.name = options.name ?? MAINTENANCE_ROLE;
    this.ttlMs = ttlMs;
  }

  /**
   * Whether this node holds the role now: it took or renewed it and its
   * expiry, less {@linkcode leaderMarginMs}, has not come.
   */
  get isLeader(): boolean {
    const lossAt = this.#lossAt();
    return lossAt !== null && this.#deps.clock.now() < lossAt;
  }

  /** When this node stops counting itself leader, or null when it does not hold the role. */
  #lossAt(): number | null {
    const state = this.#state;
    return state !== null && state.held ? state.expiresAt - leaderMarginMs(this.ttlMs) : null;
  }

  /** The fence of this node's hold while it is leader, else null. */
  get fence(): number | null {
    return this.isLeader ? this.#state!.fence : null;
  }

  /** Who held the role at this node's last look (null: nobody, or not looked yet). */
  get holder(): string | null {
    return this.#state?.node ?? null;
  }

  /**
   * Calls `listener` with true when this node becomes leader and false when
   * it stops being one. Returns the unsubscribe function.
   */
  onChange(listener: (leader: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Tries once at once (so the caller knows before its first passes), then
   * keeps trying and renewing until {@linkcode stop}.
   */
  async start(): Promise<void> {
    if (this.#loop) return;
    const first = await this.#attempt();
    this.#loop = this.#run(first);
  }

  /**
   * One take or renewal at the clock's now; tells the listeners of a change.
   * Returns how long to wait before the next. A failed store call is
   * reported to the health and tried again a third of the lease later
   * (meanwhile a hold runs out by itself at its expiry).
   */
  async #attempt(): Promise<number> {
    const { clock, health } = this.#deps;
    const now = clock.now();
    const renewEvery = Math.floor(this.ttlMs / 3);
    try {
      this.#state = await this.#take(now);
      health.succeeded("leader");
    } catch (error) {
      health.failed("leader", error);
      this.#announce();
      return this.#notPast(renewEvery);
    }
    this.#announce();
    const state = this.#state;
    if (state.held || state.node === null) return this.#notPast(renewEvery);
    // Another node holds it: come back when it runs out, if that is sooner.
    return Math.max(1, Math.min(renewEvery, state.expiresAt - clock.now()));
  }

  /** `wait`, or less when this node's hold ends sooner: the loop wakes then to announce it. */
  #notPast(wait: number): number {
    const lossAt = this.#lossAt();
    const now = this.#deps.clock.now();
    return lossAt !== null && lossAt > now ? Math.max(1, Math.min(wait, lossAt - now)) : wait;
  }

  /**
   * One `leaderTake`. While this node holds the role, a timer at the loss
   * instant runs beside it: a take that hangs past it must not keep the
   * node from announcing that it stopped being leader.
   */
  async #take(now: number): Promise<LeaderState> {
    const { store, clock } = this.#deps;
    const call = store.leaderTake({ name: this.name, node: this.node, now, ttlMs: this.ttlMs });
    const lossAt = this.#lossAt();
    if (lossAt === null) return await call;
    const answered = new AbortController();
    const signal = AbortSignal.any([answered.signal, this.#stop.signal]);
    clock.sleep(lossAt - clock.now(), signal).then(() => {
      if (!signal.aborted) this.#announce();
    });
    try {
      return await call;
    } finally {
      answered.abort();
    }
  }

  async #run(firstWait: number): Promise<void> {
    const { clock } = this.#deps;
    const signal = this.#stop.signal;
    let wait = firstWait;
    while (!signal.aborted) {
      await clock.sleep(wait, signal);
      if (signal.aborted) break;
      wait = await this.#attempt();
    }
  }

  /** Stops trying and, while this node holds the role, releases it so another takes it at once. */
  stop(): Promise<void> {
    return (this.#stopped ??= this.#shutdown());
  }

  async #shutdown(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    const state = this.#state;
    if (!state?.held) return;
    const { store, logger } = this.#deps;
    const leader = this.isLeader;
    this.#state = { ...state, held: false, node: null };
    try {
      await store.leaderRelease({ name: this.name, node: this.node, fence: state.fence });
    } catch (error) {
      // Not fatal: the row runs out by itself within one lease.
      logger("leader.release_failed", { name: this.name, node: this.node, error: String(error) });
    }
    if (leader) this.#announce("released");
  }

  /** Logs and tells the listeners when being leader changed since they were last told. */
  #announce(reason?: LostReason): void {
    const leader = this.isLeader;
    if (leader === this.#announced) return;
    this.#announced = leader;
    const { logger } = this.#deps;
    const state = this.#state!;
    if (leader) {
      logger("leader.acquired", { name: this.name, node: this.node, fence: state.fence });
    } else {
      const why = reason ?? (state.held ? "expired" : "taken");
      logger("leader.lost", {
        name: this.name,
        node: this.node,
        reason: why,
        holder: why === "taken" ? state.node : null,
      });
    }
    for (const listener of this.#listeners) listener(leader);
  }
}
