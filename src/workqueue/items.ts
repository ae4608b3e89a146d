/**
 * What every door that touches items shares, free of I/O: an item's add
 * (its data checked, its score computed by the queue's rule), the job an
 * action runs for one item (its unique key `<queue>/<item>/<action>`), and
 * an item as people read it ({@linkcode itemView}: the score at now with
 * the inputs that set it, the claim only while current).
 *
 * @module
 */

import { buildJob } from "../kernel/enqueue.ts";
import { COMMAND_WORKER, HTTP_WORKER } from "../kernel/runs.ts";
import type { JobState, NewJob } from "../kernel/types.ts";
import type { WorkItemAddParams, WorkItemRow, WorkItemState } from "../store/store.ts";
import { scoreAt, scoreItem, type ScoreTerm } from "./definition.ts";
import type { WorkAction, WorkQueueDefinition } from "./types.ts";

/** Why an item's add was refused: a key or data that cannot be an item. */
export class WorkItemInvalid extends Error {
  constructor(readonly code: "work-key-invalid" | "work-data-invalid", message: string) {
    super(message);
    this.name = "WorkItemInvalid";
  }
}

/** A key: 1-256 characters, no control characters (it is shown and typed). */
const KEY = /^[^\p{Cc}]{1,256}$/u;

/** An item as the library, the command line or the API gives it. */
export interface NewWorkItem {
  key: string;
  /** A JSON object: its fields are the score's inputs and the row's columns. */
  data?: Record<string, unknown>;
  tenant?: string | null;
}

/** The store's params of adding `item` to `queue` by `actor` at `now`, its score computed. */
export function addParams(
  queue: WorkQueueDefinition,
  item: NewWorkItem,
  actor: string,
  now: number,
): WorkItemAddParams {
  if (typeof item.key !== "string" || !KEY.test(item.key)) {
    throw new WorkItemInvalid(
      "work-key-invalid",
      `work queue "${queue.id}": an item's key must be 1-256 characters without control characters, got ${
        JSON.stringify(item.key)
      }`,
    );
  }
  const data = item.data ?? {};
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new WorkItemInvalid(
      "work-data-invalid",
      `work queue "${queue.id}": item "${item.key}": data must be a JSON object, got ${
        JSON.stringify(data)
      }`,
    );
  }
  const score = queue.score === null ? null : scoreItem(queue.score, data);
  return { queue: queue.id, key: item.key, tenant: item.tenant ?? null, data, score, actor, now };
}

/** The unique key of an action's job on an item: the action runs once per item. */
export function actionKey(queue: string, key: string, action: string): string {
  return `${queue}/${key}/${action}`;
}

/** What a worker action's job gets as args (and a command's as `JOBS_WORK_*`). */
export interface WorkActionArgs {
  queue: string;
  key: string;
  action: string;
  tenant: string | null;
  data: unknown;
  /** `<queue>/<item>/<action>`: the same for every attempt, for side effects made idempotent. */
  idempotencyKey: string;
}

/** The job `action` runs for `item`: one job per item, unique by `<queue>/<item>/<action>`. */
export function actionJob(
  queue: WorkQueueDefinition,
  action: WorkAction,
  item: Pick<WorkItemRow, "key" | "tenant" | "data">,
  now: number,
): NewJob {
  const idempotencyKey = actionKey(queue.id, item.key, action.id);
  const args: WorkActionArgs = {
    queue: queue.id,
    key: item.key,
    action: action.id,
    tenant: item.tenant,
    data: item.data,
    idempotencyKey,
  };
  const run = action.run;
  const [worker, jobArgs] = run.kind === "worker"
    ? [run.worker, args]
    : run.kind === "command"
    ? [COMMAND_WORKER, {
      ...run,
      env: {
        ...run.env,
        JOBS_WORK_QUEUE: queue.id,
        JOBS_WORK_ITEM: item.key,
        JOBS_WORK_ACTION: action.id,
        JOBS_WORK_KEY: idempotencyKey,
        JOBS_WORK_DATA: JSON.stringify(item.data),
      },
    }]
    : [HTTP_WORKER, { ...run, body: run.body ?? JSON.stringify(args) }];
  const job = buildJob(worker, jobArgs, {
    queue: action.queue,
    ...(item.tenant === null ? {} : { tenant: item.tenant }),
    meta: { workItem: { queue: queue.id, key: item.key, action: action.id } },
  }, now);
  return { ...job, uniqueKey: idempotencyKey, uniqueStates: "all" };
}

/** An item as people read it: the score at now and what set it, the claim while it holds. */
export interface WorkItemView {
  queue: string;
  key: string;
  tenant: string | null;
  data: unknown;
  /** Null on an unscored queue. */
  score: number | null;
  /** The inputs as the rule names them (the age in ms); empty on an unscored queue. */
  inputs: Record<string, unknown>;
  /** Each input's weight and what it added. */
  terms: ScoreTerm[];
  rule: string | null;
  ruleVersion: string | null;
  requestedAt: number;
  ageMs: number;
  state: WorkItemState;
  /** The current claim; null when none holds (an expired one included). */
  claim: { owner: string; expiresAt: number; fence: number } | null;
  /** A claim whose lease ran out that nothing has cleared yet: shown as expired, not held. */
  lapsed: { owner: string; expiredAt: number } | null;
  skipped: { by: string; until: number } | null;
  /** The action taken, once done, and its job. */
  outcome: string | null;
  actionJobId: number | null;
  actionState: JobState | null;
  doneBy: string | null;
  doneAt: number | null;
  doneReason: string | null;
}

/** `row` as people read it at `now`, scored by `queue`'s rule. */
export function itemView(queue: WorkQueueDefinition, row: WorkItemRow, now: number): WorkItemView {
  const at = scoreAt(row, now, queue.score);
  const inputs: Record<string, unknown> = {};
  for (const term of at?.terms ?? []) inputs[term.input] = term.value;
  const held = row.claimOwner !== null && (row.claimExpiresAt ?? 0) > now;
  return {
    queue: row.queue,
    key: row.key,
    tenant: row.tenant,
    data: row.data,
    score: at?.score ?? null,
    inputs,
    terms: at?.terms ?? [],
    rule: queue.score?.rule ?? null,
    ruleVersion: row.ruleVersion,
    requestedAt: row.requestedAt,
    ageMs: Math.max(0, now - row.requestedAt),
    state: row.state,
    claim: held
      ? { owner: row.claimOwner!, expiresAt: row.claimExpiresAt!, fence: row.claimFence }
      : null,
    lapsed: row.claimOwner !== null && !held
      ? { owner: row.claimOwner, expiredAt: row.claimExpiresAt ?? 0 }
      : null,
    skipped: row.skippedBy !== null && (row.skippedUntil ?? 0) > now
      ? { by: row.skippedBy, until: row.skippedUntil! }
      : null,
    outcome: row.outcome,
    actionJobId: row.actionJobId,
    actionState: row.actionState,
    doneBy: row.doneBy,
    doneAt: row.doneAt,
    doneReason: row.doneReason,
  };
}
