/**
 * Heartbeat: keeps this node's row fresh, finds in-flight jobs whose lease
 * this node no longer holds (an operator cancelled them, or the lifeline
 * rescued them while the node was cut off) and renews the leases it does hold
 * before they expire.
 *
 * @module
 */

import type { Lease, Store } from "../store/store.ts";

/** What a heartbeat needs to know about the node. */
export interface BeatParams {
  node: string;
  /** The node's queues and their concurrency, shown to operators. */
  queues: Record<string, number>;
  /** Where the node runs (the daemon's `--environment`), shown to operators; null when not stated. */
  environment?: string | null;
  /** The leases of the jobs running on this node. */
  inflight: Lease[];
  /** Lease length, in ms. */
  leaseMs: number;
  /** Renew leases in this beat (else only check them). */
  renew: boolean;
}

/** One heartbeat: returns the leases the node lost; their jobs must be aborted. */
export async function beat(
  store: Store,
  now: number,
  params: BeatParams,
): Promise<{ lost: Lease[] }> {
  await store.nodeBeat({
    node: params.node,
    queues: params.queues,
    environment: params.environment ?? null,
    now,
  });
  if (params.inflight.length === 0) return { lost: [] };
  if (params.renew) {
    return store.jobsRenew({
      node: params.node,
      leases: params.inflight,
      now,
      leaseMs: params.leaseMs,
    });
  }
  return { lost: await store.jobsLeasesLost({ node: params.node, leases: params.inflight }) };
}
