/**
 * The words of a human work queue as the schedules file declares it
 * (`work_queues:`) and as the doors, the library and the faces read it: its
 * claim mode, its lease, its score rule (a weighted formula over the item's
 * inputs, versioned by a hash of its definition), what its rows show, its
 * actions (each one job per item) and its bulk actions (money and how a
 * confirmation code reaches the approver). The rows of items and their
 * history are the store's words (`src/store/store.ts`: `WorkItemRow`,
 * `WorkItemEvent`).
 *
 * @module
 */

import type { StepRun } from "../workflow/types.ts";

/**
 * How people hold an item while they work it: `required` (an action needs
 * the actor's current claim and fence), `optional` (a claim is a hold others
 * see and may break with a reason) or `disabled` (no claims).
 */
export type ClaimMode = "disabled" | "optional" | "required";

/** Every claim mode, in the order the file's message lists them. */
export const CLAIM_MODES: readonly ClaimMode[] = ["disabled", "optional", "required"];

/**
 * The rule of a role a work queue may name in `roles:` beyond the four
 * built-in ones (`support`, `finance-review`): a lowercase letter, then up
 * to 39 lowercase letters, digits, `_` or `-`. A person or a token may hold
 * such a role (`jobs users add --role support`); it grants nothing but the
 * working of the queues that name it.
 */
export const QUEUE_ROLE = /^[a-z][a-z0-9_-]{0,39}$/;

/** The input every score may name without a field of the item's data: its age, now - requested_at. */
export const AGE_INPUT = "age";

/**
 * One weight of a score's formula: `per-unit` multiplies the input's value
 * (a number, or a boolean as 1 or 0); `per-age` (only for `age`) adds
 * `weight` for every `unitMs` of the item's age (`2/day`).
 */
export type ScoreWeight =
  | { kind: "per-unit"; weight: number }
  | { kind: "per-age"; weight: number; unitMs: number; unit: string };

/**
 * A queue's score rule: its citation (`rule/dispute.urgency-score`), the
 * inputs it weighs, in the file's order, and its weighted formula. `version`
 * is a hash of all three: a stored score names the version it came from.
 */
export interface ScoreRule {
  rule: string;
  inputs: string[];
  weights: Record<string, ScoreWeight>;
  version: string;
}

/** What one action of a queue runs: a use case's run, or its own. */
export interface WorkAction {
  id: string;
  /** The use case it runs, when it names one; null when it has a `run:` of its own. */
  useCase: string | null;
  run: StepRun;
  /** The queue of its jobs. @default "default" */
  queue: string;
}

/** Where a bulk action's confirmation code comes from, out of the session. */
export type ConfirmBy =
  /** A TOTP from the authenticator an approver holding `role` enrolled. */
  | { kind: "totp"; role: string }
  /** A code delivered by a command run with it in `JOBS_CONFIRM_CODE` (argv, no shell). */
  | { kind: "command"; argv: string[] }
  /** A code delivered by an HTTP POST to `url`. */
  | { kind: "webhook"; url: string }
  /** A code delivered by e-mail to `to`. */
  | { kind: "email"; to: string };

/** One bulk action of a queue: an action run on a previewed set of items. */
export interface WorkBulk {
  id: string;
  /** The id of one of the queue's {@linkcode WorkAction}s. */
  action: string;
  /** The item data fields that hold each item's amount and currency; null when it moves no money. */
  money: { amount: string; currency: string } | null;
  /** Required with `money`; null otherwise when the file names none. */
  confirmBy: ConfirmBy | null;
  /** The confirmer must be another approver than the requester. @default false */
  secondPerson: boolean;
}

/** One work queue of the file, checked and built. */
export interface WorkQueueDefinition {
  id: string;
  /** The use case the queue's work records (`use-case/payments.review-dispute`); null when none. */
  useCase: string | null;
  claim: ClaimMode;
  /** How long a claim holds before the item returns to the queue, in ms. */
  leaseMs: number;
  /** Null: the queue lists its oldest item first. */
  score: ScoreRule | null;
  /** The data fields each row shows, in order. */
  show: string[];
  actions: WorkAction[];
  bulk: WorkBulk[];
  /** The roles that may work this queue besides those the action table names. */
  roles: string[];
  /** A hash of the whole definition. */
  hash: string;
}

/** A queue's definition as written, before checks: what `work_queues:` or a library user gives. */
export interface WorkQueueOptions {
  id: string;
  useCase?: string;
  claim?: string;
  /** In ms. */
  leaseMs?: number;
  score?: { rule?: string; inputs?: string[]; weights?: Record<string, unknown> };
  show?: string[];
  actions?: Array<{
    id?: string;
    useCase?: string;
    /** What it runs when it names no use case (the file's `run:`, built). */
    run?: StepRun;
    queue?: string;
  }>;
  bulk?: Array<{
    id?: string;
    action?: string;
    money?: { amount?: string; currency?: string };
    confirmBy?: Record<string, unknown>;
    secondPerson?: boolean;
  }>;
  roles?: string[];
}
