/**
 * Live pages: one server-sent-events stream per tab (`GET /events`), fed by
 * one shared poller per console ({@linkcode LiveFeed}), never by one store
 * query per viewer.
 *
 * The feed reads a snapshot of what pages show live (jobs by queue and
 * state and their totals by state, the nodes' heartbeats; for a tenant's
 * person, that tenant's jobs by state; and the work queues' open and
 * claimed items with a change marker, from one `workItemsSummary` read) once per interval for each scope someone is watching (the
 * installation, or each tenant with a person watching), and hands the same
 * snapshot to every stream of that scope. Ten viewers of one scope cost the
 * store what one does; with no viewer it reads nothing. A snapshot equal to
 * the last one sent is not sent again.
 *
 * The page side is `assets/live_js.ts`: it opens the stream only while the
 * tab is visible, and writes each value into the element whose
 * `data-live` names its place in the snapshot, as text.
 *
 * @module
 */

import { nodesView } from "../admin/nodes.ts";
import type { Clock } from "../clock.ts";
import { JOB_STATES } from "../kernel/types.ts";
import type { Logger } from "../kernel/logger.ts";
import { redact } from "../kernel/redact.ts";
import type { Store } from "../store/store.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";

/** How often the feed reads a watched scope. */
export const LIVE_INTERVAL_MS = 1000;

/** The most jobs of one state a tenant's snapshot counts; past it, the page shows `100,000+`. */
export const LIVE_COUNT_CAP = 100_000;

/** What a page shows live, for one scope. */
export interface LiveSnapshot {
  /** Installation-wide: jobs by queue, then state. */
  queues?: Record<string, Record<string, number>>;
  /** Installation-wide: each node's heartbeat age in seconds, and whether it is stale. */
  nodes?: Record<string, { age: number; stale: boolean }>;
  /**
   * Jobs by state: a tenant's (capped at {@linkcode LIVE_COUNT_CAP}), or the
   * installation's (the queues' summed, from the same read).
   */
  jobs?: Record<string, number>;
  /**
   * The schedules file's work queues in the scope (a tenant's items for a
   * tenant's person): each one's open and claimed items and a marker that
   * changes with any claim, fence or item, from one read of every queue.
   */
  work?: Record<string, { open: number; claimed: number; marker: string }>;
}

/** A stream's callback: one snapshot, as it is sent. */
export type LiveListener = (snapshot: LiveSnapshot) => void;

/** The key of a scope: `*` for the installation, the tenant's name otherwise. */
function scopeKey(tenant: string | null): string {
  return tenant === null ? "*" : `tenant:${tenant}`;
}

interface Scope {
  tenant: string | null;
  listeners: Set<LiveListener>;
  /** The last snapshot sent, as JSON: an equal one is not sent again. */
  last: string | null;
  /** The last snapshot sent: what a new listener of the scope gets at once. */
  snapshot: LiveSnapshot | null;
}

/** The shared poller of one console. See the module's doc. */
export class LiveFeed {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #scopes = new Map<string, Scope>();
  readonly #closed = new AbortController();
  #wake: AbortController | null = null;
  #loop: Promise<void> | null = null;
  /** Snapshots read since the feed started: what a test counts. */
  reads = 0;

  readonly #workQueues: () => readonly WorkQueueDefinition[];

  /** `workQueues`: the schedules file's work queues as they are now, whose claims the feed counts. */
  constructor(
    store: Store,
    clock: Clock,
    logger: Logger,
    intervalMs = LIVE_INTERVAL_MS,
    workQueues: () => readonly WorkQueueDefinition[] = () => [],
  ) {
    this.#workQueues = workQueues;
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  /** Aborts when the feed closes: the streams end with it. */
  get closed(): AbortSignal {
    return this.#closed.signal;
  }

  /**
   * Adds a listener of `tenant`'s scope (null: installation-wide); it gets
   * the scope's last snapshot at once (or the first, when the scope is new:
   * read at once), then each one that differs. Returns the function that
   * removes it.
   */
  subscribe(tenant: string | null, listener: LiveListener): () => void {
    const key = scopeKey(tenant);
    let scope = this.#scopes.get(key);
    if (!scope) {
      this.#scopes.set(key, scope = { tenant, listeners: new Set(), last: null, snapshot: null });
      // A new scope is read now, not at the end of the current sleep.
      this.#wake?.abort();
    }
    scope.listeners.add(listener);
    const known = scope.snapshot;
    if (known !== null) queueMicrotask(() => listener(known));
    this.#loop ??= this.#run().finally(() => this.#loop = null);
    return () => {
      scope.listeners.delete(listener);
      if (scope.listeners.size === 0) this.#scopes.delete(key);
    };
  }

  /** Stops polling and ends every stream. */
  async close(): Promise<void> {
    this.#closed.abort();
    this.#wake?.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (this.#scopes.size > 0 && !this.#closed.signal.aborted) {
      for (const scope of [...this.#scopes.values()]) {
        if (scope.listeners.size === 0) continue;
        let snapshot: LiveSnapshot;
        try {
          snapshot = await this.#read(scope.tenant);
        } catch (error) {
          this.#logger("console.live_error", { error: oneLine(error) });
          continue;
        }
        const text = JSON.stringify(snapshot);
        if (text === scope.last) continue;
        scope.last = text;
        scope.snapshot = snapshot;
        for (const listener of scope.listeners) listener(snapshot);
      }
      this.#wake = new AbortController();
      await this.#clock.sleep(
        this.#intervalMs,
        AbortSignal.any([this.#wake.signal, this.#closed.signal]),
      ).catch(() => {});
    }
  }

  /** One read of a scope: the store's counts and the nodes, or the tenant's counts. */
  async #read(tenant: string | null): Promise<LiveSnapshot> {
    this.reads++;
    const work = await this.#work(tenant);
    return { ...(await this.#counts(tenant)), ...(work === null ? {} : { work }) };
  }

  /** The scope's work queues' claims (one statement for every queue), or null when none is declared. */
  async #work(tenant: string | null): Promise<LiveSnapshot["work"] | null> {
    const declared = this.#workQueues();
    if (declared.length === 0) return null;
    const summary = await this.#store.workItemsSummary({
      ...(tenant === null ? {} : { tenant }),
      now: this.#clock.now(),
    });
    const work: NonNullable<LiveSnapshot["work"]> = {};
    for (const queue of declared) {
      const s = summary.find((row) => row.queue === queue.id);
      work[queue.id] = { open: s?.open ?? 0, claimed: s?.claimed ?? 0, marker: s?.marker ?? "0" };
    }
    return work;
  }

  async #counts(tenant: string | null): Promise<LiveSnapshot> {
    if (tenant !== null) {
      const jobs: Record<string, number> = {};
      for (const state of JOB_STATES) {
        jobs[state] = await this.#store.jobsCountMatching({ tenant, state }, {
          atMost: LIVE_COUNT_CAP,
        });
      }
      return { jobs };
    }
    const queues: Record<string, Record<string, number>> = {};
    const jobs: Record<string, number> = Object.fromEntries(JOB_STATES.map((s) => [s, 0]));
    for (const row of await this.#store.jobsCount({})) {
      (queues[row.queue] ??= {})[row.state] = row.count;
      jobs[row.state] = (jobs[row.state] ?? 0) + row.count;
    }
    const nodes: Record<string, { age: number; stale: boolean }> = {};
    for (const node of await nodesView(this.#store, this.#clock.now())) {
      nodes[node.node] = { age: Math.round(node.heartbeatAgeMs / 1000), stale: node.stale };
    }
    return { queues, nodes, jobs };
  }
}

/** The first line of an error's message, redacted. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redact(message.split("\n", 1)[0]!.trim());
}
