/**
 * Test support: runs one worker as a step of a workflow run, through the
 * executor, without a store: the job's meta carries the step (as the run's
 * advancement writes it) and a map keeps the cursors.
 */

import { FakeClock } from "../../src/clock.ts";
import { serializeArgs } from "../../src/kernel/enqueue.ts";
import { type CursorStore, execute } from "../../src/kernel/executor.ts";
import type { ClaimedJob, JobResult } from "../../src/kernel/types.ts";
import type { Worker } from "../../src/kernel/worker.ts";
import { stepIdentity } from "../../src/workflow/advance.ts";
import { STEP_META_KEY, type StepMeta, type StepPayload } from "../../src/kernel/step_meta.ts";

/** The step a test job is, with defaults for a saga's `charge-fee` of run 12. */
export interface StepFixture {
  run?: number;
  workflow?: string;
  step?: string;
  item?: number;
  kind?: "step" | "compensation";
  useCase?: string | null;
  payload?: StepPayload;
  /** The cursor an earlier attempt wrote (JSON-able), kept in the fake cursor store. */
  cursor?: unknown;
  attempt?: number;
  clock?: FakeClock;
}

/** A lend-copy saga's `charge-fee` step: what most tests run. */
export const CHARGE_FEE: Required<Omit<StepFixture, "cursor" | "attempt" | "clock">> = {
  run: 12,
  workflow: "lend-copy",
  step: "charge-fee",
  item: -1,
  kind: "step",
  useCase: "use-case/billing.charge-fee",
  payload: { input: { copy: "c-1", fee: 250 }, results: { "place-hold": { hold: "h-9" } } },
};

/** Runs `worker` on `args` as the step `fixture` describes and returns how the attempt ended. */
export async function performStep<A>(
  worker: Worker<A>,
  args: A,
  fixture: StepFixture = {},
): Promise<JobResult> {
  const step = { ...CHARGE_FEE, ...fixture };
  const clock = fixture.clock ?? new FakeClock();
  const now = clock.now();
  const meta: StepMeta = {
    run: step.run,
    workflow: step.workflow,
    step: step.step,
    item: step.item,
    kind: step.kind,
    useCase: step.useCase,
    payload: step.payload,
  };
  const job: ClaimedJob = {
    id: 7,
    queue: worker.queue,
    worker: worker.name,
    args: serializeArgs(args, "performStep"),
    meta: JSON.stringify({ [STEP_META_KEY]: meta }),
    tags: "[]",
    occurrence: stepIdentity(step.run, step.step, step.item, step.kind),
    attempt: fixture.attempt ?? 1,
    maxAttempts: worker.maxAttempts,
    priority: worker.priority,
    fence: fixture.attempt ?? 1,
    insertedAt: now,
    scheduledAt: now,
    attemptedAt: now,
    tenant: null,
  };
  const cursors = new Map<number, string>();
  if (fixture.cursor !== undefined) cursors.set(job.id, JSON.stringify(fixture.cursor));
  const store: CursorStore = {
    workflowCursorGet: ({ jobId }) => Promise.resolve(cursors.get(jobId) ?? null),
    workflowCursorSet: ({ jobId, value }) => {
      cursors.set(jobId, value);
      return Promise.resolve(true);
    },
  };
  return await execute(job, new AbortController(), {
    registry: new Map([[worker.name, worker]]),
    clock,
    cursors: store,
  });
}
