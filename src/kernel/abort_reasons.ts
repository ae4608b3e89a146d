/**
 * Why a running job's signal was aborted by its node, rather than by the
 * job's own timeout: the reasons the runtime raises and the long-running
 * built-in jobs (ingest, reports) tell apart.
 *
 * @module
 */

/** Raised into a job's signal when its node lost the lease. */
export class LeaseLostError extends Error {
  constructor(readonly jobId: number) {
    super(`lease of job ${jobId} lost (cancelled by an operator, or rescued elsewhere)`);
    this.name = "LeaseLostError";
  }
}

/**
 * Raised into a job's signal when this node could not renew its lease and
 * the lease is about to run out in the store: another node may rescue the
 * job then, so this copy stops first.
 */
export class LeaseExpiredError extends Error {
  constructor(readonly jobId: number, readonly expiresAt: number) {
    super(`lease of job ${jobId} runs out at ${expiresAt} and could not be renewed`);
    this.name = "LeaseExpiredError";
  }
}

/** Raised into a job's signal when shutdown's grace period ran out. */
export class ShutdownError extends Error {
  constructor() {
    super("node shutting down; the job is left to the lifeline");
    this.name = "ShutdownError";
  }
}
