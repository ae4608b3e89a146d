/**
 * What the conformance suite's files share: the instant they run at, the
 * lease they claim with, and small factories that make rows through the
 * `Store` interface only (`jobsInsert`, `jobsClaim`, `jobsRecord`), as
 * River's `riverdrivertest` does through its driver. Nothing here touches
 * SQL or a concrete store type.
 */

import assert from "node:assert/strict";
import type { ClaimedJob, JobResult, JobState, NewJob } from "../../../src/kernel/types.ts";
import type { Store } from "../../../src/store/store.ts";
import { newJob as makeJob } from "../../support/backends.ts";

/** The instant every conformance body starts at. */
export const T0 = Date.UTC(2026, 0, 1);
/** The lease {@linkcode claim} takes. */
export const LEASE_MS = 30_000;

/** A plain job due at T0 unless told otherwise. */
export function newJob(fields: Partial<NewJob> = {}): NewJob {
  return makeJob({ scheduledAt: T0, ...fields });
}

/** The completion of `job`'s attempt, with its fence unless `fields` say otherwise. */
export function completed(job: ClaimedJob, fields: Partial<JobResult> = {}): JobResult {
  return {
    id: job.id,
    fence: job.fence,
    attempt: job.attempt,
    startedAt: job.attemptedAt,
    outcome: "completed",
    ...fields,
  } as JobResult;
}

/** `job`'s attempt failed with "boom", to run again at `at`. */
export function retryable(job: ClaimedJob, at: number): JobResult {
  return {
    id: job.id,
    fence: job.fence,
    attempt: job.attempt,
    startedAt: job.attemptedAt,
    outcome: "retryable",
    error: "boom",
    at,
  };
}

/** Inserts `jobs` at `now`; their ids in input order. */
export async function insert(store: Store, jobs: NewJob[], now = T0): Promise<number[]> {
  return (await store.jobsInsert({ jobs, now })).map((r) => r.id);
}

/** Claims up to `limit` (10) jobs of `queue` ("default") for `node` ("node-a") at `now` (T0). */
export async function claim(
  store: Store,
  fields: { queue?: string; node?: string; limit?: number; now?: number } = {},
): Promise<ClaimedJob[]> {
  const { jobs } = await store.jobsClaim({
    queue: fields.queue ?? "default",
    node: fields.node ?? "node-a",
    limit: fields.limit ?? 10,
    now: fields.now ?? T0,
    leaseMs: LEASE_MS,
  });
  return jobs;
}

/** Claims exactly one job, failing the test when there is none. */
export async function claimOne(
  store: Store,
  fields: Parameters<typeof claim>[1] = {},
): Promise<ClaimedJob> {
  const jobs = await claim(store, { ...fields, limit: 1 });
  assert.equal(jobs.length, 1, "expected to claim one job");
  return jobs[0]!;
}

/** The state of job `id`, or undefined when there is no such job. */
export async function stateOf(store: Store, id: number): Promise<JobState | undefined> {
  return (await store.jobGet({ id }))?.state;
}
