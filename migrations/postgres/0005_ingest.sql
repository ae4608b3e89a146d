-- Ingest pipelines (src/ingest/): one row per run, the records it dropped,
-- and the records that keep failing across runs (poison counting).

CREATE TABLE ingest_runs (
  id bigserial PRIMARY KEY,
  pipeline text NOT NULL,
  hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'completed', 'paged', 'failed', 'cancelled')),
  job_id bigint NOT NULL UNIQUE,
  trigger text NOT NULL CHECK (trigger IN ('schedule', 'manual', 'replay')),
  received bigint NOT NULL DEFAULT 0,
  kept bigint NOT NULL DEFAULT 0,
  sunk bigint NOT NULL DEFAULT 0,
  failed bigint NOT NULL DEFAULT 0,
  pending bigint NOT NULL DEFAULT 0,
  dropped jsonb NOT NULL DEFAULT '{}',
  cursor text,
  error text,
  started_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  finished_at bigint
);
CREATE INDEX ingest_runs_pipeline ON ingest_runs (pipeline, id);
CREATE INDEX ingest_runs_completed ON ingest_runs (pipeline, finished_at) WHERE state = 'completed';

CREATE TABLE ingest_drops (
  id bigserial PRIMARY KEY,
  pipeline text NOT NULL,
  run_id bigint NOT NULL,
  record_key text,
  reason text NOT NULL,
  step text NOT NULL,
  at bigint NOT NULL,
  excerpt text NOT NULL,
  record text,
  replayed_at bigint,
  replayed_job bigint
);
CREATE INDEX ingest_drops_pipeline ON ingest_drops (pipeline, id);
CREATE INDEX ingest_drops_run ON ingest_drops (run_id, id);
CREATE INDEX ingest_drops_at ON ingest_drops (pipeline, at, reason);

CREATE TABLE ingest_failures (
  pipeline text NOT NULL,
  record text NOT NULL,
  failures integer NOT NULL,
  error text NOT NULL,
  excerpt text NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (pipeline, record)
);
