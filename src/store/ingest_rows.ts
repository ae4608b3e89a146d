/**
 * Rows of the ingest tables as the views read them, shared by the SQLite
 * and PostgreSQL adapters (their SQL returns the same columns), what a
 * `running` run reads as once its job ended without it, and the text both
 * adapters write.
 *
 * @module
 */

import type { IngestDrop, IngestRun, IngestRunState, PipelineSummary } from "./ingest_types.ts";
import type { IngestChunkCommitParams } from "./store.ts";
import { storableText } from "../kernel/redact.ts";

type Row = Record<string, unknown>;

/**
 * The state a run reads as: its own, unless it is still `running` and its
 * job (`job_state`, null when pruned) is no longer going to run it.
 */
export function runStateOf(
  state: IngestRunState,
  jobState: string | null | undefined,
): IngestRunState {
  if (state !== "running") return state;
  if (jobState === "cancelled") return "cancelled";
  if (jobState === "discarded" || jobState === "completed" || jobState === null) return "failed";
  return "running";
}

function json(value: unknown): Record<string, number> {
  if (value === null || value === undefined) return {};
  const parsed = typeof value === "string" ? JSON.parse(value) : value;
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) out[k] = Number(v);
  return out;
}

const num = (v: unknown): number => Number(v ?? 0);
const numOrNull = (v: unknown): number | null => v === null || v === undefined ? null : Number(v);

/** A row of `ingest_runs` joined with its job's state as `job_state` (and its last error as `job_error`). */
export function toIngestRun(row: Row): IngestRun {
  const stored = row.state as IngestRunState;
  const state = runStateOf(stored, row.job_state as string | null | undefined);
  let error = (row.error as string | null) ?? null;
  if (state !== stored && error === null) {
    error = state === "cancelled"
      ? "its job was cancelled"
      : row.job_state === null || row.job_state === undefined
      ? "its job no longer exists"
      : `its job was ${row.job_state}${row.job_error ? `: ${row.job_error}` : ""}`;
  }
  return {
    id: num(row.id),
    pipeline: row.pipeline as string,
    hash: row.hash as string,
    state,
    jobId: num(row.job_id),
    trigger: row.trigger as IngestRun["trigger"],
    tenant: (row.tenant as string | null | undefined) ?? null,
    counts: {
      received: num(row.received),
      kept: num(row.kept),
      sunk: num(row.sunk),
      failed: num(row.failed),
      pending: num(row.pending),
      dropped: json(row.dropped),
    },
    cursor: (row.cursor as string | null) ?? null,
    error,
    startedAt: num(row.started_at),
    updatedAt: num(row.updated_at),
    finishedAt: numOrNull(row.finished_at),
  };
}

/** A row of `ingest_drops` (without its record text). */
export function toIngestDrop(row: Row): IngestDrop {
  return {
    id: num(row.id),
    pipeline: row.pipeline as string,
    runId: num(row.run_id),
    recordKey: (row.record_key as string | null) ?? null,
    reason: row.reason as string,
    step: row.step as string,
    at: num(row.at),
    excerpt: row.excerpt as string,
    replayable: Boolean(row.replayable),
    replayedAt: numOrNull(row.replayed_at),
    replayedJob: numOrNull(row.replayed_job),
  };
}

/**
 * Summaries from three reads: each pipeline's run count, newest run and
 * last completion (`heads`), and its drops by reason in the window (`drops`).
 */
export function toSummaries(
  heads: Row[],
  runs: Map<number, IngestRun>,
  drops: Row[],
): PipelineSummary[] {
  const byPipeline = new Map<string, PipelineSummary>();
  for (const row of heads) {
    const pipeline = row.pipeline as string;
    byPipeline.set(pipeline, {
      pipeline,
      runs: num(row.runs),
      lastRun: runs.get(num(row.last_id)) ?? null,
      lastCompletedAt: numOrNull(row.last_completed_at),
      droppedSince: {},
    });
  }
  for (const row of drops) {
    const summary = byPipeline.get(row.pipeline as string);
    if (summary) summary.droppedSince[row.reason as string] = num(row.count);
  }
  return [...byPipeline.values()].sort((a, b) => a.pipeline.localeCompare(b.pipeline));
}

/**
 * `text` as the ingest tables keep it, on both stores alike: U+0000 written
 * as the six characters `\u0000`. PostgreSQL's `text` and `jsonb` cannot
 * hold U+0000 (the chunk's commit would fail, and the run with it), and
 * SQLite hands back such text cut at the NUL; a record read from a feed
 * may hold one all the same (`"\u0000"` in its JSON, a raw NUL byte in a
 * line or a CSV row). The escape is JSON's, so a replayed record's NUL
 * inside a string reads back as U+0000; a record that already held the six
 * characters reads the same (the price of one text for both stores).
 */
export function storedText(text: string): string;
export function storedText(text: string | null): string | null;
export function storedText(text: string | null): string | null {
  return text === null ? null : storableText(text);
}

/** A chunk's commit with every text it writes as {@linkcode storedText} makes it. */
export function storedChunk(params: IngestChunkCommitParams): IngestChunkCommitParams {
  const dropped: Record<string, number> = {};
  for (const [reason, n] of Object.entries(params.delta.dropped)) {
    const key = storedText(reason);
    dropped[key] = (dropped[key] ?? 0) + n;
  }
  return {
    ...params,
    delta: { ...params.delta, dropped },
    cursor: storedText(params.cursor),
    drops: params.drops.map((d) => ({
      recordKey: storedText(d.recordKey),
      reason: storedText(d.reason),
      step: storedText(d.step),
      excerpt: storedText(d.excerpt),
      record: storedText(d.record),
    })),
    failures: params.failures.map((f) => ({
      record: storedText(f.record),
      error: storedText(f.error),
      excerpt: storedText(f.excerpt),
    })),
    cleared: params.cleared.map((r) => storedText(r)),
  };
}

/**
 * The failure counts of `records` (the caller's keys) from rows of
 * `ingest_failures` read by their stored text (`record`, `failures`).
 */
export function failureCounts(records: string[], rows: Row[]): Map<string, number> {
  const byStored = new Map(rows.map((row) => [row.record as string, Number(row.failures)]));
  const out = new Map<string, number>();
  for (const record of records) {
    const n = byStored.get(storedText(record));
    if (n !== undefined) out.set(record, n);
  }
  return out;
}
