-- Ingest pipelines (src/ingest/): one row per run, the records it dropped,
-- and the records that keep failing across runs (poison counting).

CREATE TABLE ingest_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline TEXT NOT NULL,
  hash TEXT NOT NULL,
  -- OR chains, not IN lists: see 0010_cheap_checks.sql.
  state TEXT NOT NULL CHECK (
    state = 'running' OR state = 'completed' OR state = 'paged' OR state = 'failed'
      OR state = 'cancelled'
  ),
  job_id INTEGER NOT NULL UNIQUE,
  trigger TEXT NOT NULL CHECK (trigger = 'schedule' OR trigger = 'manual' OR trigger = 'replay'),
  received INTEGER NOT NULL DEFAULT 0,
  kept INTEGER NOT NULL DEFAULT 0,
  sunk INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  pending INTEGER NOT NULL DEFAULT 0,
  -- reason -> records, a JSON object.
  dropped TEXT NOT NULL DEFAULT '{}',
  cursor TEXT,
  error TEXT,
  started_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX ingest_runs_pipeline ON ingest_runs (pipeline, id);
CREATE INDEX ingest_runs_completed ON ingest_runs (pipeline, finished_at) WHERE state = 'completed';

CREATE TABLE ingest_drops (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline TEXT NOT NULL,
  run_id INTEGER NOT NULL,
  record_key TEXT,
  reason TEXT NOT NULL,
  step TEXT NOT NULL,
  at INTEGER NOT NULL,
  excerpt TEXT NOT NULL,
  record TEXT,
  replayed_at INTEGER,
  replayed_job INTEGER
);
CREATE INDEX ingest_drops_pipeline ON ingest_drops (pipeline, id);
CREATE INDEX ingest_drops_run ON ingest_drops (run_id, id);
CREATE INDEX ingest_drops_at ON ingest_drops (pipeline, at, reason);

CREATE TABLE ingest_failures (
  pipeline TEXT NOT NULL,
  record TEXT NOT NULL,
  failures INTEGER NOT NULL,
  error TEXT NOT NULL,
  excerpt TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (pipeline, record)
) WITHOUT ROWID;
