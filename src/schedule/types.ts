/**
 * The words of scheduling: a schedule as `schedules.yaml` declares it (after
 * validation), and an occurrence as the engine computes it. Pure data; no
 * store, no I/O, no machine time.
 *
 * @module
 */

import type { RunSpec, Selection } from "../kernel/runs.ts";

/** What to do with a local time that does not exist (spring forward). */
export type GapPolicy = "skip" | "shift";
/** Which instant(s) run for a local time that happens twice (fall back). */
export type OverlapPolicy = "first" | "second" | "both";

/** Why and how a schedule follows a local clock; required for a zone other than UTC. */
export interface LocalTimePolicy {
  /** Why this work follows a local clock (shown to operators). */
  reason: string;
  gap: GapPolicy;
  overlap: OverlapPolicy;
}

/** How often a schedule fires. */
export type Rhythm =
  /** A cron expression: 5 fields, or 6 with seconds first; croner's syntax. */
  | { kind: "cron"; expression: string }
  /** Every `everyMs` of elapsed time, on the grid `anchor + k * everyMs` (UTC ms). */
  | { kind: "every"; everyMs: number; anchor: number }
  /** Only when an operator runs it. */
  | { kind: "manual" };

/** What the engine needs to compute a schedule's instants. */
export interface Timing {
  /** The schedule id: part of every occurrence identity and of the jitter seed. */
  id: string;
  rhythm: Rhythm;
  /** IANA zone name. @default "UTC" */
  timezone: string;
  /** Required when `timezone` is not UTC (validated by the config parser). */
  localTime?: LocalTimePolicy;
  /** No occurrence before this instant (UTC ms). */
  startAt?: number;
  /** No occurrence after this instant (UTC ms). */
  endAt?: number;
  /**
   * Up to this many ms added to each occurrence's instant, derived from the
   * occurrence identity so every node computes the same value.
   */
  jitterMs?: number;
}

/** One planned instant of one schedule. */
export interface Occurrence {
  /** When it runs, UTC epoch ms (after jitter). */
  at: number;
  /**
   * The identity, `<schedule id>@<ISO instant with ms>`, of the instant
   * before jitter: it never changes, whatever the jitter setting.
   */
  occurrence: string;
  /** The local wall time in the schedule's zone, e.g. `2026-03-08T03:30:00-04:00[America/New_York]`. */
  local: string;
  /**
   * Set where a transition touched it: `shifted: 02:30 does not exist on
   * 2026-03-08`, `repeated: 01:30 happens twice, running the first`.
   */
  note: string | null;
}

/** What a schedule's misfire policy does with occurrences planned later than `graceMs` after their instant. */
export interface MisfirePolicy {
  policy: "skip" | "fire_once" | "catch_up";
  /** With `catch_up`: at most this many missed occurrences run; older ones are recorded as skipped. @default 100 */
  catchUpLimit: number;
  /** @default 60_000 */
  graceMs: number;
}

/** A schedule that runs its `run` once per item of a selection. */
export interface FanOut {
  selection: Selection;
  /** Item jobs inserted per transaction. @default 100 */
  batchSize: number;
}

/**
 * The args of a `jobs.fanout` job (one run of a fan-out schedule): all it
 * needs to list the items and enqueue one job per item, so a run does not
 * depend on the configuration loaded when it executes.
 */
export interface FanOutRun {
  kind: "fanout";
  /** The schedule's id, for messages. */
  schedule: string;
  selection: Selection;
  batchSize: number;
  /** What each item runs, with the item filled in. */
  run: RunSpec;
  /** What each item's job takes from the schedule. */
  item: {
    queue: string;
    priority: number;
    maxAttempts: number;
    tags: string[];
    tenant: string | null;
    /** The schedule's timeout, backoff and retention, as occurrences carry them. */
    meta: Record<string, unknown>;
  };
}

/** A schedule of `schedules.yaml`, validated and with defaults applied. */
export interface Schedule extends Timing {
  misfire: MisfirePolicy;
  /** Runs of one schedule at once: `skip` records the occurrence as cancelled (reason `overlap`). */
  overlapPolicy: "allow" | "skip" | "queue_one";
  run: RunSpec;
  queue: string;
  priority: number;
  maxAttempts: number;
  /** Backoff between attempts: fixed or exponential, in ms. */
  backoff?: { kind: "fixed"; delayMs: number } | {
    kind: "exponential";
    baseMs: number;
    maxMs: number;
  };
  timeoutMs?: number;
  /** How long this schedule's final occurrences are kept. */
  retentionMs?: number;
  tenant?: string;
  tags: string[];
  enabled: boolean;
  /** Manual schedules only: who may run it and when. */
  guard?: string;
  /** Manual schedules only: the environment it may touch; the daemon's `--environment` must match. */
  runsWhere?: string;
  /** Set when the schedule has a `selection`: each run lists items and runs `run` once per item. */
  fanOut?: FanOut;
  /**
   * Set when the schedule starts a workflow (`run: { workflow, input }`):
   * the workflow's id. Its `run` is then a worker run of `jobs.workflow`
   * whose args are a `WorkflowStartRun` carrying the compiled definition, so
   * each occurrence starts one run and the schedule's definition hash
   * changes with the workflow's.
   */
  workflow?: string;
}

/** Stands for a fan-out's item in a `run`'s argv, URL and body (see the config module). */
export const ITEM_PLACEHOLDER = "{item}";
