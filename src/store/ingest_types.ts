/**
 * The rows the store keeps of ingest runs (`ingest_runs`, `ingest_drops`,
 * `ingest_failures`), as the seam reads and writes them. They are the
 * store's words: `src/ingest/` re-exports them from `ingest/types.ts` and
 * builds its runs on them.
 *
 * @module
 */

/** Where a run is. `failed` and `cancelled` are also what a run reads as once its job ended so. */
export type IngestRunState = "running" | "completed" | "paged" | "failed" | "cancelled";

/** A run's counts. `received = sunk + sum(dropped) + failed + pending` when it adds up. */
export interface IngestCounts {
  received: number;
  /** Kept by every step (handed to the sink). */
  kept: number;
  sunk: number;
  /** Drop reason -> records. */
  dropped: Record<string, number>;
  /** Failed (parse, step or sink) and not yet poison: retried on the next run. */
  failed: number;
  /** Received and not yet accounted for (a run stopped, paged or still going). */
  pending: number;
}

/** One row of `ingest_runs`, as the views read it. */
export interface IngestRun {
  id: number;
  pipeline: string;
  hash: string;
  /** The stored state, or what the run's job says when the job ended without the run. */
  state: IngestRunState;
  jobId: number;
  /** `schedule` (an occurrence), `manual` (`jobs ingest`), `replay` (`jobs drops replay`). */
  trigger: "schedule" | "manual" | "replay";
  /**
   * The tenant of the principal that started it (its job's, copied when the
   * row is made), or null: an installation-wide run.
   */
  tenant: string | null;
  counts: IngestCounts;
  /** The source position committed last (opaque JSON text of the reader), null before the first chunk. */
  cursor: string | null;
  error: string | null;
  startedAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

/** One dropped record. */
export interface IngestDrop {
  id: number;
  pipeline: string;
  runId: number;
  /** The record's identity (its key fields), null when it had none (unparseable). */
  recordKey: string | null;
  reason: string;
  /** The step that dropped it, or `source` (poison at parse), `buffer` (overflow), `sink`. */
  step: string;
  at: number;
  /** Redacted, at most `EXCERPT_CHARS` (ingest/types.ts). */
  excerpt: string;
  /** Whether the full record was kept (replayable). */
  replayable: boolean;
  replayedAt: number | null;
  /** The `jobs.ingest` job that replays it. */
  replayedJob: number | null;
}

/** A drop a chunk writes. */
export interface NewDrop {
  recordKey: string | null;
  reason: string;
  step: string;
  excerpt: string;
  /** The full record text, or null when longer than `MAX_STORED_RECORD_BYTES` (ingest/types.ts). */
  record: string | null;
}

/** A failing record a chunk writes: its failure count rises by one. */
export interface NewFailure {
  /** The key identity, or `raw:<16 hex of SHA-256 of the line>` for a record without one. */
  record: string;
  error: string;
  excerpt: string;
}

/** What `ingestChunkCommit` adds to a run. */
export interface ChunkDelta {
  received: number;
  kept: number;
  sunk: number;
  failed: number;
  dropped: Record<string, number>;
}

/** Per pipeline: sums and the last complete run, for status, metrics and freshness. */
export interface PipelineSummary {
  pipeline: string;
  runs: number;
  lastRun: IngestRun | null;
  /** `finished_at` of the newest completed run. */
  lastCompletedAt: number | null;
  /** Drops by reason since `since` (the caller's window). */
  droppedSince: Record<string, number>;
}
